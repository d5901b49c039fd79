/* det_robust_z.c - robust z-score: distance from the window median in units
 * of 1.4826 x MAD (1.2533 x mean absolute deviation when MAD is 0;
 * insensitive to the outliers it is looking for). Optional
 * gate: only judge while another metric (the GPU's utilisation) has been
 * steady over its window (and power, optionally), so load changes are not
 * reported as anomalies. Optional cold-start reference: while the series
 * is younger than its window, median and scale leave out the newest `lag`
 * samples, so a step that began shortly before the first judgement is
 * measured against the level before it. */
#include "detector.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const struct det_param params[] = {
    { "z", 3.5, 0, 1e6, DP_LO_OPEN, "anomalous at |robust z| >= this" },
    { "min_n", 30, 1, WIN_CAP, DP_WHOLE, "samples in the window before deciding" },
    { "min_scale", 1e-6, 0, DET_PARAM_MAX, DP_LO_OPEN, "floor on 1.4826 x MAD" },
    { "min_dev", 0, 0, DET_PARAM_MAX, 0, "and at least this far from the median (metric units)" },
    { "direction", 0, -1, 1, DP_WHOLE, "+1 only high, -1 only low, 0 both" },
    { "steady_range", 0, 0, 100, 0, "gate: judge only while the utilisation window spans at most this (0 = off)" },
    { "steady_power", 0, 0, 10, 0, "gate: and the power window spans at most this fraction of its median (0 = off)" },
    { "lag", 0, 0, WIN_CAP - 1, DP_WHOLE, "while the series is younger than its window, median and scale leave out the newest lag samples (0 = off; < min_n)" },
    { NULL, 0, 0, 0, 0, NULL },
};
/* the parameters above, by name (the same order) */
enum { P_Z, P_MIN_N, P_MIN_SCALE, P_MIN_DEV, P_DIRECTION, P_STEADY_RANGE, P_STEADY_POWER, P_LAG, P__COUNT };

static int rz_configure(struct rule_cfg *rc, struct profile_slots *ps, char *err, size_t errlen)
{
    if (rc->p[P_LAG] >= rc->p[P_MIN_N]) {   /* each one's range is checked at load */
        snprintf(err, errlen, "rule %s: lag must be below min_n", rc->id);
        return GL_ERROR;
    }
    rc->aux[0] = rc->p[P_STEADY_RANGE] > 0 ? profile_slot(ps, "gpu.utilization.gpu.pct", 1) : -1;
    rc->aux[1] = rc->p[P_STEADY_POWER] > 0 ? profile_slot(ps, "gpu.power.usage", 1) : -1;
    return GL_OK;
}

/* The reason of an outlier (s: metric; value, score: z; a: deviation, span s). */
static void rz_why(const struct det_out *o, const char *who, char *buf, size_t n)
{
    const char *label, *unit;
    metric_label(o->s[0], &label, &unit);
    double dev = o->a[0];
    snprintf(buf, n, "%s: %s %.4g%s, %.3g%s %s its median of the last %lld s (robust z %.1f)",
             who, label, o->value, unit, fabs(dev), unit, dev > 0 ? "above" : "below", (long long)o->a[1], o->score);
}

/* The reference the sample is judged against: w itself, or (lag > 0) ref,
 * the caller's scratch window, filled with w's samples less its newest lag:
 * a step that began up to lag samples ago still meets the level before it,
 * not a median and scale it already pulls half-way. */
static const struct win *rz_reference(const struct win *w, unsigned lag, struct win *ref)
{
    unsigned n = win_count(w);
    if (!lag) return w;
    unsigned m = n > lag ? n - lag : 1;
    win_init(ref, w->cap, 0);
    for (unsigned i = 0; i < m; i++) win_push(ref, win_time_at(w, i), win_at(w, i));
    return ref;
}

static int rz_update(const struct rule_cfg *rc, void *st, const struct det_ctx *cx, struct det_out *o)
{
    (void)st;
    const struct win *w = cx->s ? cx->s->w : NULL;
    if (!w || win_count(w) < rc->p[P_MIN_N]) return DET_UNKNOWN;
    if ((rc->aux[0] >= 0 || rc->aux[1] >= 0) &&
        !det_load_steady(cx->e, rc->aux[0], rc->p[P_STEADY_RANGE], rc->aux[1], rc->p[P_STEADY_POWER], (unsigned)rc->p[P_MIN_N]))
        return cx->open ? DET_HOLD : DET_UNKNOWN;   /* load changed: cannot judge, an open episode stays */
    struct win refw;
    /* cold series only: once it has filled its window, a step is judged
     * from its first samples on, against a window it barely touches */
    unsigned lag = cx->s->nsamples < w->cap ? (unsigned)rc->p[P_LAG] : 0;
    const struct win *r = rz_reference(w, lag, &refw);
    double med = win_median(r), sc = 1.4826 * win_mad(r);
    /* discrete data (integer readings) often has MAD 0: fall back to the
     * mean absolute deviation, scaled to sigma for normal data */
    if (sc == 0) sc = DET_MAE_SD * win_mean_abs_dev(r, med);
    if (sc < rc->p[P_MIN_SCALE]) sc = rc->p[P_MIN_SCALE];
    if (!(sc > 0)) return DET_UNKNOWN;   /* no scale: nothing is an outlier (min_scale > 0 at load) */
    double dev = cx->v - med, z = dev / sc;
    o->value = cx->v; o->mean = win_mean(w); o->std = win_std(w); o->score = z;
    o->lo = med - rc->p[P_Z] * sc; o->hi = med + rc->p[P_Z] * sc;
    if (fabs(z) < rc->p[P_Z] || fabs(dev) < rc->p[P_MIN_DEV] || !det_direction_ok(dev, rc->p[P_DIRECTION])) return DET_NORMAL;
    o->excess = det_clamp01((fabs(z) - rc->p[P_Z]) / (2 * rc->p[P_Z]));
    o->why = rz_why;
    o->s[0] = cx->slot >= 0 ? cx->slots->name[cx->slot] : rc->metric;
    o->a[0] = dev; o->a[1] = (double)((cx->ts - win_time_at(w, 0)) / 1000);
    return DET_ANOMALY;
}

const struct det_ops det_robust_z = {
    .name = "robust_z", .scope = DS_SERIES, .params = params, .configure = rz_configure, .update = rz_update,
};
