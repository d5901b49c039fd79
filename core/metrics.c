/*
 * metrics.c - the metric registry (static atomics) and its Prometheus text
 * rendering. The HTTP server is in httpd.c.
 */
#include "metrics.h"
#include "gpumetrics.h"
#include "common.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

enum metric_type { MT_COUNTER, MT_GAUGE };

struct family {
    const char *name;
    enum metric_type type;
    const char *label;      /* label name, NULL = unlabelled */
    const char *help;
};

/* One table: names follow Prometheus conventions (_total for counters,
 * base units in the name). */
static const struct family families[M__COUNT] = {
    [M_LINES_READ] = { "gpulog_lines_read_total", MT_COUNTER, NULL,
        "Input lines read from all sources (files, commands, kernel log, stdin, Kafka messages)." },
    [M_LINES_REJECTED] = { "gpulog_lines_rejected_total", MT_COUNTER, "reason",
        "Input lines that could not be parsed, by reason; they are skipped, counted and logged (rate-limited)." },
    [M_EVENTS_PRODUCED] = { "gpulog_events_produced_total", MT_COUNTER, NULL,
        "Events acknowledged by the output (Kafka broker, Elasticsearch or the NDJSON file)." },
    [M_DELIVERY_ERRORS] = { "gpulog_delivery_errors_total", MT_COUNTER, NULL,
        "Delivery attempts that failed (broker or server unreachable, timeouts); each is retried, nothing is dropped." },
    [M_SPOOL_BYTES] = { "gpulog_spool_bytes", MT_GAUGE, NULL,
        "Bytes held in the on-disk spool while Kafka is unreachable." },
    [M_CONSUMER_LAG] = { "gpulog_consumer_lag_messages", MT_GAUGE, NULL,
        "Messages between the committed offsets and the end of the assigned partitions (sum)." },
    [M_ANOMALIES_OPEN] = { "gpulog_anomalies_open", MT_GAUGE, NULL,
        "Anomaly episodes currently open (started, not yet resolved)." },
    [M_ANOMALIES] = { "gpulog_anomalies_total", MT_COUNTER, "rule_id",
        "Anomaly episodes opened since start, by detector rule." },
    [M_BULK_RETRIES] = { "gpulog_bulk_retries_total", MT_COUNTER, NULL,
        "Documents re-sent to Elasticsearch after a 429, a 5xx or a connection error." },
    [M_DEADLETTERS] = { "gpulog_deadletters_total", MT_COUNTER, NULL,
        "Documents rejected for good and written to the dead letter with their reason." },
    [M_CHILD_RESTARTS] = { "gpulog_child_restarts_total", MT_COUNTER, NULL,
        "Restarts of --exec children (exited, or stale: printed nothing for too long)." },
    [M_CONFIG_RELOADS] = { "gpulog_config_reloads_total", MT_COUNTER, "result",
        "Detector configuration reloads on SIGHUP, by result (ok, error: the old configuration stays)." },
    [M_FILES_LOST] = { "gpulog_files_lost_total", MT_COUNTER, "reason",
        "Generations of followed files (rotated files, copytruncate copies) that were not read or not read to their end, by reason: deleted, compressed, truncated, too_old, too_many." },
    [M_BYTES_LOST] = { "gpulog_bytes_lost_total", MT_COUNTER, "reason",
        "Bytes of followed files never read, by reason, where the extent is known (a deleted file's unread size is not)." },
    [M_LINES_LOST] = { "gpulog_lines_lost_total", MT_COUNTER, "reason",
        "Lines of followed files never read, by reason, where they could still be counted (files skipped by the too_old and too_many bounds)." },
    [M_FIELDS_DROPPED] = { "gpulog_fields_dropped_total", MT_COUNTER, NULL,
        "Fields of consumed events dropped because their key was new once 65536 distinct field keys had been seen (bounded memory on hostile topics)." },
    [M_SAMPLES_DROPPED] = { "gpulog_samples_dropped_total", MT_COUNTER, "reason",
        "Metric samples the detectors did not take, by reason: out_of_order (before the tolerance), too_far_ahead (past the GPU's newest sample by more than max(6 h, 100 intervals)), duplicate." },
    [M_CLOCK_STEPS] = { "gpulog_clock_steps_total", MT_COUNTER, NULL,
        "GPUs whose event time stepped (5 consistent samples outside the expected range): their series re-anchored at the new time and their windows started over." },
    [M_SAMPLES_FOLDED] = { "gpulog_samples_folded_total", MT_COUNTER, NULL,
        "Rows of a GPU folded into the sample of their resolution step (several rows within one stamp, or sampling faster than the profile's resolution_ms): averaged, not dropped." },
    [M_STATE_SNAPSHOTS] = { "gpulog_state_snapshots_total", MT_COUNTER, "result",
        "Detector state snapshots of partitions (detect --state-topic), by result: written, restored (the partition went on warm), refused (damaged, another profile or build: it started cold), unused (ahead of or too far behind the committed offset: cold), incomplete (a chunk of a large snapshot missing or damaged in the state topic: cold)." },
    [M_STATE_SNAPSHOT_BYTES] = { "gpulog_state_snapshot_bytes_total", MT_COUNTER, NULL,
        "Bytes of detector state snapshots written to the state topic (the Kafka traffic they add)." },
    [M_GPUS_EVICTED] = { "gpulog_gpus_evicted_total", MT_COUNTER, "reason",
        "GPUs whose detector state was dropped to make room at max_series, by reason: idle (no sample for idle_evict_s), max_series (still reporting: max_series is below the active series, so the detectors track fewer GPUs, each starting cold again)." },
    [M_FILES_WAITING_FD] = { "gpulog_files_waiting_descriptor", MT_GAUGE, NULL,
        "Followed files that wait for a file descriptor: every descriptor of the budget (RLIMIT_NOFILE less a reserve) is held by a file being read; they are read as soon as one is free, never skipped." },
    [M_FD_WAITS] = { "gpulog_descriptor_waits_total", MT_COUNTER, NULL,
        "Times a followed file had to wait for a file descriptor (see gpulog_files_waiting_descriptor)." },
    [M_HTTP_EVICTED] = { "gpulog_http_connections_evicted_total", MT_COUNTER, NULL,
        "Connections to the metrics endpoint closed to make room for a new one at the connection limit (the oldest without a request first, then the slowest reader): /healthz and /readyz always get in." },
};

