/* test_snapshot.c - detector state snapshots (detect/snapshot.c, issue 19
 * item 2): an engine restored from a snapshot goes on exactly as the one
 * that made it (the same records, the open episode continued under its id,
 * no warm-up), where a cold one re-opens it; corrupted and truncated input
 * and a snapshot of another profile or format are refused with a reason and
 * leave the partition empty; bytes per GPU on the bundled 8-GPU demo trace
 * (data/demo/dgx-07.dmon.txt, the default GPU profile). */
#include "test.h"
#include "../detect/engine.h"
#include "../detect/engine_int.h"
#include "../detect/snapshot.h"
#include "../parsers/parser.h"
#include "engine_harness.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define TAG 3

/* Every record as its JSON line, appended to a buf. */
static void rec_json(void *ctx, const struct event *ev)
{
    event_to_json(ev, ctx);
    buf_putc(ctx, '\n');
}

static void sample_tag(struct engine *e, int64_t sec, int gpu, double temp, double power)
{
    sample_tagged(e, TAG, "n1", gpu, sec, "gpu.temperature.gpu", temp, "gpu.power.usage", power,
                  "gpu.utilization.gpu.pct", 90.0, NULL);
}

/* 4 GPUs at 1 s; GPU 2 hot (95 °C) from 400 s to 900 s, power with a
 * slow wave so the windows hold varied values. */
static void feed(struct engine *e, int64_t from, int64_t to)
{
    for (int64_t s = from; s < to; s++)
        for (int g = 0; g < 4; g++)
            sample_tag(e, s, g, g == 2 && s >= 400 && s < 900 ? 95.0 : 55.0 + (double)((s + g) % 7),
                       280.0 + (double)((s * 13 + g * 5) % 40));
}

/* An engine of profile p fed up to secs, and its snapshot (offset 1) in snap. */
static struct engine *fed_engine(struct profile *p, int64_t secs, struct buf *snap)
{
    struct engine *e = engine_new(p, NULL, NULL);
    feed(e, 0, secs);
    char err[256] = "";
    buf_init(snap);
    CHECK_EQ_INT(snapshot_save(e, TAG, 1, snap, err, sizeof err), GL_OK);
    return e;
}

/* A snapshot of engine a at 600 s (mid-episode), restored into b: both go
 * on to 1200 s with the same records; a cold engine re-opens the episode. */
TEST(round_trip_goes_on_warm)
{
    struct profile *p = prof_builtin("gpu");
    if (!p) { CHECK(0); return; }
    struct buf ra, rb, rc, snap;
    buf_init(&ra); buf_init(&rb); buf_init(&rc); buf_init(&snap);
    struct engine *a = engine_new(p, rec_json, &ra);
    feed(a, 0, 600);
    CHECK(engine_get_stats(a)->open >= 1);
    char err[256] = "";
    CHECK_EQ_INT(snapshot_save(a, TAG, 2400, &snap, err, sizeof err), GL_OK);
    CHECK(snap.len > SNAP_HEADER);
    ra.len = 0;
    struct engine *b = engine_new(p, rec_json, &rb);
    int64_t off = -1;
    CHECK_EQ_INT(snapshot_load(b, TAG, snap.p, snap.len, &off, err, sizeof err), SNAP_OK);
    CHECK_EQ_INT(off, 2400);
    CHECK_EQ_INT(engine_get_stats(b)->gpus, 4);
    CHECK_EQ_INT(engine_get_stats(b)->open, engine_get_stats(a)->open);
    CHECK_EQ_INT(engine_get_stats(b)->series, engine_get_stats(a)->series);
    /* a second snapshot of the restored engine is the same bytes */
    struct buf snap2;
    buf_init(&snap2);
    CHECK_EQ_INT(snapshot_save(b, TAG, 2400, &snap2, err, sizeof err), GL_OK);
    CHECK(snap2.len == snap.len && !memcmp(snap2.p, snap.p, snap.len));
    feed(a, 600, 1200);
    feed(b, 600, 1200);
    engine_flush(a);
    engine_flush(b);
    CHECK(ra.len > 0);
    CHECK(ra.len == rb.len && !memcmp(ra.p, rb.p, ra.len));
    CHECK(strstr(rb.p ? rb.p : "", "\"event.type\":\"end\",\"rule.id\":\"gpu.temp.high\"") != NULL);
    CHECK(!strstr(rb.p ? rb.p : "", "\"event.type\":\"start\",\"rule.id\":\"gpu.temp.high\""));
    /* without the snapshot: the episode starts again (and the windows warm up) */
    struct engine *c = engine_new(p, rec_json, &rc);
    feed(c, 600, 1200);
    engine_flush(c);
    CHECK(strstr(rc.p ? rc.p : "", "\"event.type\":\"start\",\"rule.id\":\"gpu.temp.high\"") != NULL);
    engine_free(a); engine_free(b); engine_free(c);
    buf_free(&ra); buf_free(&rb); buf_free(&rc); buf_free(&snap); buf_free(&snap2);
    profile_free(p);
}

