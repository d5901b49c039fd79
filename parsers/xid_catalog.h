/*
 * xid_catalog.h - what each NVIDIA Xid (GPU) and SXid (NVSwitch) code means,
 * how bad it is and what an operator usually does about it.
 *
 * The tables are static and built from shared/docs/xid.md (sections 1 and 2);
 * severities are the project's alerting choice, not NVIDIA's. Lookups return
 * pointers into those static tables (never freed) or NULL for a code the
 * catalog does not know (callers then use severity "warning", name "unknown").
 */
#ifndef GPULOG_XID_CATALOG_H
#define GPULOG_XID_CATALOG_H

enum xid_sev { XID_SEV_INFO = 1, XID_SEV_WARNING = 2, XID_SEV_CRITICAL = 3 };

/* What an operator does about a fault, least first (an incident's action
 * is the last of its episodes' in this order): watching, the facility's
 * checks (power, then cooling), then what disrupts more and more work
 * (the application, the GPU, the node, the hardware's service). The
 * vocabulary of anomaly.action and of the action table (detect/action.c). */
enum gl_action {
    ACT_NONE, ACT_WATCH, ACT_CHECK_POWER, ACT_CHECK_COOLING, ACT_RESTART_APP, ACT_RESET_GPU, ACT_REBOOT_NODE,
    ACT_DRAIN_REPAIR, ACT__N
};
/* "none", "watch", "check_power", "check_cooling", "restart_app",
 * "reset_gpu", "reboot_node", "drain_repair" (static). */
const char *gl_action_name(enum gl_action a);
/* In words: "restart the application", "drain and send for repair", ... */
const char *gl_action_text(enum gl_action a);
/* The action named s (one of the names above); 1 and *a, else 0. */
int gl_action_parse(const char *s, enum gl_action *a);

struct xid_info {
    int lo, hi;              /* code range, inclusive (lo == hi for one code) */
    const char *name;        /* short human name, e.g. "GPU memory page fault" */
    const char *cls;         /* likely cause: application, driver, hardware, ecc,
                              * nvlink, bus, power, thermal, firmware */
    enum xid_sev sev;        /* catalog severity */
    const char *action;      /* usual operator action */
    enum gl_action act;      /* that action in the vocabulary: the first step it names */
};

/* Returns the catalog entry for Xid code, or NULL if unknown/unused. */
const struct xid_info *xid_lookup(int code);
/* Returns the catalog entry for NVSwitch SXid code, or NULL if unknown. */
const struct xid_info *sxid_lookup(int code);
/* "info", "warning" or "critical" (static string). */
const char *xid_sev_name(enum xid_sev s);

#endif
