/*
 * csv_harness.h - shared by the CSV parser tests (test_csv.c,
 * test_query_csv.c): feeds text line by line to a parser, keeps every event
 * decoded with jansson (so each is checked to be valid JSON), counts the
 * lines taken, declined and rejected with the last error, and reads fields
 * back by key. Header-only; everything is static inline.
 */
#ifndef GPULOG_TEST_CSV_HARNESS_H
#define GPULOG_TEST_CSV_HARNESS_H

#include "../parsers/parser.h"
#include "test.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_EV 256

/* Collected output: each emitted event as decoded JSON, plus the last error. */
struct got {
    int n;
    json_t *ev[MAX_EV];
    int ok, declined, rejected;
    char err[GL_ERRLEN];
};

/* Frees the events g holds and zeroes it. */
static inline void got_clear(struct got *g)
{
    for (int i = 0; i < g->n; i++) json_decref(g->ev[i]);
    memset(g, 0, sizeof *g);
}

/* Parser callback: the event is encoded, decoded and kept in ctx (a struct got). */
static inline void emit_cb(void *ctx, const struct event *ev)
{
    struct got *g = ctx;
    struct buf b;
    buf_init(&b);
    event_to_json(ev, &b);
    json_error_t je;
    json_t *j = json_loadb(b.p, b.len, 0, &je);
    if (!j) printf("  emitted invalid JSON: %s\n", b.p);
    if (g->n < MAX_EV && j) g->ev[g->n++] = j;
    else json_decref(j);
    buf_free(&b);
}

/* Feeds text line by line ('\n' separated, the '\n' not passed on). */
static inline void feed_text(struct parser *p, struct got *g, const char *text)
{
    struct line_src src = { .host = "h1", .path = "t.csv", .source = "t.csv", .now_ms = 1700000000000LL };
    const char *s = text;
    while (*s) {
        const char *e = strchr(s, '\n');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        src.lineno++;
        int rc = parser_feed(p, &src, s, n);
        if (rc == GL_OK) g->ok++;
        else if (rc == GL_DECLINED) g->declined++;
        else { g->rejected++; snprintf(g->err, sizeof g->err, "%s", p->err); }
        src.offset += (int64_t)n + 1;
        s = e ? e + 1 : s + n;
    }
}

/* Field key of event i (borrowed), NULL if absent. */
static inline json_t *field(struct got *g, int i, const char *key)
{
    return i < g->n ? json_object_get(g->ev[i], key) : NULL;
}

/* Number of field key in event i, NAN if absent or not a number. */
static inline double num(struct got *g, int i, const char *key)
{
    json_t *v = field(g, i, key);
    return v && json_is_number(v) ? json_number_value(v) : NAN;
}

static inline int is_int(struct got *g, int i, const char *key)
{
    json_t *v = field(g, i, key);
    return v && json_is_integer(v);
}

/* String of field key in event i (borrowed), NULL if absent or not a string. */
static inline const char *str(struct got *g, int i, const char *key)
{
    json_t *v = field(g, i, key);
    return v && json_is_string(v) ? json_string_value(v) : NULL;
}

static inline int has(struct got *g, int i, const char *key) { return field(g, i, key) != NULL; }

/* The whole file at path, NUL-terminated (caller frees); NULL, said, if unreadable. */
static inline char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) { printf("  cannot read %s\n", path); return NULL; }
    struct buf b;
    buf_init(&b);
    char tmp[4096];
    size_t r;
    while ((r = fread(tmp, 1, sizeof tmp, f)) > 0) buf_append(&b, tmp, r);
    fclose(f);
    if (!b.p) buf_puts(&b, "");
    return b.p;
}

/* Feeds text to a new parser of ops, flushes it and keeps its output in g
 * (emptied first). */
static inline void run_text(const struct parser_ops *ops, const char *text, struct got *g)
{
    got_clear(g);
    struct parser *p = parser_new(ops, emit_cb, g);
    feed_text(p, g, text);
    parser_flush(p);
    parser_free(p);
}

#endif