/* The first value of key in the records of rule.id gpu.incident and
 * event.type type (NDJSON lines in b), into out ("" when none). */
static void incident_field(const struct buf *b, const char *type, const char *key, char *out, size_t len)
{
    char want[64], k[64];
    snprintf(want, sizeof want, "\"event.type\":\"%s\",\"rule.id\":\"gpu.incident\"", type);
    snprintf(k, sizeof k, "\"%s\":\"", key);
    out[0] = 0;
    for (const char *l = b->p; l && l < b->p + b->len;) {
        const char *nl = memchr(l, '\n', (size_t)(b->p + b->len - l));
        size_t n = nl ? (size_t)(nl - l) : (size_t)(b->p + b->len - l);
        char line[4096];
        snprintf(line, sizeof line, "%.*s", (int)n, l);
        const char *v = strstr(line, want) ? strstr(line, k) : NULL;
        if (v) {
            v += strlen(k);
            snprintf(out, len, "%.*s", (int)strcspn(v, "\""), v);
            return;
        }
        l = nl ? nl + 1 : NULL;
    }
}

/* Incidents (profile key "incidents"): the open incident of a GPU is in the
 * snapshot, so the restored engine ends it under its id (300 s after its
 * last episode) with no second start and the same records as the engine
 * that made it; a cold engine
 * re-opens it in the same UTC hour under the same incident id. */
TEST(round_trip_keeps_the_open_incident)
{
    struct profile *p = prof_of("{\"extends\":\"gpu\",\"incidents\":true}");
    if (!p) { CHECK(0); return; }
    struct buf ra, rb, rc, snap, snap2;
    buf_init(&ra); buf_init(&rb); buf_init(&rc); buf_init(&snap); buf_init(&snap2);
    struct engine *a = engine_new(p, rec_json, &ra);
    feed(a, 0, 600);
    char warm_id[40], id[40], err[256] = "";
    incident_field(&ra, "start", "anomaly.incident_id", warm_id, sizeof warm_id);
    CHECK(strlen(warm_id) == 32);
    CHECK_EQ_INT(snapshot_save(a, TAG, 7, &snap, err, sizeof err), GL_OK);
    ra.len = 0;
    struct engine *b = engine_new(p, rec_json, &rb);
    CHECK_EQ_INT(snapshot_load(b, TAG, snap.p, snap.len, NULL, err, sizeof err), SNAP_OK);
    CHECK_EQ_INT(snapshot_save(b, TAG, 7, &snap2, err, sizeof err), GL_OK);
    CHECK(snap2.len == snap.len && !memcmp(snap2.p, snap.p, snap.len));
    feed(a, 600, 1500);
    feed(b, 600, 1500);
    engine_flush(a);
    engine_flush(b);
    CHECK(ra.len > 0 && ra.len == rb.len && !memcmp(ra.p, rb.p, ra.len));
    incident_field(&rb, "start", "anomaly.incident_id", id, sizeof id);
    CHECK_EQ_STR(id, "");                              /* no second start */
    incident_field(&rb, "end", "anomaly.incident_id", id, sizeof id);
    CHECK_EQ_STR(id, warm_id);                         /* ended under its id */
    /* the same snapshot into an engine whose profile has incidents off: refused */
    struct profile *q = prof_of("{\"extends\":\"gpu\",\"incidents\":false}");
    if (!q) { CHECK(0); return; }
    struct engine *d = engine_new(q, NULL, NULL);
    CHECK_EQ_INT(snapshot_load(d, TAG, snap.p, snap.len, NULL, err, sizeof err), SNAP_OTHER_PROFILE);
    /* cold: the incident re-opens in the same hour under the same id */
    struct engine *c = engine_new(p, rec_json, &rc);
    feed(c, 600, 1500);
    engine_flush(c);
    incident_field(&rc, "start", "anomaly.incident_id", id, sizeof id);
    CHECK_EQ_STR(id, warm_id);
    engine_free(a); engine_free(b); engine_free(c); engine_free(d);
    buf_free(&ra); buf_free(&rb); buf_free(&rc); buf_free(&snap); buf_free(&snap2);
    profile_free(p);
    profile_free(q);
}

