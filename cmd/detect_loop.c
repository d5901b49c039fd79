/* detect_loop.c - the stream of `gpulog detect` (see detect_loop.h): the
 * Kafka consumer source through the engine to the outputs, on the one loop. */
#include "detect_loop.h"
#include "cli.h"
#include "../ingest/pipeline.h"
#include "../detect/engine.h"
#include "../detect/snapshot.h"
#include "../core/metrics.h"
#include "../core/gpumetrics.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

/* The engine's emit callback: a record to every output, held by the
 * message being processed (ctx = the dctx). */
static void detect_emit(void *ctx, const struct event *rec)
{
    struct dctx *d = ctx;
    d->records++;
    gpumetrics_record(rec);
    pipeline_emit(d->pl, rec, STREAM_ANOMALIES);
}

/* Counts fields dropped by a full key table and says so once. */
static void note_dropped(struct dctx *d)
{
    uint64_t dropped = event_json_dropped();
    if (dropped == d->fields_dropped) return;
    metrics_add(M_FIELDS_DROPPED, dropped - d->fields_dropped);
    if (!d->fields_dropped)
        log_warn("msg=\"more than %d distinct field keys: fields with new keys are dropped\" source=\"%s\" lane=%" PRId64,
                 EVENT_INTERN_MAX, d->src->name, pipeline_lane(d->pl));
    d->fields_dropped = dropped;
}

/* /readyz once the group gave us partitions. */
static void detect_ready(struct dctx *d)
{
    if (d->ready || !ksrc_assigned(src_kafka_consumer(d->src))) return;
    metrics_set_ready(1);
    d->ready = 1;
}

/* Once a second: readiness (also without messages), the gauge. */
static void detect_tick(void *ctx)
{
    struct dctx *d = ctx;
    detect_ready(d);
    metrics_set(M_ANOMALIES_OPEN, (int64_t)engine_get_stats(d->eng)->open);
}

/* The stage: a consumed event to the engine under its partition's tag and,
 * as it came, to the outputs that take its stream (Elasticsearch: Xid/SXid
 * events, metric events with --index-metrics); its offset waits for them. */
static void detect_stage(void *ctx, const struct event *ev)
{
    struct dctx *d = ctx;
    detect_ready(d);
    note_dropped(d);
    engine_feed_tag(d->eng, ev, SRC_KAFKA_TAG(pipeline_lane(d->pl)));
    gpumetrics_observe(ev);
    enum sink_stream st = sink_stream_of(ev->dataset);
    if (d->es && st != STREAM_ANOMALIES) pipeline_forward(d->pl, ev, st);
}

/* A partition was revoked: its lane's detector state goes. */
static void detect_revoked(void *ctx, struct source *s, uint32_t lane)
{
    (void)s;
    struct dctx *d = ctx;
    engine_drop_tag(d->eng, SRC_KAFKA_TAG(lane));
}

/* The end of --once (not after a signal): the open episodes' records. */
static void detect_flush(void *ctx)
{
    struct dctx *d = ctx;
    if (d->once && !pipeline_stopping()) engine_flush(d->eng);
}

/* SIGHUP: the detector configuration again. */
static void detect_reload(void *ctx)
{
    struct dctx *d = ctx;
    stage_reload(d->eng, &d->prof, d->detectors, d->profile_name);
}

/* The consumer's snapshot hooks (--state-topic): the detector state of
 * the partition with this tag to out, and back (a refused snapshot is said
 * and the partition starts cold). */
static int detect_snap_save(void *ctx, int tag, int64_t offset, struct buf *out)
{
    struct dctx *d = ctx;
    char err[GL_ERRLEN];
    if (snapshot_save(d->eng, tag, offset, out, err, sizeof err) == GL_OK) return GL_OK;
    gl_say(GL_LOG_ERROR, "gpulog detect: %s\n", err);
    return GL_ERROR;
}

static int detect_snap_restore(void *ctx, int tag, const void *snap, size_t len, int64_t *offset)
{
    struct dctx *d = ctx;
    char err[GL_ERRLEN];
    if (snapshot_load(d->eng, tag, snap, len, offset, err, sizeof err) == SNAP_OK) return GL_OK;
    gl_say(GL_LOG_WARN, "gpulog detect: %s: not used, the partition starts cold\n", err);
    return GL_ERROR;
}

/* The outputs as sinks of the loop: the file and the anomalies topic take
 * the records, Elasticsearch also the consumed events. */
