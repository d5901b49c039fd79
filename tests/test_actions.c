/*
 * test_actions.c - incidents an operator can act on (issue 28): the
 * recommended action and its evidence on episode and incident records (the
 * Xid catalog's, a rule's default, a GPU's history, the user's table), the
 * processes that were on the GPU, the node's labels, and the bounds of the
 * per-GPU process table.
 */
#include "test.h"
#include "../detect/engine.h"
#include "../parsers/parser.h"
#include "engine_harness.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* Every record, decoded (episodes and incidents). */
struct recs {
    json_t *r[512];
    int n, dropped;
};

static void rec_emit(void *ctx, const struct event *ev)
{
    struct recs *c = ctx;
    struct buf b;
    buf_init(&b);
    event_to_json(ev, &b);
    json_error_t je;
    json_t *j = json_loadb(b.p, b.len, 0, &je);
    buf_free(&b);
    if (c->n < 512 && j) c->r[c->n++] = j;
    else { json_decref(j); c->dropped++; }
}

static void recs_free(struct recs *c)
{
    for (int i = 0; i < c->n; i++) json_decref(c->r[i]);
    CHECK_EQ_INT(c->dropped, 0);    /* the capture holds them all, or the test says so */
    memset(c, 0, sizeof *c);
}

static const char *sget(json_t *r, const char *k)
{
    const char *s = json_string_value(json_object_get(r, k));
    return s ? s : "";
}

/* The n-th record (0-based) of dataset ds and type (NULL: any), or NULL. */
static json_t *nth(const struct recs *c, const char *ds, const char *type, int n)
{
    for (int i = 0; i < c->n; i++)
        if (!strcmp(sget(c->r[i], "event.dataset"), ds) && (!type || !strcmp(sget(c->r[i], "event.type"), type)) && !n--)
            return c->r[i];
    return NULL;
}

static int count(const struct recs *c, const char *ds, const char *type)
{
    int k = 0;
    while (nth(c, ds, type, k)) k++;
    return k;
}

/* A dmon-like sample of GPU g on host "n1" at ms. */
static void metric(struct engine *e, int g, int64_t ms, double temp, double util, double power, double fan)
{
    struct event ev;
    event_init(&ev);
    ev.kind = "metric"; ev.dataset = "gpu.dmon"; ev.host = "n1"; ev.offset = -1; ev.ts_ms = T0 + ms;
    snprintf(ev.id, sizeof ev.id, "%032llx", (unsigned long long)(1000000 + ms * 16 + g));
    event_add_int(&ev, "gpu.index", g);
    event_add_str(&ev, "gpu.pci.bus_id", g ? "0000:3b:00.0" : "0000:18:00.0", 12);
    event_add_num(&ev, "gpu.temperature.gpu", temp);
    event_add_num(&ev, "gpu.utilization.gpu.pct", util);
    event_add_num(&ev, "gpu.power.usage", power);
    if (fan >= 0) event_add_num(&ev, "gpu.fan.speed.pct", fan);
    event_add_str(&ev, "labels.rack", "r12", 3);
    engine_feed(e, &ev);
    event_free(&ev);
}

/* A pmon row: process pid/name on GPU g at ms. */
static void pmon(struct engine *e, int g, int64_t ms, int pid, const char *name, double sm, double mem)
{
    struct event ev;
    event_init(&ev);
    ev.kind = "metric"; ev.dataset = "gpu.pmon"; ev.host = "n1"; ev.offset = -1; ev.ts_ms = T0 + ms;
    snprintf(ev.id, sizeof ev.id, "%032llx", (unsigned long long)(900000000 + ms * 64 + pid % 64));
    event_add_int(&ev, "gpu.index", g);
    event_add_int(&ev, "process.pid", pid);
    event_add_str(&ev, "process.name", name, strlen(name));
    event_add_str(&ev, "gpu.process.type", "C", 1);
    event_add_num(&ev, "gpu.process.utilization.sm.pct", sm);
    event_add_num(&ev, "gpu.process.memory.used_size", mem);
    engine_feed(e, &ev);
    event_free(&ev);
}

/* An Xid on the GPU at bus (its line names pid/name when pid > 0). */
static void xid(struct engine *e, int64_t ms, int code, const char *bus, int pid, const char *name)
{
    struct event ev;
    xid_event(&ev, "n1", T0 + ms, code);
    event_add_str(&ev, "gpu.pci.bus_id", bus, strlen(bus));
    if (pid > 0) {
        event_add_int(&ev, "process.pid", pid);
        event_add_str(&ev, "process.name", name, strlen(name));
    }
    engine_feed(e, &ev);
    event_free(&ev);
}

/* An Xid 79 on a GPU running a named process: one incident, drain and
 * reset (the catalog's action), the process named, the rack kept; a second
 * Xid 79 on it within a week: drain and send for repair, said why. */
