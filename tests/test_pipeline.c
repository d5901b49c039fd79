/*
 * test_pipeline.c - the one loop (ingest/pipeline.c) with a scripted source
 * and a sink that settles when the test says: a lane's position is saved
 * only over records whose documents were all settled (in any order,
 * dead letters too), lanes are independent, SRC_MOVED starts a lane over,
 * a full sink holds documents in order, a revoked lane is drained and
 * reported, the stage receives the events and its flush writes at the end.
 */
#include "test.h"
#include "../ingest/pipeline.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------- the sink */

#define MAXDOCS 64
struct fake_sink {
    void *tokens[MAXDOCS];
    char ids[MAXDOCS][64];      /* event.id of each document written, in order */
    int n, settled;
    int settle;                 /* poll settles what was written (else nothing settles) */
    int reverse;                /* ... last first */
    int deadletter_first;       /* the first document settles as a dead letter */
    int refuse;                 /* the next writes answer GL_AGAIN this many times */
    struct sink *sk;
};

static int fs_write(void *st, const struct sink_doc *d)
{
    struct fake_sink *f = st;
    if (f->refuse > 0) { f->refuse--; return GL_AGAIN; }
    if (f->n == MAXDOCS) return GL_AGAIN;
    f->tokens[f->n] = d->token;
    snprintf(f->ids[f->n], sizeof f->ids[0], "%s", d->id ? d->id : "");
    f->n++;
    return GL_OK;
}

static long fs_poll(void *st, int timeout_ms)
{
    struct fake_sink *f = st;
    while (f->settle && f->settled < f->n) {
        int i = f->reverse ? f->n - 1 - f->settled : f->settled;
        int dl = f->deadletter_first && i == 0;
        f->settled++;
        f->sk->settle(f->sk->settle_ctx, f->tokens[i], dl ? SINK_DEADLETTER : SINK_STORED);
    }
    return f->n - f->settled;
}

static const struct sink_ops fake_sink_ops = { "fake", fs_write, fs_poll, NULL };

/* A fake sink of pl for the streams in mask (slot 0 or 1: two at a time). */
static struct fake_sink *add_fake_sink_for(struct pipeline *pl, int slot, unsigned mask)
{
    static struct fake_sink fakes[2];
    struct fake_sink *f = &fakes[slot];
    memset(f, 0, sizeof *f);
    struct sink *sk = xcalloc(1, sizeof *sk);
    sk->ops = &fake_sink_ops;
    sk->st = f;
    sk->settle = pipeline_settle;
    sk->settle_ctx = pl;
    f->sk = sk;
    pipeline_add_sink_for(pl, sk, mask);
    return f;
}

static struct fake_sink *add_fake_sink(struct pipeline *pl) { return add_fake_sink_for(pl, 0, SINK_ALL_STREAMS); }

/* -------------------------------------------------------- the source */

/* A scripted record: lane, range, and JSON (NULL: SRC_MOVED of the lane to off). */
struct step { uint32_t lane; int64_t off, end; const char *json; };

struct fake_src {
    struct source base;
    const struct step *steps;
    size_t n, at;
    size_t revoke_at;           /* before this step: drain and revoke lane 1 (0 = never) */
    long drained;               /* what the drain left unsettled */
    int64_t saved[4];           /* last position saved per lane */
    int saves;
};

static int fk_next(struct source *s, int timeout_ms, struct src_rec *r)
{
    struct fake_src *f = (struct fake_src *)s;
    if (f->at == f->n) return SRC_AGAIN;
    if (f->revoke_at && f->at == f->revoke_at) {
        f->revoke_at = 0;
        f->drained = s->env->drain(s->env->ctx, 1000);
        f->saved[1] = s->lanes[1].tr.committed;
        s->env->revoked(s->env->ctx, s, 1);
    }
    const struct step *st = &f->steps[f->at++];
    *r = (struct src_rec){ .p = st->json, .len = st->json ? strlen(st->json) : 0, .off = st->off, .end = st->end,
                           .lane = st->lane };
    return st->json ? SRC_REC : SRC_MOVED;
}

static int fk_checkpoint(struct source *s, uint32_t lane, int64_t committed, int changed)
{
    struct fake_src *f = (struct fake_src *)s;
    if (lane < 4) f->saved[lane] = committed;
    f->saves++;
    return GL_OK;
}

static int fk_ended(struct source *s) { return ((struct fake_src *)s)->at == ((struct fake_src *)s)->n; }

