/*
 * cap_harness.h - shared by the detector tests (test_detectors.c, test_gpu_faults.c,
 * test_episode_end.c): an engine whose records (episodes; incidents are
 * skipped) are captured as NDJSON and, for the first CAP_RECORDS, field by
 * field. A record beyond those fails the running test (once, saying so):
 * a check such as "no start on GPU 3" must not pass because the record was
 * never looked at. A reader that only wants the first few records and
 * checks that it got them (lk_run_prof) sets prefix_ok. Header-only;
 * everything is static inline.
 */
#ifndef GPULOG_TEST_CAP_HARNESS_H
#define GPULOG_TEST_CAP_HARNESS_H

#include "test.h"
#include "../detect/engine.h"
#include "engine_harness.h"

#include <stdio.h>
#include <string.h>

#define CAP_RECORDS 64

struct cap {
    struct buf out;
    int n[3];                          /* start, change, end */
    int64_t ts[CAP_RECORDS];           /* @timestamp of each record */
    int64_t start_field[CAP_RECORDS];  /* event.start */
    int64_t end_field[CAP_RECORDS];    /* event.end (end records; else 0) */
    int gpu[CAP_RECORDS];
    char type[CAP_RECORDS][8];
    char rule[CAP_RECORDS][32];
    char metric[CAP_RECORDS][64];
    double value[CAP_RECORDS];
    int nrec;
    int overflow;                      /* records not captured field by field */
    int prefix_ok;                     /* 1: overflow is not a failure (the reader checks) */
};

static inline void cap_emit(void *ctx, const struct event *r)
{
    struct cap *c = ctx;
    /* episodes only: the incidents that group them are test_gpu_faults' */
    if (r->dataset && !strcmp(r->dataset, "gpu.incident")) return;
    event_to_json(r, &c->out);
    buf_putc(&c->out, '\n');
    size_t n;
    const char *t = event_get_str(r, "event.type", &n);
    int k = !strncmp(t, "start", n) ? 0 : !strncmp(t, "change", n) ? 1 : 2;
    c->n[k]++;
    if (c->nrec >= CAP_RECORDS) {
        if (!c->overflow++ && !c->prefix_ok) {
            test_cur_failed = 1;
            printf("  cap_harness.h: %s: a record beyond the %d captured field by field: raise CAP_RECORDS\n",
                   test_cur_name, CAP_RECORDS);
        }
    } else {
        int i = c->nrec++;
        c->ts[i] = r->ts_ms;
        snprintf(c->type[i], 8, "%.*s", (int)n, t);
        const char *rid = event_get_str(r, "rule.id", &n);
        snprintf(c->rule[i], 32, "%.*s", (int)n, rid);
        const char *m = event_get_str(r, "anomaly.metric", &n);
        snprintf(c->metric[i], 64, "%.*s", (int)n, m);
        const char *st = event_get_str(r, "event.start", &n);
        gl_parse_iso_ts(st, n, &c->start_field[i]);
        const char *en = event_get_str(r, "event.end", &n);
        c->end_field[i] = 0;
        if (en) gl_parse_iso_ts(en, n, &c->end_field[i]);
        double g = -1;
        event_get_num(r, "gpu.index", &g);
        c->gpu[i] = (int)g;
        event_get_num(r, "anomaly.value", &c->value[i]);
    }
}

/* A capture and an engine on profile p that emits into it. */
static inline struct engine *cap_engine(struct cap *c, struct profile *p)
{
    memset(c, 0, sizeof *c);
    buf_init(&c->out);
    return engine_new(p, cap_emit, c);
}

/* Frees what cap_engine made, and p. */
static inline void cap_done(struct engine *e, struct profile *p, struct cap *c)
{
    engine_free(e);
    profile_free(p);
    buf_free(&c->out);
}

/* Hands emit(ctx, record) n episode-start records of gpu.temp.high, record
 * i on GPU i % gpus at i seconds after T0 (for tests of the record
 * captures themselves); returns test_cur_failed as it was after record
 * n - 2 (0 or 1) in *before_last, and after the last as the result; the
 * running test's failure flag is left as it was before. */
static inline int emit_starts(void (*emit)(void *, const struct event *), void *ctx, int n, int gpus, int *before_last)
{
    int was = test_cur_failed;
    *before_last = was;
    for (int i = 0; i < n; i++) {
        struct event ev;
        event_init(&ev);
        ev.ts_ms = T0 + i * 1000LL;
        event_add_str(&ev, "event.type", "start", 5);
        event_add_str(&ev, "rule.id", "gpu.temp.high", 13);
        event_add_str(&ev, "anomaly.metric", "gpu.temperature.gpu", 19);
        event_add_str(&ev, "event.start", "2025-11-07T00:00:00.000Z", 24);
        event_add_num(&ev, "gpu.index", i % gpus);
        event_add_num(&ev, "anomaly.value", 90);
        emit(ctx, &ev);
        event_free(&ev);
        if (i == n - 2) *before_last = test_cur_failed;
    }
    int got = test_cur_failed;
    test_cur_failed = was;
    return got;
}

/* The first captured record of rule id and type on GPU gpu (-1: any): its
 * index, or -1. */
static inline int find_rec(const struct cap *c, const char *rule, const char *type, int gpu)
{
    for (int i = 0; i < c->nrec; i++)
        if (!strcmp(c->rule[i], rule) && !strcmp(c->type[i], type) && (gpu < 0 || c->gpu[i] == gpu)) return i;
    return -1;
}

/* Records of rule id of the given type among the captured ones. */
static inline int count_rec(const struct cap *c, const char *rule, const char *type)
{
    int n = 0;
    for (int i = 0; i < c->nrec; i++) if (!strcmp(c->rule[i], rule) && !strcmp(c->type[i], type)) n++;
    return n;
}

#endif
