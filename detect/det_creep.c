/* det_creep.c - slow creep at steady load: a metric (the temperature of a
 * GPU whose fan is failing) rising by tenths of a unit per minute for tens
 * of minutes while the load stays the same. Per-minute means of the metric
 * and of the power over samples under load (detect/creep.h) over the last
 * 8-16 minutes: anomalous when the metric's fitted line rose by at least min_rise at
 * min_rate per minute or more, in most intervals, not slowing down (a job
 * start levels off) and without one interval holding most of it, while
 * the power stayed within max_power of its mean (more load explains more
 * heat). Room drift is far slower. An open episode ends only when the
 * metric is back within min_rise/2 of where the creep began. */
#include "detector.h"
#include "creep.h"

#include <math.h>
#include <stdio.h>

static const struct det_param params[] = {
    { "interval_s", 60, 0, 86400, DP_LO_OPEN, "seconds per interval (at least 3 samples)" },
    { "min_n", 8, 3, CREEP_CAP, DP_WHOLE, "intervals needed (<= 16)" },
    { "min_rise", 4, 0, DET_PARAM_MAX, DP_LO_OPEN, "rise over the intervals held (metric units)" },
    { "min_rate", 0.25, 0, DET_PARAM_MAX, 0, "and at least this much per minute" },
    { "min_up_frac", 0.6, 0, 1, 0, "share of intervals that must rise" },
    { "max_power", 0.08, 0, 10, 0, "power range over the intervals, as a fraction of its mean" },
    { "min_util", 50, 0, 100, 0, "samples at or above this utilisation (%) count" },
    { "recover_s", 90, 0, DP_DAYS365, 0, "and only this long after the utilisation was last below min_util (a checkpoint dip cools the GPU)" },
    { "settle_s", 300, 0, DP_DAYS365, 0, "intervals from the first settle_s after the ring (re)started are dropped (a job start warms the GPU)" },
    { NULL, 0, 0, 0, 0, NULL },
};
/* the parameters above, by name (the same order) */
enum { P_INTERVAL_S, P_MIN_N, P_MIN_RISE, P_MIN_RATE, P_MIN_UP_FRAC, P_MAX_POWER, P_MIN_UTIL, P_RECOVER_S, P_SETTLE_S, P__COUNT };

/* per-interval means of the metric and of the power; where the creep began */
struct cr_st {
    struct creep m, p;
    int64_t busy_since;       /* utilisation at or above min_util since */
    int64_t ring_since;       /* the ring (re)started here (0 = it is empty) */
    float base;
    uint8_t hit;
};

static int cr_configure(struct rule_cfg *rc, struct profile_slots *ps, char *err, size_t errlen)
{
    (void)err; (void)errlen;   /* min_n's range 3..CREEP_CAP is checked at load */
    rc->aux[0] = profile_slot(ps, "gpu.utilization.gpu.pct", 0);
    rc->aux[1] = profile_slot(ps, "gpu.power.usage", 0);
    return GL_OK;
}

/* The verdict on the intervals held (judged when one closes). */
static int cr_judge(const struct rule_cfg *rc, const struct cr_st *st, double iv_min)
{
    unsigned k = st->m.n;
    if (k < rc->p[P_MIN_N] || st->p.n != k) return 0;
    struct creep_shape sh;
    creep_shape(&st->m, k, 0, &sh);
    /* the fitted line's rise, not the end points: one warm interval at
     * the end of a flat stretch is no creep */
    if (sh.fit < rc->p[P_MIN_RISE] || sh.fit < rc->p[P_MIN_RATE] * iv_min * (k - 1) ||
        sh.up_frac < rc->p[P_MIN_UP_FRAC] || sh.newer < 0.5 * sh.older || sh.max_step > 0.5 * sh.rise)
        return 0;
    double lo = st->p.v[0], hi = lo, sum = 0;
    for (unsigned i = 0; i < k; i++) {
        if (st->p.v[i] < lo) lo = st->p.v[i];
        if (st->p.v[i] > hi) hi = st->p.v[i];
        sum += st->p.v[i];
    }
    return hi - lo <= rc->p[P_MAX_POWER] * sum / k;
}

