/* test_snapshot_seeds.c - the snapshot fuzz target's seeds
 * (tests/fuzz/corpus/snapshot/seed-*) are real snapshots of this build
 * (issue 27, item 2): each is made here from a run of the default GPU
 * profile over a fixture (the bundled 8-GPU demo trace, its values on
 * host "n1" with times ending just before the samples fuzz_snapshot.c
 * feeds, so those continue the restored series; and two synthetic runs:
 * an open episode with its incident, a kernel event for a GPU never
 * seen), in the target's input form (the GPU count, 4 bytes little-endian,
 * then the raw payload). This test fails when a committed seed no longer
 * decodes to the end with this build (a detector's state size, the
 * profile's metrics or the format changed: the fuzzer would stop at the
 * header or the rule states again) or a seed is missing; then
 *     make snapshot-seeds
 * (GPULOG_REFRESH_SNAPSHOT_SEEDS=1 build/tests/test_snapshot_seeds)
 * writes them again. Their largest size sizes scripts/fuzz.sh's -max_len. */
#include "test.h"
#include "../detect/engine.h"
#include "../detect/snapshot.h"
#include "../parsers/parser.h"
#include "engine_harness.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define TAG 1
#define DIR "tests/fuzz/corpus/snapshot/"
#define DEMO "data/demo/dgx-07.dmon.txt"
/* fuzz_snapshot.c's exercise() samples host n1 at T0 + 100 s on: the seeds'
 * newest sample is the second before */
#define LAST_MS (T0 + 99000)

/* Feeding a parsed trace to the engine (e NULL: only its oldest and
 * newest times are noted): GPUs up to max_gpu, host n1, times shifted by
 * shift_ms; events after upto_ms (0 = none) are left out. */
struct feed_ctx { struct engine *e; int max_gpu; int64_t shift_ms, upto_ms, oldest, newest; };

static void feed_event(void *ctx, const struct event *ev)
{
    struct feed_ctx *c = ctx;
    double g;
    if (event_get_num(ev, "gpu.index", &g) && g > c->max_gpu) return;
    if (c->upto_ms && ev->ts_ms > c->upto_ms) return;
    if (ev->ts_ms > c->newest) c->newest = ev->ts_ms;
    if (ev->ts_ms < c->oldest) c->oldest = ev->ts_ms;
    if (!c->e) return;
    struct event copy = *ev;   /* shallow: the engine only reads it */
    copy.ts_ms += c->shift_ms;
    copy.host = "n1";
    engine_feed_tag(c->e, &copy, TAG);
}

/* Parses the demo trace into c. */
static int parse_demo(struct feed_ctx *c)
{
    c->oldest = INT64_MAX;
    c->newest = INT64_MIN;
    FILE *f = fopen(DEMO, "rb");
    if (!f) return GL_ERROR;
    struct parser *ps = parser_new(&parser_dmon, feed_event, c);
    struct line_src src = { .host = "dgx-07", .path = "dmon", .source = "dmon", .now_ms = T0 };
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        src.lineno++;
        parser_feed(ps, &src, line, strcspn(line, "\n"));
        src.offset += (int64_t)strlen(line);
    }
    parser_flush(ps);
    parser_free(ps);
    fclose(f);
    return GL_OK;
}

/* The engine of profile p after the demo's GPUs 0..max_gpu over its first
 * secs seconds (0 = all of it), its newest sample at LAST_MS; NULL when
 * the trace cannot be read. */
static struct engine *demo_engine(struct profile *p, int max_gpu, int64_t secs)
{
    struct feed_ctx c = { .max_gpu = max_gpu };
    if (parse_demo(&c) != GL_OK || c.newest == INT64_MIN) return NULL;
    if (secs) {
        c.upto_ms = c.oldest + secs * 1000;
        parse_demo(&c);
    }
    c.shift_ms = LAST_MS - c.newest;
    c.e = engine_new(p, NULL, NULL);
    parse_demo(&c);
    return c.e;
}

/* Two GPUs at 1 s over 700 s ending at LAST_MS, GPU 1 hot (95 °C) for its
 * last 100 s: an open episode and its incident. */
static struct engine *open_incident_engine(struct profile *p)
{
    struct engine *e = engine_new(p, NULL, NULL);
    for (int64_t s = -600; s < 100; s++)
        for (int g = 0; g < 2; g++)
            sample_tagged(e, TAG, "n1", g, s, "gpu.temperature.gpu", g == 1 && s >= 0 ? 95.0 : 55.0 + (double)((s + g) % 7),
                          "gpu.power.usage", 280.0 + (double)((s * 13 + g * 5) % 40), "gpu.utilization.gpu.pct", 90.0,
                          "gpu.clock.streaming_multiprocessor_frequency", 1410.0, NULL);
    return e;
}

/* One GPU over 100 s, then an Xid 79 naming a bus id no GPU of the host
 * carries: a host-level GPU entry without samples (last sample INT64_MIN). */
static struct engine *kernel_engine(struct profile *p)
{
    struct engine *e = engine_new(p, NULL, NULL);
    for (int64_t s = 0; s < 100; s++)
        sample_tagged(e, TAG, "n1", 0, s, "gpu.temperature.gpu", 60.0, "gpu.power.usage", 300.0, NULL);
    struct event ev;
    xid_event(&ev, "n1", LAST_MS, 79);
    event_add_str(&ev, "gpu.pci.bus_id", "00000000:99:00.0", 16);
    engine_feed_tag(e, &ev, TAG);
    event_free(&ev);
    return e;
}

