/*
 * lk_core.h - the anomaly-likelihood machinery of detect/det_likelihood.c,
 * shared with detect/det_seasonal.c: a robust Holt predictor (level +
 * trend) and the post-processing that turns a prediction error into a
 * calibrated tail probability (short average of the surprise judged under
 * its long-run distribution on the series, plus a slow average of the
 * signed error for drifts; Student-t while the distribution rests on few
 * samples; excursions that recur on schedule are normal; a run of errors
 * on one side that holds together is a level shift the level jumps to) and
 * a verdict with a quiet time that ends once the series is explained as
 * usual again. The plain
 * predictor always learns from its own error; the error that is judged may
 * come from another predictor (a seasonal one), so one series keeps one
 * surprise distribution whichever predictor judges it.
 */
#ifndef GPULOG_LK_CORE_H
#define GPULOG_LK_CORE_H

#include "detector.h"

/* Peaks of a deviate over its Gaussian 1 % point (det_likelihood.c,
 * lk_pot): their rate, the mean and variance of their excess, their count. */
struct lk_peaks { float rate, mean, var, n; };

/* Raw scores the confirming view averages (det_likelihood.c lk_confirm: the paper's 10). */
#define LK_CF_AVG 10

/* State of the plain predictor and of the surprise distribution (264 bytes). */
struct lk_st {
    double level, trend, scale;   /* predictor and typical absolute error */
    double mu, var;               /* long-run moments of the surprise */
    double shrt;                  /* short average of the surprise */
    double vsh;                   /* long-run variance of the short average about mu (judged with on fast series) */
    double bias, bmu, bvar;       /* slow average of the signed error (z) and its long-run moments */
    double rmean;                 /* mean of the values of the current run of errors beyond half the clip on one side */
    double lold;                  /* the level before the last change point (lk_revert) */
    uint32_t n, since;            /* samples seen; samples since the last anomalous verdict */
    uint32_t nm;                  /* samples the surprise moments learnt (not those of a constant start) */
    uint32_t edge;                /* sample (n) at which the last notable excursion of the surprise began */
    float per, peak, exmax;       /* recurring excursions: their period (samples), typical peak score, this one's peak */
    float rsc, rm2;               /* the typical error before that run began; the run's sum of squared deviations from its mean */
    float res;                    /* the data's resolution (1: integers, 0.1: one decimal, ...; 0: finer than 1e-6 or none) */
    float ssg, sab;               /* short averages (as shrt) of the signed error and of its size, in typical errors clipped at `clip` */
    struct lk_peaks ps, pd;       /* peaks of the short surprise's deviate and of the drift's */
    float xr, xm, xpk;            /* excursions beyond `tail` (lk_calibrate): their rate per sample, the mean excess of their peak score over -log10(tail), this one's peak score */
    uint8_t reg, exc;             /* excursions on schedule in a row; 1 while in one on schedule, 2 off it */
    uint8_t jit;                  /* their timing's typical distance from a whole number of periods (1/256 of a period) */
    uint8_t back;                 /* samples left in which that change point may be taken back */
    uint8_t calm;                 /* samples in a row after the last anomalous verdict with the short surprise within a deviation of its long-run mean */
    uint8_t rn;                   /* length of that run */
    int8_t rsign;                 /* its side: +1 above, -1 below, 0 none */
    uint16_t xgap;                /* samples since the last one beyond `tail` (saturates) */
    struct lk_cf {                /* the confirming view (lk_confirm): */
        double prev;              /* the last value */
        float mae;                /* mean absolute change between samples */
        float mu, var;            /* long-run moments of the averaged raw score */
        float ptail, px, ppred, psc; /* a pending verdict: its tail, value, prediction, typical error */
        uint32_t nerr, nm;        /* changes seen; averages learnt */
        uint16_t seen;            /* samples since the view last found a sample unlikely (saturates) */
        uint8_t raw[LK_CF_AVG];   /* the last LK_CF_AVG raw scores (1/255) */
        uint8_t pend, pkind;      /* samples a verdict waits for confirmation; its kind */
    } cf;
};

/* The likelihood parameters, first in every detector that uses lk_core
 * (their indices are the enum below). */
