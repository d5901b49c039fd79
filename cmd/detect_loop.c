/* detect_loop.c - the stream of `gpulog detect` (see detect_loop.h): the
 * Kafka consumer source through the engine to the outputs, on the one loop. */
#include "detect_loop.h"
#include "cli.h"
#include "../ingest/pipeline.h"
#include "../detect/engine.h"
#include "../detect/snapshot.h"
#include "../core/metrics.h"
#include "../core/gpumetrics.h"
#include "../core/config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void detect_emit_record(struct dctx *d, const struct event *rec)
{
    d->records++;
    pipeline_emit(d->pl, rec, STREAM_ANOMALIES);
}

/* The engine's emit callback: a record to every output (ctx = the dctx). */
static void engine_emit(void *ctx, const struct event *rec)
{
    gpumetrics_record(rec);
    detect_emit_record(ctx, rec);
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

/* Once a second: readiness (also without messages), the stage's tick. */
static void detect_tick(void *ctx)
{
    struct dctx *d = ctx;
    detect_ready(d);
    d->ops->tick(d, 0);
}

/* The loop's stage: a consumed event to the stage under its partition's tag. */
static void detect_stage(void *ctx, const struct event *ev)
{
    struct dctx *d = ctx;
    detect_ready(d);
    note_dropped(d);
    d->ops->feed(d, ev, SRC_KAFKA_TAG(pipeline_lane(d->pl)));
}

/* A partition was revoked: its lane's state goes. */
static void detect_revoked(void *ctx, struct source *s, uint32_t lane)
{
    (void)s;
    struct dctx *d = ctx;
    d->ops->drop(d, SRC_KAFKA_TAG(lane));
}

/* The end of --once (not after a signal). */
static void detect_flush(void *ctx)
{
    struct dctx *d = ctx;
    if (d->once && !pipeline_stopping()) d->ops->flush(d);
}

static void detect_reload(void *ctx)
{
    struct dctx *d = ctx;
    if (d->ops->reload) d->ops->reload(d);
}

/* The consumer's snapshot hooks (--state-topic): the state of the
 * partition with this tag to out, and back (a refused snapshot is said and
 * the partition starts cold). */
static int detect_snap_save(void *ctx, int tag, int64_t offset, struct buf *out)
{
    struct dctx *d = ctx;
    char err[GL_ERRLEN];
    if (d->ops->save(d, tag, offset, out, err, sizeof err) == GL_OK) return GL_OK;
    gl_say(GL_LOG_ERROR, "gpulog %s: %s\n", d->ops->name, err);
    return GL_ERROR;
}

static int detect_snap_restore(void *ctx, int tag, const void *snap, size_t len, int64_t *offset)
{
    struct dctx *d = ctx;
    char err[GL_ERRLEN];
    if (d->ops->restore(d, tag, snap, len, offset, err, sizeof err) == GL_OK) return GL_OK;
    gl_say(GL_LOG_WARN, "gpulog %s: %s: not used, the partition starts cold\n", d->ops->name, err);
    return GL_ERROR;
}

/* ---- the engine as the stage ------------------------------------------ */

/* A consumed event to the engine under its partition's tag and, as it
 * came, to the outputs that take its stream (Elasticsearch: Xid/SXid
 * events, metric events with --index-metrics); its offset waits for them. */
static void eng_stage_feed(struct dctx *d, const struct event *ev, int tag)
{
    engine_feed_tag(d->eng, ev, tag);
    gpumetrics_observe(ev);
    enum sink_stream st = sink_stream_of(ev->dataset);
    if (d->es && st != STREAM_ANOMALIES) pipeline_forward(d->pl, ev, st);
}

static void engine_drop(struct dctx *d, int tag) { engine_drop_tag(d->eng, tag); }

/* The end of --once: the last sample blocks. */
static void engine_end(struct dctx *d) { engine_flush(d->eng); }

/* SIGHUP: the detector configuration again. */
static void eng_stage_reload(struct dctx *d) { stage_reload(d->eng, &d->prof, d->detectors, d->profile_name); }

static void engine_tick(struct dctx *d, int final)
{
    (void)final;
    metrics_set(M_ANOMALIES_OPEN, (int64_t)engine_get_stats(d->eng)->open);
}

static int engine_save(struct dctx *d, int tag, int64_t offset, struct buf *out, char *err, size_t errlen)
{
    return snapshot_save(d->eng, tag, offset, out, err, errlen);
}

static int engine_restore(struct dctx *d, int tag, const void *snap, size_t len, int64_t *offset, char *err,
                          size_t errlen)
{
    return snapshot_load(d->eng, tag, snap, len, offset, err, errlen) == SNAP_OK ? GL_OK : GL_ERROR;
}

static void engine_summary(const struct dctx *d, FILE *f)
{
    const struct engine_stats *es = engine_get_stats(d->eng);
    fprintf(f, ", %llu samples; records: %llu (%llu started, %llu ended)", (unsigned long long)es->samples,
            (unsigned long long)d->records, (unsigned long long)es->starts, (unsigned long long)es->ends);
}

static const struct dstage detect_engine_stage = {
    .name = "detect", .feed = eng_stage_feed, .drop = engine_drop, .flush = engine_end, .reload = eng_stage_reload,
    .tick = engine_tick, .save = engine_save, .restore = engine_restore, .summary = engine_summary,
};

/* ------------------------------------------------------------------------ */

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

int consumer_opt(const char *cmd, struct consumer_opts *o, int c, const char *arg)
{
    switch (c) {
    case 'X':
        if (!strchr(arg, '=')) return cli_usage_error(cmd, "-X wants key=value, got '%s'", arg);
        return STAGE_OPT_PASS;       /* a configuration key */
    case CONSUMER_O_CONFIG: return EXIT_OK;   /* read by config_init_command */
    case 'o': o->output = arg; return EXIT_OK;
    case CONSUMER_O_ONCE: o->once = 1; return EXIT_OK;
    case CONSUMER_O_SNAP_S: {
        char *end;
        double v = strtod(arg, &end);
        if (*end || !(v >= 0.1 && v <= 86400))
            return cli_usage_error(cmd, "--snapshot-interval wants 0.1..86400 s, got '%s'", arg);
        o->snapshot_ms = (int)(v * 1000);
        return EXIT_OK;
    }
    }
    return STAGE_OPT_PASS;
}

int consumer_settings(const char *cmd, const struct gpulog_config *cfg, const char *group, struct consumer_opts *o,
                      struct ksrc_opts *k)
{
    memset(k, 0, sizeof *k);
    k->name = cmd;
    k->brokers = *cfg->kafka.brokers ? cfg->kafka.brokers : getenv("KAFKA_BROKERS");
    if (!k->brokers || !*k->brokers) return cli_usage_error(cmd, "--brokers is required (or kafka.brokers, KAFKA_BROKERS)");
    k->group = group;
    if (!group || !*group) return cli_usage_error(cmd, "--group is required");
    k->state_topic = *cfg->kafka.topic_state ? cfg->kafka.topic_state : NULL;
    o->props = xcalloc(cfg->kafka.properties.n + 1, sizeof *o->props);
    for (size_t i = 0; i < cfg->kafka.properties.n; i++) o->props[i] = cfg->kafka.properties.kv[i];
    k->props = o->props;
    k->nprops = cfg->kafka.properties.n;
    k->once = o->once;
    k->snapshot_ms = o->snapshot_ms;
    return EXIT_OK;
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
    if (detect_outputs(d, o, err, errlen) != GL_OK) {
        *o->usage = 1;
        return GL_ERROR;
    }
    d->src = pipeline_open(d->pl, "kafka", o->topics, NULL, err, errlen);
    return d->src ? GL_OK : GL_ERROR;
}

/* The engine and its emit callback for detect_build (d->prof loaded). */
void detect_engine_new(struct dctx *d)
{
    d->ops = &detect_engine_stage;
    d->eng = engine_new(d->prof, engine_emit, d);
}

/* The last lines on stderr: counts, then each partition's committed offset. */
static void detect_summary(const struct dctx *d, int stopped)
{
    const struct pipeline_stats *ps = pipeline_stats(d->pl);
    fprintf(stderr, "gpulog %s: consumed %llu messages (%llu undecodable)", d->ops->name,
            (unsigned long long)ps->lines, (unsigned long long)ps->rejected);
    d->ops->summary(d, stderr);
    fprintf(stderr, ", %llu settled, %llu dead-lettered%s\n", (unsigned long long)(ps->acked + ps->deadletter),
            (unsigned long long)ps->deadletter, stopped ? " (stopped by a signal)" : "");
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
        gl_say(GL_LOG_ERROR, "gpulog %s: %ld records not settled within the shutdown deadline: their offsets are "
                        "not committed and are consumed again after a restart\n", d->ops->name, left);
        rc = EXIT_IOERR;
    }
    struct ksrc *ks = src_kafka_consumer(d->src);
    ksrc_commit(ks, 1);
    metrics_set(M_CONSUMER_LAG, ksrc_lag(ks));
    d->ops->tick(d, 1);
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
