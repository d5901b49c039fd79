/* event.c - see event.h. */
#include "event.h"

#include <stdlib.h>
#include <string.h>

void event_init(struct event *ev)
{
    memset(ev, 0, sizeof *ev);
    ev->offset = -1;
    buf_init(&ev->arena);
}

void event_free(struct event *ev)
{
    for (size_t i = 0; i < GL_ARRAY_LEN(ev->own); i++) free(ev->own[i]);
    free(ev->f);
    buf_free(&ev->arena);
    memset(ev, 0, sizeof *ev);
}

void event_reset(struct event *ev)
{
    for (size_t i = 0; i < GL_ARRAY_LEN(ev->own); i++) free(ev->own[i]);
    struct ev_field *f = ev->f;
    size_t capf = ev->capf;
    struct buf arena = ev->arena;
    memset(ev, 0, sizeof *ev);
    ev->f = f;
    ev->capf = capf;
    ev->arena = arena;
    ev->offset = -1;
    buf_reset(&ev->arena);
}

static struct ev_field *add(struct event *ev, const char *key, enum ev_type t)
{
    if (ev->nf == ev->capf) {
        ev->capf = ev->capf ? ev->capf * 2 : 32;
        ev->f = xrealloc(ev->f, ev->capf * sizeof *ev->f);
    }
    struct ev_field *f = &ev->f[ev->nf++];
    f->key = key;
    f->type = t;
    return f;
}

void event_add_int(struct event *ev, const char *key, int64_t v)
{
    add(ev, key, EV_INT)->v.i = v;
}

void event_add_num(struct event *ev, const char *key, double v)
{
    add(ev, key, EV_NUM)->v.d = v;
}

void event_add_bool(struct event *ev, const char *key, int v)
{
    add(ev, key, EV_BOOL)->v.b = v ? 1 : 0;
}

void event_add_str(struct event *ev, const char *key, const char *s, size_t n)
{
    struct ev_field *f = add(ev, key, EV_STR);
    f->v.s.off = (uint32_t)ev->arena.len;
    f->v.s.len = (uint32_t)n;
    buf_append(&ev->arena, s, n);
    buf_putc(&ev->arena, '\0');
}

void event_set_str(struct event *ev, const char *key, const char *s, size_t n)
{
    for (size_t i = 0; i < ev->nf; i++) {
        if (!strcmp(ev->f[i].key, key)) {
            ev->f[i].type = EV_STR;
            ev->f[i].v.s.off = (uint32_t)ev->arena.len;
            ev->f[i].v.s.len = (uint32_t)n;
            buf_append(&ev->arena, s, n);
            buf_putc(&ev->arena, '\0');
            return;
        }
    }
    event_add_str(ev, key, s, n);
}

const struct ev_field *event_get(const struct event *ev, const char *key)
{
    for (size_t i = 0; i < ev->nf; i++)
        if (ev->f[i].key == key || !strcmp(ev->f[i].key, key)) return &ev->f[i];
    return NULL;
}

int event_get_num(const struct event *ev, const char *key, double *out)
{
    const struct ev_field *f = event_get(ev, key);
    if (!f) return 0;
    switch (f->type) {
    case EV_INT: *out = (double)f->v.i; return 1;
    case EV_NUM: *out = f->v.d; return 1;
    case EV_BOOL: *out = f->v.b; return 1;
    default: return 0;
    }
}

const char *event_get_str(const struct event *ev, const char *key, size_t *n)
{
    const struct ev_field *f = event_get(ev, key);
    if (!f || f->type != EV_STR) return NULL;
    if (n) *n = f->v.s.len;
    return event_str(ev, f);
}

void event_make_id(struct event *ev, const char *host, const char *source,
                   uint64_t gen, int64_t offset, const char *line, size_t len)
{
    struct hash128 h;
    hash128_init(&h);
    hash128_feed(&h, host ? host : "", host ? strlen(host) : 0);
    hash128_feed(&h, source ? source : "-", source ? strlen(source) : 1);
    if (gen) {
        hash128_feed(&h, "\0gen", 4);
        hash128_feed_u64(&h, gen);
    }
    hash128_feed_u64(&h, (uint64_t)offset);
    hash128_feed(&h, line, len);
    hash128_hex(&h, ev->id);
}

/* Keys are static strings or strings owned by a parser's header table, so
 * the same pointers come back event after event: a small direct-mapped cache
 * remembers each key's length and whether it needs JSON escaping. */
struct key_info { const char *key; uint32_t len; uint32_t plain; };
static _Thread_local struct key_info key_cache[512];

static int key_is_plain(const char *k, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)k[i] < 0x20 || k[i] == '"' || k[i] == '\\' || (unsigned char)k[i] >= 0x80) return 0;
    return 1;
}

/* The length is measured every time (cheap); the escaping scan is cached by
 * pointer and length. A freed key whose address is reused by another key of
 * the same length keeps the cached verdict: parsers only free keys they made
 * with name_sanitize (always plain), and keys read from JSON are interned for
 * the life of the process, so a reused address never holds a non-plain key. */
static inline const struct key_info *key_lookup(const char *key)
{
    struct key_info *ki = &key_cache[((uintptr_t)key >> 3) & 511];
    size_t n = strlen(key);
    if (ki->key != key || ki->len != n) {
        ki->key = key;
        ki->len = (uint32_t)n;
        ki->plain = (uint32_t)key_is_plain(key, n);
    }
    return ki;
}

/* Writers on a pre-reserved buffer: the caller has grown b enough. */
static inline char *w_lit(char *p, const char *s, size_t n)
{
    memcpy(p, s, n);
    return p + n;
}
#define W_LIT(p, s) w_lit((p), (s), sizeof(s) - 1)

