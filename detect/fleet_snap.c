/* fleet_snap.c - the fleet correlator's state of one input partition (see
 * fleet.h: fleet_save, fleet_load), for the consumer's --state-topic.
 *
 * One JSON object (docs/operations.md):
 *   {"format": "gpulog-fleet", "v": 1, "offset": N, "clock": MS,
 *    "keys": [{"s": SIGNATURE, "l": LABEL ("" = time alone), "g": GROUP,
 *              "b": BUCKET, "n": N,                 (the id counter, when set)
 *              "f": {"id", "first", "last", "le", "news", "at", "eg", "eh",
 *                    "seq", "sev", "risk", "a"}}],  (its open fleet incident)
 *    "members": [{"k": KEY INDEX, "h": HOST, "i": GPU (-1 host level),
 *                 "id": INCIDENT ID, "t": START, "e": END (ended only),
 *                 "sev", "risk", "a": ACTION, "in": 1 (in the fleet incident)}]}
 * Times are epoch ms. The keys are those of the partition's members and
 * those that numbered a fleet incident within two windows (their counters
 * keep ids apart after a restart). Loading checks everything before it
 * adds anything: a refusal says why and changes nothing
 * (tests/fuzz/fuzz_fleet_snap.c).
 */
#include "fleet_int.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SNAP_FORMAT_NAME "gpulog-fleet"
#define SNAP_MAX_BYTES (64u << 20)

/* ------------------------------------------------------------------- save */

static json_t *inc_json(const struct fl_inc *in)
{
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(in->id));
    json_object_set_new(o, "first", json_integer(in->first));
    json_object_set_new(o, "last", json_integer(in->last));
    json_object_set_new(o, "le", json_integer(in->last_end));
    json_object_set_new(o, "news", json_integer(in->news));
    json_object_set_new(o, "at", json_integer(in->at));
    json_object_set_new(o, "eg", json_integer(in->eg));
    json_object_set_new(o, "eh", json_integer(in->eh));
    json_object_set_new(o, "seq", json_integer(in->seq));
    json_object_set_new(o, "sev", json_integer(in->sev));
    json_object_set_new(o, "risk", json_real(in->risk));
    if (in->action) json_object_set_new(o, "a", json_string(fl_actions[in->action]));
    return o;
}

static json_t *member_json(const struct fl_member *m, size_t ki)
{
    json_t *o = json_object();
    json_object_set_new(o, "k", json_integer((json_int_t)ki));
    json_object_set_new(o, "h", json_string(m->kh->name));
    json_object_set_new(o, "i", json_integer(m->gpu));
    json_object_set_new(o, "id", json_stringn(m->incid, 32));
    json_object_set_new(o, "t", json_integer(m->start));
    if (!m->open) json_object_set_new(o, "e", json_integer(m->end));
    json_object_set_new(o, "sev", json_integer(m->sev));
    json_object_set_new(o, "risk", json_real(m->risk));
    if (m->action) json_object_set_new(o, "a", json_string(fl_actions[m->action]));
    if (m->in_fleet) json_object_set_new(o, "in", json_integer(1));
    return o;
}

