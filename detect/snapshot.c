/* snapshot.c - see snapshot.h; the engine's types are in engine_int.h. */
#include "snapshot.h"
#include "../parsers/xid_catalog.h"
#include "engine_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define SNAP_MAX_STR 4096      /* a host name, UUID or bus id */

/* ---- little-endian writer and bounds-checked reader -------------------- */

static void w_u64(struct buf *b, uint64_t v, int bytes)
{
    unsigned char t[8];
    for (int i = 0; i < bytes; i++) t[i] = (unsigned char)(v >> (8 * i));
    buf_append(b, t, (size_t)bytes);
}
static void w_u8(struct buf *b, unsigned v) { w_u64(b, v, 1); }
static void w_u16(struct buf *b, unsigned v) { w_u64(b, v, 2); }
static void w_u32(struct buf *b, uint32_t v) { w_u64(b, v, 4); }
static void w_i64(struct buf *b, int64_t v) { w_u64(b, (uint64_t)v, 8); }
static void w_f64(struct buf *b, double v) { uint64_t u; memcpy(&u, &v, 8); w_u64(b, u, 8); }
static void w_f32(struct buf *b, float v) { uint32_t u; memcpy(&u, &v, 4); w_u64(b, u, 4); }
static void w_str(struct buf *b, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n > SNAP_MAX_STR) n = SNAP_MAX_STR;
    w_u16(b, (unsigned)n);
    if (n) buf_append(b, s, n);
}

/* The reader owns nothing; bad is set at the first read past the end and
 * every later read gives 0. */
struct rd {
    const unsigned char *p;
    size_t n, off;
    int bad;
};

static uint64_t r_u64(struct rd *r, int bytes)
{
    if (r->bad || r->n - r->off < (size_t)bytes) { r->bad = 1; return 0; }
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) v |= (uint64_t)r->p[r->off + (size_t)i] << (8 * i);
    r->off += (size_t)bytes;
    return v;
}
static unsigned r_u8(struct rd *r) { return (unsigned)r_u64(r, 1); }
static unsigned r_u16(struct rd *r) { return (unsigned)r_u64(r, 2); }
static uint32_t r_u32(struct rd *r) { return (uint32_t)r_u64(r, 4); }
static int64_t r_i64(struct rd *r) { return (int64_t)r_u64(r, 8); }
static double r_f64(struct rd *r) { uint64_t u = r_u64(r, 8); double v; memcpy(&v, &u, 8); return v; }
static float r_f32(struct rd *r) { uint32_t u = (uint32_t)r_u64(r, 4); float v; memcpy(&v, &u, 4); return v; }
/* A string into a new allocation (NULL when empty or bad). */
static char *r_str(struct rd *r)
{
    unsigned n = r_u16(r);
    if (r->bad || n > SNAP_MAX_STR || r->n - r->off < n) { r->bad = 1; return NULL; }
    char *s = n ? xstrndup((const char *)r->p + r->off, n) : NULL;
    r->off += n;
    return s;
}
static const unsigned char *r_bytes(struct rd *r, size_t n)
{
    if (r->bad || r->n - r->off < n) { r->bad = 1; return NULL; }
    const unsigned char *p = r->p + r->off;
    r->off += n;
    return p;
}

/* ---- fingerprint ------------------------------------------------------- */

static void feed_str(struct hash128 *h, const char *s)
{
    if (!s) s = "";
    hash128_feed(h, s, strlen(s) + 1);
}

uint64_t snapshot_fingerprint(const struct engine *e)
{
    const struct profile *p = e->prof;
    struct hash128 h;
    hash128_init(&h);
    hash128_feed_u64(&h, SNAP_FORMAT);
    feed_str(&h, GPULOG_VERSION);
    hash128_feed_u64(&h, EP_SIZE);
    hash128_feed_u64(&h, p->win_cap);
    hash128_feed_u64(&h, p->win_span_ms);
    hash128_feed_u64(&h, (uint64_t)p->star);
    hash128_feed_u64(&h, (uint64_t)p->incidents);
    for (size_t i = 0; i < p->nrules; i++) {
        const struct rule_cfg *rc = &p->rules[i];
        feed_str(&h, rc->id);
        feed_str(&h, rc->ops->name);
        feed_str(&h, rc->metric);
        hash128_feed_u64(&h, rc->ops->state_size);
        hash128_feed_u64(&h, (uint64_t)rc->severity);
        hash128_feed_u64(&h, (uint64_t)rc->for_n);
        hash128_feed_u64(&h, (uint64_t)rc->clear_n);
        hash128_feed_u64(&h, (uint64_t)rc->cooldown_ms);
        hash128_feed_u64(&h, (uint64_t)rc->change_ms);
        hash128_feed(&h, rc->p, sizeof rc->p);
        for (int k = 0; k < 6; k++) feed_str(&h, rc->aux[k] >= 0 ? p->slots.name[rc->aux[k]] : "-");
    }
    return h.a ^ h.b;
}

