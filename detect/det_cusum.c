/* det_cusum.c - two-sided CUSUM for level shifts: S+ and S- accumulate
 * standardised deviations beyond a slack k; a shift is reported when either
 * passes h. Reference mean/sigma come from the window. */
#include "detector.h"

#include <math.h>
#include <stdio.h>

struct cusum_st { double sp, sn; };

static const struct det_param params[] = {
    { "k", 0.5, 0, 1e6, 0, "slack in sigmas" },
    { "h", 8, 0, 1e6, DP_LO_OPEN, "decision interval in sigmas" },
    { "min_n", 30, 1, WIN_CAP, DP_WHOLE, "samples in the window before deciding" },
    { "min_std", 1e-6, 0, DET_PARAM_MAX, DP_LO_OPEN, "floor on sigma" },
    { "direction", 0, -1, 1, DP_WHOLE, "+1 only upward shifts, -1 only downward, 0 both" },
    { NULL, 0, 0, 0, 0, NULL },
};
/* the parameters above, by name (the same order) */
enum { P_K, P_H, P_MIN_N, P_MIN_STD, P_DIRECTION, P__COUNT };

/* The reason of a shift (s: metric, direction; a: value, level before). */
static void cusum_why(const struct det_out *o, const char *who, char *buf, size_t n)
{
    const char *label, *unit;
    metric_label(o->s[0], &label, &unit);
    snprintf(buf, n, "%s: %s shifted %s to %.4g%s from a recent level of %.4g%s (CUSUM %.1f sigma)",
             who, label, o->s[1], o->a[0], unit, o->a[1], unit, fabs(o->score));
}

static int cusum_update(const struct rule_cfg *rc, void *stp, const struct det_ctx *cx, struct det_out *o)
{
    struct cusum_st *st = stp;
    const struct win *w = cx->s ? cx->s->w : NULL;
    if (!w || win_count(w) < rc->p[P_MIN_N]) return DET_UNKNOWN;
    double m = win_mean(w), sd = win_std(w);
    if (sd < rc->p[P_MIN_STD]) sd = rc->p[P_MIN_STD];
    if (!(sd > 0)) return DET_UNKNOWN;   /* no scale (min_std > 0 at load) */
    double x = (cx->v - m) / sd;
    st->sp = fmax(0, st->sp + x - rc->p[P_K]);
    st->sn = fmax(0, st->sn - x - rc->p[P_K]);
    if (st->sp > 1e6) st->sp = 1e6;
    if (st->sn > 1e6) st->sn = 1e6;
    double h = rc->p[P_H];
    int up = st->sp > h && rc->p[P_DIRECTION] >= 0, down = st->sn > h && rc->p[P_DIRECTION] <= 0;
    o->value = cx->v; o->mean = m; o->std = win_std(w);
    o->score = up ? st->sp : down ? -st->sn : fmax(st->sp, st->sn);
    o->lo = m - rc->p[P_K] * sd; o->hi = m + rc->p[P_K] * sd;
    if (!up && !down) return DET_NORMAL;
    o->excess = det_clamp01(fabs(o->score) / h - 1);
    o->why = cusum_why;
    o->s[0] = cx->slot >= 0 ? cx->slots->name[cx->slot] : rc->metric;
    o->s[1] = up ? "up" : "down";
    o->a[0] = cx->v; o->a[1] = m;
    return DET_ANOMALY;
}

const struct det_ops det_cusum = {
    .name = "cusum", .scope = DS_SERIES, .state_size = sizeof(struct cusum_st), .params = params,
    .update = cusum_update,
};
