/*
 * feed.h - the read loop shared by parse, run and collect: lines from an fd
 * into a parser, with rejected lines reported as "NAME:LINE: reason".
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
};

struct feed_stats {
    uint64_t lines, events, rejected, declined, toolong;
};

/* Reads fd to its end (fd is borrowed). Returns GL_OK, or GL_ERROR on an I/O
 * error (errno text printed). Counts into st. */
int feed_fd(struct parser *p, int fd, const struct feed_opts *o, struct feed_stats *st);

/* A short fixed category for a parser's rejection reason (p->err), for the
 * reason label of gpulog_lines_rejected_total: field_count, not_a_number,
 * bad_time, no_header, bad_unit, tool_error or other. Static strings. */
const char *feed_reject_reason(const char *err);

/* Reports one rejected line on stderr as "name:line: reason". */
void feed_report(const char *name, uint64_t lineno, const char *reason);

#endif
