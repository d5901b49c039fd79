/* det_flatline.c - stuck value: the same reading for min_samples samples in
 * a row from a series that was varying before (std above min_std when the
 * run began), as a frozen sensor or a wedged exporter produces. */
#include "detector.h"

#include <math.h>
#include <stdio.h>

struct flat_st { double last; uint32_t run; int have, varied; int64_t since; };

static const struct det_param params[] = {
    { "min_samples", 300, 2, 1e9, DP_WHOLE, "identical samples in a row" },
    { "min_std", 0.5, 0, DET_PARAM_MAX, 0, "the window std before the run must exceed this" },
    { NULL, 0, 0, 0, 0, NULL },
};
/* the parameters above, by name (the same order) */
enum { P_MIN_SAMPLES, P_MIN_STD, P__COUNT };

/* The reason of a stuck series (s: metric; a: value, samples, seconds). */
static void flat_why(const struct det_out *o, const char *who, char *buf, size_t n)
{
    const char *label, *unit;
    metric_label(o->s[0], &label, &unit);
    snprintf(buf, n, "%s: %s stuck at %.4g%s for %u samples (%lld s) after varying before",
             who, label, o->a[0], unit, (unsigned)o->a[1], (long long)o->a[2]);
}

static int flat_update(const struct rule_cfg *rc, void *stp, const struct det_ctx *cx, struct det_out *o)
{
    struct flat_st *st = stp;
    const struct win *w = cx->s ? cx->s->w : NULL;
    if (st->have && cx->v == st->last) {
        st->run++;
    } else {
        st->run = 1;
        st->since = cx->ts;
        st->varied = w && win_count(w) >= 10 && win_std(w) > rc->p[P_MIN_STD];
    }
    st->last = cx->v;
    st->have = 1;
    o->value = cx->v; o->score = st->run;
    if (st->run < rc->p[P_MIN_SAMPLES] || !st->varied) return st->run < 2 ? DET_NORMAL : (cx->open ? DET_ANOMALY : DET_NORMAL);
    o->excess = det_clamp01(st->run / (4 * rc->p[P_MIN_SAMPLES]));
    o->why = flat_why;
    o->s[0] = cx->slot >= 0 ? cx->slots->name[cx->slot] : rc->metric;
    o->a[0] = cx->v; o->a[1] = st->run; o->a[2] = (double)((cx->ts - st->since) / 1000);
    return DET_ANOMALY;
}

/* A state read back from a snapshot is usable: flags 0/1, a finite value,
 * a time gl_time_ok (the reason's seconds are a difference of times). */
static int flat_check(const struct rule_cfg *rc, const void *stp)
{
    (void)rc;
    const struct flat_st *st = stp;
    return st->have >= 0 && st->have <= 1 && st->varied >= 0 && st->varied <= 1 && isfinite(st->last) &&
           gl_time_ok(st->since);
}

const struct det_ops det_flatline = {
    .name = "flatline", .scope = DS_SERIES, .state_size = sizeof(struct flat_st), .params = params,
    .update = flat_update, .check = flat_check,
};
