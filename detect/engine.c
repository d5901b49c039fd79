/* engine.c - see engine.h; the engine's types are in engine_int.h. */
#include "engine_int.h"
#include "../core/metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A GPU that sends several rows within one stamp (sub-second sampling with
 * whole-second stamps, two interleaved readers) or rows closer together
 * than half the profile's resolution_ms, three steps in a row (4 Hz with
 * fine stamps), has its rows folded into one sample per resolution step
 * (aligned to the epoch; the stamp itself when resolution_ms is 0): each
 * field's mean, rounded when every row gave an integer (an integer
 * temperature stays one); booleans true when any row said so; the
 * throttle bitmask the OR of the rows. The step's sample is judged when a
 * row of a later step comes (or at engine_flush), stamped at the step's
 * start: so rules that count samples count steps, and a 4 Hz input does
 * not open an episode four times as fast as its documented duration. A
 * repeated row (the same event.id) is a duplicate; rows of a step already
 * judged are folded away (counted). Once folding, a GPU stays folding.
 * ~1.2 KB, allocated for such GPUs only; not in snapshots (a restore loses
 * at most the pending step). */
struct fold {
    int64_t b;                   /* the pending step's start (valid when n) */
    int64_t done_b;              /* the step judged last */
    uint64_t last_id;            /* id hash of the pending step's newest row */
    uint32_t n;                  /* rows in the pending step */
    uint64_t present, nonint, bools;
    uint64_t mask_or;            /* gpu.throttling.reasons: OR of the rows */
    uint16_t cnt[ENG_MAX_SLOTS];
    double sum[ENG_MAX_SLOTS];   /* sum of numbers, max of booleans */
};



void eng_add_rule(struct rule_set *rs, int ri, size_t state_size)
{
    rs->idx = xrealloc(rs->idx, (rs->n + 1) * sizeof *rs->idx);
    rs->off = xrealloc(rs->off, (rs->n + 1) * sizeof *rs->off);
    rs->idx[rs->n] = ri;
    rs->off[rs->n] = rs->size;
    rs->size += EP_SIZE + ALIGN8(state_size);
    rs->n++;
}

/* Builds the list of SERIES rules for slot s (explicit ones, plus "*" rules
 * for slots that no rule names). */
void eng_slot_prepare(struct engine *e, int s)
{
    if (e->slot_ready[s]) return;
    struct profile *p = e->prof;
    for (size_t i = 0; i < p->nrules; i++) {
        const struct rule_cfg *rc = &p->rules[i];
        if (rc->ops->scope != DS_SERIES) continue;
        if (rc->slot == s || (rc->slot < 0 && e->slot_star[s])) eng_add_rule(&e->slot_rules[s], (int)i, rc->ops->state_size);
    }
    e->slot_ready[s] = 1;
}

struct engine *engine_new(struct profile *prof, engine_emit_fn emit, void *ctx)
{
    struct engine *e = xcalloc(1, sizeof *e);
    e->prof = prof;
    e->emit = emit;
    e->emit_ctx = ctx;
    for (size_t i = 0; i < prof->nrules; i++)
        if (prof->rules[i].ops->scope != DS_SERIES) eng_add_rule(&e->ent_rules, (int)i, prof->rules[i].ops->state_size);
    event_init(&e->rec);
    e->nhb = HBUCKETS;
    e->hb = xcalloc(e->nhb, sizeof *e->hb);
    e->newest_ts = INT64_MIN;
    e->mem = sizeof *e + e->nhb * sizeof *e->hb;
    return e;
}

static void init_states(struct engine *e, const struct rule_set *rs, unsigned char *block)
{
    for (size_t k = 0; k < rs->n; k++) {
        const struct rule_cfg *rc = &e->prof->rules[rs->idx[k]];
        if (rc->ops->init) rc->ops->init(rc, block + rs->off[k] + EP_SIZE);
    }
}

static void free_states(struct engine *e, const struct rule_set *rs, unsigned char *block)
{
    if (!block) return;
    for (size_t k = 0; k < rs->n; k++) {
        const struct rule_cfg *rc = &e->prof->rules[rs->idx[k]];
        if (rc->ops->free) rc->ops->free(block + rs->off[k] + EP_SIZE);
    }
    free(block);
}

/* ---- hosts and GPUs ---------------------------------------------------- */

struct host *eng_host_get(struct engine *e, const char *name, int tag)
{
    if (!name) name = "-";
    if (e->last_host && e->last_host->tag == tag && !strcmp(e->last_host->name, name)) return e->last_host;
    uint64_t h = hash64(name, strlen(name), 7 + (uint64_t)tag);
    if (e->st.hosts >= 2 * e->nhb) {   /* keep chains short: 200,000 hosts must not cost 800 compares each */
        size_t nn = e->nhb * 4;
        struct host **nb = xcalloc(nn, sizeof *nb);
        for (size_t i = 0; i < e->nhb; i++)
            for (struct host *x = e->hb[i], *nx; x; x = nx) {
                nx = x->next;
                x->next = nb[x->hash % nn];
                nb[x->hash % nn] = x;
            }
        e->mem += (nn - e->nhb) * sizeof *nb;
        free(e->hb);
        e->hb = nb;
        e->nhb = nn;
    }
    struct host **b = &e->hb[h % e->nhb];
    for (struct host *x = *b; x; x = x->next)
        if (x->hash == h && x->tag == tag && !strcmp(x->name, name)) return e->last_host = x;
    struct host *x = xcalloc(1, sizeof *x);
    x->name = xstrdup(name);
    x->hash = h;
    x->tag = tag;
    x->next = *b;
    *b = x;
    e->st.hosts++;
    e->mem += sizeof *x + strlen(name) + 1;
    return e->last_host = x;
}

