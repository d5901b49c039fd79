/* det_seasonal.c - the likelihood detector (lk_core.h) with long memory:
 * a daily and a weekly cycle learned per series. Each cycle is a
 * Holt-Winters-like model: a fast level (smoothing `s_alpha` per hour, what
 * it predicts from), a slow level (a day's memory) and an additive profile
 * of one knot per hour of the cycle (24 for the day, 168 for the week, UTC),
 * linearly interpolated between knots; a sample teaches its nearest knot
 * its deviation from the slow level (the first period as an average, then
 * by `gamma` per period). The typical error per hour of the day is learned
 * beside it. From its second period on, each cycle compares the spread of
 * the residual around its slow level with and without its profile; from
 * the end of its second period, when the series is sampled at least every
 * 2 hours and the residual spread with the profile is below `gain` times
 * the spread without (the series is seasonal), that cycle's prediction is
 * the one judged (the weekly one only when clearly better than the daily
 * one); otherwise the plain predictor's, as in `likelihood`. The judged
 * error goes through the same likelihood machinery (one surprise
 * distribution per series, one episode per incident). While an episode is
 * open nothing but the levels learns, and it ends only when the residual is
 * back within `clear_k` typical errors of this hour (and, for a day, the
 * value back on its profile around the slow level): until then the verdict
 * is DET_HOLD. O(1) per sample; 1168 bytes of state per series
 * (docs/detectors.md, "Seasonality"). */
#include "lk_core.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define SEAS_KNOT_MS 3600000LL                  /* one knot per hour */
#define SEAS_DAY_N 24
#define SEAS_WEEK_N 168

/* One cycle's model (the profile lives in the state's tables). */
struct seas_cyc {
    double level, slow;      /* deseasonalised levels: fast (predicts), over about a day (the profile learns against it) */
    float scale;             /* typical absolute error of level + profile (short) */
    float e_with, e_without; /* long averages of |residual| with and without the profile */
    float sum;               /* sum of the profile's knots (its mean is moved into the level) */
    uint32_t m;              /* samples compared */
};

struct seas_st {
    struct lk_st lk;         /* plain predictor and the surprise distribution */
    int64_t t0;              /* first sample time */
    int64_t open_ts;         /* when the open episode's first anomalous verdict came */
    struct seas_cyc cyc[2];  /* daily, weekly */
    int8_t active;           /* cycle judged: -1 none, 0 daily, 1 weekly */
    uint8_t stale;           /* a value beyond the floats' range came: start over on the next one */
    uint8_t pad[2];
    float day[SEAS_DAY_N];   /* expected offset from the level per hour of the day */
    float week[SEAS_WEEK_N]; /* ... per hour of the week */
    float sday[SEAS_DAY_N];  /* typical absolute residual per hour of the day (the day's; also the week's) */
};

static const struct det_param params[] = {
    LK_PARAMS,
    { "gamma", 0.1, 0, 1, DP_LO_OPEN, "share of its error a knot of the daily/weekly profile learns per period" },
    { "s_alpha", 0.3, 0, 1, DP_LO_OPEN, "level smoothing of the seasonal model per hour" },
    { "gain", 0.5, 0, 1, DP_LO_OPEN, "a cycle is used when the residual spread with it is below this many times the spread without" },
    { "clear_k", 3, 0, 1e6, DP_LO_OPEN, "an episode on the seasonal prediction ends only with the residual within this many typical errors" },
    { "season", 1, 0, 1, DP_WHOLE, "1 = learn the daily and weekly cycles, 0 = the plain likelihood detector" },
    { NULL, 0, 0, 0, 0, NULL },
};
enum { P_GAMMA = LK__COUNT, P_S_ALPHA, P_GAIN, P_CLEAR_K, P_SEASON, P__COUNT };

static const int64_t cyc_ms[2] = { 86400000LL, 604800000LL };
static const int cyc_n[2] = { SEAS_DAY_N, SEAS_WEEK_N };

/* The profile table of cycle c in st (owned by st). */
static float *seas_tab(struct seas_st *st, int c) { return c ? st->week : st->day; }

/* Knot index and weight of the next knot for time ts in cycle c. */
static void seas_phase(int c, int64_t ts, int *b0, double *f)
{
    int64_t ph = ts % cyc_ms[c];
    if (ph < 0) ph += cyc_ms[c];
    *b0 = (int)(ph / SEAS_KNOT_MS);
    *f = (double)(ph % SEAS_KNOT_MS) / (double)SEAS_KNOT_MS;
}

/* The reason of an unlikely sample against the seasonal expectation
 * (s: metric, cycle; a: value, expected, typical error, likelihood). */
static void seas_why(const struct det_out *o, const char *who, char *buf, size_t n)
{
    const char *label, *unit;
    metric_label(o->s[0], &label, &unit);
    snprintf(buf, n, "%s: %s at this time of the %s on %s: %.4g%s, expected %.4g%s (range %.4g to %.4g, typical error %.3g): behaviour this unusual has likelihood %.1e on this series",
             who, lk_what(o), o->s[1], label, o->a[0], unit, o->a[1], unit, o->lo, o->hi, o->a[2], o->a[3]);
}

