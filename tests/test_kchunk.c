/* test_kchunk.c - large state-topic values in chunks (ingest/kchunk.c): the
 * messages a write makes, read back in log order through a reader, with
 * mixed generations, missing, damaged and stale chunks. */
#include "test.h"
#include "../ingest/kchunk.h"

#include <stdlib.h>

/* A topic: its messages in offset order (a tombstone has len 0). */
struct msg { char *key; struct buf val; };
struct log { struct msg m[256]; size_t n; int fail_at; };

/* kchunk's emit into a log; fails from message fail_at on (0: never). */
static int emit(void *ctx, const char *key, const void *val, size_t len)
{
    struct log *l = ctx;
    if (l->fail_at && (int)l->n + 1 >= l->fail_at) return -1;
    struct msg *m = &l->m[l->n++];
    m->key = xstrdup(key);
    buf_init(&m->val);
    if (len) buf_append(&m->val, val, len);
    return 0;
}

/* Reads the log's value of key (1, 0 or -1 as kchunk_rd_value); live gets
 * the chunks still there. */
static int read_back(struct log *l, const char *key, struct buf *val, struct kchunk_keys *live, char *why)
{
    const char *keys[] = { "other/9", key };
    struct kchunk_rd *r = kchunk_rd_new(keys, 2);
    for (size_t i = 0; i < l->n; i++)
        kchunk_rd_feed(r, l->m[i].key, strlen(l->m[i].key), l->m[i].val.p, l->m[i].val.len);
    int rc = kchunk_rd_value(r, 1, val, live, why, 200);
    kchunk_rd_free(r);
    return rc;
}

static void log_free(struct log *l)
{
    for (size_t i = 0; i < l->n; i++) { free(l->m[i].key); buf_free(&l->m[i].val); }
    l->n = 0;
}

/* A value of n bytes that differs for each seed. */
static void value(struct buf *b, size_t n, unsigned seed)
{
    buf_reset(b);
    for (size_t i = 0; i < n; i++) buf_putc(b, (char)((i * 31 + seed * 7 + i / 97) & 0xff));
}

/* What each test works on: a topic, a value, what is read back. */
struct fx { struct log l; struct buf v, got; struct kchunk_keys ch, live; char why[200]; };

/* f with a value of n bytes (seed) and an empty topic. */
static void fx_init(struct fx *f, size_t n, unsigned seed)
{
    memset(f, 0, sizeof *f);
    buf_init(&f->v);
    buf_init(&f->got);
    value(&f->v, n, seed);
}

static void fx_free(struct fx *f)
{
    log_free(&f->l);
    kchunk_keys_free(&f->ch);
    kchunk_keys_free(&f->live);
    buf_free(&f->v);
    buf_free(&f->got);
}

/* As kstate_put: a write, then tombstones for the keys of the one before. */
static void put(struct log *l, const char *key, const struct buf *v, uint64_t gen, struct kchunk_keys *stale)
{
    struct kchunk_keys mine = { 0 };
    if (kchunk_write(key, v->p, v->len, 1000, gen, emit, l, &mine) >= 0) {
        for (size_t i = 0; i < stale->n; i++) emit(l, stale->k[i], NULL, 0);
        kchunk_keys_free(stale);
        *stale = mine;
    } else {
        for (size_t i = 0; i < mine.n; i++) kchunk_keys_add(stale, mine.k[i]);
        kchunk_keys_free(&mine);
    }
}

/* Writes the first len bytes of f's value (generation gen), reads them
 * back (checked); the chunk count. */
static int roundtrip(struct fx *f, size_t len, uint64_t gen)
{
    int n = kchunk_write("t/0", f->v.p, len, 1000, gen, emit, &f->l, &f->ch);
    CHECK_EQ_INT(read_back(&f->l, "t/0", &f->got, &f->live, f->why), 1);
    CHECK(f->got.len == len && !memcmp(f->got.p, f->v.p, len));
    return n;
}

