/*
 * metrics.h - gpulog's Prometheus metrics: a fixed registry of counters and
 * gauges that commands only increment, rendered in the text exposition
 * format 0.0.4 (followed by the GPU metrics table of gpumetrics.h), and a small HTTP server (libmicrohttpd, one internal thread)
 * for /metrics, /healthz and /readyz.
 *
 * Every update is one relaxed atomic operation, safe from any thread and
 * from the delivery-report callbacks of librdkafka. Families with a label
 * (lines_rejected_total{reason}) keep at most METRICS_MAX_SERIES distinct
 * label values; later new values are counted under "other", so a stream of
 * odd reasons cannot grow memory.
 *
 * Ownership: the registry is process-global and static; label strings are
 * copied. metrics_serve starts one server per process; metrics_stop ends it.
 */
#ifndef GPULOG_METRICS_H
#define GPULOG_METRICS_H

#include <stddef.h>
#include <stdint.h>

enum metric_id {
    M_LINES_READ,          /* counter  gpulog_lines_read_total */
    M_LINES_REJECTED,      /* counter  gpulog_lines_rejected_total{reason} */
    M_EVENTS_PRODUCED,     /* counter  gpulog_events_produced_total */
    M_DELIVERY_ERRORS,     /* counter  gpulog_delivery_errors_total */
    M_SPOOL_BYTES,         /* gauge    gpulog_spool_bytes */
    M_CONSUMER_LAG,        /* gauge    gpulog_consumer_lag_messages */
    M_ANOMALIES_OPEN,      /* gauge    gpulog_anomalies_open */
    M_ANOMALIES,           /* counter  gpulog_anomalies_total{rule_id} */
    M_BULK_RETRIES,        /* counter  gpulog_bulk_retries_total */
    M_DEADLETTERS,         /* counter  gpulog_deadletters_total */
    M_CHILD_RESTARTS,      /* counter  gpulog_child_restarts_total */
    M_CONFIG_RELOADS,      /* counter  gpulog_config_reloads_total{result} */
    M_FILES_LOST,          /* counter  gpulog_files_lost_total{reason} */
    M_BYTES_LOST,          /* counter  gpulog_bytes_lost_total{reason} */
    M_LINES_LOST,          /* counter  gpulog_lines_lost_total{reason} */
    M_FIELDS_DROPPED,      /* counter  gpulog_fields_dropped_total */
    M_SAMPLES_DROPPED,     /* counter  gpulog_samples_dropped_total{reason} */
    M_CLOCK_STEPS,         /* counter  gpulog_clock_steps_total */
    M_SAMPLES_FOLDED,      /* counter  gpulog_samples_folded_total */
    M_STATE_SNAPSHOTS,     /* counter  gpulog_state_snapshots_total{result} */
    M_STATE_SNAPSHOT_BYTES,/* counter  gpulog_state_snapshot_bytes_total */
    M_GPUS_EVICTED,        /* counter  gpulog_gpus_evicted_total{reason} */
    M_FILES_WAITING_FD,    /* gauge    gpulog_files_waiting_descriptor */
    M_FD_WAITS,            /* counter  gpulog_descriptor_waits_total */
    M_HTTP_EVICTED,        /* counter  gpulog_http_connections_evicted_total */
    M__COUNT
};

#define METRICS_MAX_SERIES 32

/* Counters: add n (never negative). For a labelled family without a label,
 * use metrics_add_label. */
void metrics_add(enum metric_id id, uint64_t n);
static inline void metrics_inc(enum metric_id id) { metrics_add(id, 1); }
/* Counters with a label value (e.g. the reason of a rejected line). */
void metrics_add_label(enum metric_id id, const char *label, uint64_t n);
static inline void metrics_inc_label(enum metric_id id, const char *label) { metrics_add_label(id, label, 1); }
/* Gauges: set, or move by a signed delta. */
void metrics_set(enum metric_id id, int64_t v);
void metrics_gauge_add(enum metric_id id, int64_t delta);

/* Current value (tests, and commands that log totals at exit). label NULL
 * for unlabelled families; 0 for a label never seen. */
int64_t metrics_get(enum metric_id id, const char *label);

/* /readyz answers 200 once ready is set (input open, broker metadata
 * fetched, ...), 503 before and after metrics_set_ready(0) at shutdown. */
void metrics_set_ready(int ready);
int metrics_ready(void);

/* Appends the whole registry in Prometheus text format 0.0.4 (# HELP and
 * # TYPE per family, gpulog_build_info{version} and process_start_time_seconds). */
struct buf;
void metrics_render(struct buf *out);

/* Starts the HTTP server on addr ("HOST:PORT", "[V6]:PORT", ":PORT"; port 0
 * picks a free port, see metrics_port). NULL or "" starts nothing and
 * returns GL_OK, so commands can pass cfg.metrics_addr as it is. Returns
 * GL_OK, or GL_ERROR with the reason in err (bad address, address in use). */
int metrics_serve(const char *addr, char *err, size_t errlen);
/* The port the server listens on (0 when not serving). */
int metrics_port(void);
/* Stops the server (no-op when not serving); waits for its thread. */
void metrics_stop(void);

/* Zeroes every value and forgets label values (tests only). */
void metrics_reset(void);

#endif
