/* test_es_bulk.c - bulk body builder, response parser, classification,
 * backoff and dead-letter records of the ES sink; plus the sink against a
 * closed port (nothing settled, nothing lost) and against a minimal
 * in-process _bulk answerer (the memory bound as given). */
#include "../sinks/es_bulk.h"
#include "../sinks/es_cli.h"
#include "../sinks/sink.h"
#include "test.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

TEST(stream_names)
{
    char b[64];
    CHECK(es_stream_name(STREAM_ANOMALIES, "default", b, sizeof b) > 0);
    CHECK_EQ_STR(b, "logs-gpu.anomaly-default");
    es_stream_name(STREAM_EVENTS, "prod", b, sizeof b);
    CHECK_EQ_STR(b, "logs-gpu.xid-prod");
    es_stream_name(STREAM_METRICS, NULL, b, sizeof b);
    CHECK_EQ_STR(b, "metrics-gpu.dmon-default");
    CHECK_EQ_INT(es_stream_name(STREAM_METRICS, "default", b, 10), -1);
    CHECK(es_ns_valid("default"));
    CHECK(es_ns_valid("team_a1"));
    CHECK(!es_ns_valid("Prod"));
    CHECK(!es_ns_valid("a-b"));
    CHECK(!es_ns_valid("_x"));
    CHECK(!es_ns_valid(""));
    CHECK(!es_ns_valid("a*"));
}

/* Which stream a dataset goes to: the five routed names exactly, anything
 * else (a prefix, a longer name, a name of the same length) is metrics. */
TEST(stream_of_dataset)
{
    CHECK_EQ_INT(sink_stream_of("gpu.xid"), STREAM_EVENTS);
    CHECK_EQ_INT(sink_stream_of("gpu.sxid"), STREAM_EVENTS);
    CHECK_EQ_INT(sink_stream_of("gpulog.collector"), STREAM_EVENTS);
    CHECK_EQ_INT(sink_stream_of("gpu.anomaly"), STREAM_ANOMALIES);
    CHECK_EQ_INT(sink_stream_of("gpu.incident"), STREAM_ANOMALIES);
    CHECK_EQ_INT(sink_stream_of("gpu.fleet_incident"), STREAM_ANOMALIES);
    const char *metrics[] = { NULL, "", "gpu.dmon", "csv.generic", "gpu.xidx", "gpu.xi", "gpu.anomalies",
                              "gpu.anomalY", "gpu.incidenT", "gpulog.collectoR", "gpu.sxiD", "gpu.xiD" };
    for (size_t i = 0; i < sizeof metrics / sizeof *metrics; i++)
        CHECK_EQ_INT(sink_stream_of(metrics[i]), STREAM_METRICS);
}

TEST(bulk_body)
{
    struct buf b;
    buf_init(&b);
    const char *doc = "{\"a\":1,\n\"m\":\"x\"}";
    es_bulk_append(&b, "logs-gpu.xid-default", "0123abcd", doc, strlen(doc));
    es_bulk_append(&b, "logs-gpu.anomaly-default", NULL, "{}", 2);
    CHECK_EQ_STR(b.p,
        "{\"create\":{\"_index\":\"logs-gpu.xid-default\",\"_id\":\"0123abcd\"}}\n"
        "{\"a\":1, \"m\":\"x\"}\n"
        "{\"create\":{\"_index\":\"logs-gpu.anomaly-default\"}}\n"
        "{}\n");
    /* every line is one JSON value */
    size_t lines = 0;
    for (char *p = b.p, *nl; (nl = strchr(p, '\n')); p = nl + 1, lines++) {
        json_t *j = json_loadb(p, (size_t)(nl - p), 0, NULL);
        CHECK(json_is_object(j));
        json_decref(j);
    }
    CHECK_EQ_INT(lines, 4);
    buf_free(&b);
}

TEST(verdicts)
{
    CHECK_EQ_INT(es_item_verdict(200), ES_STORED);
    CHECK_EQ_INT(es_item_verdict(201), ES_STORED);
    CHECK_EQ_INT(es_item_verdict(409), ES_STORED);
    CHECK_EQ_INT(es_item_verdict(429), ES_RETRY);
    CHECK_EQ_INT(es_item_verdict(500), ES_RETRY);
    CHECK_EQ_INT(es_item_verdict(503), ES_RETRY);
    CHECK_EQ_INT(es_item_verdict(400), ES_REJECT);
    CHECK_EQ_INT(es_item_verdict(404), ES_REJECT);
    CHECK_EQ_INT(es_item_verdict(403), ES_REJECT);
    CHECK_EQ_INT(es_item_verdict(0), ES_REJECT);
}

