/*
 * config.c - the configuration table, the YAML loader (libyaml document
 * API, so every node carries a line and column), environment overrides,
 * config_set for flags, the YAML printer and the Markdown generator.
 */
#include "config.h"
#include "common.h"
#include "yamldoc.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* ------------------------------------------------------------------ table */

#define O(f) offsetof(struct gpulog_config, f)
#define S(f) offsetof(struct config_source, f)

static const struct config_key keys[] = {
    { "host", CONFIG_STR, "", O(host), NULL, 0,
      "host.name written into every event; empty = this machine's host name" },
    { "tz", CONFIG_STR, "", O(tz), NULL, 0,
      "time zone of the timestamps the tools print (nvidia-smi dmon -o DT writes local time), "
      "e.g. UTC or Europe/Berlin; empty = the process's local zone (TZ)" },
    { "year", CONFIG_INT, "0", O(year), NULL, 0,
      "year of syslog times (\"Mar  4 02:11:10\" carries none), 1970..9999; 0 = inferred: the year of the "
      "read time (run FILE: of FILE's modification time), or the year before when that puts a line more than a day ahead" },
    { "log.level", CONFIG_ENUM, "info", O(log.level), "debug|info|warn|error", 0,
      "least severe log level written to stderr" },
    { "log.format", CONFIG_ENUM, "logfmt", O(log.format), "logfmt|json", 0,
      "log line format on stderr; repeated messages are rate-limited with a count either way" },
    { "sources", CONFIG_SOURCES, "[]", O(sources), NULL, 0,
      "inputs of collect; run reads its FILE, stdin or --exec, else the one file or exec item here: a list of {type, command|path, format} items (see below); "
      "source flags on the command line replace this list" },
    { "kafka.brokers", CONFIG_STR, "", O(kafka.brokers), NULL, 0,
      "bootstrap servers, host:port[,host:port...]; empty = no Kafka (collect writes NDJSON to stdout)" },
    { "kafka.topics.metrics", CONFIG_STR, "gpu.metrics", O(kafka.topic_metrics), NULL, 0,
      "topic of metric events (dmon, query, pmon, dcgmi samples)" },
    { "kafka.topics.events", CONFIG_STR, "gpu.events", O(kafka.topic_events), NULL, 0,
      "topic of kernel events (Xid, SXid)" },
    { "kafka.topics.anomalies", CONFIG_STR, "gpu.anomalies", O(kafka.topic_anomalies), NULL, 0,
      "topic of detect's anomaly records; detect produces to Kafka only when started with --anomalies-topic T (T replaces this value)" },
    { "kafka.topics.deadletter", CONFIG_STR, "gpu.deadletter", O(kafka.topic_deadletter), NULL, 0,
      "topic of documents Elasticsearch rejected for good (when elasticsearch.deadletter is kafka)" },
    { "kafka.group", CONFIG_STR, "gpulog-detect", O(kafka.group), NULL, 0,
      "consumer group of detect" },
    { "kafka.properties", CONFIG_MAP, "{}", O(kafka.properties), NULL, 0,
      "any librdkafka property (TLS, SASL, tuning), applied after gpulog's own producer/consumer "
      "settings, like -X key=value; values whose key names a password or secret are masked by config print" },
    { "detect.profile", CONFIG_ENUM, "auto", O(detect.profile), "auto|gpu|generic", 0,
      "built-in detector profile: gpu (GPU rules, Xid), generic (any numeric metric) or auto (run: generic "
      "when the input carries no GPU fields, else gpu; detect: gpu)" },
    { "detect.config", CONFIG_STR, "", O(detect.config), NULL, 0,
      "detector configuration file (YAML or JSON); empty = the built-in profile; reloaded on SIGHUP" },
    { "elasticsearch.url", CONFIG_STR, "", O(es.url), NULL, 0,
      "Elasticsearch or OpenSearch URL, http(s)://host:port; empty = no Elasticsearch output" },
    { "elasticsearch.namespace", CONFIG_STR, "default", O(es.ns), NULL, 0,
      "data stream namespace: logs-gpu.anomaly-<namespace>, logs-gpu.xid-<namespace>, metrics-gpu.dmon-<namespace>" },
    { "elasticsearch.index_metrics", CONFIG_BOOL, "false", O(es.index_metrics), NULL, 0,
      "also index every metric sample (metrics-gpu.dmon-*), not only anomalies and kernel events" },
    { "elasticsearch.user", CONFIG_STR, "", O(es.user), NULL, 0,
      "basic-auth user" },
    { "elasticsearch.password", CONFIG_STR, "", O(es.password), NULL, CONFIG_F_SECRET,
      "basic-auth password; prefer password_file or the environment variable (never printed)" },
    { "elasticsearch.password_file", CONFIG_STR, "", O(es.password_file), NULL, 0,
      "file holding the basic-auth password (first line)" },
    { "elasticsearch.api_key", CONFIG_STR, "", O(es.api_key), NULL, CONFIG_F_SECRET,
      "API key (the base64 id:key form); prefer api_key_file or the environment variable (never printed)" },
    { "elasticsearch.api_key_file", CONFIG_STR, "", O(es.api_key_file), NULL, 0,
      "file holding the API key (first line)" },
    { "elasticsearch.ca_file", CONFIG_STR, "", O(es.ca_file), NULL, 0,
      "CA bundle (PEM) to verify the server; empty = the system store" },
    { "elasticsearch.cert_file", CONFIG_STR, "", O(es.cert_file), NULL, 0,
      "client certificate (PEM) for mutual TLS" },
    { "elasticsearch.key_file", CONFIG_STR, "", O(es.key_file), NULL, 0,
      "client private key (PEM) for mutual TLS" },
    { "elasticsearch.deadletter", CONFIG_STR, "", O(es.deadletter), NULL, 0,
      "where documents rejected for good go, with the reason: a file path; empty = the command's default "
      "(see its --help); kafka (kafka.topics.deadletter) is accepted but not implemented yet: detect and run then "
      "write them to stderr" },
    { "elasticsearch.batch_bytes", CONFIG_SIZE, "5MiB", O(es.batch_bytes), NULL, 0,
      "send a _bulk request when its body reaches this size" },
    { "elasticsearch.batch_age", CONFIG_DURATION, "1s", O(es.batch_age_ms), NULL, 0,
      "or when its oldest document is this old" },
    { "elasticsearch.max_pending_bytes", CONFIG_SIZE, "64MiB", O(es.max_pending_bytes), NULL, 0,
      "unsettled documents held in memory before consumption pauses (backpressure); honoured as given: "
      "below batch_bytes, bulk requests shrink to half of it" },
    { "state_dir", CONFIG_STR, "/var/lib/gpulog", O(state_dir), NULL, 0,
      "checkpoints and the on-disk spool (collect); must be writable and survive restarts" },
    { "metrics_addr", CONFIG_ADDR, "", O(metrics_addr), NULL, 0,
      "HOST:PORT of the Prometheus /metrics, /healthz and /readyz endpoint, e.g. 0.0.0.0:9477; empty = off" },
    { "gpu_metrics", CONFIG_ENUM, "auto", O(gpu_metrics), "auto|on|off", 0,
      "GPU metrics on /metrics under dcgm-exporter's names (DCGM_FI_DEV_GPU_TEMP{gpu,UUID,Hostname,...}); "
      "auto = on for collect and run, off for detect (which may see a whole fleet)" },
    { "gpu_metrics_stale_periods", CONFIG_INT, "3", O(gpu_metrics_stale_periods), NULL, 0,
      "a GPU that missed this many of its sample periods leaves /metrics and gpulog_gpu_up turns 0 (at least 1)" },
    { "gpu_metrics_max_gpus", CONFIG_INT, "16384", O(gpu_metrics_max_gpus), NULL, 0,
      "GPUs held in the /metrics table (about 1 KiB each); new GPUs past it reuse a silent GPU's row or are counted in gpulog_gpu_rows_dropped_total" },
    { "shutdown_timeout", CONFIG_DURATION, "10s", O(shutdown_timeout_ms), NULL, 0,
      "on SIGTERM/SIGINT: stop reading, deliver, checkpoint or commit, and exit within this deadline" },
    { "collect.spool_max", CONFIG_SIZE, "256MiB", O(collect.spool_max), NULL, 0,
      "on-disk spool budget of collect (at least 1MiB); above it, commands and stdin are not read until it drains" },
    { "collect.stale_after", CONFIG_DURATION, "0", O(collect.stale_after_ms), NULL, 0,
      "restart an --exec command that printed no usable line for this long; 0 = max(3 sample periods, 10s)" },
    { "collect.rotate_max_generations", CONFIG_INT, "64", O(collect.rotate_max_generations), NULL, 0,
      "file sources: rotated generations (NAME.1, NAME-DATE, copytruncate copies) read after falling behind or a stop, oldest first; older unread ones are reported as lost (reason too_many)" },
    { "collect.rotate_max_age", CONFIG_DURATION, "7d", O(collect.rotate_max_age_ms), NULL, 0,
      "file sources: unread rotated generations last written longer ago than this are not read and are reported as lost (reason too_old)" },
    { "collect.stats_interval", CONFIG_DURATION, "60s", O(collect.stats_interval_ms), NULL, 0,
      "collect logs a stats line this often; 0 = off" },
};

