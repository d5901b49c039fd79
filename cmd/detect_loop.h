/*
 * detect_loop.h - the stream of `gpulog detect`: Kafka consumer source
 * (ingest/kafka_src.h) -> engine -> outputs, with settle -> commit.
 *
 * cmd/detect.c parses the flags and builds the parts (source, engine,
 * outputs); this file joins them: each message is decoded and fed to the
 * engine (detect_message), records and forwarded events go to the outputs
 * with a token of the source (detect_emit, detect_forward), their settles
 * release the tokens (detect_settle), and the source commits the settled
 * prefix. Backpressure: while an output holds documents for over 1 s the
 * partitions are paused and the group still polled.
 */
#ifndef GPULOG_DETECT_LOOP_H
#define GPULOG_DETECT_LOOP_H

#include "stage.h"
#include "../sinks/sink.h"

#include <signal.h>

struct ksrc;
struct engine;
struct profile;

struct dctx {
    struct ksrc *src;
    struct engine *eng;
    struct profile *prof;
    const char *detectors, *profile_name;   /* what SIGHUP reloads */
    struct outputs out;
    struct sink *es;                         /* also in out: gets the consumed events */
    int es_metrics;
    int once, fatal;
    struct buf json, key;
    uint64_t fields_dropped;                 /* event_json_dropped() last seen */
    uint64_t consumed, bad, records, settled, deadletter;
    /* backpressure: documents an output could not take yet; while any are
     * held the assigned partitions are paused and the consumer is still
     * polled, so the group does not evict us (max.poll.interval.ms) */
    struct sink_hold held;
    int paused;
    int64_t paused_since, pause_logged;      /* pause_logged: rate limit of the log lines */
    uint64_t pauses;
};

/* What detect's outputs are made of (borrowed). */
struct detect_out_opts {
    const char *brokers, *output, *anomalies_topic;
    const char *const *props;               /* -X for the anomalies topic's producer */
    size_t nprops;
    const struct es_conf *es;                /* es->url NULL: no Elasticsearch */
};
/* Builds the outputs into d->out: an anomalies topic, a file or stdout
 * (NDJSON; stdout when nothing else is asked for), Elasticsearch (also
 * d->es, which gets the consumed events). GL_OK or GL_ERROR with err. */
int detect_outputs(struct dctx *d, const struct detect_out_opts *o, char *err, size_t errlen);
/* The outputs' settle callback (ctx = the dctx). */
void detect_settle(void *ctx, void *token, enum sink_outcome outcome);
/* The engine's emit callback: a record to every output (ctx = the dctx). */
void detect_emit(void *ctx, const struct event *rec);
/* The source's rebalance hooks (ctx = the dctx). */
long detect_drain(void *ctx, int timeout_ms);
void detect_revoked(void *ctx, int tag);
/* The source's snapshot hooks (--state-topic): the detector state of the
 * partition with this tag to out, and back (a refused snapshot is said and
 * the partition starts cold). */
int detect_snap_save(void *ctx, int tag, int64_t offset, struct buf *out);
int detect_snap_restore(void *ctx, int tag, const void *snap, size_t len, int64_t *offset);

/* Consumes until *stop, a fatal error or (--once) the end; reloads on *hup. */
void detect_loop(struct dctx *d, volatile sig_atomic_t *stop, volatile sig_atomic_t *hup);
/* After the loop: flushes the engine (--once), settles the outputs within
 * limit_ms, commits. Returns EXIT_OK or EXIT_IOERR. */
int detect_finish(struct dctx *d, int stopped, int64_t limit_ms);
/* The last lines on stderr: counts, then each partition's committed offset. */
void detect_summary(const struct dctx *d, int stopped);
/* Frees what d owns (source, outputs, held documents, engine, profile). */
void detect_free(struct dctx *d);

#endif
