/* fleet.c - the fleet correlator (see fleet.h): GPU incident records in,
 * fleet incident records out. The per-partition state is fleet_snap.c;
 * the shared layout fleet_int.h. */
#include "fleet_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const fl_actions[] = { "",           "none",      "watch",       "restart_app", "check_cooling",
                                   "check_power", "reset_gpu", "reboot_node", "drain_repair" };
const size_t fl_nactions = GL_ARRAY_LEN(fl_actions);

enum { FL_START, FL_CHANGE, FL_END };
static const char *const fl_type[] = { "start", "change", "end" };
#define FL_LIST_MAX 4096   /* GPUs named in a record (the counts are whole) */

uint8_t fl_action_of(const char *s, size_t n)
{
    for (size_t i = 1; i < fl_nactions; i++)
        if (strlen(fl_actions[i]) == n && !memcmp(fl_actions[i], s, n)) return (uint8_t)i;
    return 0;
}

uint64_t fl_hash_str(const char *s, size_t n, uint64_t seed) { return hash64(s, n, seed); }

/* ------------------------------------------------------------ configuration */

void fleet_conf_defaults(struct fleet_conf *c)
{
    memset(c, 0, sizeof *c);
    c->window_ms = 600000;
    c->min_hosts = 3;
    c->min_gpus = 8;
    c->group_by = "rack,switch,cluster,slurm_cluster";
    c->change_ms = 60000;
    c->hold_ms = 120000;
    c->expire_ms = 6 * 3600000LL;
    c->max_keys = 1024;
    c->max_members = 65536;
}

/* The label names of s ("rack,switch"): GL_OK, or GL_ERROR with the reason. */
static int parse_labels(const char *s, struct fl_label *labs, size_t *n, char *err, size_t errlen)
{
    *n = 0;
    while (s && *s) {
        size_t len = strcspn(s, ",");
        const char *name = s;
        s += len + (s[len] == ',');
        while (len && *name == ' ') { name++; len--; }
        while (len && name[len - 1] == ' ') len--;
        if (!len) continue;
        if (len > 64) { snprintf(err, errlen, "fleet.group_by: label name '%.*s...' longer than 64", 20, name); return GL_ERROR; }
        if (!strncmp(name, "labels.", 7) && len > 7) { name += 7; len -= 7; }   /* the field's name said whole */
        for (size_t i = 0; i < len; i++)
            if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') || name[i] == '_')) {
                snprintf(err, errlen, "fleet.group_by: label name '%.*s' is not [a-z0-9_]+ (labels.NAME)", (int)len, name);
                return GL_ERROR;
            }
        if (*n == FL_MAX_LABELS) { snprintf(err, errlen, "fleet.group_by: more than %d labels", FL_MAX_LABELS); return GL_ERROR; }
        memcpy(labs[*n].name, name, len);
        labs[*n].name[len] = 0;
        snprintf(labs[*n].key, sizeof labs[*n].key, "labels.%s", labs[*n].name);
        (*n)++;
    }
    return GL_OK;
}

int fleet_conf_check(const struct fleet_conf *c, char *err, size_t errlen)
{
    const struct { const char *name; int64_t v, lo, hi; } r[] = {
        { "fleet.window", c->window_ms, 1000, 7 * 86400000LL },
        { "fleet.min_hosts", c->min_hosts, 1, 1000000 },
        { "fleet.min_gpus", c->min_gpus, 1, 1000000 },
        { "fleet.change_interval", c->change_ms, 0, 86400000LL },
        { "fleet.hold", c->hold_ms, 0, 86400000LL },
        { "fleet.expire", c->expire_ms, c->window_ms, 30 * 86400000LL },
        { "fleet.max_keys", c->max_keys, 1, 1 << 20 },
        { "fleet.max_members", c->max_members, 1, 1 << 22 },
    };
    for (size_t i = 0; i < GL_ARRAY_LEN(r); i++)
        if (r[i].v < r[i].lo || r[i].v > r[i].hi) {
            snprintf(err, errlen, "%s: %lld is out of range %lld..%lld", r[i].name, (long long)r[i].v,
                     (long long)r[i].lo, (long long)r[i].hi);
            return GL_ERROR;
        }
    struct fl_label labs[FL_MAX_LABELS];
    size_t n;
    return parse_labels(c->group_by, labs, &n, err, errlen);
}

static size_t pow2_at_least(size_t n)
{
    size_t p = 64;
    while (p < n) p <<= 1;
    return p;
}

struct fleet *fleet_new(const struct fleet_conf *c, fleet_emit_fn emit, void *ctx, char *err, size_t errlen)
{
    if (fleet_conf_check(c, err, errlen) != GL_OK) return NULL;
    struct fleet *f = xcalloc(1, sizeof *f);
    f->c = *c;
    f->c.group_by = NULL;   /* parsed into labs; the caller's string is not kept */
    parse_labels(c->group_by, f->labs, &f->nlabs, err, errlen);
    f->emit = emit;
    f->ctx = ctx;
    f->nkb = pow2_at_least((size_t)c->max_keys * 2);
    f->nhb = f->nib = pow2_at_least((size_t)c->max_members);
    f->kb = xcalloc(f->nkb, sizeof *f->kb);
    f->hb = xcalloc(f->nhb, sizeof *f->hb);
    f->ib = xcalloc(f->nib, sizeof *f->ib);
    f->clock = f->tick_clock = INT64_MIN;
    event_init(&f->rec);
    buf_init(&f->lb);
    buf_init(&f->lb2);
    f->st.bytes = sizeof *f + (f->nkb + f->nhb + f->nib) * sizeof(void *);
    return f;
}