/* Every truncation and a flipped bit in every byte: refused with a reason,
 * the partition left empty, other partitions untouched. */
TEST(corrupted_and_truncated_refused)
{
    struct profile *p = prof_builtin("gpu");
    if (!p) { CHECK(0); return; }
    struct buf snap;
    struct engine *a = fed_engine(p, 300, &snap);
    char err[256] = "";
    struct engine *b = engine_new(p, NULL, NULL);
    sample_tagged(b, TAG + 1, "other", 0, 0, "gpu.temperature.gpu", 50.0, NULL);   /* another partition: stays */
    int refused = 0, reasons = 0, n = 0;
    for (size_t len = 0; len < snap.len; len += len < 64 ? 1 : 97, n++) {
        err[0] = 0;
        enum snap_refusal r = snapshot_load(b, TAG, snap.p, len, NULL, err, sizeof err);
        refused += r == SNAP_CORRUPT;
        reasons += !strncmp(err, "snapshot: ", 10);
    }
    CHECK_EQ_INT(refused, n);
    CHECK_EQ_INT(reasons, n);
    int nflip = 0, flip_refused = 0;
    for (size_t i = 0; i < snap.len; i += i < 64 ? 1 : 37, nflip++) {
        snap.p[i] ^= 0x10;
        flip_refused += snapshot_load(b, TAG, snap.p, snap.len, NULL, err, sizeof err) != SNAP_OK;
        CHECK_EQ_INT(engine_get_stats(b)->gpus, 1);
        snap.p[i] ^= 0x10;
    }
    CHECK_EQ_INT(flip_refused, nflip);
    CHECK_EQ_INT(snapshot_load(b, TAG, snap.p, snap.len, NULL, err, sizeof err), SNAP_OK);
    CHECK_EQ_INT(engine_get_stats(b)->gpus, 5);
    engine_free(a);
    engine_free(b);
    buf_free(&snap);
    profile_free(p);
}

/* Payload damage the CRC cannot see (the payload rewritten with a valid
 * CRC): refused or taken, never a crash, and the engine keeps working. */
TEST(crafted_payload_never_crashes)
{
    struct profile *p = prof_builtin("gpu");
    if (!p) { CHECK(0); return; }
    struct buf snap;
    struct engine *a = fed_engine(p, 200, &snap);
    char err[256];
    uLongf rawlen = 0;
    for (int i = 0; i < 4; i++) rawlen |= (uLongf)(unsigned char)snap.p[24 + i] << (8 * i);
    uint32_t ngpus = 0;
    for (int i = 0; i < 4; i++) ngpus |= (uint32_t)(unsigned char)snap.p[36 + i] << (8 * i);
    unsigned char *raw = malloc(rawlen);
    uLongf got = rawlen;
    CHECK_EQ_INT(uncompress(raw, &got, (const Bytef *)snap.p + SNAP_HEADER, (uLong)(snap.len - SNAP_HEADER)), Z_OK);
    int taken = 0, refused = 0;
    for (size_t i = 0; i < rawlen; i += 1 + i / 16) {
        unsigned char keep = raw[i];
        raw[i] = (unsigned char)(keep ^ (i & 1 ? 0xff : 0x81));
        struct buf m;
        buf_init(&m);
        CHECK_EQ_INT(snapshot_wrap(a, 1, ngpus, raw, rawlen, &m, err, sizeof err), GL_OK);
        struct engine *b = engine_new(p, NULL, NULL);
        if (snapshot_load(b, TAG, m.p, m.len, NULL, err, sizeof err) == SNAP_OK) {
            taken++;
            feed(b, 200, 230);                /* the restored state is usable */
        } else {
            refused++;
            CHECK_EQ_INT(engine_get_stats(b)->gpus, 0);
        }
        engine_free(b);
        buf_free(&m);
        raw[i] = keep;
    }
    CHECK(refused > 0);
    CHECK(taken + refused > 100);
    free(raw);
    engine_free(a);
    buf_free(&snap);
    profile_free(p);
}

/* A snapshot made under another profile (one parameter changed) or another
 * format version is refused with that reason, never applied. */
