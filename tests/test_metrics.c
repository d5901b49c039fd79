/* test_metrics.c - the metric registry, its Prometheus text rendering and
 * the /metrics, /healthz, /readyz server (core/metrics.c, core/httpd.c),
 * scraped over a real TCP socket. */
#include "test.h"
#include "../core/metrics.h"
#include "../core/common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

/* One HTTP/1.0 request to 127.0.0.1:port; returns the status (or -errno)
 * and the whole response (headers and body) in resp. */
static int http_req(int port, const char *method, const char *path, struct buf *resp)
{
    buf_reset(resp);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -errno;
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    char req[256];
    int n = snprintf(req, sizeof req, "%s %s HTTP/1.0\r\nHost: test\r\n\r\n", method, path);
    if (write(fd, req, (size_t)n) != n) { close(fd); return -EIO; }
    char tmp[4096];
    ssize_t r;
    while ((r = read(fd, tmp, sizeof tmp)) > 0) buf_append(resp, tmp, (size_t)r);
    close(fd);
    int status = 0;
    if (!resp->p || sscanf(resp->p, "HTTP/1.%*d %d", &status) != 1) return -EPROTO;
    return status;
}

static const char *body_of(const struct buf *resp)
{
    const char *b = resp->p ? strstr(resp->p, "\r\n\r\n") : NULL;
    return b ? b + 4 : "";
}

/* Value of the sample line "series value" in a rendered text, or -1. */
static long long sample(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (!strncmp(p, series, n) && p[n] == ' ') return atoll(p + n + 1);
    }
    return -1;
}

TEST(counters_and_gauges)
{
    metrics_reset();
    metrics_inc(M_LINES_READ);
    metrics_add(M_LINES_READ, 41);
    CHECK_EQ_INT(metrics_get(M_LINES_READ, NULL), 42);
    metrics_set(M_SPOOL_BYTES, 1000);
    metrics_gauge_add(M_SPOOL_BYTES, -300);
    CHECK_EQ_INT(metrics_get(M_SPOOL_BYTES, NULL), 700);
    metrics_gauge_add(M_ANOMALIES_OPEN, 2);
    metrics_gauge_add(M_ANOMALIES_OPEN, -1);
    CHECK_EQ_INT(metrics_get(M_ANOMALIES_OPEN, NULL), 1);
    metrics_inc_label(M_LINES_REJECTED, "bad_number");
    metrics_inc_label(M_LINES_REJECTED, "bad_number");
    metrics_add_label(M_LINES_REJECTED, "too_long", 5);
    CHECK_EQ_INT(metrics_get(M_LINES_REJECTED, "bad_number"), 2);
    CHECK_EQ_INT(metrics_get(M_LINES_REJECTED, "too_long"), 5);
    CHECK_EQ_INT(metrics_get(M_LINES_REJECTED, "never"), 0);
    /* a gauge cannot be set on a labelled family by mistake */
    metrics_set(M_LINES_REJECTED, 99);
    CHECK_EQ_INT(metrics_get(M_LINES_REJECTED, "bad_number"), 2);
    metrics_reset();
    CHECK_EQ_INT(metrics_get(M_LINES_READ, NULL), 0);
    CHECK_EQ_INT(metrics_get(M_LINES_REJECTED, "bad_number"), 0);
}