static const struct config_key source_keys[] = {
    { "type", CONFIG_ENUM, "", S(type), "exec|file|kmsg|stdin", 0,
      "exec: run a command and read its stdout; file: tail a file or glob; kmsg: kernel log; stdin" },
    { "command", CONFIG_STR, "", S(command), NULL, 0,
      "exec only: the command line, split into words (no shell), e.g. nvidia-smi dmon -o DT -s pucvmet" },
    { "path", CONFIG_STR, "", S(path), NULL, 0,
      "file: path or glob (required); kmsg: device or saved kernel log (default /dev/kmsg)" },
    { "format", CONFIG_STR, "auto", S(format), NULL, 0,
      "input format: auto or a gpulog parse --format name (dmon, dmon-csv, query-csv, csv, pmon, dcgmi, kmsg)" },
};

/* Environment names kept for compatibility with the flags of the
 * Elasticsearch sink (sinks/es_cli.c); the GPULOG_<SECTION>_<KEY> name wins
 * when both are set. */
static const struct { const char *path, *env; } env_aliases[] = {
    { "elasticsearch.password", "GPULOG_ES_PASSWORD" },
    { "elasticsearch.api_key", "GPULOG_ES_API_KEY" },
};

static const char *env_alias(const char *path)
{
    for (size_t i = 0; i < GL_ARRAY_LEN(env_aliases); i++)
        if (!strcmp(env_aliases[i].path, path)) return env_aliases[i].env;
    return NULL;
}

const struct config_key *config_keys(size_t *n)
{
    *n = GL_ARRAY_LEN(keys);
    return keys;
}

const struct config_key *config_source_keys(size_t *n)
{
    *n = GL_ARRAY_LEN(source_keys);
    return source_keys;
}

const struct config_key *config_key_find(const char *path)
{
    for (size_t i = 0; i < GL_ARRAY_LEN(keys); i++)
        if (!strcmp(keys[i].path, path)) return &keys[i];
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

/* --------------------------------------------------------- small helpers */

static void errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static char **str_field(void *base, const struct config_key *k)
{
    return (char **)((char *)base + k->off);
}

static void set_str(char **dst, const char *v)
{
    free(*dst);
    *dst = xstrdup(v);
}

static int choice_ok(const char *choices, const char *v)
{
    size_t n = strlen(v);
    const char *p = choices;
    while (*p) {
        const char *e = strchr(p, '|');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, v, n)) return 1;
        p += len + (e ? 1 : 0);
    }
    return 0;
}

static int parse_bool(const char *v, int *out)
{
    static const char *t[] = { "true", "yes", "on", "1" }, *f[] = { "false", "no", "off", "0" };
    for (size_t i = 0; i < 4; i++) {
        if (!strcasecmp(v, t[i])) { *out = 1; return 1; }
        if (!strcasecmp(v, f[i])) { *out = 0; return 1; }
    }
    return 0;
}

/* Format names a source may name (config_set_formats); NULL = any. */
static const char *const *known_formats;

void config_set_formats(const char *const *names)
{
    known_formats = names;
}

/* "250ms", "10s", "1.5m", "2h", "7d", "30" (seconds) -> ms. */
static int parse_duration(const char *v, int64_t *out)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || errno || !(x >= 0) || x > 1e12) return 0;
    double mul;
    if (!*end || !strcmp(end, "s")) mul = 1000;
    else if (!strcmp(end, "ms")) mul = 1;
    else if (!strcmp(end, "m")) mul = 60000;
    else if (!strcmp(end, "h")) mul = 3600000;
    else if (!strcmp(end, "d")) mul = 86400000;
    else return 0;
    *out = (int64_t)(x * mul + 0.5);
    return 1;
}

/* "4096", "64KiB", "5MiB", "1G" -> bytes (1024-based units). */
static int parse_size(const char *v, int64_t *out)
{
    static const struct { const char *s; int64_t m; } u[] = {
        { "", 1 }, { "B", 1 },
        { "K", 1LL << 10 }, { "KB", 1LL << 10 }, { "KiB", 1LL << 10 },
        { "M", 1LL << 20 }, { "MB", 1LL << 20 }, { "MiB", 1LL << 20 },
        { "G", 1LL << 30 }, { "GB", 1LL << 30 }, { "GiB", 1LL << 30 },
    };
    const char *p = v;
    while (isdigit((unsigned char)*p)) p++;
    if (p == v || p - v > 15) return 0;
    int64_t n;
    if (!gl_parse_i64(v, (size_t)(p - v), &n)) return 0;
    for (size_t i = 0; i < GL_ARRAY_LEN(u); i++)
        if (!strcmp(p, u[i].s)) {
            if (n > INT64_MAX / u[i].m) return 0;
            *out = n * u[i].m;
            return 1;
        }
    return 0;
}

