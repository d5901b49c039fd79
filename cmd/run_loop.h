/*
 * run_loop.h - the stream of `gpulog run` (and `gpulog report`): lines of
 * one input -> parser -> engine -> outputs, the live view and the report.
 *
 * cmd/run.c parses the flags and opens the input; this file joins the
 * parts: the parser's events feed the engine (run_emit_event: the profile
 * chosen at the first metric event with --profile auto, the live view, the
 * report), the engine's records go to every output (run_emit_record: a
 * blocking write, the outputs settle on their own, nothing is committed:
 * the input is read once), the read loop (run_read: the one pipeline
 * loop of ingest/pipeline.h with an fd source) and the end
 * (run_finish, run_summary).
 */
#ifndef GPULOG_RUN_LOOP_H
#define GPULOG_RUN_LOOP_H

#include "stage.h"
#include "../sinks/sink.h"
#include "../parsers/feed.h"

#include <signal.h>
#include <sys/types.h>

struct engine;
struct profile;
struct live;
struct report;
struct parser;
struct run_mode;
struct parser_ops;

/* The input being read: a file, stdin or a command's standard output. */
struct run_input {
    const char *exec_cmd, *file;        /* the command, else FILE ("-" = stdin); borrowed */
    int fd, is_stdin;
    pid_t child;                        /* the command, -1 none */
    char **cargv;
};

struct run_ctx {
    struct engine *eng;
    struct outputs out;
    unsigned streams;                       /* what some output takes (SINK_STREAM bits) */
    struct live *live;
    struct report *report;
    struct buf json, key;
    uint64_t written, settled, failed_writes;
    uint64_t deadlettered;                  /* records an output refused for good (exit 1, as collect) */
    struct profile *prof;
    const char *detectors, *profile_name;   /* what SIGHUP reloads */
    int auto_pending;                       /* profile auto: chosen at the first metric event */
    int tracking_checked;                   /* said whether the profile tracks any series */
};

/* Chooses the profile (detectors: a file, else the built-in profile;
 * "auto" is decided by a format that says it, else at the first metric
 * event) and loads it into r->prof. GL_OK or GL_ERROR with err. */
int run_profile(struct run_ctx *r, const struct parser_ops *ops, const char *detectors, const char *profile,
                char *err, size_t errlen);
/* Builds the outputs of `run`: an NDJSON file (output), NDJSON on stdout
 * (both: anomaly records), Elasticsearch (es->url: the records, and with
 * es->index_metrics the metric events). GL_OK or GL_ERROR with a reason in err. */
int run_outputs(struct run_ctx *r, const char *output, int ndjson_stdout, const struct es_conf *es,
                char *err, size_t errlen);
/* The outputs' settle callback (ctx = the run_ctx). */
void run_settle(void *ctx, void *token, enum sink_outcome outcome);
/* The engine's emit callback: a record to every output, the live view and
 * the report (ctx = the run_ctx). */
void run_emit_record(void *ctx, const struct event *rec);
/* The parser's emit callback: an event to the engine (ctx = the run_ctx). */
void run_emit_event(void *ctx, const struct event *ev);

/* What run reads with (borrowed). */
struct run_read_opts {
    const char *format, *columns, *host;
    int quiet;
};
/* Reads in's input through the one loop (ingest/pipeline.h: an fd source,
 * the parser, r's engine as the stage) until its end, SIGTERM/SIGINT
 * (*stopped) or an output that failed for good; SIGHUP reloads the
 * detectors. Counts into st. Returns GL_OK or GL_ERROR (a read error, a
 * failed output). */
int run_read(struct run_ctx *r, const struct run_input *in, const struct run_read_opts *o, struct feed_stats *st,
             int *stopped);
/* After the input: ends the engine's open state, writes what is left to the
 * outputs within shutdown_ms and says what failed (cmd: the command's name).
 * Returns GL_OK or GL_ERROR. */
int run_finish(struct run_ctx *r, const char *cmd, int64_t shutdown_ms);
/* Opens in's input: starts the command, or opens FILE (stdin: fd 0).
 * Syslog times of a regular file take its modification year (year: the
 * configured one, 0 = none), as in parse. EXIT_OK or the exit code (said). */
int run_open(const struct run_mode *m, struct run_input *in, int year);
/* Stops the command (if one runs) and closes the input. */
void run_close(struct run_input *in);
/* The whole stream: reads the input (run_read), ends the run (run_finish),
 * writes the report to report_path (when r has one) and says the summary.
 * EXIT_OK or EXIT_IOERR. */
int run_stream(const struct run_mode *m, struct run_ctx *r, const struct run_input *in, const struct run_read_opts *o,
               const char *report_path, int64_t shutdown_ms);
/* The summary line of cmd on stderr (name: the input), and the failed writes. */
int run_summary(struct run_ctx *r, const char *cmd, const char *name, const struct feed_stats *st, int stopped);
/* Frees what r owns (outputs, engine, live view, report, profile). */
void run_ctx_free(struct run_ctx *r);

#endif