int fleet_save(const struct fleet *f, int tag, int64_t offset, struct buf *out, char *err, size_t errlen)
{
    json_t *root = json_object(), *keys = json_array(), *members = json_array();
    json_object_set_new(root, "format", json_string(SNAP_FORMAT_NAME));
    json_object_set_new(root, "v", json_integer(1));
    json_object_set_new(root, "offset", json_integer(offset));
    if (f->clock != INT64_MIN) json_object_set_new(root, "clock", json_integer(f->clock));
    int64_t recent = f->clock == INT64_MIN ? INT64_MIN : f->clock - 2 * f->c.window_ms;
    size_t nk = 0;
    for (const struct fl_key *k = f->lru_head; k; k = k->lnext) {
        int mine = 0, in_inc = 0;
        for (int l = 0; l < 2; l++)
            for (const struct fl_member *m = l ? k->fl_head : k->win_head; m; m = m->next)
                if (m->tag == tag) { mine = 1; in_inc |= m->in_fleet; }
        if (!mine && !(k->id_set && k->max_start >= recent)) continue;
        json_t *o = json_object();
        json_object_set_new(o, "s", json_string(k->sig));
        json_object_set_new(o, "l", json_string(k->lab >= 0 ? f->labs[k->lab].name : ""));
        json_object_set_new(o, "g", json_string(k->grp));
        if (k->id_set) {
            json_object_set_new(o, "b", json_integer(k->id_bucket));
            json_object_set_new(o, "n", json_integer(k->id_n));
        }
        if (k->inc.open && in_inc) json_object_set_new(o, "f", inc_json(&k->inc));
        json_array_append_new(keys, o);
        for (int l = 0; l < 2; l++)
            for (const struct fl_member *m = l ? k->fl_head : k->win_head; m; m = m->next)
                if (m->tag == tag) json_array_append_new(members, member_json(m, nk));
        nk++;
    }
    json_object_set_new(root, "keys", keys);
    json_object_set_new(root, "members", members);
    char *s = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (!s) {
        snprintf(err, errlen, "fleet state: could not encode");
        return GL_ERROR;
    }
    buf_puts(out, s);
    free(s);
    return GL_OK;
}

/* ------------------------------------------------------------------- load */

struct snap_key {
    const char *sig, *grp;
    size_t sn, gn;
    int lab, skip, has_n, has_f;
    int64_t b, n;
    struct fl_inc in;
};

struct snap_member {
    size_t k;
    const char *host;
    size_t hn;
    int64_t gpu, start, end;
    int ended, in;
    const char *id;
    int8_t sev;
    float risk;
    uint8_t action;
};

/* A check of the loader: 0 with the reason in err when it fails. */
#define NEED(cond, ...) do { if (!(cond)) { snprintf(err, errlen, "fleet state: " __VA_ARGS__); return 0; } } while (0)

static int get_int(json_t *o, const char *name, int need, int64_t lo, int64_t hi, int64_t *out, char *err, size_t errlen)
{
    json_t *v = json_object_get(o, name);
    if (!v) {
        NEED(!need, "'%s' is missing", name);
        return 1;
    }
    NEED(json_is_integer(v), "'%s' is not an integer", name);
    json_int_t x = json_integer_value(v);
    NEED(x >= lo && x <= hi, "'%s' %lld is out of range %lld..%lld", name, (long long)x, (long long)lo, (long long)hi);
    *out = x;
    return 1;
}

static int get_time(json_t *o, const char *name, int need, int64_t *out, char *err, size_t errlen)
{
    return get_int(o, name, need, -GL_TIME_LIMIT, GL_TIME_LIMIT, out, err, errlen);
}

/* A string of at most FL_TEXT_MAX bytes without NUL (empty only when may_be_empty). */
static int get_str(json_t *o, const char *name, int may_be_empty, const char **s, size_t *n, char *err, size_t errlen)
{
    json_t *v = json_object_get(o, name);
    NEED(v && json_is_string(v), "'%s' is missing or not a string", name);
    *s = json_string_value(v);
    *n = json_string_length(v);
    NEED(*n <= FL_TEXT_MAX && strlen(*s) == *n, "'%s' is longer than %d bytes or holds a NUL", name, FL_TEXT_MAX);
    NEED(*n || may_be_empty, "'%s' is empty", name);
    return 1;
}

static int get_id(json_t *o, const char *name, const char **s, char *err, size_t errlen)
{
    size_t n;
    if (!get_str(o, name, 0, s, &n, err, errlen)) return 0;
    int ok = n == 32;
    for (size_t i = 0; ok && i < n; i++) ok = ((*s)[i] >= '0' && (*s)[i] <= '9') || ((*s)[i] >= 'a' && (*s)[i] <= 'f');
    NEED(ok, "'%s' is not 32 lowercase hex digits", name);
    return 1;
}

