/* es_cli.c - see es_cli.h. */
#include "es_cli.h"
#include "es_bulk.h"
#include "../core/config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void es_cli_init(struct es_cli *c)
{
    memset(c, 0, sizeof *c);
    c->conf.ns = "default";
}

static int parse_size(const char *arg, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(arg, &end, 10);
    if (errno || end == arg || v < 0) return 0;
    if (*end == 'k' || *end == 'K') { v *= 1024; end++; }
    else if (*end == 'm' || *end == 'M') { v *= 1024 * 1024; end++; }
    if (*end) return 0;
    *out = v;
    return 1;
}

int es_cli_opt(struct es_cli *c, int opt, const char *arg, char *err, size_t errlen)
{
    long long v;
    switch (opt) {
    case ES_OPT_URL: c->conf.url = arg; return 1;
    case ES_OPT_NS:
        if (!es_ns_valid(arg)) {
            snprintf(err, errlen, "--es-namespace: '%s' is not a valid namespace ([a-z0-9_], at most 100)", arg);
            return -1;
        }
        c->conf.ns = arg;
        return 1;
    case ES_OPT_INDEX_METRICS: c->conf.index_metrics = 1; return 1;
    case ES_OPT_USER: c->conf.user = arg; return 1;
    case ES_OPT_PASSWORD_FILE:
        free(c->password);
        if (!(c->password = es_read_secret(arg, err, errlen))) return -1;
        return 1;
    case ES_OPT_API_KEY_FILE:
        free(c->api_key);
        if (!(c->api_key = es_read_secret(arg, err, errlen))) return -1;
        return 1;
    case ES_OPT_CA: c->conf.ca_file = arg; return 1;
    case ES_OPT_CERT: c->conf.cert_file = arg; return 1;
    case ES_OPT_KEY: c->conf.key_file = arg; return 1;
    case ES_OPT_DEADLETTER: c->conf.deadletter_path = arg; return 1;
    case ES_OPT_BATCH_BYTES:
    case ES_OPT_MAX_PENDING:
        if (!parse_size(arg, &v) || v < 1) {
            snprintf(err, errlen, "bad size '%s' (bytes, or with k/M)", arg);
            return -1;
        }
        if (opt == ES_OPT_BATCH_BYTES) c->conf.batch_bytes = (size_t)v;
        else c->conf.max_pending_bytes = (size_t)v;
        return 1;
    case ES_OPT_BATCH_AGE:
        if (!parse_size(arg, &v) || v > 3600000) {
            snprintf(err, errlen, "--es-batch-age-ms: bad value '%s'", arg);
            return -1;
        }
        c->conf.batch_age_ms = (int)v;
        return 1;
    default:
        return 0;
    }
}

int es_cli_finish(struct es_cli *c, char *err, size_t errlen)
{
    const char *env;
    if (c->password && !c->conf.user) {
        snprintf(err, errlen, "--es-password-file needs --es-user");
        return GL_ERROR;
    }
    /* the environment's password counts only with a user (an API key user
     * may have GPULOG_ES_PASSWORD set for something else) */
    if (!c->password && c->conf.user && (env = getenv("GPULOG_ES_PASSWORD")) && *env) c->password = xstrdup(env);
    if (!c->api_key && (env = getenv("GPULOG_ES_API_KEY")) && *env) c->api_key = xstrdup(env);
    if (c->conf.url && !config_url_ok(c->conf.url)) {
        snprintf(err, errlen, "--es: the URL must be http:// or https:// with a host");
        return GL_ERROR;
    }
    c->conf.password = c->password;
    c->conf.api_key = c->api_key;
    return GL_OK;
}

static void wipe_free(char *s)
{
    if (!s) return;
    volatile char *p = s;
    while (*p) *p++ = 0;
    free(s);
}

void es_cli_free(struct es_cli *c)
{
    wipe_free(c->password);
    wipe_free(c->api_key);
    c->password = c->api_key = NULL;
}

char *es_read_secret(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    char line[4096];
    if (!fgets(line, sizeof line, f)) line[0] = '\0';
    fclose(f);
    size_t n = strcspn(line, "\r\n");
    line[n] = '\0';
    if (!n) {
        snprintf(err, errlen, "%s: empty secret file", path);
        return NULL;
    }
    char *s = xstrdup(line);
    volatile char *p = line;
    for (size_t i = 0; i < n; i++) p[i] = 0;
    return s;
}

void es_url_masked(const char *url, char *out, size_t outlen)
{
    if (!url) { snprintf(out, outlen, "(none)"); return; }
    struct buf b;
    buf_init(&b);
    config_url_mask(url, &b);
    snprintf(out, outlen, "%s", b.p ? b.p : "");
    buf_free(&b);
}

