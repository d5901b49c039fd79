/* test_report.c - the report page: the min/max envelope keeps spikes and
 * stays bounded whatever the input's length, the page's size is bounded,
 * everything from the log is escaped (a log with <script> is inert),
 * episodes are listed most severe first after the incidents (listed apart),
 * empty input gives a page. */
#include "test.h"
#include "../detect/report.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* one series on its own grid, as report keeps them */
struct one {
    struct rep_grid g;
    struct rep_env v[REP_BUCKETS];
};

static void one_halve(void *ctx, size_t nb_old)
{
    struct one *o = ctx;
    rep_env_halve(o->v, nb_old);
}

static void one_add(struct one *o, int64_t t, double x)
{
    long s = rep_grid_slot(&o->g, t, one_halve, o);
    if (s >= 0) rep_env_add(&o->v[s], x);
}

TEST(envelope_keeps_spikes_and_is_bounded)
{
    static struct one o;
    memset(&o, 0, sizeof o);
    o.g.origin = 1700000000000LL;
    o.g.bw = 1;
    const long n = 1000000;   /* 11.6 days at 1 s */
    for (long i = 0; i < n; i++) {
        double x = 50 + (i % 7);
        if (i == 654321) x = 500;   /* a one-sample spike */
        if (i == 123457) x = -100;  /* and a one-sample dip */
        one_add(&o, o.g.origin + i * 1000, x);
    }
    CHECK(o.g.nb <= REP_BUCKETS);
    CHECK(o.g.nb > REP_BUCKETS / 2);
    CHECK(o.g.bw >= n * 1000 / REP_BUCKETS);
    struct rep_env cols[REP_COLS];
    int64_t t0 = o.g.origin, t1 = o.g.origin + n * 1000;
    rep_envelope(o.v, o.g.nb, o.g.origin, o.g.bw, t0, t1, cols, REP_COLS);
    double hi = -1e9, lo = 1e9;
    uint64_t total = 0;
    size_t empty = 0, hi_col = 0, lo_col = 0;
    for (size_t c = 0; c < REP_COLS; c++) {
        total += cols[c].n;
        if (!cols[c].n) { empty++; continue; }
        if (cols[c].hi > hi) { hi = cols[c].hi; hi_col = c; }
        if (cols[c].lo < lo) { lo = cols[c].lo; lo_col = c; }
    }
    CHECK_EQ_INT(total, n);               /* every sample is in some column */
    CHECK_EQ_INT(empty, 0);
    CHECK_NEAR(hi, 500, 0);               /* the spike survived 1000x reduction */
    CHECK_NEAR(lo, -100, 0);
    /* ... in the column of its time (bucket starts round down by < 1 column) */
    CHECK(labs((long)hi_col - (long)(654321.0 / n * REP_COLS)) <= 1);
    CHECK(labs((long)lo_col - (long)(123457.0 / n * REP_COLS)) <= 1);
    /* the mean of a column stays within its envelope */
    CHECK(cols[10].sum / cols[10].n >= cols[10].lo && cols[10].sum / cols[10].n <= cols[10].hi);
}

TEST(envelope_window_and_gaps)
{
    static struct one o;
    memset(&o, 0, sizeof o);
    o.g.bw = 1000;
    for (int i = 0; i < 100; i++) one_add(&o, i * 1000, i);
    for (int i = 200; i < 300; i++) one_add(&o, i * 1000, i);   /* a 100 s gap */
    CHECK_EQ_INT(rep_grid_slot(&o.g, -5, one_halve, &o), -1);   /* before the origin */
    struct rep_env c[30];
    rep_envelope(o.v, o.g.nb, 0, o.g.bw, 0, 300000, c, 30);
    CHECK_EQ_INT(c[0].n, 10);
    CHECK_NEAR(c[0].lo, 0, 0);
    CHECK_NEAR(c[0].hi, 9, 0);
    CHECK_EQ_INT(c[12].n, 0);              /* the gap stays a gap */
    CHECK_NEAR(c[29].hi, 299, 0);
    /* a window: only what falls in it */
    rep_envelope(o.v, o.g.nb, 0, o.g.bw, 50000, 60000, c, 10);
    for (int i = 0; i < 10; i++) {
        CHECK_EQ_INT(c[i].n, 1);
        CHECK_NEAR(c[i].lo, 50 + i, 0);
    }
}

