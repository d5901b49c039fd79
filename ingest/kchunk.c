/* kchunk.c - see kchunk.h. Integers are little-endian. */
#include "kchunk.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define KCHUNK_VERSION 1

static void put32(unsigned char *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i)); }
static void put64(unsigned char *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i)); }
static uint32_t get32(const unsigned char *p) { uint32_t v = 0; for (int i = 3; i >= 0; i--) v = v << 8 | p[i]; return v; }
static uint64_t get64(const unsigned char *p) { uint64_t v = 0; for (int i = 7; i >= 0; i--) v = v << 8 | p[i]; return v; }

void kchunk_keys_add(struct kchunk_keys *s, const char *key)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->k[i], key)) return;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 8;
        s->k = xrealloc(s->k, s->cap * sizeof *s->k);
    }
    s->k[s->n++] = xstrdup(key);
}

void kchunk_keys_free(struct kchunk_keys *s)
{
    for (size_t i = 0; i < s->n; i++) free(s->k[i]);
    free(s->k);
    memset(s, 0, sizeof *s);
}

/* The key of chunk i of generation gen under key. */
static void chunk_key(const char *key, uint64_t gen, uint32_t i, struct buf *out)
{
    buf_reset(out);
    buf_printf(out, "%s/%016" PRIx64 "/%" PRIu32, key, gen, i);
}

int kchunk_write(const char *key, const void *v, size_t len, size_t max, uint64_t gen, kchunk_emit_fn emit,
                 void *ctx, struct kchunk_keys *chunks)
{
    if (max <= KCHUNK_HEADER) max = KCHUNK_HEADER + 1;
    if (len <= max && !(len >= 4 && !memcmp(v, "GLKM", 4))) return emit(ctx, key, v, len) ? -1 : 0;
    size_t per = max - KCHUNK_HEADER;
    uint32_t count = (uint32_t)((len + per - 1) / per);
    struct buf k, c;
    buf_init(&k);
    buf_init(&c);
    int rc = (int)count;
    for (uint32_t i = 0; i < count && rc >= 0; i++) {
        size_t off = (size_t)i * per, n = len - off < per ? len - off : per;
        unsigned char h[KCHUNK_HEADER] = { 'G', 'L', 'K', 'C', KCHUNK_VERSION };
        put64(h + 8, gen);
        put32(h + 16, i);
        put32(h + 20, count);
        buf_reset(&c);
        buf_append(&c, h, sizeof h);
        buf_append(&c, (const char *)v + off, n);
        chunk_key(key, gen, i, &k);
        if (emit(ctx, k.p, c.p, c.len)) rc = -1;
        else kchunk_keys_add(chunks, k.p);
    }
    if (rc >= 0) {
        unsigned char m[KCHUNK_MANIFEST] = { 'G', 'L', 'K', 'M', KCHUNK_VERSION };
        put64(m + 8, gen);
        put32(m + 16, count);
        put32(m + 20, (uint32_t)crc32(0L, (const Bytef *)v, (uInt)len));
        put64(m + 24, (uint64_t)len);
        if (emit(ctx, key, m, sizeof m)) rc = -1;
    }
    buf_free(&k);
    buf_free(&c);
    return rc;
}

/* ---------------------------------------------------------------- reading */

/* A chunk seen under one key: its message key and, while it may still be
 * needed, its value. */
struct kc_chunk { char *key; uint64_t gen; uint32_t idx, count; struct buf val; };

/* What the reader knows of one key: the latest value under it (inline or a
 * manifest) and the chunks under it still live. */
struct kc_key {
    const char *key;
    size_t klen;
    int kind;                   /* 0 none, 1 inline, 2 manifest, 3 damaged manifest */
    struct buf inl;
    uint64_t gen, total;
    uint32_t count, crc;
    struct kc_chunk *ch;
    size_t nch, capch;
};

struct kchunk_rd { struct kc_key *k; size_t n; };

struct kchunk_rd *kchunk_rd_new(const char *const *keys, size_t n)
{
    struct kchunk_rd *r = xcalloc(1, sizeof *r);
    r->k = xcalloc(n ? n : 1, sizeof *r->k);
    r->n = n;
    for (size_t i = 0; i < n; i++) {
        r->k[i].key = keys[i];
        r->k[i].klen = strlen(keys[i]);
        buf_init(&r->k[i].inl);
    }
    return r;
}

/* The chunk of k under message key mk (NULL: none yet). */
static struct kc_chunk *chunk_find(struct kc_key *k, const char *mk, size_t mlen)
{
    for (size_t j = 0; j < k->nch; j++)
        if (strlen(k->ch[j].key) == mlen && !memcmp(k->ch[j].key, mk, mlen)) return &k->ch[j];
    return NULL;
}

