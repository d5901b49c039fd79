/* det_missing.c - missing data: a GPU that stops reporting while the other
 * GPUs of its host keep going. Judged at each completed sample block of the
 * host in event time (not wall time), so replays of old files work. */
#include "detector.h"

#include <stdio.h>

static const struct det_param params[] = {
    { "after_s", 5, 0, DP_DAYS365, DP_LO_OPEN, "no sample for this long while peers report" },
    { NULL, 0, 0, 0, 0, NULL },
};
/* the parameters above, by name (the same order) */
enum { P_AFTER_S, P__COUNT };

/* The reason of a silent GPU (npeers: GPUs still reporting; a: gap). */
static void miss_why(const struct det_out *o, const char *who, char *buf, size_t n)
{
    size_t np = (size_t)o->npeers;
    snprintf(buf, n, "%s stopped reporting: no sample for %.0f s while %zu other GPU%s on the host kept reporting",
             who, o->a[0], np, np == 1 ? "" : "s");
}

static int miss_update(const struct rule_cfg *rc, void *st, const struct det_ctx *cx, struct det_out *o)
{
    (void)st;
    const struct ent *e = cx->e;
    if (e->gpu < 0 || !e->nsamples) return DET_UNKNOWN;
    double gap = (double)(cx->ts - e->last_ts) / 1000.0;
    o->value = gap > 0 ? gap : 0;
    o->lo = 0; o->hi = rc->p[P_AFTER_S];
    o->score = o->value;
    o->npeers = (int)cx->npeers;
    o->metric = "sample_age_s";
    /* a GPU sampled more slowly than after_s is missing after 3 of its intervals */
    double after = rc->p[P_AFTER_S], iv3 = 3 * ent_interval_ms(e, 0) / 1000.0;
    if (iv3 > after) after = iv3;
    o->hi = after;
    if (e->last_ts >= cx->ts || gap < after || cx->npeers == 0) return DET_NORMAL;
    o->excess = det_clamp01(gap / (10 * after));
    o->why = miss_why;
    o->a[0] = gap;
    return DET_ANOMALY;
}

const struct det_ops det_missing = {
    .name = "missing_data", .scope = DS_HOST, .default_metric = "sample_age_s", .params = params, .update = miss_update,
};