/* Predicts x with cycle c of st at ts into j, learns from it, and updates
 * the with/without comparison (iv: the sampling interval in ms; rate: the
 * interval in hours and the fast and slow levels' smoothing). Each
 * model has a fast level (what it predicts from) and a slow one (a day's
 * memory, what its profile learns against: a profile learned against a
 * level that follows the cycle would learn only a part of it). *off: x off
 * the profile around the slow level (an open episode's clear level). */
static void seas_cycle(const double *p, struct seas_st *st, int c, int64_t ts, double x, double iv, int open,
                       const double *rate, struct lk_err *j, double *off)
{
    struct seas_cyc *y = &st->cyc[c];
    float *tab = seas_tab(st, c), *spr = st->sday;
    int n = cyc_n[c], b0, b1;
    double f;
    seas_phase(c, ts, &b0, &f);
    b1 = b0 + 1 < n ? b0 + 1 : 0;
    double mean = y->sum / n;
    double own = (1 - f) * tab[b0] + f * tab[b1] - mean;
    double season = own;
    j->x = x; j->pred = y->level + season; j->err = x - j->pred;
    /* the typical error at this hour of the day (noise often grows with the
     * daily peak; a knot of the week sees 7 times fewer samples: too few to
     * learn a spread) */
    double sp = (1 - f) * spr[b0 % SEAS_DAY_N] + f * spr[b1 % SEAS_DAY_N];
    /* the week's own recent typical error when larger: its knots rest on a
     * sample a week each, their own noise adds to the hour's */
    double fl = (c == 0 ? 0.2 : 1) * y->scale;
    j->sc = lk_scale_floor(sp > fl ? sp : fl, y->level);
    /* errors that teach are clipped (a spike does not bend the profile) at
     * clip typical errors: the hour's spread or, while it is still
     * learning, the model's short-run one */
    double c_lim = p[LK_CLIP] * (j->sc > y->scale ? j->sc : y->scale);
    double ce = j->err < -c_lim ? -c_lim : j->err > c_lim ? c_lim : j->err;
    double se = x - y->slow - season;
    *off = j->derr = se;
    /* the profile's error against the slow level at the knot nearest ts */
    int64_t age = ts - st->t0, ph = ts % cyc_ms[c];
    if (ph < 0) ph += cyc_ms[c];
    int bn = (int)((ph + SEAS_KNOT_MS / 2) / SEAS_KNOT_MS) % n;
    double de = x - y->slow - (tab[bn] - mean);
    if (age >= cyc_ms[c])   /* the first period averages what it sees */
        de = de < -c_lim ? -c_lim : de > c_lim ? c_lim : de;
    if (age >= cyc_ms[c] && !open) {   /* the profile had a period to learn: compare (normal behaviour) */
        /* over about a week for both cycles: the day's profile misses the
         * weekend, which a day's memory would forget by Wednesday */
        double wm = y->m < 1 ? 1 : 1.0 / y->m, spp = (double)cyc_ms[1] / iv;
        if (spp < 168) spp = 168;
        if (spp > 20000) spp = 20000;
        if (wm < 1 / spp) wm = 1 / spp;
        y->e_with += (float)(wm * (fabs(se) - y->e_with));
        y->e_without += (float)(wm * (fabs(x - y->slow) - y->e_without));
        if (y->m < UINT32_MAX) y->m++;
    }
    /* learn: levels (per hour, so they forget in the same time at any
     * interval: the fast one s_alpha, the slow one a day), typical error,
     * the nearest knot and its spread */
    double h = rate[0];
    /* a sample the slow level and the profile explain while the fast level
     * is off by more than the clip (back from a shift): the fast level is
     * back at once */
    if (fabs(se) <= c_lim && fabs(j->err) > c_lim) y->level = y->slow;
    else y->level += rate[1] * ce;
    y->slow += rate[2] * (se < -c_lim ? -c_lim : se > c_lim ? c_lim : se);
    if (!open)   /* typical errors are of normal behaviour: an open episode's clear level stays */
        y->scale += (float)((y->m < 30 && age < cyc_ms[c] ? 0.2 : 0.05) * (fabs(ce) - y->scale));
    /* the j-th sample of this visit to the knot: the first period averages
     * the visit; later ones move the knot by gamma of it per period */
    double jv = floor((double)((ph + SEAS_KNOT_MS / 2) % SEAS_KNOT_MS) / iv);
    double k = (double)(age / cyc_ms[c] + 1);
    double g = k < 2 ? 1 / (jv + 1) : (p[P_GAMMA] > 1 / k ? p[P_GAMMA] : 1 / k) * h;
    tab[bn] += (float)(g * de);
    y->sum += (float)(g * de);
    if (c == 0 && !open && k >= 2) {
        /* the spread learns normal behaviour only, from the second day on
         * (the first day's errors are the profile's own learning) */
        double gs = k < 3 ? 1 / (jv + 1) : (p[P_GAMMA] > 1 / (k - 1) ? p[P_GAMMA] : 1 / (k - 1)) * h;
        spr[bn] += (float)(gs * (fabs(ce) - spr[bn]));
    }
}

