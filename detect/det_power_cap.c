/* det_power_cap.c - power capping: the power-violation share is high while
 * the board draws close to the highest power it has been seen to draw (the
 * limit, as dmon does not print it). An open episode stays open while the
 * violation share stays above min_pviol/2, whatever the power: capping
 * holds the draw below the level that opened it. */
#include "detector.h"

#include <stdio.h>

static const struct det_param params[] = {
    { "min_pviol", 20, "power-violation share (%) counted as capped" },
    { "near", 0.9, "power at least this fraction of the highest seen" },
    { "min_pmax", 50, "ignore boards never seen above this many watts" },
    { NULL, 0, NULL },
};
/* the parameters above, by name (the same order) */
enum { P_MIN_PVIOL, P_NEAR, P_MIN_PMAX, P__COUNT };

static int pc_configure(struct rule_cfg *rc, struct profile_slots *ps, char *err, size_t errlen)
{
    (void)err; (void)errlen;
    rc->aux[0] = profile_slot(ps, "gpu.throttling.power.pct", 0);
    rc->aux[1] = profile_slot(ps, "gpu.power.usage", 0);
    return GL_OK;
}

static int pc_update(const struct rule_cfg *rc, void *st, const struct det_ctx *cx, struct det_out *o)
{
    (void)st;
    double pv, pw;
    if (!ent_val(cx->e, rc->aux[0], &pv) || !ent_val(cx->e, rc->aux[1], &pw)) return DET_UNKNOWN;
    double pmax = cx->e->pmax;
    if (pmax < rc->p[P_MIN_PMAX]) return DET_UNKNOWN;
    o->value = pv; o->metric_slot = rc->aux[0]; o->lo = 0; o->hi = rc->p[P_MIN_PVIOL]; o->score = pv;
    double need = cx->open ? rc->p[P_MIN_PVIOL] / 2 : rc->p[P_MIN_PVIOL];
    if (pv < need || (!cx->open && pw < rc->p[P_NEAR] * pmax)) return DET_NORMAL;
    o->excess = det_clamp01((pv - rc->p[P_MIN_PVIOL]) / (100 - rc->p[P_MIN_PVIOL] + 1));
    char who[96];
    det_who(cx, who, sizeof who);
    snprintf(o->reason, sizeof o->reason, "%s is held at its power cap: %.0f W (highest seen %.0f W), power-throttled %.0f %% of the time",
             who, pw, pmax, pv);
    return DET_ANOMALY;
}

const struct det_ops det_power_cap = {
    .name = "power_cap", .scope = DS_GPU, .params = params, .configure = pc_configure, .update = pc_update,
};