int config_split_addr(const char *addr, char *host, size_t hostlen, int *port)
{
    const char *colon;
    const char *h = addr;
    size_t hl;
    if (addr[0] == '[') {
        const char *rb = strchr(addr, ']');
        if (!rb || rb[1] != ':') return GL_ERROR;
        h = addr + 1;
        hl = (size_t)(rb - h);
        colon = rb + 1;
    } else {
        colon = strrchr(addr, ':');
        if (!colon) return GL_ERROR;
        hl = (size_t)(colon - addr);
        if (memchr(addr, ':', hl)) return GL_ERROR;   /* bare IPv6 needs [] */
    }
    const char *ps = colon + 1;
    int64_t p;
    if (!*ps || !gl_parse_i64(ps, strlen(ps), &p) || p < 0 || p > 65535) return GL_ERROR;
    if (hl >= hostlen) return GL_ERROR;
    memcpy(host, h, hl);
    host[hl] = '\0';
    for (size_t i = 0; i < hl; i++)
        if (isspace((unsigned char)host[i])) return GL_ERROR;
    *port = (int)p;
    return GL_OK;
}

/* Parses a scalar value for key k into the struct at base. */
static int set_scalar(const struct config_key *k, void *base, const char *v, char *msg, size_t msglen)
{
    char *f = (char *)base + k->off;
    switch (k->type) {
    case CONFIG_STR:
        set_str((char **)f, v);
        return GL_OK;
    case CONFIG_ENUM:
        if (!choice_ok(k->choices, v)) {
            errf(msg, msglen, "%s: '%s' is not one of %s", k->path, v, k->choices);
            return GL_ERROR;
        }
        set_str((char **)f, v);
        return GL_OK;
    case CONFIG_ADDR: {
        char host[256];
        int port;
        if (*v && config_split_addr(v, host, sizeof host, &port) != GL_OK) {
            errf(msg, msglen, "%s: '%s' is not HOST:PORT (e.g. 0.0.0.0:9477, [::]:9477, :9477)", k->path, v);
            return GL_ERROR;
        }
        set_str((char **)f, v);
        return GL_OK;
    }
    case CONFIG_INT: {
        int64_t x;
        if (!gl_parse_i64(v, strlen(v), &x)) {
            errf(msg, msglen, "%s: expected an integer, got '%s'", k->path, v);
            return GL_ERROR;
        }
        *(int64_t *)f = x;
        return GL_OK;
    }
    case CONFIG_BOOL: {
        int b;
        if (!parse_bool(v, &b)) {
            errf(msg, msglen, "%s: expected true or false, got '%s'", k->path, v);
            return GL_ERROR;
        }
        *(int *)f = b;
        return GL_OK;
    }
    case CONFIG_DURATION: {
        int64_t ms;
        if (!parse_duration(v, &ms)) {
            errf(msg, msglen, "%s: expected a duration (250ms, 10s, 5m, 1h, 7d), got '%s'", k->path, v);
            return GL_ERROR;
        }
        *(int64_t *)f = ms;
        return GL_OK;
    }
    case CONFIG_SIZE: {
        int64_t b;
        if (!parse_size(v, &b)) {
            errf(msg, msglen, "%s: expected a size (4096, 64KiB, 5MiB, 1GiB), got '%s'", k->path, v);
            return GL_ERROR;
        }
        *(int64_t *)f = b;
        return GL_OK;
    }
    default:
        errf(msg, msglen, "%s: expected a %s, got a scalar", k->path,
             k->type == CONFIG_MAP ? "mapping" : "list");
        return GL_ERROR;
    }
}

/* ------------------------------------------------------------------ maps */

static void map_clear(struct config_map *m)
{
    for (size_t i = 0; i < m->n; i++) free(m->kv[i]);
    free(m->kv);
    m->kv = NULL;
    m->n = 0;
}

static void map_put(struct config_map *m, const char *key, size_t klen, const char *val)
{
    struct buf b;
    buf_init(&b);
    buf_append(&b, key, klen);
    buf_putc(&b, '=');
    buf_puts(&b, val);
    for (size_t i = 0; i < m->n; i++)
        if (!strncmp(m->kv[i], key, klen) && m->kv[i][klen] == '=') {
            free(m->kv[i]);
            m->kv[i] = b.p;
            return;
        }
    m->kv = xrealloc(m->kv, (m->n + 1) * sizeof *m->kv);
    m->kv[m->n++] = b.p;
}

const char *config_map_get(const struct config_map *m, const char *key)
{
    size_t kl = strlen(key);
    for (size_t i = 0; i < m->n; i++)
        if (!strncmp(m->kv[i], key, kl) && m->kv[i][kl] == '=') return m->kv[i] + kl + 1;
    return NULL;
}

static int map_put_kv(struct config_map *m, const char *path, const char *kv, char *err, size_t errlen)
{
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv) {
        errf(err, errlen, "%s: expected key=value, got '%s'", path, kv);
        return GL_ERROR;
    }
    char *val = xstrdup(eq + 1);
    map_put(m, kv, (size_t)(eq - kv), val);
    free(val);
    return GL_OK;
}

/* --------------------------------------------------------------- sources */

static void source_free(struct config_source *s)
{
    free(s->type);
    free(s->command);
    free(s->path);
    free(s->format);
    memset(s, 0, sizeof *s);
}

static void source_defaults(struct config_source *s)
{
    for (size_t i = 0; i < GL_ARRAY_LEN(source_keys); i++)
        *str_field(s, &source_keys[i]) = xstrdup(source_keys[i].def);
}

void config_clear_sources(struct gpulog_config *cfg)
{
    for (size_t i = 0; i < cfg->sources.n; i++) source_free(&cfg->sources.v[i]);
    free(cfg->sources.v);
    cfg->sources.v = NULL;
    cfg->sources.n = 0;
}

static struct config_source *source_append(struct config_sources *ss)
{
    ss->v = xrealloc(ss->v, (ss->n + 1) * sizeof *ss->v);
    struct config_source *s = &ss->v[ss->n++];
    memset(s, 0, sizeof *s);
    source_defaults(s);
    return s;
}

/* Checks one complete source item; fills the kmsg default path. */
static int source_check(struct config_source *s, char *msg, size_t msglen)
{
    if (!*s->type) {
        errf(msg, msglen, "source: 'type' is required (exec, file, kmsg or stdin)");
        return GL_ERROR;
    }
    if (!strcmp(s->type, "exec") && !*s->command) {
        errf(msg, msglen, "source of type exec needs 'command'");
        return GL_ERROR;
    }
    if (strcmp(s->type, "exec") && *s->command) {
        errf(msg, msglen, "'command' is only for sources of type exec (this one is %s)", s->type);
        return GL_ERROR;
    }
    if (!strcmp(s->type, "file") && !*s->path) {
        errf(msg, msglen, "source of type file needs 'path'");
        return GL_ERROR;
    }
    if ((!strcmp(s->type, "exec") || !strcmp(s->type, "stdin")) && *s->path) {
        errf(msg, msglen, "'path' is not used by sources of type %s", s->type);
        return GL_ERROR;
    }
    if (!strcmp(s->type, "kmsg") && !*s->path) set_str(&s->path, "/dev/kmsg");
    if (known_formats) {
        size_t i = 0;
        while (known_formats[i] && strcmp(known_formats[i], s->format)) i++;
        if (!known_formats[i]) {
            struct buf b;
            buf_init(&b);
            for (i = 0; known_formats[i]; i++) buf_printf(&b, "%s%s", i ? ", " : "", known_formats[i]);
            errf(msg, msglen, "source format '%s' is unknown (formats: %s)", s->format, b.p ? b.p : "");
            buf_free(&b);
            return GL_ERROR;
        }
    }
    return GL_OK;
}

