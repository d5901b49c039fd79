/* detect_loop.c - the stream of `gpulog detect` (see detect_loop.h): the
 * Kafka consumer source's messages through the engine to the outputs,
 * settles back to the source, which commits. */
#include "detect_loop.h"
#include "cli.h"
#include "../ingest/kafka_src.h"
#include "../detect/engine.h"
#include "../detect/snapshot.h"
#include "../core/metrics.h"
#include "../core/gpumetrics.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

void detect_settle(void *ctx, void *token, enum sink_outcome outcome)
{
    struct dctx *d = ctx;
    d->settled++;
    if (outcome == SINK_DEADLETTER) { d->deadletter++; metrics_inc(M_DEADLETTERS); }
    else metrics_inc(M_EVENTS_PRODUCED);
    if (token) ksrc_settle(d->src, token);
}

int detect_outputs(struct dctx *d, const struct detect_out_opts *o, char *err, size_t errlen)
{
    struct sink *s;
    if (o->anomalies_topic) {
        struct kafka_conf kc = { .brokers = o->brokers, .props = o->props, .nprops = o->nprops };
        kc.topic[STREAM_ANOMALIES] = o->anomalies_topic;
        if (!(s = sink_kafka_new(&kc, detect_settle, d, err, errlen))) return GL_ERROR;
        outputs_add(&d->out, s);
    }
    if (o->output || (!o->anomalies_topic && !o->es->url)) {
        if (!(s = sink_file_new(o->output, detect_settle, d, err, errlen))) return GL_ERROR;
        outputs_add(&d->out, s);
    }
    if (o->es->url) {
        if (!(s = sink_es_new(o->es, detect_settle, d, err, errlen))) return GL_ERROR;
        outputs_add(&d->out, s);
        d->es = s;
        d->es_metrics = o->es->index_metrics;
    }
    return GL_OK;
}

long detect_drain(void *ctx, int timeout_ms)
{
    struct dctx *d = ctx;
    return outputs_drain(&d->out, gl_now_ms() + timeout_ms);
}

void detect_revoked(void *ctx, int tag)
{
    struct dctx *d = ctx;
    engine_drop_tag(d->eng, tag);
}

int detect_snap_save(void *ctx, int tag, int64_t offset, struct buf *out)
{
    struct dctx *d = ctx;
    char err[GL_ERRLEN];
    if (snapshot_save(d->eng, tag, offset, out, err, sizeof err) == GL_OK) return GL_OK;
    fprintf(stderr, "gpulog detect: %s\n", err);
    return GL_ERROR;
}

int detect_snap_restore(void *ctx, int tag, const void *snap, size_t len, int64_t *offset)
{
    struct dctx *d = ctx;
    char err[GL_ERRLEN];
    if (snapshot_load(d->eng, tag, snap, len, offset, err, sizeof err) == SNAP_OK) return GL_OK;
    fprintf(stderr, "gpulog detect: %s: not used, the partition starts cold\n", err);
    return GL_ERROR;
}

/* Writes doc to s (held when s is full) with a token of the current
 * message; a failed output is fatal and the token settled as dead. */
static void detect_write(struct dctx *d, struct sink *s, struct sink_doc *doc, const char *what)
{
    doc->token = d->src ? ksrc_hold(d->src) : NULL;
    if (sink_hold_write(&d->held, s, doc) == GL_ERROR) {
        fprintf(stderr, "gpulog detect: %s: %s\n", what, s->errstr);
        d->fatal = 1;
        if (doc->token) detect_settle(d, doc->token, SINK_DEADLETTER);
    }
}

void detect_emit(void *ctx, const struct event *rec)
{
    struct dctx *d = ctx;
    d->records++;
    gpumetrics_record(rec);
    struct sink_doc doc;
    sink_doc_of(&doc, rec, STREAM_ANOMALIES, NULL, NULL, &d->json, &d->key);
    for (size_t i = 0; i < d->out.n; i++) detect_write(d, d->out.v[i], &doc, "output");
}

/* Hands a consumed event to the ES sink (Xid/SXid events, and metric events
 * with --index-metrics); its offset waits for the document's settle. */