static int get_risk(json_t *o, float *out, int8_t *sev, uint8_t *action, char *err, size_t errlen)
{
    int64_t s = 0;
    if (!get_int(o, "sev", 0, 0, 100, &s, err, errlen)) return 0;
    *sev = (int8_t)s;
    json_t *v = json_object_get(o, "risk");
    double r = 0;
    if (v) {
        NEED(json_is_number(v), "'risk' is not a number");
        r = json_number_value(v);
        NEED(r >= 0 && r <= 100, "'risk' is out of range 0..100");
    }
    *out = (float)r;
    *action = 0;
    if ((v = json_object_get(o, "a"))) {
        NEED(json_is_string(v), "'a' is not a string");
        *action = fl_action_of(json_string_value(v), json_string_length(v));
        NEED(*action, "'a' is not an action (%s...)", fl_actions[1]);
    }
    return 1;
}

static int check_inc(json_t *o, struct fl_inc *in, char *err, size_t errlen)
{
    NEED(json_is_object(o), "'f' is not an object");
    const char *id;
    int64_t eg = 0, eh = 0, seq = 0;
    memset(in, 0, sizeof *in);
    if (!get_id(o, "id", &id, err, errlen) || !get_time(o, "first", 1, &in->first, err, errlen) ||
        !get_time(o, "last", 1, &in->last, err, errlen) || !get_time(o, "le", 0, &in->last_end, err, errlen) ||
        !get_time(o, "news", 1, &in->news, err, errlen) || !get_time(o, "at", 1, &in->at, err, errlen) ||
        !get_int(o, "eg", 0, 0, 1 << 22, &eg, err, errlen) || !get_int(o, "eh", 0, 0, 1 << 22, &eh, err, errlen) ||
        !get_int(o, "seq", 0, 0, UINT32_MAX, &seq, err, errlen) || !get_risk(o, &in->risk, &in->sev, &in->action, err, errlen))
        return 0;
    NEED(in->first <= in->last, "a fleet incident's first start is after its last");
    memcpy(in->id, id, 32);
    in->eg = (uint32_t)eg;
    in->eh = (uint32_t)eh;
    in->seq = (uint32_t)seq;
    in->open = 1;
    return 1;
}

static int check_key(const struct fleet *f, json_t *o, struct snap_key *k, char *err, size_t errlen)
{
    NEED(json_is_object(o), "a key is not an object");
    const char *lab;
    size_t ln;
    memset(k, 0, sizeof *k);
    if (!get_str(o, "s", 0, &k->sig, &k->sn, err, errlen) || !get_str(o, "l", 1, &lab, &ln, err, errlen) ||
        !get_str(o, "g", 1, &k->grp, &k->gn, err, errlen))
        return 0;
    NEED(!ln == !k->gn, "a key has a label without a group or a group without a label");
    k->lab = -1;
    if (ln) {
        k->skip = 1;   /* a label no longer configured: its keys are not used */
        for (size_t i = 0; i < f->nlabs; i++)
            if (!strcmp(f->labs[i].name, lab)) { k->lab = (int)i; k->skip = 0; }
    }
    json_t *n = json_object_get(o, "n");
    if (n) {
        k->has_n = 1;
        if (!get_int(o, "b", 1, -GL_TIME_LIMIT, GL_TIME_LIMIT, &k->b, err, errlen) ||
            !get_int(o, "n", 1, 0, UINT32_MAX, &k->n, err, errlen))
            return 0;
    }
    json_t *inc = json_object_get(o, "f");
    if (inc) {
        if (!check_inc(inc, &k->in, err, errlen)) return 0;
        k->has_f = 1;
    }
    return 1;
}