/* ------------------------------------------------------------- the tables */

static void lru_unlink(struct fleet *f, struct fl_key *k)
{
    if (k->lprev) k->lprev->lnext = k->lnext; else f->lru_head = k->lnext;
    if (k->lnext) k->lnext->lprev = k->lprev; else f->lru_tail = k->lprev;
    k->lprev = k->lnext = NULL;
}

static void lru_append(struct fleet *f, struct fl_key *k)
{
    k->lprev = f->lru_tail;
    k->lnext = NULL;
    if (f->lru_tail) f->lru_tail->lnext = k; else f->lru_head = k;
    f->lru_tail = k;
}

void fl_open_link(struct fleet *f, struct fl_key *k)
{
    struct fl_inc *in = &k->inc;
    int linked = in->oprev || in->onext || f->open_head == k;
    if (in->open && !linked) {
        in->onext = f->open_head;
        if (f->open_head) f->open_head->inc.oprev = k;
        f->open_head = k;
        f->st.open++;
    } else if (!in->open && linked) {
        if (in->oprev) in->oprev->inc.onext = in->onext; else f->open_head = in->onext;
        if (in->onext) in->onext->inc.oprev = in->oprev;
        in->oprev = in->onext = NULL;
        f->st.open--;
    }
}

static uint64_t id_hash(const char *id) { return hash64(id, 32, 0x1d); }

struct fl_member *fl_member_by_id(const struct fleet *f, const char *id)
{
    uint64_t h = id_hash(id);
    for (struct fl_member *m = f->ib[h & (f->nib - 1)]; m; m = m->inext)
        if (m->ih == h && !memcmp(m->incid, id, 32)) return m;
    return NULL;
}

static void id_link(struct fleet *f, struct fl_member *m)
{
    m->ih = id_hash(m->incid);
    struct fl_member **b = &f->ib[m->ih & (f->nib - 1)];
    m->inext = *b;
    *b = m;
}

static void id_unlink(struct fleet *f, struct fl_member *m)
{
    for (struct fl_member **pp = &f->ib[m->ih & (f->nib - 1)]; *pp; pp = &(*pp)->inext)
        if (*pp == m) { *pp = m->inext; return; }
}

static uint64_t host_hash(const struct fl_key *k, const char *host, size_t hn)
{
    return hash64(host, hn, k->h ^ 0x9e3779b97f4a7c15ULL);
}

static struct fl_host *host_find(const struct fleet *f, const struct fl_key *k, const char *host, size_t hn)
{
    uint64_t h = host_hash(k, host, hn);
    for (struct fl_host *kh = f->hb[h & (f->nhb - 1)]; kh; kh = kh->hnext)
        if (kh->h == h && kh->k == k && strlen(kh->name) == hn && !memcmp(kh->name, host, hn)) return kh;
    return NULL;
}

static struct fl_host *host_get(struct fleet *f, struct fl_key *k, const char *host, size_t hn)
{
    struct fl_host *kh = host_find(f, k, host, hn);
    if (kh) return kh;
    kh = xcalloc(1, sizeof *kh + hn + 1);
    memcpy(kh->name, host, hn);
    kh->k = k;
    kh->h = host_hash(k, host, hn);
    struct fl_host **b = &f->hb[kh->h & (f->nhb - 1)];
    kh->hnext = *b;
    *b = kh;
    f->st.bytes += sizeof *kh + hn + 1;
    return kh;
}

static void host_free(struct fleet *f, struct fl_host *kh)
{
    for (struct fl_host **pp = &f->hb[kh->h & (f->nhb - 1)]; *pp; pp = &(*pp)->hnext)
        if (*pp == kh) { *pp = kh->hnext; break; }
    f->st.bytes -= sizeof *kh + strlen(kh->name) + 1 + kh->cap * (sizeof *kh->mv + sizeof *kh->gv);
    free(kh->mv);
    free(kh->gv);
    free(kh);
}

/* The window list of k (by start) and the list of window members of all keys. */
static void win_insert(struct fleet *f, struct fl_key *k, struct fl_member *m)
{
    struct fl_member *at = k->win_tail;
    while (at && at->start > m->start) at = at->prev;
    m->prev = at;
    m->next = at ? at->next : k->win_head;
    if (m->next) m->next->prev = m; else k->win_tail = m;
    if (at) at->next = m; else k->win_head = m;
    m->gprev = f->w_tail;
    m->gnext = NULL;
    if (f->w_tail) f->w_tail->gnext = m; else f->w_head = m;
    f->w_tail = m;
}

/* Takes m out of k's window or fleet list (and the list of all window members). */
static void list_unlink(struct fleet *f, struct fl_member *m)
{
    struct fl_key *k = m->k;
    struct fl_member **head = m->in_fleet ? &k->fl_head : &k->win_head, **tail = m->in_fleet ? &k->fl_tail : &k->win_tail;
    if (m->prev) m->prev->next = m->next; else *head = m->next;
    if (m->next) m->next->prev = m->prev; else *tail = m->prev;
    m->prev = m->next = NULL;
    if (!m->in_fleet) {
        if (m->gprev) m->gprev->gnext = m->gnext; else f->w_head = m->gnext;
        if (m->gnext) m->gnext->gprev = m->gprev; else f->w_tail = m->gprev;
        m->gprev = m->gnext = NULL;
    }
}

static void fl_append(struct fl_key *k, struct fl_member *m)
{
    m->prev = k->fl_tail;
    m->next = NULL;
    if (k->fl_tail) k->fl_tail->next = m; else k->fl_head = m;
    k->fl_tail = m;
}

