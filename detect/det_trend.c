/* det_trend.c - trend: the least-squares slope of the last `span` samples
 * (per second of event time) beyond `slope`, with the fit's total change at
 * least `min_change`. Optional gate as robust_z: only while utilisation and
 * power were steady, so a temperature climbing at constant load (a cooling
 * fault) is reported early, a job start is not. */
#include "detector.h"

#include <math.h>
#include <stdio.h>

static const struct det_param params[] = {
    { "span", 20, 3, WIN_CAP, DP_WHOLE, "samples in the fit (<= window size)" },
    { "slope", 0.2, 0, DET_PARAM_MAX, DP_LO_OPEN, "anomalous at |slope| >= this many units per second" },
    { "min_change", 3, 0, DET_PARAM_MAX, 0, "and a fitted change over the span of at least this" },
    { "direction", 0, -1, 1, DP_WHOLE, "+1 only rising, -1 only falling, 0 both" },
    { "steady_range", 0, 0, 100, 0, "gate: utilisation window spans at most this (0 = off)" },
    { "steady_power", 0, 0, 10, 0, "gate: power window spans at most this fraction of its median (0 = off)" },
    { "min_n", 60, 1, WIN_CAP, DP_WHOLE, "samples in the gate windows before deciding" },
    { NULL, 0, 0, 0, 0, NULL },
};
/* the parameters above, by name (the same order) */
enum { P_SPAN, P_SLOPE, P_MIN_CHANGE, P_DIRECTION, P_STEADY_RANGE, P_STEADY_POWER, P_MIN_N, P__COUNT };

static int trend_configure(struct rule_cfg *rc, struct profile_slots *ps, char *err, size_t errlen)
{
    (void)err; (void)errlen;   /* span's range 3..WIN_CAP is checked at load */
    rc->aux[0] = rc->p[P_STEADY_RANGE] > 0 ? profile_slot(ps, "gpu.utilization.gpu.pct", 1) : -1;
    rc->aux[1] = rc->p[P_STEADY_POWER] > 0 ? profile_slot(ps, "gpu.power.usage", 1) : -1;
    return GL_OK;
}

/* The reason of a trend (s: metric, load note; value, score: slope; a:
 * change, seconds). */
static void trend_why(const struct det_out *o, const char *who, char *buf, size_t n)
{
    const char *label, *unit;
    metric_label(o->s[0], &label, &unit);
    double slope = o->score;
    snprintf(buf, n, "%s: %s %s %.2g%s per second (%+.3g%s in %.0f s, now %.4g%s)%s", who, label,
             slope > 0 ? "climbing" : "falling", fabs(slope), unit, o->a[0], unit, o->a[1], o->value, unit, o->s[1]);
}

static int trend_update(const struct rule_cfg *rc, void *st, const struct det_ctx *cx, struct det_out *o)
{
    (void)st;
    const struct win *w = cx->s ? cx->s->w : NULL;
    unsigned span = (unsigned)rc->p[P_SPAN];
    if (!w || win_count(w) + 1 < span) return DET_UNKNOWN;
    if ((rc->aux[0] >= 0 || rc->aux[1] >= 0) &&
        !det_load_steady(cx->e, rc->aux[0], rc->p[P_STEADY_RANGE], rc->aux[1], rc->p[P_STEADY_POWER], (unsigned)rc->p[P_MIN_N]))
        return cx->open ? DET_HOLD : DET_UNKNOWN;   /* load changed: cannot judge, an open episode stays */
    /* the last span-1 window samples plus this one, times relative to now */
    unsigned n = win_count(w), start = n - (span - 1);
    double st_ = 0, sv = 0, stt = 0, stv = 0;
    for (unsigned i = start; i <= n; i++) {
        double t = i < n ? (double)(win_time_at(w, i) - cx->ts) / 1000.0 : 0.0;
        double v = i < n ? win_at(w, i) : cx->v;
        st_ += t; sv += v; stt += t * t; stv += t * v;
    }
    double k = span, den = k * stt - st_ * st_;
    if (!(den > 0)) return DET_UNKNOWN;
    double slope = (k * stv - st_ * sv) / den;
    double t0 = (double)(win_time_at(w, start) - cx->ts) / 1000.0;
    double change = -slope * t0;
    o->value = cx->v; o->mean = win_mean(w); o->std = win_std(w); o->score = slope;
    o->lo = -rc->p[P_SLOPE]; o->hi = rc->p[P_SLOPE];
    if (fabs(slope) < rc->p[P_SLOPE] || fabs(change) < rc->p[P_MIN_CHANGE] || !det_direction_ok(slope, rc->p[P_DIRECTION])) return DET_NORMAL;
    o->excess = det_clamp01(fabs(slope) / rc->p[P_SLOPE] - 1);
    o->why = trend_why;
    o->s[0] = cx->slot >= 0 ? cx->slots->name[cx->slot] : rc->metric;
    o->s[1] = rc->aux[0] >= 0 ? " at steady load" : "";
    o->a[0] = change; o->a[1] = -t0;
    return DET_ANOMALY;
}

const struct det_ops det_trend = {
    .name = "trend", .scope = DS_SERIES, .params = params, .configure = trend_configure, .update = trend_update,
};