TEST(other_profile_or_format_refused)
{
    struct profile *p = prof_builtin("gpu");
    char err[256];
    struct profile *q = profile_from_json("{\"extends\":\"gpu\",\"rules\":[{\"id\":\"gpu.temp.high\",\"params\":{\"high\":90}}]}",
                                          strlen("{\"extends\":\"gpu\",\"rules\":[{\"id\":\"gpu.temp.high\",\"params\":{\"high\":90}}]}"),
                                          err, sizeof err);
    if (!p || !q) { CHECK(0); profile_free(p); profile_free(q); return; }
    struct buf snap;
    buf_init(&snap);
    struct engine *a = engine_new(p, NULL, NULL), *b = engine_new(q, NULL, NULL);
    CHECK(snapshot_fingerprint(a) != snapshot_fingerprint(b));
    feed(a, 0, 100);
    CHECK_EQ_INT(snapshot_save(a, TAG, 1, &snap, err, sizeof err), GL_OK);
    CHECK_EQ_INT(snapshot_load(b, TAG, snap.p, snap.len, NULL, err, sizeof err), SNAP_OTHER_PROFILE);
    CHECK(strstr(err, "another detector profile") != NULL);
    CHECK_EQ_INT(engine_get_stats(b)->gpus, 0);
    snap.p[4] = 9;
    CHECK_EQ_INT(snapshot_load(a, TAG, snap.p, snap.len, NULL, err, sizeof err), SNAP_OTHER_FORMAT);
    CHECK(strstr(err, "format version 9") != NULL);
    engine_free(a);
    engine_free(b);
    buf_free(&snap);
    profile_free(p);
    profile_free(q);
}


/* The GPU gpu of host "n1" (partition TAG) in e, or NULL. */
static struct ent *find_gpu(struct engine *e, int gpu)
{
    for (size_t b = 0; b < e->nhb; b++)
        for (struct host *h = e->hb[b]; h; h = h->next)
            for (struct ent *x = h->ents; h->tag == TAG && x; x = x->next)
                if (x->gpu == gpu) return x;
    return NULL;
}

/* The state block of GPU rule id on x (after its episode when det is set). */
static unsigned char *gpu_rule_state(struct engine *e, struct ent *x, const char *id, int det)
{
    for (size_t k = 0; k < e->ent_rules.n; k++)
        if (!strcmp(e->prof->rules[e->ent_rules.idx[k]].id, id))
            return (unsigned char *)x->rstate + e->ent_rules.off[k] + (det ? EP_SIZE : 0);
    return NULL;
}

/* A time a snapshot holds out of range (issue 27 item 2: a GPU's last
 * sample or a window's base at INT64_MIN overflowed the next sample's
 * arithmetic, UBSan in detect/engine.c and detect/window.c) is refused
 * with a reason; at INT64_MIN + 1 and 2^60 too; 2^53 is taken. */
TEST(times_out_of_range_refused)
{
    struct profile *p = prof_builtin("gpu");
    if (!p) { CHECK(0); return; }
    static const char *const what[] = { "GPU last sample", "GPU clock step", "series last sample", "window base",
                                        "host block", "incident start", "episode start", "idle_power state" };
    static const char *const why[] = { "a GPU's time is damaged", "a GPU's time is damaged",
                                       "a series' time or value is damaged", "a window is damaged", "a host is damaged",
                                       "an incident is damaged", "a rule state is damaged", "a rule state is damaged" };
    const int64_t bad[] = { INT64_MIN, INT64_MIN + 1, (int64_t)1 << 60 };
    for (size_t f = 0; f < GL_ARRAY_LEN(what); f++)
        for (size_t b = 0; b < GL_ARRAY_LEN(bad) + 1; b++) {
            int64_t t = b < GL_ARRAY_LEN(bad) ? bad[b] : GL_TIME_LIMIT;   /* the last: the bound itself, taken */
            struct engine *a = engine_new(p, NULL, NULL);
            feed(a, 0, 500);
            struct ent *x = find_gpu(a, 2);
            CHECK(x && x->nser && x->ser[0].w && x->inc.open);
            if (!x || !x->nser || !x->ser[0].w) { engine_free(a); continue; }
            int64_t *at[] = { &x->last_ts, &x->step_ts, &x->ser[0].last_ts, &x->ser[0].w->base_ms,
                              &x->host->block_ts, &x->inc.start,
                              (int64_t *)gpu_rule_state(a, x, "gpu.hang", 0),   /* its episode's start */
                              (int64_t *)gpu_rule_state(a, x, "gpu.power.idle", 1) };
            CHECK(at[6] && at[7]);
            if (!at[6] || !at[7]) { engine_free(a); continue; }
            *at[f] = t;
            struct buf snap;
            buf_init(&snap);
            char err[256] = "";
            CHECK_EQ_INT(snapshot_save(a, TAG, 1, &snap, err, sizeof err), GL_OK);
            struct engine *c = engine_new(p, NULL, NULL);
            enum snap_refusal r = snapshot_load(c, TAG, snap.p, snap.len, NULL, err, sizeof err);
            if (t == GL_TIME_LIMIT) {
                if (r != SNAP_OK) printf("  %s at 2^53: %s\n", what[f], err);
                CHECK_EQ_INT(r, SNAP_OK);
            } else {
                char want[128];
                snprintf(want, sizeof want, "snapshot: %s", why[f]);
                if (r == SNAP_OK || strcmp(err, want)) printf("  %s at %lld: %s\n", what[f], (long long)t, r ? err : "taken");
                CHECK(r == SNAP_CORRUPT && !strcmp(err, want));
                CHECK_EQ_INT(engine_get_stats(c)->gpus, 0);
            }
            feed(c, 500, 520);   /* usable either way (UBSan: no overflow) */
            engine_free(c);
            engine_free(a);
            buf_free(&snap);
        }
    /* a GPU that never sent a sample (an Xid naming no known GPU) keeps
     * INT64_MIN as its last sample time: taken */
    struct engine *a = engine_new(p, NULL, NULL);
    feed(a, 0, 100);
    struct event ev;
    xid_event(&ev, "n1", T0 + 100000, 79);
    event_add_str(&ev, "gpu.pci.bus_id", "00000000:99:00.0", 16);
    engine_feed_tag(a, &ev, TAG);
    event_free(&ev);
    struct buf snap;
    buf_init(&snap);
    char err[256] = "";
    CHECK_EQ_INT(snapshot_save(a, TAG, 1, &snap, err, sizeof err), GL_OK);
    struct engine *c = engine_new(p, NULL, NULL);
    CHECK_EQ_INT(snapshot_load(c, TAG, snap.p, snap.len, NULL, err, sizeof err), SNAP_OK);
    CHECK_EQ_INT(engine_get_stats(c)->kernel_events, 0);
    CHECK(find_gpu(c, -1) && find_gpu(c, -1)->last_ts == INT64_MIN);
    engine_free(c);
    engine_free(a);
    buf_free(&snap);
    profile_free(p);
}