/* Forgets m: lists, counts, its host entry when it was the last one, the id. */
static void member_free(struct fleet *f, struct fl_member *m)
{
    struct fl_key *k = m->k;
    struct fl_host *kh = m->kh;
    list_unlink(f, m);
    if (m->in_fleet) {
        k->fl_gpus--;
        if (!--kh->nfl) k->fl_hosts--;
        if (m->open) k->fl_open--;
    } else {
        k->win_gpus--;
        if (!--kh->nwin) k->win_hosts--;
    }
    for (uint32_t i = 0; i < kh->n; i++)
        if (kh->mv[i] == m) {
            kh->mv[i] = kh->mv[kh->n - 1];
            kh->gv[i] = kh->gv[kh->n - 1];
            break;
        }
    if (!--kh->n) host_free(f, kh);
    id_unlink(f, m);
    free(m);
    f->st.tracked--;
    f->st.bytes -= sizeof *m;
}

struct fl_member *fl_member_add(struct fleet *f, struct fl_key *k, const char *host, size_t hn, int gpu,
                                const char *incid, int64_t start, int in_fleet, int tag)
{
    if (hn > FL_TEXT_MAX) hn = FL_TEXT_MAX;
    struct fl_host *kh = host_find(f, k, host, hn);
    if (kh && kh->n >= FL_HOST_GPUS) { f->st.dropped++; return NULL; }
    if (f->st.tracked >= (uint64_t)f->c.max_members) {
        if (!f->w_head) { f->st.dropped++; return NULL; }
        member_free(f, f->w_head);
        f->st.evicted_members++;
        kh = NULL;          /* it may have been the one freed */
    }
    if (!kh) kh = host_get(f, k, host, hn);
    struct fl_member *m = xcalloc(1, sizeof *m);
    m->k = k;
    m->kh = kh;
    m->gpu = gpu;
    m->tag = tag;
    m->start = start;
    m->arrived = f->wall;
    m->open = 1;
    memcpy(m->incid, incid, 32);
    id_link(f, m);
    if (kh->n == kh->cap) {
        uint32_t cap = kh->cap ? kh->cap * 2 : 8;
        kh->mv = xrealloc(kh->mv, cap * sizeof *kh->mv);
        kh->gv = xrealloc(kh->gv, cap * sizeof *kh->gv);
        f->st.bytes += (cap - kh->cap) * (sizeof *kh->mv + sizeof *kh->gv);
        kh->cap = cap;
    }
    kh->mv[kh->n] = m;
    kh->gv[kh->n++] = gpu;
    if (in_fleet) {
        m->in_fleet = 1;
        fl_append(k, m);
        if (!kh->nfl++) k->fl_hosts++;
        k->fl_gpus++;
        k->fl_open++;
    } else {
        win_insert(f, k, m);
        if (!kh->nwin++) k->win_hosts++;
        k->win_gpus++;
    }
    if (start > k->max_start) k->max_start = start;
    f->st.tracked++;
    f->st.bytes += sizeof *m;
    return m;
}

static uint64_t key_hash(const char *sig, size_t sn, int lab, const char *grp, size_t gn)
{
    return hash64(grp, gn, hash64(sig, sn, 0x5157) ^ (uint64_t)(lab + 2));
}

static void inc_end(struct fleet *f, struct fl_key *k, int64_t ts, const char *why);

/* Forgets k and its members (its open fleet incident ends first, said). */
static void key_free(struct fleet *f, struct fl_key *k, const char *why)
{
    if (k->inc.open) inc_end(f, k, f->clock, why);
    while (k->win_head) member_free(f, k->win_head);
    while (k->fl_head) member_free(f, k->fl_head);
    for (struct fl_key **pp = &f->kb[k->h & (f->nkb - 1)]; *pp; pp = &(*pp)->hnext)
        if (*pp == k) { *pp = k->hnext; break; }
    lru_unlink(f, k);
    f->st.keys--;
    f->st.bytes -= sizeof *k + strlen(k->sig) + strlen(k->grp) + 2;
    free(k);
}

struct fl_key *fl_key_get(struct fleet *f, const char *sig, size_t sn, int lab, const char *grp, size_t gn)
{
    if (sn > FL_TEXT_MAX) sn = FL_TEXT_MAX;
    if (gn > FL_TEXT_MAX) gn = FL_TEXT_MAX;
    uint64_t h = key_hash(sig, sn, lab, grp, gn);
    struct fl_key *k;
    for (k = f->kb[h & (f->nkb - 1)]; k; k = k->hnext)
        if (k->h == h && k->lab == lab && strlen(k->sig) == sn && !memcmp(k->sig, sig, sn) && strlen(k->grp) == gn &&
            !memcmp(k->grp, grp, gn)) {
            lru_unlink(f, k);
            lru_append(f, k);
            return k;
        }
    if (f->st.keys >= (uint64_t)f->c.max_keys && f->lru_head) {
        key_free(f, f->lru_head, "forgotten: more keys than fleet.max_keys");
        f->st.evicted_keys++;
    }
    k = xcalloc(1, sizeof *k + sn + gn + 2);
    memcpy(k->text, sig, sn);
    memcpy(k->text + sn + 1, grp, gn);
    k->sig = k->text;
    k->grp = k->text + sn + 1;
    k->lab = lab;
    k->h = h;
    k->max_start = INT64_MIN;
    struct fl_key **b = &f->kb[h & (f->nkb - 1)];
    k->hnext = *b;
    *b = k;
    lru_append(f, k);
    f->st.keys++;
    f->st.bytes += sizeof *k + sn + gn + 2;
    return k;
}