static void fk_close(struct source *s)
{
    source_fini(s);
    free(s);
}

static const struct source_ops fake_src_ops = {
    .name = "fake", .format = SRC_FORMAT_EVENTS, .open = NULL, .next = fk_next,
    .checkpoint = fk_checkpoint, .ended = fk_ended, .close = fk_close,
};

static struct fake_src *add_fake_src(struct pipeline *pl, const struct step *steps, size_t n)
{
    struct fake_src *f = xcalloc(1, sizeof *f);
    source_init(&f->base, &fake_src_ops, "fake", pipeline_env(pl));
    f->steps = steps;
    f->n = n;
    for (int i = 0; i < 4; i++) f->saved[i] = -1;
    pipeline_add(pl, &f->base, NULL);
    return f;
}

#define Z31 "0000000000000000000000000000000"
#define EV(id) "{\"@timestamp\":\"2025-03-01T00:00:00.000Z\",\"event.kind\":\"metric\",\"event.dataset\":\"gpu.dmon\"," \
               "\"event.id\":\"" Z31 id "\",\"host.name\":\"h\",\"gpu.index\":0,\"gpu.power.usage\":1}"

static const struct step three[] = {
    { 0, 0, 10, EV("a") }, { 0, 10, 20, EV("b") }, { 0, 20, 30, EV("c") },
};

static struct pipeline *new_pipeline(void)
{
    struct pipeline_opts o = { .host = "h", .shutdown_ms = 200, .quiet = 1 };
    return pipeline_new(&o);
}

/* A run of steps into a fake sink set up as sink_cfg says; the pipeline
 * (freed by the caller), the sink and the source come back, and what
 * pipeline_finish left unsettled. */
static struct pipeline *run_steps(const struct step *steps, size_t n, const struct fake_sink *sink_cfg,
                                  struct fake_sink **k, struct fake_src **f, long *left)
{
    struct pipeline *pl = new_pipeline();
    *k = add_fake_sink(pl);
    struct sink *sk = (*k)->sk;
    **k = *sink_cfg;
    (*k)->sk = sk;
    *f = add_fake_src(pl, steps, n);
    pipeline_run(pl);
    *left = pipeline_finish(pl);
    return pl;
}

/* ------------------------------------------------------------- tests */

TEST(unsettled_not_saved)
{
    struct fake_sink cfg = { 0 }, *k;
    struct fake_src *f;
    long left;
    struct pipeline *pl = run_steps(three, 3, &cfg, &k, &f, &left);
    CHECK_EQ_INT(left, 3);
    CHECK_EQ_INT(k->n, 3);
    CHECK_EQ_INT(f->saved[0], 0);
    CHECK_EQ_INT(pipeline_stats(pl)->events, 3);
    pipeline_free(pl);
}

TEST(settled_in_any_order_saved_to_the_end)
{
    struct fake_sink cfg = { .settle = 1, .reverse = 1, .deadletter_first = 1 }, *k;
    struct fake_src *f;
    long left;
    struct pipeline *pl = run_steps(three, 3, &cfg, &k, &f, &left);
    CHECK_EQ_INT(left, 0);
    CHECK_EQ_INT(f->saved[0], 30);
    CHECK_EQ_INT(pipeline_stats(pl)->deadletter, 1);
    CHECK_EQ_INT(pipeline_stats(pl)->acked, 2);
    pipeline_free(pl);
}

TEST(lanes_are_independent_and_moved_lanes_start_over)
{
    static const struct step steps[] = {
        { 0, 0, 10, EV("a") }, { 1, 100, 101, EV("b") }, { 0, 10, 20, EV("c") },
        { 1, 500, 500, NULL }, { 1, 500, 501, EV("d") }, { 0, 20, 30, "not json" },
    };
    struct fake_sink cfg = { .settle = 1 }, *k;
    struct fake_src *f;
    long left;
    struct pipeline *pl = run_steps(steps, GL_ARRAY_LEN(steps), &cfg, &k, &f, &left);
    CHECK_EQ_INT(left, 0);
    CHECK_EQ_INT(f->saved[0], 30);      /* the rejected record settles too */
    CHECK_EQ_INT(f->saved[1], 501);     /* moved to 500, then one record */
    CHECK_EQ_INT(pipeline_stats(pl)->rejected, 1);
    CHECK_EQ_INT(k->n, 4);
    pipeline_free(pl);
}

