/* det_likelihood.c - anomaly likelihood for any series: a robust Holt
 * predictor (level + trend) gives each sample a raw surprise, log(1 + |error|
 * / typical error); a short average of the surprise is compared with the
 * long-run distribution of the surprise on this series (running mean and
 * variance, Gaussian tail), in the manner of the anomaly likelihood of
 * streaming HTM detectors (Ahmad et al., Neurocomputing 2017). The tail
 * probability is the verdict: its calibration follows the series' own
 * noise, so a noisy series and a quiet one alarm equally rarely. Errors
 * that update the predictor are clipped at `clip` typical errors, so a spike
 * does not drag the level, while a level shift (a run of `short` errors
 * beyond 2 typical errors on one side that holds together) moves the level
 * at once (lk_shift: one episode, not a flood); after an episode the rule
 * stays quiet for `quiet` samples, or until the series was explained as
 * usual for `short` samples (the incident is over). The warm-up counts from the series' first movement,
 * a distribution learnt from few samples is read as Student's t, and
 * excursions that recur on schedule (heartbeats) are normal (lk_recurring);
 * on a series whose excursions beyond `tail` come more often or reach
 * further than it promises, its own excursions set the tail
 * (lk_calibrate). O(1) time and 200 bytes of state per series; no window. A slow average of
 * the signed error, judged the same way, reveals a drift that the predictor
 * follows too closely to leave a large error (`drift`). The machinery is
 * lk_core.h's, shared with the seasonal detector (det_seasonal.c). */
#include "lk_core.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const struct det_param params[] = { LK_PARAMS, { NULL, 0, 0, 0, 0, NULL } };

/* The typical error of data rounded to a resolution r is at least r/4:
 * the mean absolute value of the rounding error, uniform on +-r/2. */
#define LK_RES_F 0.25

/* Peaks over a threshold: the deviate's 1 % point under the Gaussian
 * (the excursions beyond it are the peaks whose tail is fitted), and the
 * excess a peak teaches at most (winsorised, as errors and surprises are:
 * one incident's peaks would otherwise make the tail heavy and hide the
 * next incident). */
/* A new series' timing jitter (lk_recurring: not keeping time), in
 * 1/256 of a period */
#define LK_REC_JIT0_Q 38
#define LK_POT_Z0 2.326
/* A series sampled faster than this (seconds) is oversampled (lk_step) */
#define LK_FAST_S 1.0
/* Errors lie to one side when their short average is at least this share
 * of their short average size (lk_step) */
#define LK_ONE_SIDED 0.7
/* ... and at least this many typical errors from the prediction */
#define LK_SHIFT_Z 2.5
#define LK_POT_CAP 1.5
/* A shift (samples within their range, to one side) opens an episode only
 * this many times rarer than `tail` (lk_step) */
#define LK_SHIFT_TAIL 0.1
/* Calibration at the alarm level (lk_calibrate): the mean excess of an
 * excursion's peak score over -log10(tail) that `tail` promises (1 / ln 10
 * decades) */
#define LK_CAL_E 0.4343
/* The weight of the typical error's moving average once warm (lk_learn),
 * and its own sample size, (2 - w) / w + 1 samples, for lk_tail (lk_step's
 * lone sample) */
#define LK_SC_W 0.05
#define LK_SC_DOF ((2 - LK_SC_W) / LK_SC_W + 1)

/* lk_core.h: what was unusual, in words (o's a[4]: 0 the sample far off
 * its expected range, 1 a drift of the recent errors to one side, 2
 * samples within the range that move more than usual, 3 samples within
 * the range that lie to one side: a[5] their side). */
const char *lk_what(const struct det_out *o)
{
    int up = o->a[0] >= o->a[1];
    if (o->a[4] == 1) return up ? "a drift upwards" : "a drift downwards";
    if (o->a[4] == 2) return "a new noise level";
    if (o->a[4] == 3) return o->a[5] > 0 ? "a shift upwards" : "a shift downwards";
    return up ? "a jump above its expected range" : "a drop below its expected range";
}

/* lk_core.h: the reason of an unlikely sample (s: metric; a: value,
 * prediction, typical error, likelihood, kind (lk_what)). */
void lk_why(const struct det_out *o, const char *who, char *buf, size_t n)
{
    const char *label, *unit;
    metric_label(o->s[0], &label, &unit);
    snprintf(buf, n, "%s: %s on %s: %.4g%s, expected %.4g%s (range %.4g to %.4g, typical error %.3g): behaviour this unusual has likelihood %.1e on this series",
             who, lk_what(o), label, o->a[0], unit, o->a[1], unit, o->lo, o->hi, o->a[2], o->a[3]);
}

/* The resolution of x at most `from` (1, 0.1, ... 1e-6: a resolution
 * already seen): the largest of from, from/10, ... 1e-6 that x is a whole
 * multiple of; 0 when none is. Starting from the series' resolution, an
 * integer series costs one test a sample, not one per coarser power. */
static double lk_resolution(double x, double from)
{
    for (double m = nearbyint(1 / from); m <= 1e6; m *= 10) {
        double y = x * m;
        if (fabs(y - nearbyint(y)) <= 1e-9 * (fabs(y) > 1 ? fabs(y) : 1)) return 1 / m;
    }
    return 0;
}