/* The engine's LRU list of GPUs (eviction in O(1)): unlink, append. */
void eng_lru_unlink(struct engine *e, struct ent *x)
{
    if (x->lru_prev) x->lru_prev->lru_next = x->lru_next; else if (e->lru_head == x) e->lru_head = x->lru_next;
    if (x->lru_next) x->lru_next->lru_prev = x->lru_prev; else if (e->lru_tail == x) e->lru_tail = x->lru_prev;
    x->lru_prev = x->lru_next = NULL;
}

static void lru_append(struct engine *e, struct ent *x)
{
    x->lru_prev = e->lru_tail;
    x->lru_next = NULL;
    if (e->lru_tail) e->lru_tail->lru_next = x; else e->lru_head = x;
    e->lru_tail = x;
}

static void ent_free(struct engine *e, struct ent *x)
{
    eng_lru_unlink(e, x);
    for (size_t i = 0; i < x->nser; i++) {
        struct series *s = &x->ser[i];
        free(s->w);
        free_states(e, &e->slot_rules[s->slot], s->rstate);
        e->mem -= (s->w ? sizeof *s->w : 0) + e->slot_rules[s->slot].size;
    }
    e->st.series -= x->nser;
    e->mem -= x->capser * sizeof *x->ser + sizeof *x + e->ent_rules.size;
    free(x->ser);
    free_states(e, &e->ent_rules, x->rstate);
    free(x->uuid);
    free(x->bus_id);
    free(x->model);
    if (x->procs) e->mem -= ENT_PROCS * sizeof *x->procs;
    free(x->procs);
    if (x->fold) e->mem -= sizeof *x->fold;
    free(x->fold);
    free(x);
}

static void ent_remove(struct engine *e, struct ent *x)
{
    struct host *h = x->host;
    for (struct ent **pp = &h->ents; *pp; pp = &(*pp)->next)
        if (*pp == x) { *pp = x->next; break; }
    if (h->hint == x) h->hint = NULL;
    h->nents--;
    if (x->gpu >= 0) e->st.gpus--;
    e->st.evicted++;
    /* open episodes of an evicted GPU are dropped with it */
    for (size_t k = 0; k < e->ent_rules.n; k++) {
        struct episode *ep = (struct episode *)((unsigned char *)x->rstate + e->ent_rules.off[k]);
        if (ep->open) e->st.open--;
    }
    for (size_t i = 0; i < x->nser; i++) {
        const struct rule_set *rs = &e->slot_rules[x->ser[i].slot];
        for (size_t k = 0; k < rs->n; k++) {
            struct episode *ep = (struct episode *)((unsigned char *)x->ser[i].rstate + rs->off[k]);
            if (ep->open) e->st.open--;
        }
    }
    ent_free(e, x);
    if (!h->nents) {   /* a host with no GPU left goes too: host churn must not grow memory */
        struct host **pp = &e->hb[h->hash % e->nhb];
        while (*pp && *pp != h) pp = &(*pp)->next;
        if (*pp) *pp = h->next;
        if (e->last_host == h) e->last_host = NULL;
        e->st.hosts--;
        e->mem -= sizeof *h + strlen(h->name) + 1;
        free(h->name);
        free(h->labels);
        free(h);
    }
}

/* Makes room for one more series: evicts an idle GPU (idle_evict_ms of
 * event time behind the newest sample), else the least recently updated.
 * Returns 0 if nothing but `keep` could go. */
static int evict_one(struct engine *e, const struct ent *keep)
{
    /* the least recently updated GPUs are at the head: an idle one among
     * the first 64 (series, event time idle_evict_ms behind), else the head */
    int64_t idle_before = e->newest_ts > INT64_MIN + e->prof->idle_evict_ms ? e->newest_ts - e->prof->idle_evict_ms
                                                                            : INT64_MIN;   /* no sample yet */
    struct ent *victim = NULL;
    int k = 0;
    for (struct ent *x = e->lru_head; x && k < 64; x = x->lru_next, k++)
        if (x != keep && x->nser && x->last_ts < idle_before) { victim = x; break; }
    if (!victim) victim = e->lru_head != keep ? e->lru_head : keep->lru_next;
    if (!victim) return 0;
    int active = !(victim->nser && victim->last_ts < idle_before);
    if (active) {
        /* max_series is below the series that report: the detectors track
         * fewer GPUs than there are, each evicted one starts cold again.
         * Said once, counted always. */
        if (!e->st.evicted_active++)
            log_warn("msg=\"max_series reached: GPUs that still report are evicted and start cold again; raise max_series\" "
                     "max_series=%zu series=%llu gpus=%llu", e->prof->max_series, (unsigned long long)e->st.series,
                     (unsigned long long)e->st.gpus);
        metrics_inc_label(M_GPUS_EVICTED, "max_series");
    } else {
        metrics_inc_label(M_GPUS_EVICTED, "idle");
    }
    ent_remove(e, victim);
    return 1;
}