/* Picks the cycle to judge by (st's; -1: none) from the comparisons. */
static int seas_pick(const double *p, const struct seas_st *st, int64_t ts, double iv)
{
    double best = 2;
    int pick = -1;
    for (int c = 0; c < 2; c++) {
        const struct seas_cyc *y = &st->cyc[c];
        if (ts - st->t0 < 2 * cyc_ms[c] || iv > 2 * SEAS_KNOT_MS || !(y->e_without > 0)) continue;
        double r = y->e_with / y->e_without;
        /* hysteresis: the cycle in use stays while clearly better than none */
        double on = st->active == c ? p[P_GAIN] + 0.15 : p[P_GAIN];
        if (c == 1 && pick == 0) r /= 0.75;   /* the week has 7 times the knots: only when clearly better (its spread at most 3/4 of the day's) */
        if (r < on && r < best) { best = r; pick = c; }
    }
    return pick;
}

/* Starts the seasonal part of st (not its likelihood state) over at ts from
 * x; a value beyond the floats' range leaves it stale until the next one. */
static void seas_restart(struct seas_st *st, int64_t ts, double x)
{
    memset((char *)st + sizeof st->lk, 0, sizeof *st - sizeof st->lk);
    st->t0 = ts; st->active = -1;
    st->stale = !(fabs(x) < 1e30);
    for (int c = 0; c < 2; c++) st->cyc[c].level = st->cyc[c].slow = st->stale ? 0 : x;
}

static void seas_init(const struct rule_cfg *rc, void *stp)
{
    struct seas_st *st = stp;
    st->active = -1;
}

static int seas_update(const struct rule_cfg *rc, void *stp, const struct det_ctx *cx, struct det_out *o)
{
    struct seas_st *st = stp;
    const double *p = rc->p;
    double x = cx->v;
    struct lk_err k, jc[2];
    double off[2] = { 0, 0 };
    if (lk_start(&st->lk, x)) {
        seas_restart(st, cx->ts, x);
        return DET_UNKNOWN;
    }
    if (!lk_predict(&st->lk, x, &k) || !isfinite(st->cyc[0].level + st->cyc[0].slow + st->cyc[1].level + st->cyc[1].slow)) {
        memset(st, 0, sizeof *st);
        st->active = -1;
        return DET_UNKNOWN;
    }
    lk_revert(&st->lk, &k);
    double iv = cx->e ? ent_interval_ms(cx->e, 0) : 0;
    const struct lk_err *j = &k;
    /* the profiles are floats: a series beyond their range is judged
     * plainly, and its cycles start over when it is back */
    if (!(fabs(x) < 1e30)) st->stale = 1;
    else if (st->stale) seas_restart(st, cx->ts, x);
    if (p[P_SEASON] > 0 && iv > 0 && cx->ts > st->t0 && !st->stale) {
        /* the interval in hours and the levels' smoothing per sample: per
         * hour, so they forget in the same time at any interval */
        double h = iv < SEAS_KNOT_MS ? iv / SEAS_KNOT_MS : 1;
        double rate[3] = { h, 1 - pow(1 - p[P_S_ALPHA], h), 1 - pow(1 - 1.0 / 24, h) };
        for (int c = 0; c < 2; c++) seas_cycle(p, st, c, cx->ts, x, iv, cx->open, rate, &jc[c], &off[c]);
        st->active = (int8_t)seas_pick(p, st, cx->ts, iv);
        if (st->active >= 0) j = &jc[st->active];
    }
    int v = lk_step(rc, &st->lk, cx, &k, j, o, j == &k ? lk_why : seas_why);
    if (v == DET_ANOMALY) {
        o->s[1] = st->active == 1 ? "week" : "day";
        if (!cx->open) st->open_ts = cx->ts;
    } else if (cx->open && st->active >= 0 &&
               (fabs(j->err) > p[P_CLEAR_K] * j->sc ||
                (cx->ts - st->open_ts < cyc_ms[0] && fabs(off[st->active]) > p[P_CLEAR_K] * j->sc))) {
        /* not back within clear_k typical errors of this hour (learned from
         * normal behaviour only: they do not grow with the fault) of the
         * prediction, nor, for a day after the episode began, of the profile
         * around the slow level (the fast level follows a fault that
         * lingers; after a day a level that stays is the new normal): not
         * resolved */
        return DET_HOLD;
    }
    return v;
}

/* A state read back from a snapshot is usable when its cycle index, flag
 * and times are (the rest are numbers the update copes with). */
static int seas_check(const struct rule_cfg *rc, const void *stp)
{
    const struct seas_st *st = stp;
    return st->active >= -1 && st->active <= 1 && st->stale <= 1 && gl_time_ok(st->t0) && gl_time_ok(st->open_ts);
}

const struct det_ops det_seasonal = {
    .name = "seasonal", .scope = DS_SERIES, .no_window = 1, .state_size = sizeof(struct seas_st), .params = params,
    .init = seas_init, .update = seas_update, .check = seas_check,
};
