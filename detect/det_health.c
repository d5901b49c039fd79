/* det_health.c - a GPU's memory health from a health snapshot (nvidia-smi
 * -q, or the same fields from --query-gpu or any CSV): a failed row remap,
 * too many retired pages, uncorrectable ECC errors since the last reset, a
 * pending row remap or page retirement. Each is judged against the Xid
 * catalog's action for the matching Xid (64, 48, 63) and says what the
 * GPU needs: a drain and repair (RMA), a drain and reset, a reset at a
 * convenient time; a GPU at or above its own slowdown temperature (a field
 * only snapshots carry) needs its cooling checked. A sample without these fields gives no verdict (a dmon
 * stream between snapshots keeps the episode as the last snapshot left
 * it); a snapshot with none of the conditions ends it. */
#include "detector.h"
#include "../parsers/xid_catalog.h"

#include <stdio.h>

static const struct det_param params[] = {
    { "max_retired", 60, 1, 1e6, DP_WHOLE, "retired pages (single + double bit) that call for repair (a policy choice: your vendor's RMA criterion)" },
    { NULL, 0, 0, 0, 0, NULL },
};
/* the parameters above, by name (the same order) */
enum { P_MAX_RETIRED, P__COUNT };

/* The fields judged, by slot in aux[]. */
enum { S_FAIL, S_RR_PEND, S_RP_PEND, S_RP_SBE, S_RP_DBE, S_ECC_UNC, S_RR_CORR, S_RR_UNC, S_TEMP, S_SLOW, S__N };
static const char *const fields[S__N] = {
    "gpu.remapped_rows.failure", "gpu.remapped_rows.pending", "gpu.retired_pages.pending",
    "gpu.retired_pages.single_bit.count", "gpu.retired_pages.double_bit.count", "gpu.ecc.uncorrected.volatile.count",
    "gpu.remapped_rows.correctable.count", "gpu.remapped_rows.uncorrectable.count", "gpu.temperature.gpu",
    "gpu.temperature.slowdown",
};

static int health_configure(struct rule_cfg *rc, struct profile_slots *ps, char *err, size_t errlen)
{
    (void)err; (void)errlen;
    for (int i = 0; i < S__N; i++) rc->aux[i] = profile_slot(ps, fields[i], 0);
    return GL_OK;
}

/* What a finding means: its words, the Xid whose catalog action applies,
 * and the severity. */
enum finding { F_NONE, F_REMAP_FAILED, F_RETIRED_MANY, F_ECC_UNC, F_REMAP_PENDING, F_RETIRE_PENDING, F_HOT };
static const struct { const char *what; int xid; int sev; enum gl_action act; } findings[] = {
    [F_NONE] = { "", 0, 0, ACT_NONE },
    [F_REMAP_FAILED] = { "needs repair: a row remapping failed", 64, 3, ACT_DRAIN_REPAIR },
    [F_RETIRED_MANY] = { "needs repair: %.0f pages retired (limit %.0f)", 48, 3, ACT_DRAIN_REPAIR },
    [F_ECC_UNC] = { "needs a drain and reset: %.0f uncorrectable ECC errors since the last reset", 48, 3, ACT_RESET_GPU },
    [F_REMAP_PENDING] = { "needs a reset: a row remap is pending (%.0f correctable, %.0f uncorrectable rows remapped)", 63, 2,
                          ACT_RESET_GPU },
    [F_RETIRE_PENDING] = { "needs a reset: a page is pending retirement (applied at the next driver reload or reset)", 63, 2,
                           ACT_RESET_GPU },
    [F_HOT] = { "needs its cooling checked: %.0f C, at or above its slowdown temperature %.0f C", 0, 2, ACT_CHECK_COOLING },
};

/* The reason of a finding (value: the finding; a[0], a[1]: its figures). */
static void health_why(const struct det_out *o, const char *who, char *buf, size_t n)
{
    int f = (int)o->value;
    if (f <= F_NONE || f > F_HOT) f = F_REMAP_FAILED;
    char what[200];
    snprintf(what, sizeof what, findings[f].what, o->a[0], o->a[1]);
    const struct xid_info *xi = findings[f].xid ? xid_lookup(findings[f].xid) : NULL;
    if (xi) snprintf(buf, n, "%s %s; as for Xid %d: %s", who, what, findings[f].xid, xi->action);
    else snprintf(buf, n, "%s %s (health snapshot)", who, what);
}

static int health_update(const struct rule_cfg *rc, void *st, const struct det_ctx *cx, struct det_out *o)
{
    (void)st;
    double v[S__N];
    int have[S__N], any = 0;
    for (int i = 0; i < S__N; i++) { have[i] = ent_val(cx->e, rc->aux[i], &v[i]); any |= have[i]; }
    if (!any) return cx->open ? DET_HOLD : DET_UNKNOWN;
    double retired = (have[S_RP_SBE] ? v[S_RP_SBE] : 0) + (have[S_RP_DBE] ? v[S_RP_DBE] : 0);
    enum finding f = F_NONE;
    o->a[0] = o->a[1] = 0;
    if (have[S_FAIL] && v[S_FAIL] > 0) f = F_REMAP_FAILED;
    else if (retired >= rc->p[P_MAX_RETIRED]) { f = F_RETIRED_MANY; o->a[0] = retired; o->a[1] = rc->p[P_MAX_RETIRED]; }
    else if (have[S_ECC_UNC] && v[S_ECC_UNC] > 0) { f = F_ECC_UNC; o->a[0] = v[S_ECC_UNC]; }
    else if (have[S_RR_PEND] && v[S_RR_PEND] > 0) {
        f = F_REMAP_PENDING;
        o->a[0] = have[S_RR_CORR] ? v[S_RR_CORR] : 0;
        o->a[1] = have[S_RR_UNC] ? v[S_RR_UNC] : 0;
    } else if (have[S_RP_PEND] && v[S_RP_PEND] > 0) f = F_RETIRE_PENDING;
    else if (have[S_TEMP] && have[S_SLOW] && v[S_SLOW] > 0 && v[S_TEMP] >= v[S_SLOW]) { f = F_HOT; o->a[0] = v[S_TEMP]; o->a[1] = v[S_SLOW]; }
    o->value = f;
    o->score = f ? findings[f].sev : 0;
    o->lo = 0; o->hi = 0;
    if (f == F_NONE) return DET_NORMAL;
    static const char *const metric_of[] = { "", "gpu.remapped_rows.failure", "gpu.retired_pages.double_bit.count",
                                             "gpu.ecc.uncorrected.volatile.count", "gpu.remapped_rows.pending",
                                             "gpu.retired_pages.pending", "gpu.temperature.gpu" };
    o->metric = metric_of[f];
    o->severity = findings[f].sev;
    o->action = findings[f].act;
    o->excess = findings[f].sev / 3.0;
    o->why = health_why;
    return DET_ANOMALY;
}

const struct det_ops det_health = {
    .name = "health", .scope = DS_GPU, .params = params, .configure = health_configure, .update = health_update,
};