/* "exec:CMD", "file:PATH", "kmsg[:PATH]", "stdin" (optionally "@FORMAT"
 * is not supported: set format with config_set on the item instead). */
static int source_add_spec(struct gpulog_config *cfg, const char *spec, char *err, size_t errlen)
{
    const char *colon = strchr(spec, ':');
    size_t tl = colon ? (size_t)(colon - spec) : strlen(spec);
    char type[16];
    if (tl == 0 || tl >= sizeof type) {
        errf(err, errlen, "sources: expected TYPE[:ARG] (exec:CMD, file:PATH, kmsg, stdin), got '%s'", spec);
        return GL_ERROR;
    }
    memcpy(type, spec, tl);
    type[tl] = '\0';
    if (!choice_ok(source_keys[0].choices, type)) {
        errf(err, errlen, "sources: unknown source type '%s' (exec, file, kmsg, stdin)", type);
        return GL_ERROR;
    }
    struct config_sources tmp = { NULL, 0 };
    struct config_source *s = source_append(&tmp);
    set_str(&s->type, type);
    const char *arg = colon ? colon + 1 : "";
    if (!strcmp(type, "exec")) set_str(&s->command, arg);
    else set_str(&s->path, arg);
    char msg[GL_ERRLEN];
    if (source_check(s, msg, sizeof msg) != GL_OK) {
        errf(err, errlen, "sources: %s", msg);
        source_free(s);
        free(tmp.v);
        return GL_ERROR;
    }
    cfg->sources.v = xrealloc(cfg->sources.v, (cfg->sources.n + 1) * sizeof *cfg->sources.v);
    cfg->sources.v[cfg->sources.n++] = *s;
    free(tmp.v);
    return GL_OK;
}

/* -------------------------------------------------------- defaults, free */

static void key_default(struct gpulog_config *cfg, const struct config_key *k)
{
    char msg[GL_ERRLEN];
    switch (k->type) {
    case CONFIG_MAP:
        map_clear((struct config_map *)((char *)cfg + k->off));
        break;
    case CONFIG_SOURCES:
        config_clear_sources(cfg);
        break;
    default:
        if (set_scalar(k, cfg, k->def, msg, sizeof msg) != GL_OK) {
            fprintf(stderr, "gpulog: bad built-in default: %s\n", msg);
            abort();
        }
    }
}

void config_defaults(struct gpulog_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    for (size_t i = 0; i < GL_ARRAY_LEN(keys); i++) key_default(cfg, &keys[i]);
}

void config_free(struct gpulog_config *cfg)
{
    for (size_t i = 0; i < GL_ARRAY_LEN(keys); i++) {
        const struct config_key *k = &keys[i];
        switch (k->type) {
        case CONFIG_STR: case CONFIG_ENUM: case CONFIG_ADDR:
            free(*str_field(cfg, k));
            break;
        case CONFIG_MAP:
            map_clear((struct config_map *)((char *)cfg + k->off));
            break;
        case CONFIG_SOURCES:
            config_clear_sources(cfg);
            break;
        default:
            break;
        }
    }
    memset(cfg, 0, sizeof *cfg);
}

/* ----------------------------------------------------------- did you mean */

static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64) return 99;
    size_t prev[65], cur[65];
    for (size_t j = 0; j <= lb; j++) prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t c = prev[j - 1] + (a[i - 1] != b[j - 1]);
            if (prev[j] + 1 < c) c = prev[j] + 1;
            if (cur[j - 1] + 1 < c) c = cur[j - 1] + 1;
            cur[j] = c;
        }
        memcpy(prev, cur, (lb + 1) * sizeof *prev);
    }
    return prev[lb];
}

static const char *last_part(const char *p)
{
    const char *d = strrchr(p, '.');
    return d ? d + 1 : p;
}

/* Suggests the closest key path in table t (or "" if none is close). */
static const char *suggest(const struct config_key *t, size_t n, const char *path)
{
    const char *best = NULL;
    size_t bestd = 99;
    for (size_t i = 0; i < n; i++) {
        size_t d = edit_distance(path, t[i].path);
        /* the right key put in the wrong section: brokers -> kafka.brokers */
        if (!strcmp(last_part(path), last_part(t[i].path))) d = d < 2 ? d : 2;
        if (d < bestd) { bestd = d; best = t[i].path; }
    }
    size_t len = strlen(path);
    size_t limit = len <= 4 ? 1 : len <= 10 ? 2 : 3;
    return best && bestd <= limit ? best : "";
}

/* ------------------------------------------------------------ YAML loader */

struct load {
    const char *name;
    yaml_document_t *doc;
    struct gpulog_config *cfg;
    char *err;
    size_t errlen, used;
    int nerr;
};

static void lerr(struct load *L, const yaml_node_t *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void lerr(struct load *L, const yaml_node_t *n, const char *fmt, ...)
{
    L->nerr++;
    if (!L->err || L->used + 1 >= L->errlen) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int w = snprintf(L->err + L->used, L->errlen - L->used, "%s%s:%lu:%lu: %s",
                     L->used ? "\n" : "", L->name,
                     n ? (unsigned long)n->start_mark.line + 1 : 1UL,
                     n ? (unsigned long)n->start_mark.column + 1 : 1UL, msg);
    if (w > 0) L->used += (size_t)w;
    if (L->used >= L->errlen) L->used = L->errlen - 1;
}

static const char *node_kind(const yaml_node_t *n)
{
    switch (n->type) {
    case YAML_SCALAR_NODE: return "a scalar";
    case YAML_SEQUENCE_NODE: return "a list";
    case YAML_MAPPING_NODE: return "a mapping";
    default: return "nothing";
    }
}

static const char *scalar(const yaml_node_t *n)
{
    return (const char *)n->data.scalar.value;
}

/* A plain ~ / null / empty scalar: the key is set back to its default. */
static int is_null(const yaml_node_t *n)
{
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return 0;
    const char *v = scalar(n);
    return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") || !strcmp(v, "NULL");
}

static int is_section(const char *path)
{
    size_t n = strlen(path);
    for (size_t i = 0; i < GL_ARRAY_LEN(keys); i++)
        if (!strncmp(keys[i].path, path, n) && keys[i].path[n] == '.') return 1;
    return 0;
}

/* Reports duplicate keys of a mapping node; returns 1 if pair i repeats an earlier key. */
static int dup_key(yaml_document_t *doc, yaml_node_t *map, yaml_node_pair_t *pair)
{
    yaml_node_t *k = yaml_document_get_node(doc, pair->key);
    if (!k || k->type != YAML_SCALAR_NODE) return 0;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < pair; p++) {
        yaml_node_t *pk = yaml_document_get_node(doc, p->key);
        if (pk && pk->type == YAML_SCALAR_NODE && !strcmp(scalar(pk), scalar(k))) return 1;
    }
    return 0;
}

