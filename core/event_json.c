/*
 * event_json.c - decoding schema-v1 JSON into events (see event.h).
 *
 * event_from_json is a flat, single-pass decoder: no JSON tree, no
 * allocation per event once its scratch buffers have grown to the largest
 * message seen. It accepts exactly what jansson's json_loadb(...,
 * JSON_REJECT_DUPLICATES) accepts (RFC 8259 grammar, strict UTF-8, no \u0000,
 * no lone surrogates, no duplicate key in any object, integers that fit
 * int64_t, reals that do not overflow, nesting depth <= 2048) and builds the
 * same event as the tree walk event_from_json_jansson, which stays as the
 * reference the differential fuzz target (tests/fuzz/fuzz_event_json_diff.c)
 * and the decode bench compare it with.
 */
#include "event_json_int.h"
#include "jsonbytes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- flat decoder */

#define JSON_MAX_DEPTH 2048   /* jansson's JSON_PARSER_MAX_DEPTH: every value counts, the top object is 1 */

/* One key seen in the object being parsed (the duplicate check): obj numbers
 * the objects of one message, so nested objects share the table. */
struct kslot {
    uint64_t h;
    const char *p;
    uint32_t n, obj, gen;
};

/* A top-level key of the message being decoded; hashed only when needed. */
struct kcur {
    const char *p;
    uint32_t n, hashed;
    uint64_t h;
};

/* A top-level key of an accepted message's layout: its bytes in the
 * layout's buffer and, for a field, its interned copy. */
struct klay {
    uint32_t off, n;          /* the key; its quotes are at off - 1 and off + n */
    const char *ik;
    unsigned char plain;      /* no '"', '\\' or control byte: "key" is its one unescaped spelling */
    unsigned char hk;         /* its enum hkey */
};

/* The keys, in order, of a message accepted recently. */
struct layout {
    struct klay *k;
    size_t n, cap;
    struct buf bytes;
    uint64_t used;            /* when it last matched a whole message (LRU) */
};
#define NLAYOUT 4             /* e.g. GPUs with and without memory temperature */

/* The decoder's scratch, owned by this file and reused message after
 * message: it grows to the largest message seen and is never freed. */
static struct {
    struct buf str;           /* decoded strings with escapes (keys, header values) */
    struct kslot *set;        /* duplicate-key set, generation-stamped */
    size_t setcap, setn;
    uint32_t gen;
    struct kcur *cur;         /* the message's top-level keys, in order */
    size_t capcur;
    uint32_t *fki;            /* field i's key is cur[fki[i]] */
    size_t capfki;
    /* A stream repeats a few layouts: while a message's keys equal those
     * of one of the last NLAYOUT layouts accepted, position by position,
     * they are distinct (that message had no duplicate) and their interned
     * copies are known, so nothing is hashed. When no layout matches any
     * more, the keys so far go into the duplicate set and decoding goes on
     * the general way. */
    struct layout lay[NLAYOUT];
    uint64_t clock;
} ds;

/* Scans the string whose opening quote j->p is on. Without escapes the
 * result is the input span itself; with escapes it is decoded into ds.str
 * (NUL-terminated, grown beforehand: the pointer stays valid for the
 * message). GL_OK with *s, *n, or GL_ERROR with j->why. */
