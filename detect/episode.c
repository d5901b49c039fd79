/* episode.c - verdicts to episodes, episodes to anomaly records (see
 * engine.h); the engine's types are in engine_int.h. */
#include "engine_int.h"
#include "incident.h"
#include "action.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- records ----------------------------------------------------------- */

static const char *type_name[] = { "start", "change", "end" };

static double finite_or(double v, double d) { return isfinite(v) ? v : d; }

static double risk_of(int sev, double excess)
{
    static const double lo[] = { 0, 20, 45, 70 }, hi[] = { 0, 45, 70, 100 };
    if (sev < 1) sev = 1;
    if (sev > 3) sev = 3;
    double r = lo[sev] + (hi[sev] - lo[sev]) * det_clamp01(excess);
    return floor(r + 0.5);
}

#define HOUR_MS 3600000LL

int32_t eng_hour_of(int64_t ms)
{
    int64_t h = ms / HOUR_MS;
    if (ms < 0 && h * HOUR_MS != ms) h--;
    return (int32_t)h;
}

/* Numbers a newly opened episode within its start hour: the n-th episode
 * of this rule on this GPU that this engine saw start in that hour. */
static void episode_number(struct episode *ep)
{
    int32_t h = eng_hour_of(ep->start);
    if (ep->id_set && ep->id_hour == h) {
        if (ep->id_n < 254) ep->id_n++;
    } else {
        ep->id_hour = h;
        ep->id_n = 0;
        ep->id_set = 1;
    }
}

static void episode_key(struct hash128 *h, const struct rule_cfg *rc, const struct ent *x, const char *key_metric,
                        const struct episode *ep)
{
    hash128_init(h);
    hash128_feed(h, x->host->name, strlen(x->host->name) + 1);
    hash128_feed_u64(h, (uint64_t)(int64_t)x->gpu);
    hash128_feed(h, rc->id, strlen(rc->id) + 1);
    hash128_feed(h, key_metric, strlen(key_metric) + 1);
    hash128_feed_u64(h, (uint64_t)(int64_t)ep->id_hour);
    hash128_feed_u64(h, ep->id_n);
}

void eng_episode_id(const struct rule_cfg *rc, const struct ent *x, const char *key_metric,
                    const struct episode *ep, char out[33])
{
    struct hash128 h;
    episode_key(&h, rc, x, key_metric, ep);
    hash128_hex(&h, out);
}

void eng_alert_head(struct event *r, const struct ent *x, int type, const char *rule_id, const char *rule_name,
                    int64_t start, int64_t end, double risk, int sev)
{
    event_add_str(r, "event.type", type_name[type], strlen(type_name[type]));
    event_add_str(r, "rule.id", rule_id, strlen(rule_id));
    event_add_str(r, "rule.name", rule_name, strlen(rule_name));
    char tb[25];
    gl_fmt_ts(start, tb);
    event_add_str(r, "event.start", tb, 24);
    if (type == REC_END) {
        gl_fmt_ts(end, tb);
        event_add_str(r, "event.end", tb, 24);
    }
    event_add_int(r, "event.risk_score", (int64_t)risk);
    event_add_int(r, "event.severity", sev);
    if (x->gpu >= 0) event_add_int(r, "gpu.index", x->gpu);
    if (x->uuid) event_add_str(r, "gpu.uuid", x->uuid, strlen(x->uuid));
    /* the node's labels (rack, k8s_node, slurm_cluster, ...), for queries and the fleet stage */
    for (const char *p = x->host->labels, *lend = p ? p + x->host->labels_len : NULL; p && p < lend;) {
        const char *k = p, *v = k + strlen(k) + 1;
        event_add_str(r, k, v, strlen(v));
        p = v + strlen(v) + 1;
    }
}

struct event *eng_alert_begin(struct engine *e, const struct ent *x, const char *dataset, int64_t ts)
{
    struct event *r = &e->rec;
    event_reset(r);
    r->ts_ms = ts;
    r->kind = "alert";
    r->dataset = dataset;
    r->host = x->host->name;
    r->offset = -1;
    return r;
}