static int check_member(json_t *o, size_t nkeys, struct snap_member *m, char *err, size_t errlen)
{
    NEED(json_is_object(o), "a member is not an object");
    int64_t ki = 0, in = 0;
    memset(m, 0, sizeof *m);
    if (!get_int(o, "k", 1, 0, (int64_t)nkeys - 1, &ki, err, errlen) || !get_str(o, "h", 0, &m->host, &m->hn, err, errlen) ||
        !get_int(o, "i", 1, -1, 1 << 20, &m->gpu, err, errlen) || !get_id(o, "id", &m->id, err, errlen) ||
        !get_time(o, "t", 1, &m->start, err, errlen) || !get_int(o, "in", 0, 0, 1, &in, err, errlen) ||
        !get_risk(o, &m->risk, &m->sev, &m->action, err, errlen))
        return 0;
    if (json_object_get(o, "e")) {
        if (!get_time(o, "e", 1, &m->end, err, errlen)) return 0;
        m->ended = 1;
    }
    m->k = (size_t)ki;
    m->in = (int)in;
    return 1;
}

/* Checks the whole snapshot into ks / ms (allocated, the caller frees). */
static int check_all(const struct fleet *f, json_t *root, struct snap_key **ks, size_t *nk, struct snap_member **ms,
                     size_t *nm, int64_t *offset, int64_t *clock, char *err, size_t errlen)
{
    NEED(json_is_object(root), "not a JSON object");
    json_t *fmt = json_object_get(root, "format");
    NEED(fmt && json_is_string(fmt) && !strcmp(json_string_value(fmt), SNAP_FORMAT_NAME),
         "not a fleet state (format is not \"%s\")", SNAP_FORMAT_NAME);
    int64_t v = 0;
    if (!get_int(root, "v", 1, 0, 1000, &v, err, errlen)) return 0;
    NEED(v == 1, "version %lld is not 1", (long long)v);
    *clock = INT64_MIN;
    if (!get_int(root, "offset", 1, 0, INT64_MAX, offset, err, errlen) || !get_time(root, "clock", 0, clock, err, errlen))
        return 0;
    json_t *keys = json_object_get(root, "keys"), *members = json_object_get(root, "members");
    NEED(keys && json_is_array(keys) && members && json_is_array(members), "'keys' or 'members' is not an array");
    *nk = json_array_size(keys);
    *nm = json_array_size(members);
    NEED(*nk <= (size_t)f->c.max_keys, "%zu keys, more than fleet.max_keys %lld", *nk, (long long)f->c.max_keys);
    NEED(*nm <= (size_t)f->c.max_members, "%zu members, more than fleet.max_members %lld", *nm, (long long)f->c.max_members);
    *ks = xcalloc(*nk + 1, sizeof **ks);
    *ms = xcalloc(*nm + 1, sizeof **ms);
    for (size_t i = 0; i < *nk; i++) {
        if (!check_key(f, json_array_get(keys, i), &(*ks)[i], err, errlen)) return 0;
        for (size_t j = 0; j < i; j++) {
            const struct snap_key *a = &(*ks)[i], *b = &(*ks)[j];
            NEED(!(a->lab == b->lab && a->sn == b->sn && a->gn == b->gn && !memcmp(a->sig, b->sig, a->sn) &&
                   !memcmp(a->grp, b->grp, a->gn)) || a->skip,
                 "key %zu repeats key %zu", i, j);
            if (i >= 64) break;   /* duplicates past that are merged, not refused: O(n) */
        }
    }
    for (size_t i = 0; i < *nm; i++)
        if (!check_member(json_array_get(members, i), *nk, &(*ms)[i], err, errlen)) return 0;
    return 1;
}

