/* det_peer.c - peer comparison: a GPU departing from the other GPUs of its
 * host at the same sample time (a straggler in a data-parallel job). Only
 * judged when most peers agree with each other (so two different jobs on
 * one host are not compared) and, optionally, when the GPU and nearly all
 * of its peers are under load. Peers are the GPUs of the same job as far
 * as the telemetry tells: with `same_fb` set, only GPUs whose framebuffer
 * use is within that fraction of this GPU's (replicas of one data-parallel
 * job hold about the same memory; an inference server beside a training
 * job, or idle GPUs, do not), so half a node idle or running another job
 * neither hides a straggler nor makes one. Peers are of the same GPU model
 * (gpu.name: a 4090 beside a 4080 on one workstation is no peer of it);
 * where the input names no model the reason says the comparison assumed
 * one. With `same_util`, only GPUs whose utilisation is within that many
 * points of this GPU's (a training GPU beside one at half load runs cooler
 * and lower, rightly). An open episode ends only on a verdict that
 * the GPU is back within rel/2 of its peers; samples that cannot be judged
 * (peers disagree or idle, the GPU idle or not reporting) keep it open. */
#include "detector.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct det_param params[] = {
    { "rel", 0.15, 0, 1e3, 0, "departure from the peer median, as a fraction of it" },
    { "min_abs", 0, 0, DET_PARAM_MAX, 0, "and at least this many metric units" },
    { "agree", 0.75, 0, 1, DP_LO_OPEN, "share of peers that must lie within `tight` of their median" },
    { "tight", 0.05, 0, 1e3, 0, "relative band around the peer median" },
    { "min_peers", 3, 1, 64, DP_WHOLE, "peers needed" },
    { "busy_util", 50, 0, 100, 0, "judge only GPUs at or above this utilisation (0 = always)" },
    { "direction", 0, -1, 1, DP_WHOLE, "+1 only above peers, -1 only below, 0 both" },
    { "min_busy_frac", 0.8, 0, 1, 0, "with busy_util: busy peers must be at least this share of the reporting peers (of its job)" },
    { "same_fb", 0.08, 0, 10, 0, "peers: framebuffer use within this fraction of the GPU's (0 = every GPU of the host)" },
    { "same_util", 0, 0, 100, 0, "peers: utilisation within this many points of the GPU's (0 = any)" },
    { NULL, 0, 0, 0, 0, NULL },
};
/* the parameters above, by name (the same order) */
enum { P_REL, P_MIN_ABS, P_AGREE, P_TIGHT, P_MIN_PEERS, P_BUSY_UTIL, P_DIRECTION, P_MIN_BUSY_FRAC, P_SAME_FB, P_SAME_UTIL,
       P__COUNT };

static int peer_configure(struct rule_cfg *rc, struct profile_slots *ps, char *err, size_t errlen)
{
    /* each parameter's range is checked at load; together: a limit of 0
     * would call every GPU a straggler, a flat fleet included */
    if (!(rc->p[P_REL] > 0 || rc->p[P_MIN_ABS] > 0)) {
        snprintf(err, errlen, "rule %s: rel or min_abs must be above 0", rc->id);
        return GL_ERROR;
    }
    rc->aux[0] = rc->p[P_BUSY_UTIL] > 0 || rc->p[P_SAME_UTIL] > 0 ? profile_slot(ps, "gpu.utilization.gpu.pct", 0) : -1;
    rc->aux[1] = rc->p[P_SAME_FB] > 0 ? profile_slot(ps, "gpu.memory.framebuffer.used_size", 0) : -1;
    return GL_OK;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* 1 when GPU p's framebuffer use moved by more than band over its window
 * (a job loading its model: its group is not settled yet). */
static int fb_moving(const struct ent *p, int slot, double band)
{
    const struct win *w = ent_win(p, slot);
    return w && win_count(w) >= 2 && win_max(w) - win_min(w) > band;
}

/* Sorts v[0..n) ascending: in place for a host's few GPUs (qsort's merge
 * sort with a callback per compare cost more than the rule; both keep equal
 * values in order, so the result is the same), qsort for large hosts. */
static void sort_peers(double *v, size_t n)
{
    if (n > 32) { qsort(v, n, sizeof v[0], cmp_d); return; }
    for (size_t i = 1; i < n; i++) {
        double x = v[i];
        size_t j = i;
        for (; j > 0 && v[j - 1] > x; j--) v[j] = v[j - 1];
        v[j] = x;
    }
}

/* Sorts v[0..n) and says whether at least share `agree` of it lies within
 * rel x |median| (at least abs_min) of the median; the median in *med. */
static int peer_agree(double *v, size_t n, double rel, double abs_min, double agree, double *med)
{
    if (n == 0) return 0;   /* no peers: no median, nothing agrees */
    sort_peers(v, n);
    double m = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    double band = rel * fabs(m);
    if (band < abs_min) band = abs_min;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) if (fabs(v[i] - m) <= band) k++;
    if (med) *med = m;
    return k >= agree * n;
}