TEST(html_escape)
{
    struct buf b;
    buf_init(&b);
    const char *s = "<script>alert('x')</script>&\"";
    rep_html_escape(&b, s, strlen(s));
    CHECK_EQ_STR(b.p, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;");
    buf_reset(&b);
    rep_html_escape(&b, "a\0b\xff\n\tc\\d", 9);   /* NUL, invalid UTF-8, controls, backslash */
    CHECK_EQ_STR(b.p, "a\xEF\xBF\xBD" "b\xEF\xBF\xBD  c\\d");
    buf_reset(&b);
    rep_html_escape(&b, "GPU \xc2\xb0" "C \x01", 9);
    CHECK_EQ_STR(b.p, "GPU \xc2\xb0" "C  ");
    buf_free(&b);
}

TEST(script_json_is_inert)
{
    struct buf j, b;
    buf_init(&j);
    buf_init(&b);
    const char *host = "</script><script>alert(1)</script><!--&amp;-->";
    buf_puts(&j, "{\"host\":");
    buf_put_json_str(&j, host, strlen(host));
    buf_putc(&j, '}');
    rep_script_json(&b, j.p, j.len);
    CHECK(!strchr(b.p, '<') && !strchr(b.p, '>') && !strchr(b.p, '&'));
    json_t *o = json_loads(b.p, 0, NULL);
    CHECK(o != NULL);
    CHECK_EQ_STR(o ? json_string_value(json_object_get(o, "host")) : NULL, host);
    json_decref(o);
    buf_free(&j);
    buf_free(&b);
}

/* Starts ev (the caller's, then fed and freed by it): kind, dataset, host, time (s). */
static void ev_begin(struct event *ev, const char *kind, const char *dataset, const char *host, int64_t t)
{
    event_init(ev);
    ev->kind = kind;
    ev->dataset = dataset;
    ev->host = host;
    ev->ts_ms = t * 1000;
}

/* a metric sample of gpu at t (seconds) with temperature and power */
static void sample(struct report *r, const char *host, int gpu, int64_t t, double temp, double power)
{
    struct event ev;
    ev_begin(&ev, "metric", "gpu.dmon", host, t);
    event_add_int(&ev, "gpu.index", gpu);
    event_add_num(&ev, "gpu.temperature.gpu", temp);
    event_add_num(&ev, "gpu.power.usage", power);
    event_add_int(&ev, "gpu.pcie.replay", t / 1000);   /* a counter rising every 1000 s */
    report_event(r, &ev);
    event_free(&ev);
}

/* a record of the engine's shape: an anomaly (gpu.anomaly) or an incident (gpu.incident) */
static void record_of(struct report *r, const char *dataset, const char *host, int gpu, const char *type, int64_t t,
                      const char *rule, int sev, double risk, const char *reason)
{
    struct event ev;
    ev_begin(&ev, "alert", dataset, host, t);
    event_add_str(&ev, "event.type", type, strlen(type));
    event_add_str(&ev, "rule.id", rule, strlen(rule));
    event_add_int(&ev, "event.severity", sev);
    event_add_num(&ev, "event.risk_score", risk);
    event_add_int(&ev, "gpu.index", gpu);
    event_add_str(&ev, "event.reason", reason, strlen(reason));
    report_record(r, &ev);
    event_free(&ev);
}

static void record(struct report *r, const char *host, int gpu, const char *type, int64_t t, const char *rule, int sev,
                   double risk, const char *reason)
{
    record_of(r, "gpu.anomaly", host, gpu, type, t, rule, sev, risk, reason);
}

/* Writes r's page into a string (caller frees). */
static char *page_of(struct report *r, const struct report_info *info, size_t *len)
{
    char *p = NULL;
    FILE *f = open_memstream(&p, len);
    CHECK(report_write(r, info, f) == GL_OK);
    fclose(f);
    return p;
}

/* The embedded data of page p, parsed. */
static json_t *data_of(const char *p)
{
    const char *a = strstr(p, "id=\"gpulog-data\">");
    if (!a) return NULL;
    a = strchr(a, '>') + 1;
    const char *e = strstr(a, "</script>");
    return e ? json_loadb(a, (size_t)(e - a), 0, NULL) : NULL;
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++) n++;
    return n;
}