/* ---------------------------------------------------------------- records */

static int cmp_member(const void *a, const void *b)
{
    const struct fl_member *x = *(const struct fl_member *const *)a, *y = *(const struct fl_member *const *)b;
    int c = strcmp(x->kh->name, y->kh->name);
    return c ? c : (x->gpu > y->gpu) - (x->gpu < y->gpu);
}

/* anomaly.hosts and anomaly.gpus of k's fleet incident into f->lb and f->lb2, sorted. */
static void member_lists(struct fleet *f, const struct fl_key *k)
{
    size_t n = 0;
    struct fl_member **v = xmalloc((k->fl_gpus ? k->fl_gpus : 1) * sizeof *v);
    for (struct fl_member *m = k->fl_head; m && n < k->fl_gpus; m = m->next) v[n++] = m;
    qsort(v, n, sizeof *v, cmp_member);
    buf_reset(&f->lb);
    buf_reset(&f->lb2);
    const struct fl_host *last = NULL;
    for (size_t i = 0; i < n; i++) {
        const struct fl_member *m = v[i];
        if (i == FL_LIST_MAX) { buf_puts(&f->lb2, ",..."); break; }
        if (m->kh != last) {
            if (f->lb.len) buf_putc(&f->lb, ',');
            buf_puts(&f->lb, m->kh->name);
            last = m->kh;
        }
        if (f->lb2.len) buf_putc(&f->lb2, ',');
        buf_puts(&f->lb2, m->kh->name);
        if (m->gpu >= 0) {
            buf_putc(&f->lb2, ':');
            buf_put_i64(&f->lb2, m->gpu);
        }
    }
    free(v);
}

/* "gpu.temp.high", "Xid 13", "SXid 12028". */
static void sig_words(const char *sig, char *out, size_t n)
{
    if (!strncmp(sig, "xid:", 4)) snprintf(out, n, "Xid %s", sig + 4);
    else if (!strncmp(sig, "sxid:", 5)) snprintf(out, n, "SXid %s", sig + 5);
    else snprintf(out, n, "%s", sig);
}

static void span_words(int64_t ms, char *out, size_t n)
{
    if (ms < 0) ms = 0;
    if (ms < 120000) snprintf(out, n, "%lld s", (long long)((ms + 500) / 1000));
    else if (ms < 2 * 3600000LL) snprintf(out, n, "%lld minutes", (long long)((ms + 30000) / 60000));
    else snprintf(out, n, "%.1f hours", (double)ms / 3600000.0);
}

static void add_ts(struct event *r, const char *key, int64_t ms)
{
    char tb[25];
    gl_fmt_ts(ms, tb);
    event_add_str(r, key, tb, 24);
}

/* Writes a record of k's fleet incident (type FL_*) stamped ts. */
static void inc_emit(struct fleet *f, struct fl_key *k, int type, int64_t ts, const char *why)
{
    struct fl_inc *in = &k->inc;
    struct event *r = &f->rec;
    event_reset(r);
    r->ts_ms = ts;
    r->kind = "alert";
    r->dataset = "gpu.fleet_incident";
    r->offset = -1;
    struct hash128 h;
    hash128_init(&h);
    hash128_feed(&h, in->id, 32);
    hash128_feed_u64(&h, (uint64_t)type);
    if (type == FL_CHANGE) {
        hash128_feed_u64(&h, k->fl_gpus);
        hash128_feed_u64(&h, k->fl_hosts);
    }
    hash128_hex(&h, r->id);
    event_add_str(r, "event.type", fl_type[type], strlen(fl_type[type]));
    event_add_str(r, "rule.id", "gpu.fleet", 9);
    event_add_str(r, "rule.name", "Fleet incident", 14);
    add_ts(r, "event.start", in->first);
    if (type == FL_END) add_ts(r, "event.end", ts);
    event_add_int(r, "event.risk_score", (int64_t)(in->risk + 0.5f));
    event_add_int(r, "event.severity", in->sev);
    event_add_str(r, "anomaly.incident_id", in->id, 32);
    event_add_str(r, "anomaly.signature", k->sig, strlen(k->sig));
    int sx = !strncmp(k->sig, "sxid:", 5);
    if (sx || !strncmp(k->sig, "xid:", 4)) {
        int64_t code;
        const char *c = k->sig + (sx ? 5 : 4);
        if (gl_parse_i64(c, strlen(c), &code) && code >= 0) event_add_int(r, sx ? "gpu.sxid.code" : "gpu.xid.code", code);
    }
    if (k->lab >= 0) {
        const struct fl_label *l = &f->labs[k->lab];
        event_add_str(r, "anomaly.group_by", l->name, strlen(l->name));
        event_add_str(r, "anomaly.group", k->grp, strlen(k->grp));
        event_add_str(r, l->key, k->grp, strlen(k->grp));
    }
    member_lists(f, k);
    event_add_int(r, "anomaly.host_count", k->fl_hosts);
    event_add_int(r, "anomaly.gpu_count", k->fl_gpus);
    event_add_int(r, "anomaly.open_count", k->fl_open);
    event_add_str(r, "anomaly.hosts", f->lb.p ? f->lb.p : "", f->lb.len);
    event_add_str(r, "anomaly.gpus", f->lb2.p ? f->lb2.p : "", f->lb2.len);
    add_ts(r, "anomaly.last_start", in->last);
    event_add_num(r, "anomaly.span_s", (double)(in->last - in->first) / 1000.0);
    if (in->action) event_add_str(r, "anomaly.action", fl_actions[in->action], strlen(fl_actions[in->action]));
    char sw[300], span[32], grp[400] = "", reason[1024];
    sig_words(k->sig, sw, sizeof sw);
    span_words(in->last - in->first, span, sizeof span);
    if (k->lab >= 0) snprintf(grp, sizeof grp, " of %s %s", f->labs[k->lab].name, k->grp);
    int n = 0;
    if (type == FL_END) {
        char dur[32];
        span_words(ts - in->first, dur, sizeof dur);
        event_add_num(r, "anomaly.duration_s", (double)(ts - in->first) / 1000.0);
        n = snprintf(reason, sizeof reason, "fleet incident over after %s (%s): ", dur, why ? why : "ended");
    }
    snprintf(reason + n, sizeof reason - (size_t)n, "%s on %u GPU%s of %u host%s%s within %s", sw, k->fl_gpus,
             k->fl_gpus == 1 ? "" : "s", k->fl_hosts, k->fl_hosts == 1 ? "" : "s", grp, span);
    event_add_str(r, "event.reason", reason, strlen(reason));
    in->eg = k->fl_gpus;
    in->eh = k->fl_hosts;
    in->at = ts;
    in->pending = 0;
    in->quiet_ticks = 0;
    if (type == FL_START) f->st.starts++;
    else if (type == FL_CHANGE) { f->st.changes++; in->seq++; }
    else f->st.ends++;
    if (f->emit) f->emit(f->ctx, r);
}

