/* test_gpumetrics.c - the GPU metrics table on /metrics (core/gpumetrics.c):
 * dcgm-exporter names and labels, staleness and gpulog_gpu_up, the bounds,
 * Xid counts, open anomalies, and a well-formed exposition. */
#include "test.h"
#include "../core/gpumetrics.h"
#include "../core/metrics.h"
#include "../core/event.h"
#include "../core/common.h"
#include "../core/config.h"

#include <stdlib.h>

#define T0 1762506000000LL   /* 2025-11-07T09:00:00Z */

static struct buf out;

static void render(int64_t now)
{
    buf_reset(&out);
    gpumetrics_render(&out, now);
}

/* 1 if the exposition has this exact line */
static int has_line(const char *line)
{
    size_t n = strlen(line);
    for (const char *p = out.p; (p = strstr(p, line)); p += n)
        if ((p == out.p || p[-1] == '\n') && p[n] == '\n') return 1;
    return 0;
}

/* number of sample lines of family name (name{ or name space) */
static int count_samples(const char *name)
{
    int c = 0;
    size_t n = strlen(name);
    for (const char *p = out.p; *p;) {
        const char *e = strchr(p, '\n');
        if (!e) break;
        if (*p != '#' && !strncmp(p, name, n) && (p[n] == '{' || p[n] == ' ')) c++;
        p = e + 1;
    }
    return c;
}

static void sample(struct event *ev, const char *host, int gpu, int64_t ts, double temp, double fb)
{
    event_reset(ev);
    ev->kind = "metric";
    ev->dataset = "gpu.dmon";
    ev->host = host;
    ev->ts_ms = ts;
    ev->offset = -1;
    event_add_int(ev, "gpu.index", gpu);
    event_add_num(ev, "gpu.temperature.gpu", temp);
    event_add_num(ev, "gpu.power.usage", 312.5);
    event_add_int(ev, "gpu.memory.framebuffer.used_size", (int64_t)fb);
    event_add_int(ev, "gpu.pcie.replay", 36);
    event_add_int(ev, "gpu.throttling.power.pct", 50);
}

/* samples of GPUs [g0, g1) of host at seconds [t0, t1] (1 s period) */
static void feed(struct event *ev, const char *host, int g0, int g1, int t0, int t1)
{
    for (int t = t0; t <= t1; t++)
        for (int g = g0; g < g1; g++) {
            sample(ev, host, g, T0 + t * 1000, 60 + g, 100);
            gpumetrics_observe(ev);
        }
}