static int jstr(struct jp *j, const char **s, size_t *n)
{
    const unsigned char *p = (const unsigned char *)j->p + 1, *end = (const unsigned char *)j->end;
    const unsigned char *start = p;
    for (;;) {
        /* eight bytes at a time while none is '"', '\\', < 0x20 or >= 0x80 */
        while (end - p >= 8) {
            uint64_t w;
            memcpy(&w, p, 8);
            if (json_bad8(w)) break;
            p += 8;
        }
        while (p < end && *p >= 0x20 && *p != '"' && *p != '\\' && *p < 0x80) p++;
        if (p >= end) { j->why = "premature end of input in a string"; return GL_ERROR; }
        if (*p == '"') {
            *s = (const char *)start;
            *n = (size_t)(p - start);
            j->p = (const char *)p + 1;
            return GL_OK;
        }
        if (*p == '\\') break;
        if (*p < 0x20) { j->why = "control character in a string"; return GL_ERROR; }
        size_t u = ej_utf8_len(p, end);
        if (!u) { j->why = "invalid UTF-8"; return GL_ERROR; }
        p += u;
    }
    /* escapes: decode into ds.str (room for the whole input was reserved) */
    char *o = ds.str.p + ds.str.len, *o0 = o;
    memcpy(o, start, (size_t)(p - start));
    o += p - start;
    for (;;) {
        if (p >= end) { j->why = "premature end of input in a string"; return GL_ERROR; }
        unsigned c = *p;
        if (c == '"') break;
        if (c < 0x20) { j->why = "control character in a string"; return GL_ERROR; }
        if (c >= 0x80) {
            size_t u = ej_utf8_len(p, end);
            if (!u) { j->why = "invalid UTF-8"; return GL_ERROR; }
            memcpy(o, p, u);
            o += u;
            p += u;
            continue;
        }
        if (c != '\\') { *o++ = (char)c; p++; continue; }
        if (p + 1 >= end) { j->why = "premature end of input in a string"; return GL_ERROR; }
        c = p[1];
        p += 2;
        switch (c) {
        case '"': case '\\': case '/': *o++ = (char)c; continue;
        case 'b': *o++ = '\b'; continue;
        case 'f': *o++ = '\f'; continue;
        case 'n': *o++ = '\n'; continue;
        case 'r': *o++ = '\r'; continue;
        case 't': *o++ = '\t'; continue;
        case 'u': break;
        default: j->why = "invalid escape"; return GL_ERROR;
        }
        int32_t v = ej_hex4((const char *)p, (const char *)end);
        if (v < 0) { j->why = "invalid escape"; return GL_ERROR; }
        p += 4;
        if (v >= 0xD800 && v <= 0xDBFF) {
            int32_t v2 = end - p >= 2 && p[0] == '\\' && p[1] == 'u' ? ej_hex4((const char *)p + 2, (const char *)end) : -2;
            if (v2 == -1) { j->why = "invalid escape"; return GL_ERROR; }
            if (v2 < 0xDC00 || v2 > 0xDFFF) { j->why = "invalid Unicode surrogate"; return GL_ERROR; }
            p += 6;
            v = ((v - 0xD800) << 10) + (v2 - 0xDC00) + 0x10000;
        } else if (v >= 0xDC00 && v <= 0xDFFF) {
            j->why = "invalid Unicode surrogate";
            return GL_ERROR;
        } else if (v == 0) {
            j->why = "\\u0000 in a string";
            return GL_ERROR;
        }
        if (v < 0x80) *o++ = (char)v;
        else if (v < 0x800) { *o++ = (char)(0xC0 | v >> 6); *o++ = (char)(0x80 | (v & 0x3F)); }
        else if (v < 0x10000) {
            *o++ = (char)(0xE0 | v >> 12); *o++ = (char)(0x80 | (v >> 6 & 0x3F)); *o++ = (char)(0x80 | (v & 0x3F));
        } else {
            *o++ = (char)(0xF0 | v >> 18); *o++ = (char)(0x80 | (v >> 12 & 0x3F));
            *o++ = (char)(0x80 | (v >> 6 & 0x3F)); *o++ = (char)(0x80 | (v & 0x3F));
        }
    }
    j->p = (const char *)p + 1;
    *o = '\0';
    *s = o0;
    *n = (size_t)(o - o0);
    ds.str.len += *n + 1;
    return GL_OK;
}

/* The duplicate check: 1 when key s[0..n) (hash h) was already seen in
 * object obj of this message, else records it and returns 0. */
