/* det_thermal_model.c - a GPU hotter than its power explains (cooling lost:
 * a failed pump or fan, a blocked inlet), whatever the load does.
 *
 * A GPU's temperature follows its power through a first-order lag: at
 * steady power T = c + k * P (k the thermal resistance in C/W, c the inlet
 * level, drifting with the room). The detector learns k and c per GPU from
 * the GPU's own samples and predicts the temperature from the power
 * low-pass filtered with time constants tau_lo, tau and tau_hi; the
 * prediction is the highest of the three, so a GPU whose own time constant
 * lies anywhere between tau_lo and tau_hi is never "too hot" just after a
 * job ends (power falls faster than heat) or starts. Anomalous when the
 * temperature lies min_dev above that prediction (a fixed margin: a
 * deviation learned from the residuals grows with a slow fault). Unlike a
 * step in the temperature's own window, this holds through job starts,
 * checkpoint dips and loader stalls, which move the prediction with the
 * power.
 *
 * Learning: the slope from the covariance of filtered power and
 * temperature over `learn_s` (once the power has varied by min_power_sd:
 * an idle or steady GPU tells nothing about k; clamped to [0, max_k]), the
 * level from the residual clipped at min_dev/4 over `level_s` (room
 * drift). Warm-up: until the model has predicted min_n samples in a row
 * within min_dev/2 over a range of power, it learns from every sample and
 * gives no verdict. Then it learns from no sample hot beyond half the
 * limit and from none while an episode is open, so a fault is not learned
 * as normal. An open episode ends only when the temperature is back within
 * min_dev/2 of what the power explains (hysteresis); samples without
 * temperature or power keep it open. State: 64 bytes per GPU, O(1) per
 * sample. */
#include "detector.h"

#include <math.h>
#include <stdio.h>

static const struct det_param params[] = {
    { "min_dev", 8, 0, 200, DP_LO_OPEN, "degrees (C) above what the power explains counted as too hot" },
    { "tau", 60, 0, 86400, DP_LO_OPEN, "thermal time constant (s) the model learns with" },
    { "tau_lo", 30, 0, 86400, DP_LO_OPEN, "shortest time constant (s) the prediction allows for" },
    { "tau_hi", 150, 0, 86400, DP_LO_OPEN, "longest time constant (s) the prediction allows for" },
    { "learn_s", 3600, 0, DP_DAYS365, DP_LO_OPEN, "memory (s) of the thermal resistance" },
    { "level_s", 600, 0, DP_DAYS365, DP_LO_OPEN, "memory (s) of the inlet level (room drift)" },
    { "min_n", 300, 0, 1e9, DP_WHOLE, "good predictions in a row (over 2 x min_power_sd of power) before judging" },
    { "min_power_sd", 40, 0, 1e5, DP_LO_OPEN, "power spread (W) needed before the thermal resistance is learned" },
    { "max_k", 0.3, 0, 10, DP_LO_OPEN, "highest plausible thermal resistance (C/W)" },
    { NULL, 0, 0, 0, 0, NULL },
};
/* the parameters above, by name (the same order) */
enum { P_MIN_DEV, P_TAU, P_TAU_LO, P_TAU_HI, P_LEARN_S, P_LEVEL_S, P_MIN_N, P_MIN_PSD, P_MAX_K, P__COUNT };

/* filtered power, learning statistics and the learned model of one GPU */
struct tm_st {
    int64_t last_ts;         /* previous sample (ms; 0 = none yet) */
    float pf, pl, pu;        /* power filtered at tau, tau_lo, tau_hi (W) */
    float mp, mt, cpt, vp;   /* exponentially weighted means, covariance, variance */
    float k, c;              /* thermal resistance (C/W), inlet level (C) */
    float plo, phi;          /* filtered power range of the current run of good predictions */
    uint32_t n;              /* samples learned from */
    uint32_t good;           /* consecutive predictions within min_dev/2 (warm-up) */
    uint8_t have_k, valid;   /* slope learned; model checked (judging) */
};

enum { S_TEMP, S_POWER };

static int tm_configure(struct rule_cfg *rc, struct profile_slots *ps, char *err, size_t errlen)
{
    const double *p = rc->p;
    /* each parameter's range is checked at load; together: */
    if (!(p[P_TAU_LO] <= p[P_TAU] && p[P_TAU] <= p[P_TAU_HI])) {
        snprintf(err, errlen, "rule %s: tau_lo, tau and tau_hi must be ascending", rc->id);
        return GL_ERROR;
    }
    rc->aux[S_TEMP] = profile_slot(ps, "gpu.temperature.gpu", 0);
    rc->aux[S_POWER] = profile_slot(ps, "gpu.power.usage", 0);
    return GL_OK;
}

/* The reason (value: temperature, hi: limit; a: power, prediction, excess). */
static void tm_why(const struct det_out *o, const char *who, char *buf, size_t n)
{
    snprintf(buf, n, "%s is %.0f \xc2\xb0" "C hotter than its power explains: %.0f \xc2\xb0" "C at %.0f W, "
             "expected about %.0f \xc2\xb0" "C (cooling lost?)", who, o->a[2], o->value, o->a[0], o->a[1]);
}

/* The weight of a new sample dt seconds after the last in a low-pass filter
 * of time constant tau: 1 - exp(-dt/tau), by its series for small steps
 * (1 s samples: error below 1e-5 of the weight, no exp per sample). */
static double tm_weight(double dt, double tau)
{
    double x = dt / tau;
    return x < 0.1 ? x * (1 - x * (0.5 - x / 6)) : 1 - exp(-x);
}