TEST(names_units_labels)
{
    gpumetrics_reset();
    gpumetrics_configure("auto", 1, 3, 100);
    struct event ev;
    event_init(&ev);
    sample(&ev, "dgx-1", 0, T0, 71, 1000);
    gpumetrics_observe(&ev);
    int64_t now = gl_now_ms();
    render(now);
    CHECK(has_line("DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"\",device=\"nvidia0\",modelName=\"\",Hostname=\"dgx-1\"} 71"));
    CHECK(has_line("DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"\",device=\"nvidia0\",modelName=\"\",Hostname=\"dgx-1\"} 312.5"));
    CHECK(has_line("DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"\",device=\"nvidia0\",modelName=\"\",Hostname=\"dgx-1\"} 1000"));
    CHECK(has_line("# TYPE DCGM_FI_DEV_PCIE_REPLAY_COUNTER counter"));
    CHECK(has_line("# TYPE DCGM_FI_DEV_GPU_TEMP gauge"));
    CHECK(has_line("gpulog_gpu_power_violation_percent{gpu=\"0\",UUID=\"\",device=\"nvidia0\",modelName=\"\",Hostname=\"dgx-1\"} 50"));
    CHECK_EQ_INT(count_samples("DCGM_FI_DEV_FB_FREE"), 0);   /* no total, no free: not invented */
    /* a query-csv row of the same GPU brings UUID, model, bus id and the total */
    event_reset(&ev);
    ev.kind = "metric";
    ev.dataset = "gpu.query";
    ev.host = "dgx-1";
    ev.ts_ms = T0 + 1000;
    event_add_int(&ev, "gpu.index", 0);
    event_add_str(&ev, "gpu.uuid", "GPU-abc", 7);
    event_add_str(&ev, "gpu.name", "NVIDIA H100 80GB HBM3", 21);
    event_add_str(&ev, "gpu.pci.bus_id", "00000000:3B:00.0", 16);
    event_add_int(&ev, "gpu.memory.framebuffer.used_size", 2000);
    event_add_int(&ev, "gpu.memory.framebuffer.total_size", 81559);
    event_add_int(&ev, "gpu.ecc.corrected.volatile.count", 4);
    gpumetrics_observe(&ev);
    render(now);
    const char *lab = "{gpu=\"0\",UUID=\"GPU-abc\",pci_bus_id=\"0000:3b:00\",device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"dgx-1\"}";
    char line[512];
    snprintf(line, sizeof line, "DCGM_FI_DEV_FB_FREE%s 79559", lab);
    CHECK(has_line(line));
    snprintf(line, sizeof line, "DCGM_FI_DEV_FB_TOTAL%s 81559", lab);
    CHECK(has_line(line));
    snprintf(line, sizeof line, "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL%s 4", lab);   /* the query-csv twin */
    CHECK(has_line(line));
    snprintf(line, sizeof line, "DCGM_FI_DEV_GPU_TEMP%s 71", lab);   /* dmon's value stays, relabelled */
    CHECK(has_line(line));
    CHECK_EQ_INT(count_samples("DCGM_FI_DEV_GPU_TEMP"), 1);
    /* per-process rows and MIG instances are not GPUs */
    event_reset(&ev);
    ev.kind = "metric";
    ev.dataset = "gpu.pmon";
    ev.host = "dgx-1";
    ev.ts_ms = T0 + 1000;
    event_add_int(&ev, "gpu.index", 5);
    gpumetrics_observe(&ev);
    CHECK_EQ_INT(gpumetrics_rows(), 1);
    /* the next dmon sample, 1 s later: 50 % of that second throttled by power */
    sample(&ev, "dgx-1", 0, T0 + 2000, 72, 1000);
    gpumetrics_observe(&ev);
    render(now);
    snprintf(line, sizeof line, "DCGM_FI_DEV_POWER_VIOLATION%s 500000", lab);
    CHECK(has_line(line));
    event_free(&ev);
}

TEST(stale_gpu_leaves_and_up_says_so)
{
    gpumetrics_reset();
    gpumetrics_configure("on", 0, 3, 100);
    struct event ev;
    event_init(&ev);
    /* GPU 2 stops after t=3 s; GPUs 0 and 1 go on to t=10 s (1 s period) */
    feed(&ev, "h", 0, 3, 0, 3);
    feed(&ev, "h", 0, 2, 4, 10);
    int64_t now = gl_now_ms();
    render(now);
    CHECK(has_line("gpulog_gpu_up{gpu=\"2\",UUID=\"\",device=\"nvidia2\",modelName=\"\",Hostname=\"h\"} 0"));
    CHECK(has_line("gpulog_gpu_up{gpu=\"1\",UUID=\"\",device=\"nvidia1\",modelName=\"\",Hostname=\"h\"} 1"));
    CHECK_EQ_INT(count_samples("DCGM_FI_DEV_GPU_TEMP"), 2);
    CHECK(!strstr(out.p, "DCGM_FI_DEV_GPU_TEMP{gpu=\"2\""));
    CHECK_EQ_INT(gpumetrics_up(now), 2);
    /* 3 periods missed by the wall clock too: everything goes */
    CHECK_EQ_INT(gpumetrics_up(now + 3001), 0);
    CHECK_EQ_INT(gpumetrics_up(now + 2900), 2);
    render(now + 5000);
    CHECK_EQ_INT(count_samples("DCGM_FI_DEV_GPU_TEMP"), 0);
    CHECK_EQ_INT(count_samples("gpulog_gpu_up"), 3);
    /* it comes back */
    sample(&ev, "h", 2, T0 + 11000, 62, 100);
    gpumetrics_observe(&ev);
    CHECK(gpumetrics_up(gl_now_ms()) >= 1);
    event_free(&ev);
}

