/* det_power_cap.c - power capping: the power-violation share is high
 * (an open episode: its average over a few samples, an EWMA, so a sample
 * of 0 amid 50-78 % does not end it) while the GPU is working: utilisation
 * at least min_util (capping holds a busy GPU below what its job would
 * draw, whatever another job drew before: a cap at 82-92 % of a 350 W job
 * on a board once seen at 700 W is still capping), or, when the input
 * carries no utilisation, power at least `near` of the highest seen (an
 * idle board is not capped). An open episode stays open while the averaged
 * share stays above min_pviol/2, whatever the power or load: capping holds
 * the draw below the level that opened it. */
#include "detector.h"

#include <math.h>
#include <stdio.h>

static const struct det_param params[] = {
    { "min_pviol", 20, 0, 100, DP_LO_OPEN, "power-violation share (%) counted as capped" },
    { "near", 0.6, 0, 1, 0, "power at least this fraction of the highest seen" },
    { "min_pmax", 50, 0, 1e5, 0, "ignore boards never seen above this many watts" },
    { "alpha", 0.35, 0, 1, DP_LO_OPEN, "weight of a new sample in the averaged violation share" },
    { "min_util", 50, 0, 100, 0, "utilisation (%) counted as working (0 = judge by power against the highest seen)" },
    { NULL, 0, 0, 0, 0, NULL },
};
/* the parameters above, by name (the same order) */
enum { P_MIN_PVIOL, P_NEAR, P_MIN_PMAX, P_ALPHA, P_MIN_UTIL, P__COUNT };

/* the averaged violation share */
struct pc_st { float avg; };

static int pc_configure(struct rule_cfg *rc, struct profile_slots *ps, char *err, size_t errlen)
{
    (void)err; (void)errlen;   /* alpha's range (0, 1] is checked at load */
    rc->aux[0] = profile_slot(ps, "gpu.throttling.power.pct", 0);
    rc->aux[1] = profile_slot(ps, "gpu.power.usage", 0);
    rc->aux[2] = rc->p[P_MIN_UTIL] > 0 ? profile_slot(ps, "gpu.utilization.gpu.pct", 0) : -1;
    return GL_OK;
}

/* The reason of capping (a: power, highest power, throttled share). */
static void pc_why(const struct det_out *o, const char *who, char *buf, size_t n)
{
    snprintf(buf, n, "%s is held at its power cap: %.0f W (highest seen %.0f W), power-throttled %.0f %% of the time",
             who, o->a[0], o->a[1], o->a[2]);
}

static int pc_update(const struct rule_cfg *rc, void *stp, const struct det_ctx *cx, struct det_out *o)
{
    struct pc_st *st = stp;
    double pv, pw;
    if (!ent_val(cx->e, rc->aux[0], &pv) || !ent_val(cx->e, rc->aux[1], &pw)) return cx->open ? DET_HOLD : DET_UNKNOWN;
    st->avg += (float)(rc->p[P_ALPHA] * (pv - st->avg));
    double pmax = cx->e->pmax;
    if (!(pmax > 0) || pmax < rc->p[P_MIN_PMAX]) return DET_UNKNOWN;   /* no power seen: no fraction of it */
    o->value = pv; o->metric_slot = rc->aux[0]; o->lo = 0; o->hi = rc->p[P_MIN_PVIOL]; o->score = st->avg;
    double need = cx->open ? rc->p[P_MIN_PVIOL] / 2 : rc->p[P_MIN_PVIOL];
    /* to open: this sample (`for` of them in a row: a blip of a few
     * seconds is no capping); to stay open: the average, so a 0 sample
     * amid 50-78 % does not end it */
    double share = cx->open ? st->avg : pv, util;
    int working = ent_val(cx->e, rc->aux[2], &util) ? util >= rc->p[P_MIN_UTIL] : pw >= rc->p[P_NEAR] * pmax;
    if (share < need || (!cx->open && !working)) return DET_NORMAL;
    o->excess = det_clamp01((st->avg - rc->p[P_MIN_PVIOL]) / (100 - rc->p[P_MIN_PVIOL] + 1));
    o->why = pc_why;
    o->a[0] = pw; o->a[1] = pmax; o->a[2] = st->avg;
    return DET_ANOMALY;
}

/* A state read back from a snapshot is usable: a finite share. */
static int pc_check(const struct rule_cfg *rc, const void *stp)
{
    (void)rc;
    float a = ((const struct pc_st *)stp)->avg;
    return isfinite(a) && a >= 0 && a <= 100;
}

const struct det_ops det_power_cap = {
    .name = "power_cap", .scope = DS_GPU, .state_size = sizeof(struct pc_st), .check = pc_check, .params = params, .configure = pc_configure, .update = pc_update,
};
