/*
 * parse_harness.h - shared by the parser unit tests (one binary each): feed
 * text or a file line by line to a parser, keep every emitted event as its
 * JSON, and read fields back. Header-only; everything is static inline.
 */
#ifndef GPULOG_TEST_PARSE_HARNESS_H
#define GPULOG_TEST_PARSE_HARNESS_H

#include "../parsers/parser.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXEV 256
#define NOINT (-424242LL)

/* ---- collecting events as their JSON, then reading them back ---- */

struct coll { int n; char *json[MAXEV]; };

static inline void coll_emit(void *ctx, const struct event *ev)
{
    struct coll *c = ctx;
    struct buf b;
    buf_init(&b);
    event_to_json(ev, &b);
    if (c->n < MAXEV) c->json[c->n++] = b.p;
    else buf_free(&b);
}

static inline void coll_free(struct coll *c)
{
    for (int i = 0; i < c->n; i++) free(c->json[i]);
    c->n = 0;
}

static int64_t read_time;   /* now_ms given to every line */

/* Feeds text line by line to a new parser of ops; returns its stats. */
static inline struct parser_stats run_text(const struct parser_ops *ops, const char *text, size_t len,
                                    struct coll *c)
{
    struct parser *p = parser_new(ops, coll_emit, c);
    struct line_src src = { .host = "n1", .path = "t.log", .source = "t.log", .now_ms = read_time };
    size_t i = 0;
    while (i < len) {
        const char *e = memchr(text + i, '\n', len - i);
        size_t l = e ? (size_t)(e - (text + i)) : len - i;
        src.offset = (int64_t)i;
        src.lineno++;
        parser_feed(p, &src, text + i, l);
        i += l + 1;
    }
    parser_flush(p);
    struct parser_stats st = p->stats;
    parser_free(p);
    return st;
}

static inline struct parser_stats run_str(const struct parser_ops *ops, const char *text, struct coll *c)
{
    return run_text(ops, text, strlen(text), c);
}

static inline struct parser_stats run_file(const struct parser_ops *ops, const char *path, struct coll *c)
{
    struct parser_stats st = { 0, 0, 0, 0 };
    FILE *f = fopen(path, "rb");
    if (!f) { printf("  cannot open %s\n", path); st.rejected = 999; return st; }
    char *data = malloc(1 << 20);
    size_t n = fread(data, 1, (1 << 20) - 1, f);
    fclose(f);
    st = run_text(ops, data, n, c);
    free(data);
    return st;
}

static struct event g_ev;

static inline const struct event *at(struct coll *c, int i)
{
    static int init;
    if (!init) { event_init(&g_ev); init = 1; }
    event_reset(&g_ev);
    char err[128];
    if (i < c->n && event_from_json(&g_ev, c->json[i], strlen(c->json[i]), err, sizeof err) != GL_OK)
        printf("  event %d: bad JSON: %s\n", i, err);
    return &g_ev;
}

static inline const char *S(const struct event *e, const char *key)
{
    static char out[8][2048];
    static int k;
    size_t n;
    const char *s = event_get_str(e, key, &n);
    if (!s) return NULL;
    char *o = out[k++ & 7];
    snprintf(o, sizeof out[0], "%.*s", (int)n, s);
    return o;
}

static inline long long I(const struct event *e, const char *key)
{
    const struct ev_field *f = event_get(e, key);
    return f && f->type == EV_INT ? f->v.i : NOINT;
}

static inline int HAS(const struct event *e, const char *key) { return event_get(e, key) != NULL; }

static inline const char *TS(const struct event *e)
{
    static char b[25];
    gl_fmt_ts(e->ts_ms, b);
    return b;
}

static inline int64_t iso(const char *s)
{
    int64_t t = 0;
    gl_parse_iso_ts(s, strlen(s), &t);
    return t;
}

#endif