struct series {
    char label[64];
    _Atomic int64_t v;
};

struct labelled {
    _Atomic size_t n;                          /* published series */
    struct series s[METRICS_MAX_SERIES];
};

static _Atomic int64_t plain[M__COUNT];
static struct labelled *lab[M__COUNT];         /* allocated on first use */
static pthread_mutex_t lab_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int ready_flag;
static int64_t start_ms;

__attribute__((constructor)) static void metrics_start_time(void)
{
    start_ms = gl_now_ms();
}

static struct labelled *lab_get(enum metric_id id)
{
    struct labelled *l = __atomic_load_n(&lab[id], __ATOMIC_ACQUIRE);
    if (l) return l;
    pthread_mutex_lock(&lab_mu);
    l = lab[id];
    if (!l) {
        l = xcalloc(1, sizeof *l);
        __atomic_store_n(&lab[id], l, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&lab_mu);
    return l;
}

/* Finds or adds the series of label v; the last slot is "other". */
static struct series *series_of(enum metric_id id, const char *v)
{
    struct labelled *l = lab_get(id);
    if (!v) v = "";
    size_t n = atomic_load_explicit(&l->n, memory_order_acquire);
    for (size_t i = 0; i < n; i++)
        if (!strncmp(l->s[i].label, v, sizeof l->s[i].label - 1)) return &l->s[i];
    pthread_mutex_lock(&lab_mu);
    n = atomic_load_explicit(&l->n, memory_order_relaxed);
    struct series *s = NULL;
    for (size_t i = 0; i < n && !s; i++)
        if (!strncmp(l->s[i].label, v, sizeof l->s[i].label - 1)) s = &l->s[i];
    if (!s && n >= METRICS_MAX_SERIES - 1) v = "other";   /* the last slot */
    for (size_t i = 0; i < n && !s; i++)
        if (!strcmp(l->s[i].label, v)) s = &l->s[i];
    if (!s && n >= METRICS_MAX_SERIES) s = &l->s[METRICS_MAX_SERIES - 1];   /* cannot happen */
    if (!s) {
        s = &l->s[n];
        snprintf(s->label, sizeof s->label, "%s", v);
        atomic_store_explicit(&s->v, 0, memory_order_relaxed);
        atomic_store_explicit(&l->n, n + 1, memory_order_release);
    }
    pthread_mutex_unlock(&lab_mu);
    return s;
}

void metrics_add(enum metric_id id, uint64_t n)
{
    if ((unsigned)id >= M__COUNT) return;
    if (families[id].label) { metrics_add_label(id, NULL, n); return; }
    atomic_fetch_add_explicit(&plain[id], (int64_t)n, memory_order_relaxed);
}

void metrics_add_label(enum metric_id id, const char *label, uint64_t n)
{
    if ((unsigned)id >= M__COUNT) return;
    if (!families[id].label) { atomic_fetch_add_explicit(&plain[id], (int64_t)n, memory_order_relaxed); return; }
    atomic_fetch_add_explicit(&series_of(id, label)->v, (int64_t)n, memory_order_relaxed);
}

void metrics_set(enum metric_id id, int64_t v)
{
    if ((unsigned)id >= M__COUNT || families[id].label) return;
    atomic_store_explicit(&plain[id], v, memory_order_relaxed);
}

void metrics_gauge_add(enum metric_id id, int64_t delta)
{
    if ((unsigned)id >= M__COUNT || families[id].label) return;
    atomic_fetch_add_explicit(&plain[id], delta, memory_order_relaxed);
}

int64_t metrics_get(enum metric_id id, const char *label)
{
    if ((unsigned)id >= M__COUNT) return 0;
    if (!families[id].label) return atomic_load_explicit(&plain[id], memory_order_relaxed);
    struct labelled *l = __atomic_load_n(&lab[id], __ATOMIC_ACQUIRE);
    if (!l) return 0;
    if (!label) label = "";
    size_t n = atomic_load_explicit(&l->n, memory_order_acquire);
    for (size_t i = 0; i < n; i++)
        if (!strncmp(l->s[i].label, label, sizeof l->s[i].label - 1))
            return atomic_load_explicit(&l->s[i].v, memory_order_relaxed);
    return 0;
}

void metrics_set_ready(int ready)
{
    atomic_store(&ready_flag, ready ? 1 : 0);
}

int metrics_ready(void)
{
    return atomic_load(&ready_flag);
}

void metrics_reset(void)
{
    pthread_mutex_lock(&lab_mu);
    for (int i = 0; i < M__COUNT; i++) {
        atomic_store(&plain[i], 0);
        if (lab[i]) atomic_store(&lab[i]->n, 0);
    }
    pthread_mutex_unlock(&lab_mu);
    atomic_store(&ready_flag, 0);
}

/* Label values escape \, " and newline (text format 0.0.4). */
static void put_label_value(struct buf *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\') buf_puts(b, "\\\\");
        else if (*s == '"') buf_puts(b, "\\\"");
        else if (*s == '\n') buf_puts(b, "\\n");
        else buf_putc(b, *s);
    }
}