/* ---- save -------------------------------------------------------------- */

static void save_series(const struct engine *e, const struct series *s, struct buf *b)
{
    w_u16(b, s->slot);
    w_f64(b, s->last);
    w_i64(b, s->last_ts);
    w_u32(b, s->nsamples);
    w_u8(b, s->has_last);
    w_u8(b, s->w != NULL);
    if (s->w) {
        uint32_t tms[WIN_CAP];
        float v[WIN_CAP];
        unsigned n = win_export(s->w, tms, v);
        w_u16(b, s->w->cap);
        w_u32(b, s->w->span_ms);
        w_i64(b, s->w->base_ms);
        w_f64(b, s->w->mean);
        w_f64(b, s->w->m2);
        w_u16(b, s->w->since_fix);
        w_u16(b, n);
        for (unsigned k = 0; k < n; k++) { w_u32(b, tms[k]); w_f32(b, v[k]); }
    }
    size_t sz = e->slot_rules[s->slot].size;
    w_u32(b, (uint32_t)sz);
    if (sz) buf_append(b, s->rstate, sz);
}

/* The GPU's incident (detect/incident.c): field by field, 34 bytes plus 4
 * per rule, so that an open incident goes on under its id after a restore. */
static void save_incident(const struct ent_incident *in, struct buf *b)
{
    w_i64(b, in->start);
    w_i64(b, in->last);
    w_f32(b, in->peak_risk);
    w_u32(b, (uint32_t)in->id_hour);
    w_u16(b, in->open_eps);
    w_u8(b, in->nrules);
    w_u8(b, in->open);
    w_u8(b, in->id_n);
    w_u8(b, in->more);
    w_u8(b, (unsigned)(uint8_t)in->sev);
    for (unsigned i = 0; i < in->nrules && i < INC_RULES; i++) w_u32(b, in->rule_hash[i]);
    w_u8(b, (unsigned)(uint8_t)in->act);
    w_str(b, in->act_why);
}

/* The GPU's episode history of the action table (detect/action.c). */
static void save_hist(const struct ent *x, struct buf *b)
{
    w_u8(b, x->nhist);
    w_u8(b, x->hist_pos);
    for (unsigned i = 0; i < x->nhist && i < ENT_HIST; i++) {
        w_u32(b, x->hist[i].key);
        w_i64(b, x->hist[i].ts);
    }
}

static void save_ent(const struct engine *e, const struct ent *x, struct buf *b)
{
    w_u32(b, (uint32_t)x->gpu);
    w_str(b, x->uuid);
    w_str(b, x->bus_id);
    w_i64(b, x->last_ts);
    w_i64(b, x->step_ts);
    w_u32(b, x->nsamples);
    w_u32(b, x->step_n);
    w_f32(b, x->pmax);
    w_f32(b, x->pmin);
    w_f32(b, x->clk_busy);
    w_f32(b, x->interval_ms);
    w_u64(b, x->present, 8);
    for (size_t s = 0; s < ENG_MAX_SLOTS; s++)
        if (x->present & (1ULL << s)) w_f64(b, x->val[s]);
    w_u32(b, (uint32_t)e->ent_rules.size);
    if (e->ent_rules.size) buf_append(b, x->rstate, e->ent_rules.size);
    save_incident(&x->inc, b);
    save_hist(x, b);
    w_u16(b, (unsigned)x->nser);
    for (size_t i = 0; i < x->nser; i++) save_series(e, &x->ser[i], b);
}