TEST(small_value_is_inline)
{
    struct fx f;
    fx_init(&f, 1000, 1);
    CHECK_EQ_INT(roundtrip(&f, f.v.len, 1), 0);
    CHECK_EQ_INT(f.l.n, 1);
    CHECK_EQ_STR(f.l.m[0].key, "t/0");
    CHECK_EQ_INT(f.live.n, 0);
    /* a small value that looks like a manifest is chunked, not misread */
    log_free(&f.l);
    memcpy(f.v.p, "GLKM", 4);
    CHECK_EQ_INT(roundtrip(&f, 40, 2), 1);
    fx_free(&f);
}

TEST(large_value_in_chunks_read_back)
{
    struct fx f;
    fx_init(&f, 4500, 2);
    CHECK_EQ_INT(roundtrip(&f, f.v.len, 0xabc), 5);
    for (size_t i = 0; i < f.l.n; i++) CHECK(f.l.m[i].val.len <= 1000);
    CHECK_EQ_INT(f.l.n, 6);
    CHECK_EQ_STR(f.l.m[0].key, "t/0/0000000000000abc/0");
    CHECK_EQ_STR(f.l.m[4].key, "t/0/0000000000000abc/4");
    CHECK_EQ_STR(f.l.m[5].key, "t/0");
    CHECK_EQ_INT(f.ch.n, 5);
    CHECK_EQ_INT(f.live.n, 5);   /* deleted after the next write */
    /* chunks without their manifest (the writer died): nothing yet */
    f.l.n--;
    free(f.l.m[f.l.n].key);
    buf_free(&f.l.m[f.l.n].val);
    CHECK_EQ_INT(read_back(&f.l, "t/0", &f.got, &f.live, f.why), 0);
    CHECK_EQ_INT(f.got.len, 0);
    fx_free(&f);
}

TEST(generations_mixed_shrinking_and_writer_death)
{
    struct log l = { .n = 0 };
    struct buf v1, v2, v3, got;
    buf_init(&v1);
    buf_init(&v2);
    buf_init(&v3);
    buf_init(&got);
    struct kchunk_keys stale = { 0 }, live = { 0 };
    char why[200] = "";
    value(&v1, 5000, 3);   /* 6 chunks */
    value(&v2, 2100, 4);   /* 3 chunks: it shrinks */
    value(&v3, 3000, 5);   /* 4 chunks */
    put(&l, "t/0", &v1, 1, &stale);
    put(&l, "t/0", &v2, 2, &stale);
    CHECK_EQ_INT(read_back(&l, "t/0", &got, &live, why), 1);
    CHECK(got.len == v2.len && !memcmp(got.p, v2.p, v2.len));
    CHECK_EQ_INT(live.n, 3);   /* generation 1's six chunks are tombstoned */
    kchunk_keys_free(&live);
    /* the writer dies after 2 chunks of generation 3: generation 2 stands */
    l.fail_at = (int)l.n + 3;
    put(&l, "t/0", &v3, 3, &stale);
    l.fail_at = 0;
    CHECK_EQ_INT(read_back(&l, "t/0", &got, &live, why), 1);
    CHECK(got.len == v2.len && !memcmp(got.p, v2.p, v2.len));
    CHECK_EQ_INT(live.n, 5);   /* 3 of generation 2, 2 orphans of generation 3 */
    kchunk_keys_free(&live);
    /* the next owner read it all (live = stale), writes a small value: every chunk deleted */
    struct kchunk_keys owner = { 0 };
    CHECK_EQ_INT(read_back(&l, "t/0", &got, &owner, why), 1);
    put(&l, "t/0", &v3, 4, &owner);
    CHECK_EQ_INT(read_back(&l, "t/0", &got, &live, why), 1);
    CHECK(got.len == v3.len && !memcmp(got.p, v3.p, v3.len));
    CHECK_EQ_INT(live.n, 4);
    kchunk_keys_free(&live);
    struct buf small;
    buf_init(&small);
    value(&small, 300, 6);
    put(&l, "t/0", &small, 5, &owner);
    CHECK_EQ_INT(read_back(&l, "t/0", &got, &live, why), 1);
    CHECK(got.len == 300 && !memcmp(got.p, small.p, 300));
    CHECK_EQ_INT(live.n, 0);
    log_free(&l);
    kchunk_keys_free(&stale);
    kchunk_keys_free(&owner);
    kchunk_keys_free(&live);
    buf_free(&small);
    buf_free(&v1);
    buf_free(&v2);
    buf_free(&v3);
    buf_free(&got);
}