/* lk_core.h: the caller's state, started on its first sample. */
int lk_start(struct lk_st *st, double x)
{
    if (st->n) return 0;
    st->level = x; st->trend = 0; st->scale = 0; st->mu = 0; st->var = 0; st->shrt = 0; st->vsh = 0;
    st->bias = 0; st->bmu = 0; st->bvar = 0; st->nm = 0; st->edge = 0;
    st->rmean = 0; st->lold = 0; st->back = 0; st->rsc = 0; st->rm2 = 0; st->rn = 0; st->rsign = 0; st->res = (float)lk_resolution(x, 1);
    st->per = 0; st->peak = 0; st->exmax = 0; st->reg = 0; st->exc = 0; st->calm = 0; st->jit = LK_REC_JIT0_Q; st->ssg = 0; st->sab = 0; st->xr = 0; st->xm = 0; st->xpk = 0; st->xgap = UINT16_MAX;
    memset(&st->ps, 0, sizeof st->ps); memset(&st->pd, 0, sizeof st->pd);
    memset(&st->cf, 0, sizeof st->cf); st->cf.prev = x; st->cf.seen = UINT16_MAX;
    st->n = 1; st->since = UINT32_MAX / 2;
    return 1;
}

/* lk_core.h: a typical error that a constant series still has. */
double lk_scale_floor(double scale, double level)
{
    double floor_sc = 1e-4 * fabs(level);
    if (floor_sc < 1e-9) floor_sc = 1e-9;
    return scale > floor_sc ? scale : floor_sc;
}

/* The weight of a sample in the long-run statistics after nm samples
 * learnt: their plain average up to `long` samples, then a moving one. */
static double lk_wlong(const double *p, uint32_t nm)
{
    return nm > 0 && nm < p[LK_LONG] ? 1.0 / nm : 1.0 / p[LK_LONG];
}

/* The confirming view (parameter `confirm`): the anomaly likelihood of
 * Ahmad, Lavin, Purdy and Agha (Neurocomputing 262, 2017) over the simplest
 * predictor, the last value. Each sample's raw score is the change from the
 * last value against the mean absolute change, (|dx| / mean - 2) / 4
 * clipped to [0, 1] (bounded: one incident does not make the next look
 * usual); its average over the last LK_CF_AVG samples is judged, one-sided,
 * under the long-run mean and variance of those averages (floored as the
 * paper floors them, memory `long`). It errs where the likelihood core does
 * not: it is blind to drifts and to a series' shape (a daily peak is a
 * change like any other), and a surprise of the Holt predictor that no
 * unusual change backs (a slow excursion, a heavy-tailed series' routine
 * burst) is no surprise to it. A verdict both find within `confirm`
 * samples was, on the tune sets, an incident far more often than one the
 * core found alone. */
#define LK_CF_SKIP 288        /* changes before the averages are learnt (the paper's learning period: the mean change settles) */
#define LK_CF_MIN 100         /* averages learnt before the view judges; until then it abstains */
#define LK_CF_MU_MIN 0.03     /* floors of the averages' mean and variance (the paper's) */
#define LK_CF_VAR_MIN 0.0003
#define LK_CF_ALONE 1e-4      /* a verdict this many times rarer than `tail` needs no confirmation */

/* Whether a confirming view read back from a snapshot is usable. */
static int lk_cf_ok(const struct lk_cf *c)
{
    return isfinite(c->prev) && c->mae >= 0 && isfinite(c->mae) && c->mu >= 0 && c->mu <= 1 && c->var >= 0 && c->var <= 1 &&
           c->ptail >= 0 && c->ptail <= 1 && isfinite(c->px) && isfinite(c->ppred) && isfinite(c->psc) && c->pend <= 250 && c->pkind <= 3;
}

/* Takes sample x into the confirming view c (the caller's): 1 when it finds
 * x unlikely, 0 when not, -1 while it abstains (too young). */
static int lk_confirm(const double *p, struct lk_cf *c, double x)
{
    double e = fabs(x - c->prev), r = 0;
    c->prev = x;
    if (!isfinite(e)) e = 0;
    if (c->nerr > 0 && e > 2 * c->mae) r = c->mae > 0 ? (e / c->mae - 2) / 4 : 1;
    if (r > 1) r = 1;
    if (c->nerr < UINT32_MAX) c->nerr++;
    c->mae += (float)((e - c->mae) / (c->nerr < 1000 ? c->nerr : 1000));
    c->raw[(c->nerr - 1) % LK_CF_AVG] = (uint8_t)(r * 255 + 0.5);
    if (c->nerr < LK_CF_SKIP) return -1;
    unsigned sum = 0;
    for (int i = 0; i < LK_CF_AVG; i++) sum += c->raw[i];
    double avg = sum * (1.0 / (255.0 * LK_CF_AVG));
    int v = -1;
    if (c->nm >= LK_CF_MIN) {
        double mu = c->mu > LK_CF_MU_MIN ? c->mu : LK_CF_MU_MIN, var = c->var > LK_CF_VAR_MIN ? c->var : LK_CF_VAR_MIN;
        double d0 = avg - mu;
        /* the Gaussian tail only beyond 1.5 deviations (no root otherwise) */
        v = d0 > 0 && d0 * d0 > 2.25 * var && 0.5 * erfc(d0 / sqrt(2 * var)) < p[LK_CONFIRM_TAIL];
    }
    if (c->nm < UINT32_MAX) c->nm++;
    double w = lk_wlong(p, c->nm), d = avg - c->mu;
    c->mu += (float)(w * d);
    c->var = (float)((1 - w) * (c->var + w * d * d));
    return v;
}