/* Moves the low-pass filters of the power by dt seconds towards pw. */
static void tm_filter(const struct rule_cfg *rc, struct tm_st *st, double pw, double dt)
{
    st->pf += (float)(tm_weight(dt, rc->p[P_TAU]) * (pw - st->pf));
    st->pl += (float)(tm_weight(dt, rc->p[P_TAU_LO]) * (pw - st->pl));
    st->pu += (float)(tm_weight(dt, rc->p[P_TAU_HI]) * (pw - st->pu));
}

/* Learns the thermal resistance from a sample that is not hot beyond
 * half the limit (weighted means, covariance of filtered power and
 * temperature over learn_s). */
static void tm_learn_slope(const struct rule_cfg *rc, struct tm_st *st, double temp, double dt)
{
    st->n++;
    double w = 1.0 / st->n, wt = dt / rc->p[P_LEARN_S];
    if (wt > w) w = wt;
    if (w > 1) w = 1;
    double dp = st->pf - st->mp;
    st->mp += (float)(w * dp);
    st->mt += (float)(w * (temp - st->mt));
    st->cpt += (float)(w * (dp * (temp - st->mt) - st->cpt));
    st->vp += (float)(w * (dp * (st->pf - st->mp) - st->vp));
    double psd = rc->p[P_MIN_PSD];
    if (st->n >= 10 && st->vp >= psd * psd && st->vp > 0) {
        double k = st->cpt / st->vp;
        if (!isfinite(k)) return;
        st->k = (float)det_clamp(k, 0, rc->p[P_MAX_K]);
        st->have_k = 1;
    }
}

/* Warm-up: the model judges only after it predicted the temperature
 * within min_dev/2 for min_n samples in a row over a filtered-power range
 * of at least 2 x min_power_sd (a model learned from a GPU's first,
 * unsettled minutes, or that has seen one power level only, would call
 * the next level "too hot"); until then it learns from every sample. */
static void tm_check_model(const struct rule_cfg *rc, struct tm_st *st, double r)
{
    if (!st->have_k || fabs(r) >= rc->p[P_MIN_DEV] / 2) { st->good = 0; return; }
    if (st->good++ == 0) st->plo = st->phi = st->pf;
    if (st->pf < st->plo) st->plo = st->pf;
    if (st->pf > st->phi) st->phi = st->pf;
    if (st->good >= rc->p[P_MIN_N] && st->phi - st->plo >= 2 * rc->p[P_MIN_PSD]) st->valid = 1;
}

static int tm_update(const struct rule_cfg *rc, void *stp, const struct det_ctx *cx, struct det_out *o)
{
    struct tm_st *st = stp;
    double temp, pw;
    if (!ent_val(cx->e, rc->aux[S_TEMP], &temp) || !ent_val(cx->e, rc->aux[S_POWER], &pw))
        return cx->open ? DET_HOLD : DET_UNKNOWN;
    double dt = st->last_ts && cx->ts > st->last_ts ? (double)(cx->ts - st->last_ts) / 1000 : 0;
    if (!st->last_ts) { st->pf = st->pl = st->pu = st->mp = (float)pw; st->mt = (float)temp; }
    else tm_filter(rc, st, pw, dt);
    st->last_ts = cx->ts;
    double lim = rc->p[P_MIN_DEV];
    double hi_p = st->pf > st->pl ? st->pf : st->pl, r = 0, excess = 0;
    if (st->pu > hi_p) hi_p = st->pu;
    /* warming up: the level is the regression line's */
    if (st->have_k && !st->valid) st->c = st->mt - st->k * st->mp;
    if (st->have_k) {
        r = temp - (st->c + st->k * st->pf);
        excess = temp - (st->c + st->k * hi_p);
    }
    if (!st->valid) {
        tm_learn_slope(rc, st, temp, dt > 0 ? dt : 1);
        tm_check_model(rc, st, r);
        return DET_UNKNOWN;
    }
    if (!cx->open && excess < lim / 2) tm_learn_slope(rc, st, temp, dt > 0 ? dt : 1);
    if (!cx->open) {
        /* the inlet level follows the room; the step is clipped at
         * min_dev/4, so a fault moves it by at most that per level_s */
        double wl = dt / rc->p[P_LEVEL_S];
        st->c += (float)((wl > 1 ? 1 : wl) * det_clamp(r, -lim / 4, lim / 4));
    }
    double expect = temp - excess;
    o->value = temp; o->metric_slot = rc->aux[S_TEMP];
    o->lo = expect; o->hi = expect + lim; o->score = excess;
    if (excess < (cx->open ? lim / 2 : lim)) return DET_NORMAL;
    o->excess = det_clamp01((excess - lim) / 20);
    o->why = tm_why;
    o->a[0] = pw; o->a[1] = expect; o->a[2] = excess;
    return DET_ANOMALY;
}

/* A state read back from a snapshot is usable: finite numbers, flags 0/1. */
static int tm_check(const struct rule_cfg *rc, const void *stp)
{
    (void)rc;
    const struct tm_st *st = stp;
    const float f[] = { st->pf, st->pl, st->pu, st->mp, st->mt, st->cpt, st->vp, st->k, st->c, st->plo, st->phi };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (!isfinite(f[i])) return 0;
    return st->have_k <= 1 && st->valid <= 1 && st->vp >= 0 && st->last_ts >= 0 && gl_time_ok(st->last_ts);
}

const struct det_ops det_thermal_model = {
    .name = "thermal_model", .scope = DS_GPU, .state_size = sizeof(struct tm_st), .check = tm_check,
    .params = params, .configure = tm_configure, .update = tm_update,
};