static void detect_forward(struct dctx *d, const struct event *ev, const void *payload, size_t len)
{
    enum sink_stream st = sink_stream_of(ev->dataset);
    if (st == STREAM_ANOMALIES || (st == STREAM_METRICS && !d->es_metrics)) return;
    struct sink_doc doc = { .stream = st, .id = ev->id, .json = payload, .len = len };
    detect_write(d, d->es, &doc, "es");
}

/* Offers the held documents to their outputs, in order, until one is full. */
static void held_flush(struct dctx *d)
{
    struct sink *failed;
    void *token;
    sink_hold_flush(&d->held, &failed, &token);
    if (failed) {
        fprintf(stderr, "gpulog detect: output: %s\n", failed->errstr);
        d->fatal = 1;
        if (token) detect_settle(d, token, SINK_DEADLETTER);
    }
}

/* Pauses (or resumes) every assigned partition, and says so (at most one
 * pair of lines per 10 s: a slow cluster pauses often). */
static void set_paused(struct dctx *d, int pause)
{
    if (!ksrc_pause(d->src, pause)) return;
    int64_t now = gl_now_ms();
    d->paused = pause;
    if (pause) {
        d->paused_since = now;
        d->pauses++;
    }
    if (now - d->pause_logged < 10000 && (pause || now - d->paused_since < 10000)) return;
    if (pause) {
        d->pause_logged = now;
        log_warn("msg=\"outputs full for over 1 s: partitions paused, still polling the group\" held=%zu pauses=%" PRIu64,
                 d->held.n, d->pauses);
    } else {
        log_info("msg=\"outputs took the held records: partitions resumed\" paused_ms=%" PRId64, now - d->paused_since);
    }
}

/* An output is full: wait for it as a blocking write would, but after 1 s
 * pause the partitions and poll the group meanwhile, or it evicts us after
 * max.poll.interval.ms. Returns 1 while reading must wait (under 1 s). */
static int detect_backpressure(struct dctx *d)
{
    if (d->held.n) {
        outputs_poll(&d->out, d->paused ? 0 : 100);
        held_flush(d);
        if (d->held.n) {
            if (gl_now_ms() - d->held.since < 1000) return 1;
            set_paused(d, 1);
        }
    }
    if (!d->held.n && d->paused) set_paused(d, 0);
    return 0;
}

/* Counts fields dropped by a full key table and says so once. */
static void note_dropped(struct dctx *d, const struct krec *r)
{
    uint64_t dropped = event_json_dropped();
    if (dropped == d->fields_dropped) return;
    metrics_add(M_FIELDS_DROPPED, dropped - d->fields_dropped);
    if (!d->fields_dropped)
        log_warn("msg=\"more than %d distinct field keys: fields with new keys are dropped\" topic=\"%s\" partition=%d offset=%lld",
                 EVENT_INTERN_MAX, r->topic, (int)r->partition, (long long)r->offset);
    d->fields_dropped = dropped;
}

/* One consumed message: an event for the engine (and the ES sink); an
 * undecodable payload is counted and skipped. */
static void detect_message(struct dctx *d, struct event *ev, const struct krec *r)
{
    d->consumed++;
    metrics_inc(M_LINES_READ);
    char jerr[128];
    if (event_from_json(ev, r->payload, r->len, jerr, sizeof jerr) == GL_OK) {
        note_dropped(d, r);
        engine_feed_tag(d->eng, ev, r->tag);
        gpumetrics_observe(ev);
        if (d->es) detect_forward(d, ev, r->payload, r->len);
    } else {
        metrics_inc_label(M_LINES_REJECTED, "not_json");
        if (d->bad++ < 10)
            fprintf(stderr, "gpulog detect: %s[%d]@%lld: %s (skipped)\n", r->topic, (int)r->partition,
                    (long long)r->offset, jerr);
    }
}

/* One fetch's messages, in order. The backpressure check runs between
 * fetches, so a full output holds at most one batch's records more. */
static void detect_batch(struct dctx *d, struct event *ev, volatile sig_atomic_t *stop)
{
    struct krec r;
    do {
        if (ksrc_next(d->src, &r, 100) != GL_OK) break;
        detect_message(d, ev, &r);
        ksrc_done(d->src);
        /* --once stops at the end offsets found at start */
    } while (ksrc_buffered(d->src) && !*stop && !d->fatal && !(d->once && ksrc_once_done(d->src)));
    if (ksrc_failed(d->src)) d->fatal = 1;
}

