/* det_thermal.c - thermal throttling: the driver's thermal-violation flag,
 * or a hot GPU whose SM clock falls under load (below its recent 90th
 * percentile). */
#include "detector.h"

#include <stdio.h>

static const struct det_param params[] = {
    { "hot", 85, "temperature (C) counted as hot" },
    { "clock_drop", 0.1, "fraction below the recent clock counted as falling" },
    { "min_util", 50, "utilisation (%) counted as under load" },
    { NULL, 0, NULL },
};

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

static int th_update(const struct rule_cfg *rc, void *st, const struct det_ctx *cx, struct det_out *o)
{
    (void)st;
    double temp = 0, tviol = 0, clk = 0, util = 0;
    int have_t = ent_val(cx->e, rc->aux[S_TEMP], &temp);
    int have_v = ent_val(cx->e, rc->aux[S_TVIOL], &tviol);
    int have_c = ent_val(cx->e, rc->aux[S_CLK], &clk);
    int have_u = ent_val(cx->e, rc->aux[S_UTIL], &util);
    if (!have_t && !have_v) return DET_UNKNOWN;
    const struct win *cw = ent_win(cx->e, rc->aux[S_CLK]);
    double ref = cw && win_count(cw) >= 10 ? win_quantile(cw, 0.9) : 0;
    int flag = have_v && tviol >= 1;
    int falling = have_t && have_c && have_u && temp >= rc->p[0] && util >= rc->p[2] && ref > 0 &&
                  clk <= (1 - rc->p[1]) * ref;
    o->value = have_t ? temp : tviol;
    o->metric_slot = have_t ? rc->aux[S_TEMP] : rc->aux[S_TVIOL];
    o->lo = 0; o->hi = rc->p[0];
    o->score = have_t ? temp - rc->p[0] : tviol;
    if (!flag && !falling) return DET_NORMAL;
    o->excess = det_clamp01(have_t ? (temp - rc->p[0] + 5) / 15 : 0.5);
    char who[96];
    det_who(cx, who, sizeof who);
    int n = snprintf(o->reason, sizeof o->reason, "%s is thermally throttled", who);
    if (have_t && n > 0) n += snprintf(o->reason + n, sizeof o->reason - n, " at %.0f \xc2\xb0" "C", temp);
    if (have_c && ref > 0 && (size_t)n < sizeof o->reason)
        n += snprintf(o->reason + n, sizeof o->reason - n, ": SM clock %.0f MHz against a recent %.0f MHz", clk, ref);
    if (flag && (size_t)n < sizeof o->reason) snprintf(o->reason + n, sizeof o->reason - n, " (driver thermal flag set)");
    return DET_ANOMALY;
}

const struct det_ops det_thermal = {
    .name = "thermal_throttle", .scope = DS_GPU, .params = params, .configure = th_configure, .update = th_update,
};