struct ent *eng_ent_get(struct engine *e, struct host *h, int gpu)
{
    /* samples come in GPU order: start from the last GPU found (O(1) for
     * 30,000 GPUs on one host instead of a walk from the first) */
    struct ent *hint = h->hint;
    if (hint && hint->gpu == gpu) return hint;
    struct ent **pp = hint && hint->gpu < gpu ? &hint->next : &h->ents;
    while (*pp && (*pp)->gpu < gpu) pp = &(*pp)->next;
    if (*pp && (*pp)->gpu == gpu) return h->hint = *pp;
    struct ent *x = xcalloc(1, sizeof *x);
    x->host = h;
    x->gpu = gpu;
    x->last_ts = INT64_MIN;
    if (e->ent_rules.size) {
        x->rstate = xcalloc(1, e->ent_rules.size);
        init_states(e, &e->ent_rules, x->rstate);
    }
    x->next = *pp;
    *pp = x;
    h->hint = x;
    lru_append(e, x);
    h->nents++;
    if (gpu >= 0) e->st.gpus++;
    e->mem += sizeof *x + e->ent_rules.size;
    return x;
}

/* 1 when a series of slot s needs a window: a multi-metric rule reads it
 * (need_win) or one of the slot's rules (rs) is not a no_window detector. */
int eng_slot_needs_window(const struct profile *p, const struct rule_set *rs, int s)
{
    if (p->slots.need_win[s]) return 1;
    for (size_t k = 0; k < rs->n; k++)
        if (!p->rules[rs->idx[k]].ops->no_window) return 1;
    return 0;
}

struct series *eng_series_get(struct engine *e, struct ent *x, int slot)
{
    if (x->sidx[slot]) return &x->ser[x->sidx[slot] - 1];
    if (e->st.series >= e->prof->max_series && !evict_one(e, x)) return NULL;
    eng_slot_prepare(e, slot);
    if (x->nser == x->capser) {
        size_t nc = x->capser ? x->capser * 2 : 4;
        x->ser = xrealloc(x->ser, nc * sizeof *x->ser);
        e->mem += (nc - x->capser) * sizeof *x->ser;
        x->capser = nc;
    }
    struct series *s = &x->ser[x->nser++];
    memset(s, 0, sizeof *s);
    s->slot = (uint16_t)slot;
    const struct rule_set *rs = &e->slot_rules[slot];
    if (eng_slot_needs_window(e->prof, rs, slot)) {
        s->w = xmalloc(sizeof *s->w);
        win_init(s->w, e->prof->win_cap, e->prof->win_span_ms);
        e->mem += sizeof *s->w;
    }
    if (rs->size) {
        s->rstate = xcalloc(1, rs->size);
        init_states(e, rs, s->rstate);
        e->mem += rs->size;
    }
    x->sidx[slot] = (unsigned char)x->nser;
    e->st.series++;
    return s;
}

/* ---- the sample path ---------------------------------------------------- */

static int key_slot(struct engine *e, const char *key, int numeric, int metric_event)
{
    size_t hi = ((uintptr_t)key >> 3) % KCACHE;
    struct kcache *c = &e->kc[hi];
    if (c->key == key && (c->slot < 0 || !strcmp(e->prof->slots.name[c->slot], key))) return c->slot;
    struct profile_slots *ps = &e->prof->slots;
    int slot = -1;
    for (size_t i = 0; i < ps->n; i++)
        if (!strcmp(ps->name[i], key)) { slot = (int)i; break; }
    if (slot < 0 && e->prof->star && numeric && metric_event) {
        static const char *const skip[] = { "gpu.index", "process.pid", "event.severity", "log.offset", NULL };
        int ok = strncmp(key, "gpu.mig.", 8) && strncmp(key, "gpu.xid.", 8) && strncmp(key, "gpu.sxid.", 9);
        for (size_t i = 0; ok && skip[i]; i++) if (!strcmp(skip[i], key)) ok = 0;
        if (ok) {
            slot = profile_slot(ps, key, 0);   /* a window only if its rules need one */
            if (slot >= 0) e->slot_star[slot] = 1;
        }
    }
    c->key = key;
    c->slot = slot;
    return slot;
}

static void host_block_done(struct engine *e, struct host *h, int64_t T);

/* Owns x->interval_ms: a running estimate of the GPU's sampling interval
 * from the step dt (ms) between its samples; each step moves it by at most a
 * factor of 2 weighted 1/16, so a gap or a burst barely moves it while a
 * real change of interval is followed within tens of samples. */
static void interval_update(struct ent *x, int64_t dt)
{
    double d = (double)dt, iv = x->interval_ms;
    if (!(iv > 0)) { x->interval_ms = (float)d; return; }
    if (d > 2 * iv) d = 2 * iv;
    if (d < iv / 2) d = iv / 2;
    x->interval_ms = (float)(iv + (d - iv) / 16);
}

/* A step longer than this is a gap: the profile's gap_s, or 3 observed
 * intervals for series sampled more slowly. */
static double gap_limit_ms(const struct engine *e, const struct ent *x)
{
    double g = 3 * ent_interval_ms(x, 0);
    return g > (double)e->prof->gap_ms ? g : (double)e->prof->gap_ms;
}

/* How far past a series' newest sample the next one may be: a row dated
 * 2099 must not move the series' clock (every later sample would be "out
 * of order"): six hours, or 100 sampling intervals for slow series. Before
 * the interval is known (one sample taken) the step that teaches it may be
 * up to 400 days: weekly, monthly and yearly series are learnt too (a fixed
 * 6 h refused every step of a weekly series, for ever). */