int es_curl_auth(CURL *h, const struct es_conf *ec, struct curl_slist **hdrs)
{
    if (ec->user) {
        curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(h, CURLOPT_USERNAME, ec->user);
        curl_easy_setopt(h, CURLOPT_PASSWORD, ec->password ? ec->password : "");
    }
    if (ec->api_key) {
        struct buf b;
        buf_init(&b);
        buf_printf(&b, "Authorization: ApiKey %s", ec->api_key);
        *hdrs = curl_slist_append(*hdrs, b.p);
        volatile char *p = b.p;
        for (size_t i = 0; i < b.len; i++) p[i] = 0;
        buf_free(&b);
    }
    if (ec->ca_file) curl_easy_setopt(h, CURLOPT_CAINFO, ec->ca_file);
    if (ec->cert_file) curl_easy_setopt(h, CURLOPT_SSLCERT, ec->cert_file);
    if (ec->key_file) curl_easy_setopt(h, CURLOPT_SSLKEY, ec->key_file);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "gpulog/" GPULOG_VERSION);
    return GL_OK;
}

size_t es_collect_body(char *p, size_t sz, size_t n, void *ud)
{
    struct buf *b = ud;
    if (b->len + sz * n > ES_MAX_BODY) return 0;   /* curl stops with CURLE_WRITE_ERROR */
    buf_append(b, p, sz * n);
    return sz * n;
}

int es_request(const struct es_conf *ec, const char *method, const char *path,
               const char *body, size_t len, const char *content_type,
               const char *const *extra_headers,
               struct buf *resp, long *status, char *err, size_t errlen)
{
    static int curl_ready;
    if (!curl_ready) { curl_global_init(CURL_GLOBAL_DEFAULT); curl_ready = 1; }
    CURL *h = curl_easy_init();
    if (!h) { snprintf(err, errlen, "curl_easy_init failed"); return GL_ERROR; }
    struct buf url;
    buf_init(&url);
    buf_puts(&url, ec->url);
    while (url.len && url.p[url.len - 1] == '/') url.p[--url.len] = '\0';
    buf_puts(&url, path);
    struct curl_slist *hdrs = NULL;
    es_curl_auth(h, ec, &hdrs);
    if (body) {
        struct buf ct;
        buf_init(&ct);
        buf_printf(&ct, "Content-Type: %s", content_type ? content_type : "application/json");
        hdrs = curl_slist_append(hdrs, ct.p);
        buf_free(&ct);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    }
    for (const char *const *x = extra_headers; x && *x; x++) hdrs = curl_slist_append(hdrs, *x);
    hdrs = curl_slist_append(hdrs, "Expect:");
    curl_easy_setopt(h, CURLOPT_URL, url.p);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    if (!strcmp(method, "HEAD")) curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, es_collect_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, resp);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 60000L);
    CURLcode rc = curl_easy_perform(h);
    int ret = GL_OK;
    if (rc != CURLE_OK) {
        char masked[512];
        es_url_masked(ec->url, masked, sizeof masked);
        if (rc == CURLE_WRITE_ERROR && resp->len + CURL_MAX_WRITE_SIZE >= ES_MAX_BODY)
            snprintf(err, errlen, "%s %s%s: the response is larger than %d MiB: refused", method, masked, path,
                     ES_MAX_BODY >> 20);
        else
            snprintf(err, errlen, "%s %s%s: %s", method, masked, path, curl_easy_strerror(rc));
        ret = GL_ERROR;
    } else {
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    }
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(h);
    buf_free(&url);
    return ret;
}

/* Applies the elasticsearch.* keys of a loaded configuration to es, as if
 * they were given as options (flags parsed later override them). Borrows cfg. */
int es_cli_from_config(struct es_cli *es, const struct gpulog_config *cfg, char *err, size_t errlen)
{
    const struct { int opt; const char *v; } m[] = {
        { ES_OPT_URL, cfg->es.url }, { ES_OPT_NS, cfg->es.ns }, { ES_OPT_USER, cfg->es.user },
        { ES_OPT_PASSWORD_FILE, cfg->es.password_file }, { ES_OPT_API_KEY_FILE, cfg->es.api_key_file },
        { ES_OPT_CA, cfg->es.ca_file }, { ES_OPT_CERT, cfg->es.cert_file }, { ES_OPT_KEY, cfg->es.key_file },
        { ES_OPT_DEADLETTER, strcmp(cfg->es.deadletter, "kafka") ? cfg->es.deadletter : "" },
    };
    for (size_t i = 0; i < GL_ARRAY_LEN(m); i++)
        if (m[i].v && *m[i].v && es_cli_opt(es, m[i].opt, m[i].v, err, errlen) < 0) return GL_ERROR;
    char n[32];
    snprintf(n, sizeof n, "%lld", (long long)cfg->es.batch_bytes);
    if (es_cli_opt(es, ES_OPT_BATCH_BYTES, n, err, errlen) < 0) return GL_ERROR;
    snprintf(n, sizeof n, "%lld", (long long)cfg->es.batch_age_ms);
    if (es_cli_opt(es, ES_OPT_BATCH_AGE, n, err, errlen) < 0) return GL_ERROR;
    snprintf(n, sizeof n, "%lld", (long long)cfg->es.max_pending_bytes);
    if (es_cli_opt(es, ES_OPT_MAX_PENDING, n, err, errlen) < 0) return GL_ERROR;
    if (cfg->es.index_metrics && es_cli_opt(es, ES_OPT_INDEX_METRICS, NULL, err, errlen) < 0) return GL_ERROR;
    return GL_OK;
}