/* Bounds on map values: aliases can make a small file describe a huge tree. */
#define MAP_MAX_DEPTH   8
#define MAP_MAX_ENTRIES 1024

static void flatten_map(struct load *L, struct config_map *m, const char *path,
                        yaml_node_t *node, const char *prefix, int depth)
{
    if (depth > MAP_MAX_DEPTH) {
        lerr(L, node, "%s: nested deeper than %d levels", path, MAP_MAX_DEPTH);
        return;
    }
    for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(L->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(L->doc, p->value);
        if (!k || !v) continue;
        if (k->type != YAML_SCALAR_NODE) {
            lerr(L, k, "%s: keys must be scalars", path);
            continue;
        }
        if (dup_key(L->doc, node, p)) {
            lerr(L, k, "%s: duplicate key '%s'", path, scalar(k));
            continue;
        }
        if (strchr(scalar(k), '=') || !*scalar(k)) {
            lerr(L, k, "%s: key '%s' is empty or contains '='", path, scalar(k));
            continue;
        }
        struct buf full;
        buf_init(&full);
        if (prefix) buf_printf(&full, "%s.", prefix);
        buf_puts(&full, scalar(k));
        if (m->n >= MAP_MAX_ENTRIES) {
            lerr(L, k, "%s: more than %d entries", path, MAP_MAX_ENTRIES);
            buf_free(&full);
            return;
        }
        if (v->type == YAML_MAPPING_NODE) flatten_map(L, m, path, v, full.p, depth + 1);
        else if (v->type == YAML_SCALAR_NODE) map_put(m, full.p, full.len, is_null(v) ? "" : scalar(v));
        else lerr(L, v, "%s.%s: expected a scalar, got %s", path, full.p, node_kind(v));
        buf_free(&full);
    }
}

static void load_sources(struct load *L, yaml_node_t *node)
{
    config_clear_sources(L->cfg);
    if (is_null(node)) return;
    if (node->type != YAML_SEQUENCE_NODE) {
        lerr(L, node, "sources: expected a list, got %s", node_kind(node));
        return;
    }
    for (yaml_node_item_t *it = node->data.sequence.items.start; it < node->data.sequence.items.top; it++) {
        yaml_node_t *item = yaml_document_get_node(L->doc, *it);
        if (!item) continue;
        if (item->type != YAML_MAPPING_NODE) {
            lerr(L, item, "sources: each item is a mapping like {type: file, path: /var/log/gpu/dmon.log}, got %s",
                 node_kind(item));
            continue;
        }
        struct config_source *s = source_append(&L->cfg->sources);
        int bad = 0;
        for (yaml_node_pair_t *p = item->data.mapping.pairs.start; p < item->data.mapping.pairs.top; p++) {
            yaml_node_t *k = yaml_document_get_node(L->doc, p->key);
            yaml_node_t *v = yaml_document_get_node(L->doc, p->value);
            if (!k || !v) continue;
            if (k->type != YAML_SCALAR_NODE) { lerr(L, k, "sources: keys must be scalars"); bad = 1; continue; }
            if (dup_key(L->doc, item, p)) { lerr(L, k, "sources: duplicate key '%s'", scalar(k)); bad = 1; continue; }
            const struct config_key *sk = NULL;
            for (size_t i = 0; i < GL_ARRAY_LEN(source_keys); i++)
                if (!strcmp(source_keys[i].path, scalar(k))) sk = &source_keys[i];
            if (!sk) {
                const char *sug = suggest(source_keys, GL_ARRAY_LEN(source_keys), scalar(k));
                lerr(L, k, "unknown key 'sources[].%s'%s%s%s", scalar(k),
                     *sug ? " (did you mean '" : "", sug, *sug ? "'?)" : "");
                bad = 1;
                continue;
            }
            if (v->type != YAML_SCALAR_NODE) {
                lerr(L, v, "sources[].%s: expected a scalar, got %s", sk->path, node_kind(v));
                bad = 1;
                continue;
            }
            char msg[GL_ERRLEN];
            if (set_scalar(sk, s, is_null(v) ? sk->def : scalar(v), msg, sizeof msg) != GL_OK) {
                lerr(L, v, "sources[].%s", msg);
                bad = 1;
            }
        }
        char msg[GL_ERRLEN];
        if (!bad && source_check(s, msg, sizeof msg) != GL_OK) lerr(L, item, "sources: %s", msg);
    }
}

static void load_mapping(struct load *L, yaml_node_t *node, const char *prefix)
{
    for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(L->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(L->doc, p->value);
        if (!k || !v) continue;
        if (k->type != YAML_SCALAR_NODE) {
            lerr(L, k, "keys must be scalars, got %s", node_kind(k));
            continue;
        }
        struct buf full;
        buf_init(&full);
        if (prefix) buf_printf(&full, "%s.", prefix);
        buf_puts(&full, scalar(k));
        if (dup_key(L->doc, node, p)) {
            lerr(L, k, "duplicate key '%s'", full.p);
            buf_free(&full);
            continue;
        }
        const struct config_key *ck = config_key_find(full.p);
        if (ck) {
            char msg[GL_ERRLEN];
            if (ck->type == CONFIG_SOURCES) {
                load_sources(L, v);
            } else if (ck->type == CONFIG_MAP) {
                struct config_map *m = (struct config_map *)((char *)L->cfg + ck->off);
                if (is_null(v)) map_clear(m);
                else if (v->type != YAML_MAPPING_NODE)
                    lerr(L, v, "%s: expected a mapping, got %s", ck->path, node_kind(v));
                else { map_clear(m); flatten_map(L, m, ck->path, v, NULL, 1); }
            } else if (v->type != YAML_SCALAR_NODE) {
                lerr(L, v, "%s: expected a %s value, got %s", ck->path,
                     ck->type == CONFIG_INT ? "integer" : ck->type == CONFIG_BOOL ? "boolean" :
                     ck->type == CONFIG_DURATION ? "duration" : ck->type == CONFIG_SIZE ? "size" : "scalar",
                     node_kind(v));
            } else if (set_scalar(ck, L->cfg, is_null(v) ? ck->def : scalar(v), msg, sizeof msg) != GL_OK) {
                lerr(L, v, "%s", msg);
            }
        } else if (is_section(full.p)) {
            if (v->type == YAML_MAPPING_NODE) load_mapping(L, v, full.p);
            else if (!is_null(v)) lerr(L, v, "%s: expected a mapping (a section), got %s", full.p, node_kind(v));
        } else {
            const char *sug = suggest(keys, GL_ARRAY_LEN(keys), full.p);
            lerr(L, k, "unknown key '%s'%s%s%s", full.p,
                 *sug ? " (did you mean '" : "", sug, *sug ? "'?)" : "");
        }
        buf_free(&full);
    }
}