static double ahead_limit_ms(const struct engine *e, const struct ent *x)
{
    double g = x->interval_ms > 0 ? 100 * (double)x->interval_ms : 400 * 86400e3, lim = 6 * 3600e3;
    (void)e;
    return g > lim ? g : lim;
}

#define STEP_SAMPLES 5   /* consecutive samples that confirm a clock step */

/* A sample of x at ts outside the expected range (behind: before the
 * tolerance; else too far ahead). Refused and counted, unless it is the
 * STEP_SAMPLES-th in a row, each a little after the one before: then the
 * clock really stepped (NTP, a node's clock fixed or broken), and the GPU
 * re-anchors there (its windows start over; logged and counted). Returns 1
 * when the sample is to be taken. */
static int clock_step(struct engine *e, struct host *h, struct ent *x, int64_t ts, int behind)
{
    double near = 10 * ent_interval_ms(x, 0);
    if (near < (double)e->prof->gap_ms) near = (double)e->prof->gap_ms;
    if (near < 60000) near = 60000;
    if (x->step_n && ts > x->step_ts && (double)(ts - x->step_ts) <= near) x->step_n++;
    else x->step_n = 1;
    x->step_ts = ts;
    if (x->step_n < STEP_SAMPLES) {
        if (behind) { e->st.out_of_order++; metrics_inc_label(M_SAMPLES_DROPPED, "out_of_order"); }
        else { e->st.too_far_ahead++; metrics_inc_label(M_SAMPLES_DROPPED, "too_far_ahead"); }
        return 0;
    }
    log_warn("msg=\"event time stepped: the GPU's series re-anchored at the new time\" host=\"%s\" gpu=%d "
             "from_ms=%lld to_ms=%lld samples=%d", h->name, x->gpu, (long long)x->last_ts, (long long)ts, STEP_SAMPLES);
    e->st.clock_steps++;
    metrics_inc(M_CLOCK_STEPS);
    for (size_t i = 0; i < x->nser; i++)
        if (x->ser[i].w) win_clear(x->ser[i].w);
    x->last_ts = ts;
    x->step_n = 0;
    x->interval_ms = 0;
    if (h->have_block && ts < h->block_ts) h->have_block = 0;   /* the host's blocks follow the new time */
    return 1;
}

/* The time span of x's windows: the profile's window_span_s, or two full
 * windows of the observed interval for series sampled more slowly (so a
 * 5-minute series fills its window and warms up). Beyond 2^30 ms (12 days:
 * intervals over 4.6 h) a window keeps its last samples by count only: a
 * capped span held two samples of a weekly series and no rule warmed up. */
static uint32_t span_for(const struct engine *e, const struct ent *x)
{
    if (!e->prof->win_span_ms) return 0;      /* no time limit configured */
    double sp = 2.0 * e->prof->win_cap * ent_interval_ms(x, 0);
    if (sp < e->prof->win_span_ms) sp = e->prof->win_span_ms;
    return sp > 0x3fffffff ? 0 : (uint32_t)sp;
}

static void run_ent_rules(struct engine *e, struct ent *x, enum det_scope scope, struct det_ctx *cx, int64_t ts)
{
    const struct rule_set *rs = &e->ent_rules;
    for (size_t k = 0; k < rs->n; k++) {
        const struct rule_cfg *rc = &e->prof->rules[rs->idx[k]];
        if (rc->ops->scope != scope) continue;
        eng_judge(e, rc, x, rc->metric, (unsigned char *)x->rstate + rs->off[k], ts, cx);
    }
}

/* A process that ev shows on GPU x at ts (process.pid / process.name, with
 * pmon's or compute-apps' use): into x's table (detect/detector.h,
 * struct ent_proc), the least recently seen out when it is full. 1 when ev
 * named one. */
static int note_process(struct engine *e, struct ent *x, const struct event *ev, int64_t ts)
{
    double pid = -1, sm = -1, mem = -1;
    size_t nl = 0, tl = 0;
    const char *name = event_get_str(ev, "process.name", &nl);
    int have_pid = event_get_num(ev, "process.pid", &pid);
    if (!have_pid && !name) return 0;
    const char *type = event_get_str(ev, "gpu.process.type", &tl);
    event_get_num(ev, "gpu.process.utilization.sm.pct", &sm);
    event_get_num(ev, "gpu.process.memory.used_size", &mem);
    if (!x->procs) {
        x->procs = xcalloc(ENT_PROCS, sizeof *x->procs);
        e->mem += ENT_PROCS * sizeof *x->procs;
    }
    struct ent_proc *p = NULL;
    for (unsigned i = 0; i < x->nprocs; i++) {
        struct ent_proc *q = &x->procs[i];
        if ((have_pid && q->pid == (int32_t)pid) || (!have_pid && name && !strncmp(q->name, name, nl < 31 ? nl : 31))) {
            p = q;
            break;
        }
    }
    if (!p) {
        if (x->nprocs < ENT_PROCS) {
            p = &x->procs[x->nprocs++];
        } else {
            p = &x->procs[0];
            for (unsigned i = 1; i < x->nprocs; i++) if (x->procs[i].last < p->last) p = &x->procs[i];
        }
        memset(p, 0, sizeof *p);
        p->first = ts;
        p->pid = have_pid ? (int32_t)pid : -1;
        p->sm = p->mem = -1;
    }
    if (ts > p->last) p->last = ts;
    if (ts < p->first) p->first = ts;
    if (name && nl) snprintf(p->name, sizeof p->name, "%.*s", (int)nl, name);
    if (type && tl) snprintf(p->type, sizeof p->type, "%.*s", (int)tl, type);
    if (sm >= 0) p->sm = (float)sm;
    if (mem >= 0) p->mem = (float)mem;
    return 1;
}