/* The reason of a creep (s: metric; a: rise, minutes, value). */
static void cr_why(const struct det_out *o, const char *who, char *buf, size_t n)
{
    const char *label, *unit;
    metric_label(o->s[0], &label, &unit);
    snprintf(buf, n, "%s: %s creeping up at steady load: %+.1f%s over %.0f min, now %.4g%s (cooling fault?)",
             who, label, o->a[0], unit, o->a[1], o->a[2], unit);
}

static int cr_update(const struct rule_cfg *rc, void *stp, const struct det_ctx *cx, struct det_out *o)
{
    struct cr_st *st = stp;
    double v, u = 0, pw = 0;
    if (!ent_val(cx->e, rc->slot, &v)) return cx->open ? DET_HOLD : DET_UNKNOWN;
    int ok = ent_val(cx->e, rc->aux[0], &u) && u >= rc->p[P_MIN_UTIL] && ent_val(cx->e, rc->aux[1], &pw);
    if (!ok) st->busy_since = 0;
    else if (!st->busy_since) st->busy_since = cx->ts;
    int counted = ok && cx->ts - st->busy_since >= rc->p[P_RECOVER_S] * 1000;
    double ivms = rc->p[P_INTERVAL_S] * 1000, step = 3 * ent_interval_ms(cx->e, 1000);
    if (ivms < step) ivms = step;
    int closed = creep_add(&st->m, cx->ts, v, counted, (int64_t)ivms, 0);
    creep_add(&st->p, cx->ts, pw, counted, (int64_t)ivms, 0);
    if (closed) {
        /* the first intervals of a job (the GPU warming up) do not count */
        if (!st->ring_since) st->ring_since = cx->ts;
        if (cx->ts - st->ring_since < rc->p[P_SETTLE_S] * 1000) { creep_reset(&st->m); creep_reset(&st->p); closed = 0; }
    } else if (!st->m.n && !st->m.nok) {
        st->ring_since = 0;   /* emptied: the next kept interval starts it again */
    }
    if (closed) st->hit = (uint8_t)cr_judge(rc, st, ivms / 60000.0);
    double half = rc->p[P_MIN_RISE] / 2;
    o->value = v; o->metric_slot = rc->slot;
    o->lo = st->m.n ? st->m.v[0] : v; o->hi = o->lo + rc->p[P_MIN_RISE];
    o->score = st->m.n ? creep_last(&st->m) - st->m.v[0] : 0;
    if (cx->open) {
        /* ends only back near where it began; unjudged (idle) while still up: held */
        if (!ok || !st->m.n) return v >= st->base + half ? DET_HOLD : DET_NORMAL;
        if (creep_last(&st->m) < st->base + half) return DET_NORMAL;
    } else {
        if (st->m.n < rc->p[P_MIN_N]) return DET_UNKNOWN;
        if (!st->hit) return DET_NORMAL;
        st->base = st->m.v[0];
    }
    double rise = creep_last(&st->m) - st->base;
    o->score = rise;
    o->excess = det_clamp01(rise / (4 * rc->p[P_MIN_RISE]));
    o->why = cr_why;
    o->s[0] = rc->metric;
    o->a[0] = rise; o->a[1] = (st->m.n - 1) * ivms / 60000.0; o->a[2] = v;
    return DET_ANOMALY;
}

/* A state read back from a snapshot is usable: both rings are whole, its
 * times gl_time_ok. */
static int cr_check(const struct rule_cfg *rc, const void *stp)
{
    (void)rc;
    const struct cr_st *st = stp;
    return creep_ok(&st->m) && creep_ok(&st->p) && isfinite(st->base) && st->hit <= 1 && gl_time_ok(st->busy_since) &&
           gl_time_ok(st->ring_since);
}

const struct det_ops det_creep = {
    .name = "creep", .scope = DS_GPU, .needs_metric = 1, .state_size = sizeof(struct cr_st), .params = params,
    .configure = cr_configure, .update = cr_update, .check = cr_check,
};
