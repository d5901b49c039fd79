/* det_threshold.c - static limits with hysteresis: opens above `high` (or
 * below `low`), stays open until the value is back past `clear_high` /
 * `clear_low`; the minimum duration is the rule's `for`. */
#include "detector.h"

#include <math.h>
#include <stdio.h>

#define UNSET 1e300

static const struct det_param params[] = {
    { "high", UNSET, -DET_PARAM_MAX, DET_PARAM_MAX, 0, "anomalous above this value" },
    { "low", -UNSET, -DET_PARAM_MAX, DET_PARAM_MAX, 0, "anomalous below this value" },
    { "clear_high", UNSET, -DET_PARAM_MAX, DET_PARAM_MAX, 0, "an open episode clears below this (default: high)" },
    { "clear_low", -UNSET, -DET_PARAM_MAX, DET_PARAM_MAX, 0, "an open episode clears above this (default: low)" },
    { NULL, 0, 0, 0, 0, NULL },
};
/* the parameters above, by name (the same order) */
enum { P_HIGH, P_LOW, P_CLEAR_HIGH, P_CLEAR_LOW, P__COUNT };

/* The reason of a limit crossed (s: metric, side; value; a: limit, have a
 * recent mean, the mean). */
static void thr_why(const struct det_out *o, const char *who, char *buf, size_t len)
{
    const char *label, *unit;
    metric_label(o->s[0], &label, &unit);
    int n = snprintf(buf, len, "%s: %s %.4g%s, %s the %.4g%s limit", who, label, o->value, unit, o->s[1], o->a[0], unit);
    if (o->a[1] != 0 && n > 0 && (size_t)n < len) snprintf(buf + n, len - n, " (recent mean %.3g%s)", o->a[2], unit);
}

static int thr_update(const struct rule_cfg *rc, void *st, const struct det_ctx *cx, struct det_out *o)
{
    (void)st;
    double hi = rc->p[P_HIGH], lo = rc->p[P_LOW];
    double chi = rc->p[P_CLEAR_HIGH] < UNSET ? rc->p[P_CLEAR_HIGH] : hi, clo = rc->p[P_CLEAR_LOW] > -UNSET ? rc->p[P_CLEAR_LOW] : lo;
    double v = cx->v;
    const struct win *w = cx->s ? cx->s->w : NULL;
    o->value = v;
    /* expected range: the configured limits, the window's extremes where unset */
    o->hi = hi < UNSET ? hi : (w && win_count(w) ? win_max(w) : v);
    o->lo = lo > -UNSET ? lo : (w && win_count(w) ? win_min(w) : v);
    if (o->lo > o->hi) o->lo = o->hi;
    if (w && win_count(w) >= 2) { o->mean = win_mean(w); o->std = win_std(w); }
    int up = cx->open ? v > chi : v > hi;
    int down = cx->open ? v < clo : v < lo;
    if (!up && !down) return DET_NORMAL;
    double lim = up ? hi : lo;
    double scale = fabs(lim) * 0.1 > 1 ? fabs(lim) * 0.1 : 1;
    o->score = v - lim;
    o->excess = det_clamp01(fabs(v - lim) / scale);
    o->why = thr_why;
    o->s[0] = cx->slot >= 0 ? cx->slots->name[cx->slot] : rc->metric;
    o->s[1] = up ? "above" : "below";
    o->a[0] = lim; o->a[1] = w && win_count(w) >= 10; o->a[2] = w ? win_mean(w) : 0;
    return DET_ANOMALY;
}

const struct det_ops det_threshold = {
    .name = "threshold", .scope = DS_SERIES, .params = params, .update = thr_update,
};