#define HOST_LABELS 8

enum { EVF_LABELS = 1, EVF_PROCESS = 2 };

/* Which of the engine's side channels ev feeds: node labels (labels.*), a
 * process (process.*). One pass, a character compared per field: on every
 * sample. */
static unsigned ev_flags(const struct event *ev)
{
    unsigned fl = 0;
    for (size_t i = 0; i < ev->nf; i++) {
        const char *k = ev->f[i].key;
        if (k[0] == 'l' && !strncmp(k, "labels.", 7)) fl |= EVF_LABELS;
        else if (k[0] == 'p' && !strncmp(k, "process.", 8)) fl |= EVF_PROCESS;
    }
    return fl;
}

/* The labels.* fields of ev (a node's labels: rack, k8s_node, ...) kept on
 * its host for the records (at most HOST_LABELS, values cut at 127 bytes);
 * rebuilt only when they differ from what the host holds. */
static void host_labels(struct engine *e, struct host *h, const struct event *ev)
{
    char buf[HOST_LABELS * 200];
    size_t o = 0;
    int n = 0;
    for (size_t i = 0; i < ev->nf && n < HOST_LABELS; i++) {
        const struct ev_field *f = &ev->f[i];
        if (f->type != EV_STR || strncmp(f->key, "labels.", 7)) continue;
        size_t kl = strlen(f->key), vl = f->v.s.len > 127 ? 127 : f->v.s.len;
        if (kl > 64 || o + kl + vl + 2 > sizeof buf) continue;
        memcpy(buf + o, f->key, kl + 1);
        o += kl + 1;
        memcpy(buf + o, event_str(ev, f), vl);
        buf[o + vl] = '\0';
        o += vl + 1;
        n++;
    }
    if (!o) return;                      /* an event without labels (a kernel line) keeps the host's */
    if (o == h->labels_len && h->labels && !memcmp(buf, h->labels, o)) return;
    e->mem += o;
    e->mem -= h->labels_len;
    free(h->labels);
    h->labels = xmalloc(o);
    memcpy(h->labels, buf, o);
    h->labels_len = o;
}

static void feed_kernel(struct engine *e, const struct event *ev, int tag)
{
    struct host *h = eng_host_get(e, ev->host, tag);
    double g;
    int gpu = -1;
    if (event_get_num(ev, "gpu.index", &g)) gpu = (int)g;
    else {
        size_t bn;
        const char *bus = event_get_str(ev, "gpu.pci.bus_id", &bn);
        if (bus)
            for (struct ent *x = h->ents; x; x = x->next)
                if (x->bus_id && strlen(x->bus_id) == bn && !strncasecmp(x->bus_id, bus, bn)) { gpu = x->gpu; break; }
        size_t un;
        const char *uuid = gpu < 0 ? event_get_str(ev, "gpu.uuid", &un) : NULL;
        if (uuid)
            for (struct ent *x = h->ents; x; x = x->next)
                if (x->uuid && strlen(x->uuid) == un && !strncasecmp(x->uuid, uuid, un)) { gpu = x->gpu; break; }
    }
    struct ent *x = eng_ent_get(e, h, gpu);
    e->st.kernel_events++;
    unsigned fl = ev_flags(ev);
    if (fl & EVF_LABELS) host_labels(e, h, ev);
    if (fl & EVF_PROCESS) note_process(e, x, ev, ev->ts_ms);   /* an Xid line's pid= / name= */
    struct det_ctx cx = { .ts = ev->ts_ms, .e = x, .h = h, .slots = &e->prof->slots, .slot = -1, .ev = ev };
    run_ent_rules(e, x, DS_EVENT, &cx, ev->ts_ms);
}

void engine_feed(struct engine *e, const struct event *ev)
{
    engine_feed_tag(e, ev, 0);
}

/* Checks the time ts of a metric sample of x (host h) against x's last one:
 * a duplicate is dropped, a step beyond the tolerance goes to clock_step
 * (dropped or re-anchored), else lateness, gaps and the interval are
 * counted and learned. Returns 1 when the sample goes on, 0 when dropped. */
static int sample_time_ok(struct engine *e, struct host *h, struct ent *x, int64_t ts)
{
    if (!x->nsamples) return 1;
    if (ts == x->last_ts) { e->st.duplicates++; metrics_inc_label(M_SAMPLES_DROPPED, "duplicate"); return 0; }
    int behind = ts < x->last_ts - e->prof->ooo_tol_ms;
    if (behind || (double)(ts - x->last_ts) > ahead_limit_ms(e, x))
        return clock_step(e, h, x, ts, behind);   /* else re-anchored at ts */
    x->step_n = 0;
    if (ts < x->last_ts) {
        e->st.late_within_tolerance++;
    } else {
        int64_t dt = ts - x->last_ts;
        /* the first step only teaches the interval */
        if (x->interval_ms > 0 && (double)dt > gap_limit_ms(e, x)) e->st.gaps++;
        interval_update(x, dt);
    }
    return 1;
}

/* The values of the sample ev into x->val and x->present (finite numbers
 * and booleans, by slot); the first uuid and bus id seen are copied into x.
 * Returns the slots whose value was a boolean. */