/* Whether peaks pk (the caller's, read only) read back from a snapshot
 * are usable: a rate in [0, 1], the rest not negative, nothing NaN. */
static int lk_peaks_ok(const struct lk_peaks *pk)
{
    return pk->rate >= 0 && pk->rate <= 1 && pk->mean >= 0 && pk->var >= 0 && pk->n >= 0;
}

/* lk_core.h: the plain predictor's view of x (st is the caller's). */
int lk_predict(const struct lk_st *st, double x, struct lk_err *k)
{
    k->x = x;
    k->pred = st->level + st->trend;
    k->err = x - k->pred;
    /* values beyond double range (1e308 swings): the caller starts over */
    if (!isfinite(k->err) || !isfinite(st->var) || !isfinite(st->bvar) || !isfinite(st->vsh) || !isfinite(st->lold)) return 0;
    /* a resolution or peaks read back from a snapshot out of range: start over */
    if (!(st->res >= 0 && st->res <= 1)) return 0;
    if (!lk_peaks_ok(&st->ps) || !lk_peaks_ok(&st->pd)) return 0;
    if (!(st->xr >= 0 && st->xr <= 1 && st->xm >= 0 && st->xm <= 300)) return 0;
    if (!lk_cf_ok(&st->cf)) return 0;
    k->sc = lk_scale_floor(st->scale, st->level);
    if (k->sc < LK_RES_F * st->res) k->sc = LK_RES_F * st->res;
    k->derr = k->err;
    return 1;
}

/* lk_core.h: a change point taken back (st and k are the caller's). On a
 * series sampled faster than a second, for 4 x `short` samples after the
 * level jumped (lk_shift), a sample nearer the level from before the jump
 * than the new one says the run was no new level but a swing of the noise
 * (oversampled noise, as a power reading's at 4 Hz, runs to one side for a
 * few samples): the level goes back, and the sample is judged against it.
 * Before, the rebound from such a swing was judged against the swing's
 * level: a surprise of its own making (a GPU's whole-watt power at 4 Hz:
 * 5 extra episodes in an hour's job). */
void lk_revert(struct lk_st *st, struct lk_err *k)
{
    if (!st->back) return;
    st->back--;
    double e0 = k->x - st->lold;
    if (fabs(e0) < fabs(k->err)) {
        st->level = st->lold; st->trend = 0; st->back = 0;
        k->pred = st->lold; k->err = e0; k->derr = e0;
    }
}

/* The Gaussian tail beyond zz of a statistic whose spread was estimated
 * from m samples: zz is read as Student's t with m - 1 degrees of freedom
 * and mapped to the normal deviate of the same tail (the approximation
 * z = t (1 - 1/4v) / sqrt(1 + t^2/2v)), so a distribution learnt from a
 * few samples is not trusted as if it were known. */
static double lk_tail(double zz, double m)
{
    if (m < 1e6 && zz > 0) {
        double v = m > 3 ? m - 1 : 2;
        zz = zz * (1 - 1 / (4 * v)) / sqrt(1 + zz * zz / (2 * v));
    }
    return 0.5 * erfc(zz / M_SQRT2);
}

/* The tail of deviate zz given its Gaussian reading `tail` and its peaks
 * pk (the caller's, read only).
 * Heavy tails: the Gaussian reading of a deviate zz is calibrated for a
 * series whose surprise is near normal; many real series (hourly traffic,
 * bike rentals, air quality) have surprises with a much heavier tail, and
 * their deviates pass the 1 % point 3 to 9 times as often as the Gaussian
 * says, so a tail of 3e-4 alarmed dozens of times more often than it
 * promised. As peaks-over-threshold detectors do (Siffer et al., KDD 2017,
 * after Pickands 1975), the excesses of zz over its 1 % point are fitted
 * by a generalised Pareto distribution (by moments: shape xi = (1 - m^2/v)
 * / 2, scale m (m^2/v + 1) / 2, from the excesses' mean m and variance v)
 * and the tail beyond z0 is their rate times its survival function. Once
 * `peaks` of them were seen (pk's) the tail is the larger of the two: it
 * only ever makes verdicts rarer, on a series whose own peaks say its tail
 * is heavier (a near-normal one has a negative shape and keeps the
 * Gaussian reading). Used for the short surprise and for the drift. O(1),
 * 16 bytes a deviate. */
static double lk_pot(const double *p, const struct lk_peaks *pk, double zz, double tail)
{
    if (p[LK_PEAKS] <= 0 || pk->n < p[LK_PEAKS] || zz <= LK_POT_Z0 || !(pk->mean > 0)) return tail;
    double m = pk->mean, v = pk->var > 1e-9 ? pk->var : 1e-9, r = m * m / v;
    double xi = 0.5 * (1 - r), sg = 0.5 * m * (r + 1), y = zz - LK_POT_Z0, t;
    if (fabs(xi) < 1e-6) t = pk->rate * exp(-y / sg);
    else {
        double b = 1 + xi * y / sg;
        t = b <= 0 ? 0 : pk->rate * pow(b, -1 / xi);
    }
    return t > tail ? t : tail;
}

/* One judged deviate zz into the peaks pk (the caller's): their rate with the
 * memory of the long-run moments (nm: the samples they learnt), their
 * excess (winsorised at LK_POT_CAP) with a memory of `peaks` peaks. */