TEST(parse_mixed)
{
    /* shape of an OpenSearch answer under filter_path */
    const char *r =
        "{\"errors\":true,\"items\":["
        "{\"create\":{\"status\":201}},"
        "{\"create\":{\"status\":409,\"error\":{\"type\":\"version_conflict_engine_exception\",\"reason\":\"exists\"}}},"
        "{\"create\":{\"status\":429,\"error\":{\"type\":\"opensearch_rejected_execution_exception\",\"reason\":\"queue full\"}}},"
        "{\"create\":{\"status\":400,\"error\":{\"type\":\"mapper_parsing_exception\",\"reason\":\"failed to parse field [gpu.power.usage]\"}}},"
        "{\"index\":{\"status\":503}}]}";
    struct es_bulk_result res;
    char err[256];
    CHECK_EQ_INT(es_bulk_parse(r, strlen(r), 5, &res, err, sizeof err), GL_OK);
    CHECK_EQ_INT(res.errors, 1);
    CHECK_EQ_INT(res.n, 5);
    CHECK_EQ_INT(res.items[0].status, 201);
    CHECK(res.items[0].reason == NULL);
    CHECK_EQ_INT(res.items[1].status, 409);
    CHECK_EQ_INT(es_item_verdict(res.items[2].status), ES_RETRY);
    CHECK_EQ_INT(res.items[3].status, 400);
    CHECK_EQ_STR(res.items[3].reason, "mapper_parsing_exception: failed to parse field [gpu.power.usage]");
    CHECK_EQ_INT(res.items[4].status, 503);
    es_bulk_result_free(&res);
}

TEST(parse_bad)
{
    struct es_bulk_result res;
    char err[256];
    const char *ok2 = "{\"errors\":false,\"items\":[{\"create\":{\"status\":201}},{\"create\":{\"status\":201}}]}";
    /* wrong item count: the whole request must be retried */
    CHECK_EQ_INT(es_bulk_parse(ok2, strlen(ok2), 3, &res, err, sizeof err), GL_ERROR);
    CHECK_EQ_INT(es_bulk_parse(ok2, strlen(ok2), 2, &res, err, sizeof err), GL_OK);
    es_bulk_result_free(&res);
    /* truncated body, HTML, no errors flag, item without status */
    const char *bad[] = {
        "{\"errors\":false,\"items\":[{\"create\":{\"sta",
        "<html>502 Bad Gateway</html>",
        "{\"items\":[]}",
        "{\"errors\":true,\"items\":[{\"create\":{}}]}",
        "{\"errors\":true}",
        "[]",
    };
    size_t expect[] = { 1, 1, 0, 1, 1, 0 };
    for (size_t i = 0; i < GL_ARRAY_LEN(bad); i++)
        CHECK_EQ_INT(es_bulk_parse(bad[i], strlen(bad[i]), expect[i], &res, err, sizeof err), GL_ERROR);
    /* filter_path can drop the items of an all-good answer */
    const char *bare = "{\"errors\":false}";
    CHECK_EQ_INT(es_bulk_parse(bare, strlen(bare), 3, &res, err, sizeof err), GL_OK);
    CHECK_EQ_INT(res.n, 3);
    CHECK_EQ_INT(res.items[2].status, 201);
    es_bulk_result_free(&res);
}

TEST(backoff)
{
    uint64_t rnd = 42;
    for (int a = 1; a <= 20; a++) {
        int64_t full = 100;
        for (int i = 1; i < a && full < 5000; i++) full *= 2;
        if (full > 5000) full = 5000;
        for (int k = 0; k < 50; k++) {
            int64_t d = es_backoff_ms(a, 100, 5000, &rnd);
            CHECK(d >= full - full / 2 && d <= full);
        }
    }
    /* jitter: not every draw is the same */
    int64_t first = es_backoff_ms(5, 100, 5000, &rnd);
    int differs = 0;
    for (int k = 0; k < 20; k++) differs |= es_backoff_ms(5, 100, 5000, &rnd) != first;
    CHECK(differs);
}