/* Between fetches: outputs polled, settled offsets committed once a
 * second, the lag every 2 s. */
static void detect_tick(struct dctx *d, int64_t *last_commit, int64_t *last_lag)
{
    outputs_poll(&d->out, 0);
    int64_t now = gl_now_ms();
    if (now - *last_commit >= 1000) {
        ksrc_commit(d->src, 0);
        *last_commit = now;
        metrics_set(M_ANOMALIES_OPEN, (int64_t)engine_get_stats(d->eng)->open);
    }
    if (now - *last_lag >= 2000) {
        metrics_set(M_CONSUMER_LAG, ksrc_lag(d->src));
        *last_lag = now;
    }
}

void detect_loop(struct dctx *d, volatile sig_atomic_t *stop, volatile sig_atomic_t *hup)
{
    int ready = 0;                       /* /readyz: once the group gave us partitions */
    struct event ev;
    event_init(&ev);
    int64_t last_commit = gl_now_ms(), last_lag = 0;
    while (!*stop && !d->fatal) {
        if (*hup) {
            *hup = 0;
            stage_reload(d->eng, &d->prof, d->detectors, d->profile_name);
        }
        if (!ready && ksrc_assigned(d->src)) {
            metrics_set_ready(1);
            ready = 1;
        }
        if (detect_backpressure(d)) continue;
        detect_batch(d, &ev, stop);
        detect_tick(d, &last_commit, &last_lag);
        if (d->once && ksrc_once_done(d->src)) break;
    }
    metrics_set_ready(0);
    event_free(&ev);
}

int detect_finish(struct dctx *d, int stopped, int64_t limit_ms)
{
    int rc = EXIT_OK;
    if (d->once && !stopped) engine_flush(d->eng);
    int64_t until = gl_now_ms() + limit_ms;
    while (d->held.n && !d->fatal && gl_now_ms() < until) {
        held_flush(d);
        if (d->held.n) outputs_poll(&d->out, 100);
    }
    long left = outputs_drain(&d->out, until) + (long)d->held.n;
    if (left > 0) {
        fprintf(stderr, "gpulog detect: %ld records not settled within the shutdown deadline (%lld ms): their "
                        "offsets are not committed and are consumed again after a restart\n",
                left, (long long)limit_ms);
        rc = EXIT_IOERR;
    }
    ksrc_commit(d->src, 1);
    metrics_set(M_CONSUMER_LAG, ksrc_lag(d->src));
    metrics_set(M_ANOMALIES_OPEN, (int64_t)engine_get_stats(d->eng)->open);
    if (d->fatal || ksrc_failed(d->src)) rc = EXIT_IOERR;
    return rc;
}

void detect_summary(const struct dctx *d, int stopped)
{
    const struct engine_stats *es = engine_get_stats(d->eng);
    fprintf(stderr, "gpulog detect: consumed %llu messages (%llu undecodable), %llu samples; records: %llu "
                    "(%llu started, %llu ended), %llu settled, %llu dead-lettered%s\n",
            (unsigned long long)d->consumed, (unsigned long long)d->bad, (unsigned long long)es->samples,
            (unsigned long long)d->records, (unsigned long long)es->starts, (unsigned long long)es->ends,
            (unsigned long long)d->settled, (unsigned long long)d->deadletter, stopped ? " (stopped by a signal)" : "");
    if (d->src) ksrc_report(d->src, stderr);
}

void detect_free(struct dctx *d)
{
    ksrc_close(d->src);                  /* first: leaving the group drains the outputs */
    outputs_free(&d->out);
    for (size_t i = 0; i < d->held.n; i++) ksrc_token_free(d->held.v[i].doc.token);   /* not written: not committed */
    sink_hold_free(&d->held);
    ksrc_free(d->src);                   /* last: the outputs' tokens point into its partitions */
    d->src = NULL;
    engine_free(d->eng);
    profile_free(d->prof);
    buf_free(&d->json);
    buf_free(&d->key);
}
