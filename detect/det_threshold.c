/* det_threshold.c - static limits with hysteresis: opens above `high` (or
 * below `low`), stays open until the value is back past `clear_high` /
 * `clear_low`; the minimum duration is the rule's `for`. */
#include "detector.h"

#include <math.h>
#include <stdio.h>

#define UNSET 1e300

static const struct det_param params[] = {
    { "high", UNSET, "anomalous above this value" },
    { "low", -UNSET, "anomalous below this value" },
    { "clear_high", UNSET, "an open episode clears below this (default: high)" },
    { "clear_low", -UNSET, "an open episode clears above this (default: low)" },
    { NULL, 0, NULL },
};
/* the parameters above, by name (the same order) */
enum { P_HIGH, P_LOW, P_CLEAR_HIGH, P_CLEAR_LOW, P__COUNT };

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
    char who[96];
    det_who(cx, who, sizeof who);
    const char *label, *unit;
    metric_label(cx->slot >= 0 ? cx->slots->name[cx->slot] : rc->metric, &label, &unit);
    int n = snprintf(o->reason, sizeof o->reason, "%s: %s %.4g%s, %s the %.4g%s limit", who, label, v, unit,
                     up ? "above" : "below", lim, unit);
    if (w && win_count(w) >= 10 && n > 0 && (size_t)n < sizeof o->reason)
        snprintf(o->reason + n, sizeof o->reason - n, " (recent mean %.3g%s)", win_mean(w), unit);
    return DET_ANOMALY;
}

const struct det_ops det_threshold = {
    .name = "threshold", .scope = DS_SERIES, .params = params, .update = thr_update,
};
