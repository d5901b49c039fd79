/* det_counter.c - counter increase within a time window (ECC counts, PCIe
 * replays): alerts on how much a cumulative counter grew in the last
 * window_s seconds, never on its level. A decrease is a counter reset. */
#include "detector.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define CTR_RING 12
struct ctr_st {
    double last;
    int have, n;
    int64_t ts[CTR_RING];
    float inc[CTR_RING];
};

static const struct det_param params[] = {
    { "window_s", 60, 0, DP_DAYS365, DP_LO_OPEN, "look-back window in seconds" },
    { "min_increase", 1, 0, DET_PARAM_MAX, DP_LO_OPEN, "anomalous when the counter grew by at least this in the window" },
    { NULL, 0, 0, 0, 0, NULL },
};
/* the parameters above, by name (the same order) */
enum { P_WINDOW_S, P_MIN_INCREASE, P__COUNT };

/* The reason of a rise (s: metric; a: increase, window s, counter). */
static void ctr_why(const struct det_out *o, const char *who, char *buf, size_t n)
{
    const char *label, *unit;
    metric_label(o->s[0], &label, &unit);
    snprintf(buf, n, "%s: %s rose by %.0f in the last %.0f s (counter now %.0f)", who, label, o->a[0], o->a[1], o->a[2]);
}

static int ctr_update(const struct rule_cfg *rc, void *stp, const struct det_ctx *cx, struct det_out *o)
{
    struct ctr_st *st = stp;
    double v = cx->v;
    int64_t win_ms = (int64_t)(rc->p[P_WINDOW_S] * 1000);
    if (st->have && v > st->last) {
        if (st->n == CTR_RING) {   /* fold the two oldest increases */
            st->inc[1] += st->inc[0];
            memmove(&st->ts[0], &st->ts[1], (CTR_RING - 1) * sizeof st->ts[0]);
            memmove(&st->inc[0], &st->inc[1], (CTR_RING - 1) * sizeof st->inc[0]);
            st->n--;
        }
        st->ts[st->n] = cx->ts;
        st->inc[st->n] = (float)(v - st->last);
        st->n++;
    }
    int first = !st->have;
    st->last = v;
    st->have = 1;
    /* expire increases older than the window */
    int k = 0;
    while (k < st->n && st->ts[k] <= cx->ts - win_ms) k++;
    if (k) {
        memmove(&st->ts[0], &st->ts[k], (st->n - k) * sizeof st->ts[0]);
        memmove(&st->inc[0], &st->inc[k], (st->n - k) * sizeof st->inc[0]);
        st->n -= k;
    }
    double sum = 0;
    for (int i = 0; i < st->n; i++) sum += st->inc[i];
    if (first) return DET_UNKNOWN;
    o->value = v; o->score = sum; o->lo = 0; o->hi = rc->p[P_MIN_INCREASE] > 1 ? rc->p[P_MIN_INCREASE] - 1 : 0;
    if (!(sum > 0) || sum < rc->p[P_MIN_INCREASE]) return DET_NORMAL;   /* a counter that did not grow never alarms */
    o->excess = det_clamp01(sum / (10 * rc->p[P_MIN_INCREASE]));
    o->why = ctr_why;
    o->s[0] = cx->slot >= 0 ? cx->slots->name[cx->slot] : rc->metric;
    o->a[0] = sum; o->a[1] = rc->p[P_WINDOW_S]; o->a[2] = v;
    return DET_ANOMALY;
}

/* A state read back from a snapshot: n indexes the rings, its times and
 * numbers are usable (an INT64_MIN time overflowed the window's expiry). */
static int ctr_check(const struct rule_cfg *rc, const void *stp)
{
    const struct ctr_st *st = stp;
    (void)rc;
    if (st->n < 0 || st->n > CTR_RING || st->have < 0 || st->have > 1 || !isfinite(st->last)) return 0;
    for (int i = 0; i < st->n; i++)
        if (!gl_time_ok(st->ts[i]) || !isfinite(st->inc[i])) return 0;
    return 1;
}

const struct det_ops det_counter = {
    .name = "counter_increase", .scope = DS_SERIES, .state_size = sizeof(struct ctr_st), .params = params,
    .update = ctr_update, .check = ctr_check,
};
