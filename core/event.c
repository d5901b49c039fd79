/* event.c - see event.h. */
#include "event.h"

#include "jsonbytes.h"

#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

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
    for (size_t i = 0; i < GL_ARRAY_LEN(ev->own); i++)
        if (ev->own[i]) free(ev->own[i]);
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

void event_fields_grow(struct event *ev)
{
    ev->capf = ev->capf ? ev->capf * 2 : 32;
    ev->f = xrealloc(ev->f, ev->capf * sizeof *ev->f);
}

/* A field whose key length is not known here: measured when needed. */
static struct ev_field *add(struct event *ev, const char *key, enum ev_type t)
{
    return event_field_k(ev, key, 0, t);
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

/* The hash state after host and source for the last pair seen: every
 * line of a source starts its id with the same two. Compared by content
 * (a freed name's address may come back holding another); names too long
 * for the copies are hashed each time. */
static _Thread_local struct {
    int ok;
    char host[64], source[256];
    struct hash128 h;
} id_prefix;

void event_id_sub(struct event *ev, uint64_t sub)
{
    struct hash128 h;
    hash128_init(&h);
    hash128_feed(&h, ev->id, 32);
    hash128_feed(&h, "\0sub", 4);
    hash128_feed_u64(&h, sub);
    hash128_hex(&h, ev->id);
}

void event_make_id(struct event *ev, const char *host, const char *source,
                   uint64_t gen, int64_t offset, const char *line, size_t len)
{
    const char *hs = host ? host : "", *ss = source ? source : "-";
    struct hash128 h;
    if (id_prefix.ok && !strcmp(hs, id_prefix.host) && !strcmp(ss, id_prefix.source)) {
        h = id_prefix.h;
    } else {
        size_t hn = strlen(hs), sn = strlen(ss);
        hash128_init(&h);
        hash128_feed(&h, hs, hn);
        hash128_feed(&h, ss, sn);
        id_prefix.ok = hn < sizeof id_prefix.host && sn < sizeof id_prefix.source;
        if (id_prefix.ok) {
            memcpy(id_prefix.host, hs, hn + 1);
            memcpy(id_prefix.source, ss, sn + 1);
            id_prefix.h = h;
        }
    }
    if (gen) {
        hash128_feed(&h, "\0gen", 4);
        hash128_feed_u64(&h, gen);
    }
    hash128_feed_u64(&h, (uint64_t)offset);
    hash128_feed(&h, line, len);
    hash128_hex(&h, ev->id);
}

uint32_t event_key_info(const char *key)
{
    size_t n = strlen(key);
    return (uint32_t)n | (json_plain(key, n) ? EV_KLEN_PLAIN : 0);
}

/* Keys are static strings or strings owned by a parser's header table, so
 * the same pointers come back event after event: a small direct-mapped cache
 * remembers whether each (pointer, length) needs JSON escaping. */
struct key_info { const char *key; uint32_t len; uint32_t plain; };
static _Thread_local struct key_info key_cache[512];

/* The length comes with the key (its field's klen, or measured by the
 * caller); the escaping scan is cached by pointer and length. A freed key
 * whose address is reused by another key of the same length keeps the
 * cached verdict: parsers only free keys they made with name_sanitize
 * (always plain), and keys read from JSON are interned for the life of the
 * process, so a reused address never holds a non-plain key. */
static inline int key_plain(const char *key, size_t n)
{
    struct key_info *ki = &key_cache[((uintptr_t)key >> 3) & 511];
    if (ki->key != key || ki->len != n) {
        ki->key = key;
        ki->len = (uint32_t)n;
        ki->plain = (uint32_t)json_plain(key, n);
    }
    return (int)ki->plain;
}

/* Writers on a pre-reserved buffer: the caller has grown b enough. */
static inline char *w_lit(char *p, const char *s, size_t n)
{
    memcpy(p, s, n);
    return p + n;
}
#define W_LIT(p, s) w_lit((p), (s), sizeof(s) - 1)

/* n bytes of s at p, inline: 16 (SSE2) or 8 at a time with an
 * overlapping last block (a memcpy of a variable length was a libc call per
 * key). Reads and writes nothing outside the n bytes. */
static inline char *w_copy(char *p, const char *s, size_t n)
{
#ifdef __SSE2__
    if (n >= 16) {
        for (size_t i = 0; i + 16 < n; i += 16)
            _mm_storeu_si128((__m128i *)(void *)(p + i), _mm_loadu_si128((const __m128i *)(const void *)(s + i)));
        _mm_storeu_si128((__m128i *)(void *)(p + n - 16), _mm_loadu_si128((const __m128i *)(const void *)(s + n - 16)));
        return p + n;
    }
#endif
    if (n >= 8) {
        uint64_t w;
        for (size_t i = 0; i + 8 < n; i += 8) {
            memcpy(&w, s + i, 8);
            memcpy(p + i, &w, 8);
        }
        memcpy(&w, s + n - 8, 8);
        memcpy(p + n - 8, &w, 8);
    } else if (n >= 4) {
        uint32_t a, b;
        memcpy(&a, s, 4);
        memcpy(&b, s + n - 4, 4);
        memcpy(p, &a, 4);
        memcpy(p + n - 4, &b, 4);
    } else {
        for (size_t i = 0; i < n; i++) p[i] = s[i];
    }
    return p + n;
}

/* "YYYY-MM-DDTHH:MM:SS.mmmZ" (24 bytes, gl_fmt_ts) at p. The first 20
 * bytes are kept for the last two seconds written: an event's @timestamp
 * and event.created are mostly the same seconds as the event before's. */
static inline char *w_ts(char *p, int64_t ms)
{
    static _Thread_local int64_t sec_of[2] = { -1, -1 };
    static _Thread_local char head[2][20];
    static _Thread_local int last;
    if (ms < 0) {
        char t[25];
        gl_fmt_ts(ms, t);
        return w_lit(p, t, 24);
    }
    int64_t sec = ms / 1000;
    int msec = (int)(ms - sec * 1000);
    int k = sec_of[last] == sec ? last : sec_of[last ^ 1] == sec ? last ^ 1 : -1;
    if (k < 0) {                          /* the slot used less recently */
        char t[25];
        gl_fmt_ts(ms, t);
        k = last ^ 1;
        memcpy(head[k], t, 20);
        sec_of[k] = sec;
    }
    last = k;
    memcpy(p, head[k], 20);
    p[20] = (char)('0' + msec / 100);
    p[21] = (char)('0' + msec / 10 % 10);
    p[22] = (char)('0' + msec % 10);
    p[23] = 'Z';
    return p + 24;
}

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
    if (u < 100) { memcpy(p, d2 + 2 * u, 2); return p + 2; }
    if (u < 10000) {                      /* most metrics: no loop */
        uint64_t hi = u / 100, lo = u % 100;
        if (hi < 10) { *p = (char)('0' + hi); memcpy(p + 1, d2 + 2 * lo, 2); return p + 3; }
        memcpy(p, d2 + 2 * hi, 2);
        memcpy(p + 2, d2 + 2 * lo, 2);
        return p + 4;
    }
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
    const char *kind = ev->kind ? ev->kind : "metric";
    const char *ds = ev->dataset ? ev->dataset : "unknown";
    size_t kind_n = strlen(kind), ds_n = strlen(ds), id_n = strnlen(ev->id, 32);
    size_t host_n = ev->host ? strlen(ev->host) : 0, path_n = ev->path ? strlen(ev->path) : 0;
    /* the header's worst case (6 bytes per string byte: \u00XX escapes);
     * each field makes room for itself below */
    buf_grow(b, 400 + 6 * (kind_n + ds_n + host_n + path_n + ev->original_len));
    char *p = b->p + b->len, *end = b->p + b->cap;
    p = W_LIT(p, "{\"@timestamp\":\"");
    p = w_ts(p, ev->ts_ms);
    *p++ = '"';
    /* kind, dataset and id are plain names when gpulog made them, but come
     * from the input when the event was read back from JSON: escape then */
#define FLUSH_P() (b->len = (size_t)(p - b->p), b->p[b->len] = '\0')
#define RELOAD_P() (p = b->p + b->len, end = b->p + b->cap)
#define PUT_STR(s, n, plain) do { size_t n_ = (n); \
        if (plain) { *p++ = '"'; p = w_copy(p, (s), n_); *p++ = '"'; } \
        else { FLUSH_P(); buf_put_json_str(b, (s), n_); RELOAD_P(); } } while (0)
    p = W_LIT(p, ",\"event.kind\":");
    PUT_STR(kind, kind_n, key_plain(kind, kind_n));
    p = W_LIT(p, ",\"event.dataset\":");
    PUT_STR(ds, ds_n, key_plain(ds, ds_n));
    p = W_LIT(p, ",\"event.id\":");
    PUT_STR(ev->id, id_n, json_plain(ev->id, id_n));
    if (ev->created_ms) {
        p = W_LIT(p, ",\"event.created\":\"");
        p = w_ts(p, ev->created_ms);
        *p++ = '"';
    }
    if (ev->host) {
        p = W_LIT(p, ",\"host.name\":");
        PUT_STR(ev->host, host_n, json_plain(ev->host, host_n));
    }
    p = W_LIT(p, ",\"agent.name\":\"gpulog\",\"agent.version\":\"" GPULOG_VERSION "\"");
    if (ev->path) {
        p = W_LIT(p, ",\"log.file.path\":");
        PUT_STR(ev->path, path_n, json_plain(ev->path, path_n));
    }
    if (ev->offset >= 0) {
        p = W_LIT(p, ",\"log.offset\":");
        p = w_i64(p, ev->offset);
    }
    for (size_t i = 0; i < ev->nf; i++) {
        const struct ev_field *f = &ev->f[i];
        size_t kl = event_key_len(f);
        int plain = (f->klen & EV_KLEN_PLAIN) || key_plain(f->key, kl);   /* the adder's verdict, else the cache's */
        /* worst case: the key escaped, quotes, colon, comma and a 20-digit
         * integer or "false" (numbers and strings grow the buffer themselves) */
        size_t room = 6 * kl + 32;
        if ((size_t)(end - p) <= room) {
            FLUSH_P();
            buf_grow(b, room);
            RELOAD_P();
        }
        *p++ = ',';
        PUT_STR(f->key, kl, plain);
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
    if ((size_t)(end - p) <= 32 + 6 * ev->original_len) {
        FLUSH_P();
        buf_grow(b, 32 + 6 * ev->original_len);
        RELOAD_P();
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
