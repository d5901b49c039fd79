/*
 * detect_loop.h - the stream of `gpulog detect` on the one loop
 * (ingest/pipeline.h): the Kafka consumer source (kind "kafka",
 * ingest/src_kafka.c: its partitions are the loop's lanes) -> the engine as
 * the stage -> the outputs, settle -> commit.
 *
 * cmd/detect.c parses the flags; this file builds the parts and joins
 * them (cmd/fleet.c runs its correlator on the same loop, as a struct
 * dstage): each consumed event goes to the engine under its partition's tag
 * (detect_stage; SRC_KAFKA_TAG of the lane) and, with Elasticsearch, as it
 * came to the outputs that take its stream (Elasticsearch only: Xid/SXid
 * events, metric events with --index-metrics); the engine's records go to
 * every output (detect_emit_record). The loop owns the hold queue, backpressure
 * (the source pauses its partitions after 1 s and keeps serving the
 * group), the commits of the settled prefix (once a second) and shutdown.
 */
#ifndef GPULOG_DETECT_LOOP_H
#define GPULOG_DETECT_LOOP_H

#include "stage.h"
#include "../sinks/sink.h"
#include "../ingest/kafka_src.h"

#include <getopt.h>
#include <stdio.h>

struct engine;
struct profile;
struct pipeline;
struct source;
struct dctx;
struct gpulog_config;

/* What runs on the consumed events: detect's engine (detect_engine_new)
 * or fleet's correlator (cmd/fleet.c). Each hook gets the dctx, whose
 * stage field is the stage's own state. */
struct dstage {
    const char *name;                        /* the command, in messages */
    /* a consumed event of the partition with this tag */
    void (*feed)(struct dctx *d, const struct event *ev, int tag);
    /* the partition with this tag was revoked: its state goes */
    void (*drop)(struct dctx *d, int tag);
    /* the end of --once (not after a signal) */
    void (*flush)(struct dctx *d);
    /* SIGHUP; NULL: ignored */
    void (*reload)(struct dctx *d);
    /* once a second (final 0), and once at the end for the gauges (final 1) */
    void (*tick)(struct dctx *d, int final);
    /* with --state-topic: the state of the partition with this tag to out,
     * and back (GL_OK, or GL_ERROR with the reason in err) */
    int (*save)(struct dctx *d, int tag, int64_t offset, struct buf *out, char *err, size_t errlen);
    int (*restore)(struct dctx *d, int tag, const void *snap, size_t len, int64_t *offset, char *err, size_t errlen);
    /* what the stage did, after "consumed N messages (N undecodable)" on the summary line */
    void (*summary)(const struct dctx *d, FILE *f);
};

struct dctx {
    const struct dstage *ops;                /* what runs on the events */
    void *stage;                             /* its state (fleet's correlator); detect's is eng below */
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

/* A record of the stage to every output, held by the message being
 * processed (outside one: not tied to an offset). */
void detect_emit_record(struct dctx *d, const struct event *rec);

/* The flags every consumer command has (detect, fleet), as rows of its
 * struct cli_flag table: --config, --output, --once, --snapshot-interval. */
enum { CONSUMER_O_CONFIG = 0x100, CONSUMER_O_ONCE, CONSUMER_O_SNAP_S, CONSUMER_O_OWN };
#define CONSUMER_FLAGS \
    { "config", CONSUMER_O_CONFIG, required_argument, 1, "    --config FILE", \
      "gpulog configuration (YAML, docs/configuration.md;\ndefault $GPULOG_CONFIG); flags override it" }, \
    { "output", 'o', required_argument, 1, "-o, --output FILE", "NDJSON records to FILE ('-' = stdout, the default)" }, \
    { "once", CONSUMER_O_ONCE, no_argument, 1, "    --once", \
      "consume up to the end offsets found at start, settle,\ncommit and exit 0 (backfills, tests)" }, \
    { "snapshot-interval", CONSUMER_O_SNAP_S, required_argument, 1, "    --snapshot-interval S", \
      "with --state-topic: a partition's snapshot is written\nevery S seconds (default 60) once all it consumed is\n" \
      "committed, and at a revoke; restored when the partition\nis assigned, so it goes on warm (docs/operations.md)" }

/* What those flags set. */
struct consumer_opts {
    const char *output;
    int once;
    int snapshot_ms;
    const char **props;                      /* kafka.properties (the strings are the configuration's), owned */
};
/* One of those flags (and the check of -X key=value) into o; else
 * STAGE_OPT_PASS. EXIT_OK or EXIT_USAGE (said as gpulog cmd). */
int consumer_opt(const char *cmd, struct consumer_opts *o, int c, const char *arg);
/* The consumer's settings from cfg into k: brokers (or $KAFKA_BROKERS;
 * required), group (required), -X properties (o->props, freed by the
 * caller), state topic, --once, --snapshot-interval. EXIT_OK or EXIT_USAGE
 * (said). */
int consumer_settings(const char *cmd, const struct gpulog_config *cfg, const char *group, struct consumer_opts *o,
                      struct ksrc_opts *k);

/* What detect is made of (borrowed). */
struct detect_parts {
    const char *topics;
    struct ksrc_opts kafka;                  /* the consumer (brokers, group, -X, --once, state topic) */
    const char *output, *anomalies_topic;   /* anomalies_topic: the records' topic (fleet: its own) */
    const struct es_conf *es;                /* es->url NULL: no Elasticsearch */
    int64_t shutdown_ms;
    int *usage;                              /* set when the consumer's settings are refused */
};
/* Builds the pipeline, its outputs (an anomalies topic, a file or stdout:
 * NDJSON, stdout when nothing else is asked for; Elasticsearch: the
 * records and the consumed events) and the consumer source, for the stage
 * d->ops (its state made already: d->eng or d->stage). GL_OK, or GL_ERROR
 * with err (*o->usage set when an output's settings were refused). */
int detect_build(struct dctx *d, const struct detect_parts *o, char *err, size_t errlen);
/* detect's stage: the engine on d->prof (loaded), d->ops set. */
void detect_engine_new(struct dctx *d);
/* Consumes until a signal, a fatal error or (--once) the end; flushes the
 * engine (--once), settles the outputs within the shutdown deadline,
 * commits and leaves the group, then says what it did. EXIT_OK or
 * EXIT_IOERR. */
int detect_run(struct dctx *d);
/* Frees what d owns (pipeline with its source and outputs, engine,
 * profile; not d->stage, the caller's). */
void detect_free(struct dctx *d);

#endif