static uint64_t sample_values(struct engine *e, struct ent *x, const struct event *ev)
{
    uint64_t bools = 0;
    x->present = 0;
    for (size_t i = 0; i < ev->nf; i++) {
        const struct ev_field *f = &ev->f[i];
        double v;
        if (f->type == EV_INT) v = (double)f->v.i;
        else if (f->type == EV_NUM) v = f->v.d;
        else if (f->type == EV_BOOL) v = f->v.b;
        else {
            if (!x->uuid && !strcmp(f->key, "gpu.uuid")) x->uuid = xstrndup(event_str(ev, f), f->v.s.len);
            else if (!x->bus_id && !strcmp(f->key, "gpu.pci.bus_id")) x->bus_id = xstrndup(event_str(ev, f), f->v.s.len);
            else if (!x->model && !strcmp(f->key, "gpu.name") && f->v.s.len) x->model = xstrndup(event_str(ev, f), f->v.s.len);
            continue;
        }
        if (!isfinite(v)) continue;
        int s = key_slot(e, f->key, 1, 1);
        if (s < 0) continue;
        x->val[s] = v;
        x->present |= 1ULL << s;
        if (f->type == EV_BOOL) bools |= 1ULL << s;
    }
    return bools;
}

static void sample_judge(struct engine *e, struct host *h, struct ent *x, int64_t ts);

/* ---- rows faster than the resolution: folded ------------------------------ */

/* A 64-bit hash of ev's event.id (0 for none: every id-less row then looks
 * repeated, as the engine's tests feed them). */
