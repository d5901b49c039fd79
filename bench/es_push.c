/*
 * es_push.c - pushes NDJSON events through the ES sink (sink_es_new) and
 * prints what became of them. Test driver for tests/t_es_*.sh and the
 * driver of bench/es_bench.sh.
 *
 *   es_push --es URL [ES options of gpulog detect] [--timeout-s N] [FILE|-]
 *
 * Every line is one event; its stream comes from event.dataset and its _id
 * from event.id. Output (stdout, one line):
 *   pushed=N stored=N deadletter=N unsettled=N double_settled=N seconds=S docs_per_s=R
 *   requests=N request_failures=N item_retries=N duplicates=N bytes_raw=N bytes_sent=N
 * Exit status 0 when every document was settled exactly once.
 */
#include "../sinks/es_cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct counts {
    unsigned char *settled;      /* per document: times settled */
    size_t cap;
    uint64_t stored, dead, doubles;
};

static void on_settle(void *ctx, void *token, enum sink_outcome o)
{
    struct counts *c = ctx;
    size_t i = (size_t)(uintptr_t)token;
    if (i < c->cap) {
        if (c->settled[i]++) c->doubles++;
    }
    if (o == SINK_STORED) c->stored++;
    else c->dead++;
}

/* The string value of "key":"..." in a flat event line (no escapes in ids
 * and dataset names). */
static int field(const char *line, size_t len, const char *key, char *out, size_t outlen)
{
    const char *end = line + len;
    size_t kl = strlen(key);
    for (const char *p = line; p + kl + 3 < end; p++) {
        p = memchr(p, '"', (size_t)(end - p));
        if (!p || p + kl + 3 >= end) return 0;
        if (!memcmp(p + 1, key, kl) && p[kl + 1] == '"' && p[kl + 2] == ':') {
            const char *v = p + kl + 3;
            while (v < end && *v == ' ') v++;
            if (v >= end || *v != '"') return 0;
            v++;
            const char *q = memchr(v, '"', (size_t)(end - v));
            if (!q || (size_t)(q - v) >= outlen) return 0;
            memcpy(out, v, (size_t)(q - v));
            out[q - v] = '\0';
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        ES_CLI_LONGOPTS,
        { "timeout-s", required_argument, NULL, 't' },
        { "quiet", no_argument, NULL, 'q' },
        { NULL, 0, NULL, 0 },
    };
    struct es_cli cli;
    es_cli_init(&cli);
    char err[GL_ERRLEN];
    int timeout_s = -1, c;
    gl_log_level = GL_LOG_WARN;
    while ((c = getopt_long(argc, argv, "qv", opts, NULL)) != -1) {
        if (c == 't') { timeout_s = atoi(optarg); continue; }
        if (c == 'q') { gl_log_level = GL_LOG_ERROR; continue; }
        if (c == 'v') { gl_log_level = GL_LOG_DEBUG; continue; }
        int r = es_cli_opt(&cli, c, optarg, err, sizeof err);
        if (r <= 0) {
            fprintf(stderr, "es_push: %s\n", r < 0 ? err : "unknown option");
            return 2;
        }
    }
    if (!cli.conf.url || es_cli_finish(&cli, err, sizeof err) != GL_OK) {
        fprintf(stderr, "es_push: %s\n", cli.conf.url ? err : "--es URL is required");
        return 2;
    }
    int fd = 0;
    if (optind < argc && strcmp(argv[optind], "-")) {
        fd = open(argv[optind], O_RDONLY);
        if (fd < 0) { fprintf(stderr, "es_push: %s: %s\n", argv[optind], strerror(errno)); return 1; }
    }
    /* input is read as it comes (a pipe may be slow: the sink keeps
     * polling meanwhile); tokens are line numbers */
    size_t cap = 1 << 16;
    struct counts cnt = { .settled = xcalloc(cap, 1), .cap = cap };
    struct sink *s = sink_es_new(&cli.conf, on_settle, &cnt, err, sizeof err);
    if (!s) { fprintf(stderr, "es_push: %s\n", err); return 2; }
    struct buf in;
    buf_init(&in);
    int64_t t0 = 0;
    size_t pushed = 0;
    char id[64], ds[64];
    int eof = 0;
    while (!eof) {
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        if (poll(&pfd, 1, 0) == 0) { sink_poll(s, 20); continue; }
        buf_grow(&in, 1 << 16);
        ssize_t n = read(fd, in.p + in.len, in.cap - in.len - 1);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) eof = 1; else in.len += (size_t)n;
        if (!t0) t0 = gl_now_ms();
        char *p = in.p, *end = in.p + in.len;
        for (;;) {
            char *nl = memchr(p, '\n', (size_t)(end - p));
            if (!nl && !(eof && p < end)) break;
            size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
            if (len) {
                if (pushed >= cnt.cap) {
                    cnt.settled = xrealloc(cnt.settled, cnt.cap * 2);
                    memset(cnt.settled + cnt.cap, 0, cnt.cap);
                    cnt.cap *= 2;
                }
                struct sink_doc d = { .json = p, .len = len, .token = (void *)(uintptr_t)pushed };
                d.stream = sink_stream_of(field(p, len, "event.dataset", ds, sizeof ds) ? ds : NULL);
                d.id = field(p, len, "event.id", id, sizeof id) ? id : NULL;
                int rc;
                while ((rc = sink_write(s, &d)) == GL_AGAIN) sink_poll(s, 50);
                if (rc != GL_OK) { fprintf(stderr, "es_push: write: %s\n", s->errstr); eof = 1; break; }
                pushed++;
                if ((pushed & 255) == 0) sink_poll(s, 0);
            }
            p += len + (nl ? 1 : 0);
            if (!nl) break;
        }
        size_t rest = (size_t)(in.p + in.len - p);
        memmove(in.p, p, rest);
        in.len = rest;
    }
    if (!t0) t0 = gl_now_ms();
    long left = sink_drain(s, timeout_s < 0 ? -1 : timeout_s * 1000);
    int64_t dt = gl_now_ms() - t0;
    struct es_stats st;
    sink_es_stats(s, &st);
    double secs = dt / 1000.0;
    printf("pushed=%zu stored=%llu deadletter=%llu unsettled=%ld double_settled=%llu seconds=%.3f docs_per_s=%.0f\n",
           pushed, (unsigned long long)cnt.stored, (unsigned long long)cnt.dead, left,
           (unsigned long long)cnt.doubles, secs, secs > 0 ? pushed / secs : 0.0);
    printf("requests=%llu request_failures=%llu item_retries=%llu duplicates=%llu resent_docs=%llu "
           "bytes_raw=%llu bytes_sent=%llu\n",
           (unsigned long long)st.requests, (unsigned long long)st.request_failures,
           (unsigned long long)st.item_retries, (unsigned long long)st.duplicates,
           (unsigned long long)st.resent_docs, (unsigned long long)st.bytes_raw,
           (unsigned long long)st.bytes_sent);
    int ok = left == 0 && !cnt.doubles && cnt.stored + cnt.dead == pushed;
    sink_free(s);
    es_cli_free(&cli);
    buf_free(&in);
    free(cnt.settled);
    return ok ? 0 : 1;
}