TEST(render_text_format)
{
    metrics_reset();
    metrics_add(M_LINES_READ, 7);
    metrics_add(M_EVENTS_PRODUCED, 6);
    metrics_inc_label(M_LINES_REJECTED, "bad \"quote\" \\ and\nnewline");
    metrics_set(M_CONSUMER_LAG, 12345);
    struct buf b;
    buf_init(&b);
    metrics_render(&b);
    CHECK(strstr(b.p, "# HELP gpulog_lines_read_total ") != NULL);
    CHECK(strstr(b.p, "# TYPE gpulog_lines_read_total counter\ngpulog_lines_read_total 7\n") != NULL);
    CHECK(strstr(b.p, "# TYPE gpulog_consumer_lag_messages gauge\ngpulog_consumer_lag_messages 12345\n") != NULL);
    CHECK(strstr(b.p, "gpulog_lines_rejected_total{reason=\"bad \\\"quote\\\" \\\\ and\\nnewline\"} 1\n") != NULL);
    CHECK(strstr(b.p, "gpulog_build_info{version=\"" GPULOG_VERSION "\"} 1\n") != NULL);
    CHECK_EQ_INT(sample(b.p, "gpulog_events_produced_total"), 6);
    /* every family the issue asks for is there */
    static const char *fams[] = {
        "gpulog_lines_read_total counter", "gpulog_lines_rejected_total counter",
        "gpulog_events_produced_total counter", "gpulog_delivery_errors_total counter",
        "gpulog_spool_bytes gauge", "gpulog_consumer_lag_messages gauge",
        "gpulog_anomalies_open gauge", "gpulog_bulk_retries_total counter",
        "gpulog_deadletters_total counter", "gpulog_child_restarts_total counter",
        "gpulog_build_info gauge",
    };
    for (size_t i = 0; i < GL_ARRAY_LEN(fams); i++) {
        char needle[128];
        snprintf(needle, sizeof needle, "# TYPE %s\n", fams[i]);
        if (!strstr(b.p, needle)) { printf("  missing %s\n", needle); CHECK(0); }
    }
    /* conventions: each sample follows its HELP and TYPE; counters end in _total;
     * every line is a comment or "name[{labels}] value" */
    char name[128] = "", type[16] = "";
    int helped = 0;
    for (char *line = b.p; *line; ) {
        char *nl = strchr(line, '\n');
        CHECK(nl != NULL);
        if (!nl) break;
        *nl = '\0';
        if (!strncmp(line, "# HELP ", 7)) {
            CHECK(sscanf(line + 7, "%127s", name) == 1);
            helped = 1;
        } else if (!strncmp(line, "# TYPE ", 7)) {
            char n2[128];
            CHECK(sscanf(line + 7, "%127s %15s", n2, type) == 2);
            CHECK_EQ_STR(n2, name);
            CHECK(helped);
            size_t l = strlen(name);
            if (!strcmp(type, "counter")) CHECK(l > 6 && !strcmp(name + l - 6, "_total"));
            else CHECK_EQ_STR(type, "gauge");
            helped = 0;
        } else {
            size_t l = strlen(name);
            CHECK(!strncmp(line, name, l) && (line[l] == ' ' || line[l] == '{'));
            char *sp = strrchr(line, ' ');
            CHECK(sp != NULL);
            if (sp) {
                char *end;
                strtod(sp + 1, &end);
                CHECK(*end == '\0' && end > sp + 1);
            }
        }
        *nl = '\n';
        line = nl + 1;
    }
    buf_free(&b);
}

TEST(label_cardinality_is_bounded)
{
    metrics_reset();
    char lab[32];
    for (int i = 0; i < 100; i++) {
        snprintf(lab, sizeof lab, "r%d", i);
        metrics_inc_label(M_LINES_REJECTED, lab);
    }
    /* the first 31 keep their series, the rest fold into "other" */
    CHECK_EQ_INT(metrics_get(M_LINES_REJECTED, "r0"), 1);
    CHECK_EQ_INT(metrics_get(M_LINES_REJECTED, "r30"), 1);
    CHECK_EQ_INT(metrics_get(M_LINES_REJECTED, "r31"), 0);
    CHECK_EQ_INT(metrics_get(M_LINES_REJECTED, "other"), 69);
    metrics_inc_label(M_LINES_REJECTED, "r5");
    CHECK_EQ_INT(metrics_get(M_LINES_REJECTED, "r5"), 2);
    struct buf b;
    buf_init(&b);
    metrics_render(&b);
    int series = 0;
    for (const char *p = b.p; (p = strstr(p, "gpulog_lines_rejected_total{")); p++) series++;
    CHECK_EQ_INT(series, METRICS_MAX_SERIES);
    buf_free(&b);
}

#define NTHREADS 4
#define NINCS 200000