void eng_emit_record(struct engine *e, int type, const struct rule_cfg *rc, struct ent *x,
                     const char *key_metric, const char *metric, struct episode *ep, const struct det_out *o,
                     int sev, double risk, int64_t ts)
{
    struct event *r = eng_alert_begin(e, x, "gpu.anomaly", ts);
    /* record ids: the episode's start and end once each, whatever the
     * start time a cold start saw; a change by its number and time, so the
     * changes of a re-opened episode add to the first one's */
    struct hash128 h;
    char epid[33];
    episode_key(&h, rc, x, key_metric, ep);
    hash128_hex(&h, epid);
    hash128_feed_u64(&h, (uint64_t)type);
    if (type == REC_CHANGE) {
        hash128_feed_u64(&h, ep->seq);
        hash128_feed_u64(&h, (uint64_t)ts);
    }
    hash128_hex(&h, r->id);
    eng_alert_head(r, x, type, rc->id, rc->name, ep->start, ep->last_anom, risk, sev);
    event_add_str(r, "anomaly.metric", metric, strlen(metric));
    event_add_str(r, "anomaly.detector", rc->ops->name, strlen(rc->ops->name));
    event_add_num(r, "anomaly.value", finite_or(o->value, 0));
    if (o->lo <= o->hi && isfinite(o->lo) && isfinite(o->hi)) {
        event_add_num(r, "anomaly.expected_low", o->lo);
        event_add_num(r, "anomaly.expected_high", o->hi);
    }
    if (o->std >= 0 && isfinite(o->std) && isfinite(o->mean)) {
        event_add_num(r, "anomaly.window_mean", o->mean);
        event_add_num(r, "anomaly.window_std", o->std);
    }
    event_add_num(r, "anomaly.score", finite_or(o->score, 0));
    if (o->npeers) {
        event_add_int(r, "anomaly.peers", o->npeers);
        event_add_num(r, "anomaly.peer_median", finite_or(o->peer_median, 0));
    }
    event_add_num(r, "anomaly.peak_risk_score", ep->peak_risk);
    event_add_int(r, "anomaly.sequence", ep->seq);
    event_add_str(r, "anomaly.episode_id", epid, 32);
    if (o->xid_code >= 0 && o->xid_key) {
        int sx = o->xid_key[4] == 's';
        event_add_int(r, sx ? "gpu.sxid.code" : "gpu.xid.code", o->xid_code);
        if (o->xid_name) event_add_str(r, sx ? "gpu.sxid.name" : "gpu.xid.name", o->xid_name, strlen(o->xid_name));
        if (o->xid_sev) event_add_str(r, sx ? "gpu.sxid.severity" : "gpu.xid.severity", o->xid_sev, strlen(o->xid_sev));
    }
    char reason[320];
    if (type == REC_END) {
        char who[96];
        struct det_ctx cx = { .e = x, .h = x->host };
        det_who(&cx, who, sizeof who);
        double secs = (double)(ep->last_anom - ep->start) / 1000.0;
        snprintf(reason, sizeof reason, "%s: %s %s after %.0f s (peak risk %.0f)", who, rc->name,
                 e->reloading ? "ended by a configuration reload" : "resolved", secs < 0 ? 0 : secs, ep->peak_risk);
        event_add_num(r, "anomaly.duration_s", secs < 0 ? 0 : secs);
    } else {
        det_reason(o, x, rc->name, reason, sizeof reason);
    }
    event_add_str(r, "event.reason", reason, strlen(reason));
    /* what to do: chosen when the episode starts (action.c) */
    enum gl_action act = ACT_NONE;
    char act_why[96] = "";
    if (type == REC_START) {
        act = action_choose(e, x, rc, o, ep->start, act_why, sizeof act_why);
        const char *an = gl_action_name(act);
        event_add_str(r, "anomaly.action", an, strlen(an));
        event_add_str(r, "anomaly.action_reason", act_why, strlen(act_why));
    }
    if (type == REC_START) e->st.starts++;
    else if (type == REC_CHANGE) e->st.changes++;
    else e->st.ends++;
    if (e->emit) e->emit(e->emit_ctx, r);
    inc_note(e, x, type, rc, ep->start, reason, risk, sev, ts, act, act_why);
}