/* The digits are written in place from the last one: the length first, so
 * no copy (a memcpy of a variable 1-20 bytes was a libc call per number);
 * two digits per division, from a table (dmon rows: ~20 small integers per
 * event, 3.5 % of collect's CPU with one digit per division). */
static inline char *w_u64(char *p, uint64_t u)
{
    static const char d2[201] =
        "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
        "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
        "8081828384858687888990919293949596979899";
    if (u < 10) { *p = (char)('0' + u); return p + 1; }
    size_t n = 1;
    uint64_t t = u;
    for (; t >= 100; t /= 100) n += 2;
    if (t >= 10) n++;
    char *q = p + n;
    while (u >= 100) {
        q -= 2;
        memcpy(q, d2 + 2 * (u % 100), 2);
        u /= 100;
    }
    if (u >= 10) { q -= 2; memcpy(q, d2 + 2 * u, 2); }
    else *--q = (char)('0' + u);
    return p + n;
}

static inline char *w_i64(char *p, int64_t v)
{
    if (v < 0) { *p++ = '-'; return w_u64(p, (uint64_t)0 - (uint64_t)v); }
    return w_u64(p, (uint64_t)v);
}

void event_to_json(const struct event *ev, struct buf *b)
{
    /* worst case per field: key + quotes/colon/comma + 24-char number, or
     * 6 bytes per string byte (\u00XX escapes) */
    size_t need = 400 + 6 * (ev->kind ? strlen(ev->kind) : 0) + 6 * (ev->dataset ? strlen(ev->dataset) : 0) + (ev->host ? 6 * strlen(ev->host) : 0) + (ev->path ? 6 * strlen(ev->path) : 0) +
                  6 * ev->original_len;
    struct key_info kis[64];     /* copies: a later key may evict a cache slot */
    for (size_t i = 0; i < ev->nf; i++) {
        const struct key_info *ki = key_lookup(ev->f[i].key);
        if (i < 64) kis[i] = *ki;
        need += 6 * (size_t)ki->len + 32;
        if (ev->f[i].type == EV_STR) need += 6 * (size_t)ev->f[i].v.s.len + 2;
        if (ev->f[i].type == EV_NUM) need += 16;
    }
    buf_grow(b, need);
    char *p = b->p + b->len;
    char ts[25];
    gl_fmt_ts(ev->ts_ms, ts);
    p = W_LIT(p, "{\"@timestamp\":\"");
    p = w_lit(p, ts, 24);
    *p++ = '"';
    /* kind, dataset and id are plain names when gpulog made them, but come
     * from the input when the event was read back from JSON: escape then */
#define FLUSH_P() (b->len = (size_t)(p - b->p), b->p[b->len] = '\0')
#define RELOAD_P() (p = b->p + b->len)
#define PUT_STR(s, n) do { size_t n_ = (n); \
        if (key_is_plain((s), n_)) { *p++ = '"'; p = w_lit(p, (s), n_); *p++ = '"'; } \
        else { FLUSH_P(); buf_put_json_str(b, (s), n_); RELOAD_P(); } } while (0)
    const char *kind = ev->kind ? ev->kind : "metric";
    const char *ds = ev->dataset ? ev->dataset : "unknown";
    p = W_LIT(p, ",\"event.kind\":");
    PUT_STR(kind, strlen(kind));
    p = W_LIT(p, ",\"event.dataset\":");
    PUT_STR(ds, strlen(ds));
    p = W_LIT(p, ",\"event.id\":");
    PUT_STR(ev->id, strnlen(ev->id, 32));
    if (ev->created_ms) {
        gl_fmt_ts(ev->created_ms, ts);
        p = W_LIT(p, ",\"event.created\":\"");
        p = w_lit(p, ts, 24);
        *p++ = '"';
    }
    if (ev->host) {
        p = W_LIT(p, ",\"host.name\":");
        FLUSH_P(); buf_put_json_str(b, ev->host, strlen(ev->host)); RELOAD_P();
    }
    p = W_LIT(p, ",\"agent.name\":\"gpulog\",\"agent.version\":\"" GPULOG_VERSION "\"");
    if (ev->path) {
        p = W_LIT(p, ",\"log.file.path\":");
        FLUSH_P(); buf_put_json_str(b, ev->path, strlen(ev->path)); RELOAD_P();
    }
    if (ev->offset >= 0) {
        p = W_LIT(p, ",\"log.offset\":");
        p = w_i64(p, ev->offset);
    }
    for (size_t i = 0; i < ev->nf; i++) {
        const struct ev_field *f = &ev->f[i];
        const struct key_info *ki = i < 64 ? &kis[i] : key_lookup(f->key);
        *p++ = ',';
        if (ki->plain) {
            *p++ = '"';
            p = w_lit(p, f->key, ki->len);
            *p++ = '"';
        } else {
            FLUSH_P(); buf_put_json_str(b, f->key, ki->len); RELOAD_P();
        }
        *p++ = ':';
        switch (f->type) {
        case EV_INT: p = w_i64(p, f->v.i); break;
        case EV_NUM: FLUSH_P(); buf_put_double(b, f->v.d); RELOAD_P(); break;
        case EV_BOOL: if (f->v.b) p = W_LIT(p, "true"); else p = W_LIT(p, "false"); break;
        case EV_STR:
            FLUSH_P(); buf_put_json_str(b, ev->arena.p + f->v.s.off, f->v.s.len); RELOAD_P();
            break;
        }
    }
    if (ev->original) {
        p = W_LIT(p, ",\"event.original\":");
        FLUSH_P(); buf_put_json_str(b, ev->original, ev->original_len); RELOAD_P();
    }
    *p++ = '}';
    FLUSH_P();
#undef FLUSH_P
#undef RELOAD_P
#undef PUT_STR
}