static int key_seen(uint32_t obj, const char *s, size_t n, uint64_t h)
{
    if ((ds.setn + 1) * 2 > ds.setcap) {
        size_t ncap = ds.setcap ? ds.setcap * 2 : 256;
        struct kslot *nt = xcalloc(ncap, sizeof *nt);
        for (size_t i = 0; i < ds.setcap; i++) {
            struct kslot *k = &ds.set[i];
            if (k->gen != ds.gen) continue;
            size_t x = (k->h ^ (uint64_t)k->obj * 0x9E3779B97F4A7C15ull) & (ncap - 1);
            while (nt[x].gen == ds.gen) x = (x + 1) & (ncap - 1);
            nt[x] = *k;
        }
        free(ds.set);
        ds.set = nt;
        ds.setcap = ncap;
    }
    size_t x = (h ^ (uint64_t)obj * 0x9E3779B97F4A7C15ull) & (ds.setcap - 1);
    for (;;) {
        struct kslot *k = &ds.set[x];
        if (k->gen != ds.gen) {
            *k = (struct kslot){ .h = h, .p = s, .n = (uint32_t)n, .obj = obj, .gen = ds.gen };
            ds.setn++;
            return 0;
        }
        if (k->h == h && k->obj == obj && k->n == n && !memcmp(k->p, s, n)) return 1;
        x = (x + 1) & (ds.setcap - 1);
    }
}

/* A key of object obj: scanned, no NUL (jansson refuses them in keys, and
 * \u0000 is refused anyway), not seen before in obj. */
static int jkey(struct jp *j, uint32_t obj, const char **s, size_t *n, uint64_t *h)
{
    if (j->p >= j->end || *j->p != '"') { j->why = "string or '}' expected"; return GL_ERROR; }
    if (jstr(j, s, n) != GL_OK) return GL_ERROR;
    *h = hash64(*s, *n, 0);
    if (key_seen(obj, *s, *n, *h)) { j->why = "duplicate object key"; return GL_ERROR; }
    jws(j);
    if (j->p >= j->end || *j->p != ':') { j->why = "':' expected"; return GL_ERROR; }
    j->p++;
    jws(j);
    return GL_OK;
}

/* Validates and skips the value at j->p (nesting depth depth): what the
 * schema does not use (null, arrays, objects, agent.*) must still be JSON
 * jansson accepts. */
static int jskip(struct jp *j, int depth)
{
    if (depth > JSON_MAX_DEPTH) { j->why = "maximum parsing depth reached"; return GL_ERROR; }
    if (j->p >= j->end) { j->why = "premature end of input"; return GL_ERROR; }
    const char *s;
    size_t n;
    int64_t iv;
    double dv;
    switch (*j->p) {
    case '"': {
        size_t mark = ds.str.len;
        int rc = jstr(j, &s, &n);
        ds.str.len = mark;   /* not kept */
        return rc;
    }
    case '{': {
        uint32_t obj = ++j->nobj;
        j->p++;
        jws(j);
        if (j->p < j->end && *j->p == '}') { j->p++; return GL_OK; }
        for (;;) {
            uint64_t h;
            if (jkey(j, obj, &s, &n, &h) != GL_OK || jskip(j, depth + 1) != GL_OK) return GL_ERROR;
            jws(j);
            if (j->p < j->end && *j->p == ',') { j->p++; jws(j); continue; }
            if (j->p < j->end && *j->p == '}') { j->p++; return GL_OK; }
            j->why = "'}' expected";
            return GL_ERROR;
        }
    }
    case '[':
        j->p++;
        jws(j);
        if (j->p < j->end && *j->p == ']') { j->p++; return GL_OK; }
        for (;;) {
            if (jskip(j, depth + 1) != GL_OK) return GL_ERROR;
            jws(j);
            if (j->p < j->end && *j->p == ',') { j->p++; jws(j); continue; }
            if (j->p < j->end && *j->p == ']') { j->p++; return GL_OK; }
            j->why = "']' expected";
            return GL_ERROR;
        }
    case 't': case 'f': case 'n':
        return ej_jlit(j) < 0 ? GL_ERROR : GL_OK;
    default:
        if (ej_jnum(j, &iv, &dv) < 0) return GL_ERROR;
        jafter_token(j);
        return GL_OK;
    }
}

/* The header keys of schema v1, by their decoded spelling. */
enum hkey { H_NONE, H_TS, H_KIND, H_DATASET, H_ID, H_CREATED, H_HOST, H_PATH, H_OFFSET, H_AGENT };