static void lk_pot_learn(const double *p, struct lk_peaks *pk, uint32_t nm, double zz)
{
    if (p[LK_PEAKS] <= 0) return;
    double wr = lk_wlong(p, nm);
    int peak = zz > LK_POT_Z0;
    pk->rate += (float)(wr * (peak - pk->rate));
    if (!peak) return;
    double y = zz - LK_POT_Z0 < LK_POT_CAP ? zz - LK_POT_Z0 : LK_POT_CAP;
    if (pk->n < 1e6f) pk->n += 1;
    double wk = pk->n < p[LK_PEAKS] ? 1.0 / pk->n : 1.0 / p[LK_PEAKS], d = y - pk->mean;
    pk->mean += (float)(wk * d);
    pk->var = (float)((1 - wk) * (pk->var + wk * d * d));
}

/* Excursions on schedule: within LK_REC_TOL of a period of a whole number
 * (1-4) of periods after the last one on schedule, on a series whose
 * excursions keep time: the typical distance of their timing from a whole
 * number of periods (jit, a moving average over excursions that are not
 * early, weight LK_REC_W) at most LK_REC_JIT. A heartbeat's beats keep
 * their period within a few per cent; excursions at irregular times (a
 * server metric's daily drop at varying hours, spikes) lie anywhere
 * between two whole numbers of periods, a quarter of a period away on
 * average: within a quarter period of 1-4 periods, half of all instants
 * were "on schedule", and on the real tune split's server metrics every
 * third surprise or so passed for a recurring one (15 of the 87 windows
 * missed there had an unlikely sample suppressed that way). A series
 * starts as not keeping time (jit 0.15 of a period, LK_REC_JIT0_Q). */
#define LK_REC_TOL 0.25
#define LK_REC_JIT 0.12
#define LK_REC_W 0.3

/* Recurring surprises (st's): a series whose excursions of the surprise
 * (runs of anomalous verdicts; score: -log10 of the tail) come at a steady
 * period - every beat of a heartbeat, every cycle of a machine - has them
 * as part of its normal behaviour, which the Gaussian long-run
 * distribution cannot tell. Tracks their period, the jitter of their
 * timing and their typical peak; returns 1 while the current excursion is
 * one more of them: on schedule (above), the third or later in a row, its
 * score at most 1.5 times their typical peak + 1. One that comes early on
 * a schedule held (a premature beat) is judged and leaves the schedule
 * (and the jitter) as it was; one that comes late and off schedule, or
 * early with none held, starts a new one. O(1), no history kept. */
static int lk_recurring(struct lk_st *st, double score, int notable)
{
    if (notable && !st->exc) {
        double gap = (double)(st->n - st->edge), per = st->per, k = per > 0 ? floor(gap / per + 0.5) : 0;
        double dev = k >= 1 && k <= 4 ? fabs(gap / per - k) : 0.5;
        double jit = st->jit / 256.0, jn = jit + LK_REC_W * (dev - jit);
        if (dev <= LK_REC_TOL) {
            /* near a whole number of periods: on schedule when the
             * series keeps time (counted in a row), else just timed */
            int kept = (jit < jn ? jit : jn) <= LK_REC_JIT;
            st->exc = kept ? 1 : 2;
            if (!kept) st->reg = 0;
            else if (st->reg < 255) st->reg++;
            if (k == 1) st->per = (float)(per + 0.25 * (gap - per));
            st->edge = st->n;
        } else if (per > 0 && gap < per && st->reg > 0) {
            /* early on a schedule held: judged, the schedule and the
             * jitter stay (with none held, the gap is the next period to
             * try, below: the first gap of a series, from its start, is
             * often far longer than its period, and every excursion after
             * it counted as early, so none could start a schedule) */
            st->exc = 2;
            jn = jit;
        } else {
            st->exc = 2; st->reg = 0; st->per = (float)gap; st->edge = st->n;
        }
        if (per > 0) st->jit = (uint8_t)(jn * 256 + 0.5 < 255 ? jn * 256 + 0.5 : 255);
        st->exmax = 0;
    }
    if (notable && score > st->exmax) st->exmax = (float)score;
    if (!notable && st->exc) {
        /* an excursion ended: one on schedule teaches the typical peak (the
         * first of a new schedule sets it) */
        if (st->exc == 1) st->peak = st->reg > 1 ? (float)(st->peak + 0.25 * (st->exmax - st->peak)) : st->exmax;
        else if (st->reg == 0) st->peak = st->exmax;
        st->exc = 0;
    }
    return st->exc == 1 && st->reg >= 3 && score <= 1.5 * st->peak + 1;
}