#define LK_PARAMS \
    { "tail", 3e-4, 0, 1, DP_LO_OPEN | DP_HI_OPEN, "anomalous when the short-term surprise is this unlikely under the long-run one" }, \
    { "learn", 30, 1, 1e9, DP_WHOLE, "samples before judging (and at least learn/2 of a moving series; early verdicts are Student-t calibrated)" }, \
    { "short", 4, 1, 1e6, 0, "samples averaged into the short-term surprise" }, \
    { "long", 2000, 1, 1e9, 0, "memory of the long-run surprise distribution (samples)" }, \
    { "alpha", 0.15, 0, 1, DP_LO_OPEN, "level smoothing of the predictor" }, \
    { "beta", 0.01, 0, 1, 0, "trend smoothing of the predictor" }, \
    { "clip", 4, 0, 1e3, DP_LO_OPEN, "errors beyond this many typical errors update the predictor as this many" }, \
    { "quiet", 30, 0, 1e9, 0, "samples after an anomalous verdict before a new episode may open (fewer once the series is explained as usual for `short` samples)" }, \
    { "direction", 0, -1, 1, DP_WHOLE, "+1 only high, -1 only low, 0 both" }, \
    { "drift", 32, 0, 1e9, 0, "samples averaged into the signed error that reveals a drift the predictor follows (0 = off)" }, \
    { "peaks", 100, 0, DET_PARAM_MAX, 0, "peaks of the deviate over its 1 % point before their own tail (generalised Pareto) may make verdicts rarer on a heavy-tailed series; also their memory (0 = off)" }, \
    { "tail_s", 5, 0, 1e9, 0, "`tail` is per sample for series sampled this many seconds apart or slower; a faster one is judged with tail x interval / tail_s, so its alarms per hour do not grow with the sampling rate (0 = off)" }, \
    { "cal", 10, 0, 1e9, 0, "weight, in excursions, of what `tail` promises against the series' own excursions beyond it (their rate and how far they reach over `long` samples), which make verdicts rarer on a series that does not keep that promise (0 = off)" }, \
    { "confirm", 0, 0, 250, DP_WHOLE, "a verdict opens an episode only when a second, independent view (the anomaly likelihood of the change between samples, Ahmad et al. 2017) finds a sample unlikely within this many samples before it or after it, or when it is 10^4 times rarer than `tail` (0 = off; the generic profile: 20)" }, \
    { "confirm_tail", 3e-2, 0, 1, DP_LO_OPEN | DP_HI_OPEN, "the confirming view finds a sample unlikely when the average change score of the last 10 samples is this unlikely under its long-run distribution" }, \
    { "point", 0, 0, 1e6, 0, "a lone sample beyond its expected range is judged on its own error as well: unlikely when the two-sided tail of that error (in deviations: typical errors / 1.2533; Student-t, 39 degrees of freedom) times this is below `tail`, however short the spike (0 = off; the generic profile: 10)" }
enum { LK_TAIL, LK_LEARN, LK_SHORT, LK_LONG, LK_ALPHA, LK_BETA, LK_CLIP, LK_QUIET, LK_DIRECTION, LK_DRIFT, LK_PEAKS, LK_TAIL_S, LK_CAL, LK_CONFIRM, LK_CONFIRM_TAIL, LK_POINT, LK__COUNT };

/* A prediction of one sample: value, prediction, error, typical error, and
 * the error whose slow average reveals a drift (derr: the error itself for
 * the plain predictor; a seasonal model's error against its slow level,
 * which does not follow a fault within hours as the prediction does). */
struct lk_err { double x, pred, err, sc, derr; };

/* Starts st on a series' first sample (1: no verdict on it; 0: st was
 * already started). */
int lk_start(struct lk_st *st, double x);
/* The plain predictor's prediction of x into k; 0 when the state or the
 * error is not finite (the caller starts over: never a NaN state). */
int lk_predict(const struct lk_st *st, double x, struct lk_err *k);
/* Takes the last change point back when x (in k, the plain predictor's
 * view of it, amended) lies nearer the level from before it (st and k are
 * the caller's). */
void lk_revert(struct lk_st *st, struct lk_err *k);
/* A typical error that is never 0: scale, or a tiny fraction of level. */
double lk_scale_floor(double scale, double level);
/* What was unusual in words ("a jump above its expected range", "a drift
 * downwards", "a new noise level"; a static string) from lk_step's o. */
const char *lk_what(const struct det_out *o);
/* The reason of an unlikely sample against a prediction (the why() of
 * lk_step's verdicts: o->s[0] metric; a: value, prediction, typical error,
 * likelihood). */
void lk_why(const struct det_out *o, const char *who, char *buf, size_t n);
/* One sample through the machinery: judges error j (the plain predictor's
 * or another's), lets the plain predictor learn from its own error k, and
 * fills o (why: the reason when anomalous). Returns the verdict. */
int lk_step(const struct rule_cfg *rc, struct lk_st *st, const struct det_ctx *cx, const struct lk_err *k,
            const struct lk_err *j, struct det_out *o, det_why_fn why);

#endif