TEST(xid79_with_a_process)
{
    struct profile *p = prof_builtin("gpu");
    if (!p) { CHECK(0); return; }
    struct recs c = { 0 };
    struct engine *e = engine_new(p, rec_emit, &c);
    for (int s = 0; s < 120; s++) {
        metric(e, 0, s * 1000LL, 60, 95, 300, 40);
        metric(e, 1, s * 1000LL, 61, 95, 300, 40);
        if (s % 5 == 0) pmon(e, 1, s * 1000LL, 24567, "python train.py", 97, 40950);
        if (s % 5 == 0) pmon(e, 1, s * 1000LL, 3100, "nvidia-cuda-mps", 0, 30);
    }
    xid(e, 120500, 79, "0000:3b:00.0", 0, "");
    engine_flush(e);
    json_t *inc = nth(&c, "gpu.incident", "start", 0);
    CHECK(inc != NULL);
    CHECK_EQ_INT(count(&c, "gpu.incident", "start"), 1);
    if (inc) {
        CHECK_EQ_INT(json_integer_value(json_object_get(inc, "gpu.index")), 1);
        CHECK_EQ_STR(sget(inc, "anomaly.action"), "reset_gpu");
        CHECK(strstr(sget(inc, "anomaly.action_reason"), "Xid 79") != NULL);
        CHECK(strstr(sget(inc, "anomaly.action_reason"), "drain") != NULL);
        CHECK(strstr(sget(inc, "anomaly.processes"), "python train.py (pid 24567, C, SM 97 %, 40950 MiB)") ==
              sget(inc, "anomaly.processes"));                            /* the busiest first */
        CHECK(strstr(sget(inc, "anomaly.processes"), "nvidia-cuda-mps") != NULL);
        CHECK_EQ_INT(json_integer_value(json_object_get(inc, "anomaly.process_count")), 2);
        CHECK_EQ_STR(sget(inc, "process.name"), "python train.py");
        CHECK_EQ_INT(json_integer_value(json_object_get(inc, "process.pid")), 24567);
        CHECK_EQ_STR(sget(inc, "labels.rack"), "r12");
    }
    json_t *ep = nth(&c, "gpu.anomaly", "start", 0);
    CHECK(ep && !strcmp(sget(ep, "anomaly.action"), "reset_gpu"));
    /* the GPU comes back; two days later another Xid 79 */
    int64_t later = 2LL * 86400 * 1000;
    for (int s = 0; s < 400; s++) {
        metric(e, 0, later + s * 1000LL, 60, 95, 300, 40);
        metric(e, 1, later + s * 1000LL, 61, 95, 300, 40);
    }
    CHECK_EQ_INT(count(&c, "gpu.incident", "end"), 1);         /* the first one over */
    xid(e, later + 400500, 79, "0000:3b:00.0", 24999, "python eval.py");
    engine_flush(e);
    json_t *inc2 = nth(&c, "gpu.incident", "start", 1);
    CHECK(inc2 != NULL);
    if (inc2) {
        CHECK_EQ_STR(sget(inc2, "anomaly.action"), "drain_repair");
        CHECK(strstr(sget(inc2, "anomaly.action_reason"), "second Xid 79") != NULL);
        CHECK(strstr(sget(inc2, "anomaly.processes"), "python eval.py (pid 24999)") != NULL);   /* from the Xid line */
    }
    engine_free(e);
    profile_free(p);
    recs_free(&c);
}

/* A thermal incident with the fans at 100 %: check cooling. */
TEST(thermal_incident_check_cooling)
{
    struct profile *p = prof_builtin("gpu");
    if (!p) { CHECK(0); return; }
    struct recs c = { 0 };
    struct engine *e = engine_new(p, rec_emit, &c);
    for (int s = 0; s < 900; s++) {
        double t = s < 300 ? 65 : 65 + (s - 300) * 0.08;     /* a fan failure: it climbs past 87 */
        metric(e, 0, s * 1000LL, t > 95 ? 95 : t, 98, 300, s < 300 ? 55 : 100);
    }
    engine_flush(e);
    json_t *inc = nth(&c, "gpu.incident", "start", 0);
    CHECK(inc != NULL);
    int last = -1;
    for (int k = 0; nth(&c, "gpu.incident", NULL, k); k++) last = k;
    json_t *fin = last >= 0 ? nth(&c, "gpu.incident", NULL, last) : NULL;
    CHECK(fin && !strcmp(sget(fin, "anomaly.action"), "check_cooling"));
    CHECK(!nth(&c, "gpu.incident", "start", 1));
    engine_free(e);
    profile_free(p);
    recs_free(&c);
}