TEST(bounded_rows)
{
    gpumetrics_reset();
    gpumetrics_configure("on", 0, 3, 4);
    struct event ev;
    event_init(&ev);
    feed(&ev, "h", 0, 6, 0, 1);
    CHECK_EQ_INT(gpumetrics_rows(), 4);
    render(gl_now_ms());
    CHECK(has_line("gpulog_gpu_rows_dropped_total 4"));
    CHECK_EQ_INT(count_samples("DCGM_FI_DEV_GPU_TEMP"), 4);
    /* another host's GPUs at a later time: host h's rows are stale by event
     * time only for h, so they are still live and the new ones drop */
    sample(&ev, "other", 0, T0 + 60000, 50, 1);
    gpumetrics_observe(&ev);
    CHECK_EQ_INT(gpumetrics_rows(), 4);
    /* GPUs 0-2 of h keep reporting, GPU 3 falls silent: its row is reused */
    feed(&ev, "h", 0, 3, 2, 5);
    sample(&ev, "h", 9, T0 + 5000, 50, 1);
    gpumetrics_observe(&ev);
    CHECK_EQ_INT(gpumetrics_rows(), 4);
    render(gl_now_ms());
    CHECK(strstr(out.p, "DCGM_FI_DEV_GPU_TEMP{gpu=\"9\"") != NULL);
    CHECK(!strstr(out.p, "{gpu=\"3\""));
    /* many hosts: the host table stays bounded too */
    char host[32];
    for (int i = 0; i < 20000; i++) {
        snprintf(host, sizeof host, "node-%d", i);
        sample(&ev, host, 0, T0 + 10000 + i, 50, 1);
        gpumetrics_observe(&ev);
    }
    CHECK_EQ_INT(gpumetrics_rows(), 4);
    event_free(&ev);
}

static void xid(struct event *ev, const char *host, int code, const char *sev, const char *bus)
{
    event_reset(ev);
    ev->kind = "event";
    ev->dataset = "gpu.xid";
    ev->host = host;
    ev->ts_ms = T0;
    event_add_int(ev, "gpu.xid.code", code);
    event_add_str(ev, "gpu.xid.severity", sev, strlen(sev));
    event_add_str(ev, "gpu.xid.name", "GPU_FALLEN", 10);
    event_add_str(ev, "gpu.pci.bus_id", bus, strlen(bus));
}

TEST(xid_counts_and_last_xid)
{
    gpumetrics_reset();
    gpumetrics_configure("on", 0, 3, 100);
    struct event ev;
    event_init(&ev);
    sample(&ev, "h", 1, T0, 50, 1);
    event_add_str(&ev, "gpu.pci.bus_id", "00000000:3B:00.0", 16);
    gpumetrics_observe(&ev);
    xid(&ev, "h", 79, "critical", "PCI:0000:3b:00");
    gpumetrics_observe(&ev);
    gpumetrics_observe(&ev);
    xid(&ev, "h", 13, "warning", "PCI:0000:99:00");   /* a bus id no sample named */
    gpumetrics_observe(&ev);
    render(gl_now_ms());
    CHECK(has_line("gpulog_xid_errors_total{kind=\"xid\",code=\"79\",name=\"GPU_FALLEN\",severity=\"critical\",Hostname=\"h\"} 2"));
    CHECK(has_line("gpulog_xid_errors_total{kind=\"xid\",code=\"13\",name=\"GPU_FALLEN\",severity=\"warning\",Hostname=\"h\"} 1"));
    CHECK(has_line("DCGM_FI_DEV_XID_ERRORS{gpu=\"1\",UUID=\"\",pci_bus_id=\"0000:3b:00\",device=\"nvidia1\",modelName=\"\",Hostname=\"h\"} 79"));
    CHECK(has_line("DCGM_FI_DEV_XID_ERRORS{gpu=\"\",UUID=\"\",pci_bus_id=\"0000:99:00\",device=\"\",modelName=\"\",Hostname=\"h\"} 13"));
    CHECK_EQ_INT(count_samples("gpulog_gpu_up"), 1);   /* the Xid-only row is no GPU sample */
    /* the table off (detect's default): Xid counts go on, no GPU rows */
    gpumetrics_reset();
    gpumetrics_configure("auto", 0, 3, 100);
    CHECK(!gpumetrics_enabled());
    gpumetrics_observe(&ev);
    sample(&ev, "h", 1, T0, 50, 1);
    gpumetrics_observe(&ev);
    render(gl_now_ms());
    CHECK_EQ_INT(gpumetrics_rows(), 0);
    CHECK_EQ_INT(count_samples("DCGM_FI_DEV_GPU_TEMP"), 0);
    CHECK_EQ_INT(count_samples("gpulog_xid_errors_total"), 1);
    event_free(&ev);
}