/* The severity, risk and action of m into k's fleet incident. */
static void inc_absorb(struct fl_inc *in, const struct fl_member *m)
{
    if (m->sev > in->sev) in->sev = m->sev;
    if (m->risk > in->risk) in->risk = m->risk;
    if (m->action > in->action) in->action = m->action;
    if (m->start < in->first) in->first = m->start;
    if (m->start > in->last) in->last = m->start;
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b && (a < 0)) ? q - 1 : q;
}

void fl_join(struct fleet *f, struct fl_key *k, struct fl_member *m)
{
    list_unlink(f, m);
    m->in_fleet = 1;
    fl_append(k, m);
    k->win_gpus--;
    if (!--m->kh->nwin) k->win_hosts--;
    k->fl_gpus++;
    if (!m->kh->nfl++) k->fl_hosts++;
    if (m->open) k->fl_open++;
    inc_absorb(&k->inc, m);
}

/* The window members of k from `from` up to `to` (excluded) pass the
 * thresholds: they become its fleet incident, with the window members
 * that start within a window of theirs. */
static void inc_open(struct fleet *f, struct fl_key *k, struct fl_member *from, struct fl_member *to, int64_t ts)
{
    struct fl_inc *in = &k->inc;
    memset(in, 0, sizeof *in);
    in->first = INT64_MAX;
    in->last = INT64_MIN;
    in->open = 1;
    for (struct fl_member *m = from, *next; m != to; m = next) {
        next = m->next;
        fl_join(f, k, m);
    }
    for (struct fl_member *m = k->win_head, *next; m; m = next) {
        next = m->next;
        if (m->start >= in->first - f->c.window_ms && m->start <= in->last + f->c.window_ms) fl_join(f, k, m);
    }
    /* numbered within the window-long bucket of the first start (never
     * below the last one's: a replay numbers them the same) */
    int64_t b = floor_div(in->first, f->c.window_ms);
    if (k->id_set && b <= k->id_bucket) {
        b = k->id_bucket;
        k->id_n++;
    } else {
        k->id_n = 0;
    }
    k->id_bucket = b;
    k->id_set = 1;
    struct hash128 h;
    hash128_init(&h);
    hash128_feed(&h, "gpu.fleet", 10);
    hash128_feed(&h, k->sig, strlen(k->sig) + 1);
    const char *lab = k->lab >= 0 ? f->labs[k->lab].name : "";
    hash128_feed(&h, lab, strlen(lab) + 1);
    hash128_feed(&h, k->grp, strlen(k->grp) + 1);
    hash128_feed_u64(&h, (uint64_t)b);
    hash128_feed_u64(&h, k->id_n);
    hash128_hex(&h, in->id);
    in->news = ts;
    in->news_wall = f->wall;
    fl_open_link(f, k);
    inc_emit(f, k, FL_START, ts, NULL);
}

/* Ends k's fleet incident (its end record, stamped ts) and forgets its members. */
static void inc_end(struct fleet *f, struct fl_key *k, int64_t ts, const char *why)
{
    if (ts < k->inc.at) ts = k->inc.at;
    inc_emit(f, k, FL_END, ts, why);
    while (k->fl_head) member_free(f, k->fl_head);
    k->inc.open = 0;
    fl_open_link(f, k);
}

/* News of a member of in at event time ts. */
static void inc_news(struct fleet *f, struct fl_inc *in, int64_t ts)
{
    if (ts > in->news) in->news = ts;
    in->news_wall = f->wall;
}

/* 1 when in's last news is FL_SETTLE_WALL_MS old in wall time. */
static int settled(const struct fleet *f, const struct fl_inc *in)
{
    return in->news_wall >= 0 && f->wall - in->news_wall >= FL_SETTLE_WALL_MS;
}

/* A member joined k's open fleet incident: a change record now, or later
 * (pending) when one was written less than change_interval ago. */
static void inc_grew(struct fleet *f, struct fl_key *k, int64_t ts)
{
    struct fl_inc *in = &k->inc;
    if (k->fl_gpus == in->eg && k->fl_hosts == in->eh) return;
    in->quiet_ticks = 0;
    if (ts - in->at >= f->c.change_ms) inc_emit(f, k, FL_CHANGE, ts, NULL);
    else in->pending = 1;
}