/* Calibration at the alarm level (st's): whether the series keeps the
 * promise of `tail` where verdicts are made. On a calibrated series,
 * excursions beyond `tail` (samples whose tail is below thr, those less
 * than `quiet` samples apart one excursion, as they would be one episode)
 * start at a rate of about thr a sample, and the peak score (-log10 of the
 * tail) of each lies above s0 = -log10(thr) by an exponential excess of
 * mean 1 / ln 10 (P(score > s0 + e) = 10^-e thr). Many real series do
 * not: a server metric spikes to its ceiling every few hundred samples, an
 * hourly count series has a surprise of 6 to 8 decades every few days;
 * lk_pot's fits stop short of such samples (their excesses are
 * winsorised, so that one incident's peaks do not hide the next). Here
 * each excursion counts once however long it is (one peak a cluster, as
 * runs declustering keeps for a peaks-over-threshold fit), and the
 * series' own excursions - k of them, of mean excess m, over the last n
 * samples (the memory of the long-run moments) - are weighed against the
 * promise with the weight of `cal` excursions: the rate r = (k + cal) /
 * (n + cal / thr) (the posterior mean of a Poisson rate under a Gamma
 * prior centred on thr) and the mean excess mu = (k m + cal / ln 10) / (k
 * + cal). A sample of score s > s0 gets the tail r exp(-(s - s0) / mu)
 * where that is larger: on a calibrated series (k about thr n, m about
 * 1 / ln 10) its own tail, as before; on one whose excursions come more
 * often or reach further than promised, what its own excursions say, so
 * its routine ones stop being verdicts while one beyond them still is.
 * tail, score: the sample's (before this). Returns the tail. O(1), 14
 * bytes. */
static double lk_calibrate(const double *p, struct lk_st *st, double tail, double thr, double score)
{
    if (p[LK_CAL] <= 0) return tail;
    double n = st->nm < p[LK_LONG] ? st->nm : p[LK_LONG], k = st->xr * n;
    double q = p[LK_QUIET] < 1 ? 1 : p[LK_QUIET] < UINT16_MAX ? p[LK_QUIET] : UINT16_MAX;
    int notable = tail < thr, start = notable && st->xgap >= q;
    st->xr += (float)(lk_wlong(p, st->nm) * (start - st->xr));
    if (notable) {
        double r = (k + p[LK_CAL]) / (n + p[LK_CAL] / thr), mu = (k * st->xm + p[LK_CAL] * LK_CAL_E) / (k + p[LK_CAL]);
        double t = r * exp(-(score + log10(thr)) / mu);
        if (start || score > st->xpk) st->xpk = (float)score;
        st->xgap = 0;
        if (t > tail) tail = t;
    } else if (st->xgap < UINT16_MAX && ++st->xgap == (uint16_t)q) {
        /* the excursion ended: `quiet` samples without one beyond `tail` */
        double e = st->xpk + log10(thr) > 0 ? st->xpk + log10(thr) : 0;
        st->xm += (float)((e - st->xm) / (k + 1));
    }
    return tail;
}

/* Level shifts (st's): a run of `short` errors beyond half the clip (2
 * typical errors) on one side whose values stay within 2 typical errors
 * of their mean (a new level, not a beat or a burst) is a change point,
 * not noise: the level moves at once to the mean of the run's values (the post-change mean, as
 * a CUSUM estimates it from the samples since its change-time estimate;
 * Page 1954, Basseville and Nikiforov 1993, as robust Holt filters restart
 * their level after a run of outliers on one side), and the typical error
 * goes back to what it was before the run (the errors of the old level
 * against the new one are no noise). Without it the clipped level took
 * tens of samples to follow, the typical error grew 2-3 fold meanwhile and
 * the next change went unseen. side: this sample's error beyond half the
 * clip (+1, -1) or not (0); k: its prediction; sc0: the typical error
 * before this sample. */
static void lk_shift(const double *p, struct lk_st *st, const struct lk_err *k, int side, double sc0, int fast)
{
    if (!side) { st->rn = 0; st->rsign = 0; return; }
    if (side != st->rsign || st->rn == 0) { st->rsign = (int8_t)side; st->rn = 0; st->rmean = 0; st->rm2 = 0; st->rsc = (float)sc0; }
    if (st->rn < 255) st->rn++;
    double d = k->x - st->rmean;
    st->rmean += d / st->rn;
    st->rm2 += (float)(d * (k->x - st->rmean));
    /* a new level holds its values together (their spread within 2
     * typical errors, or, when it brings a noise of its own, within a
     * quarter of its distance from the prediction); a beat or a burst
     * beyond it does not */
    double jump = st->rmean - k->pred;
    int tight = st->rm2 <= 4 * st->rsc * st->rsc * st->rn;
    if (st->rn >= p[LK_SHORT] && (tight || 16 * st->rm2 <= st->rn * jump * jump)) {
        /* remembered for lk_revert (on an oversampled series) */
        st->lold = k->pred;
        st->back = fast ? (uint8_t)(4 * p[LK_SHORT] < 255 ? 4 * p[LK_SHORT] : 255) : 0;
        st->level = st->rmean;
        if (tight) {
            if (st->rsc > 0 && st->rsc < st->scale) st->scale = st->rsc;
        } else {
            /* the new level brings a noise of its own (a GPU busy after
             * idling: whole watts that stood still now move by several):
             * its typical error is the run's own spread, and the surprise
             * distribution learns it as a young one (weight 1/learn, read
             * as Student's t): the old moments would call every sample of
             * the new noise unlikely */
            st->scale = 0.8 * sqrt(st->rm2 / st->rn);
            if (st->nm > p[LK_LEARN]) st->nm = (uint32_t)p[LK_LEARN];
        }
        st->rn = 0; st->rsign = 0;
    }
}

/* One sample's learning (st is the caller's): the predictor from its own
 * error k (clipped but while warming up), the typical error, a change
 * point (lk_shift), and the long-run moments of the surprise s (sd their
 * spread before this sample; winsorised once ready). */
