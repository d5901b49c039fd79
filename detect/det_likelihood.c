/* det_likelihood.c - anomaly likelihood for any series: a robust Holt
 * predictor (level + trend) gives each sample a raw surprise, log(1 + |error|
 * / typical error); a short average of the surprise is compared with the
 * long-run distribution of the surprise on this series (running mean and
 * variance, Gaussian tail), in the manner of the anomaly likelihood of
 * streaming HTM detectors (Ahmad et al., Neurocomputing 2017). The tail
 * probability is the verdict: its calibration follows the series' own
 * noise, so a noisy series and a quiet one alarm equally rarely. Errors
 * that update the predictor are clipped at `clip` typical errors, so a spike
 * does not drag the level, while a level shift is learned within tens of
 * samples (one episode, not a flood); after an episode the rule stays quiet
 * for `quiet` samples. O(1) time and 88 bytes of state per series; no window. A slow average of
 * the signed error, judged the same way, reveals a drift that the predictor
 * follows too closely to leave a large error (`drift`). */
#include "detector.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

struct lk_st {
    double level, trend, scale;   /* predictor and typical absolute error */
    double mu, var;               /* long-run moments of the surprise */
    double shrt;                  /* short average of the surprise */
    double bias, bmu, bvar;       /* slow average of the signed error (z) and its long-run moments */
    uint32_t n, since;            /* samples seen; samples since the last anomalous verdict */
};

static const struct det_param params[] = {
    { "tail", 1e-3, "anomalous when the short-term surprise is this unlikely under the long-run one" },
    { "learn", 60, "samples before judging" },
    { "short", 4, "samples averaged into the short-term surprise" },
    { "long", 2000, "memory of the long-run surprise distribution (samples)" },
    { "alpha", 0.15, "level smoothing of the predictor" },
    { "beta", 0.01, "trend smoothing of the predictor" },
    { "clip", 4, "errors beyond this many typical errors update the predictor as this many" },
    { "quiet", 30, "samples after an anomalous verdict before a new episode may open" },
    { "direction", 0, "+1 only high, -1 only low, 0 both" },
    { "drift", 32, "samples averaged into the signed error that reveals a drift the predictor follows (0 = off)" },
    { NULL, 0, NULL },
};
/* the parameters above, by name (the same order) */
enum { P_TAIL, P_LEARN, P_SHORT, P_LONG, P_ALPHA, P_BETA, P_CLIP, P_QUIET, P_DIRECTION, P_DRIFT, P__COUNT };