TEST(page_size_bounded_and_spike_kept)
{
    /* a day of 8 GPUs at 1 s, one 1-second spike on GPU 3 */
    struct report *r = report_new(NULL);
    for (int64_t t = 0; t < 86400; t++)
        for (int g = 0; g < 8; g++) sample(r, "n1", g, 1700000000 + t, g == 3 && t == 40000 ? 97 : 60 + (t % 5), 300);
    size_t len;
    char *p = page_of(r, NULL, &len);
    CHECK(len < 3 * 1024 * 1024);
    json_t *d = data_of(p);
    CHECK(d != NULL);
    json_t *ents = json_object_get(d, "ents");
    CHECK_EQ_INT(json_array_size(ents), 8);
    json_t *hi = json_object_get(json_object_get(json_object_get(json_array_get(ents, 3), "s"), "temp"), "hi");
    CHECK_EQ_INT(json_array_size(hi), REP_COLS);
    double mx = 0;
    for (size_t i = 0; i < json_array_size(hi); i++)
        if (json_number_value(json_array_get(hi, i)) > mx) mx = json_number_value(json_array_get(hi, i));
    CHECK_NEAR(mx, 97, 0);
    /* counter rises become markers: 86 of them, one per 1000 s */
    json_t *pc = json_object_get(json_object_get(json_array_get(ents, 0), "s"), "pcie");
    CHECK_EQ_INT(json_array_size(pc), 86);
    json_decref(d);
    free(p);
    report_free(r);
}

TEST(page_escapes_everything_from_the_log)
{
    const char *evil = "</script><script>alert(1)</script>";
    struct report *r = report_new(NULL);
    for (int t = 0; t < 120; t++) sample(r, evil, 0, 1700000000 + t, 50, 100);
    record(r, evil, 0, "start", 1700000060, "<b>rule</b>", 3, 80, "<img src=x onerror=alert(2)>");
    struct report_info info = { "/var/log/<script>x</script>.log", "gpu", 120, 0, 0 };
    size_t len;
    char *p = page_of(r, &info, &len);
    CHECK_EQ_INT(count(p, "<script"), 3);       /* the page's own three */
    CHECK_EQ_INT(count(p, "</script>"), 3);
    CHECK(!strstr(p, "<img") && !strstr(p, "<b>rule"));
    CHECK(strstr(p, "&lt;img src=x onerror=alert(2)&gt;") != NULL);
    CHECK(strstr(p, "/var/log/&lt;script&gt;x&lt;/script&gt;.log") != NULL);
    json_t *d = data_of(p);
    CHECK(d != NULL);
    CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(json_object_get(d, "ents"), 0), "host")), evil);
    json_decref(d);
    free(p);
    report_free(r);
}

TEST(incidents_most_severe_first)
{
    struct report *r = report_new(NULL);
    for (int t = 0; t < 600; t++) sample(r, "n1", t % 2, 1700000000 + t, 50, 100);
    record(r, "n1", 0, "start", 1700000010, "low.one", 1, 20, "small");
    record(r, "n1", 1, "start", 1700000100, "high.one", 3, 73, "big");
    record(r, "n1", 0, "start", 1700000200, "mid.one", 2, 70, "medium");
    record(r, "n1", 1, "end", 1700000300, "high.one", 3, 73, "big");
    size_t len;
    char *p = page_of(r, NULL, &len);
    const char *a = strstr(p, "high.one"), *b = strstr(p, "mid.one"), *c = strstr(p, "low.one");
    CHECK(a && b && c && a < b && b < c);
    json_t *d = data_of(p);
    json_t *e0 = json_array_get(json_object_get(d, "eps"), 0);
    CHECK_EQ_INT(json_integer_value(json_object_get(e0, "sev")), 3);
    CHECK_EQ_INT(json_integer_value(json_object_get(e0, "open")), 0);
    CHECK_EQ_INT(json_integer_value(json_object_get(e0, "e")), 1);   /* GPU 1's panel */
    /* the other two are still open: they last until the end of the input (599 s) */
    CHECK(strstr(p, "6 min 39 s or more, still open") != NULL);       /* mid.one, from 200 s */
    CHECK(strstr(p, "9 min 49 s or more, still open") != NULL);       /* low.one, from 10 s */
    json_decref(d);
    free(p);
    report_free(r);
}