/* Window member m of k came: opens k's fleet incident when the members
 * that start within `window` of each other in some span holding m pass
 * the thresholds (a sliding window over the starts, sorted, from m's
 * start - window to m's start + window: arrival order does not matter,
 * so partitions read at different speeds give the same result). Costs the
 * members of that span, which below the thresholds is bounded by them. */
static void key_window(struct fleet *f, struct fl_key *k, struct fl_member *m, int64_t ts)
{
    if (k->inc.open) return;
    int64_t w = f->c.window_ms, s = m->start;
    struct fl_member *lo = m, *r;
    while (lo->prev && lo->prev->start >= s - w) lo = lo->prev;
    uint64_t hosts = 0, gpus = 0;
    uint32_t gen = ++f->gen;
    r = lo;
    for (struct fl_member *l = lo; l && l->start <= s; l = l->next) {
        for (; r && r->start <= l->start + w; r = r->next) {
            if (r->kh->gen != gen) { r->kh->gen = gen; r->kh->scan = 0; }
            if (!r->kh->scan++) hosts++;
            gpus++;
        }
        if (hosts >= (uint64_t)f->c.min_hosts && gpus >= (uint64_t)f->c.min_gpus) {
            inc_open(f, k, l, r, ts);
            return;
        }
        if (!--l->kh->scan) hosts--;
        gpus--;
    }
}

/* ------------------------------------------------------------------ input */

/* What the correlator reads of a record, found in one pass over its fields. */
enum { R_TYPE, R_ID, R_RULES, R_RULE, R_START, R_END, R_ACTION, R_NSTR };
enum { R_GPU, R_SEV, R_RISK, R_XID, R_SXID, R_NNUM };
struct fl_rec {
    const char *s[R_NSTR];                  /* NULL: absent or empty */
    size_t sn[R_NSTR];
    double v[R_NNUM];
    unsigned have;                          /* bit i: v[i] present */
    const char *lab[FL_MAX_LABELS];         /* the configured labels' values */
    size_t labn[FL_MAX_LABELS];
};

static const struct { const char *key; unsigned char len, slot, num; } rec_keys[] = {
    { "event.type", 10, R_TYPE, 0 },        { "anomaly.incident_id", 19, R_ID, 0 },
    { "anomaly.rules", 13, R_RULES, 0 },    { "rule.id", 7, R_RULE, 0 },
    { "event.start", 11, R_START, 0 },      { "event.end", 9, R_END, 0 },
    { "anomaly.action", 14, R_ACTION, 0 },  { "gpu.index", 9, R_GPU, 1 },
    { "event.severity", 14, R_SEV, 1 },     { "event.risk_score", 16, R_RISK, 1 },
    { "gpu.xid.code", 12, R_XID, 1 },       { "gpu.sxid.code", 13, R_SXID, 1 },
};

static void rec_read(const struct fleet *f, const struct event *ev, struct fl_rec *r)
{
    memset(r, 0, sizeof *r);
    for (size_t i = 0; i < ev->nf; i++) {
        const struct ev_field *x = &ev->f[i];
        size_t kl = event_key_len(x);
        if (kl > 7 && !memcmp(x->key, "labels.", 7)) {
            if (x->type != EV_STR || !x->v.s.len) continue;
            for (size_t l = 0; l < f->nlabs; l++)
                if (!r->lab[l] && !strcmp(f->labs[l].name, x->key + 7)) {
                    r->lab[l] = event_str(ev, x);
                    r->labn[l] = x->v.s.len;
                }
            continue;
        }
        for (size_t k = 0; k < GL_ARRAY_LEN(rec_keys); k++) {
            if (rec_keys[k].len != kl || memcmp(rec_keys[k].key, x->key, kl)) continue;
            unsigned slot = rec_keys[k].slot;
            if (rec_keys[k].num) {
                if (r->have & (1u << slot) || x->type == EV_STR) break;
                r->v[slot] = x->type == EV_INT ? (double)x->v.i : x->type == EV_NUM ? x->v.d : x->v.b;
                r->have |= 1u << slot;
            } else if (x->type == EV_STR && x->v.s.len && !r->s[slot]) {
                r->s[slot] = event_str(ev, x);
                r->sn[slot] = x->v.s.len;
            }
            break;
        }
    }
}

static int rec_num(const struct fl_rec *r, unsigned slot, double lo, double hi, double *out)
{
    if (!(r->have & (1u << slot)) || !(r->v[slot] >= lo && r->v[slot] <= hi)) return 0;
    *out = r->v[slot];
    return 1;
}

static int rec_is(const struct fl_rec *r, unsigned slot, const char *s)
{
    size_t n = strlen(s);
    return r->s[slot] && r->sn[slot] == n && !memcmp(r->s[slot], s, n);
}

static int64_t rec_time(const struct fl_rec *r, unsigned slot, int64_t dflt)
{
    int64_t t;
    return r->s[slot] && gl_parse_iso_ts(r->s[slot], r->sn[slot], &t) == GL_OK && gl_time_ok(t) ? t : dflt;
}

static int is_hex32(const char *s, size_t n)
{
    if (n != 32) return 0;
    unsigned bad = 0;
    for (size_t i = 0; i < 32; i++) {
        unsigned c = (unsigned char)s[i];
        bad |= (c - '0' > 9u) & (c - 'a' > 5u);   /* branch-free: one test at the end */
    }
    return !bad;
}

static struct fl_xid *xid_slot(struct fleet *f, const char *host, size_t hn, int gpu, uint64_t *hh)
{
    *hh = hash64(host, hn, 0x71d ^ (uint64_t)(int64_t)gpu);
    return &f->xid[*hh & (FL_XID_CACHE - 1)];
}

