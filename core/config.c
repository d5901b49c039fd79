/*
 * config.c - the configuration table (one row per key: path, type,
 * default, field, help) and the lookups into it: by path, environment
 * names, "did you mean" suggestions. The rest of the configuration works
 * from this table: values (config_value.c), the YAML loader
 * (config_load.c), the layers (config_apply.c), config print
 * (config_print.c) and docs/configuration.md (config_docs.c).
 */
#include "config_int.h"

#include <ctype.h>
#include <string.h>

/* ------------------------------------------------------------------ table */

#define O(f) offsetof(struct gpulog_config, f)
#define S(f) offsetof(struct config_source, f)
#define FLAG(letter, name, arg) { letter, name, arg }
#define NOFLAG { 0, NULL, NULL }

const struct config_key cfg_table[] = {
    { "host", CONFIG_STR, "", O(host), NULL, 0, FLAG('H', "host", "NAME"),
      "host.name written into every event; empty = this machine's host name" },
    { "tz", CONFIG_STR, "", O(tz), NULL, 0, FLAG(0, "tz", "ZONE"),
      "time zone of the timestamps the tools print (nvidia-smi dmon -o DT writes local time), "
      "e.g. UTC or Europe/Berlin; empty = the process's local zone (TZ)" },
    { "year", CONFIG_INT, "0", O(year), NULL, 0, FLAG(0, "year", "YYYY"),
      "year of syslog times (\"Mar  4 02:11:10\" carries none), 1970..9999; 0 = inferred: the year of the "
      "read time (run FILE: of FILE's modification time), or the year before when that puts a line more than a day ahead" },
    { "map", CONFIG_MAP, "{}", O(map), NULL, 0, FLAG(0, "map", "COL=FIELD"),
      "columns of CSV-like inputs (CSV, query CSV, JSON lines, W&B) named as a schema field, for what no rule "
      "can guess: COL=FIELD, e.g. temp_f=gpu.temperature.gpu or job=labels.job; COL compared without case, "
      "separators or brackets; FIELD a gpu.* field, gpu.index, host.name, @timestamp, metrics.NAME or labels.NAME; "
      "the unit in COL's name still converts (mem_gib=gpu.memory.framebuffer.used_size)" },
    { "labels", CONFIG_MAP, "{}", O(labels), NULL, 0, FLAG(0, "label", "NAME=VALUE"),
      "static labels of this node added to every event as labels.NAME (NAME: lower case letters, digits, '_'), so "
      "Elasticsearch queries and the fleet stage can filter and group by them: e.g. rack=r12, slurm_cluster=c1, "
      "slurm_partition=gpu; in Kubernetes the collector's manifest (deploy/kubernetes) sets GPULOG_LABELS to "
      "k8s_node, k8s_pod and k8s_namespace from the downward API, comma separated; a value the input's own row "
      "sets wins" },
    { "log.level", CONFIG_ENUM, "info", O(log.level), "debug|info|warn|error", 0, NOFLAG,
      "least severe log level written to stderr" },
    { "log.format", CONFIG_ENUM, "logfmt", O(log.format), "logfmt|json", 0, NOFLAG,
      "log line format on stderr; repeated messages are rate-limited with a count either way" },
    { "sources", CONFIG_SOURCES, "[]", O(sources), NULL, 0, NOFLAG,
      "inputs of collect; run reads its FILE, stdin or --exec, else the one file or exec item here: a list of {type, command|path, format} items (see below); "
      "source flags on the command line replace this list" },
    { "kafka.brokers", CONFIG_STR, "", O(kafka.brokers), NULL, 0, FLAG('b', "brokers", "LIST"),
      "bootstrap servers, host:port[,host:port...]; empty = no Kafka (collect writes NDJSON to stdout)" },
    { "kafka.topics.metrics", CONFIG_STR, "gpu.metrics", O(kafka.topic_metrics), NULL, 0, FLAG('t', "topic", "T"),
      "topic of metric events (dmon, query, pmon, dcgmi samples)" },
    { "kafka.topics.events", CONFIG_STR, "gpu.events", O(kafka.topic_events), NULL, 0, FLAG(0, "events-topic", "T"),
      "topic of kernel events (Xid, SXid)" },
    { "kafka.topics.anomalies", CONFIG_STR, "gpu.anomalies", O(kafka.topic_anomalies), NULL, 0, FLAG('a', "anomalies-topic", "T"),
      "topic of detect's anomaly records (fleet reads it); detect produces to Kafka only when started with --anomalies-topic T (T replaces this value)" },
    { "kafka.topics.fleet", CONFIG_STR, "gpu.fleet", O(kafka.topic_fleet), NULL, 0, FLAG(0, "fleet-topic", "T"),
      "topic of fleet's fleet incident records; fleet produces to Kafka only when started with --fleet-topic T (T replaces this value)" },
    { "kafka.topics.deadletter", CONFIG_STR, "gpu.deadletter", O(kafka.topic_deadletter), NULL, 0, NOFLAG,
      "topic of documents Elasticsearch rejected for good (when elasticsearch.deadletter is kafka)" },
    { "kafka.topics.state", CONFIG_STR, "", O(kafka.topic_state), NULL, 0, FLAG(0, "state-topic", "T"),
      "topic of detect's detector state snapshots (fleet: its correlator's), one per input partition (compacted, one partition; "
      "docs/operations.md): a partition that moves or a member that restarts goes on warm; empty = none" },
    { "kafka.group", CONFIG_STR, "gpulog-detect", O(kafka.group), NULL, 0, FLAG('g', "group", "G"),
      "consumer group of detect" },
    { "kafka.properties", CONFIG_MAP, "{}", O(kafka.properties), NULL, 0, FLAG('X', NULL, "key=value"),
      "any librdkafka property (TLS, SASL, tuning), applied after gpulog's own producer/consumer "
      "settings, like -X key=value; values whose key names a password or secret are masked by config print" },
    { "detect.profile", CONFIG_ENUM, "auto", O(detect.profile), "auto|gpu|generic", 0, FLAG('p', "profile", "NAME"),
      "built-in detector profile: gpu (GPU rules, Xid), generic (any numeric metric) or auto (run: generic "
      "when the input carries no GPU fields, else gpu; detect: gpu)" },
    { "detect.config", CONFIG_STR, "", O(detect.config), NULL, 0, FLAG('d', "detectors", "FILE"),
      "detector configuration file (YAML or JSON); empty = the built-in profile; reloaded on SIGHUP" },
    { "fleet.group", CONFIG_STR, "gpulog-fleet", O(fleet.group), NULL, 0, NOFLAG,
      "consumer group of fleet (fleet's --group G sets it; one member: it correlates what it reads)" },
    { "fleet.window", CONFIG_DURATION, "10m", O(fleet.window_ms), NULL, 0, FLAG(0, "window", "D"),
      "fleet: GPU incidents of one signature and group that start within this span correlate (1s..7d)" },
    { "fleet.min_hosts", CONFIG_INT, "3", O(fleet.min_hosts), NULL, 0, FLAG(0, "min-hosts", "N"),
      "fleet: a fleet incident needs its GPUs on at least this many hosts" },
    { "fleet.min_gpus", CONFIG_INT, "8", O(fleet.min_gpus), NULL, 0, FLAG(0, "min-gpus", "N"),
      "fleet: and at least this many GPUs" },
    { "fleet.group_by", CONFIG_STR, "rack,switch,cluster,slurm_cluster", O(fleet.group_by), NULL, 0,
      FLAG(0, "group-by", "LABELS"),
      "fleet: topology labels (labels.NAME of the incident records), comma-separated: GPUs are grouped by the "
      "first one present, else by time alone; empty = time alone" },
    { "fleet.change_interval", CONFIG_DURATION, "60s", O(fleet.change_ms), NULL, 0, NOFLAG,
      "fleet: a change record (more GPUs joined) at most this often, and once the growth pauses" },
    { "fleet.hold", CONFIG_DURATION, "2m", O(fleet.hold_ms), NULL, 0, FLAG(0, "hold", "D"),
      "fleet: a fleet incident ends this long after the last of its GPU incidents ended" },
    { "fleet.expire", CONFIG_DURATION, "6h", O(fleet.expire_ms), NULL, 0, NOFLAG,
      "fleet: or after this long without a start or end of one of its GPU incidents (at least fleet.window)" },
    { "fleet.max_keys", CONFIG_INT, "1024", O(fleet.max_keys), NULL, 0, NOFLAG,
      "fleet: (signature, group) pairs tracked; a new one past it forgets the least recently used (ending its fleet incident)" },
    { "fleet.max_members", CONFIG_INT, "65536", O(fleet.max_members), NULL, 0, NOFLAG,
      "fleet: GPU incidents tracked (about 150 bytes each); past it the oldest not in a fleet incident is forgotten" },
    { "elasticsearch.url", CONFIG_STR, "", O(es.url), NULL, CONFIG_F_URL, NOFLAG,
      "Elasticsearch or OpenSearch URL, http(s)://host:port; empty = no Elasticsearch output" },
    { "elasticsearch.namespace", CONFIG_STR, "default", O(es.ns), NULL, CONFIG_F_NAMESPACE, NOFLAG,
      "data stream namespace: logs-gpu.anomaly-<namespace>, logs-gpu.xid-<namespace>, metrics-gpu.dmon-<namespace>" },
    { "elasticsearch.index_metrics", CONFIG_BOOL, "false", O(es.index_metrics), NULL, 0, NOFLAG,
      "also index every metric sample (metrics-gpu.dmon-*), not only anomalies and kernel events" },
    { "elasticsearch.user", CONFIG_STR, "", O(es.user), NULL, 0, NOFLAG,
      "basic-auth user" },
    { "elasticsearch.password", CONFIG_STR, "", O(es.password), NULL, 0, NOFLAG,
      "basic-auth password; prefer password_file or the environment variable (never printed)" },
    { "elasticsearch.password_file", CONFIG_STR, "", O(es.password_file), NULL, 0, NOFLAG,
      "file holding the basic-auth password (first line)" },
    { "elasticsearch.api_key", CONFIG_STR, "", O(es.api_key), NULL, 0, NOFLAG,
      "API key (the base64 id:key form); prefer api_key_file or the environment variable (never printed)" },
    { "elasticsearch.api_key_file", CONFIG_STR, "", O(es.api_key_file), NULL, 0, NOFLAG,
      "file holding the API key (first line)" },
    { "elasticsearch.ca_file", CONFIG_STR, "", O(es.ca_file), NULL, 0, NOFLAG,
      "CA bundle (PEM) to verify the server; empty = the system store" },
    { "elasticsearch.cert_file", CONFIG_STR, "", O(es.cert_file), NULL, 0, NOFLAG,
      "client certificate (PEM) for mutual TLS" },
    { "elasticsearch.key_file", CONFIG_STR, "", O(es.key_file), NULL, 0, NOFLAG,
      "client private key (PEM) for mutual TLS" },
    { "elasticsearch.deadletter", CONFIG_STR, "", O(es.deadletter), NULL, 0, NOFLAG,
      "where documents rejected for good go, with the reason: a file path; empty = the command's default "
      "(see its --help); kafka (kafka.topics.deadletter) is accepted but not implemented yet: detect and run then "
      "write them to stderr" },
    { "elasticsearch.batch_bytes", CONFIG_SIZE, "5MiB", O(es.batch_bytes), NULL, 0, NOFLAG,
      "send a _bulk request when its body reaches this size" },
    { "elasticsearch.batch_age", CONFIG_DURATION, "250ms", O(es.batch_age_ms), NULL, 0, NOFLAG,
      "or when its oldest document is this old (250 ms keeps an anomaly's line-to-searchable p99 under 2 s; "
      "under load batches fill by size first)" },
    { "elasticsearch.max_pending_bytes", CONFIG_SIZE, "64MiB", O(es.max_pending_bytes), NULL, 0, NOFLAG,
      "unsettled documents held in memory before consumption pauses (backpressure); honoured as given: "
      "below batch_bytes, bulk requests shrink to half of it" },
    { "state_dir", CONFIG_STR, "/var/lib/gpulog", O(state_dir), NULL, 0, FLAG('s', "state-dir", "DIR"),
      "checkpoints and the on-disk spool (collect); must be writable and survive restarts" },
    { "metrics_addr", CONFIG_ADDR, "", O(metrics_addr), NULL, 0, FLAG(0, "metrics-addr", "HOST:PORT"),
      "HOST:PORT of the Prometheus /metrics, /healthz and /readyz endpoint, e.g. 0.0.0.0:9477; empty = off" },
    { "gpu_metrics", CONFIG_ENUM, "auto", O(gpu_metrics), "auto|on|off", 0, NOFLAG,
      "GPU metrics on /metrics under dcgm-exporter's names (DCGM_FI_DEV_GPU_TEMP{gpu,UUID,Hostname,...}); "
      "auto = on for collect and run, off for detect (which may see a whole fleet)" },
    { "gpu_metrics_stale_periods", CONFIG_INT, "3", O(gpu_metrics_stale_periods), NULL, 0, NOFLAG,
      "a GPU that missed this many of its sample periods leaves /metrics and gpulog_gpu_up turns 0 (at least 1)" },
    { "gpu_metrics_max_gpus", CONFIG_INT, "16384", O(gpu_metrics_max_gpus), NULL, 0, NOFLAG,
      "GPUs held in the /metrics table (about 1 KiB each); new GPUs past it reuse a silent GPU's row or are counted in gpulog_gpu_rows_dropped_total" },
    { "shutdown_timeout", CONFIG_DURATION, "10s", O(shutdown_timeout_ms), NULL, 0, FLAG(0, "shutdown-timeout", "S"),
      "on SIGTERM/SIGINT/SIGQUIT: stop reading, deliver, checkpoint or commit, and exit within this deadline" },
    { "collect.spool_max", CONFIG_SIZE, "256MiB", O(collect.spool_max), NULL, 0, FLAG(0, "spool-max", "N"),
      "on-disk spool budget of collect (at least 1MiB); above it, commands and stdin are not read until it drains" },
    { "collect.stale_after", CONFIG_DURATION, "0", O(collect.stale_after_ms), NULL, 0, FLAG(0, "stale-after", "S"),
      "restart an --exec command that printed no usable line for this long; 0 = max(3 sample periods, 10s)" },
    { "collect.rotate_max_generations", CONFIG_INT, "64", O(collect.rotate_max_generations), NULL, 0, FLAG(0, "rotate-max-generations", "N"),
      "file sources: rotated generations (NAME.1, NAME-DATE, copytruncate copies) read after falling behind or a stop, oldest first; older unread ones are reported as lost (reason too_many)" },
    { "collect.rotate_max_age", CONFIG_DURATION, "7d", O(collect.rotate_max_age_ms), NULL, 0, FLAG(0, "rotate-max-age", "D"),
      "file sources: unread rotated generations last written longer ago than this are not read and are reported as lost (reason too_old)" },
    { "collect.stats_interval", CONFIG_DURATION, "60s", O(collect.stats_interval_ms), NULL, 0, FLAG(0, "stats-interval", "S"),
      "collect logs a stats line this often; 0 = off" },
};
const size_t cfg_ntable = GL_ARRAY_LEN(cfg_table);