/* incidents (gpu.incident records) are a table of their own before the
 * episodes, most severe first, with their rules and their end's summary;
 * they are not episodes (not in the episode table nor in the chart data) */
TEST(incidents_listed_apart_and_first)
{
    struct report *r = report_new(NULL);
    for (int t = 0; t < 600; t++) sample(r, "n1", t % 2, 1700000000 + t, 50, 100);
    record(r, "n1", 1, "start", 1700000100, "rule.hot", 2, 60, "hot");
    record(r, "n1", 0, "start", 1700000150, "rule.slow", 1, 30, "slow");
    const char *type[4] = { "start", "start", "end", "end" };
    const int gpu[4] = { 1, 0, 1, 0 }, sev[4] = { 2, 1, 2, 1 };
    const char *rules[4] = { "rule.hot", "rule.slow", "rule.hot,rule.clock", "rule.slow" };
    const char *why[4] = { "incident on GPU 1: hot", "incident on GPU 0: slow", "GPU 1 over after 200 s: 2 rules",
                           "GPU 0 over after 100 s: 1 rule" };
    for (int i = 0; i < 4; i++) {
        struct event ev;
        ev_begin(&ev, "alert", "gpu.incident", "n1", 1700000100 + 50 * (i % 2) + (i / 2) * 200);
        event_add_str(&ev, "event.type", type[i], strlen(type[i]));
        event_add_str(&ev, "rule.id", "gpu.incident", 12);
        event_add_str(&ev, "rule.name", "GPU incident", 12);
        event_add_int(&ev, "event.severity", sev[i]);
        event_add_num(&ev, "event.risk_score", sev[i] * 30);
        event_add_int(&ev, "gpu.index", gpu[i]);
        event_add_str(&ev, "anomaly.rules", rules[i], strlen(rules[i]));
        event_add_str(&ev, "event.reason", why[i], strlen(why[i]));
        report_record(r, &ev);
        event_free(&ev);
    }
    size_t len;
    char *p = page_of(r, NULL, &len);
    const char *inc = strstr(p, "<section id=\"gpu-incidents\">"), *eps = strstr(p, "<section id=\"incidents\">");
    CHECK(inc && eps && inc < eps);
    if (inc && eps) {
        const char *a = strstr(inc, "over after 200 s"), *b = strstr(inc, "over after 100 s");
        CHECK(a && b && a < b && b < eps);                  /* most severe first, the end's summary */
        const char *c = strstr(inc, "rule.hot<br>rule.clock");
        CHECK(c && c < eps);                                /* every rule of the incident */
        CHECK(!strstr(eps, "GPU incident") && !strstr(eps, "gpu.incident"));
    }
    json_t *d = data_of(p);
    CHECK_EQ_INT(json_array_size(json_object_get(d, "eps")), 2);    /* the episodes only */
    json_decref(d);
    free(p);
    report_free(r);
}

TEST(xid_markers_find_their_gpu_by_bus)
{
    struct report *r = report_new(NULL);
    const char *bus[2] = { "0000:3b:00.0", "0000:86:00.0" };
    for (int t = 0; t < 120; t++)
        for (int g = 0; g < 2; g++) {
            struct event ev;
            ev_begin(&ev, "metric", "gpu.query", "n1", 1700000000 + t);
            event_add_int(&ev, "gpu.index", g);
            event_add_str(&ev, "gpu.pci.bus_id", bus[g], strlen(bus[g]));
            event_add_num(&ev, "gpu.temperature.gpu", 50);
            report_event(r, &ev);
            event_free(&ev);
        }
    const char *xb[2] = { "0000:86:00.0", "0000:af:00.0" };   /* GPU 1's bus, an unknown one */
    for (int i = 0; i < 2; i++) {
        struct event ev;
        ev_begin(&ev, "event", "gpu.xid", "n1", 1700000060 + i);
        event_add_int(&ev, "gpu.xid.code", 79);
        event_add_str(&ev, "gpu.pci.bus_id", xb[i], strlen(xb[i]));
        event_add_str(&ev, "gpu.xid.name", "fallen off the bus", 18);
        report_event(r, &ev);
        event_free(&ev);
    }
    size_t len;
    char *p = page_of(r, NULL, &len);
    json_t *d = data_of(p);
    json_t *x = json_object_get(d, "xids");
    CHECK_EQ_INT(json_array_size(x), 2);
    CHECK_EQ_INT(json_integer_value(json_object_get(json_array_get(x, 0), "e")), 1);    /* GPU 1's panel */
    CHECK_EQ_INT(json_integer_value(json_object_get(json_array_get(x, 1), "e")), -1);   /* every panel */
    CHECK(strstr(p, "GPU 1 0000:86:00.0") != NULL);                                 /* the kernel table */
    json_decref(d);
    free(p);
    report_free(r);
}

