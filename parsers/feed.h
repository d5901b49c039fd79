/*
 * feed.h - lines from an fd into a parser, with rejected lines reported as
 * "NAME:LINE: reason" (feed_fd, for the parser tests). The commands read
 * through the pipeline (ingest/pipeline.h); GPULOG_READ_TIME is read here
 * for all of them.
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

/* GPULOG_READ_TIME (ISO 8601) as epoch ms, 0 when unset: pins the read time
 * of inputs without timestamps (golden tests, replays). */
int64_t feed_read_time(void);

#endif
