/* det_idle_power.c - idle power waste: no utilisation but a power draw far
 * above the idle level (a leaked context, a stuck clock state). The idle
 * level is the lowest power this GPU has drawn, or the median of its
 * peers' lowest when that is lower (a GPU wasting power from its first
 * sample on has never shown its own idle level); not a fraction of the
 * highest power, which on a 700 W board hides 170-235 W of waste. While a
 * job holds framebuffer memory, idling is a data-loader stall or a
 * checkpoint until it has lasted `held_s` (a stalled job keeps its clocks
 * and draws more than an empty GPU); an empty GPU is judged at once. */
#include "detector.h"

#include <math.h>
#include <stdio.h>

static const struct det_param params[] = {
    { "max_util", 2, 0, 100, 0, "utilisation (%) counted as idle" },
    { "min_frac", 0, 0, 1, 0, "power at least this fraction of the highest seen (0 = off)" },
    { "over_idle", 90, 0, 1e5, 0, "power at least this many watts above the idle level" },
    { "min_pmax", 100, 0, 1e5, 0, "ignore boards never seen above this many watts" },
    { "held_s", 60, 0, DP_DAYS365, 0, "with framebuffer memory held (> empty_mib), idle this long before judging" },
    { "empty_mib", 1024, 0, 1e9, 0, "framebuffer use at or below this counts as no job" },
    { NULL, 0, 0, 0, 0, NULL },
};
/* the parameters above, by name (the same order) */
enum { P_MAX_UTIL, P_MIN_FRAC, P_OVER_IDLE, P_MIN_PMAX, P_HELD_S, P_EMPTY_MIB, P__COUNT };

/* when the utilisation last became idle (0 = busy) */
struct ip_st { int64_t idle_since; };

static int ip_configure(struct rule_cfg *rc, struct profile_slots *ps, char *err, size_t errlen)
{
    (void)err; (void)errlen;
    rc->aux[0] = profile_slot(ps, "gpu.utilization.gpu.pct", 0);
    rc->aux[1] = profile_slot(ps, "gpu.power.usage", 0);
    rc->aux[2] = profile_slot(ps, "gpu.memory.framebuffer.used_size", 0);
    return GL_OK;
}

/* The idle level of GPU e: its lowest power, or its peers' median lowest
 * when that is lower. */
static double idle_level(const struct ent *e)
{
    float lows[32];
    size_t n = 0;
    if (e->host)
        for (const struct ent *p = e->host->ents; p && n < 32; p = p->next)
            if (p != e && p->pmin > 0) lows[n++] = p->pmin;
    if (n == 0) return e->pmin;
    for (size_t i = 1; i < n; i++) {   /* insertion sort: a host's handful of GPUs, on every sample */
        float v = lows[i];
        size_t j = i;
        for (; j > 0 && lows[j - 1] > v; j--) lows[j] = lows[j - 1];
        lows[j] = v;
    }
    double med = n % 2 ? lows[n / 2] : (lows[n / 2 - 1] + lows[n / 2]) / 2;
    return med < e->pmin ? med : e->pmin;
}

/* The reason of idle waste (value: power, lo: idle level; a: utilisation). */
static void ip_why(const struct det_out *o, const char *who, char *buf, size_t n)
{
    snprintf(buf, n, "%s draws %.0f W while idle (utilisation %.0f %%); its idle level is %.0f W",
             who, o->value, o->a[0], o->lo);
}

static int ip_update(const struct rule_cfg *rc, void *stp, const struct det_ctx *cx, struct det_out *o)
{
    struct ip_st *st = stp;
    double u, pw, fb;
    if (!ent_val(cx->e, rc->aux[0], &u) || !ent_val(cx->e, rc->aux[1], &pw)) return DET_UNKNOWN;
    if (u > rc->p[P_MAX_UTIL]) st->idle_since = 0;
    else if (!st->idle_since) st->idle_since = cx->ts;
    double pmax = cx->e->pmax, pmin = idle_level(cx->e);
    if (!(pmax > 0) || pmax < rc->p[P_MIN_PMAX]) return DET_UNKNOWN;   /* no power seen: no fraction of it */
    double lim = rc->p[P_MIN_FRAC] * pmax;
    if (pmin + rc->p[P_OVER_IDLE] > lim) lim = pmin + rc->p[P_OVER_IDLE];
    o->value = pw; o->metric_slot = rc->aux[1]; o->lo = pmin; o->hi = lim; o->score = pw - pmin;
    if (u > rc->p[P_MAX_UTIL] || pw < lim) return DET_NORMAL;
    /* a job's memory held: a stall until it has lasted held_s */
    if (!cx->open && ent_val(cx->e, rc->aux[2], &fb) && fb > rc->p[P_EMPTY_MIB] &&
        cx->ts - st->idle_since < rc->p[P_HELD_S] * 1000)
        return DET_NORMAL;
    o->excess = det_clamp01((pw - lim) / (pmax - lim + 1));
    o->why = ip_why;
    o->a[0] = u;
    return DET_ANOMALY;
}

/* A state read back from a snapshot is usable: its time gl_time_ok. */
static int ip_check(const struct rule_cfg *rc, const void *stp)
{
    (void)rc;
    return gl_time_ok(((const struct ip_st *)stp)->idle_since);
}

const struct det_ops det_idle_power = {
    .name = "idle_power", .scope = DS_GPU, .state_size = sizeof(struct ip_st), .params = params,
    .configure = ip_configure, .update = ip_update, .check = ip_check,
};