/* The reason of a straggler (s: metric; value, npeers, peer_median; a: deviation). */
static void peer_why(const struct det_out *o, const char *who, char *buf, size_t n)
{
    const char *label, *unit;
    metric_label(o->s[0], &label, &unit);
    double dev = o->a[0];
    snprintf(buf, n, "%s: %s %.4g%s, %.3g%s %s the median of its %zu peers (%.4g%s)%s: a straggler",
             who, label, o->value, unit, fabs(dev), unit, dev > 0 ? "above" : "below", (size_t)o->npeers,
             o->peer_median, unit, o->a[1] > 0 ? " (the input names no GPU model: peers assumed alike)" : "");
}

static int peer_update(const struct rule_cfg *rc, void *st, const struct det_ctx *cx, struct det_out *o)
{
    (void)st;
    const struct ent *e = cx->e;
    double v, u = 0;
    if (e->gpu < 0 || e->last_ts != cx->ts || !ent_val(e, rc->slot, &v)) return cx->open ? DET_HOLD : DET_UNKNOWN;
    int have_u = rc->aux[0] >= 0 && ent_val(e, rc->aux[0], &u);
    if (rc->p[P_BUSY_UTIL] > 0 && (!have_u || u < rc->p[P_BUSY_UTIL])) return cx->open ? DET_HOLD : DET_UNKNOWN;
    int assumed = !e->model;
    double vals[64], fbs[64], fb = 0, pfb = 0;
    int by_fb = rc->aux[1] >= 0 && ent_val(e, rc->aux[1], &fb);
    double fb_band = rc->p[P_SAME_FB] * fb;
    if (fb_band < 1024) fb_band = 1024;   /* MiB: small jobs differ by allocator noise */
    if (by_fb && fb_moving(e, rc->aux[1], fb_band)) return cx->open ? DET_HOLD : DET_UNKNOWN;
    size_t n = 0, reporting = 0;
    for (size_t i = 0; i < cx->npeers && n < 64; i++) {
        const struct ent *p = cx->peers[i];
        double pv, pu;
        if (p == e || !ent_val(p, rc->slot, &pv)) continue;
        if (e->model && p->model && strcmp(e->model, p->model)) continue;   /* another model */
        if (!p->model) assumed = 1;
        if (by_fb && (!ent_val(p, rc->aux[1], &pfb) || fabs(pfb - fb) > fb_band || fb_moving(p, rc->aux[1], fb_band)))
            continue;   /* another job, or one loading its model */
        reporting++;
        int have_pu = rc->aux[0] >= 0 && ent_val(p, rc->aux[0], &pu);
        if (rc->p[P_BUSY_UTIL] > 0 && (!have_pu || pu < rc->p[P_BUSY_UTIL])) continue;
        if (rc->p[P_SAME_UTIL] > 0 && have_u && have_pu && fabs(pu - u) > rc->p[P_SAME_UTIL]) continue;   /* another load */
        fbs[n] = pfb;
        vals[n++] = pv;
    }
    if (n == 0 || n < rc->p[P_MIN_PEERS]) return cx->open ? DET_HOLD : DET_UNKNOWN;
    /* the peers' memory must agree too, all of it: GPUs of two jobs that happen to
     * lie within the band of this one are no peer group */
    if (by_fb && !peer_agree(fbs, n, rc->p[P_SAME_FB] * 0.6, 512, 1, NULL))
        return cx->open ? DET_HOLD : DET_UNKNOWN;
    /* when part of the host is idle (another job's GPUs stalled or done),
     * the busy peers may be a different job: no verdict */
    if (rc->p[P_BUSY_UTIL] > 0 && n < rc->p[P_MIN_BUSY_FRAC] * reporting) return cx->open ? DET_HOLD : DET_UNKNOWN;
    double med;
    if (!peer_agree(vals, n, rc->p[P_TIGHT], 0, rc->p[P_AGREE], &med)) return cx->open ? DET_HOLD : DET_UNKNOWN;
    double dev = v - med, lim = rc->p[P_REL] * fabs(med);
    if (lim < rc->p[P_MIN_ABS]) lim = rc->p[P_MIN_ABS];
    /* a straggler stands alone: a peer half as far out on the same side
     * makes this a subgroup (another job, a hotter corner of the chassis),
     * not one GPU holding back the others */
    for (size_t i = 0; i < n; i++)
        if ((vals[i] - med) * (dev > 0 ? 1 : -1) >= lim / 2 && fabs(dev) >= lim / 2) return cx->open ? DET_HOLD : DET_UNKNOWN;
    if (cx->open) lim /= 2;     /* clear level */
    o->value = v; o->npeers = (int)n; o->peer_median = med; o->lo = med - lim; o->hi = med + lim;
    o->score = med != 0 ? dev / fabs(med) : dev;
    if (fabs(dev) < lim || dev == 0 || !det_direction_ok(dev, rc->p[P_DIRECTION])) return DET_NORMAL;
    o->excess = det_clamp01(fabs(dev) / lim - 1);
    o->why = peer_why;
    o->s[0] = rc->metric;
    o->a[0] = dev;
    o->a[1] = assumed;
    return DET_ANOMALY;
}

const struct det_ops det_peer = {
    .name = "peer", .scope = DS_HOST, .needs_metric = 1, .params = params, .configure = peer_configure, .update = peer_update,
};