TEST(deadletter_record)
{
    struct buf b;
    buf_init(&b);
    const char *doc = "{\"event.id\":\"ab\",\"gpu.power.usage\":\"hot\"}";
    struct deadletter d = { .output = "elasticsearch", .status = 400, .reason = "mapper_parsing_exception: \"x\"",
                            .index = "logs-gpu.xid-default", .json = doc, .len = strlen(doc) };
    sink_deadletter_record(&b, &d);
    CHECK(b.len && b.p[b.len - 1] == '\n');
    json_t *j = json_loadb(b.p, b.len, 0, NULL);
    CHECK(json_is_object(j));
    CHECK_EQ_INT(json_integer_value(json_object_get(j, "deadletter.status")), 400);
    CHECK_EQ_STR(json_string_value(json_object_get(j, "deadletter.reason")), "mapper_parsing_exception: \"x\"");
    CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(j, "document"), "gpu.power.usage")), "hot");
    CHECK_EQ_STR(json_string_value(json_object_get(j, "event.id")), "ab");   /* taken from the document */
    CHECK_EQ_STR(json_string_value(json_object_get(j, "deadletter.index")), "logs-gpu.xid-default");
    CHECK_EQ_STR(json_string_value(json_object_get(j, "deadletter.output")), "elasticsearch");
    CHECK(!json_object_get(j, "deadletter.topic"));
    json_decref(j);
    /* a document that is not JSON is kept as a string */
    buf_reset(&b);
    struct deadletter k = { .output = "kafka", .status = 10, .reason = "Broker: Message size too large",
                            .topic = "gpu.metrics", .key = "n1", .keylen = 2, .json = "{broken\n", .len = 8 };
    sink_deadletter_record(&b, &k);
    j = json_loadb(b.p, b.len, 0, NULL);
    CHECK_EQ_STR(json_string_value(json_object_get(j, "document")), "{broken\n");
    CHECK_EQ_STR(json_string_value(json_object_get(j, "deadletter.topic")), "gpu.metrics");
    CHECK_EQ_STR(json_string_value(json_object_get(j, "deadletter.key")), "n1");
    CHECK_EQ_INT(json_integer_value(json_object_get(j, "deadletter.status")), 10);
    CHECK(!json_object_get(j, "event.id"));
    json_decref(j);
    buf_free(&b);
}

TEST(cli_and_mask)
{
    char out[128], err[256];
    es_url_masked("https://elastic:s3cret@es.example:9200/", out, sizeof out);
    CHECK_EQ_STR(out, "https://***@es.example:9200/");
    CHECK(!strstr(out, "s3cret"));
    es_url_masked("http://h:9200/a@b", out, sizeof out);
    CHECK_EQ_STR(out, "http://h:9200/a@b");
    struct es_cli c;
    es_cli_init(&c);
    CHECK_EQ_INT(es_cli_opt(&c, ES_OPT_NS, "Bad-NS", err, sizeof err), -1);
    CHECK_EQ_INT(es_cli_opt(&c, ES_OPT_NS, "prod", err, sizeof err), 1);
    CHECK_EQ_INT(es_cli_opt(&c, ES_OPT_BATCH_BYTES, "2M", err, sizeof err), 1);
    CHECK_EQ_INT(c.conf.batch_bytes, 2 << 20);
    CHECK_EQ_INT(es_cli_opt(&c, 'x', "", err, sizeof err), 0);
    CHECK_EQ_INT(es_cli_opt(&c, ES_OPT_URL, "ftp://x", err, sizeof err), 1);
    CHECK_EQ_INT(es_cli_finish(&c, err, sizeof err), GL_ERROR);
    char path[] = "/tmp/gpulog-es-secret.XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    CHECK(write(fd, "pw1\nignored\n", 12) == 12);
    close(fd);
    setenv("GPULOG_ES_PASSWORD", "from-env", 1);
    CHECK_EQ_INT(es_cli_opt(&c, ES_OPT_URL, "http://127.0.0.1:9", err, sizeof err), 1);
    CHECK_EQ_INT(es_cli_opt(&c, ES_OPT_PASSWORD_FILE, path, err, sizeof err), 1);
    CHECK_EQ_INT(es_cli_finish(&c, err, sizeof err), GL_ERROR);   /* password without user */
    CHECK_EQ_INT(es_cli_opt(&c, ES_OPT_USER, "u", err, sizeof err), 1);
    CHECK_EQ_INT(es_cli_finish(&c, err, sizeof err), GL_OK);
    CHECK_EQ_STR(c.conf.password, "pw1");                        /* the file wins over env */
    unsetenv("GPULOG_ES_PASSWORD");
    unlink(path);
    CHECK_EQ_INT(es_cli_opt(&c, ES_OPT_API_KEY_FILE, path, err, sizeof err), -1);
    es_cli_free(&c);
}