static void *hammer(void *arg)
{
    const char *lab = arg;
    for (int i = 0; i < NINCS; i++) {
        metrics_inc(M_LINES_READ);
        metrics_inc_label(M_LINES_REJECTED, (i & 1) ? lab : "shared");
        metrics_gauge_add(M_SPOOL_BYTES, (i & 1) ? 3 : -3);
    }
    return NULL;
}

TEST(thread_safe)
{
    metrics_reset();
    pthread_t t[NTHREADS];
    static const char *labs[NTHREADS] = { "t0", "t1", "t2", "t3" };
    for (int i = 0; i < NTHREADS; i++) pthread_create(&t[i], NULL, hammer, (void *)labs[i]);
    /* render concurrently with the writers */
    struct buf b;
    buf_init(&b);
    for (int i = 0; i < 20; i++) { buf_reset(&b); metrics_render(&b); }
    buf_free(&b);
    for (int i = 0; i < NTHREADS; i++) pthread_join(t[i], NULL);
    CHECK_EQ_INT(metrics_get(M_LINES_READ, NULL), (long long)NTHREADS * NINCS);
    CHECK_EQ_INT(metrics_get(M_LINES_REJECTED, "shared"), (long long)NTHREADS * NINCS / 2);
    for (int i = 0; i < NTHREADS; i++) CHECK_EQ_INT(metrics_get(M_LINES_REJECTED, labs[i]), NINCS / 2);
    CHECK_EQ_INT(metrics_get(M_SPOOL_BYTES, NULL), 0);
}

TEST(http_endpoints)
{
    metrics_reset();
    char err[256] = "";
    int rc = metrics_serve("127.0.0.1:0", err, sizeof err);
    if (rc != GL_OK) printf("  %s\n", err);
    CHECK_EQ_INT(rc, GL_OK);
    int port = metrics_port();
    CHECK(port > 0);
    struct buf r;
    buf_init(&r);

    metrics_add(M_LINES_READ, 1234);
    metrics_add_label(M_LINES_REJECTED, "bad_value", 3);
    metrics_add(M_CHILD_RESTARTS, 2);
    CHECK_EQ_INT(http_req(port, "GET", "/metrics", &r), 200);
    CHECK(strstr(r.p, "Content-Type: text/plain; version=0.0.4") != NULL);
    CHECK_EQ_INT(sample(body_of(&r), "gpulog_lines_read_total"), 1234);
    CHECK_EQ_INT(sample(body_of(&r), "gpulog_lines_rejected_total{reason=\"bad_value\"}"), 3);
    CHECK_EQ_INT(sample(body_of(&r), "gpulog_child_restarts_total"), 2);
    CHECK(strstr(body_of(&r), "# HELP gpulog_deadletters_total ") != NULL);
    CHECK(strstr(body_of(&r), "# TYPE gpulog_deadletters_total counter\n") != NULL);
    /* values move between scrapes */
    metrics_inc(M_LINES_READ);
    CHECK_EQ_INT(http_req(port, "GET", "/metrics", &r), 200);
    CHECK_EQ_INT(sample(body_of(&r), "gpulog_lines_read_total"), 1235);

    CHECK_EQ_INT(http_req(port, "GET", "/healthz", &r), 200);
    CHECK_EQ_STR(body_of(&r), "ok\n");
    CHECK_EQ_INT(http_req(port, "GET", "/readyz", &r), 503);
    metrics_set_ready(1);
    CHECK_EQ_INT(http_req(port, "GET", "/readyz", &r), 200);
    CHECK_EQ_INT(sample(body_of(&r), "gpulog_ready"), -1);
    CHECK_EQ_INT(http_req(port, "GET", "/metrics", &r), 200);
    CHECK_EQ_INT(sample(body_of(&r), "gpulog_ready"), 1);
    metrics_set_ready(0);
    CHECK_EQ_INT(http_req(port, "GET", "/readyz", &r), 503);
    CHECK_EQ_INT(http_req(port, "HEAD", "/healthz", &r), 200);
    CHECK_EQ_INT(http_req(port, "GET", "/nope", &r), 404);
    CHECK_EQ_INT(http_req(port, "POST", "/metrics", &r), 405);

    /* a second server in the same process is refused */
    CHECK_EQ_INT(metrics_serve("127.0.0.1:0", err, sizeof err), GL_ERROR);
    metrics_stop();
    CHECK_EQ_INT(metrics_port(), 0);
    CHECK_EQ_INT(http_req(port, "GET", "/healthz", &r), -ECONNREFUSED);
    metrics_stop();   /* idempotent */
    buf_free(&r);
}