static void rec(struct event *ev, const char *type, const char *rule, int gpu, int sev, int risk)
{
    event_reset(ev);
    ev->kind = "alert";
    ev->dataset = "gpu.anomaly";
    ev->host = "dgx-7";
    ev->ts_ms = T0;
    event_add_str(ev, "event.type", type, strlen(type));
    event_add_str(ev, "rule.id", rule, strlen(rule));
    event_add_int(ev, "event.risk_score", risk);
    event_add_int(ev, "event.severity", sev);
    event_add_int(ev, "gpu.index", gpu);
    event_add_str(ev, "anomaly.metric", "gpu.temperature.gpu", 19);
    if (!strcmp(type, "start")) event_add_str(ev, "anomaly.action", "check_cooling", 13);   /* only starts carry it */
}

TEST(anomalies_open_and_counted)
{
    gpumetrics_reset();
    metrics_reset();
    struct event ev;
    event_init(&ev);
    rec(&ev, "start", "thermal", 5, 2, 55);
    gpumetrics_observe(&ev);   /* records pass through observe as well */
    rec(&ev, "start", "hang", 1, 3, 80);
    gpumetrics_record(&ev);
    render(gl_now_ms());
    CHECK(has_line("gpulog_anomaly_open{rule_id=\"thermal\",severity=\"2\",gpu=\"5\",Hostname=\"dgx-7\",metric=\"gpu.temperature.gpu\",action=\"check_cooling\"} 1"));
    CHECK(has_line("gpulog_anomaly_risk_score{rule_id=\"thermal\",severity=\"2\",gpu=\"5\",Hostname=\"dgx-7\",metric=\"gpu.temperature.gpu\",action=\"check_cooling\"} 55"));
    CHECK_EQ_INT(metrics_get(M_ANOMALIES, "thermal"), 1);
    rec(&ev, "change", "thermal", 5, 3, 90);
    gpumetrics_record(&ev);
    render(gl_now_ms());
    CHECK(has_line("gpulog_anomaly_risk_score{rule_id=\"thermal\",severity=\"3\",gpu=\"5\",Hostname=\"dgx-7\",metric=\"gpu.temperature.gpu\",action=\"check_cooling\"} 90"));   /* kept from the start */
    CHECK_EQ_INT(count_samples("gpulog_anomaly_open"), 2);
    CHECK_EQ_INT(metrics_get(M_ANOMALIES, "thermal"), 1);
    rec(&ev, "end", "thermal", 5, 3, 90);
    gpumetrics_record(&ev);
    render(gl_now_ms());
    CHECK_EQ_INT(count_samples("gpulog_anomaly_open"), 1);
    CHECK(!strstr(out.p, "rule_id=\"thermal\""));
    /* bounded */
    char rule[32];
    for (int i = 0; i < GM_MAX_ANOMALIES + 10; i++) {
        snprintf(rule, sizeof rule, "r%d", i);
        rec(&ev, "start", rule, 0, 1, 1);
        gpumetrics_record(&ev);
    }
    render(gl_now_ms());
    CHECK_EQ_INT(count_samples("gpulog_anomaly_open"), GM_MAX_ANOMALIES);
    CHECK(has_line("gpulog_gpu_series_dropped_total{table=\"anomaly\"} 11"));
    event_free(&ev);
}

/* Every sample belongs to the family of the # TYPE line before it, and no
 * family appears twice (text format 0.0.4 rules Prometheus enforces). */
