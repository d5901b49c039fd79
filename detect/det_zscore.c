/* det_zscore.c - rolling z-score: distance of a sample from the window mean
 * in window standard deviations (O(1) from the sliding Welford sums). */
#include "detector.h"

#include <math.h>
#include <stdio.h>

static const struct det_param params[] = {
    { "z", 4, 0, 1e6, DP_LO_OPEN, "anomalous at |z| >= this" },
    { "min_n", 30, 1, WIN_CAP, DP_WHOLE, "samples in the window before deciding" },
    { "min_std", 1e-6, 0, DET_PARAM_MAX, DP_LO_OPEN, "floor on the standard deviation" },
    { "min_dev", 0, 0, DET_PARAM_MAX, 0, "and at least this far from the mean (metric units)" },
    { "direction", 0, -1, 1, DP_WHOLE, "+1 only high, -1 only low, 0 both" },
    { NULL, 0, 0, 0, 0, NULL },
};
/* the parameters above, by name (the same order) */
enum { P_Z, P_MIN_N, P_MIN_STD, P_MIN_DEV, P_DIRECTION, P__COUNT };

/* The reason of an outlier (s: metric; value, score: z; a: deviation, samples). */
static void z_why(const struct det_out *o, const char *who, char *buf, size_t n)
{
    const char *label, *unit;
    metric_label(o->s[0], &label, &unit);
    double dev = o->a[0];
    snprintf(buf, n, "%s: %s %.4g%s, %.3g%s %s its last %u samples (z %.1f)", who, label, o->value, unit, fabs(dev), unit,
             dev > 0 ? "above" : "below", (unsigned)o->a[1], o->score);
}

static int z_update(const struct rule_cfg *rc, void *st, const struct det_ctx *cx, struct det_out *o)
{
    (void)st;
    const struct win *w = cx->s ? cx->s->w : NULL;
    if (!w || win_count(w) < rc->p[P_MIN_N]) return DET_UNKNOWN;
    double m = win_mean(w), sd = win_std(w);
    if (sd < rc->p[P_MIN_STD]) sd = rc->p[P_MIN_STD];
    if (!(sd > 0)) return DET_UNKNOWN;   /* no scale: nothing is an outlier (min_std > 0 at load) */
    double dev = cx->v - m, z = dev / sd;
    o->value = cx->v; o->mean = m; o->std = win_std(w); o->score = z;
    o->lo = m - rc->p[P_Z] * sd; o->hi = m + rc->p[P_Z] * sd;
    if (fabs(z) < rc->p[P_Z] || fabs(dev) < rc->p[P_MIN_DEV] || !det_direction_ok(dev, rc->p[P_DIRECTION])) return DET_NORMAL;
    o->excess = det_clamp01((fabs(z) - rc->p[P_Z]) / rc->p[P_Z]);
    o->why = z_why;
    o->s[0] = cx->slot >= 0 ? cx->slots->name[cx->slot] : rc->metric;
    o->a[0] = dev; o->a[1] = win_count(w);
    return DET_ANOMALY;
}

const struct det_ops det_zscore = {
    .name = "zscore", .scope = DS_SERIES, .params = params, .update = z_update,
};