static void lk_learn(const double *p, struct lk_st *st, const struct lk_err *k, int ready, double s, double sd, int fast)
{
    int moved = st->scale > 0;
    /* learn: predictor (clipped error), typical error, long-run moments.
     * The warm-up counts the samples since the series first moved (nm): a
     * constant run (zeros, an idle value) teaches nothing. While warming
     * up, errors are not clipped and the typical error is their plain
     * average: the first samples define it (clipped against a typical
     * error still at its floor, neither the level nor the typical error
     * could grow out of a constant run but by 15 % a sample) */
    int warm = st->nm + 2 <= p[LK_LEARN];
    double c = p[LK_CLIP] * k->sc, ce = warm ? k->err : det_clamp(k->err, -c, c);
    if (st->n == 1) { st->scale = fabs(k->err); st->level = k->x; }
    else {
        st->level = k->pred + p[LK_ALPHA] * ce;
        st->trend += p[LK_ALPHA] * p[LK_BETA] * ce;
        double as = st->nm < 28 ? 1.0 / (st->nm + 2) : LK_SC_W, sc0 = st->scale;
        st->scale += as * (fabs(ce) - st->scale);
        lk_shift(p, st, k, warm ? 0 : k->err > c / 2 ? 1 : k->err < -c / 2 ? -1 : 0, sc0, fast);
    }
    /* the surprise moments learn only once the series has moved: against
     * the typical error of a constant start (its floor) every first
     * movement is a surprise of 20 and would set the long-run spread */
    if (moved && st->nm < UINT32_MAX) st->nm++;
    double wl = !moved ? 0 : lk_wlong(p, st->nm);
    /* surprises beyond `clip` deviations teach the moments as that many
     * (winsorised, as the predictor's errors are clipped): one incident's
     * surprises of 20 deviations doubled the spread for thousands of
     * samples and hid the next, smaller one */
    double sl = st->mu + p[LK_CLIP] * sd;
    double d = (ready && s > sl ? sl : s) - st->mu;
    st->mu += wl * d;
    st->var = (1 - wl) * (st->var + wl * d * d);
    double db = st->bias - st->bmu;
    st->bmu += wl * db;
    st->bvar = (1 - wl) * (st->bvar + wl * db * db);
}

/* The score of a tail: -log10 of it, 300 at most. */
static double lk_score(double tail)
{
    return tail > 1e-300 ? -log10(tail) : 300;
}

/* Fills o's value, expected range (`clip` typical errors sc about the
 * prediction pred), mean, deviation and score (of tail) for value x (o is
 * the caller's). */
static void lk_out(const double *p, struct det_out *o, double x, double pred, double sc, double tail)
{
    o->value = x; o->lo = pred - p[LK_CLIP] * sc; o->hi = pred + p[LK_CLIP] * sc;
    o->mean = pred; o->std = sc * DET_MAE_SD;
    o->score = lk_score(tail);
}

/* Fills o with an anomalous verdict on value x against prediction pred
 * (typical error sc, likelihood tail, kind of lk_what, signed short error
 * ssg: the value, expected range and score as well as the reason, so a
 * verdict that waited for its confirmation reports what it found; o is
 * the caller's) and returns DET_ANOMALY. */
static int lk_verdict(const struct rule_cfg *rc, const struct det_ctx *cx, struct det_out *o, det_why_fn why, double thr,
                      double x, double pred, double sc, double tail, int kind, double ssg)
{
    lk_out(rc->p, o, x, pred, sc, tail);
    o->excess = det_clamp01((o->score + log10(thr)) / 6);
    o->why = why;
    o->s[0] = cx->slot >= 0 ? cx->slots->name[cx->slot] : rc->metric;
    o->a[0] = x; o->a[1] = pred; o->a[2] = sc; o->a[3] = tail;
    o->a[4] = kind; o->a[5] = ssg;
    return DET_ANOMALY;
}

/* lk_core.h: judges j, teaches the plain predictor k, fills o (st and o are
 * the caller's). */