static enum hkey header_key(const char *s, size_t n)
{
#define IS(lit) (n == sizeof(lit) - 1 && !memcmp(s, lit, n))
    if (n < 8 || n > 14) return H_NONE;
    switch (s[0]) {
    case '@': return IS("@timestamp") ? H_TS : H_NONE;
    case 'e':
        if (IS("event.kind")) return H_KIND;
        if (IS("event.dataset")) return H_DATASET;
        if (IS("event.id")) return H_ID;
        if (IS("event.created")) return H_CREATED;
        return H_NONE;
    case 'h': return IS("host.name") ? H_HOST : H_NONE;
    case 'l':
        if (IS("log.file.path")) return H_PATH;
        if (IS("log.offset")) return H_OFFSET;
        return H_NONE;
    case 'a': return IS("agent.name") || IS("agent.version") ? H_AGENT : H_NONE;
    default: return H_NONE;
    }
#undef IS
}

static void key_hash(struct kcur *c)
{
    if (!c->hashed) {
        c->h = hash64(c->p, c->n, 0);
        c->hashed = 1;
    }
}

/* Whether a[0..n) equals b[0..n): eight bytes at a time, inline (keys are
 * 10-50 bytes; memcmp's call and size dispatch were a fifth of decoding). */
static inline int bytes_eq(const char *a, const char *b, size_t n)
{
    uint64_t x, y;
    if (n < 8) {
        for (size_t i = 0; i < n; i++)
            if (a[i] != b[i]) return 0;
        return 1;
    }
    for (size_t i = 0; i + 8 <= n; i += 8) {
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        if (x != y) return 0;
    }
    memcpy(&x, a + n - 8, 8);   /* the last eight, overlapping */
    memcpy(&y, b + n - 8, 8);
    return x == y;
}

/* Whether key a of layout A equals key b of layout B: interned field keys
 * are equal when their pointers are, header keys (but agent.*) when their
 * classes are; else byte for byte. */
static inline int lay_key_eq(const struct klay *a, const struct klay *b, const struct layout *A, const struct layout *B)
{
    if (a->n != b->n) return 0;
    if (a->ik && b->ik) return a->ik == b->ik;
    if (a->hk == b->hk && a->hk != H_NONE && a->hk != H_AGENT) return 1;
    return bytes_eq(A->bytes.p + a->off, B->bytes.p + b->off, a->n);
}

/* The top-level key at j->p, the ki-th of the message: taken or scanned,
 * checked against the candidate layouts *cand (those the leading keys
 * equal), else against the duplicate set; *hk its header-key class; then
 * the ':' after it. */
static int jkey_top(struct jp *j, size_t ki, unsigned *cand, const char **s, size_t *n, enum hkey *hk)
{
    if (j->p < j->end && *j->p != '"') jws(j);   /* after the ',' */
    if (j->p >= j->end || *j->p != '"') { j->why = "string or '}' expected"; return GL_ERROR; }
    /* the quoted key of a candidate layout, byte for byte, is that key:
     * no scan (keys are most of a message's bytes) */
    int quick = -1;
    for (unsigned m = *cand; m && quick < 0; m &= m - 1) {
        unsigned l = (unsigned)__builtin_ctz(m);
        const struct layout *L = &ds.lay[l];
        if (ki >= L->n || !L->k[ki].plain) continue;
        size_t kn = L->k[ki].n;
        if ((size_t)(j->end - j->p) >= kn + 2 && bytes_eq(j->p, L->bytes.p + L->k[ki].off - 1, kn + 2)) {
            *s = j->p + 1;
            *n = kn;
            j->p += kn + 2;
            quick = (int)l;
        }
    }
    if (quick < 0 && jstr(j, s, n) != GL_OK) return GL_ERROR;
    if (ki >= ds.capcur) {
        ds.capcur = ds.capcur ? ds.capcur * 2 : 64;
        ds.cur = xrealloc(ds.cur, ds.capcur * sizeof *ds.cur);
    }
    struct kcur *c = &ds.cur[ki];
    *c = (struct kcur){ .p = *s, .n = (uint32_t)*n };
    unsigned next = 0;
    for (unsigned m = *cand; m; m &= m - 1) {
        unsigned l = (unsigned)__builtin_ctz(m);
        const struct layout *L = &ds.lay[l];
        if (ki < L->n && L->k[ki].n == *n &&
            ((int)l == quick || (quick >= 0 ? lay_key_eq(&L->k[ki], &ds.lay[quick].k[ki], L, &ds.lay[quick])
                                             : bytes_eq(L->bytes.p + L->k[ki].off, *s, *n))))
            next |= 1u << l;
    }
    *hk = quick >= 0 ? (enum hkey)ds.lay[quick].k[ki].hk : header_key(*s, *n);
    if (next) {
        *cand = next;   /* as an accepted message: no duplicate so far */
    } else {
        if (*cand) {
            *cand = 0;
            for (size_t i = 0; i < ki; i++) {
                key_hash(&ds.cur[i]);
                key_seen(0, ds.cur[i].p, ds.cur[i].n, ds.cur[i].h);
            }
        }
        key_hash(c);
        if (key_seen(0, c->p, c->n, c->h)) { j->why = "duplicate object key"; return GL_ERROR; }
    }
    if (j->p < j->end && *j->p == ':') j->p++;   /* compact JSON: nothing to skip */
    else {
        jws(j);
        if (j->p >= j->end || *j->p != ':') { j->why = "':' expected"; return GL_ERROR; }
        j->p++;
    }
    jws(j);
    return GL_OK;
}

