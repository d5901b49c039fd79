/* det_mem_pressure.c - memory pressure: framebuffer use close to the
 * board's total (from gpu.memory.framebuffer.total_size, or total_mib). */
#include "detector.h"

#include <stdio.h>

static const struct det_param params[] = {
    { "frac", 0.97, 0, 1, DP_LO_OPEN, "share of the total counted as full" },
    { "total_mib", 0, 0, 1e9, 0, "board memory in MiB when events do not carry it" },
    { NULL, 0, 0, 0, 0, NULL },
};
/* the parameters above, by name (the same order) */
enum { P_FRAC, P_TOTAL_MIB, P__COUNT };

static int mp_configure(struct rule_cfg *rc, struct profile_slots *ps, char *err, size_t errlen)
{
    (void)err; (void)errlen;
    rc->aux[0] = profile_slot(ps, "gpu.memory.framebuffer.used_size", 0);
    rc->aux[1] = profile_slot(ps, "gpu.memory.framebuffer.total_size", 0);
    return GL_OK;
}

/* The reason of full memory (value: used; a: total). */
static void mp_why(const struct det_out *o, const char *who, char *buf, size_t n)
{
    snprintf(buf, n, "%s memory nearly full: %.0f of %.0f MiB used (%.1f %%)", who, o->value, o->a[0],
             100 * o->value / o->a[0]);
}

static int mp_update(const struct rule_cfg *rc, void *st, const struct det_ctx *cx, struct det_out *o)
{
    (void)st;
    double used, total = rc->p[P_TOTAL_MIB];
    if (!ent_val(cx->e, rc->aux[0], &used)) return DET_UNKNOWN;
    double t2;
    if (ent_val(cx->e, rc->aux[1], &t2) && t2 > 0) total = t2;
    if (total <= 0) return DET_UNKNOWN;
    o->value = used; o->metric_slot = rc->aux[0]; o->lo = 0; o->hi = rc->p[P_FRAC] * total; o->score = used / total;
    if (used < rc->p[P_FRAC] * total) return DET_NORMAL;
    o->excess = det_clamp01((used / total - rc->p[P_FRAC]) / (1 - rc->p[P_FRAC] + 1e-9));
    o->why = mp_why;
    o->a[0] = total;
    return DET_ANOMALY;
}

const struct det_ops det_mem_pressure = {
    .name = "memory_pressure", .scope = DS_GPU, .params = params, .configure = mp_configure, .update = mp_update,
};
