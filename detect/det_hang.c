/* det_hang.c - hang: utilisation pinned at 100 % while the board draws
 * little power (a kernel spinning or the GPU wedged, not computing). */
#include "detector.h"

#include <stdio.h>

static const struct det_param params[] = {
    { "min_util", 98, 0, 100, 0, "utilisation (%) counted as pinned" },
    { "max_frac", 0.3, 0, 1, DP_LO_OPEN, "power at most this fraction of the highest seen" },
    { "min_pmax", 100, 0, 1e5, 0, "ignore boards never seen above this many watts" },
    { NULL, 0, 0, 0, 0, NULL },
};
/* the parameters above, by name (the same order) */
enum { P_MIN_UTIL, P_MAX_FRAC, P_MIN_PMAX, P__COUNT };

static int hang_configure(struct rule_cfg *rc, struct profile_slots *ps, char *err, size_t errlen)
{
    (void)err; (void)errlen;
    rc->aux[0] = profile_slot(ps, "gpu.utilization.gpu.pct", 0);
    rc->aux[1] = profile_slot(ps, "gpu.power.usage", 0);
    return GL_OK;
}

/* The reason of a hang (value: utilisation; a: power, highest power). */
static void hang_why(const struct det_out *o, const char *who, char *buf, size_t n)
{
    snprintf(buf, n, "%s looks hung: utilisation %.0f %% but only %.0f W drawn (it reaches %.0f W when busy)",
             who, o->value, o->a[0], o->a[1]);
}

static int hang_update(const struct rule_cfg *rc, void *st, const struct det_ctx *cx, struct det_out *o)
{
    (void)st;
    double u, pw;
    if (!ent_val(cx->e, rc->aux[0], &u) || !ent_val(cx->e, rc->aux[1], &pw)) return DET_UNKNOWN;
    double pmax = cx->e->pmax;
    if (!(pmax > 0) || pmax < rc->p[P_MIN_PMAX]) return DET_UNKNOWN;   /* no power seen: no fraction of it */
    o->value = u; o->metric_slot = rc->aux[0]; o->lo = 0; o->hi = rc->p[P_MAX_FRAC] * pmax; o->score = pw / pmax;
    if (u < rc->p[P_MIN_UTIL] || pw > rc->p[P_MAX_FRAC] * pmax) return DET_NORMAL;
    o->excess = det_clamp01(1 - pw / (rc->p[P_MAX_FRAC] * pmax));
    o->why = hang_why;
    o->a[0] = pw; o->a[1] = pmax;
    return DET_ANOMALY;
}

const struct det_ops det_hang = {
    .name = "hang", .scope = DS_GPU, .params = params, .configure = hang_configure, .update = hang_update,
};