TEST(exposition_well_formed)
{
    gpumetrics_reset();
    metrics_reset();
    gpumetrics_configure("on", 0, 3, 100);
    struct event ev;
    event_init(&ev);
    for (int g = 0; g < 4; g++) {
        sample(&ev, "a\"b\\c", g, T0, 50, 1);   /* a host name that needs escaping */
        gpumetrics_observe(&ev);
    }
    rec(&ev, "start", "thermal", 1, 2, 55);
    gpumetrics_record(&ev);
    buf_reset(&out);
    metrics_render(&out);
    char fam[128] = "", seen[8192] = " ";
    int bad = 0, lines = 0;
    for (char *p = out.p; *p;) {
        char *e = strchr(p, '\n');
        if (!e) { bad++; break; }
        if (!strncmp(p, "# TYPE ", 7)) {
            int n = (int)strcspn(p + 7, " ");
            snprintf(fam, sizeof fam, "%.*s", n, p + 7);
            char key[140];
            snprintf(key, sizeof key, " %s ", fam);
            if (strstr(seen, key)) { bad++; printf("  family twice: %s\n", fam); }
            if (strlen(seen) + strlen(key) < sizeof seen) strcat(seen, key + 1);
        } else if (*p != '#') {
            size_t n = strlen(fam);
            if (!n || strncmp(p, fam, n) || (p[n] != '{' && p[n] != ' ')) { bad++; printf("  stray: %.*s\n", (int)(e - p), p); }
            lines++;
        }
        p = e + 1;
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(lines > 40);
    CHECK(strstr(out.p, "Hostname=\"a\\\"b\\\\c\"") != NULL);
    CHECK(strstr(out.p, "gpulog_anomalies_total{rule_id=\"thermal\"} 1") != NULL);
    event_free(&ev);
}

/* The configuration keys: nothing without metrics_addr; auto follows the
 * command (detect: off), on/off override it, out-of-range bounds are
 * refused with the key's name. */
TEST(setup_from_config)
{
    struct gpulog_config c;
    char err[256];
    config_defaults(&c);
    gpumetrics_reset();
    /* no metrics_addr: nobody can scrape, nothing is kept (not even Xid counts) */
    CHECK_EQ_INT(gpumetrics_setup(&c, 1, err, sizeof err), GL_OK);
    CHECK(!gpumetrics_enabled());
    struct event ev;
    event_init(&ev);
    xid(&ev, "h", 79, "critical", "PCI:0000:3b:00");
    gpumetrics_observe(&ev);
    render(gl_now_ms());
    CHECK_EQ_INT(count_samples("gpulog_xid_errors_total"), 0);
    event_free(&ev);
    CHECK_EQ_INT(config_set(&c, "metrics_addr", "127.0.0.1:0", err, sizeof err), GL_OK);
    CHECK_EQ_INT(gpumetrics_setup(&c, 0, err, sizeof err), GL_OK);
    CHECK(!gpumetrics_enabled());
    CHECK_EQ_INT(gpumetrics_setup(&c, 1, err, sizeof err), GL_OK);
    CHECK(gpumetrics_enabled());
    CHECK_EQ_INT(config_set(&c, "gpu_metrics", "on", err, sizeof err), GL_OK);
    CHECK_EQ_INT(gpumetrics_setup(&c, 0, err, sizeof err), GL_OK);
    CHECK(gpumetrics_enabled());
    CHECK_EQ_INT(config_set(&c, "gpu_metrics", "off", err, sizeof err), GL_OK);
    CHECK_EQ_INT(gpumetrics_setup(&c, 1, err, sizeof err), GL_OK);
    CHECK(!gpumetrics_enabled());
    CHECK(config_set(&c, "gpu_metrics", "maybe", err, sizeof err) != GL_OK);
    CHECK_EQ_INT(config_set(&c, "gpu_metrics_stale_periods", "0", err, sizeof err), GL_OK);
    CHECK_EQ_INT(gpumetrics_setup(&c, 1, err, sizeof err), GL_ERROR);
    CHECK(strstr(err, "gpu_metrics_stale_periods") != NULL);
    CHECK_EQ_INT(config_set(&c, "gpu_metrics_stale_periods", "3", err, sizeof err), GL_OK);
    CHECK_EQ_INT(config_set(&c, "gpu_metrics_max_gpus", "-5", err, sizeof err), GL_OK);
    CHECK_EQ_INT(gpumetrics_setup(&c, 1, err, sizeof err), GL_ERROR);
    CHECK(strstr(err, "gpu_metrics_max_gpus") != NULL);
    config_free(&c);
    gpumetrics_reset();
}

int main(void)
{
    buf_init(&out);
    RUN(names_units_labels);
    RUN(stale_gpu_leaves_and_up_says_so);
    RUN(bounded_rows);
    RUN(xid_counts_and_last_xid);
    RUN(anomalies_open_and_counted);
    RUN(exposition_well_formed);
    RUN(setup_from_config);
    gpumetrics_reset();
    buf_free(&out);
    return TEST_REPORT();
}
