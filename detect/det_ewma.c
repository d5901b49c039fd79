/* det_ewma.c - EWMA control chart: an exponentially weighted mean of the
 * samples against limits mean +- L sigma sqrt(lambda / (2 - lambda)), with
 * the in-control mean and sigma taken from the window. */
#include "detector.h"

#include <math.h>
#include <stdio.h>

struct ewma_st { double z; int have; };

static const struct det_param params[] = {
    { "lambda", 0.2, 0, 1, DP_LO_OPEN, "weight of the newest sample" },
    { "L", 4, 0, 1e6, DP_LO_OPEN, "width of the control limits in sigmas" },
    { "min_n", 30, 1, WIN_CAP, DP_WHOLE, "samples in the window before deciding" },
    { "min_std", 1e-6, 0, DET_PARAM_MAX, DP_LO_OPEN, "floor on sigma" },
    { "min_dev", 0, 0, DET_PARAM_MAX, 0, "and the EWMA at least this far from the mean" },
    { "direction", 0, -1, 1, DP_WHOLE, "+1 only high, -1 only low, 0 both" },
    { NULL, 0, 0, 0, 0, NULL },
};
/* the parameters above, by name (the same order) */
enum { P_LAMBDA, P_L, P_MIN_N, P_MIN_STD, P_MIN_DEV, P_DIRECTION, P__COUNT };

/* The reason of a drift (s: metric, direction; a: smoothed, mean, limit). */
static void ewma_why(const struct det_out *o, const char *who, char *buf, size_t n)
{
    const char *label, *unit;
    metric_label(o->s[0], &label, &unit);
    snprintf(buf, n, "%s: %s drifting %s: smoothed %.4g%s against a recent mean of %.4g%s (limit +-%.3g)",
             who, label, o->s[1], o->a[0], unit, o->a[1], unit, o->a[2]);
}

static int ewma_update(const struct rule_cfg *rc, void *stp, const struct det_ctx *cx, struct det_out *o)
{
    struct ewma_st *st = stp;
    double lam = rc->p[P_LAMBDA];
    if (!st->have) { st->z = cx->v; st->have = 1; }
    else st->z = lam * cx->v + (1 - lam) * st->z;
    const struct win *w = cx->s ? cx->s->w : NULL;
    if (!w || win_count(w) < rc->p[P_MIN_N]) return DET_UNKNOWN;
    double m = win_mean(w), sd = win_std(w);
    if (sd < rc->p[P_MIN_STD]) sd = rc->p[P_MIN_STD];
    double lim = rc->p[P_L] * sd * sqrt(lam / (2 - lam));
    if (!(lim > 0) || !isfinite(st->z)) return DET_UNKNOWN;   /* no limits (lambda in (0,1], L, min_std > 0 at load) */
    double dev = st->z - m;
    o->value = cx->v; o->mean = m; o->std = win_std(w); o->score = dev / lim;
    o->lo = m - lim; o->hi = m + lim;
    if (fabs(dev) < lim || fabs(dev) < rc->p[P_MIN_DEV] || !det_direction_ok(dev, rc->p[P_DIRECTION])) return DET_NORMAL;
    o->excess = det_clamp01(fabs(dev) / lim - 1);
    o->why = ewma_why;
    o->s[0] = cx->slot >= 0 ? cx->slots->name[cx->slot] : rc->metric;
    o->s[1] = dev > 0 ? "up" : "down";
    o->a[0] = st->z; o->a[1] = m; o->a[2] = lim;
    return DET_ANOMALY;
}

const struct det_ops det_ewma = {
    .name = "ewma", .scope = DS_SERIES, .state_size = sizeof(struct ewma_st), .params = params,
    .update = ewma_update,
};