static double clampd(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

/* The reason of an unlikely sample (s: metric; a: value, prediction,
 * typical error, likelihood). */
static void lk_why(const struct det_out *o, const char *who, char *buf, size_t n)
{
    const char *label, *unit;
    metric_label(o->s[0], &label, &unit);
    snprintf(buf, n, "%s: %s %.4g%s against an expected %.4g%s (typical error %.3g): behaviour this unusual has likelihood %.1e on this series",
             who, label, o->a[0], unit, o->a[1], unit, o->a[2], o->a[3]);
}

static int lk_update(const struct rule_cfg *rc, void *stp, const struct det_ctx *cx, struct det_out *o)
{
    struct lk_st *st = stp;
    double x = cx->v;
    if (st->n == 0) {
        st->level = x; st->trend = 0; st->scale = 0; st->mu = 0; st->var = 0; st->shrt = 0;
        st->bias = 0; st->bmu = 0; st->bvar = 0;
        st->n = 1; st->since = UINT32_MAX / 2;
        return DET_UNKNOWN;
    }
    double pred = st->level + st->trend, err = x - pred;
    if (!isfinite(err) || !isfinite(st->var) || !isfinite(st->bvar)) {
        /* values beyond double range (1e308 swings): start over, never a NaN state */
        memset(st, 0, sizeof *st);
        return DET_UNKNOWN;
    }
    double floor_sc = 1e-4 * fabs(st->level);   /* a constant series still has a scale */
    if (floor_sc < 1e-9) floor_sc = 1e-9;
    double sc = st->scale > floor_sc ? st->scale : floor_sc;
    double z = fabs(err) / sc;
    double s = log1p(z);
    /* the short average before the long-run moments learn this sample */
    double ws = 2.0 / (rc->p[P_SHORT] + 1);
    st->shrt = st->n <= 2 ? s : st->shrt + ws * (s - st->shrt);
    double sd = sqrt(st->var);
    if (sd < 0.05) sd = 0.05;
    /* the short average has the variance of the surprise over ~short samples */
    double sd_short = sd * sqrt(ws / (2 - ws));
    double zz = (st->shrt - st->mu) / sd_short;
    double tail = 0.5 * erfc(zz / M_SQRT2);
    /* drift: a slow average of the signed error strays from its long-run
     * mean (the predictor lags a ramp by a steady error) */
    double dev = err, zs = clampd(err / sc, -rc->p[P_CLIP], rc->p[P_CLIP]), wb = rc->p[P_DRIFT] > 0 ? 2.0 / (rc->p[P_DRIFT] + 1) : 0;
    if (wb > 0) {
        st->bias = st->n <= 2 ? zs : st->bias + wb * (zs - st->bias);
        double bsd = sqrt(st->bvar);
        if (bsd < 0.05) bsd = 0.05;
        double tb = erfc(fabs(st->bias - st->bmu) / bsd / M_SQRT2);
        if (tb < tail) { tail = tb; dev = st->bias - st->bmu; }
    }
    int ready = st->n > rc->p[P_LEARN];
    /* learn: predictor (clipped error), typical error, long-run moments */
    double c = rc->p[P_CLIP] * sc, ce = clampd(err, -c, c);
    if (st->n == 1) { st->scale = fabs(err); st->level = x; }
    else {
        st->level = pred + rc->p[P_ALPHA] * ce;
        st->trend += rc->p[P_ALPHA] * rc->p[P_BETA] * ce;
        double as = st->n < 30 ? 1.0 / st->n : 0.05;
        st->scale += as * (fabs(ce) - st->scale);
    }
    double wl = st->n < rc->p[P_LONG] ? 1.0 / st->n : 1.0 / rc->p[P_LONG];
    double d = s - st->mu;
    st->mu += wl * d;
    st->var = (1 - wl) * (st->var + wl * d * d);
    double db = st->bias - st->bmu;
    st->bmu += wl * db;
    st->bvar = (1 - wl) * (st->bvar + wl * db * db);
    if (st->n < UINT32_MAX) st->n++;
    if (st->since < UINT32_MAX / 2) st->since++;
    o->value = x; o->lo = pred - rc->p[P_CLIP] * sc; o->hi = pred + rc->p[P_CLIP] * sc;
    o->mean = pred; o->std = sc * 1.2533;
    o->score = tail > 1e-300 ? -log10(tail) : 300;
    if (!ready) return DET_UNKNOWN;
    int bad = tail < rc->p[P_TAIL] && det_direction_ok(dev, rc->p[P_DIRECTION]);
    if (!bad) return DET_NORMAL;
    if (!cx->open && st->since < rc->p[P_QUIET]) { st->since = 0; return DET_UNKNOWN; }
    st->since = 0;
    o->excess = det_clamp01((o->score + log10(rc->p[P_TAIL])) / 6);
    o->why = lk_why;
    o->s[0] = cx->slot >= 0 ? cx->slots->name[cx->slot] : rc->metric;
    o->a[0] = x; o->a[1] = pred; o->a[2] = sc; o->a[3] = tail;
    return DET_ANOMALY;
}

const struct det_ops det_likelihood = {
    .name = "likelihood", .scope = DS_SERIES, .no_window = 1, .state_size = sizeof(struct lk_st), .params = params,
    .update = lk_update,
};
