/*
 * pipeline.h - the one loop of every command: sources -> parser -> [stage,
 * e.g. the detector engine] -> sinks.
 *
 * The loop owns: each source's parser and header block, the per-lane
 * trackers (settle -> checkpoint: a lane's position is saved only over
 * records whose every document was settled), the hold queue in front of
 * the sinks (a sink that says GL_AGAIN blocks reading, order is kept),
 * backpressure (pending records per source, the spool budget), signals
 * (SIGTERM/SIGINT stop, SIGHUP calls reload), the once-a-second
 * housekeeping, and shutdown (stop the sources, flush the parsers, deliver
 * within the deadline, save every position).
 *
 * Use: pipeline_new; create the sinks with pipeline_settle and the pipeline
 * as ctx and pipeline_add_sink them; pipeline_open (or open a source
 * yourself with pipeline_env and pipeline_add) each source; pipeline_run;
 * pipeline_finish; pipeline_free. A stage (opts.stage) receives every
 * event instead of the sinks and writes what it wants with pipeline_emit.
 *
 * Ownership: the pipeline owns the sinks and sources added to it and frees
 * them in pipeline_free (sinks first); opts strings are borrowed.
 */
#ifndef GPULOG_PIPELINE_H
#define GPULOG_PIPELINE_H

#include "source.h"
#include "../core/event.h"
#include "../sinks/sink.h"

struct pipeline_opts {
    const char *host;               /* host.name of events without one (required) */
    const char *state_dir;          /* checkpoints and spools; NULL = none (parse, run) */
    int once;                       /* stop when every source ended and everything settled */
    int keep_original;              /* event.original on metric events */
    size_t max_line;                /* 0 = LR_DEFAULT_MAX_LINE */
    int64_t fixed_now;              /* GPULOG_READ_TIME: read time of inputs without times; 0 = clock */
    int64_t spool_max;              /* spooled bytes above which input is not pumped; 0 = no limit */
    int64_t shutdown_ms;            /* delivery deadline after a signal (and at the end without --once) */
    int64_t once_ms;                /* --once without a signal: delivery deadline at the end; 0 = none */
    int64_t stats_ms;               /* a stats log line this often; 0 = never */
    int64_t stale_ms;               /* exec: staleness override */
    struct tail_opts tail;          /* file: rotation chain bounds */
    /* rejected records: "NAME:LINE: why" (by_lineno, parse) or "NAME@OFFSET: why"
     * (collect) on stderr, at most max_reports (0 = all; quiet = none) */
    int by_lineno, quiet;
    uint64_t max_reports;
    int metrics;                    /* count records into gpulog_lines_read/rejected_total */
    /* the stage: every event goes here instead of the sinks (NULL: to the sinks) */
    void (*stage)(void *ctx, const struct event *ev);
    /* SIGHUP (NULL: ignored), and once a second (NULL: nothing) */
    void (*reload)(void *ctx);
    void (*tick)(void *ctx);
    /* at the end, after the parsers' flush and before the last delivery:
     * the stage writes what it still holds (the engine's open episodes) */
    void (*flush)(void *ctx);
    /* a lane of s was taken away (source_env.revoked): forget its state */
    void (*revoked)(void *ctx, struct source *s, uint32_t lane);
    const struct ksrc_source_opts *kafka;   /* source_env.kafka: the Kafka consumer's settings */
    void *ctx;
};

/* Counters of one pipeline (sums over its sources). */
struct pipeline_stats {
    uint64_t lines, events, rejected, declined;
    uint64_t written, acked, deadletter, health_sent;
    uint64_t losses;                /* file data never read (source-data-lost) */
    uint64_t ckpt_failures;
    int fatal;                      /* a sink failed for good */
    int source_failed;              /* --once: a source failed (a command, a non-regular file) */
    long peak_rss_kb;
};

struct pipeline;

struct pipeline *pipeline_new(const struct pipeline_opts *o);
/* Frees the sinks, then the sources, then the pipeline. */
void pipeline_free(struct pipeline *pl);
/* The settle callback sinks of this pipeline are created with (ctx = pl). */
void pipeline_settle(void *pl, void *token, enum sink_outcome o);
/* Adds s for every stream (taken over). */
void pipeline_add_sink(struct pipeline *pl, struct sink *s);
/* Adds s for the streams in the mask only (SINK_STREAM bits, sets
 * s->streams): e.g. detect's file and anomalies-topic outputs take
 * STREAM_ANOMALIES and Elasticsearch also the consumed events
 * (STREAM_EVENTS, and STREAM_METRICS with --index-metrics), so a stage that
 * pipeline_emits a consumed event sends it to Elasticsearch only. */
void pipeline_add_sink_for(struct pipeline *pl, struct sink *s, unsigned streams);
/* What sources of this pipeline are opened with. */
const struct source_env *pipeline_env(struct pipeline *pl);
/* Adds an open source with a parser for format (or the kind's own),
 * primed with the source's saved header block. */
void pipeline_add(struct pipeline *pl, struct source *s, const char *format);
/* Opens a source of kind with arg and adds it. NULL with the reason in err. */
struct source *pipeline_open(struct pipeline *pl, const char *kind, const char *arg, const char *format,
                             char *err, size_t errlen);
size_t pipeline_nsources(const struct pipeline *pl);
struct source *pipeline_source(const struct pipeline *pl, size_t i);

/* The signal handler of the loop's commands: SIGTERM, SIGINT and SIGQUIT
 * stop, SIGHUP calls opts.reload at the next turn (install it with sigaction). */
void pipeline_on_signal(int sig);
/* 1 once SIGTERM or SIGINT came (or pipeline_stop was called). */
int pipeline_stopping(void);
void pipeline_stop(void);

/* The loop: until every source ended (--once, or input that ends), a
 * signal, or a fatal sink error. */
void pipeline_run(struct pipeline *pl);
/* Shutdown: stops the sources, flushes the parsers, delivers (no limit
 * with --once unless a signal came, else within shutdown_ms), saves every
 * position. Returns the number of documents left unsettled. */
long pipeline_finish(struct pipeline *pl);

/* From the stage: writes ev to every sink that takes stream, held by the
 * record being processed (its position waits for the settle). */
void pipeline_emit(struct pipeline *pl, const struct event *ev, enum sink_stream stream);
/* From the stage, for a record that is an event already (a source of
 * SRC_FORMAT_EVENTS): writes the record as it came (its bytes, the id of
 * ev) to the sinks that take stream, held by it; e.g. detect's consumed
 * events to Elasticsearch. Outside such a record nothing is written. */
void pipeline_forward(struct pipeline *pl, const struct event *ev, enum sink_stream stream);
/* From the stage: the lane of the record being processed (a Kafka
 * partition's slot), -1 outside one. */
int64_t pipeline_lane(const struct pipeline *pl);
/* A health event (event.dataset gpulog.collector) about s to the events
 * stream, not tied to a record; also logged. */
void pipeline_health(struct pipeline *pl, struct source *s, const char *action, const char *file, int64_t off,
                     const char *msg);
const struct pipeline_stats *pipeline_stats(struct pipeline *pl);
/* Writes what the hold queue keeps and polls the sinks until everything
 * written is settled or timeout_ms passed; returns what is unsettled. */
long pipeline_drain(struct pipeline *pl, int timeout_ms);
/* Logs a stats line (inflight: documents unsettled). */
void pipeline_log_stats(struct pipeline *pl, long inflight);

#endif