/* Adds a checked key entry: the key, its counter, its fleet incident. */
static struct fl_key *apply_key(struct fleet *f, const struct snap_key *e)
{
    struct fl_key *k = fl_key_get(f, e->sig, e->sn, e->lab, e->grp, e->gn);
    if (e->has_n && (!k->id_set || e->b > k->id_bucket || (e->b == k->id_bucket && (uint32_t)e->n > k->id_n))) {
        k->id_bucket = e->b;
        k->id_n = (uint32_t)e->n;
        k->id_set = 1;
    }
    if (!e->has_f) return k;
    struct fl_inc *in = &k->inc;
    if (!in->open) {
        *in = e->in;                     /* not linked yet: fl_open_link links it */
        in->oprev = in->onext = NULL;
        in->news_wall = -1;              /* settled from the next tick on */
        fl_open_link(f, k);
    } else if (!memcmp(in->id, e->in.id, 32)) {
        if (e->in.first < in->first) in->first = e->in.first;
        if (e->in.last > in->last) in->last = e->in.last;
        if (e->in.last_end > in->last_end) in->last_end = e->in.last_end;
        if (e->in.news > in->news) in->news = e->in.news;
        if (e->in.at > in->at) in->at = e->in.at;
        if (e->in.eg > in->eg) in->eg = e->in.eg;
        if (e->in.eh > in->eh) in->eh = e->in.eh;
        if (e->in.seq > in->seq) in->seq = e->in.seq;
        if (e->in.sev > in->sev) in->sev = e->in.sev;
        if (e->in.risk > in->risk) in->risk = e->in.risk;
        if (e->in.action > in->action) in->action = e->in.action;
    }
    return k;
}

int fleet_load(struct fleet *f, int tag, const void *p, size_t len, int64_t *offset, char *err, size_t errlen)
{
    if (len > SNAP_MAX_BYTES) {
        snprintf(err, errlen, "fleet state: %zu bytes, more than %u", len, SNAP_MAX_BYTES);
        return GL_ERROR;
    }
    json_error_t je;
    json_t *root = json_loadb(p, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        snprintf(err, errlen, "fleet state: not JSON: %s at %d:%d", je.text, je.line, je.column);
        return GL_ERROR;
    }
    struct snap_key *ks = NULL;
    struct snap_member *ms = NULL;
    size_t nk = 0, nm = 0;
    int64_t off = 0, clock = INT64_MIN;
    if (!check_all(f, root, &ks, &nk, &ms, &nm, &off, &clock, err, errlen)) {
        json_decref(root);
        free(ks);
        free(ms);
        return GL_ERROR;
    }
    struct fl_key **kp = xcalloc(nk + 1, sizeof *kp);
    for (size_t i = 0; i < nk; i++) kp[i] = ks[i].skip ? NULL : apply_key(f, &ks[i]);
    for (size_t i = 0; i < nm; i++) {
        const struct snap_member *e = &ms[i];
        struct fl_key *k = kp[e->k];
        if (!k || fl_member_by_id(f, e->id)) continue;
        int in = e->in && ks[e->k].has_f && k->inc.open && !memcmp(k->inc.id, ks[e->k].in.id, 32);
        struct fl_member *m = fl_member_add(f, k, e->host, e->hn, (int)e->gpu, e->id, e->start, in, tag);
        if (!m) continue;
        m->sev = e->sev;
        m->risk = e->risk;
        m->action = e->action;
        if (e->ended) {
            m->open = 0;
            m->end = e->end;
            if (in) k->fl_open--;
        }
    }
    /* members restored into the window of a key whose fleet incident is
     * open (their snapshot predates it) join it, as they would have; a
     * fleet incident none of whose members came back is not kept */
    for (size_t i = 0; i < nk; i++) {
        struct fl_key *k = kp[i];
        if (!k || !k->inc.open) continue;
        for (struct fl_member *m = k->win_head, *next; m; m = next) {
            next = m->next;
            if (m->start >= k->inc.first - f->c.window_ms && m->start <= k->inc.last + f->c.window_ms) fl_join(f, k, m);
        }
        if (!k->fl_head) {
            k->inc.open = 0;
            fl_open_link(f, k);
        }
    }
    if (clock > f->clock) f->clock = clock;
    *offset = off;
    free(kp);
    free(ks);
    free(ms);
    json_decref(root);
    return GL_OK;
}
