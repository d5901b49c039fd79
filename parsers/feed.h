/*
 * feed.h - lines from an fd into a parser, with rejected lines reported as
 * "NAME:LINE: reason": the steps `run`'s read loop uses, and feed_fd for the
 * parser tests. `parse` and `collect` read through the pipeline
 * (ingest/pipeline.h); GPULOG_READ_TIME is read here for all of them.
 */
#ifndef GPULOG_FEED_H
#define GPULOG_FEED_H

#include "parser.h"
#include "../core/lineread.h"

struct feed_opts {
    const char *name;        /* shown in error messages: path or "<stdin>" */
    const char *path;        /* log.file.path, NULL for stdin */
    const char *source;      /* identity for event.id ("-" for stdin) */
    const char *host;
    int keep_original;
    size_t max_line;         /* 0 = LR_DEFAULT_MAX_LINE */
    int quiet;               /* do not print rejected lines */
    uint64_t max_reports;    /* print at most this many rejections (0 = all) */
    int metrics;             /* also count into gpulog_lines_read/rejected_total */
};

struct feed_stats {
    uint64_t lines, events, rejected, declined, toolong;
};

/* Reads fd to its end (fd is borrowed). Returns GL_OK, or GL_ERROR on an I/O
 * error (errno text printed). Counts into st. */
int feed_fd(struct parser *p, int fd, const struct feed_opts *o, struct feed_stats *st);

/* The steps of feed_fd, for a caller with its own read loop (run polls for
 * signals and its outputs between reads). */
struct feed_cursor {
    struct line_src src;     /* where the events say they come from */
    int64_t fixed_now;       /* GPULOG_READ_TIME, 0 = the clock */
    uint64_t reported;       /* rejections printed so far */
};
/* Starts reading the input o describes (o is borrowed while the cursor is used). */
void feed_cursor_init(struct feed_cursor *c, const struct feed_opts *o);
/* One line lineread returned (s is LR_LINE or LR_TOOLONG; line is borrowed):
 * counts it into st, reports a rejection, feeds the parser. */
void feed_line(struct parser *p, struct feed_cursor *c, const struct feed_opts *o, const struct lineread *lr,
               enum lr_status s, const char *line, size_t len, int64_t off, struct feed_stats *st);
/* End of input: flushes the parser, counting what it emits into st. */
void feed_end(struct parser *p, struct feed_stats *st);


/* GPULOG_READ_TIME (ISO 8601) as epoch ms, 0 when unset: pins the read time
 * of inputs without timestamps (golden tests, replays). */
int64_t feed_read_time(void);

/* Reports one rejected line on stderr as "name:line: reason". */
void feed_report(const char *name, uint64_t lineno, const char *reason);

#endif
