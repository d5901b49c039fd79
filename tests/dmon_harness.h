/*
 * dmon_harness.h - shared by the dmon parser tests (test_dmon.c,
 * test_dmon_csv.c): feeds lines or whole streams (feed_fd over a memfd or
 * a pipe) to a dmon parser and keeps every event decoded with jansson, so
 * each is checked to be valid JSON; fields are read back by key.
 * Header-only; everything is static inline.
 */
#ifndef GPULOG_TEST_DMON_HARNESS_H
#define GPULOG_TEST_DMON_HARNESS_H

#include "../parsers/parser.h"
#include "../parsers/feed.h"
#include "test.h"

#include <jansson.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------ harness */

#define MAXEV 64

struct got {
    int n;                 /* events emitted */
    json_t *ev[MAXEV];     /* each decoded (NULL if the JSON was invalid) */
    int bad_json;          /* events whose JSON did not decode */
};

static inline void collect(void *ctx, const struct event *ev)
{
    struct got *g = ctx;
    struct buf b;
    buf_init(&b);
    event_to_json(ev, &b);
    json_error_t je;
    json_t *j = json_loadb(b.p, b.len, JSON_REJECT_DUPLICATES, &je);
    if (!j || !json_is_object(j)) {
        g->bad_json++;
        printf("  invalid JSON emitted: %s: %.200s\n", je.text, b.p);
    }
    if (g->n < MAXEV) g->ev[g->n] = j; else json_decref(j);
    g->n++;
    buf_free(&b);
}

static inline void got_clear(struct got *g)
{
    for (int i = 0; i < g->n && i < MAXEV; i++) json_decref(g->ev[i]);
    memset(g, 0, sizeof *g);
}

struct run {
    struct parser *p;
    struct got g;
    int ok, declined, rejected;
    char last_err[GL_ERRLEN];
    int64_t now_ms;
    int64_t offset;
    uint64_t lineno;
};

static inline void run_init(struct run *r, const struct parser_ops *ops, const char *columns)
{
    memset(r, 0, sizeof *r);
    r->p = parser_new(ops, collect, &r->g);
    r->p->opt_columns = columns;
    r->now_ms = 1750000000000LL;     /* 2025-06-15T15:06:40Z */
}

static inline void run_free(struct run *r)
{
    parser_free(r->p);
    got_clear(&r->g);
}

/* Feeds one line of n bytes. */
static inline int feed_n(struct run *r, const char *line, size_t n)
{
    struct line_src src = {
        .host = "test-host", .path = "/t/dmon.log", .source = "/t/dmon.log",
        .offset = r->offset, .lineno = ++r->lineno, .now_ms = r->now_ms,
    };
    r->offset += (int64_t)n + 1;
    int rc = parser_feed(r->p, &src, line, n);
    if (rc == GL_OK) r->ok++;
    else if (rc == GL_DECLINED) r->declined++;
    else if (rc == GL_ERROR) { r->rejected++; snprintf(r->last_err, sizeof r->last_err, "%s", r->p->err); }
    return rc;
}

/* Feeds each '\n'-separated line of text (no terminator passed on). */
static inline void feed_text(struct run *r, const char *text)
{
    const char *s = text;
    while (*s) {
        const char *nl = strchr(s, '\n');
        size_t n = nl ? (size_t)(nl - s) : strlen(s);
        feed_n(r, s, n);
        s += n + (nl ? 1 : 0);
    }
    parser_flush(r->p);
}

static inline json_t *fld(const struct run *r, int i, const char *key)
{
    if (i >= r->g.n || i >= MAXEV || !r->g.ev[i]) return NULL;
    return json_object_get(r->g.ev[i], key);
}

/* 1 if event i has key as an integer equal to v. */
static inline int has_int(const struct run *r, int i, const char *key, long long v)
{
    json_t *j = fld(r, i, key);
    if (!j || !json_is_integer(j) || json_integer_value(j) != v) {
        char *d = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
        printf("  event %d: %s is %s, expected %lld\n", i, key, d ? d : "absent", v);
        free(d);
        return 0;
    }
    return 1;
}

static inline int has_str(const struct run *r, int i, const char *key, const char *v)
{
    json_t *j = fld(r, i, key);
    if (!j || !json_is_string(j) || strcmp(json_string_value(j), v)) {
        printf("  event %d: %s is %s, expected \"%s\"\n", i, key,
               j && json_is_string(j) ? json_string_value(j) : "absent/not a string", v);
        return 0;
    }
    return 1;
}

static inline int absent(const struct run *r, int i, const char *key)
{
    if (fld(r, i, key)) { printf("  event %d: %s present, expected absent\n", i, key); return 0; }
    return 1;
}

static inline int err_has(const struct run *r, const char *needle)
{
    if (!strstr(r->last_err, needle)) {
        printf("  reason \"%s\" lacks \"%s\"\n", r->last_err, needle);
        return 0;
    }
    return 1;
}

/* A memfd holding data, positioned at 0. */
static inline int mem_fd(const char *data, size_t n)
{
    int fd = memfd_create("dmon-test", 0);
    if (fd < 0 || write(fd, data, n) != (ssize_t)n) { perror("memfd"); exit(2); }
    lseek(fd, 0, SEEK_SET);
    return fd;
}

/* Runs feed_fd over data via a pipe fed by a child process. */
static inline int feed_pipe(struct run *r, const char *data, size_t n, size_t max_line, struct feed_stats *st)
{
    int p[2];
    if (pipe(p) < 0) { perror("pipe"); exit(2); }
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        if (write(p[1], data, n) != (ssize_t)n) _exit(1);
        _exit(0);
    }
    close(p[1]);
    struct feed_opts o = { .name = "<pipe>", .path = NULL, .source = "-", .host = "h",
                           .max_line = max_line, .quiet = 1 };
    memset(st, 0, sizeof *st);
    int rc = feed_fd(r->p, p[0], &o, st);
    close(p[0]);
    waitpid(pid, NULL, 0);
    return rc;
}

#define NEW_HDR "# gpu    pwr  gtemp  mtemp     sm    mem    enc    dec    jpg    ofa   mclk   pclk \n" \
                "# Idx      W      C      C      %      %      %      %      %      %    MHz    MHz \n"

#endif