const struct config_key cfg_source_table[] = {
    { "type", CONFIG_ENUM, "", S(type), "exec|file|kmsg|stdin", 0, NOFLAG,
      "exec: run a command and read its stdout; file: tail a file or glob; kmsg: kernel log; stdin" },
    { "command", CONFIG_STR, "", S(command), NULL, 0, NOFLAG,
      "exec only: the command line, split into words (no shell), e.g. nvidia-smi dmon -o DT -s pucvmet" },
    { "path", CONFIG_STR, "", S(path), NULL, 0, NOFLAG,
      "file: path or glob (required); kmsg: device or saved kernel log (default /dev/kmsg)" },
    { "format", CONFIG_STR, "auto", S(format), NULL, 0, NOFLAG,
      "input format: auto or a gpulog parse --format name (dmon, dmon-csv, query-csv, csv, pmon, dcgmi, kmsg)" },
};
const size_t cfg_nsource_table = GL_ARRAY_LEN(cfg_source_table);

/* Environment names kept for compatibility with the flags of the
 * Elasticsearch sink (sinks/es_cli.c); the GPULOG_<SECTION>_<KEY> name wins
 * when both are set. */
static const struct { const char *path, *env; } env_aliases[] = {
    { "elasticsearch.password", "GPULOG_ES_PASSWORD" },
    { "elasticsearch.api_key", "GPULOG_ES_API_KEY" },
};