int snapshot_save(const struct engine *e, int tag, int64_t offset, struct buf *out, char *err, size_t errlen)
{
    for (size_t i = 0; i < e->prof->nrules; i++)
        if (e->prof->rules[i].ops->free) {
            snprintf(err, errlen, "snapshot: rule %s keeps state a snapshot cannot copy", e->prof->rules[i].id);
            return GL_ERROR;
        }
    struct buf raw;
    buf_init(&raw);
    const struct profile_slots *ps = &e->prof->slots;
    w_u16(&raw, (unsigned)ps->n);
    for (size_t s = 0; s < ps->n; s++) w_str(&raw, ps->name[s]);
    uint32_t nhosts = 0, ngpus = 0;
    size_t count_at = raw.len;
    w_u32(&raw, 0);
    for (size_t bk = 0; bk < e->nhb; bk++)
        for (const struct host *h = e->hb[bk]; h; h = h->next) {
            if (h->tag != tag) continue;
            nhosts++;
            w_str(&raw, h->name);
            w_i64(&raw, h->block_ts);
            w_u8(&raw, (unsigned)h->have_block);
            w_u32(&raw, (uint32_t)h->nents);
            for (const struct ent *x = h->ents; x; x = x->next) {
                save_ent(e, x, &raw);
                ngpus++;
            }
        }
    for (int i = 0; i < 4; i++) raw.p[count_at + (size_t)i] = (char)(nhosts >> (8 * i));
    int rc = snapshot_wrap(e, offset, ngpus, raw.p, raw.len, out, err, errlen);
    if (rc != GL_OK) snprintf(err + strlen(err), errlen - strlen(err), " (partition %d)", tag);
    buf_free(&raw);
    return rc;
}

/* The CRC-32 of a snapshot: every header byte but the CRC field, then the
 * compressed payload. */
static uint32_t snap_crc(const unsigned char *p, size_t len)
{
    uLong c = crc32(0, p, 32);
    c = crc32(c, p + 36, (uInt)(len - 36));
    return (uint32_t)c;
}

int snapshot_wrap(const struct engine *e, int64_t offset, uint32_t ngpus, const void *raw, size_t rawlen,
                  struct buf *out, char *err, size_t errlen)
{
    if (rawlen > SNAP_MAX_RAW) {
        snprintf(err, errlen, "snapshot: %zu bytes of state, more than the %u bound", rawlen, SNAP_MAX_RAW);
        return GL_ERROR;
    }
    uLongf zlen = compressBound((uLong)rawlen);
    size_t at = out->len;
    buf_grow(out, SNAP_HEADER + zlen);
    /* zlib level 1: 3 times faster than 6 for 15 % more bytes */
    int zrc = compress2((Bytef *)out->p + at + SNAP_HEADER, &zlen, (const Bytef *)raw, (uLong)rawlen, 1);
    if (zrc != Z_OK) {
        snprintf(err, errlen, "snapshot: compression failed (zlib %d)", zrc);
        return GL_ERROR;
    }
    struct buf h;
    buf_init(&h);
    buf_append(&h, "GLSN", 4);
    w_u16(&h, SNAP_FORMAT);
    w_u16(&h, 0);
    w_u64(&h, snapshot_fingerprint(e), 8);
    w_i64(&h, offset);
    w_u32(&h, (uint32_t)rawlen);
    w_u32(&h, (uint32_t)zlen);
    w_u32(&h, 0);                        /* the CRC, below */
    w_u32(&h, ngpus);
    memcpy(out->p + at, h.p, SNAP_HEADER);
    buf_free(&h);
    out->len = at + SNAP_HEADER + zlen;
    uint32_t crc = snap_crc((const unsigned char *)out->p + at, SNAP_HEADER + zlen);
    for (int i = 0; i < 4; i++) out->p[at + 32 + (size_t)i] = (char)(crc >> (8 * i));
    return GL_OK;
}

/* ---- load -------------------------------------------------------------- */

/* Checks a rule-state block read back (copied in place, aligned): every
 * episode's flags and times and every detector's own check; *open gets
 * its open episodes. */
static int states_ok(const struct engine *e, const struct rule_set *rs, const unsigned char *blk, uint64_t *open)
{
    *open = 0;
    for (size_t k = 0; k < rs->n; k++) {
        const struct episode *ep = (const struct episode *)(blk + rs->off[k]);
        const struct rule_cfg *rc = &e->prof->rules[rs->idx[k]];
        if (ep->open > 1 || ep->id_set > 1 || ep->backoff > 4) return 0;   /* backoff: a shift (episode.c) */
        if (!gl_time_ok(ep->start) || !gl_time_ok(ep->first_bad) || !gl_time_ok(ep->last_anom) ||
            !gl_time_ok(ep->last_change))
            return 0;   /* times the episode subtracts (INT64_MIN overflowed the cooldown) */
        if (rc->ops->check && !rc->ops->check(rc, blk + rs->off[k] + EP_SIZE)) return 0;
        *open += ep->open;
    }
    return 1;
}