int config_load_string(const char *name, const char *yaml, size_t len,
                       struct gpulog_config *cfg, char *err, size_t errlen)
{
    struct load L = { name, NULL, cfg, err, errlen, 0, 0 };
    if (err && errlen) err[0] = '\0';
    yaml_document_t doc;
    if (ydoc_load(name, yaml, len, &doc, err, errlen) != GL_OK) return GL_ERROR;
    L.doc = &doc;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (root && !is_null(root)) {
        if (root->type != YAML_MAPPING_NODE) lerr(&L, root, "the configuration must be a mapping, got %s", node_kind(root));
        else load_mapping(&L, root, NULL);
    }
    yaml_document_delete(&doc);
    return L.nerr ? GL_ERROR : GL_OK;
}

int config_load(const char *path, struct gpulog_config *cfg, char *err, size_t errlen)
{
    struct buf text;
    buf_init(&text);
    int rc = ydoc_read_file(path, &text, err, errlen);
    if (rc == GL_OK) rc = config_load_string(path, text.p, text.len, cfg, err, errlen);
    buf_free(&text);
    return rc;
}

/* ------------------------------------------------------ set, environment */

int config_set(struct gpulog_config *cfg, const char *path, const char *value,
               char *err, size_t errlen)
{
    const struct config_key *k = config_key_find(path);
    if (k) {
        if (k->type == CONFIG_SOURCES) return source_add_spec(cfg, value, err, errlen);
        if (k->type == CONFIG_MAP)
            return map_put_kv((struct config_map *)((char *)cfg + k->off), path, value, err, errlen);
        return set_scalar(k, cfg, value, err, errlen);
    }
    for (size_t i = 0; i < GL_ARRAY_LEN(keys); i++) {
        size_t n = strlen(keys[i].path);
        if (keys[i].type == CONFIG_MAP && !strncmp(path, keys[i].path, n) && path[n] == '.' && path[n + 1]) {
            if (strchr(path + n + 1, '=')) {
                errf(err, errlen, "%s: map keys cannot contain '='", path);
                return GL_ERROR;
            }
            map_put((struct config_map *)((char *)cfg + keys[i].off), path + n + 1, strlen(path + n + 1), value);
            return GL_OK;
        }
    }
    const char *sug = suggest(keys, GL_ARRAY_LEN(keys), path);
    errf(err, errlen, "unknown key '%s'%s%s%s", path, *sug ? " (did you mean '" : "", sug, *sug ? "'?)" : "");
    return GL_ERROR;
}

int config_apply_env(struct gpulog_config *cfg, char *err, size_t errlen)
{
    for (size_t i = 0; i < GL_ARRAY_LEN(keys); i++) {
        const struct config_key *k = &keys[i];
        if (k->type == CONFIG_SOURCES) continue;
        char name[96];
        config_env_name(k->path, name, sizeof name);
        const char *v = getenv(name);
        if (!v && env_alias(k->path) && (v = getenv(env_alias(k->path))))
            snprintf(name, sizeof name, "%s", env_alias(k->path));
        if (!v) continue;
        char msg[GL_ERRLEN];
        if (k->type == CONFIG_MAP) {
            char *copy = xstrdup(v), *save = NULL;
            for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                if (map_put_kv((struct config_map *)((char *)cfg + k->off), k->path, tok, msg, sizeof msg) != GL_OK) {
                    errf(err, errlen, "%s: %s", name, msg);
                    free(copy);
                    return GL_ERROR;
                }
            }
            free(copy);
        } else if (set_scalar(k, cfg, v, msg, sizeof msg) != GL_OK) {
            errf(err, errlen, "%s: %s", name, msg);
            return GL_ERROR;
        }
    }
    return GL_OK;
}

const char *config_path_from_argv(int argc, char **argv, const char *opt)
{
    const char *path = NULL;
    size_t n = strlen(opt);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--")) break;
        if (!strcmp(argv[i], opt) && i + 1 < argc) path = argv[++i];
        else if (!strncmp(argv[i], opt, n) && argv[i][n] == '=') path = argv[i] + n + 1;
    }
    return path;
}

int config_init(struct gpulog_config *cfg, const char *path, char *err, size_t errlen)
{
    config_defaults(cfg);
    if (!path || !*path) path = getenv("GPULOG_CONFIG");
    if (path && *path && config_load(path, cfg, err, errlen) != GL_OK) return GL_ERROR;
    return config_apply_env(cfg, err, errlen);
}

void config_apply_log(const struct gpulog_config *cfg)
{
    static const char *lv[] = { "debug", "info", "warn", "error" };
    for (int i = 0; i < 4; i++)
        if (!strcmp(cfg->log.level, lv[i])) gl_log_level = (enum gl_level)i;
    gl_log_json = !strcmp(cfg->log.format, "json");
}

int config_apply_process(const struct gpulog_config *cfg, char *err, size_t errlen)
{
    config_apply_log(cfg);
    if (*cfg->tz && gl_tz_set(cfg->tz) != GL_OK) {
        errf(err, errlen, "tz: unknown time zone '%s'", cfg->tz);
        return GL_ERROR;
    }
    if (cfg->year && (cfg->year < 1970 || cfg->year > 9999)) {
        errf(err, errlen, "year: wants 1970 to 9999 (0 = inferred), got %lld", (long long)cfg->year);
        return GL_ERROR;
    }
    return GL_OK;
}

int config_secret(const char *value, const char *file, char **out, char *err, size_t errlen)
{
    if (value && *value) {
        *out = xstrdup(value);
        return GL_OK;
    }
    if (!file || !*file) {
        *out = xstrdup("");
        return GL_OK;
    }
    FILE *f = fopen(file, "r");
    if (!f) {
        errf(err, errlen, "%s: %s", file, strerror(errno));
        return GL_ERROR;
    }
    char line[4096];
    if (!fgets(line, sizeof line, f)) line[0] = '\0';
    fclose(f);
    line[strcspn(line, "\r\n")] = '\0';
    *out = xstrdup(line);
    return GL_OK;
}

/* ---------------------------------------------------------------- printer */

static int plain_ok(const char *s)
{
    static const char *reserved[] = { "true", "false", "yes", "no", "on", "off", "null", "y", "n" };
    if (!isalpha((unsigned char)s[0]) && s[0] != '/') return 0;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("_./@+-", *p)) return 0;
    for (size_t i = 0; i < GL_ARRAY_LEN(reserved); i++)
        if (!strcasecmp(s, reserved[i])) return 0;
    return 1;
}

static void put_yaml_str(struct buf *b, const char *s)
{
    if (plain_ok(s)) { buf_puts(b, s); return; }
    buf_putc(b, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') { buf_putc(b, '\\'); buf_putc(b, (char)*p); }
        else if (*p == '\n') buf_puts(b, "\\n");
        else if (*p == '\t') buf_puts(b, "\\t");
        else if (*p < 0x20 || *p == 0x7f) buf_printf(b, "\\x%02x", *p);
        else buf_putc(b, (char)*p);
    }
    buf_putc(b, '"');
}

