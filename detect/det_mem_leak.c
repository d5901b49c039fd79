/* det_mem_leak.c - memory leak: framebuffer use growing steadily after the
 * job settled. Two looks: a fast one (by at least min_growth over the last
 * span samples, most steps up, none down by much, or 3/4 of it over the
 * whole window) and a slow one for leaks that grow in chunks (the floor of
 * the framebuffer per `interval_s`, detect/creep.h: at least slow_growth
 * MiB at slow_rate MiB/min or more, rising in most intervals, no single
 * interval holding most of it, not slowing down). A job start (memory
 * climbing from near zero: model loading, then the caching allocator
 * growing for a few minutes) is not a leak: nothing is judged until
 * `settle_s` after the framebuffer last was near empty or dropped by a
 * quarter. An open episode stays open while the memory keeps growing
 * (at a quarter of the opening rates) or stays above the level where the
 * leak began, and the job was not ended. */
#include "detector.h"
#include "creep.h"

#include <math.h>
#include <stdio.h>

static const struct det_param params[] = {
    { "span", 30, 3, WIN_CAP, DP_WHOLE, "samples looked back (<= window size)" },
    { "min_growth", 512, 0, 1e9, DP_LO_OPEN, "MiB of growth over the span" },
    { "min_up_frac", 0.6, 0, 1, 0, "share of steps (samples, or intervals for the slow look) that must go up" },
    { "max_drop", 64, 0, 1e9, 0, "no step may drop by more than this (MiB)" },
    { "settle_s", 300, 0, DP_DAYS365, 0, "seconds after a job start (framebuffer near empty or freed) before judging" },
    { "empty_mib", 1024, 0, 1e9, 0, "framebuffer use at or below this counts as no job" },
    { "interval_s", 30, 0, 86400, DP_LO_OPEN, "slow look: seconds per interval (its lowest framebuffer use)" },
    { "slow_growth", 256, 0, 1e9, DP_LO_OPEN, "slow look: MiB of growth" },
    { "slow_rate", 60, 0, 1e9, 0, "slow look: MiB per minute" },
    { "slow_n", 6, 3, CREEP_CAP, DP_WHOLE, "slow look: intervals needed (<= 16)" },
    { NULL, 0, 0, 0, 0, NULL },
};
/* the parameters above, by name (the same order) */
enum { P_SPAN, P_MIN_GROWTH, P_MIN_UP_FRAC, P_MAX_DROP, P_SETTLE_S, P_EMPTY_MIB, P_INTERVAL_S, P_SLOW_GROWTH,
       P_SLOW_RATE, P_SLOW_N, P__COUNT };

/* the job phase and the per-interval floors */
struct ml_st {
    struct creep c;
    int64_t phase_ts;         /* the framebuffer was last empty or freed here */
    float base;               /* while open: the floor where the leak began */
    float last;               /* the previous sample */
    uint8_t slow_hit;         /* the slow look's verdict at the last interval */
};

static int ml_configure(struct rule_cfg *rc, struct profile_slots *ps, char *err, size_t errlen)
{
    (void)err; (void)errlen;   /* slow_n's range 3..CREEP_CAP is checked at load */
    rc->aux[0] = profile_slot(ps, "gpu.memory.framebuffer.used_size", 1);
    return GL_OK;
}

/* The fast look over the window w; growth and the look's first index out. */
static int ml_fast(const struct rule_cfg *rc, const struct win *w, int open, double *growth, unsigned *first)
{
    unsigned span = (unsigned)rc->p[P_SPAN], n = win_count(w);
    if (span < 3 || n < span) return 0;
    int hit = 0;
    for (int look = 0; look < 2 && !hit; look++) {
        unsigned sp = look == 0 ? span : n;
        if (look == 1 && n < 2 * span) break;
        double need = (look == 0 ? rc->p[P_MIN_GROWTH] : 0.75 * rc->p[P_MIN_GROWTH]) * (open ? 0.25 : 1);
        unsigned start = n - sp;
        *growth = win_last(w) - win_at(w, start);
        *first = start;
        if (!(*growth >= need)) continue;    /* too little growth: the steps cannot make a hit */
        int ups = 0, bad = 0;
        for (unsigned i = start + 1; i < n; i++) {
            double d = win_at(w, i) - win_at(w, i - 1);
            if (d > 0) ups++;
            if (d < -rc->p[P_MAX_DROP]) bad = 1;
        }
        hit = !bad && ups >= rc->p[P_MIN_UP_FRAC] * (sp - 1) * (open ? 0.5 : 1);
    }
    return hit;
}