/* Field nf's key is top-level key ki. */
static void field_from_key(size_t nf, size_t ki)
{
    if (nf >= ds.capfki) {
        ds.capfki = ds.capfki ? ds.capfki * 2 : 64;
        ds.fki = xrealloc(ds.fki, ds.capfki * sizeof *ds.fki);
    }
    ds.fki[nf] = (uint32_t)ki;
}

/* The interned copy of top-level key ki, NULL once the table is full and
 * the key is new; the nsame leading keys equal layout l. */
static const char *field_key(size_t ki, size_t nsame, unsigned l)
{
    if (ki < nsame && ds.lay[l].k[ki].ik) return ds.lay[l].k[ki].ik;
    struct kcur *c = &ds.cur[ki];
    key_hash(c);
    return ej_intern_key(c->p, c->n, c->h);
}

/* After an accepted message of nk keys, all equal to layout l when
 * nsame == nk: that layout is refreshed, or the least recently used one
 * becomes this message's; the interned field keys are noted in it. */
static void layout_keep(struct event *ev, size_t nk, size_t nsame, unsigned l)
{
    if (nsame != nk || ds.lay[l].n != nk) {
        l = 0;
        for (unsigned i = 1; i < NLAYOUT; i++)
            if (ds.lay[i].used < ds.lay[l].used) l = i;
        struct layout *L = &ds.lay[l];
        if (nk > L->cap) {
            L->cap = nk + 16;
            L->k = xrealloc(L->k, L->cap * sizeof *L->k);
        }
        buf_reset(&L->bytes);
        for (size_t i = 0; i < nk; i++) {
            const char *k = ds.cur[i].p;
            uint32_t n = ds.cur[i].n;
            int plain = 1;
            for (uint32_t x = 0; x < n && plain; x++)
                plain = k[x] != '"' && k[x] != '\\' && (unsigned char)k[x] >= 0x20;
            buf_putc(&L->bytes, '"');
            L->k[i] = (struct klay){ .off = (uint32_t)L->bytes.len, .n = n, .ik = NULL, .plain = (unsigned char)plain,
                                     .hk = (unsigned char)header_key(k, n) };
            buf_append(&L->bytes, k, n);
            buf_putc(&L->bytes, '"');
        }
        L->n = nk;
    }
    ds.lay[l].used = ++ds.clock;
    for (size_t i = 0; i < ev->nf; i++) ds.lay[l].k[ds.fki[i]].ik = ev->f[i].key;
}

/* gl_parse_iso_ts with a memory: consecutive events share the minute of
 * their time, so a canonical "YYYY-MM-DDTHH:MM:SS.mmmZ" (what event_to_json
 * writes) whose first 17 bytes are the last one's is that minute plus its
 * seconds and milliseconds, computed as gl_parse_iso_ts does (seconds up to
 * 60). Slot c: 0 @timestamp, 1 event.created. */
