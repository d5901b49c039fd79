/*
 * xid_catalog.c - the Xid and SXid tables of shared/docs/xid.md.
 *
 * One row per code or contiguous code range; a row of xid.md that lists
 * several ranges ("39-41, 70-77, 126-135") becomes several rows with the same
 * text. Lookups scan linearly: they run once per kernel error line, which is
 * rare, and a scan cannot go wrong if rows are added out of order.
 */
#include "xid_catalog.h"

#include <stddef.h>
#include <string.h>

#define I XID_SEV_INFO
#define W XID_SEV_WARNING
#define C XID_SEV_CRITICAL

/* Action texts used by several rows. */
#define A_RESTART_APP "restart the application"
#define A_RESET_GPU   "reset the GPU"
#define A_ECC_DRAIN   "drain, reset the GPU so rows get remapped; RMA if it recurs"

static const struct xid_info xid_table[] = {
    { 8, 8,     "channel idle timeout", "application", W, "restart the application; repeated on one GPU: run diagnostics", ACT_RESTART_APP },
    { 11, 11,   "invalid push buffer", "application", W, "restart the application; check CUDA and the application", ACT_RESTART_APP },
    { 13, 13,   "graphics engine exception", "application", W, "restart the application; same GPU across different applications: run DCGM diagnostics", ACT_RESTART_APP },
    { 14, 14,   "fake error (test)", "driver", I, "none: deliberate test error", ACT_NONE },
    { 25, 25,   "invalid push buffer", "application", W, "restart the application; check CUDA and the application", ACT_RESTART_APP },
    { 31, 31,   "GPU memory page fault", "application", W, "restart the application; repeated on the same GPU: run diagnostics; on one driver only: suspect the driver", ACT_RESTART_APP },
    { 32, 32,   "invalid push buffer or PBDMA error", "application", W, A_RESTART_APP, ACT_RESTART_APP },
    { 37, 38,   "driver firmware error", "driver", W, "none; report if repeated", ACT_NONE },
    { 39, 41,   "copy engine exception", "application", W, A_RESTART_APP, ACT_RESTART_APP },
    { 43, 43,   "GPU stopped processing the channel", "application", I, "none: follow the application's own error", ACT_NONE },
    { 44, 44,   "graphics engine fault during context switch", "driver", W, "watch; contact support if repeated", ACT_WATCH },
    { 45, 45,   "preemptive cleanup", "application", I, "act on the Xid named in the message; if it appears alone repeatedly, restart Fabric Manager", ACT_WATCH },
    { 46, 46,   "GPU stopped processing", "driver", C, A_RESET_GPU, ACT_RESET_GPU },
    { 48, 48,   "double-bit ECC error", "ecc", C, A_ECC_DRAIN, ACT_RESET_GPU },
    { 54, 54,   "auxiliary power not connected", "power", C, "fix the power cabling, then reboot", ACT_CHECK_POWER },
    { 56, 58,   "legacy micro-controller warning", "driver", W, "none; watch for a following Xid 62", ACT_NONE },
    { 60, 60,   "video processor exception", "application", W, A_RESTART_APP, ACT_RESTART_APP },
    { 61, 61,   "legacy micro-controller warning", "driver", W, "none; watch for a following Xid 62", ACT_NONE },
    { 62, 62,   "internal micro-controller halt", "firmware", C, A_RESET_GPU, ACT_RESET_GPU },
    { 63, 63,   "row remapping event", "ecc", I, "none now: the remap takes effect at the next GPU reset; repeated pending remaps: reboot at convenience", ACT_WATCH },
    { 64, 64,   "row remapping failure", "ecc", C, "drain the node, reset the GPU; RMA", ACT_DRAIN_REPAIR },
    { 66, 67,   "illegal register access by the driver", "driver", W, "none; investigate the driver if repeated", ACT_NONE },
    { 68, 68,   "video decoder exception", "application", W, A_RESTART_APP, ACT_RESTART_APP },
    { 69, 69,   "graphics engine class error", "application", W, A_RESTART_APP, ACT_RESTART_APP },
    { 70, 73,   "copy engine exception", "application", W, A_RESTART_APP, ACT_RESTART_APP },
    { 74, 74,   "NVLink error", "nvlink", C, "decode the error bits; reseat or check the link; reset the GPU; RMA if persistent", ACT_RESET_GPU },
    { 75, 77,   "copy engine exception", "application", W, A_RESTART_APP, ACT_RESTART_APP },
    { 78, 78,   "vGPU start error", "driver", W, "update the vGPU software", ACT_WATCH },
    { 79, 79,   "GPU fallen off the bus", "bus", C, "drain; cold-boot the node; check PSU, cabling, temperatures and SBIOS; RMA if repeated", ACT_RESET_GPU },
    { 80, 80,   "corrupted data sent to GPU", "bus", W, "restart the application; check PCIe errors", ACT_RESTART_APP },
    { 82, 82,   "JPEG engine error", "application", W, A_RESTART_APP, ACT_RESTART_APP },
    { 83, 84,   "video decoder exception", "application", W, A_RESTART_APP, ACT_RESTART_APP },
    { 86, 86,   "optical flow engine error", "application", W, A_RESTART_APP, ACT_RESTART_APP },
    { 88, 89,   "video decoder exception", "application", W, A_RESTART_APP, ACT_RESTART_APP },
    { 92, 92,   "high single-bit ECC error rate", "ecc", W, "watch the trend; contact support", ACT_WATCH },
    { 93, 93,   "InfoROM wear limit exceeded", "hardware", W, "contact support", ACT_WATCH },
    { 94, 94,   "contained memory error", "ecc", W, "restart the affected application; reset the GPU at convenience", ACT_RESET_GPU },
    { 95, 95,   "uncontained memory error", "ecc", C, "drain, reset the GPU; RMA if repeated", ACT_RESET_GPU },
    { 96, 98,   "video decoder exception", "application", W, A_RESTART_APP, ACT_RESTART_APP },
    { 99, 105,  "JPEG engine error", "application", W, A_RESTART_APP, ACT_RESTART_APP },
    { 106, 107, "SMBPBI test message", "driver", I, "none: test message", ACT_NONE },
    { 109, 109, "context switch timeout", "driver", C, A_RESET_GPU, ACT_RESET_GPU },
    { 110, 110, "security fault", "driver", C, "reset the GPU; investigate the software", ACT_RESET_GPU },
    { 119, 119, "GSP RPC timeout", "firmware", C, "drain, reset the GPU or reboot; update the driver", ACT_RESET_GPU },
    { 120, 120, "GSP firmware error", "firmware", C, A_RESET_GPU, ACT_RESET_GPU },
    { 121, 121, "C2C link error", "nvlink", W, "contact support if repeated", ACT_WATCH },
    { 126, 135, "copy engine exception", "application", W, A_RESTART_APP, ACT_RESTART_APP },
    { 136, 136, "NVLink training failed", "nvlink", C, "reset the GPU; inspect the link", ACT_RESET_GPU },
    { 137, 137, "NVLink privilege error", "nvlink", W, "follow NVIDIA's NVLink workflow", ACT_WATCH },
    { 139, 139, "optical flow engine error", "application", W, A_RESTART_APP, ACT_RESTART_APP },
    { 140, 140, "unrecovered ECC error", "ecc", C, "drain, reset the GPU; RMA if repeated", ACT_RESET_GPU },
    { 141, 141, "CUDA fast-path error", "driver", W, "none; contact support if repeated", ACT_NONE },
    { 142, 142, "video encoder exception", "application", W, A_RESTART_APP, ACT_RESTART_APP },
    { 143, 143, "GPU initialisation error", "driver", C, "reset the GPU; reboot", ACT_RESET_GPU },
    /* NVLink5 units: the line's Fatal/Nonfatal word overrides the severity */
    { 144, 144, "NVLink SAW error", "nvlink", C, "Fatal: drain, reset the GPU; Nonfatal: watch the rate", ACT_RESET_GPU },
    { 145, 145, "NVLink RLW error", "nvlink", C, "Fatal: drain, reset the GPU; Nonfatal: watch the rate", ACT_RESET_GPU },
    { 146, 146, "NVLink TLW error", "nvlink", C, "Fatal: drain, reset the GPU; Nonfatal: watch the rate", ACT_RESET_GPU },
    { 147, 147, "NVLink TREX error", "nvlink", C, "Fatal: drain, reset the GPU; Nonfatal: watch the rate", ACT_RESET_GPU },
    { 148, 148, "NVLink NVLPW error", "nvlink", C, "Fatal: drain, reset the GPU; Nonfatal: watch the rate", ACT_RESET_GPU },
    { 149, 149, "NVLink NETIR error", "nvlink", C, "Fatal: drain, reset the GPU; Nonfatal: watch the rate", ACT_RESET_GPU },
    { 150, 150, "NVLink MSE error", "nvlink", C, "Fatal: drain, reset the GPU; Nonfatal: watch the rate", ACT_RESET_GPU },
    { 151, 151, "key rotation error", "driver", C, "restart the VM", ACT_REBOOT_NODE },
    { 152, 153, "DLA error", "hardware", W, "contact support if repeated", ACT_WATCH },
    { 154, 154, "GPU recovery action changed", "driver", W, "perform the action the message names", ACT_WATCH },
    { 155, 155, "NVLink software-defined error", "nvlink", C, A_RESET_GPU, ACT_RESET_GPU },
    { 156, 156, "resource retirement event", "hardware", W, A_RESET_GPU, ACT_RESET_GPU },
    { 157, 157, "resource retirement failure", "hardware", C, "contact support", ACT_DRAIN_REPAIR },
    { 158, 158, "GPU fatal timeout", "hardware", C, A_RESET_GPU, ACT_RESET_GPU },
    { 159, 159, "CHI non-data error", "bus", W, "check UVM; look for sibling errors", ACT_WATCH },
    { 160, 160, "channel retirement event", "driver", I, "investigate the software", ACT_WATCH },
    { 161, 161, "channel retirement failure", "driver", W, "investigate the software", ACT_WATCH },
    { 162, 163, "power smoothing state change", "power", I, "none", ACT_NONE },
    { 164, 164, "power smoothing lifetime low", "power", W, "plan the replacement", ACT_WATCH },
    { 165, 165, "power smoothing lifetime exhausted", "power", C, "replace: the power smoothing lifetime is exhausted", ACT_DRAIN_REPAIR },
    { 166, 166, "NVLink traffic before encryption setup", "nvlink", C, "reset; check the confidential computing configuration", ACT_RESET_GPU },
    { 167, 167, "PCIe fatal timeout", "bus", C, "drain, reboot; check PCIe", ACT_REBOOT_NODE },
    { 168, 168, "reduced GPU memory capacity", "hardware", C, "drain; contact support", ACT_DRAIN_REPAIR },
    { 169, 169, "SEC2 micro-controller halt", "firmware", C, A_RESET_GPU, ACT_RESET_GPU },
    { 170, 170, "NVLink interrupt before encryption setup", "nvlink", C, "reset; check the confidential computing configuration", ACT_RESET_GPU },
    { 171, 171, "uncorrectable DRAM error", "ecc", C, A_ECC_DRAIN, ACT_RESET_GPU },
    { 172, 172, "uncorrectable SRAM error", "ecc", C, A_ECC_DRAIN, ACT_RESET_GPU },
};