TEST(serve_errors)
{
    char err[256];
    CHECK_EQ_INT(metrics_serve("", err, sizeof err), GL_OK);     /* disabled */
    CHECK_EQ_INT(metrics_port(), 0);
    CHECK_EQ_INT(metrics_serve("nonsense", err, sizeof err), GL_ERROR);
    CHECK(strstr(err, "not HOST:PORT") != NULL);
    CHECK_EQ_INT(metrics_serve("127.0.0.1:70000", err, sizeof err), GL_ERROR);
    /* address in use */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0);
    CHECK(listen(fd, 1) == 0);
    socklen_t sl = sizeof sa;
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", ntohs(sa.sin_port));
    CHECK_EQ_INT(metrics_serve(addr, err, sizeof err), GL_ERROR);
    CHECK(strstr(err, "in use") != NULL);
    close(fd);
    CHECK_EQ_INT(metrics_port(), 0);
    /* [::1] works where IPv6 loopback exists; either way no crash and a clear answer */
    int rc = metrics_serve("[::1]:0", err, sizeof err);
    if (rc == GL_OK) { CHECK(metrics_port() > 0); metrics_stop(); }
    else CHECK(strlen(err) > 0);
}

/* A process with more than FD_SETSIZE (1024) descriptors open (detect with
 * many connections) still serves /metrics: the server must not use select(). */
TEST(serves_with_high_fds)
{
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur < 1200) {
        rl.rlim_cur = rl.rlim_max < 1200 ? rl.rlim_max : 1200;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    CHECK(rl.rlim_cur >= 1200);
    if (rl.rlim_cur < 1200) return;
    int fds[1100], n = 0;
    while (n < 1100) {
        int fd = dup(0);
        if (fd < 0) break;
        fds[n++] = fd;
    }
    char err[256];
    CHECK_EQ_INT(metrics_serve("127.0.0.1:0", err, sizeof err), GL_OK);
    struct buf r;
    buf_init(&r);
    CHECK_EQ_INT(http_req(metrics_port(), "GET", "/healthz", &r), 200);
    metrics_stop();
    buf_free(&r);
    while (n > 0) close(fds[--n]);
}

/* docs/operations.md lists every family the registry renders (run from the
 * repository root, as scripts/test.sh does). */
TEST(operations_doc_lists_every_metric)
{
    FILE *f = fopen("docs/operations.md", "r");
    CHECK(f != NULL);
    if (!f) return;
    struct buf doc, m;
    buf_init(&doc);
    buf_init(&m);
    char tmp[4096];
    size_t r;
    while ((r = fread(tmp, 1, sizeof tmp, f)) > 0) buf_append(&doc, tmp, r);
    fclose(f);
    metrics_render(&m);
    int families = 0;
    for (const char *p = m.p; (p = strstr(p, "# TYPE ")); p++) {
        char name[128], needle[140];
        if (sscanf(p + 7, "%127s", name) != 1) continue;
        families++;
        snprintf(needle, sizeof needle, "| `%s` |", name);
        if (!strstr(doc.p, needle)) { printf("  docs/operations.md lacks %s\n", name); CHECK(0); }
    }
    CHECK(families >= 12);
    buf_free(&doc);
    buf_free(&m);
}

int main(void)
{
    RUN(counters_and_gauges);
    RUN(render_text_format);
    RUN(label_cardinality_is_bounded);
    RUN(thread_safe);
    RUN(http_endpoints);
    RUN(serve_errors);
    RUN(serves_with_high_fds);
    RUN(operations_doc_lists_every_metric);
    return TEST_REPORT();
}