static int ts_parse(int c, const char *s, size_t n, int64_t *out)
{
    static struct { char head[17]; int64_t minute_ms; int valid; } memo[2];
    int canon = n == 24 && s[19] == '.' && s[23] == 'Z';
    for (int i = 17; canon && i < 23; i++)
        if (i != 19 && (s[i] < '0' || s[i] > '9')) canon = 0;
    int sec = canon ? (s[17] - '0') * 10 + (s[18] - '0') : 0;
    int ms = canon ? (s[20] - '0') * 100 + (s[21] - '0') * 10 + (s[22] - '0') : 0;
    if (canon && sec <= 60 && memo[c].valid && !memcmp(memo[c].head, s, 17)) {
        *out = memo[c].minute_ms + sec * 1000 + ms;
        return GL_OK;
    }
    if (gl_parse_iso_ts(s, n, out) != GL_OK) return GL_ERROR;
    if (canon) {
        memcpy(memo[c].head, s, 17);
        memo[c].minute_ms = *out - (sec * 1000 + ms);
        memo[c].valid = 1;
    }
    return GL_OK;
}

#define JFAIL(...) do { snprintf(err, errlen, __VA_ARGS__); return GL_ERROR; } while (0)

static int decode(struct event *ev, const char *json, size_t len, char *err, size_t errlen)
{
    event_reset(ev);
    struct jp j = { .p = json, .end = json + len };
    /* decoded strings are never longer than their source: reserve once */
    ds.str.len = 0;
    buf_grow(&ds.str, len + 1);
    buf_grow(&ev->arena, len + 1);
    if (++ds.gen == 0) {   /* wrapped: stale stamps could look current */
        if (ds.set) memset(ds.set, 0, ds.setcap * sizeof *ds.set);
        ds.gen = 1;
    }
    ds.setn = 0;
    jws(&j);
    if (j.p >= j.end || *j.p != '{') {
        if (j.p < j.end && *j.p == '[') JFAIL("not a JSON object");
        JFAIL("invalid JSON: '{' expected (column %zu)", (size_t)(j.p - json) + 1);
    }
    j.p++;
    jws(&j);
    int have_ts = 0;
    unsigned cand = 0, match = 0;   /* layouts the leading keys equal; one of them */
    for (unsigned l = 0; l < NLAYOUT; l++)
        if (ds.lay[l].n) cand |= 1u << l;
    size_t nk = 0, nsame = 0;   /* keys so far, and how many equal a layout */
    const char *hv[4] = { 0 };   /* host, path, dataset, kind: interned once valid */
    size_t hn[4] = { 0 };
    if (j.p < j.end && *j.p == '}') j.p++;
    else {
        for (;;) {
            const char *k, *s;
            size_t kn, n, ki = nk;
            enum hkey hk;
            if (jkey_top(&j, ki, &cand, &k, &kn, &hk) != GL_OK) goto bad;
            nk++;
            if (cand) {
                nsame = nk;
                match = (unsigned)__builtin_ctz(cand);
            }
            if (j.p >= j.end) { j.why = "premature end of input"; goto bad; }
            char c = *j.p;
            if (hk == H_AGENT) {
                if (jskip(&j, 2) != GL_OK) goto bad;   /* regenerated on output */
            } else if (c == '"') {
                size_t mark = ds.str.len;
                if (jstr(&j, &s, &n) != GL_OK) goto bad;
                switch (hk) {
                case H_TS:
                    if (ts_parse(0, s, n, &ev->ts_ms) != GL_OK) JFAIL("bad @timestamp");
                    have_ts = 1;
                    break;
                case H_HOST: hv[0] = s; hn[0] = n; break;
                case H_PATH: hv[1] = s; hn[1] = n; break;
                case H_DATASET: hv[2] = s; hn[2] = n; break;
                case H_KIND: hv[3] = s; hn[3] = n; break;
                case H_ID: {
                    size_t m = n < 32 ? n : 32;
                    memcpy(ev->id, s, m);
                    ev->id[m] = '\0';
                    break;
                }
                case H_CREATED: ts_parse(1, s, n, &ev->created_ms); break;
                case H_OFFSET: JFAIL("log.offset is not an integer");
                default:
                    field_from_key(ev->nf, ki);
                    event_add_str(ev, NULL, s, n);
                    ds.str.len = mark;   /* copied into the arena */
                    break;
                }
            } else {
                int64_t iv = 0;
                double dv = 0;
                int t, b = -1;
                if (c == '-' || (c >= '0' && c <= '9')) {
                    if ((t = ej_jnum(&j, &iv, &dv)) < 0) goto bad;
                    jafter_token(&j);
                } else if (c == 't' || c == 'f' || c == 'n') {
                    if ((b = ej_jlit(&j)) < 0) goto bad;
                    t = b == 2 ? -1 : EV_BOOL;
                } else if (c == '{' || c == '[') {
                    if (jskip(&j, 2) != GL_OK) goto bad;
                    t = -1;
                } else {
                    j.why = "invalid token";
                    goto bad;
                }
                switch (hk) {
                case H_TS: JFAIL("bad @timestamp");
                case H_KIND: case H_DATASET: case H_ID: case H_CREATED: case H_HOST: case H_PATH:
                    JFAIL("%.*s is not a string", (int)kn, k);
                case H_OFFSET:
                    if (t != EV_INT) JFAIL("log.offset is not an integer");
                    ev->offset = iv;
                    break;
                default:
                    if (t < 0) break;   /* null, arrays, objects: not part of schema v1, skipped */
                    field_from_key(ev->nf, ki);
                    if (t == EV_INT) event_add_int(ev, NULL, iv);
                    else if (t == EV_NUM) event_add_num(ev, NULL, dv);
                    else event_add_bool(ev, NULL, b);
                    break;
                }
            }
            if (j.p < j.end && *j.p == ',') { j.p++; continue; }   /* jkey_top skips what follows */
            jws(&j);
            if (j.p < j.end && *j.p == ',') { j.p++; continue; }
            if (j.p < j.end && *j.p == '}') { j.p++; break; }
            j.why = "'}' expected";
            goto bad;
        }
    }
    jws(&j);
    if (j.p != j.end) { j.why = "end of file expected"; goto bad; }
    if (!have_ts) JFAIL("missing @timestamp");
    /* valid: intern what the event keeps */
    if (hv[3]) ev->kind = ej_ev_kind(ev, hv[3], hn[3]);
    if (hv[2]) ev->dataset = ej_ev_string(ev, 2, hv[2], hn[2]);
    if (hv[0]) ev->host = ej_ev_string(ev, 0, hv[0], hn[0]);
    if (hv[1]) ev->path = ej_ev_string(ev, 1, hv[1], hn[1]);
    size_t w = 0;
    for (size_t i = 0; i < ev->nf; i++) {
        const char *key = field_key(ds.fki[i], nsame, match);
        if (!key) { ej_field_dropped(); continue; }   /* table full: bounded memory first */
        ds.fki[w] = ds.fki[i];
        ev->f[w] = ev->f[i];
        ev->f[w++].key = key;
    }
    ev->nf = w;
    layout_keep(ev, nk, nsame, match);
    return GL_OK;
bad:
    JFAIL("invalid JSON: %s (column %zu)", j.why, (size_t)(j.p - json) + 1);
}