/* 2,000 GPUs, a fault on the last one to arrive: its incident is listed and
 * its chart drawn (only 64 charts; it was beyond the first 64 by arrival),
 * with its samples from before the fault (the coarse series) */
TEST(many_gpus_chart_the_faulty_first)
{
    struct report *r = report_new(NULL);
    for (int t = 0; t < 100; t++)
        for (int g = 0; g < 2000; g++) sample(r, "n1", g, 1700000000 + t, g == 1999 && t >= 60 ? 95 : 50, 100);
    record(r, "n1", 1999, "start", 1700000080, "gpu.temp.high", 3, 90, "hot");
    record(r, "n1", 7, "start", 1700000081, "gpu.mild", 1, 10, "mild");
    size_t len;
    char *p = page_of(r, NULL, &len);
    json_t *d = data_of(p);
    json_t *ents = json_object_get(d, "ents");
    CHECK_EQ_INT(json_array_size(ents), 64);
    long at = -1, at7 = -1;
    for (size_t i = 0; i < json_array_size(ents); i++) {
        int g = (int)json_integer_value(json_object_get(json_array_get(ents, i), "gpu"));
        if (g == 1999) at = (long)i;
        if (g == 7) at7 = (long)i;
    }
    CHECK(at >= 0);
    CHECK(at7 >= 0);
    json_t *e0 = json_array_get(json_object_get(d, "eps"), 0);
    CHECK_EQ_INT(json_integer_value(json_object_get(e0, "g")), 1999);
    CHECK_EQ_INT(json_integer_value(json_object_get(e0, "e")), at);   /* the episode points at its chart */
    if (at >= 0) {
        json_t *hi = json_object_get(json_object_get(json_object_get(json_array_get(ents, (size_t)at), "s"), "temp"), "hi");
        size_t early = 0;
        double mx = 0;
        for (size_t i = 0; i < json_array_size(hi); i++) {
            json_t *v = json_array_get(hi, i);
            if (!json_is_number(v)) continue;
            if (i < json_array_size(hi) / 2) early++;
            if (json_number_value(v) > mx) mx = json_number_value(v);
        }
        CHECK(early > 0);            /* the samples before the fault are drawn */
        CHECK_NEAR(mx, 95, 0);
    }
    CHECK(strstr(p, "64 charted") != NULL);
    json_decref(d);
    free(p);
    report_free(r);
}

/* an incident start record (rule.id rule) and a kernel event, as the engine and the parser make them */
static void incident(struct report *r, const char *rule, int sev, double risk, int gpu, const char *reason, int64_t t)
{
    record_of(r, "gpu.incident", "n1", gpu, "start", t, rule, sev, risk, reason);
}

static void xid(struct report *r, int code, const char *sev, const char *name, int64_t t)
{
    struct event ev;
    ev_begin(&ev, "event", "gpu.xid", "n1", t);
    event_add_int(&ev, "gpu.xid.code", code);
    event_add_str(&ev, "gpu.xid.severity", sev, strlen(sev));
    event_add_str(&ev, "gpu.xid.name", name, strlen(name));
    report_event(r, &ev);
    event_free(&ev);
}

/* the tables keep the most severe: a critical episode, incident and Xid
 * after the arrays are full of mild ones are listed first */