/* The slow look over the interval floors (judged when an interval closes). */
static int ml_slow(const struct rule_cfg *rc, const struct ml_st *st, int open, double *growth)
{
    unsigned k = st->c.n;
    if (k < rc->p[P_SLOW_N]) return 0;
    struct creep_shape sh;
    creep_shape(&st->c, k, 0, &sh);
    *growth = sh.rise;
    double f = open ? 0.25 : 1;
    double mins = (double)(k - 1) * rc->p[P_INTERVAL_S] / 60.0;
    return sh.rise >= f * rc->p[P_SLOW_GROWTH] && sh.rise >= f * rc->p[P_SLOW_RATE] * mins &&
           sh.up_frac >= rc->p[P_MIN_UP_FRAC] * (open ? 0.5 : 1) && sh.min_step >= -rc->p[P_MAX_DROP] &&
           sh.max_step <= 0.6 * sh.rise && sh.newer >= 0.4 * sh.older;
}

/* The reason of a leak (value: framebuffer; a: growth, seconds). */
static void ml_why(const struct det_out *o, const char *who, char *buf, size_t n)
{
    snprintf(buf, n, "%s framebuffer use grew steadily by %.0f MiB in %.0f s to %.0f MiB (possible memory leak)",
             who, o->a[0], o->a[1], o->value);
}

static int ml_update(const struct rule_cfg *rc, void *stp, const struct det_ctx *cx, struct det_out *o)
{
    struct ml_st *st = stp;
    double fb;
    if (!ent_val(cx->e, rc->aux[0], &fb)) return cx->open ? DET_HOLD : DET_UNKNOWN;
    const struct win *w = ent_win(cx->e, rc->aux[0]);
    /* a new job phase: nothing held, or a quarter of it freed */
    double prev = st->last;
    st->last = (float)fb;
    if (fb <= rc->p[P_EMPTY_MIB] || fb < 0.75 * prev || st->phase_ts == 0) {
        st->phase_ts = cx->ts;
        creep_reset(&st->c);
        st->slow_hit = 0;
        if (cx->open) return DET_NORMAL;    /* the leaking job ended */
    }
    int64_t settle = (int64_t)(rc->p[P_SETTLE_S] * 1000);
    int settled = cx->ts - st->phase_ts >= settle;
    if (settled) {
        int64_t iv = (int64_t)(rc->p[P_INTERVAL_S] * 1000);
        double step = 3 * ent_interval_ms(cx->e, 1000);
        if (iv < step) iv = (int64_t)step;
        if (creep_add(&st->c, cx->ts, fb, 1, iv, 1)) {
            double g = 0;
            st->slow_hit = (uint8_t)ml_slow(rc, st, cx->open, &g);
        }
    }
    double growth = 0, sg = 0;
    unsigned first = 0;
    /* the fast look only over samples taken after the job settled */
    int fast = w && win_count(w) && win_time_at(w, 0) >= st->phase_ts + settle / 2 &&
               ml_fast(rc, w, cx->open, &growth, &first);
    int slow = st->slow_hit;
    if (slow && st->c.n) { sg = creep_last(&st->c) - st->c.v[0]; if (!fast) growth = sg; }
    o->value = fb; o->metric_slot = rc->aux[0];
    if (w && win_count(w)) { o->mean = win_mean(w); o->std = win_std(w); }
    double from = fast ? win_at(w, first) : st->c.n ? st->c.v[0] : fb;
    o->lo = from; o->hi = from + rc->p[P_MIN_GROWTH]; o->score = growth;
    if (!fast && !slow) {
        /* open: still above where the leak began (nothing freed) keeps it */
        if (cx->open && st->base > 0 && fb > st->base + 0.5 * rc->p[P_SLOW_GROWTH]) return DET_HOLD;
        return DET_NORMAL;
    }
    if (!cx->open) st->base = (float)from;
    o->excess = det_clamp01(growth / (8 * rc->p[P_MIN_GROWTH]));
    o->why = ml_why;
    o->a[0] = growth;
    o->a[1] = fast ? (double)(win_time_at(w, win_count(w) - 1) - win_time_at(w, first)) / 1000.0
                   : (double)(st->c.n - 1) * rc->p[P_INTERVAL_S];
    return DET_ANOMALY;
}

/* A state read back from a snapshot is usable: its ring is whole, its time
 * gl_time_ok. */
static int ml_check(const struct rule_cfg *rc, const void *stp)
{
    (void)rc;
    const struct ml_st *st = stp;
    return creep_ok(&st->c) && isfinite(st->base) && isfinite(st->last) && st->slow_hit <= 1 && gl_time_ok(st->phase_ts);
}

const struct det_ops det_mem_leak = {
    .name = "memory_leak", .scope = DS_GPU, .state_size = sizeof(struct ml_st), .params = params,
    .configure = ml_configure, .update = ml_update, .check = ml_check,
};
