/* det_thermal.c - thermal throttling: the driver's thermal-violation flag,
 * or a hot GPU whose SM clock falls under load (below its recent 90th
 * percentile). An open episode ends only when the throttling is gone: the
 * flag clear and either the temperature `clear_temp` below `hot` or the
 * clock back within clock_drop/2 of the clock the GPU held before the
 * episode (kept in the state: the recent percentile drifts down to the
 * throttled clock while the fault goes on). */
#include "detector.h"

#include <stdio.h>

static const struct det_param params[] = {
    { "hot", 85, -50, 200, 0, "temperature (C) counted as hot" },
    { "clock_drop", 0.1, 0, 1, DP_LO_OPEN | DP_HI_OPEN, "fraction below the recent clock counted as falling" },
    { "min_util", 50, 0, 100, 0, "utilisation (%) counted as under load" },
    { "clear_temp", 5, 0, 200, 0, "an open episode may end only this many degrees below hot, or with the clock back" },
    { NULL, 0, 0, 0, 0, NULL },
};
/* the parameters above, by name (the same order) */
enum { P_HOT, P_CLOCK_DROP, P_MIN_UTIL, P_CLEAR_TEMP, P__COUNT };

/* the clock reference before the episode (MHz; 0 = none yet) */
struct th_st { double ref; };

enum { S_TEMP, S_TVIOL, S_CLK, S_UTIL };

static int th_configure(struct rule_cfg *rc, struct profile_slots *ps, char *err, size_t errlen)
{
    (void)err; (void)errlen;
    rc->aux[S_TEMP] = profile_slot(ps, "gpu.temperature.gpu", 0);
    rc->aux[S_TVIOL] = profile_slot(ps, "gpu.throttling.thermal.active", 0);
    rc->aux[S_CLK] = profile_slot(ps, "gpu.clock.streaming_multiprocessor_frequency", 1);
    rc->aux[S_UTIL] = profile_slot(ps, "gpu.utilization.gpu.pct", 0);
    return GL_OK;
}

/* The reason of throttling (a: have temperature, temperature, have clocks,
 * clock, clock before, driver flag). */
static void th_why(const struct det_out *o, const char *who, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s is thermally throttled", who);
    if (o->a[0] != 0 && n > 0) n += snprintf(buf + n, len - n, " at %.0f \xc2\xb0" "C", o->a[1]);
    if (o->a[2] != 0 && (size_t)n < len)
        n += snprintf(buf + n, len - n, ": SM clock %.0f MHz against %.0f MHz before", o->a[3], o->a[4]);
    if (o->a[5] != 0 && (size_t)n < len) snprintf(buf + n, len - n, " (driver thermal flag set)");
}

static int th_update(const struct rule_cfg *rc, void *stp, const struct det_ctx *cx, struct det_out *o)
{
    struct th_st *st = stp;
    double temp = 0, tviol = 0, clk = 0, util = 0;
    int have_t = ent_val(cx->e, rc->aux[S_TEMP], &temp);
    int have_v = ent_val(cx->e, rc->aux[S_TVIOL], &tviol);
    int have_c = ent_val(cx->e, rc->aux[S_CLK], &clk);
    int have_u = ent_val(cx->e, rc->aux[S_UTIL], &util);
    if (!have_t && !have_v) return cx->open ? DET_HOLD : DET_UNKNOWN;
    const struct win *cw = ent_win(cx->e, rc->aux[S_CLK]);
    double recent = cw && win_count(cw) >= 10 ? win_quantile(cw, 0.9) : 0;
    /* while open, the reference is the clock from before the episode */
    double ref = cx->open && st->ref > recent ? st->ref : recent;
    int flag = have_v && tviol >= 1;
    int loaded = have_u && util >= rc->p[P_MIN_UTIL];
    int hot = have_t && temp >= (cx->open ? rc->p[P_HOT] - rc->p[P_CLEAR_TEMP] : rc->p[P_HOT]);
    double drop = cx->open ? rc->p[P_CLOCK_DROP] / 2 : rc->p[P_CLOCK_DROP];
    int falling = hot && have_c && loaded && ref > 0 && clk <= (1 - drop) * ref;
    o->value = have_t ? temp : tviol;
    o->metric_slot = have_t ? rc->aux[S_TEMP] : rc->aux[S_TVIOL];
    o->lo = 0; o->hi = rc->p[P_HOT];
    o->score = have_t ? temp - rc->p[P_HOT] : tviol;
    if (!flag && !falling) {
        if (!cx->open) { st->ref = 0; return DET_NORMAL; }
        /* still hot but the clock cannot be judged (idle, no clock): keep it */
        if (hot && (!have_c || !loaded || ref <= 0)) return DET_HOLD;
        return DET_NORMAL;
    }
    if (!cx->open && recent > st->ref) st->ref = recent;
    o->excess = det_clamp01(have_t ? (temp - rc->p[P_HOT] + 5) / 15 : 0.5);
    o->why = th_why;
    o->a[0] = have_t; o->a[1] = temp; o->a[2] = have_c && ref > 0; o->a[3] = clk; o->a[4] = ref; o->a[5] = flag;
    return DET_ANOMALY;
}

const struct det_ops det_thermal = {
    .name = "thermal_throttle", .scope = DS_GPU, .state_size = sizeof(struct th_st), .params = params, .configure = th_configure, .update = th_update,
};