/* Reads x's incident back; NULL or why it is refused. Its open-episode
 * count is checked against the GPU's open episodes once they are read. */
static const char *load_incident(struct ent_incident *in, struct rd *r)
{
    memset(in, 0, sizeof *in);
    in->start = r_i64(r);
    in->last = r_i64(r);
    in->peak_risk = r_f32(r);
    in->id_hour = (int32_t)r_u32(r);
    in->open_eps = (uint16_t)r_u16(r);
    unsigned nrules = r_u8(r), open = r_u8(r), id_n = r_u8(r), more = r_u8(r), sev = r_u8(r);
    if (r->bad || nrules > INC_RULES || open > 1 || id_n > 254 || sev > 3 || !isfinite(in->peak_risk) ||
        in->peak_risk < 0 || in->peak_risk > 100 || (!open && in->open_eps) || !gl_time_ok(in->start) ||
        !gl_time_ok(in->last))
        return "an incident is damaged";
    in->nrules = (uint8_t)nrules;
    in->open = (uint8_t)open;
    in->id_n = (uint8_t)id_n;
    in->more = (uint8_t)more;
    in->sev = (int8_t)sev;
    for (unsigned i = 0; i < nrules; i++) in->rule_hash[i] = r_u32(r);
    unsigned act = r_u8(r);
    char *why = r_str(r);
    if (r->bad || (act >= ACT__N && act != 255)) { free(why); return "an incident is damaged"; }
    in->act = (int8_t)(act == 255 ? -1 : (int)act);
    snprintf(in->act_why, sizeof in->act_why, "%s", why ? why : "");
    free(why);
    return r->bad ? "an incident is damaged" : NULL;
}

/* Reads x's episode history back; NULL or why it is refused. */
static const char *load_hist(struct ent *x, struct rd *r)
{
    unsigned n = r_u8(r), pos = r_u8(r);
    if (r->bad || n > ENT_HIST || pos >= ENT_HIST) return "a GPU's history is damaged";
    x->nhist = (uint8_t)n;
    x->hist_pos = (uint8_t)pos;
    for (unsigned i = 0; i < n; i++) {
        x->hist[i].key = r_u32(r);
        x->hist[i].ts = r_i64(r);
        if (!gl_time_ok(x->hist[i].ts)) return "a GPU's history is damaged";
    }
    return r->bad ? "a GPU's history is damaged" : NULL;
}

/* Reads one series of x; slot_of maps the snapshot's metric names to slots. */
static const char *load_series(struct engine *e, struct ent *x, struct rd *r, const int *slot_of, unsigned nslots,
                               uint64_t *open_eps)
{
    unsigned si = r_u16(r);
    double last = r_f64(r);
    int64_t last_ts = r_i64(r);
    uint32_t nsamples = r_u32(r);
    unsigned has_last = r_u8(r), has_win = r_u8(r);
    if (r->bad || si >= nslots || has_last > 1 || has_win > 1) return "a series is damaged";
    if (!gl_time_ok(last_ts) || !isfinite(last)) return "a series' time or value is damaged";
    int slot = slot_of[si];
    if (slot < 0) return "a series names a metric this profile cannot track";
    if (x->sidx[slot]) return "a series is there twice";
    if (e->st.series >= e->prof->max_series) return "more series than max_series";
    struct series *s = eng_series_get(e, x, slot);
    if (!s) return "more series than max_series";
    s->last = last;
    s->last_ts = last_ts;
    s->nsamples = nsamples;
    s->has_last = (unsigned char)has_last;
    if (has_win != (s->w != NULL)) return "a series' window does not fit this profile";
    if (has_win) {
        unsigned cap = r_u16(r);
        uint32_t span = r_u32(r);
        int64_t base = r_i64(r);
        double mean = r_f64(r), m2 = r_f64(r);
        unsigned since_fix = r_u16(r), n = r_u16(r);
        if (r->bad || n > WIN_CAP || cap != s->w->cap) return "a window is damaged";
        uint32_t tms[WIN_CAP];
        float v[WIN_CAP];
        for (unsigned k = 0; k < n; k++) { tms[k] = r_u32(r); v[k] = r_f32(r); }
        if (r->bad || !win_import(s->w, cap, span, base, mean, m2, since_fix, n, tms, v)) return "a window is damaged";
    }
    const struct rule_set *rs = &e->slot_rules[slot];
    uint32_t sz = r_u32(r);
    const unsigned char *blk = r_bytes(r, sz);
    uint64_t open = 0;
    if (r->bad || sz != rs->size) return "a series' rule states do not fit this profile";
    if (sz) memcpy(s->rstate, blk, sz);     /* checked where it is aligned */
    if (sz && !states_ok(e, rs, s->rstate, &open)) { memset(s->rstate, 0, sz); return "a rule state is damaged"; }
    e->st.open += open;          /* counted as they are taken: engine_drop_tag uncounts them */
    *open_eps += open;
    return NULL;
}

