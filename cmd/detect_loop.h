/*
 * detect_loop.h - the stream of `gpulog detect` on the one loop
 * (ingest/pipeline.h): the Kafka consumer source (kind "kafka",
 * ingest/src_kafka.c: its partitions are the loop's lanes) -> the engine as
 * the stage -> the outputs, settle -> commit.
 *
 * cmd/detect.c parses the flags; this file builds the parts and joins
 * them: each consumed event goes to the engine under its partition's tag
 * (detect_stage; SRC_KAFKA_TAG of the lane) and, with Elasticsearch, as it
 * came to the outputs that take its stream (Elasticsearch only: Xid/SXid
 * events, metric events with --index-metrics); the engine's records go to
 * every output (detect_emit). The loop owns the hold queue, backpressure
 * (the source pauses its partitions after 1 s and keeps serving the
 * group), the commits of the settled prefix (once a second) and shutdown.
 */
#ifndef GPULOG_DETECT_LOOP_H
#define GPULOG_DETECT_LOOP_H

#include "stage.h"
#include "../sinks/sink.h"
#include "../ingest/kafka_src.h"

struct engine;
struct profile;
struct pipeline;
struct source;

struct dctx {
    struct pipeline *pl;
    struct source *src;                      /* the consumer source (owned by pl) */
    struct engine *eng;
    struct profile *prof;
    const char *detectors, *profile_name;   /* what SIGHUP reloads */
    struct ksrc_source_opts kafka;           /* what the source is opened with (source_env.kafka) */
    int once, es, ready;
    uint64_t fields_dropped;                 /* event_json_dropped() last seen */
    uint64_t records;
};

/* What detect is made of (borrowed). */
struct detect_parts {
    const char *topics;
    struct ksrc_opts kafka;                  /* the consumer (brokers, group, -X, --once, state topic) */
    const char *output, *anomalies_topic;
    const struct es_conf *es;                /* es->url NULL: no Elasticsearch */
    int64_t shutdown_ms;
    int *usage;                              /* set when the consumer's settings are refused */
};
/* Builds the pipeline, its outputs (an anomalies topic, a file or stdout:
 * NDJSON, stdout when nothing else is asked for; Elasticsearch: the
 * records and the consumed events), the engine (d->prof loaded) and the
 * consumer source. GL_OK or GL_ERROR with err. */
int detect_build(struct dctx *d, const struct detect_parts *o, char *err, size_t errlen);
/* Consumes until a signal, a fatal error or (--once) the end; flushes the
 * engine (--once), settles the outputs within the shutdown deadline,
 * commits and leaves the group, then says what it did. EXIT_OK or
 * EXIT_IOERR. */
int detect_run(struct dctx *d);
/* Frees what d owns (pipeline with its source and outputs, engine, profile). */
void detect_free(struct dctx *d);

#endif