/* Scratch past this after a message is given back: an outsized message
 * (many keys, long strings) must not keep its memory for the life of the
 * process. */
#define SCRATCH_KEEP (256u << 10)

int event_from_json(struct event *ev, const char *json, size_t len, char *err, size_t errlen)
{
    int rc = decode(ev, json, len, err, errlen);
    if (ds.str.cap > SCRATCH_KEEP) buf_free(&ds.str);
    if (ds.setcap * sizeof *ds.set > SCRATCH_KEEP) {
        free(ds.set);
        ds.set = NULL;
        ds.setcap = 0;
    }
    if (ds.capcur * sizeof *ds.cur > SCRATCH_KEEP || ds.capfki * sizeof *ds.fki > SCRATCH_KEEP) {
        free(ds.cur);
        free(ds.fki);
        ds.cur = NULL;
        ds.fki = NULL;
        ds.capcur = ds.capfki = 0;
    }
    for (unsigned l = 0; l < NLAYOUT; l++) {
        struct layout *L = &ds.lay[l];
        if (L->cap * sizeof *L->k > SCRATCH_KEEP || L->bytes.cap > SCRATCH_KEEP) {   /* not a layout to expect */
            free(L->k);
            buf_free(&L->bytes);
            *L = (struct layout){ 0 };
        }
    }
    return rc;
}