static int detect_outputs(struct dctx *d, const struct detect_parts *o, char *err, size_t errlen)
{
    struct sink *s;
    if (o->anomalies_topic) {
        struct kafka_conf kc = { .brokers = o->kafka.brokers, .props = o->kafka.props, .nprops = o->kafka.nprops };
        kc.topic[STREAM_ANOMALIES] = o->anomalies_topic;
        if (!(s = sink_kafka_new(&kc, pipeline_settle, d->pl, err, errlen))) return GL_ERROR;
        pipeline_add_sink_for(d->pl, s, SINK_STREAM(STREAM_ANOMALIES));
    }
    if (o->output || (!o->anomalies_topic && !o->es->url)) {
        if (!(s = sink_file_new(o->output, pipeline_settle, d->pl, err, errlen))) return GL_ERROR;
        pipeline_add_sink_for(d->pl, s, SINK_STREAM(STREAM_ANOMALIES));
    }
    if (o->es->url) {
        if (!(s = sink_es_new(o->es, pipeline_settle, d->pl, err, errlen))) return GL_ERROR;
        pipeline_add_sink_for(d->pl, s, SINK_STREAM(STREAM_ANOMALIES) | SINK_STREAM(STREAM_EVENTS) |
                                        (o->es->index_metrics ? SINK_STREAM(STREAM_METRICS) : 0));
        d->es = 1;
    }
    return GL_OK;
}

int detect_build(struct dctx *d, const struct detect_parts *o, char *err, size_t errlen)
{
    d->kafka = (struct ksrc_source_opts){ .o = o->kafka, .usage = o->usage };
    if (o->kafka.state_topic)
        d->kafka.snap = (struct ksrc_hooks){ .ctx = d, .save = detect_snap_save, .restore = detect_snap_restore };
    struct pipeline_opts po = {
        .once = o->kafka.once, .shutdown_ms = o->shutdown_ms, .once_ms = 60000, .max_reports = 10, .metrics = 1,
        .stage = detect_stage, .reload = detect_reload, .tick = detect_tick, .flush = detect_flush,
        .revoked = detect_revoked, .kafka = &d->kafka, .ctx = d,
    };
    d->once = o->kafka.once;
    d->pl = pipeline_new(&po);
    if (detect_outputs(d, o, err, errlen) != GL_OK) return GL_ERROR;
    d->eng = engine_new(d->prof, detect_emit, d);
    d->src = pipeline_open(d->pl, "kafka", o->topics, NULL, err, errlen);
    return d->src ? GL_OK : GL_ERROR;
}

/* The last lines on stderr: counts, then each partition's committed offset. */
static void detect_summary(const struct dctx *d, int stopped)
{
    const struct engine_stats *es = engine_get_stats(d->eng);
    const struct pipeline_stats *ps = pipeline_stats(d->pl);
    gl_say(GL_LOG_INFO, "gpulog detect: consumed %llu messages (%llu undecodable), %llu samples; records: %llu "
                    "(%llu started, %llu ended), %llu settled, %llu dead-lettered%s\n",
            (unsigned long long)ps->lines, (unsigned long long)ps->rejected, (unsigned long long)es->samples,
            (unsigned long long)d->records, (unsigned long long)es->starts, (unsigned long long)es->ends,
            (unsigned long long)(ps->acked + ps->deadletter), (unsigned long long)ps->deadletter,
            stopped ? " (stopped by a signal)" : "");
    ksrc_report(src_kafka_consumer(d->src), stderr);
}

int detect_run(struct dctx *d)
{
    cli_catch_signals(pipeline_on_signal);
    pipeline_run(d->pl);
    int stopped = pipeline_stopping();
    long left = pipeline_finish(d->pl);
    int rc = EXIT_OK;
    if (left > 0) {
        gl_say(GL_LOG_ERROR, "gpulog detect: %ld records not settled within the shutdown deadline: their offsets are "
                        "not committed and are consumed again after a restart\n", left);
        rc = EXIT_IOERR;
    }
    struct ksrc *ks = src_kafka_consumer(d->src);
    ksrc_commit(ks, 1);
    metrics_set(M_CONSUMER_LAG, ksrc_lag(ks));
    metrics_set(M_ANOMALIES_OPEN, (int64_t)engine_get_stats(d->eng)->open);
    metrics_set_ready(0);
    if (pipeline_stats(d->pl)->fatal || ksrc_failed(ks)) rc = EXIT_IOERR;
    ksrc_close(ks);                      /* leaving the group: the revoke drains through the loop */
    detect_summary(d, stopped);
    return rc;
}

void detect_free(struct dctx *d)
{
    if (d->src) ksrc_close(src_kafka_consumer(d->src));   /* its revoke drains through the loop: before the outputs go */
    pipeline_free(d->pl);                /* outputs, then the source */
    d->pl = NULL;
    d->src = NULL;
    engine_free(d->eng);
    profile_free(d->prof);
}