TEST(late_critical_events_are_kept)
{
    struct report *r = report_new(NULL);
    for (int t = 0; t < 10; t++) sample(r, "n1", 0, 1700000000 + t, 50, 100);
    char rule[32];
    for (int i = 0; i < 4100; i++) {
        snprintf(rule, sizeof rule, "mild.%d", i);
        record(r, "n1", i % 8, "start", 1700000001, rule, 1, 10, "mild");
    }
    record(r, "n1", 3, "start", 1700000005, "gpu.xid.critical", 3, 95, "Xid 79: fallen off the bus");
    for (int i = 0; i < 2100; i++) {
        snprintf(rule, sizeof rule, "gpu.incident.%d", i);
        incident(r, rule, 1, 5, i % 8, "mild incident", 1700000002);
    }
    incident(r, "gpu.incident", 3, 99, 3, "the critical incident", 1700000006);
    for (int i = 0; i < 2100; i++) xid(r, 13, "warning", "graphics engine exception", 1700000003);
    xid(r, 79, "critical", "fallen off the bus", 1700000007);
    size_t len;
    char *p = page_of(r, NULL, &len);
    json_t *d = data_of(p);
    json_t *e0 = json_array_get(json_object_get(d, "eps"), 0);
    CHECK_EQ_INT(json_integer_value(json_object_get(e0, "sev")), 3);
    CHECK_EQ_STR(json_string_value(json_object_get(e0, "name")), "gpu.xid.critical");
    CHECK_EQ_INT(json_array_size(json_object_get(d, "eps")), 4000);
    const char *inc = strstr(p, "<section id=\"gpu-incidents\">"), *crit = strstr(p, "the critical incident");
    const char *mild = inc ? strstr(inc, "mild incident") : NULL;
    CHECK(inc && crit && mild && inc < crit && crit < mild);     /* listed, first */
    const char *ker = strstr(p, "<section id=\"kernel\">");
    const char *x79 = ker ? strstr(ker, "Xid 79") : NULL, *x13 = ker ? strstr(ker, "Xid 13") : NULL;
    CHECK(ker && x79 && x13 && x79 < x13);
    CHECK(strstr(p, "the 4000 most severe are") != NULL);
    json_decref(d);
    free(p);
    report_free(r);
}

/* a page of part of the input says so */
TEST(partial_page_is_marked)
{
    struct report *r = report_new(NULL);
    for (int t = 0; t < 10; t++) sample(r, "n1", 0, 1700000000 + t, 50, 100);
    struct report_info info = { "-", "gpu", 10, 0, 1 };
    size_t len;
    char *p = page_of(r, &info, &len);
    CHECK(strstr(p, "<title>(partial) GPU report") != NULL);
    CHECK(strstr(p, "Partial report:</b> stopped by a signal") != NULL);
    free(p);
    info.partial = 0;
    p = page_of(r, &info, &len);
    CHECK(!strstr(p, "Partial report") && !strstr(p, "(partial)"));
    free(p);
    report_free(r);
}

TEST(empty_input_gives_a_page)
{
    struct report *r = report_new(NULL);
    size_t len;
    char *p = page_of(r, NULL, &len);
    CHECK(strstr(p, "No anomalies were found") != NULL);
    CHECK(strstr(p, "</html>") != NULL);
    json_t *d = data_of(p);
    CHECK(d != NULL);
    CHECK_EQ_INT(json_array_size(json_object_get(d, "ents")), 0);
    json_decref(d);
    free(p);
    report_free(r);
}

int main(void)
{
    RUN(envelope_keeps_spikes_and_is_bounded);
    RUN(envelope_window_and_gaps);
    RUN(html_escape);
    RUN(script_json_is_inert);
    RUN(page_size_bounded_and_spike_kept);
    RUN(page_escapes_everything_from_the_log);
    RUN(incidents_most_severe_first);
    RUN(incidents_listed_apart_and_first);
    RUN(xid_markers_find_their_gpu_by_bus);
    RUN(many_gpus_chart_the_faulty_first);
    RUN(late_critical_events_are_kept);
    RUN(partial_page_is_marked);
    RUN(empty_input_gives_a_page);
    return TEST_REPORT();
}