static void put_header(struct buf *b, const char *name, const char *type, const char *help)
{
    buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void metrics_render(struct buf *out)
{
    for (int i = 0; i < M__COUNT; i++) {
        const struct family *f = &families[i];
        put_header(out, f->name, f->type == MT_COUNTER ? "counter" : "gauge", f->help);
        if (!f->label) {
            buf_printf(out, "%s %lld\n", f->name, (long long)atomic_load_explicit(&plain[i], memory_order_relaxed));
            continue;
        }
        struct labelled *l = __atomic_load_n(&lab[i], __ATOMIC_ACQUIRE);
        size_t n = l ? atomic_load_explicit(&l->n, memory_order_acquire) : 0;
        for (size_t j = 0; j < n; j++) {
            buf_printf(out, "%s{%s=\"", f->name, f->label);
            put_label_value(out, l->s[j].label);
            buf_printf(out, "\"} %lld\n", (long long)atomic_load_explicit(&l->s[j].v, memory_order_relaxed));
        }
    }
    gpumetrics_render(out, gl_now_ms());
    put_header(out, "gpulog_build_info", "gauge", "Always 1; the version label says which gpulog runs.");
    buf_puts(out, "gpulog_build_info{version=\"");
    put_label_value(out, GPULOG_VERSION);
    buf_puts(out, "\"} 1\n");
    put_header(out, "gpulog_ready", "gauge", "1 when /readyz answers 200 (inputs open, outputs connected), else 0.");
    buf_printf(out, "gpulog_ready %d\n", metrics_ready());
    put_header(out, "process_start_time_seconds", "gauge", "Start time of the process since the Unix epoch in seconds.");
    buf_printf(out, "process_start_time_seconds %lld.%03lld\n", (long long)(start_ms / 1000), (long long)(start_ms % 1000));
    int64_t rss = gl_rss_bytes();
    if (rss >= 0) {
        put_header(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
        buf_printf(out, "process_resident_memory_bytes %lld\n", (long long)rss);
    }
}