static const char *load_ent(struct engine *e, struct host *h, struct rd *r, const int *slot_of, unsigned nslots)
{
    int gpu = (int)r_u32(r);
    char *uuid = r_str(r), *bus = r_str(r);
    if (r->bad || gpu < -1) { free(uuid); free(bus); return "a GPU is damaged"; }
    size_t before = h->nents;
    struct ent *x = eng_ent_get(e, h, gpu);
    if (h->nents == before) { free(uuid); free(bus); return "a GPU is there twice"; }
    free(x->uuid);
    free(x->bus_id);
    x->uuid = uuid;
    x->bus_id = bus;
    x->last_ts = r_i64(r);
    x->step_ts = r_i64(r);
    x->nsamples = r_u32(r);
    x->step_n = r_u32(r);
    x->pmax = r_f32(r);
    x->pmin = r_f32(r);
    x->clk_busy = r_f32(r);
    x->interval_ms = r_f32(r);
    x->last_seen_ms = e->clock;
    uint64_t present = r_u64(r, 8);
    /* the times the sample path subtracts from (an INT64_MIN last sample
     * overflowed the next one's check); a GPU without samples has none */
    if (!(x->nsamples ? gl_time_ok(x->last_ts) : x->last_ts == INT64_MIN || gl_time_ok(x->last_ts)) ||
        !gl_time_ok(x->step_ts))
        return "a GPU's time is damaged";
    if (r->bad || !isfinite(x->pmax) || !isfinite(x->pmin) || !isfinite(x->clk_busy) || !isfinite(x->interval_ms) ||
        x->interval_ms < 0 || x->interval_ms > 1e12f)
        return "a GPU is damaged";
    x->present = 0;
    for (unsigned s = 0; s < 64; s++) {
        if (!(present & (1ULL << s))) continue;
        double v = r_f64(r);
        if (s >= nslots || !isfinite(v)) return "a GPU's sample is damaged";
        if (slot_of[s] >= 0) { x->val[slot_of[s]] = v; x->present |= 1ULL << slot_of[s]; }
    }
    uint32_t sz = r_u32(r);
    const unsigned char *blk = r_bytes(r, sz);
    uint64_t open = 0;
    if (r->bad || sz != e->ent_rules.size) return "a GPU's rule states do not fit this profile";
    if (sz) memcpy(x->rstate, blk, sz);
    if (sz && !states_ok(e, &e->ent_rules, x->rstate, &open)) { memset(x->rstate, 0, sz); return "a rule state is damaged"; }
    e->st.open += open;
    const char *why = load_incident(&x->inc, r);
    if (why) return why;
    if ((why = load_hist(x, r))) return why;
    unsigned nser = r_u16(r);
    if (r->bad || nser > ENG_MAX_SLOTS) return "a GPU is damaged";
    for (unsigned i = 0; i < nser; i++) {
        why = load_series(e, x, r, slot_of, nslots, &open);
        if (why) return why;
    }
    /* an incident waiting for more episodes than are open would never end
     * (fewer: episodes opened before a reload turned incidents on) */
    if (x->inc.open_eps > open) return "an incident does not match its GPU's open episodes";
    if (x->last_ts > e->newest_ts) e->newest_ts = x->last_ts;
    return NULL;
}

/* The slot of a snapshot's metric name in e's profile: found, or added
 * like a "*" rule's metric (key_slot in engine.c), else -1. */
static int slot_for(struct engine *e, const char *name)
{
    struct profile_slots *ps = &e->prof->slots;
    for (size_t i = 0; i < ps->n; i++)
        if (!strcmp(ps->name[i], name)) return (int)i;
    if (!e->prof->star) return -1;
    int s = profile_slot(ps, name, 0);
    if (s >= 0) e->slot_star[s] = 1;
    return s;
}

