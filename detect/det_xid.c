/* det_xid.c - kernel events: every Xid/SXid is an anomaly with its catalog
 * severity; a burst folds into one episode that resolves after the rule's
 * cooldown without a new event (judged on the host's event time). An Xid
 * that means the GPU is gone (79, fallen off the bus) keeps its episode open
 * while the GPU (for an Xid without a GPU: any GPU of the host) sends no
 * metric sample for more than `gone_s`. */
#include "detector.h"
#include "../core/event.h"

#include <stdio.h>
#include <string.h>

struct xid_st { uint32_t count; int max_sev; int last_code; int gone; };

static const struct det_param params[] = {
    { "gone_s", 5, 0, DP_DAYS365, 0, "after an Xid 79, a GPU without a sample for this long is still gone" },
    { NULL, 0, 0, 0, 0, NULL },
};
/* the parameters above, by name (the same order) */
enum { P_GONE_S, P__COUNT };

/* 1 while the GPU the episode is about (or, host-level, any GPU of the host)
 * has sent no metric sample for more than gone_ms at time ts. */
static int gpu_gone(const struct det_ctx *cx, int64_t gone_ms)
{
    if (cx->e->gpu >= 0) return cx->e->nsamples && cx->e->last_ts < cx->ts - gone_ms;
    for (const struct ent *x = cx->h->ents; x; x = x->next)
        if (x->gpu >= 0 && x->nsamples && x->last_ts < cx->ts - gone_ms) return 1;
    return 0;
}

static int sev_of(const char *s, size_t n)
{
    if (!s) return 2;
    if (n == 4 && !memcmp(s, "info", 4)) return 1;
    if (n == 8 && !memcmp(s, "critical", 8)) return 3;
    return 2;
}

/* The reason of a GPU gone after Xid 79. */
static void xid_gone_why(const struct det_out *o, const char *who, char *buf, size_t n)
{
    (void)o;
    snprintf(buf, n, "%s: GPU still gone after Xid 79 (fallen off the bus)", who);
}

/* The reason of a kernel event (value: code; xid_key, xid_name, xid_sev;
 * a: events in the episode). */
static void xid_why(const struct det_out *o, const char *who, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s reported %s %.0f", who, o->xid_key[4] == 's' ? "SXid" : "Xid", o->value);
    if (o->xid_name && n > 0) n += snprintf(buf + n, len - n, " (%s)", o->xid_name);
    if ((size_t)n < len) n += snprintf(buf + n, len - n, ", %s", o->xid_sev);
    if (o->a[0] > 1 && (size_t)n < len) snprintf(buf + n, len - n, "; %u kernel events in this episode", (unsigned)o->a[0]);
}

static int xid_update(const struct rule_cfg *rc, void *stp, const struct det_ctx *cx, struct det_out *o)
{
    struct xid_st *st = stp;
    if (!cx->open && !cx->ev) { st->count = 0; st->max_sev = 0; st->gone = 0; }
    if (!cx->ev) {
        o->value = st->count; o->score = st->count; o->severity = st->max_sev ? st->max_sev : 0;
        o->xid_code = st->last_code;
        if (cx->open && st->gone && gpu_gone(cx, (int64_t)(rc->p[P_GONE_S] * 1000))) {
            o->excess = det_clamp01(st->count / 10.0);
            o->why = xid_gone_why;
            return DET_ANOMALY;
        }
        return DET_NORMAL;
    }
    const struct event *ev = cx->ev;
    double code = -1;
    const char *key = "gpu.xid";
    if (!event_get_num(ev, "gpu.xid.code", &code) && event_get_num(ev, "gpu.sxid.code", &code)) key = "gpu.sxid";
    size_t sn = 0, nn = 0;
    const char *sv = event_get_str(ev, "gpu.xid.severity", &sn);
    if (!sv) sv = event_get_str(ev, "gpu.sxid.severity", &sn);
    const char *name = event_get_str(ev, "gpu.xid.name", &nn);
    if (!name) name = event_get_str(ev, "gpu.sxid.name", &nn);
    int sev = sev_of(sv, sn);
    double esev;
    if (!sv && event_get_num(ev, "event.severity", &esev) && esev >= 1 && esev <= 3) sev = (int)esev;
    if (!cx->open) { st->count = 0; st->max_sev = 0; st->gone = 0; }
    if ((int)code == 79 && key[4] != 's') st->gone = 1;
    st->count++;
    if (sev > st->max_sev) st->max_sev = sev;
    st->last_code = (int)code;
    o->value = code; o->score = st->count; o->severity = st->max_sev; o->excess = det_clamp01(st->count / 10.0);
    o->xid_code = (int)code; o->xid_key = key;
    static __thread char namebuf[64], sevbuf[16];
    snprintf(namebuf, sizeof namebuf, "%.*s", (int)(nn < 63 ? nn : 63), name ? name : "");
    snprintf(sevbuf, sizeof sevbuf, "%s", sev == 3 ? "critical" : sev == 1 ? "info" : "warning");
    o->xid_name = name ? namebuf : NULL;
    o->xid_sev = sevbuf;
    o->metric = code >= 0 ? (key[4] == 's' ? "gpu.sxid.code" : "gpu.xid.code") : "gpu.xid";
    o->why = xid_why;
    o->a[0] = st->count;
    return DET_ANOMALY;
}

const struct det_ops det_xid = {
    .name = "xid", .scope = DS_EVENT, .default_metric = "gpu.xid.code", .state_size = sizeof(struct xid_st), .params = params, .update = xid_update,
};