#define SX_ECC_NAME "NVSwitch corrected ECC error"
#define SX_FATAL_ACTION "reset the GPUs and NVSwitches"

static const struct xid_info sxid_table[] = {
    { 11004, 11004, "NVSwitch ingress invalid ACL", "nvlink", C, "check the fabric partition configuration; restart the guest VM", ACT_REBOOT_NODE },
    { 11012, 11012, SX_ECC_NAME, "ecc", I, "none", ACT_NONE },
    { 11021, 11023, SX_ECC_NAME, "ecc", I, "none", ACT_NONE },
    { 12020, 12020, "NVSwitch egress VC buffer error", "nvlink", C, SX_FATAL_ACTION, ACT_RESET_GPU },
    { 12021, 12021, SX_ECC_NAME, "ecc", I, "none", ACT_NONE },
    { 12023, 12023, SX_ECC_NAME, "ecc", I, "none", ACT_NONE },
    { 12028, 12028, "NVSwitch egress non-posted PRIV error", "nvlink", C, "restart the guest VM or reset", ACT_RESET_GPU },
    { 15008, 15008, SX_ECC_NAME, "ecc", I, "none", ACT_NONE },
    { 15011, 15011, SX_ECC_NAME, "ecc", I, "none", ACT_NONE },
    { 19049, 19049, SX_ECC_NAME, "ecc", I, "none", ACT_NONE },
    { 19055, 19055, SX_ECC_NAME, "ecc", I, "none", ACT_NONE },
    { 19057, 19057, SX_ECC_NAME, "ecc", I, "none", ACT_NONE },
    { 19059, 19059, SX_ECC_NAME, "ecc", I, "none", ACT_NONE },
    { 19062, 19062, SX_ECC_NAME, "ecc", I, "none", ACT_NONE },
    { 19065, 19065, SX_ECC_NAME, "ecc", I, "none", ACT_NONE },
    { 19068, 19068, SX_ECC_NAME, "ecc", I, "none", ACT_NONE },
    { 19071, 19071, SX_ECC_NAME, "ecc", I, "none", ACT_NONE },
    { 19084, 19084, "NVSwitch AN1 heartbeat timeout", "hardware", C, "reset all GPUs and NVSwitches", ACT_RESET_GPU },
    { 20001, 20001, "NVLink TX replay", "nvlink", I, "watch the rate", ACT_WATCH },
    { 20012, 20012, "NVLink connection broken or inconsistent", "nvlink", W, "check cabling and shutdown order", ACT_WATCH },
    { 20034, 20034, "NVLink link down (LTSSM fault up)", "nvlink", C, "reset the GPUs and NVSwitches or restart the VM", ACT_RESET_GPU },
    { 22003, 22003, "NVSwitch minion halt", "nvlink", C, SX_FATAL_ACTION, ACT_RESET_GPU },
    { 22011, 22011, "NVSwitch minion external error", "nvlink", C, SX_FATAL_ACTION, ACT_RESET_GPU },
    { 22012, 22012, "NVLink connection broken or inconsistent", "nvlink", W, "check cabling and shutdown order", ACT_WATCH },
    { 22013, 22013, "NVSwitch minion link DLREQ interrupt", "nvlink", I, "none (boot-time noise)", ACT_NONE },
    { 23001, 23010, "NVSwitch ingress/egress VC buffer error", "nvlink", C, SX_FATAL_ACTION, ACT_RESET_GPU },
    { 24001, 24003, SX_ECC_NAME, "ecc", I, "none", ACT_NONE },
};