TEST(full_sink_keeps_order)
{
    struct fake_sink cfg = { .settle = 1, .refuse = 2 }, *k;
    struct fake_src *f;
    long left;
    struct pipeline *pl = run_steps(three, 3, &cfg, &k, &f, &left);
    CHECK_EQ_INT(left, 0);
    CHECK_EQ_INT(k->n, 3);
    CHECK_EQ_STR(k->ids[0], Z31 "a");
    CHECK_EQ_STR(k->ids[1], Z31 "b");
    CHECK_EQ_STR(k->ids[2], Z31 "c");
    CHECK_EQ_INT(f->saved[0], 30);
    pipeline_free(pl);
}

static int staged, flushed, revoked_lane = -1;
static struct pipeline *stage_pl;

static void stage(void *ctx, const struct event *ev)
{
    staged++;
    pipeline_emit(stage_pl, ev, STREAM_ANOMALIES);   /* held by the record */
}

static void stage_flush(void *ctx)
{
    struct event ev;
    event_init(&ev);
    ev.kind = "event";
    ev.dataset = "gpu.anomaly";
    memcpy(ev.id, Z31 "f", 33);
    flushed++;
    pipeline_emit(stage_pl, &ev, STREAM_ANOMALIES);  /* outside a record: held by nothing */
    event_free(&ev);
}

static void stage_revoked(void *ctx, struct source *s, uint32_t lane) { revoked_lane = (int)lane; }

TEST(stage_revoke_and_flush)
{
    static const struct step steps[] = {
        { 0, 0, 10, EV("a") }, { 1, 7, 8, EV("b") }, { 0, 10, 20, EV("c") },
    };
    struct pipeline_opts o = { .host = "h", .shutdown_ms = 200, .quiet = 1, .stage = stage,
                               .flush = stage_flush, .revoked = stage_revoked };
    struct pipeline *pl = stage_pl = pipeline_new(&o);
    struct fake_sink *k = add_fake_sink(pl);
    k->settle = 1;
    struct fake_src *f = add_fake_src(pl, steps, GL_ARRAY_LEN(steps));
    f->revoke_at = 2;
    pipeline_run(pl);
    CHECK_EQ_INT(pipeline_finish(pl), 0);
    CHECK_EQ_INT(staged, 3);
    CHECK_EQ_INT(flushed, 1);
    CHECK_EQ_INT(revoked_lane, 1);
    CHECK_EQ_INT(f->drained, 0);
    CHECK_EQ_INT(k->n, 4);
    CHECK_EQ_STR(k->ids[3], Z31 "f");
    CHECK(k->tokens[3] == NULL);
    CHECK_EQ_INT(f->saved[0], 20);
    pipeline_free(pl);
}

/* detect's routing: the stage writes a record to every output and the
 * consumed event to the outputs that take its stream only (Elasticsearch) */
static void route_stage(void *ctx, const struct event *ev)
{
    pipeline_emit(stage_pl, ev, STREAM_METRICS);      /* the consumed event */
    pipeline_emit(stage_pl, ev, STREAM_ANOMALIES);    /* as if a record */
}

TEST(emit_to_the_sinks_of_a_stream_only)
{
    struct pipeline_opts o = { .host = "h", .shutdown_ms = 200, .quiet = 1, .stage = route_stage };
    struct pipeline *pl = stage_pl = pipeline_new(&o);
    struct fake_sink *file = add_fake_sink_for(pl, 0, SINK_STREAM(STREAM_ANOMALIES));
    struct fake_sink *es = add_fake_sink_for(pl, 1, SINK_ALL_STREAMS);
    file->settle = es->settle = 1;
    struct fake_src *f = add_fake_src(pl, three, 3);
    pipeline_run(pl);
    CHECK_EQ_INT(pipeline_finish(pl), 0);
    CHECK_EQ_INT(file->n, 3);            /* the records only */
    CHECK_EQ_INT(es->n, 6);              /* the events and the records */
    CHECK_EQ_INT(f->saved[0], 30);       /* every document of both settled */
    pipeline_free(pl);
}

int main(void)
{
    RUN(unsettled_not_saved);
    RUN(settled_in_any_order_saved_to_the_end);
    RUN(lanes_are_independent_and_moved_lanes_start_over);
    RUN(full_sink_keeps_order);
    RUN(stage_revoke_and_flush);
    RUN(emit_to_the_sinks_of_a_stream_only);
    return TEST_REPORT();
}