static int settled_calls;
static void count_settle(void *ctx, void *tok, enum sink_outcome o)
{
    (void)ctx; (void)tok; (void)o;
    settled_calls++;
}

/* A port with nothing listening: documents stay unsettled (kept for a
 * retry), metrics without --index-metrics settle at once, and the memory
 * bound answers GL_AGAIN. */
TEST(sink_refused)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t al = sizeof a;
    CHECK(bind(s, (struct sockaddr *)&a, sizeof a) == 0);
    CHECK(getsockname(s, (struct sockaddr *)&a, &al) == 0);
    close(s);                                   /* now nothing listens there */
    char url[64], err[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(a.sin_port));
    struct es_conf ec = { .url = url, .batch_bytes = 1024, .batch_age_ms = 1, .max_pending_bytes = 4096 };
    gl_log_level = GL_LOG_ERROR;
    struct sink *sk = sink_es_new(&ec, count_settle, NULL, err, sizeof err);
    CHECK(sk != NULL);
    if (!sk) return;
    const char *doc = "{\"@timestamp\":\"2025-01-01T00:00:00.000Z\",\"event.dataset\":\"gpu.xid\"}";
    struct sink_doc d = { .stream = STREAM_EVENTS, .id = "00112233445566778899aabbccddeeff",
                          .json = doc, .len = strlen(doc) };
    int n = 0, again = 0;
    for (int i = 0; i < 200 && !again; i++) {
        int rc = sink_write(sk, &d);
        if (rc == GL_AGAIN) again = 1; else if (rc == GL_OK) n++;
    }
    CHECK(again);
    CHECK(n > 1 && n < 200);
    struct sink_doc m = d;
    m.stream = STREAM_METRICS;
    CHECK_EQ_INT(sink_write(sk, &m), GL_OK);
    CHECK_EQ_INT(settled_calls, 1);
    long left = sink_drain(sk, 700);
    CHECK_EQ_INT(left, n);
    CHECK_EQ_INT(settled_calls, 1);
    struct es_stats st;
    sink_es_stats(sk, &st);
    CHECK(st.request_failures >= 1);
    CHECK_EQ_INT(st.stored, 0);
    sink_free(sk);
    /* a URL that is not http(s) is refused up front */
    ec.url = "localhost:9200";
    CHECK(sink_es_new(&ec, count_settle, NULL, err, sizeof err) == NULL);
}

/* A minimal _bulk answerer on a loopback port, run by its own thread: it
 * owns the listening and the client socket, answers every request with a
 * status for each of its documents (201, or for the first nscript
 * documents it sees, script[i] with an error object when not 2xx) and
 * records the largest (inflated) body. */
struct mock_es {
    int lfd, port;
    atomic_int stop;
    size_t max_body, requests, docs;
    const int *script;
    size_t nscript;
    pthread_t th;
};

/* Reads one HTTP request of c (headers, Content-Length body) into b;
 * returns the body's offset in b, or -1 when the peer closed or stalled. */
static long mock_read_request(int c, struct buf *b, atomic_int *stop)
{
    b->len = 0;
    long hdr_end = -1, clen = -1;
    for (;;) {
        if (hdr_end >= 0 && (long)b->len >= hdr_end + clen) return hdr_end;
        struct pollfd pf = { .fd = c, .events = POLLIN };
        if (atomic_load(stop)) return -1;
        if (poll(&pf, 1, 50) <= 0) continue;
        char tmp[8192];
        ssize_t n = read(c, tmp, sizeof tmp);
        if (n <= 0) return -1;
        buf_append(b, tmp, (size_t)n);
        if (hdr_end < 0) {
            buf_putc(b, '\0');
            b->len--;
            char *e = strstr(b->p, "\r\n\r\n");
            if (!e) continue;
            hdr_end = e + 4 - b->p;
            const char *cl = strcasestr(b->p, "Content-Length:");
            clen = cl ? atol(cl + 15) : 0;
        }
    }
}