int lk_step(const struct rule_cfg *rc, struct lk_st *st, const struct det_ctx *cx, const struct lk_err *k,
            const struct lk_err *j, struct det_out *o, det_why_fn why)
{
    const double *p = rc->p;
    /* count data: a typical error that decayed below the data's resolution
     * (a run of zeros) made a single count a surprise (z of 10 for a 1
     * after 18 zeros): judged against at least a quarter of the resolution */
    if (st->res > 0) st->res = (float)lk_resolution(k->x, st->res);
    double jsc = j->sc < LK_RES_F * st->res ? LK_RES_F * st->res : j->sc;
    /* quantised data (whole degrees, whole watts, 0/100 %): a change of
     * one quantum is what rounding makes of the smallest true movement
     * (a temperature at 74.5 reads 74 or 75), so it is never a surprise:
     * the judged error is what lies beyond one quantum (a dead band) */
    double z = (fabs(j->err) > st->res ? fabs(j->err) - st->res : 0) / jsc;
    double s = log1p(z);
    /* the short average before the long-run moments learn this sample */
    double ws = 2.0 / (p[LK_SHORT] + 1);
    st->shrt = st->n <= 2 ? s : st->shrt + ws * (s - st->shrt);
    /* and of the signed error and its size (beyond the dead band, clipped):
     * whether the recent errors lie on one side (a level or shape that
     * differs) or on both (noise) */
    double zc = det_clamp((j->err > 0 ? 1 : -1) * z, -p[LK_CLIP], p[LK_CLIP]);
    st->ssg = (float)(st->n <= 2 ? zc : st->ssg + ws * (zc - st->ssg));
    st->sab = (float)(st->n <= 2 ? fabs(zc) : st->sab + ws * (fabs(zc) - st->sab));
    double sd = sqrt(st->var);
    if (sd < 0.05) sd = 0.05;
    /* and on quantised data the surprise mostly sits at 0 (the dead
     * band), so its spread says nothing of how unlikely a move of a
     * quantum or two is: the spread is at least a third of the surprise of
     * one quantum beyond the band (a lone sample of two quanta is no
     * incident, a lasting one or a larger jump is) */
    double sd_q = st->res > 0 ? log1p(st->res / jsc) / 2 : 0;
    if (sd < sd_q) sd = sd_q;
    /* the short average has the variance of the surprise over ~short samples */
    double sd_short = sd * sqrt(ws / (2 - ws));
    /* a series sampled faster than LK_FAST_S is oversampled: consecutive
     * surprises are not independent (a power reading at 4 Hz swings over a
     * second or two), so the short average's spread is its own, learnt
     * (vsh), where that is larger, and the drift's span (below) is `drift`
     * seconds, not samples */
    double iv = cx->e ? ent_interval_ms(cx->e, 0) / 1000 : 0;
    int fast = iv > 0 && iv < LK_FAST_S;
    if (fast && st->vsh > sd_short * sd_short) sd_short = sqrt(st->vsh);
    /* the moments' own uncertainty: a new sample against moments of m
     * samples varies by sqrt(1 + 1/m) and is Student-t distributed */
    double m = st->nm == 0 ? 1e6 : st->nm < p[LK_LONG] ? st->nm : p[LK_LONG];
    double zz = (st->shrt - st->mu) / (sd_short * sqrt(1 + 1 / m));
    double tail = lk_pot(p, &st->ps, zz, lk_tail(zz, m));
    /* a lone sample on its own error: the short average above is made for
     * incidents that last, and a spike of one or two samples moves it by
     * less than half its size (log1p squashes it as well): a sample 5
     * typical errors off, the whole incident on a server metric that drops
     * for one sample, left the short surprise 1 deviation from its mean.
     * Its own tail is that of the error's deviate (the typical error is a
     * mean absolute error: a deviation is 1.2533 of them), Student-t with
     * the degrees of freedom of that typical error (a moving average of
     * weight 0.05: about 39 samples; read as Gaussian, its spread alone
     * made plain noise under the generic profile alarm 3.7 times as often
     * as without this view at `point` 3, 26 episodes in 100,000 samples
     * against 7; so 12, and 9 at the profile's 10), `point` times rarer
     * than `tail` before it counts; the calibration below weighs it as
     * every other verdict, so a series whose spikes are routine alarms on
     * fewer of them. Only a sample beyond its expected range (`clip`
     * typical errors) is judged alone: the `erfc` is skipped for the rest */
    if (p[LK_POINT] > 0 && z > p[LK_CLIP]) {
        double tp = p[LK_POINT] * 2 * lk_tail(z / DET_MAE_SD, m < LK_SC_DOF ? m : LK_SC_DOF);
        if (tp < tail) tail = tp;
    }
    /* drift: a slow average of the signed error strays from its long-run
     * mean (the predictor lags a ramp by a steady error) */
    double de = fabs(j->derr) > st->res ? j->derr - (j->derr > 0 ? st->res : -st->res) : 0;
    double zb = -1, dev = j->err, zs = det_clamp(de / jsc, -p[LK_CLIP], p[LK_CLIP]), wb = p[LK_DRIFT] > 0 ? 2.0 / (p[LK_DRIFT] * (fast ? LK_FAST_S / iv : 1) + 1) : 0;
    if (wb > 0) {
        st->bias = st->n <= 2 ? zs : st->bias + wb * (zs - st->bias);
        double bsd = sqrt(st->bvar);
        if (bsd < 0.05) bsd = 0.05;
        zb = fabs(st->bias - st->bmu) / (bsd * sqrt(1 + 1 / m));
        double tb = lk_pot(p, &st->pd, zb, 2 * lk_tail(zb, m));
        if (tb < tail) { tail = tb; dev = st->bias - st->bmu; }
    }
    /* ready after `learn` samples, with moments of at least learn/2 (or
     * none: a series constant so far, whose first movement is judged
     * against the floor as it is) */
    int ready = st->n > p[LK_LEARN] && (st->nm == 0 || 2.0 * st->nm >= p[LK_LEARN]);
    lk_learn(p, st, k, ready, s, sd, fast);
    if (st->nm > 0) {
        /* the short average's own spread about the long-run mean (winsorised
         * as the surprises are) */
        double hi = st->mu + p[LK_CLIP] * sd_short, dv = (ready && st->shrt > hi ? hi : st->shrt) - st->mu;
        st->vsh += lk_wlong(p, st->nm) * (dv * dv - st->vsh);
    }
    if (ready) {
        lk_pot_learn(p, &st->ps, st->nm, zz);
        if (zb >= 0) lk_pot_learn(p, &st->pd, st->nm, zb);
    }
    if (st->n < UINT32_MAX) st->n++;
    if (st->since < UINT32_MAX / 2) st->since++;
    /* the confirming view sees every sample; a verdict waiting for it
     * (below) opens its episode at the sample the view finds unlikely */
    int cfv = p[LK_CONFIRM] > 0 ? lk_confirm(p, &st->cf, k->x) : -1, cnow = 0;
    if (cfv == 1) st->cf.seen = 0;
    else if (st->cf.seen < UINT16_MAX) st->cf.seen++;
    if (cx->open) st->cf.pend = 0;
    else if (st->cf.pend) {
        if (cfv == 1) { cnow = 1; st->cf.pend = 0; }
        else st->cf.pend--;
    }
    lk_out(p, o, j->x, j->pred, jsc, tail);
    /* fast sampling: the tail per sample shrinks with the interval, so a
     * series sampled 4 times a second alarms no more often per hour than
     * one sampled every minute (at a fixed tail per sample it would alarm
     * 240 times as often) */
    double thr = p[LK_TAIL];
    if (p[LK_TAIL_S] > 0 && iv > 0 && iv < p[LK_TAIL_S]) thr *= iv / p[LK_TAIL_S];
    int recurring = lk_recurring(st, o->score, tail < thr);
    if (!ready) return DET_UNKNOWN;
    double t0 = tail;
    tail = lk_calibrate(p, st, tail, thr, o->score);
    if (tail != t0) o->score = lk_score(tail);
    int bad = tail < thr && !recurring && det_direction_ok(dev, p[LK_DIRECTION]);
    /* the incident is over once the predictor explained the series as well
     * as usual again: the short surprise within one deviation of its
     * long-run mean for `short` samples in a row after the last anomalous
     * verdict, before this sample (then it stays over until the next one) */
    int over = st->calm >= p[LK_SHORT];
    if (!over) st->calm = st->shrt <= st->mu + sd_short ? st->calm + 1 : 0;
    /* what was unusual: 0 a sample beyond its expected range, 1 a drift, 2
     * samples within the range that move more than usual */
    int kind = fabs(j->err) > p[LK_CLIP] * jsc ? 0 : dev != j->err ? 1 : 2;
    /* noise alone opens no episode: samples within their expected range
     * that scatter to both sides more than usual were, on the real tune
     * sets, 12 of 139 detected incidents against 189 false alarms (a
     * heavy-tailed series' ordinary bursts); a noise change that matters
     * takes samples beyond the range, which open it as a jump. Such
     * samples that lie to one side, 2.5 typical errors off on average
     * (their short average signed error at least that and at least 0.7
     * times their size: a level or shape that differs, as a busy weekend
     * day judged against the week), are a shift and still open one (at 2
     * typical errors they gave 28 more false alarms on the tune sets' long
     * unlabelled series for 2 more incidents; at 3 a busy Saturday at
     * 3.7 typical errors was missed) */
    if (kind == 2 && fabs(st->ssg) >= LK_ONE_SIDED * st->sab && fabs(st->ssg) >= LK_SHIFT_Z) kind = 3;
    if (bad && !cx->open && kind == 2) bad = 0;
    /* a shift rests on samples each within its range: it opens an episode
     * only LK_SHIFT_TAIL times rarer than `tail` (on the real tune sets
     * shifts opened 88 false alarms for 10 starts inside a window) */
    if (bad && !cx->open && kind == 3 && tail >= LK_SHIFT_TAIL * thr) bad = 0;
    if (!bad && !cnow) return DET_NORMAL;
    if (cnow) {
        /* the verdict that waited, confirmed now: the episode opens here,
         * with what that verdict found */
        st->since = 0; st->calm = 0;
        return lk_verdict(rc, cx, o, why, thr, st->cf.px, st->cf.ppred, st->cf.psc, st->cf.ptail, st->cf.pkind, st->ssg);
    }
    if (!cx->open && st->since < p[LK_QUIET] && !over) {
        /* quiet after an episode: a verdict that continues its burst (within
         * `short` samples of the last one) prolongs the quiet; a lone one
         * later does not, or noise in the quiet would hide the next incident */
        if (st->since <= p[LK_SHORT]) st->since = 0;
        return DET_UNKNOWN;
    }
    st->since = 0; st->calm = 0;
    /* a verdict that would open an episode needs the confirming view's
     * word within `confirm` samples before it (now) or after it (it waits;
     * its quiet runs as if it had opened one); a view too young abstains */
    if (!cx->open && cfv >= 0 && st->cf.seen > p[LK_CONFIRM] && tail >= LK_CF_ALONE * thr) {
        st->cf.pend = (uint8_t)p[LK_CONFIRM]; st->cf.pkind = (uint8_t)kind; st->cf.ptail = (float)tail;
        st->cf.px = (float)j->x; st->cf.ppred = (float)j->pred; st->cf.psc = (float)jsc;
        return DET_NORMAL;
    }
    return lk_verdict(rc, cx, o, why, thr, j->x, j->pred, jsc, tail, kind, st->ssg);
}

static int lk_update(const struct rule_cfg *rc, void *stp, const struct det_ctx *cx, struct det_out *o)
{
    struct lk_st *st = stp;
    struct lk_err k;
    if (lk_start(st, cx->v)) return DET_UNKNOWN;
    if (!lk_predict(st, cx->v, &k)) { memset(st, 0, sizeof *st); return DET_UNKNOWN; }
    lk_revert(st, &k);
    return lk_step(rc, st, cx, &k, &k, o, lk_why);
}

const struct det_ops det_likelihood = {
    .name = "likelihood", .scope = DS_SERIES, .no_window = 1, .state_size = sizeof(struct lk_st), .params = params,
    .update = lk_update,
};
