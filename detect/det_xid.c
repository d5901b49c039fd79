/* det_xid.c - kernel events: every Xid/SXid is an anomaly with its catalog
 * severity; a burst folds into one episode that resolves after the rule's
 * cooldown without a new event (judged on the host's event time). */
#include "detector.h"
#include "../core/event.h"

#include <stdio.h>
#include <string.h>

struct xid_st { uint32_t count; int max_sev; int last_code; };

static const struct det_param params[] = {
    { NULL, 0, NULL },
};

static int sev_of(const char *s, size_t n)
{
    if (!s) return 2;
    if (n == 4 && !memcmp(s, "info", 4)) return 1;
    if (n == 8 && !memcmp(s, "critical", 8)) return 3;
    return 2;
}

static int xid_update(const struct rule_cfg *rc, void *stp, const struct det_ctx *cx, struct det_out *o)
{
    (void)rc;
    struct xid_st *st = stp;
    if (!cx->open && !cx->ev) { st->count = 0; st->max_sev = 0; }
    if (!cx->ev) {
        o->value = st->count; o->score = st->count; o->severity = st->max_sev ? st->max_sev : 0;
        o->xid_code = st->last_code;
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
    if (!cx->open) { st->count = 0; st->max_sev = 0; }
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
    char who[96];
    det_who(cx, who, sizeof who);
    int n = snprintf(o->reason, sizeof o->reason, "%s reported %s %.0f", who, key[4] == 's' ? "SXid" : "Xid", code);
    if (name && n > 0) n += snprintf(o->reason + n, sizeof o->reason - n, " (%s)", namebuf);
    if ((size_t)n < sizeof o->reason)
        n += snprintf(o->reason + n, sizeof o->reason - n, ", %s", sevbuf);
    if (st->count > 1 && (size_t)n < sizeof o->reason)
        snprintf(o->reason + n, sizeof o->reason - n, "; %u kernel events in this episode", st->count);
    return DET_ANOMALY;
}

const struct det_ops det_xid = {
    .name = "xid", .scope = DS_EVENT, .default_metric = "gpu.xid.code", .state_size = sizeof(struct xid_st), .params = params, .update = xid_update,
};