/* An anomaly episode start: remember its Xid/SXid code for the GPU. */
static void on_episode(struct fleet *f, const struct event *ev, const struct fl_rec *r, int gpu)
{
    double code;
    if (!rec_is(r, R_TYPE, "start") || !r->s[R_RULE]) return;
    int sx = 0;
    if (!rec_num(r, R_XID, 0, 1e9, &code)) {
        if (!rec_num(r, R_SXID, 0, 1e9, &code)) return;
        sx = 1;
    }
    uint64_t hh;
    struct fl_xid *x = xid_slot(f, ev->host, strlen(ev->host), gpu, &hh);
    x->hh = hh;
    x->rule = (uint32_t)hash64(r->s[R_RULE], r->sn[R_RULE], 3);
    x->code = (int32_t)code;
    x->sx = (uint8_t)sx;
    x->ts = rec_time(r, R_START, ev->ts_ms);
    x->set = 1;
}

/* The signature of an incident start whose first rule is rule: "xid:CODE" when
 * the record or that rule's last episode on the GPU carried a code. */
static size_t signature(struct fleet *f, const struct event *ev, const struct fl_rec *r, const char *rule, size_t rn,
                        int gpu, int64_t start, char *out, size_t outlen)
{
    double code;
    if (rec_num(r, R_XID, 0, 1e9, &code)) return (size_t)snprintf(out, outlen, "xid:%d", (int)code);
    if (rec_num(r, R_SXID, 0, 1e9, &code)) return (size_t)snprintf(out, outlen, "sxid:%d", (int)code);
    uint64_t hh;
    const struct fl_xid *x = xid_slot(f, ev->host, strlen(ev->host), gpu, &hh);
    int64_t d = start - x->ts;
    if (x->set && x->hh == hh && x->rule == (uint32_t)hash64(rule, rn, 3) && d <= f->c.window_ms && -d <= f->c.window_ms)
        return (size_t)snprintf(out, outlen, "%s:%d", x->sx ? "sxid" : "xid", x->code);
    if (rn > outlen - 1) rn = outlen - 1;
    memcpy(out, rule, rn);
    out[rn] = 0;
    return rn;
}

static void member_values(struct fl_member *m, const struct fl_rec *r)
{
    double v;
    if (rec_num(r, R_SEV, 0, 100, &v)) m->sev = (int8_t)v;
    if (rec_num(r, R_RISK, 0, 100, &v)) m->risk = (float)v;
    uint8_t act = r->s[R_ACTION] ? fl_action_of(r->s[R_ACTION], r->sn[R_ACTION]) : 0;
    if (act) m->action = act;
}

/* A GPU incident started. */
static void on_start(struct fleet *f, const struct event *ev, const struct fl_rec *r, int gpu, int tag)
{
    const char *incid = r->s[R_ID], *rules = r->s[R_RULES];
    if (!rules) { f->st.bad++; return; }
    size_t rn = 0;
    while (rn < r->sn[R_RULES] && rules[rn] != ',') rn++;
    if (rn > 200) rn = 200;
    if (!rn) { f->st.bad++; return; }
    if (fl_member_by_id(f, incid)) { f->st.ignored++; return; }   /* read again (a replay) */
    int64_t start = rec_time(r, R_START, ev->ts_ms);
    char sig[216];
    size_t sn = signature(f, ev, r, rules, rn, gpu, start, sig, sizeof sig);
    int lab = -1;
    for (size_t l = 0; l < f->nlabs && lab < 0; l++)
        if (r->lab[l]) lab = (int)l;
    struct fl_key *k = fl_key_get(f, sig, sn, lab, lab >= 0 ? r->lab[lab] : "", lab >= 0 ? r->labn[lab] : 0);
    f->st.members++;
    struct fl_inc *in = &k->inc;
    if (in->open && !k->fl_open && f->clock - in->news >= f->c.hold_ms && settled(f, in))   /* over, its tick not come yet */
        inc_end(f, k, in->last_end > in->at ? in->last_end : in->at, "every GPU incident ended");
    /* a start within a window of the fleet incident's starts joins it */
    int near = in->open && start >= in->first - f->c.window_ms && start <= in->last + f->c.window_ms;
    size_t hn = strlen(ev->host);
    struct fl_host *kh = host_find(f, k, ev->host, hn > FL_TEXT_MAX ? FL_TEXT_MAX : hn);
    struct fl_member *m = NULL;
    for (uint32_t i = 0; kh && i < kh->n && !m; i++)
        if (kh->gv[i] == gpu) m = kh->mv[i];
    int grew = 0;
    if (m && m->in_fleet && !near) {
        /* a GPU of the open fleet incident again, long after it: not
         * counted until that one ends */
        f->st.ignored++;
        return;
    }
    if (m) {
        /* the GPU again, with a new incident: it counts once */
        id_unlink(f, m);
        memcpy(m->incid, incid, 32);
        id_link(f, m);
        if (!m->open && m->in_fleet) k->fl_open++;
        m->open = 1;
        if (start > k->max_start) k->max_start = start;
        if (!m->in_fleet) {
            list_unlink(f, m);
            m->start = start;
            win_insert(f, k, m);
            if (near) {
                fl_join(f, k, m);
                grew = 1;
            }
        } else if (start > m->start) {
            m->start = start;
        }
    } else {
        if (!(m = fl_member_add(f, k, ev->host, hn, gpu, incid, start, near, tag))) return;
        grew = near;
    }
    member_values(m, r);
    if (m->in_fleet) {
        inc_absorb(&k->inc, m);
        inc_news(f, &k->inc, ev->ts_ms);
        if (grew) inc_grew(f, k, ev->ts_ms);
    } else {
        key_window(f, k, m, ev->ts_ms);
    }
}