static void feed_event(void *ctx, const struct event *ev) { engine_feed_tag(ctx, ev, TAG); }

/* Bytes per GPU of the default GPU profile on the bundled demo trace (8
 * GPUs, dmon -s pucvmet, full windows): printed, and bounded. */
TEST(bytes_per_gpu)
{
    FILE *f = fopen("data/demo/dgx-07.dmon.txt", "rb");
    CHECK(f != NULL);
    if (!f) return;
    struct profile *p = prof_builtin("gpu");
    struct engine *e = engine_new(p, NULL, NULL);
    struct parser *ps = parser_new(&parser_dmon, feed_event, e);
    struct line_src src = { .host = "dgx-07", .path = "dmon", .source = "dmon", .now_ms = T0 };
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        size_t l = strcspn(line, "\n");
        src.lineno++;
        parser_feed(ps, &src, line, l);
        src.offset += (int64_t)strlen(line);
    }
    parser_flush(ps);
    parser_free(ps);
    fclose(f);
    struct buf snap;
    buf_init(&snap);
    char err[256];
    CHECK_EQ_INT(snapshot_save(e, TAG, 1, &snap, err, sizeof err), GL_OK);
    const struct engine_stats *st = engine_get_stats(e);
    uint32_t raw = 0;
    for (int i = 0; i < 4; i++) raw |= (uint32_t)(unsigned char)snap.p[24 + i] << (8 * i);
    printf("  snapshot of %llu GPUs, %llu series: %zu bytes (%zu per GPU; %u uncompressed, %u per GPU)\n",
           (unsigned long long)st->gpus, (unsigned long long)st->series, snap.len,
           st->gpus ? snap.len / st->gpus : 0, raw, st->gpus ? raw / (uint32_t)st->gpus : 0);
    CHECK_EQ_INT(st->gpus, 8);
    CHECK(snap.len / 8 < 16384);
    struct engine *b = engine_new(p, NULL, NULL);
    CHECK_EQ_INT(snapshot_load(b, TAG, snap.p, snap.len, NULL, err, sizeof err), SNAP_OK);
    CHECK_EQ_INT(engine_get_stats(b)->series, st->series);
    engine_free(b);
    engine_free(e);
    buf_free(&snap);
    profile_free(p);
}

int main(void)
{
    gl_log_level = GL_LOG_ERROR;
    RUN(round_trip_goes_on_warm);
    RUN(round_trip_keeps_the_open_incident);
    RUN(corrupted_and_truncated_refused);
    RUN(crafted_payload_never_crashes);
    RUN(other_profile_or_format_refused);
    RUN(times_out_of_range_refused);
    RUN(bytes_per_gpu);
    return TEST_REPORT();
}