/* Counts the documents (every second line) of a gzip bulk body. */
static size_t mock_count_docs(const char *gz, size_t len, size_t *raw)
{
    z_stream z = { 0 };
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return 0;
    z.next_in = (Bytef *)(uintptr_t)gz;
    z.avail_in = (uInt)len;
    size_t lines = 0;
    *raw = 0;
    char out[16384];
    int rc;
    do {
        z.next_out = (Bytef *)out;
        z.avail_out = sizeof out;
        rc = inflate(&z, Z_NO_FLUSH);
        size_t got = sizeof out - z.avail_out;
        for (size_t i = 0; i < got; i++) lines += out[i] == '\n';
        *raw += got;
    } while (rc == Z_OK);
    inflateEnd(&z);
    return lines / 2;
}

static void *mock_es_run(void *arg)
{
    struct mock_es *m = arg;
    struct buf req, ans;
    buf_init(&req);
    buf_init(&ans);
    while (!atomic_load(&m->stop)) {
        struct pollfd pf = { .fd = m->lfd, .events = POLLIN };
        if (poll(&pf, 1, 50) <= 0) continue;
        int c = accept(m->lfd, NULL, NULL);
        if (c < 0) continue;
        long off;
        while ((off = mock_read_request(c, &req, &m->stop)) >= 0) {
            size_t raw = 0, n = mock_count_docs(req.p + off, req.len - (size_t)off, &raw);
            if (raw > m->max_body) m->max_body = raw;
            m->requests++;
            m->docs += n;
            struct buf items;
            buf_init(&items);
            int errors = 0;
            for (size_t i = 0; i < n; i++) {
                size_t k = m->docs - n + i;
                int st = k < m->nscript ? m->script[k] : 201;
                errors |= st < 200 || st >= 300;
                buf_printf(&items, "%s{\"create\":{\"status\":%d%s}}", i ? "," : "", st,
                           st < 200 || st >= 300 ? ",\"error\":{\"type\":\"mock\",\"reason\":\"scripted\"}" : "");
            }
            struct buf body;
            buf_init(&body);
            buf_printf(&body, "{\"took\":1,\"errors\":%s,\"items\":[", errors ? "true" : "false");
            buf_append(&body, items.p ? items.p : "", items.len);
            buf_puts(&body, "]}");
            buf_free(&items);
            ans.len = 0;
            char h[160];
            snprintf(h, sizeof h, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n", body.len);
            buf_puts(&ans, h);
            buf_append(&ans, body.p, body.len);
            buf_free(&body);
            if (write(c, ans.p, ans.len) != (ssize_t)ans.len) break;
        }
        close(c);
    }
    buf_free(&req);
    buf_free(&ans);
    return NULL;
}

static int mock_es_start(struct mock_es *m)
{
    memset(m, 0, sizeof *m);
    m->lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t al = sizeof a;
    if (m->lfd < 0 || bind(m->lfd, (struct sockaddr *)&a, sizeof a) || listen(m->lfd, 4) ||
        getsockname(m->lfd, (struct sockaddr *)&a, &al))
        return -1;
    m->port = ntohs(a.sin_port);
    return pthread_create(&m->th, NULL, mock_es_run, m) ? -1 : 0;
}

static void mock_es_stop(struct mock_es *m)
{
    atomic_store(&m->stop, 1);
    pthread_join(m->th, NULL);
    close(m->lfd);
}

/* --es-max-pending-bytes below the batch size is honoured as given: bulk
 * requests shrink to half of it instead of the bound being raised to the
 * 5 MiB batch (issue 19 item 4), and every document is still stored. */
TEST(pending_below_batch)
{
    struct mock_es m;
    CHECK(mock_es_start(&m) == 0);
    char url[64], err[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", m.port);
    struct es_conf ec = { .url = url, .batch_age_ms = 200, .max_pending_bytes = 4096 };   /* batch: the default 5 MiB */
    gl_log_level = GL_LOG_ERROR;
    settled_calls = 0;
    struct sink *sk = sink_es_new(&ec, count_settle, NULL, err, sizeof err);
    CHECK(sk != NULL);
    if (!sk) { mock_es_stop(&m); return; }
    const char *doc = "{\"@timestamp\":\"2025-01-01T00:00:00.000Z\",\"event.dataset\":\"gpu.xid\",\"pad\":\"xxxxxxxxxxxxxxxx\"}";
    int again = 0;
    for (int i = 0; i < 300; i++) {
        char id[40];
        snprintf(id, sizeof id, "%032x", i);
        struct sink_doc d = { .stream = STREAM_EVENTS, .id = id, .json = doc, .len = strlen(doc) };
        int rc, tries = 0;
        while ((rc = sink_write(sk, &d)) == GL_AGAIN && tries++ < 100) {
            again++;
            sink_poll(sk, 20);
        }
        CHECK_EQ_INT(rc, GL_OK);
    }
    CHECK_EQ_INT(sink_drain(sk, 5000), 0);
    CHECK_EQ_INT(settled_calls, 300);
    struct es_stats st;
    sink_es_stats(sk, &st);
    CHECK_EQ_INT(st.stored, 300);
    sink_free(sk);
    mock_es_stop(&m);
    CHECK(again > 0);                         /* the 4 KiB bound held writes back */
    CHECK_EQ_INT(m.docs, 300);
    CHECK(m.requests >= 10);
    CHECK(m.max_body <= 2048 + 256);          /* half the bound, plus the item that crossed it */
}

static int outcomes[8];
static void outcome_settle(void *ctx, void *tok, enum sink_outcome o)
{
    (void)ctx; (void)tok;
    if ((int)o >= 0 && (int)o < 8) outcomes[o]++;
}

/* The item verdicts on the wire: of four documents answered 201, 429,
 * 409 and 400, the first is stored, the second sent again (alone) and
 * stored, the third counted as already there (stored, not sent again),
 * the fourth written to the dead letter file; 503 on an item is sent
 * again like 429. Five documents cross the wire for four. */
TEST(item_verdicts_on_the_wire)
{
    static const int script[] = { 201, 429, 409, 400, 503 };
    struct mock_es m;
    CHECK(mock_es_start(&m) == 0);
    m.script = script;
    m.nscript = 5;
    char url[64], err[256], dl[] = "/tmp/test_es_bulk_dl.XXXXXX";
    int dfd = mkstemp(dl);
    CHECK(dfd >= 0);
    if (dfd >= 0) close(dfd);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", m.port);
    struct es_conf ec = { .url = url, .batch_age_ms = 50, .deadletter_path = dl };
    gl_log_level = GL_LOG_ERROR;
    memset(outcomes, 0, sizeof outcomes);
    struct sink *sk = sink_es_new(&ec, outcome_settle, NULL, err, sizeof err);
    CHECK(sk != NULL);
    if (!sk) { mock_es_stop(&m); unlink(dl); return; }
    const char *doc = "{\"@timestamp\":\"2025-01-01T00:00:00.000Z\",\"event.dataset\":\"gpu.xid\"}";
    for (int i = 0; i < 5; i++) {
        char id[40];
        snprintf(id, sizeof id, "%032x", i + 1);
        struct sink_doc d = { .stream = STREAM_EVENTS, .id = id, .json = doc, .len = strlen(doc) };
        CHECK_EQ_INT(sink_write(sk, &d), GL_OK);
    }
    CHECK_EQ_INT(sink_drain(sk, 5000), 0);
    struct es_stats st;
    sink_es_stats(sk, &st);
    sink_free(sk);
    mock_es_stop(&m);
    CHECK_EQ_INT(st.stored, 3);              /* 201, and 429 and 503 once sent again */
    CHECK_EQ_INT(st.duplicates, 1);          /* 409 */
    CHECK_EQ_INT(st.deadlettered, 1);        /* 400 */
    CHECK_EQ_INT(st.item_retries, 2);
    CHECK_EQ_INT(outcomes[SINK_STORED], 4);
    CHECK_EQ_INT(outcomes[SINK_DEADLETTER], 1);
    CHECK_EQ_INT(m.docs, 7);
    FILE *f = fopen(dl, "r");
    char line[4096] = "";
    int lines = 0;
    while (f && fgets(line, sizeof line, f)) lines++;
    if (f) fclose(f);
    unlink(dl);
    CHECK_EQ_INT(lines, 1);
}

int main(void)
{
    RUN(stream_names);
    RUN(stream_of_dataset);
    RUN(bulk_body);
    RUN(verdicts);
    RUN(parse_mixed);
    RUN(parse_bad);
    RUN(backoff);
    RUN(deadletter_record);
    RUN(cli_and_mask);
    RUN(sink_refused);
    RUN(pending_below_batch);
    RUN(item_verdicts_on_the_wire);
    return TEST_REPORT();
}