static uint64_t id_hash(const struct event *ev)
{
    if (!ev->id[0]) return 0;
    if (strnlen(ev->id, 32) < 32) {          /* a short id from elsewhere: byte by byte */
        uint64_t h = 1469598103934665603ULL;
        for (const char *p = ev->id; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ULL;
        return h | 1;
    }
    /* gpulog's ids (32 hex digits): four loads, on every sample */
    uint64_t w[4], h = 0;
    memcpy(w, ev->id, 32);
    for (int i = 0; i < 4; i++) h = (h ^ w[i]) * 0x9E3779B97F4A7C15ULL;
    return h | 1;
}

/* The start of ts's resolution step. */
static int64_t fold_step(const struct engine *e, int64_t ts)
{
    int64_t r = e->prof->resolution_ms;
    if (r <= 0) return ts;
    int64_t q = ts / r;
    if (ts % r < 0) q--;
    return q * r;
}

/* Adds row ev to x's pending step. */
static void fold_add(struct engine *e, struct ent *x, const struct event *ev)
{
    struct fold *f = x->fold;
    uint64_t bools = sample_values(e, x, ev);
    f->last_id = id_hash(ev);
    f->n++;
    for (uint64_t pres = x->present; pres; pres &= pres - 1) {
        int s = __builtin_ctzll(pres);
        double v = x->val[s];
        uint64_t bit = 1ULL << s;
        if (!(f->present & bit)) { f->cnt[s] = 0; f->sum[s] = 0; f->nonint &= ~bit; f->bools &= ~bit; }
        f->present |= bit;
        if (bools & bit) {
            f->bools |= bit;
            if (!f->cnt[s] || v > f->sum[s]) f->sum[s] = v;
        } else if (s == e->prof->sl_mask && v >= 0 && v < 18446744073709551616.0) {
            f->mask_or |= (uint64_t)v;
            f->sum[s] = (double)f->mask_or;
        } else {
            f->sum[s] += v;
            if (v != floor(v)) f->nonint |= bit;
        }
        if (f->cnt[s] < UINT16_MAX) f->cnt[s]++;
    }
}

/* Judges x's pending step as one sample and empties it. */
static void fold_commit(struct engine *e, struct host *h, struct ent *x)
{
    struct fold *f = x->fold;
    int64_t b = f->b;
    f->done_b = b;
    f->n = 0;
    if (!sample_time_ok(e, h, x, b)) { f->present = 0; return; }
    x->present = f->present;
    for (uint64_t pres = f->present; pres; pres &= pres - 1) {
        int s = __builtin_ctzll(pres);
        uint64_t bit = 1ULL << s;
        int or_slot = !(f->bools & bit) && s == e->prof->sl_mask;
        if ((f->bools & bit) || or_slot || f->cnt[s] <= 1) { x->val[s] = f->sum[s]; continue; }
        double m = f->sum[s] / f->cnt[s];
        x->val[s] = (f->nonint & bit) ? m : floor(m + 0.5);
    }
    f->present = 0;
    f->mask_or = 0;
    x->last_id = f->last_id;
    sample_judge(e, h, x, b);
}

/* Takes row ev (time ts) of x into its fold when x is folding, or starts
 * folding when the row shares x's last stamp (not a repeat) or comes the
 * third time in a row within half the resolution. 1 when taken (nothing
 * else to do with it), 0 when it goes the usual way. */
static int fold_take(struct engine *e, struct host *h, struct ent *x, const struct event *ev, int64_t ts)
{
    struct fold *f = x->fold;
    uint64_t id = id_hash(ev);
    if (!f) {
        if (!x->nsamples) return 0;
        int same = ts == x->last_ts;
        if (same && id == x->last_id) return 0;       /* a repeated row: a duplicate (sample_time_ok) */
        int64_t r = e->prof->resolution_ms;
        int fast = r > 0 && ts > x->last_ts && ts - x->last_ts < r / 2;
        x->fast_n = fast ? (uint8_t)(x->fast_n < 255 ? x->fast_n + 1 : 255) : 0;
        if (!same && x->fast_n < 3) return 0;
        f = x->fold = xcalloc(1, sizeof *f);
        e->mem += sizeof *f;
        f->done_b = fold_step(e, x->last_ts);
        if (!e->fold_said++)
            log_info("msg=\"a GPU sends rows faster than the profile's resolution: its rows are folded per step "
                     "(gpulog_samples_folded_total counts them; said once)\" host=\"%s\" gpu=%d resolution_ms=%lld",
                     h->name, x->gpu, (long long)e->prof->resolution_ms);
    }
    int64_t b = fold_step(e, ts);
    if (f->n && id && id == f->last_id) {
        e->st.duplicates++;
        metrics_inc_label(M_SAMPLES_DROPPED, "duplicate");
        return 1;
    }
    if (b < f->done_b) return 0;                              /* older than the judged steps: late, the usual way */
    if (b == f->done_b) {                                     /* a step already judged */
        e->st.folded++;
        metrics_inc(M_SAMPLES_FOLDED);
        return 1;
    }
    if (f->n && b <= f->b) {
        fold_add(e, x, ev);
        e->st.folded++;
        metrics_inc(M_SAMPLES_FOLDED);
        return 1;
    }
    if (f->n) fold_commit(e, h, x);
    f->b = b;
    fold_add(e, x, ev);
    return 1;
}

/* Learned references of x: its power range (pmin, pmax, slowly forgotten). */
static void learn_power(struct engine *e, struct ent *x)
{
    double pw;
    if (ent_val(x, e->prof->sl_power, &pw)) {
        if (x->nsamples == 1 || x->pmin == 0) { x->pmin = (float)pw; }
        x->pmax = (float)(pw > x->pmax * 0.99999 ? pw : x->pmax * 0.99999);
        x->pmin = (float)(pw < x->pmin + 0.001 ? pw : x->pmin + 0.001);
    }
}

/* Each present value of x at ts: its series rules judge it against the
 * window before it is added (not when late), then window and last value. */
static void feed_series(struct engine *e, struct ent *x, struct det_ctx *cx, int64_t ts, int late)
{
    uint64_t pres = x->present;
    while (pres) {
        int s = __builtin_ctzll(pres);
        pres &= pres - 1;
        struct series *se = eng_series_get(e, x, s);
        if (!se) continue;
        const struct rule_set *rs = &e->slot_rules[s];
        if (rs->n && !late) {
            cx->slot = s;
            cx->s = se;
            cx->v = x->val[s];
            for (size_t k = 0; k < rs->n; k++) {
                const struct rule_cfg *rc = &e->prof->rules[rs->idx[k]];
                eng_judge(e, rc, x, e->prof->slots.name[s], (unsigned char *)se->rstate + rs->off[k], ts, cx);
            }
        }
        if (se->w) {
            se->w->span_ms = span_for(e, x);
            win_push(se->w, ts, x->val[s]);
        }
        se->last = x->val[s];
        se->last_ts = ts;
        se->has_last = 1;
        se->nsamples++;
    }
}

void engine_feed_tag(struct engine *e, const struct event *ev, int tag)
{
    e->st.events++;
    e->clock++;
    if (ev->dataset && (!strcmp(ev->dataset, "gpu.xid") || !strcmp(ev->dataset, "gpu.sxid"))) {
        feed_kernel(e, ev, tag);
        return;
    }
    if (!ev->kind || strcmp(ev->kind, "metric")) { e->st.ignored++; return; }
    struct host *h = eng_host_get(e, ev->host, tag);
    int gpu = -1;
    const struct ev_field *gf = event_get(ev, "gpu.index");
    if (gf && gf->type == EV_INT) gpu = (int)gf->v.i;
    struct ent *x = eng_ent_get(e, h, gpu);
    int64_t ts = ev->ts_ms;
    unsigned fl = ev_flags(ev);
    if (fl & EVF_LABELS) host_labels(e, h, ev);
    /* a process row (pmon, --query-compute-apps): who is on the GPU, no sample of it */
    if ((fl & EVF_PROCESS) && note_process(e, x, ev, ts) && !event_get(ev, "gpu.utilization.gpu.pct") &&
        !event_get(ev, "gpu.temperature.gpu") && !event_get(ev, "gpu.power.usage"))
        return;
    if (fold_take(e, h, x, ev, ts)) return;
    if (!sample_time_ok(e, h, x, ts)) return;
    sample_values(e, x, ev);
    x->last_id = id_hash(ev);
    sample_judge(e, h, x, ts);
}

/* The sample in x->val / x->present at ts (its time accepted): the host's
 * sample block, the series and GPU rules. */
static void sample_judge(struct engine *e, struct host *h, struct ent *x, int64_t ts)
{
    if (ts > e->newest_ts) e->newest_ts = ts;
    if (!h->have_block || ts > h->block_ts) {
        if (h->have_block) host_block_done(e, h, h->block_ts);
        h->block_ts = ts;
        h->have_block = 1;
    }
    e->st.samples++;
    x->last_seen_ms = e->clock;
    if (e->lru_tail != x) { eng_lru_unlink(e, x); lru_append(e, x); }
    int late = x->nsamples && ts < x->last_ts;
    if (!late) x->last_ts = ts;
    x->nsamples++;
    learn_power(e, x);
    struct det_ctx cx = { .ts = ts, .e = x, .h = h, .slots = &e->prof->slots };
    feed_series(e, x, &cx, ts, late);
    if (!late) {
        cx.slot = -1;
        cx.s = NULL;
        run_ent_rules(e, x, DS_GPU, &cx, ts);
    }
}

static void host_block_done(struct engine *e, struct host *h, int64_t T)
{
    size_t n = 0;
    for (struct ent *x = h->ents; x; x = x->next) {
        if (x->gpu < 0 || x->last_ts != T) continue;
        if (n == e->cappeers) {
            e->cappeers = e->cappeers ? e->cappeers * 2 : 16;
            e->peers = xrealloc(e->peers, e->cappeers * sizeof *e->peers);
        }
        e->peers[n++] = x;
    }
    for (struct ent *x = h->ents; x; x = x->next) {
        struct det_ctx cx = { .ts = T, .e = x, .h = h, .slots = &e->prof->slots, .slot = -1,
                              .peers = e->peers, .npeers = n };
        /* peers = the GPUs that reported at T (det_peer skips the GPU itself;
         * for a missing GPU they are all others) */
        if (x->nsamples) run_ent_rules(e, x, DS_HOST, &cx, T);
        run_ent_rules(e, x, DS_EVENT, &cx, T);
    }
}

void engine_drop_tag(struct engine *e, int tag)
{
    for (size_t b = 0; b < e->nhb; b++)
        for (struct host *h = e->hb[b], *nh; h; h = nh) {
            nh = h->next;
            if (h->tag != tag) continue;
            size_t n = h->nents;
            h->have_block = 0;
            while (n--) {              /* the last one frees the host (ent_remove) */
                ent_remove(e, h->ents);
                e->st.evicted--;       /* dropped, not evicted */
            }
        }
}

void engine_flush(struct engine *e)
{
    for (size_t b = 0; b < e->nhb; b++)
        for (struct host *h = e->hb[b]; h; h = h->next)
            for (struct ent *x = h->ents; x; x = x->next)
                if (x->fold && x->fold->n) fold_commit(e, h, x);
    for (size_t b = 0; b < e->nhb; b++)
        for (struct host *h = e->hb[b]; h; h = h->next)
            if (h->have_block) {
                host_block_done(e, h, h->block_ts);
                h->have_block = 0;
            }
}

void engine_free(struct engine *e)
{
    if (!e) return;
    for (size_t b = 0; b < e->nhb; b++) {
        struct host *h = e->hb[b];
        while (h) {
            struct host *nh = h->next;
            struct ent *x = h->ents;
            while (x) { struct ent *nx = x->next; ent_free(e, x); x = nx; }
            free(h->name);
            free(h->labels);
            free(h);
            h = nh;
        }
    }
    free(e->hb);
    for (size_t s = 0; s < ENG_MAX_SLOTS; s++) { free(e->slot_rules[s].idx); free(e->slot_rules[s].off); }
    free(e->ent_rules.idx);
    free(e->ent_rules.off);
    free(e->peers);
    event_free(&e->rec);
    free(e);
}

const struct engine_stats *engine_get_stats(const struct engine *e) { return &e->st; }
size_t engine_memory(const struct engine *e) { return e->mem; }

void engine_foreach_open(const struct engine *e, engine_open_fn fn, void *ctx)
{
    for (size_t b = 0; b < e->nhb; b++)
        for (struct host *h = e->hb[b]; h; h = h->next)
            for (struct ent *x = h->ents; x; x = x->next) {
                const struct rule_set *rs = &e->ent_rules;
                for (size_t k = 0; k < rs->n; k++) {
                    const struct episode *ep = (const struct episode *)((unsigned char *)x->rstate + rs->off[k]);
                    if (ep->open) fn(ctx, h->name, x->gpu, e->prof->rules[rs->idx[k]].id, ep->start, ep->peak_risk);
                }
                for (size_t i = 0; i < x->nser; i++) {
                    const struct rule_set *sr = &e->slot_rules[x->ser[i].slot];
                    for (size_t k = 0; k < sr->n; k++) {
                        const struct episode *ep = (const struct episode *)((unsigned char *)x->ser[i].rstate + sr->off[k]);
                        if (ep->open) fn(ctx, h->name, x->gpu, e->prof->rules[sr->idx[k]].id, ep->start, ep->peak_risk);
                    }
                }
            }
}

void engine_foreach_gpu(const struct engine *e, engine_gpu_fn fn, void *ctx)
{
    static const char *const fields[] = { "gpu.temperature.gpu", "gpu.power.usage", "gpu.utilization.gpu.pct",
                                          "gpu.clock.streaming_multiprocessor_frequency",
                                          "gpu.memory.framebuffer.used_size" };
    int slots[5];
    for (int i = 0; i < 5; i++) {
        slots[i] = -1;
        for (size_t s = 0; s < e->prof->slots.n; s++)
            if (!strcmp(e->prof->slots.name[s], fields[i])) slots[i] = (int)s;
    }
    for (size_t b = 0; b < e->nhb; b++)
        for (struct host *h = e->hb[b]; h; h = h->next)
            for (struct ent *x = h->ents; x; x = x->next) {
                if (!x->nsamples) continue;
                double vals[5];
                int have[5];
                for (int i = 0; i < 5; i++) {
                    struct series *s = ent_series(x, slots[i]);
                    have[i] = s && s->has_last;
                    vals[i] = have[i] ? s->last : 0;
                }
                fn(ctx, h->name, x->gpu, x->last_ts, vals, have);
            }
}