TEST(missing_or_damaged_chunk_is_incomplete)
{
    struct fx f;
    fx_init(&f, 3000, 7);
    kchunk_write("t/0", f.v.p, f.v.len, 1000, 9, emit, &f.l, &f.ch);   /* 4 chunks, manifest at 4 */
    /* chunk 2 deleted (a tombstone, as compaction would leave it gone) */
    emit(&f.l, f.l.m[1].key, NULL, 0);
    CHECK_EQ_INT(read_back(&f.l, "t/0", &f.got, &f.live, f.why), -1);
    CHECK_EQ_INT(f.got.len, 0);
    CHECK(strstr(f.why, "chunk 2 of 4") != NULL);
    kchunk_keys_free(&f.live);
    f.l.n--;
    free(f.l.m[f.l.n].key);
    buf_free(&f.l.m[f.l.n].val);
    /* a byte of chunk 3 flipped: the CRC */
    f.l.m[2].val.p[100] ^= 1;
    CHECK_EQ_INT(read_back(&f.l, "t/0", &f.got, &f.live, f.why), -1);
    CHECK(strstr(f.why, "CRC") != NULL);
    f.l.m[2].val.p[100] ^= 1;
    /* a chunk of generation 9 rewritten with generation 8's header: missing */
    f.l.m[0].val.p[8] = 8;
    CHECK_EQ_INT(read_back(&f.l, "t/0", &f.got, &f.live, f.why), -1);
    CHECK(strstr(f.why, "chunk 1 of 4 of generation 0000000000000009") != NULL);
    f.l.m[0].val.p[8] = 9;
    CHECK_EQ_INT(read_back(&f.l, "t/0", &f.got, &f.live, f.why), 1);
    /* a chunk of an older generation under the same index is not taken */
    struct log o = { .n = 0 };
    struct kchunk_keys och = { 0 };
    struct buf w;
    buf_init(&w);
    value(&w, 3000, 8);
    kchunk_write("t/0", w.p, w.len, 1000, 8, emit, &o, &och);        /* generation 8, all of it */
    for (size_t i = 0; i < f.l.n; i++)
        if (i != 3) emit(&o, f.l.m[i].key, f.l.m[i].val.p, f.l.m[i].val.len); /* generation 9 without chunk 4 */
    CHECK_EQ_INT(read_back(&o, "t/0", &f.got, &f.live, f.why), -1);
    CHECK(strstr(f.why, "chunk 4 of 4") != NULL);
    /* a damaged manifest */
    f.l.m[4].val.p[4] = 99;
    CHECK_EQ_INT(read_back(&f.l, "t/0", &f.got, &f.live, f.why), -1);
    log_free(&o);
    kchunk_keys_free(&och);
    buf_free(&w);
    fx_free(&f);
}

TEST(tombstone_of_the_key_deletes_it)
{
    struct fx f;
    fx_init(&f, 2500, 9);
    kchunk_write("t/1", f.v.p, f.v.len, 1000, 3, emit, &f.l, &f.ch);
    emit(&f.l, "t/1", NULL, 0);
    CHECK_EQ_INT(read_back(&f.l, "t/1", &f.got, &f.live, f.why), 0);
    CHECK_EQ_INT(f.live.n, 3);
    /* "t/10"'s messages are not "t/1"'s */
    kchunk_keys_free(&f.live);
    struct kchunk_keys c10 = { 0 };
    kchunk_write("t/10", f.v.p, f.v.len, 1000, 4, emit, &f.l, &c10);
    CHECK_EQ_INT(read_back(&f.l, "t/1", &f.got, &f.live, f.why), 0);
    CHECK_EQ_INT(f.live.n, 3);
    kchunk_keys_free(&c10);
    fx_free(&f);
}

int main(void)
{
    RUN(small_value_is_inline);
    RUN(large_value_in_chunks_read_back);
    RUN(generations_mixed_shrinking_and_writer_death);
    RUN(missing_or_damaged_chunk_is_incomplete);
    RUN(tombstone_of_the_key_deletes_it);
    return TEST_REPORT();
}
