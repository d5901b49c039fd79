/* det_clock_drop.c - clock drop under load: the SM clock well below the
 * clock this GPU sustains under load (a slowly decaying maximum learned
 * while utilisation is high). An open episode ends only when the clock is
 * back within drop/2 of that clock (frozen while the episode is open); while
 * the GPU is idle an open episode cannot be judged and stays open. */
#include "detector.h"

#include <math.h>
#include <stdio.h>

struct cd_st { double ref; uint32_t n; };

static const struct det_param params[] = {
    { "min_util", 50, 0, 100, 0, "utilisation (%) counted as under load" },
    { "drop", 0.2, 0, 1, DP_LO_OPEN | DP_HI_OPEN, "fraction below the learned clock counted as a drop" },
    { "decay", 0.99995, 0, 1, DP_LO_OPEN, "per-sample decay of the learned clock" },
    { "min_n", 30, 0, 1e9, DP_WHOLE, "loaded samples before deciding" },
    { NULL, 0, 0, 0, 0, NULL },
};
/* the parameters above, by name (the same order) */
enum { P_MIN_UTIL, P_DROP, P_DECAY, P_MIN_N, P__COUNT };

static int cd_configure(struct rule_cfg *rc, struct profile_slots *ps, char *err, size_t errlen)
{
    (void)err; (void)errlen;
    rc->aux[0] = profile_slot(ps, "gpu.clock.streaming_multiprocessor_frequency", 0);
    rc->aux[1] = profile_slot(ps, "gpu.utilization.gpu.pct", 0);
    return GL_OK;
}

/* The reason of a drop (a: clock, utilisation, learned clock). */
static void cd_why(const struct det_out *o, const char *who, char *buf, size_t n)
{
    snprintf(buf, n, "%s SM clock dropped to %.0f MHz under load (%.0f %% utilisation), %.0f %% below the %.0f MHz it sustains",
             who, o->a[0], o->a[1], 100 * o->score, o->a[2]);
}

static int cd_update(const struct rule_cfg *rc, void *stp, const struct det_ctx *cx, struct det_out *o)
{
    struct cd_st *st = stp;
    double clk, u;
    if (!ent_val(cx->e, rc->aux[0], &clk) || !ent_val(cx->e, rc->aux[1], &u)) return DET_UNKNOWN;
    if (u < rc->p[P_MIN_UTIL]) return cx->open ? DET_HOLD : DET_UNKNOWN;
    double ref = st->ref;
    int ready = st->n >= rc->p[P_MIN_N];
    /* the learned clock does not decay while a drop is open */
    /* a decay above 1 would grow the reference without end (refused at load) */
    double decay = det_clamp(rc->p[P_DECAY], 0, 1);
    if (!cx->open) st->ref = clk > st->ref * decay ? clk : st->ref * decay;
    else if (clk > st->ref) st->ref = clk;
    if (!isfinite(st->ref)) st->ref = clk;   /* never an infinite reference (decay <= 1 at load) */
    st->n++;
    if (!ready || !(ref > 0) || !isfinite(ref)) return DET_UNKNOWN;
    double drop = cx->open ? rc->p[P_DROP] / 2 : rc->p[P_DROP];
    o->value = clk; o->metric_slot = rc->aux[0]; o->lo = (1 - rc->p[P_DROP]) * ref; o->hi = ref;
    o->score = ref > 0 ? 1 - clk / ref : 0;
    if (clk > (1 - drop) * ref) return DET_NORMAL;
    o->excess = det_clamp01((o->score - drop) / (1 - drop));
    o->why = cd_why;
    o->a[0] = clk; o->a[1] = u; o->a[2] = ref;
    return DET_ANOMALY;
}

const struct det_ops det_clock_drop = {
    .name = "clock_drop", .scope = DS_GPU, .state_size = sizeof(struct cd_st), .params = params,
    .configure = cd_configure, .update = cd_update,
};