const char *cfg_env_alias(const char *path)
{
    for (size_t i = 0; i < GL_ARRAY_LEN(env_aliases); i++)
        if (!strcmp(env_aliases[i].path, path)) return env_aliases[i].env;
    return NULL;
}

const struct config_key *config_keys(size_t *n)
{
    *n = cfg_ntable;
    return cfg_table;
}

const struct config_key *config_source_keys(size_t *n)
{
    *n = cfg_nsource_table;
    return cfg_source_table;
}

const struct config_key *config_key_find(const char *path)
{
    for (size_t i = 0; i < cfg_ntable; i++)
        if (!strcmp(cfg_table[i].path, path)) return &cfg_table[i];
    return NULL;
}

void config_env_name(const char *path, char *out, size_t outlen)
{
    size_t j = 0;
    const char *pre = "GPULOG_";
    for (; *pre && j + 1 < outlen; pre++) out[j++] = *pre;
    for (; *path && j + 1 < outlen; path++)
        out[j++] = (*path == '.') ? '_' : (char)toupper((unsigned char)*path);
    if (outlen) out[j < outlen ? j : outlen - 1] = '\0';
}

/* ----------------------------------------------------------- did you mean */

const char *cfg_last_part(const char *p)
{
    const char *d = strrchr(p, '.');
    return d ? d + 1 : p;
}

/* Suggests the closest key path in table t (or "" if none is close). */
const char *cfg_suggest(const struct config_key *t, size_t n, const char *path)
{
    const char *best = NULL;
    size_t bestd = 99;
    for (size_t i = 0; i < n; i++) {
        size_t d = gl_edit_distance(path, t[i].path);
        /* the right key put in the wrong section: brokers -> kafka.brokers */
        if (!strcmp(cfg_last_part(path), cfg_last_part(t[i].path))) d = d < 2 ? d : 2;
        if (d < bestd) { bestd = d; best = t[i].path; }
    }
    size_t len = strlen(path);
    size_t limit = len <= 4 ? 1 : len <= 10 ? 2 : 3;
    return best && bestd <= limit ? best : "";
}
