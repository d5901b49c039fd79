/* incident.c - one incident per fault: the episodes of several rules on one
 * GPU (or one host, for host-level rules) that overlap in time are grouped
 * into an incident with its own id, start, end, peak risk, severity and the
 * list of contributing rules, emitted as records of their own (event.dataset
 * gpu.incident, rule.id gpu.incident, event.type start / end). An incident
 * starts with the first episode that opens while the GPU has no incident
 * and ends INC_HOLD_MS after the last of its episodes ended with no new one
 * opening meanwhile (an episode that opens within that time joins it: a
 * fault's early sign that clears before its later symptoms open, or rules
 * flapping out of phase in a storm, stay one incident). Its state lives in
 * the GPU (struct ent_incident, 64 bytes); the engine owns it. */
#include "incident.h"
#include "../parsers/xid_catalog.h"

#include <stdio.h>
#include <string.h>

#define INC_HOLD_MS 120000LL   /* quiet time after the last episode before the incident is over */

/* The rule of the current profile with hash h, or NULL (changed by a reload). */
static const struct rule_cfg *rule_of(const struct engine *e, uint32_t h)
{
    for (size_t i = 0; i < e->prof->nrules; i++)
        if (eng_name_hash(e->prof->rules[i].id) == h) return &e->prof->rules[i];
    return NULL;
}

#define PROC_RECENT_MS 300000LL   /* a process seen this long before an incident's start was on the GPU then */

/* The processes of x that were on the GPU from `from` to `to` (seen within
 * PROC_RECENT_MS before from, or at any time up to to), most active first,
 * into r: anomaly.processes ("python (pid 24567, C, SM 97 %, 40950 MiB);
 * ..."), anomaly.process_count, and the first one's process.pid and
 * process.name. Nothing when none is known. */
static void add_processes(struct event *r, const struct ent *x, int64_t from, int64_t to)
{
    if (!x->procs || !x->nprocs) return;
    const struct ent_proc *pick[ENT_PROCS];
    unsigned n = 0;
    for (unsigned i = 0; i < x->nprocs; i++) {
        const struct ent_proc *p = &x->procs[i];
        if (p->last >= from - PROC_RECENT_MS && p->first <= to) pick[n++] = p;
    }
    if (!n) return;
    for (unsigned i = 1; i < n; i++)                 /* most active first: SM, then memory */
        for (unsigned j = i; j > 0; j--) {
            const struct ent_proc *a = pick[j - 1], *b = pick[j];
            if (a->sm > b->sm || (a->sm == b->sm && a->mem >= b->mem)) break;
            pick[j - 1] = b;
            pick[j] = a;
        }
    char list[400];
    size_t o = 0;
    list[0] = '\0';
    for (unsigned i = 0; i < n && o < sizeof list - 1; i++) {
        const struct ent_proc *p = pick[i];
        char part[120], pid[24] = "", sm[24] = "", mem[24] = "", type[12] = "";
        if (p->pid >= 0) snprintf(pid, sizeof pid, "pid %d", p->pid);
        if (p->type[0]) snprintf(type, sizeof type, ", %s", p->type);
        if (p->sm >= 0) snprintf(sm, sizeof sm, ", SM %.0f %%", p->sm);
        if (p->mem >= 0) snprintf(mem, sizeof mem, ", %.0f MiB", p->mem);
        int k = snprintf(part, sizeof part, "%s%s (%s%s%s%s)", i ? "; " : "", p->name[0] ? p->name : "?", pid, type, sm, mem);
        if (k < 0) break;
        if (o + (size_t)k >= sizeof list) break;
        memcpy(list + o, part, (size_t)k + 1);
        o += (size_t)k;
    }
    event_add_str(r, "anomaly.processes", list, o);
    event_add_int(r, "anomaly.process_count", n);
    if (pick[0]->pid >= 0) event_add_int(r, "process.pid", pick[0]->pid);
    if (pick[0]->name[0]) event_add_str(r, "process.name", pick[0]->name, strlen(pick[0]->name));
}