/* A GPU incident ended. */
static void on_end(struct fleet *f, const struct event *ev, const struct fl_rec *r)
{
    struct fl_member *m = fl_member_by_id(f, r->s[R_ID]);
    if (!m || !m->open) { f->st.ignored++; return; }
    member_values(m, r);
    m->open = 0;
    m->end = rec_time(r, R_END, ev->ts_ms);
    struct fl_key *k = m->k;
    if (!m->in_fleet) return;
    k->fl_open--;
    if (m->action > k->inc.action) k->inc.action = m->action;
    if (m->end > k->inc.last_end) k->inc.last_end = m->end;
    inc_news(f, &k->inc, ev->ts_ms);
}

void fleet_feed(struct fleet *f, const struct event *ev, int tag)
{
    f->st.records++;
    if (gl_time_ok(ev->ts_ms) && ev->ts_ms > f->clock) f->clock = ev->ts_ms;
    const char *ds = ev->dataset;
    if (!ds || !ev->host || !*ev->host) { f->st.ignored++; return; }
    int episode = !strcmp(ds, "gpu.anomaly");
    if (!episode && strcmp(ds, "gpu.incident")) { f->st.ignored++; return; }
    struct fl_rec r;
    rec_read(f, ev, &r);
    double g;
    int gpu = rec_num(&r, R_GPU, 0, 1 << 20, &g) ? (int)g : -1;
    if (episode) { on_episode(f, ev, &r, gpu); f->st.ignored++; return; }
    if (!r.s[R_TYPE] || !r.s[R_ID] || !is_hex32(r.s[R_ID], r.sn[R_ID])) { f->st.bad++; return; }
    if (rec_is(&r, R_TYPE, "start")) on_start(f, ev, &r, gpu, tag);
    else if (rec_is(&r, R_TYPE, "end")) on_end(f, ev, &r);
    else f->st.ignored++;
}

/* ----------------------------------------------------------------- timers */

void fleet_tick(struct fleet *f, int64_t wall_ms)
{
    f->wall = wall_ms;
    if (!f->wall_first) f->wall_first = wall_ms;
    if (f->clock == INT64_MIN) return;
    if (f->clock != f->tick_clock) {
        f->tick_clock = f->clock;
        f->tick_wall = wall_ms;
    }
    int64_t now = f->clock + (wall_ms > f->tick_wall ? wall_ms - f->tick_wall : 0);
    for (struct fl_key *k = f->open_head, *next; k; k = next) {
        next = k->inc.onext;
        struct fl_inc *in = &k->inc;
        if (in->news_wall < 0) in->news_wall = wall_ms;   /* restored: from now on */
        int ok = settled(f, in);   /* else wait: a lagging partition may still bring news */
        if (ok && !k->fl_open && now - in->news >= f->c.hold_ms) {
            inc_end(f, k, in->last_end > in->at ? in->last_end : in->at, "every GPU incident ended");
        } else if (ok && now - in->news >= f->c.expire_ms) {
            inc_end(f, k, in->news + f->c.expire_ms, "no news of its GPUs for fleet.expire");
        } else if (in->pending && (++in->quiet_ticks >= FL_SETTLE_TICKS || in->news - in->at >= f->c.change_ms)) {
            inc_emit(f, k, FL_CHANGE, in->news, NULL);
        }
    }
    /* members out of every window (and here a while), then keys idle and empty */
    int64_t old = now - 2 * f->c.window_ms;
    while (f->w_head && f->w_head->start < old &&
           wall_ms - (f->w_head->arrived ? f->w_head->arrived : f->wall_first) >= FL_PRUNE_WALL_MS)
        member_free(f, f->w_head);
    while (f->lru_head && !f->lru_head->win_head && !f->lru_head->inc.open && f->lru_head->max_start < old)
        key_free(f, f->lru_head, NULL);
}

void fleet_flush(struct fleet *f)
{
    for (struct fl_key *k = f->open_head, *next; k; k = next) {
        struct fl_inc *in = &k->inc;
        next = in->onext;
        if (!k->fl_open && f->clock - in->news >= f->c.hold_ms)
            inc_end(f, k, in->last_end > in->at ? in->last_end : in->at, "every GPU incident ended");
        else if (in->pending)
            inc_emit(f, k, FL_CHANGE, in->news, NULL);
    }
}

void fleet_drop_tag(struct fleet *f, int tag)
{
    for (struct fl_key *k = f->lru_head; k; k = k->lnext) {
        for (struct fl_member *m = k->win_head, *next; m; m = next) {
            next = m->next;
            if (m->tag == tag) member_free(f, m);
        }
        for (struct fl_member *m = k->fl_head, *next; m; m = next) {
            next = m->next;
            if (m->tag == tag) member_free(f, m);
        }
        if (k->inc.open && !k->fl_head) {
            k->inc.open = 0;
            fl_open_link(f, k);
        }
    }
}

const struct fleet_stats *fleet_get_stats(struct fleet *f) { return &f->st; }

void fleet_free(struct fleet *f)
{
    if (!f) return;
    while (f->lru_head) {
        struct fl_key *k = f->lru_head;
        k->inc.open = 0;                 /* no records while freeing */
        fl_open_link(f, k);
        key_free(f, k, NULL);
    }
    free(f->kb);
    free(f->hb);
    free(f->ib);
    event_free(&f->rec);
    buf_free(&f->lb);
    buf_free(&f->lb2);
    free(f);
}