static void put_duration(struct buf *b, int64_t ms)
{
    if (ms && ms % 86400000 == 0) buf_printf(b, "%lldd", (long long)(ms / 86400000));
    else if (ms && ms % 3600000 == 0) buf_printf(b, "%lldh", (long long)(ms / 3600000));
    else if (ms && ms % 60000 == 0) buf_printf(b, "%lldm", (long long)(ms / 60000));
    else if (ms % 1000 == 0) buf_printf(b, "%llds", (long long)(ms / 1000));
    else buf_printf(b, "%lldms", (long long)ms);
}

static void put_size(struct buf *b, int64_t v)
{
    if (v && v % (1LL << 30) == 0) buf_printf(b, "%lldGiB", (long long)(v >> 30));
    else if (v && v % (1LL << 20) == 0) buf_printf(b, "%lldMiB", (long long)(v >> 20));
    else if (v && v % (1LL << 10) == 0) buf_printf(b, "%lldKiB", (long long)(v >> 10));
    else buf_printf(b, "%lld", (long long)v);
}

int config_secret_key(const char *k, size_t n)
{
    char low[128];
    if (n >= sizeof low) n = sizeof low - 1;
    for (size_t i = 0; i < n; i++) low[i] = (char)tolower((unsigned char)k[i]);
    low[n] = '\0';
    return strstr(low, "password") || strstr(low, "secret") || strstr(low, "key.pem") ||
           strstr(low, "sasl.oauthbearer.config") || strstr(low, "api_key") || strstr(low, "token") ||
           strstr(low, "jaas");
}

void config_url_mask(const char *url, struct buf *out)
{
    const char *scheme = strstr(url, "://");
    const char *host = scheme ? scheme + 3 : url;
    size_t auth = strcspn(host, "/?#");
    const char *at = memchr(host, '@', auth);
    /* the last '@' of the authority ends the user info (a password may hold '@') */
    for (const char *p = at; p && p < host + auth; p = memchr(p + 1, '@', (size_t)(host + auth - p - 1))) at = p;
    if (!scheme || !at) { buf_puts(out, url); return; }
    buf_append(out, url, (size_t)(host - url));
    buf_puts(out, "***");
    buf_puts(out, at);
}

/* put_yaml_str of s, with a password in a URL masked when mask is set. */
static void put_str_masked(struct buf *b, const char *s, int mask)
{
    if (!mask || !strstr(s, "://")) { put_yaml_str(b, s); return; }
    struct buf m;
    buf_init(&m);
    config_url_mask(s, &m);
    put_yaml_str(b, m.p ? m.p : "");
    buf_free(&m);
}

static void indent(struct buf *b, int n)
{
    for (int i = 0; i < n; i++) buf_puts(b, "  ");
}

static void put_value(struct buf *b, const struct config_key *k, const void *base, int mask, int depth)
{
    const char *f = (const char *)base + k->off;
    switch (k->type) {
    case CONFIG_STR: case CONFIG_ENUM: case CONFIG_ADDR: {
        const char *s = *(char *const *)f;
        buf_putc(b, ' ');
        if (mask && (k->flags & CONFIG_F_SECRET) && *s) put_yaml_str(b, "***");
        else put_str_masked(b, s, mask);
        buf_putc(b, '\n');
        break;
    }
    case CONFIG_INT: buf_printf(b, " %lld\n", (long long)*(const int64_t *)f); break;
    case CONFIG_BOOL: buf_printf(b, " %s\n", *(const int *)f ? "true" : "false"); break;
    case CONFIG_DURATION: buf_putc(b, ' '); put_duration(b, *(const int64_t *)f); buf_putc(b, '\n'); break;
    case CONFIG_SIZE: buf_putc(b, ' '); put_size(b, *(const int64_t *)f); buf_putc(b, '\n'); break;
    case CONFIG_MAP: {
        const struct config_map *m = (const struct config_map *)f;
        if (!m->n) { buf_puts(b, " {}\n"); break; }
        buf_putc(b, '\n');
        for (size_t i = 0; i < m->n; i++) {
            const char *eq = strchr(m->kv[i], '=');
            size_t kl = (size_t)(eq - m->kv[i]);
            char *key = xstrndup(m->kv[i], kl);
            indent(b, depth + 1);
            put_yaml_str(b, key);
            buf_puts(b, ": ");
            if (mask && config_secret_key(key, kl) && eq[1]) put_yaml_str(b, "***");
            else put_str_masked(b, eq + 1, mask);
            buf_putc(b, '\n');
            free(key);
        }
        break;
    }
    case CONFIG_SOURCES: {
        const struct config_sources *ss = (const struct config_sources *)f;
        if (!ss->n) { buf_puts(b, " []\n"); break; }
        buf_putc(b, '\n');
        for (size_t i = 0; i < ss->n; i++) {
            int first = 1;
            for (size_t j = 0; j < GL_ARRAY_LEN(source_keys); j++) {
                const char *v = *str_field(&ss->v[i], &source_keys[j]);
                if (!*v) continue;
                indent(b, depth);
                buf_puts(b, first ? "- " : "  ");
                first = 0;
                buf_printf(b, "%s: ", source_keys[j].path);
                put_yaml_str(b, v);
                buf_putc(b, '\n');
            }
        }
        break;
    }
    }
}

/* Number of leading dot-separated components a and b (lengths la, lb) share. */
static int common_parts(const char *a, size_t la, const char *b, size_t lb)
{
    int n = 0;
    size_t i = 0;
    for (;;) {
        int ea = i == la || a[i] == '.', eb = i == lb || b[i] == '.';
        if (ea && eb && i > 0) n++;
        if (ea != eb || i == la || i == lb) return n;
        if (!ea && a[i] != b[i]) return n;
        i++;
    }
}

void config_print(const struct gpulog_config *cfg, int mask, struct buf *out)
{
    char prev[128] = "";   /* section of the previous key, e.g. "kafka.topics" */
    for (size_t i = 0; i < GL_ARRAY_LEN(keys); i++) {
        const char *path = keys[i].path;
        const char *dot = strrchr(path, '.');
        size_t slen = dot ? (size_t)(dot - path) : 0;
        int c = common_parts(path, slen, prev, strlen(prev));
        /* open the sections below the shared ones */
        int depth = 0;
        size_t start = 0;
        while (start < slen) {
            const char *e = memchr(path + start, '.', slen - start);
            size_t end = e ? (size_t)(e - path) : slen;
            if (depth >= c) {
                indent(out, depth);
                buf_append(out, path + start, end - start);
                buf_puts(out, ":\n");
            }
            depth++;
            start = end + 1;
        }
        indent(out, depth);
        buf_printf(out, "%s:", last_part(path));
        put_value(out, &keys[i], cfg, mask, depth);
        snprintf(prev, sizeof prev, "%.*s", (int)slen, path);
    }
}

/* ------------------------------------------------------------------- docs */

static const char *type_name(const struct config_key *k)
{
    switch (k->type) {
    case CONFIG_STR: return "string";
    case CONFIG_INT: return "integer";
    case CONFIG_BOOL: return "boolean";
    case CONFIG_DURATION: return "duration";
    case CONFIG_SIZE: return "size";
    case CONFIG_ENUM: return "enum";
    case CONFIG_ADDR: return "address";
    case CONFIG_MAP: return "map";
    case CONFIG_SOURCES: return "list";
    }
    return "?";
}