/* Writes the incident's start or end record for GPU x. */
static void inc_emit(struct engine *e, struct ent *x, int type, const char *first_reason, int64_t ts)
{
    struct ent_incident *in = &x->inc;
    struct event *r = eng_alert_begin(e, x, "gpu.incident", ts);
    struct hash128 h;
    hash128_init(&h);
    hash128_feed(&h, x->host->name, strlen(x->host->name) + 1);
    hash128_feed_u64(&h, (uint64_t)(int64_t)x->gpu);
    hash128_feed(&h, "gpu.incident", sizeof "gpu.incident");
    hash128_feed_u64(&h, (uint64_t)(int64_t)in->id_hour);
    hash128_feed_u64(&h, in->id_n);
    char incid[33];
    hash128_hex(&h, incid);
    hash128_feed_u64(&h, (uint64_t)type);
    if (type == REC_CHANGE) hash128_feed_u64(&h, (uint64_t)(int64_t)in->act);   /* one change record per action */
    hash128_hex(&h, r->id);
    eng_alert_head(r, x, type, "gpu.incident", "GPU incident", in->start, in->last, in->peak_risk, in->sev);
    event_add_str(r, "anomaly.incident_id", incid, 32);
    event_add_num(r, "anomaly.peak_risk_score", in->peak_risk);
    /* the contributing rules, by id and by name */
    char ids[256], names[320];
    size_t ni = 0, nn = 0;
    ids[0] = names[0] = 0;
    for (unsigned i = 0; i < in->nrules; i++) {
        const struct rule_cfg *rc = rule_of(e, in->rule_hash[i]);
        if (!rc) continue;
        int k = snprintf(ids + ni, sizeof ids - ni, "%s%s", ni ? "," : "", rc->id);
        if (k > 0 && (size_t)k < sizeof ids - ni) ni += (size_t)k;
        k = snprintf(names + nn, sizeof names - nn, "%s%s", nn ? ", " : "", rc->name);
        if (k > 0 && (size_t)k < sizeof names - nn) nn += (size_t)k;
    }
    event_add_str(r, "anomaly.rules", ids, ni);
    add_processes(r, x, in->start, type == REC_END ? in->last : ts);
    if (in->act >= 0) {
        const char *an = gl_action_name((enum gl_action)in->act);
        event_add_str(r, "anomaly.action", an, strlen(an));
        event_add_str(r, "anomaly.action_reason", in->act_why, strlen(in->act_why));
    }
    event_add_int(r, "anomaly.rule_count", in->nrules + in->more);
    char who[96], reason[480];
    struct det_ctx cx = { .e = x, .h = x->host };
    det_who(&cx, who, sizeof who);
    if (type == REC_START) {
        snprintf(reason, sizeof reason, "incident on %s: %s", who, first_reason && *first_reason ? first_reason : names);
    } else if (type == REC_CHANGE) {
        snprintf(reason, sizeof reason, "incident on %s now needs: %s (%s)", who,
                 gl_action_text((enum gl_action)in->act), in->act_why);
    } else {
        double secs = (double)(in->last - in->start) / 1000.0;
        event_add_num(r, "anomaly.duration_s", secs < 0 ? 0 : secs);
        snprintf(reason, sizeof reason, "incident on %s over after %.0f s: %u rule%s (%s%s), peak risk %.0f", who,
                 secs < 0 ? 0 : secs, in->nrules + in->more, in->nrules + in->more == 1 ? "" : "s", names,
                 in->more ? ", ..." : "", in->peak_risk);
    }
    event_add_str(r, "event.reason", reason, strlen(reason));
    if (e->emit) e->emit(e->emit_ctx, r);
}

void inc_note(struct engine *e, struct ent *x, int type, const struct rule_cfg *rc, int64_t start, const char *reason,
              double risk, int sev, int64_t ts, int act, const char *act_why)
{
    if (!e->prof->incidents) {
        /* a reload turned incidents off: forget x's, or its stale count
         * would hold the next incident open after they are turned on */
        if (x->inc.open) memset(&x->inc, 0, sizeof x->inc);
        return;
    }
    struct ent_incident *in = &x->inc;
    if (type == REC_START) {
        if (!in->open) {
            /* numbered like episodes (episode.c): the n-th incident of this
             * GPU this engine saw start in that UTC hour, so a cold start
             * that re-opens it in the same hour gives it the same id */
            int32_t hour = eng_hour_of(start);
            in->id_n = in->id_hour == hour && in->id_n < 254 && (in->start || in->last) ? in->id_n + 1 : 0;
            in->id_hour = hour;
            in->start = start;
            in->peak_risk = 0;
            in->sev = 0;
            in->nrules = in->more = 0;
            in->open_eps = 0;
            in->act = -1;
            in->act_why[0] = '\0';
        }
        in->open_eps++;
        uint32_t h = eng_name_hash(rc->id);
        unsigned i = 0;
        while (i < in->nrules && in->rule_hash[i] != h) i++;
        if (i == in->nrules) {
            if (in->nrules < INC_RULES) in->rule_hash[in->nrules++] = h;
            else if (in->more < 255) in->more++;
        }
    }
    if (risk > in->peak_risk) in->peak_risk = (float)risk;
    if (sev > in->sev) in->sev = (int8_t)sev;
    if (ts > in->last) in->last = ts;
    int raised = type == REC_START && act > in->act;
    if (raised) {
        in->act = (int8_t)act;
        snprintf(in->act_why, sizeof in->act_why, "%s", act_why ? act_why : "");
    }
    if (type == REC_START && !in->open) {
        in->open = 1;
        inc_emit(e, x, REC_START, reason, ts);
    } else if (raised && in->open) {
        inc_emit(e, x, REC_CHANGE, reason, ts);    /* the incident now needs more (an Xid after the heat) */
    } else if (type == REC_END && in->open && in->open_eps) {
        in->open_eps--;          /* the last one: quiet from in->last on (inc_tick) */
    }
}

void inc_tick(struct engine *e, struct ent *x, int64_t ts)
{
    struct ent_incident *in = &x->inc;
    int64_t hold = (int64_t)(10 * x->interval_ms);
    if (hold < INC_HOLD_MS) hold = INC_HOLD_MS;
    if (!in->open || in->open_eps || ts - in->last < hold) return;
    inc_emit(e, x, REC_END, NULL, ts);
    in->open = 0;
}