static const struct xid_info *scan(const struct xid_info *t, size_t n, int code)
{
    for (size_t i = 0; i < n; i++)
        if (code >= t[i].lo && code <= t[i].hi) return &t[i];
    return NULL;
}

const struct xid_info *xid_lookup(int code)
{
    return scan(xid_table, sizeof xid_table / sizeof xid_table[0], code);
}

const struct xid_info *sxid_lookup(int code)
{
    return scan(sxid_table, sizeof sxid_table / sizeof sxid_table[0], code);
}

const char *xid_sev_name(enum xid_sev s)
{
    switch (s) {
    case XID_SEV_INFO: return "info";
    case XID_SEV_CRITICAL: return "critical";
    default: return "warning";
    }
}

static const char *const act_names[ACT__N] = {
    "none", "watch", "check_power", "check_cooling", "restart_app", "reset_gpu", "reboot_node", "drain_repair",
};
static const char *const act_texts[ACT__N] = {
    "none", "watch", "check power delivery", "check cooling", "restart the application", "drain and reset the GPU",
    "drain and reboot the node", "drain and send for repair",
};

const char *gl_action_name(enum gl_action a) { return (unsigned)a < ACT__N ? act_names[a] : "watch"; }
const char *gl_action_text(enum gl_action a) { return (unsigned)a < ACT__N ? act_texts[a] : "watch"; }

int gl_action_parse(const char *s, enum gl_action *a)
{
    for (int i = 0; i < ACT__N; i++)
        if (!strcmp(s, act_names[i])) { *a = (enum gl_action)i; return 1; }
    return 0;
}