/* The user's table wins: xid:79 -> drain_repair at once, gpu.temp.high ->
 * watch; a wrong action or an unknown rule is refused with its place. */
TEST(user_action_table)
{
    char err[512];
    const char *good = "{\"extends\":\"gpu\",\"actions\":{\"xid:79\":\"drain_repair\",\"gpu.temp.rise\":\"watch\"}}";
    struct profile *p = profile_from_json(good, strlen(good), err, sizeof err);
    CHECK(p != NULL);
    if (!p) { printf("  %s\n", err); return; }
    struct recs c = { 0 };
    struct engine *e = engine_new(p, rec_emit, &c);
    for (int s = 0; s < 60; s++) metric(e, 1, s * 1000LL, 60, 95, 300, 40);
    xid(e, 60500, 79, "0000:3b:00.0", 0, "");
    engine_flush(e);
    json_t *inc = nth(&c, "gpu.incident", "start", 0);
    CHECK(inc && !strcmp(sget(inc, "anomaly.action"), "drain_repair"));
    CHECK(inc && strstr(sget(inc, "anomaly.action_reason"), "configured") != NULL);
    engine_free(e);
    profile_free(p);
    recs_free(&c);
    const char *bad = "{\"extends\":\"gpu\",\"actions\":{\"gpu.temp.high\":\"panic\"}}";
    CHECK(profile_from_json(bad, strlen(bad), err, sizeof err) == NULL);
    CHECK(strstr(err, "must be one of") != NULL);
    const char *unknown = "{\"extends\":\"gpu\",\"actions\":{\"gpu.temp.hihg\":\"watch\"}}";
    CHECK(profile_from_json(unknown, strlen(unknown), err, sizeof err) == NULL);
    CHECK(strstr(err, "no rule of this profile") != NULL);
}

/* A process storm (5000 short-lived processes on one GPU) keeps at most
 * ENT_PROCS of them: memory does not grow with it. */
TEST(process_table_is_bounded)
{
    struct profile *p = prof_builtin("gpu");
    if (!p) { CHECK(0); return; }
    struct recs c = { 0 };
    struct engine *e = engine_new(p, rec_emit, &c);
    metric(e, 0, 0, 60, 95, 300, 40);
    size_t m0 = engine_memory(e);
    for (int i = 0; i < 100; i++) pmon(e, 0, 1000 + i, 10000 + i, "worker", 1, 10);
    size_t m1 = engine_memory(e);
    for (int i = 100; i < 5000; i++) pmon(e, 0, 1000 + i, 10000 + i, "worker", 1, 10);
    size_t m2 = engine_memory(e);
    CHECK(m1 > m0);
    CHECK_EQ_INT((long long)m2, (long long)m1);
    CHECK_EQ_INT((int)engine_get_stats(e)->samples, 1);     /* process rows are no samples of the GPU */
    engine_free(e);
    profile_free(p);
    recs_free(&c);
}

/* The node's labels: every event a parser emits carries them, unless its
 * own row sets one. */
TEST(node_labels)
{
    char err[256];
    const char *kv[] = { "rack=r7", "slurm_cluster=c1" };
    CHECK_EQ_INT(parser_labels_set(kv, 2, err, sizeof err), 0);
    const char *bad[] = { "Rack=r7" };
    CHECK_EQ_INT(parser_labels_set(bad, 1, err, sizeof err), -1);
    CHECK_EQ_INT(parser_labels_set(kv, 2, err, sizeof err), 0);
    struct recs c = { 0 };
    struct parser *ps = parser_new(&parser_csv, rec_emit, &c);
    struct line_src src = { .host = "n1", .source = "-", .now_ms = T0 };
    const char *hdr = "time,gpu,gpu_temp,rack", *row = "1700000000,0,50,r9", *row2 = "1700000001,0,50,";
    parser_feed(ps, &src, hdr, strlen(hdr));
    parser_feed(ps, &src, row, strlen(row));
    parser_feed(ps, &src, row2, strlen(row2));
    parser_free(ps);
    CHECK_EQ_INT(c.n, 2);
    if (c.n == 2) {
        CHECK_EQ_STR(sget(c.r[0], "labels.rack"), "r9");            /* the row's own */
        CHECK_EQ_STR(sget(c.r[1], "labels.rack"), "r7");            /* the node's */
        CHECK_EQ_STR(sget(c.r[0], "labels.slurm_cluster"), "c1");
    }
    CHECK_EQ_INT(parser_labels_set(NULL, 0, err, sizeof err), 0);
    recs_free(&c);
}

int main(void)
{
    RUN(xid79_with_a_process);
    RUN(thermal_incident_check_cooling);
    RUN(user_action_table);
    RUN(process_table_is_bounded);
    RUN(node_labels);
    return TEST_REPORT();
}