/* Applies one verdict to the rule's episode. */
void eng_judge(struct engine *e, const struct rule_cfg *rc, struct ent *x, const char *metric,
               unsigned char *inst, int64_t ts, struct det_ctx *cx)
{
    struct episode *ep = (struct episode *)inst;
    if (x->inc.open && !x->inc.open_eps) inc_tick(e, x, ts);   /* an incident gone quiet */
    struct det_out o;
    det_out_init(&o);
    cx->open = ep->open;
    int v = rc->ops->update(rc, inst + EP_SIZE, cx, &o);
    e->st.updates++;
    if (v == DET_ANOMALY && !det_out_finite(&o)) {
        /* never a NaN or an infinity in a record or its reason: the
         * verdict cannot be judged (counted, said once) */
        if (!e->st.nonfinite++)
            log_warn("msg=\"a detector gave a number that is not finite: verdict dropped\" rule=\"%s\" detector=%s",
                     rc->id, rc->ops->name);
        v = ep->open ? DET_HOLD : DET_UNKNOWN;
    }
    const char *m = o.metric ? o.metric : o.metric_slot >= 0 ? e->prof->slots.name[o.metric_slot] : metric;
    int sev = o.severity ? o.severity : rc->severity;
    double risk = risk_of(sev, o.excess);
    if (v == DET_ANOMALY) {
        if (ep->bad_run == 0) ep->first_bad = ts;
        if (ep->bad_run < 65535) ep->bad_run++;
        ep->good_run = 0;
        ep->last_anom = ts;
        if (!ep->open) {
            if (ep->bad_run >= rc->for_n) {
                /* storms: reopening soon after the last end doubles the
                 * cooldown (up to 16x), so a flapping fault stays one
                 * episode instead of one per flap; it wears off after a
                 * quiet rearm time (last_change holds the last end) */
                int64_t cd = rc->cooldown_ms, rearm = 4 * cd > 600000 ? 4 * cd : 600000;
                if (ep->id_set && ep->first_bad - ep->last_change <= rearm) {
                    if (ep->backoff < 4) ep->backoff++;
                } else {
                    ep->backoff = 0;
                }
                ep->open = 1;
                ep->start = ep->first_bad;
                episode_number(ep);
                ep->seq = 0;
                ep->peak_risk = (float)risk;
                ep->last_risk = (float)risk;
                ep->last_sev = (int8_t)sev;
                ep->last_change = ts;
                e->st.open++;
                eng_emit_record(e, REC_START, rc, x, metric, m, ep, &o, sev, risk, ts);
            }
        } else {
            if (risk > ep->peak_risk) ep->peak_risk = (float)risk;
            /* a rise in severity is always reported; score moves are rate-limited */
            if (sev > ep->last_sev || (risk >= ep->last_risk + 10 && ts - ep->last_change >= rc->change_ms)) {
                ep->seq++;
                ep->last_risk = (float)risk;
                ep->last_sev = (int8_t)sev;
                ep->last_change = ts;
                eng_emit_record(e, REC_CHANGE, rc, x, metric, m, ep, &o, sev, risk, ts);
            }
        }
    } else if (v == DET_HOLD) {
        /* the open episode's condition cannot be judged now: it stays open
         * and the clear count starts over */
        ep->bad_run = 0;
        ep->good_run = 0;
    } else {
        /* DET_UNKNOWN counts towards resolving an open episode (the rule no
         * longer applies) but never towards opening one */
        ep->bad_run = 0;
        if (ep->open) {
            if (ep->good_run < 65535) ep->good_run++;
            if (ep->good_run >= rc->clear_n && ts - ep->last_anom >= (rc->cooldown_ms << ep->backoff)) {
                ep->seq++;
                ep->open = 0;
                e->st.open--;
                eng_emit_record(e, REC_END, rc, x, metric, m, ep, &o, ep->last_sev, ep->last_risk, ts);
                ep->last_change = ts;
            }
        }
    }
}
