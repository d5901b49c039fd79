/*
 * gpumetrics.h - the latest value of every GPU metric gpulog parsed, per
 * (host, GPU), and the open anomaly episodes, rendered on /metrics under
 * dcgm-exporter's names, types and labels (DCGM_FI_DEV_GPU_TEMP{gpu, UUID,
 * pci_bus_id, device, modelName, Hostname}, ...) so that dashboards and
 * alert rules written for dcgm-exporter work unchanged; metrics dcgm-exporter
 * lacks are gpulog_gpu_*. The mapping table is in gpumetrics.c and in
 * docs/operations.md.
 *
 * A GPU whose last sample is older than stale_periods sample periods (its
 * own period, learnt from consecutive sample times; wall clock since the
 * sample arrived, or event time behind the newest sample of its host) is
 * left out of the exposition, and gpulog_gpu_up{...} 0 says so.
 *
 * Bounds: at most max_gpus GPU rows (about 1 KiB each, allocated as
 * they appear); when the table is full a stale row is reused, else the new
 * GPU is counted in gpulog_gpu_rows_dropped_total and not shown. At most
 * GM_MAX_ANOMALIES open anomaly series and GM_MAX_XID Xid count series; past
 * those, new series are counted as dropped. Label values are truncated
 * (host 63 bytes, name 63, UUID 47).
 *
 * Thread-safety: every call takes one mutex; the /metrics thread renders
 * while the command's thread observes.
 * Ownership: process-global state; events are read, never kept.
 */
#ifndef GPULOG_GPUMETRICS_H
#define GPULOG_GPUMETRICS_H

#include <stddef.h>
#include <stdint.h>

struct event;
struct buf;

#define GM_MAX_ANOMALIES 4096
#define GM_MAX_XID 1024

/* Turns the GPU table on or off and sets its bounds. mode is the
 * gpu_metrics config value ("auto", "on", "off"): auto means default_on
 * (collect and run: on; detect: off). stale_periods >= 1, max_gpus >= 1. */
void gpumetrics_configure(const char *mode, int default_on, int64_t stale_periods, int64_t max_gpus);
/* The same from the configuration (gpu_metrics, gpu_metrics_stale_periods,
 * gpu_metrics_max_gpus); with metrics_addr empty nothing is kept at all (no
 * server, nobody to scrape: no cost per event). GL_ERROR with the reason in
 * err for a bad bound. */
struct gpulog_config;
int gpumetrics_setup(const struct gpulog_config *cfg, int default_on, char *err, size_t errlen);
int gpumetrics_enabled(void);

/* Feeds one event: GPU metric samples update their row, Xid/SXid events
 * count by code and severity (always, even with the GPU table off). Anomaly
 * records (dataset gpu.anomaly) are passed on to gpumetrics_record. */
void gpumetrics_observe(const struct event *ev);
/* Feeds one anomaly record (event.type start/change/end): keeps
 * gpulog_anomaly_open / gpulog_anomaly_risk_score of open episodes and
 * counts starts in gpulog_anomalies_total{rule_id}. */
void gpumetrics_record(const struct event *rec);

/* Appends every family in Prometheus text format 0.0.4; now_ms is the
 * wall clock used for staleness. */
void gpumetrics_render(struct buf *out, int64_t now_ms);

/* Rows in use, and how many GPUs are shown (up) at now_ms (tests, bench). */
size_t gpumetrics_rows(void);
size_t gpumetrics_up(int64_t now_ms);

/* Forgets everything and turns the GPU table off (tests only). */
void gpumetrics_reset(void);

#endif