/* A chunk message of k (rest: the message key after "KEY/"). */
static void feed_chunk(struct kc_key *k, const char *mk, size_t mlen, const char *rest, size_t rlen,
                       const unsigned char *val, size_t len)
{
    char tail[64];
    if (rlen >= sizeof tail) return;
    memcpy(tail, rest, rlen);
    tail[rlen] = '\0';
    uint64_t gen;
    uint32_t idx;
    int used = 0;
    if (sscanf(tail, "%16" SCNx64 "/%" SCNu32 "%n", &gen, &idx, &used) != 2 || (size_t)used != rlen) return;
    struct kc_chunk *c = chunk_find(k, mk, mlen);
    if (!len) {   /* a tombstone: the chunk is gone */
        if (c) {
            free(c->key);
            buf_free(&c->val);
            *c = k->ch[--k->nch];
        }
        return;
    }
    if (!c) {
        if (k->nch == k->capch) {
            k->capch = k->capch ? 2 * k->capch : 8;
            k->ch = xrealloc(k->ch, k->capch * sizeof *k->ch);
        }
        c = &k->ch[k->nch++];
        c->key = xstrndup(mk, mlen);
        buf_init(&c->val);
    }
    buf_reset(&c->val);
    c->gen = gen;
    c->idx = idx;
    c->count = 0;
    /* a chunk whose header does not match its key keeps no value (missing) */
    if (len >= KCHUNK_HEADER && !memcmp(val, "GLKC", 4) && val[4] == KCHUNK_VERSION && get64(val + 8) == gen &&
        get32(val + 16) == idx) {
        c->count = get32(val + 20);
        buf_append(&c->val, val + KCHUNK_HEADER, len - KCHUNK_HEADER);
    }
}

/* The value under k itself: inline, a manifest or a tombstone. Chunks seen
 * before it that it does not name are never needed again: their values go
 * (their keys stay, to be deleted). */
static void feed_value(struct kc_key *k, const unsigned char *val, size_t len)
{
    buf_reset(&k->inl);
    k->kind = 0;
    if (len >= 4 && !memcmp(val, "GLKM", 4)) {
        k->kind = 3;
        if (len == KCHUNK_MANIFEST && val[4] == KCHUNK_VERSION) {
            k->kind = 2;
            k->gen = get64(val + 8);
            k->count = get32(val + 16);
            k->crc = get32(val + 20);
            k->total = get64(val + 24);
        }
    } else if (len) {
        k->kind = 1;
        buf_append(&k->inl, val, len);
    }
    for (size_t j = 0; j < k->nch; j++)
        if (k->kind != 2 || k->ch[j].gen != k->gen) buf_free(&k->ch[j].val);
}

void kchunk_rd_feed(struct kchunk_rd *r, const void *key, size_t klen, const void *val, size_t len)
{
    const char *mk = key;
    for (size_t i = 0; i < r->n; i++) {
        struct kc_key *k = &r->k[i];
        if (klen < k->klen || memcmp(mk, k->key, k->klen)) continue;
        if (klen == k->klen) feed_value(k, val, len);
        else if (mk[k->klen] == '/')
            feed_chunk(k, mk, klen, mk + k->klen + 1, klen - k->klen - 1, val, len);
        else continue;
        return;
    }
}

int kchunk_rd_value(struct kchunk_rd *r, size_t i, struct buf *val, struct kchunk_keys *live, char *why,
                    size_t whylen)
{
    struct kc_key *k = &r->k[i];
    val->len = 0;
    for (size_t j = 0; j < k->nch; j++) kchunk_keys_add(live, k->ch[j].key);
    if (k->kind == 0) return 0;
    if (k->kind == 1) { buf_append(val, k->inl.p, k->inl.len); return 1; }
    if (k->kind == 3) { snprintf(why, whylen, "its manifest is damaged or of another version"); return -1; }
    for (uint32_t c = 0; c < k->count; c++) {
        struct kc_chunk *ch = NULL;
        for (size_t j = 0; j < k->nch && !ch; j++)
            if (k->ch[j].gen == k->gen && k->ch[j].idx == c && k->ch[j].count == k->count && k->ch[j].val.len)
                ch = &k->ch[j];
        if (!ch) {
            snprintf(why, whylen, "chunk %" PRIu32 " of %" PRIu32 " of generation %016" PRIx64 " is missing", c + 1,
                     k->count, k->gen);
            val->len = 0;
            return -1;
        }
        buf_append(val, ch->val.p, ch->val.len);
    }
    if (val->len != k->total || (uint32_t)crc32(0L, (const Bytef *)val->p, (uInt)val->len) != k->crc) {
        snprintf(why, whylen, "its %" PRIu32 " chunks of generation %016" PRIx64 " make %zu bytes, not the %" PRIu64
                 " of the manifest, or the CRC differs", k->count, k->gen, val->len, k->total);
        val->len = 0;
        return -1;
    }
    return 1;
}

void kchunk_rd_free(struct kchunk_rd *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->n; i++) {
        struct kc_key *k = &r->k[i];
        buf_free(&k->inl);
        for (size_t j = 0; j < k->nch; j++) { free(k->ch[j].key); buf_free(&k->ch[j].val); }
        free(k->ch);
    }
    free(r->k);
    free(r);
}