static void md_cell(struct buf *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '|') buf_puts(b, "\\|");
        else if (*s == '<') buf_puts(b, "&lt;");
        else if (*s == '>') buf_puts(b, "&gt;");
        else buf_putc(b, *s);
    }
}

static void md_row(struct buf *b, const struct config_key *k, const char *prefix, int env)
{
    buf_printf(b, "| `%s%s` | %s", prefix, k->path, type_name(k));
    if (k->type == CONFIG_ENUM) { buf_puts(b, ": "); md_cell(b, k->choices); }
    buf_puts(b, " | ");
    if (*k->def) { buf_puts(b, "`"); buf_puts(b, k->def); buf_puts(b, "`"); }
    else buf_puts(b, "\"\"");
    if (env) {
        char name[96];
        config_env_name(k->path, name, sizeof name);
        if (k->type == CONFIG_SOURCES) buf_puts(b, " | (flags only)");
        else buf_printf(b, " | `%s`", name);
        if (env_alias(k->path)) buf_printf(b, " or `%s`", env_alias(k->path));
    }
    buf_puts(b, " | ");
    md_cell(b, k->help);
    if (k->flags & CONFIG_F_SECRET) buf_puts(b, " (secret: masked by `config print`)");
    buf_puts(b, " |\n");
}

void config_docs(struct buf *out)
{
    buf_puts(out,
        "# Configuration\n"
        "\n"
        "<!-- Generated by `gpulog config docs` from the key table in core/config.c;\n"
        "     tests/t_ops.sh fails when this file and the table disagree. -->\n"
        "\n"
        "gpulog reads one YAML file, named by the `GPULOG_CONFIG` environment variable\n"
        "(as the deployment files do) or by the command's `--config FILE` flag. There\n"
        "is no implicit search path: without either, the built-in defaults apply.\n"
        "Every key has a default, so an empty file is valid.\n"
        "\n"
        "## Precedence\n"
        "\n"
        "Lowest first; a later layer overrides an earlier one key by key:\n"
        "\n"
        "1. built-in defaults (the table below);\n"
        "2. the configuration file;\n"
        "3. environment variables `GPULOG_<SECTION>_<KEY>`: the key path upper-cased with\n"
        "   dots turned into underscores (`kafka.brokers` is `GPULOG_KAFKA_BROKERS`,\n"
        "   `kafka.topics.metrics` is `GPULOG_KAFKA_TOPICS_METRICS`). Map keys take\n"
        "   `k=v,k=v` (`GPULOG_KAFKA_PROPERTIES=security.protocol=SSL`) and add to the file's entries;\n"
        "4. command-line flags of the command (`--brokers`, `--state-dir`, `-X k=v`, ...).\n"
        "   Source flags (`--exec`, `--file`, `--kmsg`, `-`) replace the file's `sources`.\n"
        "\n"
        "`gpulog config print [FILE]` shows the result of layers 1-3 with secrets\n"
        "masked as `***`.\n"
        "\n"
        "## Checking a file\n"
        "\n"
        "`gpulog config check FILE` exits 0 and prints `FILE: ok`, or prints one\n"
        "`FILE:LINE:COLUMN: message` per problem and exits 2. Unknown keys are errors\n"
        "(with a suggestion when a known key is close), and so are values of the wrong\n"
        "type, duplicate keys and more than one YAML document. A key set to `~`/`null`\n"
        "or left empty takes its default.\n"
        "\n"
        "## Value types\n"
        "\n"
        "- string: any scalar; quote it when it contains `: ` or starts with a special character.\n"
        "- boolean: `true`/`false` (also `yes`/`no`, `on`/`off`).\n"
        "- duration: `250ms`, `10s`, `5m`, `1h`, `7d`; a bare number is seconds.\n"
        "- size: bytes, or with a 1024-based unit: `64KiB`, `5MiB`, `1GiB` (`K`, `M`, `G`, `KB`, `MB`, `GB` mean the same).\n"
        "- enum: one of the listed words.\n"
        "- address: `HOST:PORT`, `[IPv6]:PORT` or `:PORT` (all interfaces); empty = disabled.\n"
        "- map: a mapping of scalars; nested mappings are joined with dots.\n"
        "- list: see *Sources* below.\n"
        "\n"
        "## Keys\n"
        "\n"
        "| Key | Type | Default | Environment | Description |\n"
        "|---|---|---|---|---|\n");
    for (size_t i = 0; i < GL_ARRAY_LEN(keys); i++) md_row(out, &keys[i], "", 1);
    buf_puts(out,
        "\n"
        "## Sources\n"
        "\n"
        "Each item of `sources` is a mapping with these keys:\n"
        "\n"
        "| Key | Type | Default | Description |\n"
        "|---|---|---|---|\n");
    for (size_t i = 0; i < GL_ARRAY_LEN(source_keys); i++) md_row(out, &source_keys[i], "sources[].", 0);
    buf_puts(out,
        "\n"
        "On the command line a source is `--exec CMD`, `--file PATH`, `--kmsg` or `-`;\n"
        "through `config_set` it is `exec:CMD`, `file:PATH`, `kmsg[:PATH]` or `stdin`.\n"
        "\n"
        "## Example\n"
        "\n"
        "```yaml\n"
        "host: gpu-node-7\n"
        "tz: UTC\n"
        "log:\n"
        "  level: info\n"
        "  format: json\n"
        "sources:\n"
        "  - type: exec\n"
        "    command: nvidia-smi dmon -o DT -s pucvmet\n"
        "    format: dmon\n"
        "  - type: kmsg\n"
        "kafka:\n"
        "  brokers: kafka-0.kafka:9092,kafka-1.kafka:9092\n"
        "  properties:\n"
        "    security.protocol: SASL_SSL\n"
        "    sasl.mechanism: SCRAM-SHA-512\n"
        "    sasl.username: gpulog\n"
        "elasticsearch:\n"
        "  url: https://es.example:9200\n"
        "  api_key_file: /run/secrets/es-api-key\n"
        "state_dir: /var/lib/gpulog\n"
        "metrics_addr: 0.0.0.0:9477\n"
        "shutdown_timeout: 10s\n"
        "```\n"
        "\n"
        "Secrets: put passwords and API keys in files (`*_file` keys) or in the\n"
        "environment (`GPULOG_ELASTICSEARCH_PASSWORD`, `GPULOG_KAFKA_PROPERTIES=sasl.password=...`),\n"
        "not in the file. `config print` masks `elasticsearch.password`,\n"
        "`elasticsearch.api_key` and every map entry whose key names a password,\n"
        "secret, token, API key or private key.\n");
}

int config_init_command(struct gpulog_config *cfg, const char *cmd, int argc, char **argv)
{
    char err[GL_ERRLEN * 4];
    if (config_init(cfg, config_path_from_argv(argc, argv, "--config"), err, sizeof err) == GL_OK) return GL_OK;
    fprintf(stderr, "gpulog %s: %s\n", cmd, err);
    config_free(cfg);
    return GL_ERROR;
}
