/*
 * es_cli.h - the Elasticsearch/OpenSearch command-line options shared by
 * `gpulog detect`, `gpulog run`, `gpulog setup` and bench/es_push, the
 * loading of secrets from the environment or files, and the libcurl
 * settings (auth, TLS) every request to the cluster uses.
 *
 * Use with getopt_long: put ES_CLI_LONGOPTS into the option table and, in
 * the switch's default branch, call es_cli_opt(); after the loop call
 * es_cli_finish(). Secrets are never printed: es_cli_url_masked() gives a
 * URL safe for logs.
 */
#ifndef GPULOG_ES_CLI_H
#define GPULOG_ES_CLI_H

#include "sink.h"

#include <curl/curl.h>

/* getopt_long values of the ES options (out of the ASCII range). */
enum {
    ES_OPT_URL = 0x4500, ES_OPT_NS, ES_OPT_INDEX_METRICS, ES_OPT_USER,
    ES_OPT_PASSWORD_FILE, ES_OPT_API_KEY_FILE, ES_OPT_CA, ES_OPT_CERT, ES_OPT_KEY,
    ES_OPT_DEADLETTER, ES_OPT_BATCH_BYTES, ES_OPT_BATCH_AGE, ES_OPT_MAX_PENDING,
};

#define ES_CLI_LONGOPTS \
    { "es", required_argument, NULL, ES_OPT_URL }, \
    { "es-namespace", required_argument, NULL, ES_OPT_NS }, \
    { "namespace", required_argument, NULL, ES_OPT_NS }, \
    { "index-metrics", no_argument, NULL, ES_OPT_INDEX_METRICS }, \
    { "es-user", required_argument, NULL, ES_OPT_USER }, \
    { "es-password-file", required_argument, NULL, ES_OPT_PASSWORD_FILE }, \
    { "es-api-key-file", required_argument, NULL, ES_OPT_API_KEY_FILE }, \
    { "es-ca", required_argument, NULL, ES_OPT_CA }, \
    { "es-cert", required_argument, NULL, ES_OPT_CERT }, \
    { "es-key", required_argument, NULL, ES_OPT_KEY }, \
    { "deadletter", required_argument, NULL, ES_OPT_DEADLETTER }, \
    { "es-batch-bytes", required_argument, NULL, ES_OPT_BATCH_BYTES }, \
    { "es-batch-age-ms", required_argument, NULL, ES_OPT_BATCH_AGE }, \
    { "es-max-pending-bytes", required_argument, NULL, ES_OPT_MAX_PENDING }

/* Help text for the options above (for a command's --help). */
#define ES_CLI_HELP \
    "      --es URL               Elasticsearch/OpenSearch endpoint (http[s]://host:port)\n" \
    "      --es-namespace NS      data stream namespace (default: default)\n" \
    "      --index-metrics        also index metric events into metrics-gpu.dmon-NS\n" \
    "      --es-user USER         basic auth user; the password comes from\n" \
    "                             GPULOG_ES_PASSWORD or --es-password-file FILE\n" \
    "      --es-api-key-file FILE API key (else GPULOG_ES_API_KEY), sent as ApiKey\n" \
    "      --es-ca FILE           CA bundle for https; --es-cert/--es-key FILE: client cert\n" \
    "      --deadletter FILE      rejected documents as NDJSON with status and reason\n" \
    "                             (default: stderr)\n" \
    "      --es-batch-bytes N     flush a bulk request at N bytes (default 5 MiB)\n" \
    "      --es-batch-age-ms N    or when its oldest document is N ms old (default 250)\n" \
    "      --es-max-pending-bytes N  backpressure above N buffered bytes (default 64 MiB);\n" \
    "                             below --es-batch-bytes, requests shrink to N/2\n"

/* The options as parsed; conf points into this struct's own strings. */
struct es_cli {
    struct es_conf conf;
    char *password;          /* owned: read from env or file */
    char *api_key;
};

void es_cli_init(struct es_cli *c);
/* Handles one getopt_long result. Returns 1 if opt was an ES option,
 * 0 if not, -1 on a bad value (message in err). */
int es_cli_opt(struct es_cli *c, int opt, const char *arg, char *err, size_t errlen);
/* Loads secrets (GPULOG_ES_PASSWORD, GPULOG_ES_API_KEY, the files) and
 * checks the combination. Returns GL_OK or GL_ERROR with err. */
int es_cli_finish(struct es_cli *c, char *err, size_t errlen);
/* Frees what es_cli owns (secrets are wiped first). */
void es_cli_free(struct es_cli *c);

/* Reads a secret file: the first line, without its line break. Caller
 * frees. NULL on error with err. */
char *es_read_secret(const char *path, char *err, size_t errlen);

/* The most es_request (and setup's Kibana import) reads of one response. */
#define ES_MAX_BODY (16 << 20)
/* libcurl write callback: appends to the struct buf *ud, at most
 * ES_MAX_BODY bytes in all; past that it stops the transfer. */
size_t es_collect_body(char *p, size_t sz, size_t n, void *ud);

/* Writes url into out with any user:password@ part replaced by "***@". */
void es_url_masked(const char *url, char *out, size_t outlen);

/* Applies the auth and TLS settings of ec to a curl easy handle; hdrs gets
 * the Authorization header for API keys appended (caller frees the list).
 * Returns GL_OK. */
int es_curl_auth(CURL *h, const struct es_conf *ec, struct curl_slist **hdrs);

/* One blocking request to the cluster: method, path (starting with '/'),
 * optional JSON body. The response body is appended to resp and its HTTP
 * status stored in *status. Returns GL_OK, or GL_ERROR on a transport error
 * (reason in err). */
int es_request(const struct es_conf *ec, const char *method, const char *path,
               const char *body, size_t len, const char *content_type,
               const char *const *extra_headers,
               struct buf *resp, long *status, char *err, size_t errlen);

/* Counters of an ES sink (sinks/es.c), for logs, tests and benchmarks. */
struct es_stats {
    uint64_t stored, duplicates, deadlettered, skipped;
    uint64_t item_retries;      /* items answered 429/5xx, sent again */
    uint64_t retried_docs;      /* documents sent again after an item retry */
    uint64_t resent_docs;       /* documents of whole requests sent again */
    uint64_t requests, request_failures, backpressure;
    uint64_t bytes_raw, bytes_sent;
};
/* Copies the counters of an ES sink; zeroes when s is another kind. */
void sink_es_stats(const struct sink *s, struct es_stats *out);

struct gpulog_config;
/* Applies the elasticsearch.* keys of cfg to es (flags given later override
 * them). Returns GL_OK, or GL_ERROR with a reason in err. */
int es_cli_from_config(struct es_cli *es, const struct gpulog_config *cfg, char *err, size_t errlen);

#endif
