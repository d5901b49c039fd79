/*
 * gpumetrics_render.c - the GPU metrics table on /metrics (gpumetrics.h):
 * every family in Prometheus text format under dcgm-exporter's names.
 */
#include "gpumetrics_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ render */

static void header(struct buf *b, const char *name, const char *type, const char *help)
{
    buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void put_value(struct buf *b, double v)
{
    if (v == floor(v) && fabs(v) < 9e15) buf_put_i64(b, (int64_t)v);
    else buf_printf(b, "%.6g", v);
    buf_putc(b, '\n');
}

/* A field is shown while its row is live and its value is no older than
 * gm_stale_periods periods behind the row's last sample. */
static int field_live(const struct gm_gpu *g, size_t f)
{
    return (g->have >> f & 1) && g->last_ts - g->fts[f] <= gm_stale_periods * gm_period_of(g);
}

static void render_gpus(struct buf *b, const unsigned char *live)
{
    for (size_t f = 0; f < GM_NF; f++) {
        if (!gm_fields[f].help) continue;   /* a twin: rendered with its first name */
        header(b, gm_fields[f].name, gm_fields[f].type == GM_COUNTER ? "counter" : "gauge", gm_fields[f].help);
        for (size_t r = 0; r < gm_ngpus; r++) {
            const struct gm_gpu *g = &gm_gpus[r];
            if (!live[r]) continue;
            size_t use = f;   /* the twin (query-csv ECC names) when only it has a value */
            for (size_t t = f + 1; !field_live(g, use) && t < GM_NF; t++)
                if (!gm_fields[t].help && !strcmp(gm_fields[t].name, gm_fields[f].name)) use = t;
            if (!field_live(g, use)) continue;
            buf_puts(b, gm_fields[f].name);
            buf_puts(b, g->labels);
            buf_putc(b, ' ');
            put_value(b, g->v[use]);
        }
    }
    static const char *const vname[D__N] = { "DCGM_FI_DEV_POWER_VIOLATION", "DCGM_FI_DEV_THERMAL_VIOLATION" };
    static const char *const vhelp[D__N] = {
        "Throttling duration due to power constraints (in us); gpulog: accumulated from dmon pviol since gpulog started.",
        "Throttling duration due to thermal constraints (in us); gpulog: accumulated from dmon tviol since gpulog started." };
    for (int d = 0; d < D__N; d++) {
        header(b, vname[d], "counter", vhelp[d]);
        for (size_t r = 0; r < gm_ngpus; r++)
            if (live[r] && gm_gpus[r].have_viol[d]) {
                buf_puts(b, vname[d]);
                buf_puts(b, gm_gpus[r].labels);
                buf_putc(b, ' ');
                put_value(b, floor(gm_gpus[r].viol_us[d]));
            }
    }
}

void gpumetrics_render(struct buf *b, int64_t now_ms)
{
    pthread_mutex_lock(&gm_mu);
    int on = atomic_load(&gm_enabled);
    unsigned char *live = gm_ngpus ? xmalloc(gm_ngpus) : NULL;
    for (size_t r = 0; r < gm_ngpus; r++) live[r] = (unsigned char)gm_gpu_live(&gm_gpus[r], now_ms);
    if (on) {
        render_gpus(b, live);
        header(b, "DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.");
        for (size_t r = 0; r < gm_ngpus; r++)
            if (gm_gpus[r].xid_last >= 0 && (live[r] || !gm_gpus[r].sampled)) {
                buf_puts(b, "DCGM_FI_DEV_XID_ERRORS");
                buf_puts(b, gm_gpus[r].labels);
                buf_printf(b, " %lld\n", (long long)gm_gpus[r].xid_last);
            }
        header(b, "gpulog_gpu_up", "gauge",
               "1 while the GPU reports, 0 once it missed gpu_metrics_stale_periods sample periods (its other series are then left out).");
        for (size_t r = 0; r < gm_ngpus; r++)
            if (gm_gpus[r].sampled) {
                buf_puts(b, "gpulog_gpu_up");
                buf_puts(b, gm_gpus[r].labels);
                buf_puts(b, live[r] ? " 1\n" : " 0\n");
            }
        header(b, "gpulog_gpu_last_sample_timestamp_seconds", "gauge", "Time of the GPU's newest sample (event time, seconds since the epoch).");
        for (size_t r = 0; r < gm_ngpus; r++)
            if (gm_gpus[r].sampled) {
                buf_puts(b, "gpulog_gpu_last_sample_timestamp_seconds");
                buf_puts(b, gm_gpus[r].labels);
                buf_printf(b, " %lld.%03lld\n", (long long)(gm_gpus[r].last_ts / 1000), (long long)(gm_gpus[r].last_ts % 1000));
            }
        header(b, "gpulog_gpu_rows", "gauge", "GPU rows held (bounded by gpu_metrics_max_gpus).");
        buf_printf(b, "gpulog_gpu_rows %zu\n", gm_ngpus);
        header(b, "gpulog_gpu_rows_dropped_total", "counter", "New GPUs not shown because the table was full of reporting GPUs.");
        buf_printf(b, "gpulog_gpu_rows_dropped_total %llu\n", (unsigned long long)gm_rows_dropped);
    }
    header(b, "gpulog_xid_errors_total", "counter", "Xid and SXid kernel messages by code, name and severity (kind xid or sxid).");
    for (size_t i = 0; i < gm_nxids; i++) {
        buf_puts(b, "gpulog_xid_errors_total{");
        gm_put_label(b, "kind", gm_xids[i].sx ? "sxid" : "xid", 0);
        char code[16];
        snprintf(code, sizeof code, "%d", gm_xids[i].code);
        gm_put_label(b, "code", code, 1);
        gm_put_label(b, "name", gm_xids[i].name, 1);
        gm_put_label(b, "severity", gm_xids[i].sev, 1);
        gm_put_label(b, "Hostname", gm_hosts[gm_xids[i].host].name, 1);
        buf_printf(b, "} %llu\n", (unsigned long long)gm_xids[i].n);
    }
    static const char *const an[2] = { "gpulog_anomaly_open", "gpulog_anomaly_risk_score" };
    static const char *const ah[2] = { "1 while an anomaly episode is open (series removed when it ends); action: what to do (anomaly.action).",
                                       "Current 0-100 risk score of an open anomaly episode." };
    for (int k = 0; k < 2; k++) {
        header(b, an[k], "gauge", ah[k]);
        for (size_t i = 0; i < gm_nanoms; i++) {
            const struct gm_anom *a = &gm_anoms[i];
            char gpu[16] = "", sev[8];
            if (a->gpu >= 0) snprintf(gpu, sizeof gpu, "%d", a->gpu);
            snprintf(sev, sizeof sev, "%d", a->sev);
            buf_puts(b, an[k]);
            buf_putc(b, '{');
            gm_put_label(b, "rule_id", a->rule, 0);
            gm_put_label(b, "severity", sev, 1);
            gm_put_label(b, "gpu", gpu, 1);
            gm_put_label(b, "Hostname", gm_hosts[a->host].name, 1);
            gm_put_label(b, "metric", a->metric, 1);
            gm_put_label(b, "action", a->action, 1);
            buf_puts(b, "} ");
            put_value(b, k ? a->risk : 1);
        }
    }
    header(b, "gpulog_gpu_series_dropped_total", "counter", "Anomaly and Xid series not kept because their table was full, by table.");
    buf_printf(b, "gpulog_gpu_series_dropped_total{table=\"anomaly\"} %llu\n", (unsigned long long)gm_anoms_dropped);
    buf_printf(b, "gpulog_gpu_series_dropped_total{table=\"xid\"} %llu\n", (unsigned long long)gm_xid_dropped);
    free(live);
    pthread_mutex_unlock(&gm_mu);
}