static const char *load_payload(struct engine *e, int tag, struct rd *r, uint32_t ngpus)
{
    unsigned nslots = r_u16(r);
    if (r->bad || nslots > ENG_MAX_SLOTS) return "the metric table is damaged";
    int slot_of[ENG_MAX_SLOTS];
    for (unsigned i = 0; i < nslots; i++) {
        char *name = r_str(r);
        if (r->bad || !name) { free(name); return "the metric table is damaged"; }
        slot_of[i] = slot_for(e, name);
        free(name);
    }
    uint32_t nhosts = r_u32(r), seen = 0;
    if (r->bad || nhosts > ngpus + 1) return "the host count is damaged";
    for (uint32_t i = 0; i < nhosts; i++) {
        char *name = r_str(r);
        int64_t block_ts = r_i64(r);
        unsigned have_block = r_u8(r);
        uint32_t nents = r_u32(r);
        if (r->bad || !name || have_block > 1 || !nents || nents > ngpus - seen || !gl_time_ok(block_ts)) {
            free(name);
            return "a host is damaged";
        }
        struct host *h = eng_host_get(e, name, tag);
        free(name);
        if (h->nents) return "a host is there twice";
        for (uint32_t k = 0; k < nents; k++) {
            /* a 64 MiB snapshot takes a while: a stop signal is honoured (the partition is dropped anyway) */
            if (gl_interrupted && gl_interrupted()) return "interrupted by a signal";
            const char *why = load_ent(e, h, r, slot_of, nslots);
            if (why) return why;
        }
        seen += nents;
        h->block_ts = block_ts;
        h->have_block = (int)have_block;
    }
    if (seen != ngpus) return "the GPU count does not match";
    if (r->off != r->n) return "bytes after the last host";
    return NULL;
}

enum snap_refusal snapshot_load(struct engine *e, int tag, const void *p, size_t len, int64_t *offset,
                                char *err, size_t errlen)
{
    struct rd r = { .p = p, .n = len };
    const unsigned char *magic = r_bytes(&r, 4);
    unsigned fmt = r_u16(&r), reserved = r_u16(&r);
    uint64_t fp = r_u64(&r, 8);
    int64_t off = r_i64(&r);
    uint32_t raw_len = r_u32(&r), zlen = r_u32(&r), crc = r_u32(&r), ngpus = r_u32(&r);
    engine_drop_tag(e, tag);
    if (r.bad || memcmp(magic, "GLSN", 4)) {
        snprintf(err, errlen, "snapshot: not a gpulog state snapshot (%zu bytes)", len);
        return SNAP_CORRUPT;
    }
    if (fmt != SNAP_FORMAT) {
        snprintf(err, errlen, "snapshot: format version %u, this build reads %d", fmt, SNAP_FORMAT);
        return SNAP_OTHER_FORMAT;
    }
    if (fp != snapshot_fingerprint(e)) {
        snprintf(err, errlen, "snapshot: made under another detector profile or gpulog build (fingerprint %016llx, "
                 "ours %016llx)", (unsigned long long)fp, (unsigned long long)snapshot_fingerprint(e));
        return SNAP_OTHER_PROFILE;
    }
    if (raw_len > SNAP_MAX_RAW) {
        snprintf(err, errlen, "snapshot: %u bytes of state, more than the %u bound", raw_len, SNAP_MAX_RAW);
        return SNAP_TOO_BIG;
    }
    if (len - SNAP_HEADER != zlen || reserved || snap_crc(p, len) != crc) {
        snprintf(err, errlen, "snapshot: truncated or damaged (%zu bytes, the header says %u + %d)", len, zlen,
                 SNAP_HEADER);
        return SNAP_CORRUPT;
    }
    unsigned char *raw = xmalloc(raw_len ? raw_len : 1);
    uLongf got = raw_len;
    int zrc = uncompress(raw, &got, (const Bytef *)p + SNAP_HEADER, zlen);
    const char *why = NULL;
    if (zrc != Z_OK || got != raw_len) why = "its payload does not decompress to the size it says";
    else {
        struct rd pr = { .p = raw, .n = raw_len };
        why = load_payload(e, tag, &pr, ngpus);
    }
    free(raw);
    if (why) {
        engine_drop_tag(e, tag);
        snprintf(err, errlen, "snapshot: %s", why);
        return SNAP_CORRUPT;
    }
    if (offset) *offset = off;
    return SNAP_OK;
}