struct seed { const char *name; struct engine *(*make)(struct profile *p); };
static struct engine *demo_1gpu_cold(struct profile *p) { return demo_engine(p, 0, 20); }
static struct engine *demo_3gpu(struct profile *p) { return demo_engine(p, 2, 0); }
static const struct seed seeds[] = {
    { "seed-demo-1gpu-cold", demo_1gpu_cold },            /* windows part-filled */
    { "seed-demo-3gpu", demo_3gpu },                      /* full windows, learned references */
    { "seed-open-incident", open_incident_engine },       /* an open episode, its incident */
    { "seed-kernel-unknown-gpu", kernel_engine },         /* a GPU entry without samples */
};

/* The seed of engine e: its GPU count (4 bytes LE) and raw payload, into out. */
static int seed_bytes(struct engine *e, struct buf *out)
{
    struct buf snap;
    buf_init(&snap);
    char err[256] = "";
    int rc = snapshot_save(e, TAG, 1, &snap, err, sizeof err);
    if (rc != GL_OK) { printf("  save: %s\n", err); buf_free(&snap); return GL_ERROR; }
    uint32_t raw_len = 0;
    for (int i = 0; i < 4; i++) raw_len |= (uint32_t)(unsigned char)snap.p[24 + i] << (8 * i);
    buf_append(out, snap.p + 36, 4);   /* the GPU count, as the header has it */
    buf_grow(out, raw_len);
    uLongf got = raw_len;
    if (uncompress((Bytef *)out->p + out->len, &got, (const Bytef *)snap.p + SNAP_HEADER, (uLong)(snap.len - SNAP_HEADER)) != Z_OK ||
        got != raw_len)
        rc = GL_ERROR;
    out->len += raw_len;
    buf_free(&snap);
    return rc;
}

/* Whether the seed in data/len decodes to the end with this build (wrapped
 * as fuzz_snapshot.c does); the refusal in err otherwise. */
static int seed_decodes(struct profile *p, const char *data, size_t len, char *err, size_t errlen)
{
    if (len < 4) { snprintf(err, errlen, "shorter than its GPU count"); return 0; }
    uint32_t ngpus = 0;
    for (int i = 0; i < 4; i++) ngpus |= (uint32_t)(unsigned char)data[i] << (8 * i);
    struct engine *e = engine_new(p, NULL, NULL);
    struct buf snap;
    buf_init(&snap);
    int ok = snapshot_wrap(e, 7, ngpus, data + 4, len - 4, &snap, err, errlen) == GL_OK &&
             snapshot_load(e, TAG, snap.p, snap.len, NULL, err, errlen) == SNAP_OK;
    if (ok) {   /* and takes the samples fuzz_snapshot.c feeds */
        for (int i = 0; i < 4; i++)
            for (int g = 0; g < 2; g++)
                sample_tagged(e, TAG, "n1", g, i + 100, "gpu.temperature.gpu", 50.0 + 20 * i, "gpu.power.usage", 300.0,
                              "gpu.pcie.replay", 10.0 * i, NULL);
        ok = engine_get_stats(e)->samples == 8 && engine_get_stats(e)->out_of_order == 0;
        if (!ok) snprintf(err, errlen, "the restored series do not take the next samples");
    }
    buf_free(&snap);
    engine_free(e);
    return ok;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    struct buf b;
    buf_init(&b);
    char chunk[8192];
    size_t k;
    while ((k = fread(chunk, 1, sizeof chunk, f)) > 0) buf_append(&b, chunk, k);
    fclose(f);
    *len = b.len;
    return b.p ? b.p : calloc(1, 1);
}

TEST(seeds_are_real_snapshots_of_this_build)
{
    char err[256];
    struct profile *p = profile_load(NULL, "gpu", err, sizeof err);
    if (!p) { CHECK(0); return; }
    int refresh = getenv("GPULOG_REFRESH_SNAPSHOT_SEEDS") != NULL;
    size_t largest = 0;
    for (size_t i = 0; i < GL_ARRAY_LEN(seeds); i++) {
        char path[256];
        snprintf(path, sizeof path, DIR "%s", seeds[i].name);
        struct engine *e = seeds[i].make(p);
        CHECK(e != NULL);
        if (!e) continue;
        struct buf now;
        buf_init(&now);
        CHECK_EQ_INT(seed_bytes(e, &now), GL_OK);
        /* what is made now decodes (else the generator is wrong, not the seed) */
        CHECK(seed_decodes(p, now.p, now.len, err, sizeof err) || printf("  %s as made now: %s\n", seeds[i].name, err) < 0);
        if (refresh) {
            FILE *f = fopen(path, "wb");
            CHECK(f && fwrite(now.p, 1, now.len, f) == now.len);
            if (f) fclose(f);
            printf("  wrote %s (%zu bytes)\n", path, now.len);
        }
        size_t len = 0;
        char *data = slurp(path, &len);
        if (!data) printf("  %s is missing: make snapshot-seeds\n", path);
        CHECK(data != NULL);
        if (data) {
            int ok = seed_decodes(p, data, len, err, sizeof err);
            if (!ok) printf("  %s is stale (%s): make snapshot-seeds\n", path, err);
            CHECK(ok);
            if (len > largest) largest = len;
        }
        free(data);
        buf_free(&now);
        engine_free(e);
    }
    /* the 3-GPU snapshot of the issue was about 19 KB: the fuzzer's inputs
     * must be allowed that long (scripts/fuzz.sh sizes -max_len from them) */
    CHECK(largest > 16384);
    printf("  largest seed: %zu bytes\n", largest);
    profile_free(p);
}

int main(void)
{
    gl_log_level = GL_LOG_ERROR;
    RUN(seeds_are_real_snapshots_of_this_build);
    return TEST_REPORT();
}
