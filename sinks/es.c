/*
 * es.c - the Elasticsearch/OpenSearch sink: `_bulk` over one keep-alive
 * connection (libcurl multi, so poll() never blocks past its timeout),
 * gzip request bodies, batches by size and age, `create` into data streams
 * with _id = event.id, and a settle call for every document:
 *   2xx or 409 (already there)        -> SINK_STORED
 *   429 / 5xx on an item              -> only that item is sent again, with
 *                                        exponential backoff and jitter, no limit
 *   any other item status             -> dead letter file, SINK_DEADLETTER
 *   network error, timeout, 429/5xx or an unreadable answer for the whole
 *   request                           -> the whole request is sent again
 * Memory is bounded by max_pending_bytes: write() answers GL_AGAIN above it;
 * below batch_bytes, requests are limited to half of it (never raised).
 */
#include "es_bulk.h"
#include "es_cli.h"
#include "../core/config.h"
#include "../core/metrics.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define ES_DEFAULT_BATCH_BYTES   (5u << 20)
#define ES_DEFAULT_BATCH_AGE_MS  250    /* latency: see docs/operations.md */
#define ES_DEFAULT_MAX_PENDING   (64u << 20)
#define ES_RETRY_BASE_MS         100
#define ES_RETRY_MAX_MS          5000
#define ES_MAX_RESPONSE          (64u << 20)

struct es_item {
    struct es_item *next;
    void *token;
    int64_t t;               /* ready: when written; delayed: not before */
    int attempts;            /* item-level retries so far */
    uint32_t len;            /* document bytes */
    uint8_t stream;
    uint8_t idlen;
    char data[];             /* id, NUL, document */
};

static inline const char *item_id(const struct es_item *it) { return it->data; }
static inline const char *item_doc(const struct es_item *it) { return it->data + it->idlen + 1; }
static inline size_t item_cost(const struct es_item *it) { return sizeof *it + it->idlen + 1 + it->len; }

/* One bulk request: its items in body order, the NDJSON body and its gzip
 * form. Two of them: one in flight, the next prepared meanwhile. */
struct es_batch {
    struct es_item **it;
    size_t n, cap;
    struct buf body, gz;
    int ready;                           /* built, waiting to be sent */
};

struct es_sink {
    struct sink *s;
    /* configuration (own copies) */
    char *url, *bulk_url, *ns, *user, *password, *api_key, *ca, *cert, *key, *dl_path;
    char index[3][128];
    int index_metrics;
    size_t batch_bytes, max_pending;
    int batch_age_ms;
    size_t batch_limit;      /* shrinks after 413/400 on a whole request */
    size_t limit_cap;        /* what batch_limit grows back to: a 413 lowers it */
    /* queues */
    struct es_item *ready, *ready_tail;  /* FIFO of items never sent or sent back whole */
    size_t ready_bytes;
    struct es_item *delayed;             /* items waiting for their retry time */
    struct es_batch b[2];
    int cur;                             /* b[cur] is (or was last) in flight */
    size_t pending_bytes;
    long unsettled;
    /* the request */
    CURLM *multi;
    CURL *easy;
    struct curl_slist *hdrs;
    int busy;
    struct buf resp;
    char curl_err[CURL_ERROR_SIZE];      /* libcurl's detail of a failed request */
    z_stream zs;
    int zs_ready;
    int64_t hold_until;                  /* whole-request backoff */
    int64_t req_start;
    int conn_failures;
    uint64_t rnd;
    int dl_fd;
    struct es_stats st;
};

static void item_free(struct es_sink *e, struct es_item *it)
{
    e->pending_bytes -= item_cost(it);
    e->unsettled--;
    free(it);
}

static void settle(struct es_sink *e, struct es_item *it, enum sink_outcome o)
{
    void *tok = it->token;
    item_free(e, it);
    if (e->s->settle) e->s->settle(e->s->settle_ctx, tok, o);
}

/* Writes the dead-letter record; GL_OK when it is durably handed to the
 * file (or stderr). */
static int deadletter_write(struct es_sink *e, const struct es_item *it, int status, const char *reason)
{
    struct buf b;
    buf_init(&b);
    struct deadletter d = { .now_ms = gl_now_ms(), .output = "elasticsearch", .status = status, .reason = reason,
                            .index = e->index[it->stream], .id = item_id(it), .json = item_doc(it), .len = it->len };
    sink_deadletter_record(&b, &d);
    int fd = e->dl_fd >= 0 ? e->dl_fd : 2;
    size_t off = 0;
    int ret = GL_OK;
    while (off < b.len) {
        ssize_t n = write(fd, b.p + off, b.len - off);
        if (n < 0) {
            if (errno == EINTR) continue;
            log_error("msg=\"dead letter write failed\" path=\"%s\" error=\"%s\"",
                      e->dl_path ? e->dl_path : "stderr", strerror(errno));
            ret = GL_ERROR;
            break;
        }
        off += (size_t)n;
    }
    buf_free(&b);
    return ret;
}

static void delay_item(struct es_sink *e, struct es_item *it, int64_t now)
{
    it->attempts++;
    it->t = now + es_backoff_ms(it->attempts, ES_RETRY_BASE_MS, ES_RETRY_MAX_MS, &e->rnd);
    it->next = e->delayed;
    e->delayed = it;
}

static void reject_item(struct es_sink *e, struct es_item *it, int status, const char *reason, int64_t now)
{
    if (deadletter_write(e, it, status, reason) != GL_OK) {
        delay_item(e, it, now);      /* keep it: nothing is dropped */
        return;
    }
    e->st.deadlettered++;
    settle(e, it, SINK_DEADLETTER);
}

/* Puts a whole batch back at the head of the ready queue. */
static void requeue_batch(struct es_sink *e, struct es_batch *bt)
{
    for (size_t i = bt->n; i-- > 0;) {
        struct es_item *it = bt->it[i];
        it->next = e->ready;
        e->ready = it;
        if (!e->ready_tail) e->ready_tail = it;
        e->ready_bytes += it->len;
    }
    bt->n = 0;
    bt->ready = 0;
}

static void whole_failure(struct es_sink *e, struct es_batch *bt, int64_t now, const char *what)
{
    e->st.request_failures++;
    metrics_inc(M_DELIVERY_ERRORS);
    e->conn_failures++;
    int64_t d = es_backoff_ms(e->conn_failures, ES_RETRY_BASE_MS, ES_RETRY_MAX_MS, &e->rnd);
    e->hold_until = now + d;
    log_warn("msg=\"bulk request failed, will send again\" docs=%zu retry_in_ms=%lld reason=\"%s\"",
             bt->n, (long long)d, what);
    e->st.resent_docs += bt->n;
    metrics_add(M_BULK_RETRIES, bt->n);
    requeue_batch(e, bt);
}

static void batch_add(struct es_sink *e, struct es_batch *bt, struct es_item *it)
{
    if (bt->n == bt->cap) {
        bt->cap = bt->cap ? bt->cap * 2 : 1024;
        bt->it = xrealloc(bt->it, bt->cap * sizeof *bt->it);
    }
    bt->it[bt->n++] = it;
    es_bulk_append(&bt->body, e->index[it->stream], it->idlen ? item_id(it) : NULL,
                   item_doc(it), it->len);
}

static int gzip_body(struct es_sink *e, struct es_batch *bt)
{
    if (!e->zs_ready) {
        memset(&e->zs, 0, sizeof e->zs);
        if (deflateInit2(&e->zs, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return GL_ERROR;
        e->zs_ready = 1;
    } else {
        deflateReset(&e->zs);
    }
    buf_reset(&bt->gz);
    size_t bound = deflateBound(&e->zs, bt->body.len) + 64;
    buf_grow(&bt->gz, bound);
    e->zs.next_in = (Bytef *)bt->body.p;
    e->zs.avail_in = (uInt)bt->body.len;
    e->zs.next_out = (Bytef *)bt->gz.p;
    e->zs.avail_out = (uInt)(bt->gz.cap - 1);
    if (deflate(&e->zs, Z_FINISH) != Z_STREAM_END) return GL_ERROR;
    bt->gz.len = bt->gz.cap - 1 - e->zs.avail_out;
    return GL_OK;
}

static int64_t next_due(const struct es_sink *e)
{
    int64_t due = INT64_MAX;
    for (const struct es_item *it = e->delayed; it; it = it->next)
        if (it->t < due) due = it->t;
    if (e->ready) {
        int64_t t = e->ready_bytes >= e->batch_limit ? 0 : e->ready->t + e->batch_age_ms;
        if (t < due) due = t;
    }
    if (e->b[e->cur ^ 1].ready) due = 0;
    if (due != INT64_MAX && due < e->hold_until) due = e->hold_until;
    return due;
}

/* Whether a batch should be formed now: a retry is due, or the ready
 * queue is full enough or old enough. */
static int batch_wanted(const struct es_sink *e, int64_t now)
{
    for (const struct es_item *it = e->delayed; it; it = it->next)
        if (it->t <= now) return 1;
    return e->ready && (e->ready_bytes >= e->batch_limit || now - e->ready->t >= e->batch_age_ms);
}

/* Moves due retries, then ready items, into bt up to batch_limit, and
 * gzips the body. */
static int batch_fill(struct es_sink *e, struct es_batch *bt, int64_t now)
{
    buf_reset(&bt->body);
    bt->n = 0;
    struct es_item **pp = &e->delayed;
    while (*pp && (bt->body.len < e->batch_limit || !bt->n)) {
        struct es_item *it = *pp;
        if (it->t <= now) {
            *pp = it->next;
            batch_add(e, bt, it);
            e->st.retried_docs++;
            metrics_inc(M_BULK_RETRIES);
        } else {
            pp = &it->next;
        }
    }
    while (e->ready && (bt->body.len < e->batch_limit || !bt->n)) {
        struct es_item *it = e->ready;
        e->ready = it->next;
        if (!e->ready) e->ready_tail = NULL;
        e->ready_bytes -= it->len;
        batch_add(e, bt, it);
    }
    if (gzip_body(e, bt) != GL_OK) {
        whole_failure(e, bt, now, "gzip failed");
        return GL_ERROR;
    }
    bt->ready = 1;
    return GL_OK;
}

/* While a request is in flight, builds the next one so that it can leave
 * the moment the answer arrives. */
static void prepare_next(struct es_sink *e, int64_t now)
{
    struct es_batch *nx = &e->b[e->cur ^ 1];
    if (!e->busy || nx->ready || !batch_wanted(e, now)) return;
    /* not before the current body has left: gzip would delay its upload */
    curl_off_t up = 0;
    curl_easy_getinfo(e->easy, CURLINFO_SIZE_UPLOAD_T, &up);
    if ((size_t)up < e->b[e->cur].gz.len) return;
    batch_fill(e, nx, now);
}

static void start_request(struct es_sink *e, int64_t now)
{
    if (e->busy || now < e->hold_until) return;
    if (e->b[e->cur ^ 1].ready) {
        e->cur ^= 1;
    } else {
        if (!batch_wanted(e, now)) return;
        if (batch_fill(e, &e->b[e->cur], now) != GL_OK) return;
    }
    struct es_batch *bt = &e->b[e->cur];
    bt->ready = 0;
    buf_reset(&e->resp);
    e->curl_err[0] = '\0';
    curl_easy_setopt(e->easy, CURLOPT_POSTFIELDS, bt->gz.p);
    curl_easy_setopt(e->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)bt->gz.len);
    curl_multi_add_handle(e->multi, e->easy);
    e->busy = 1;
    e->req_start = gl_now_ms();
    log_debug("bulk request: docs=%zu bytes=%zu gzip=%zu", bt->n, bt->body.len, bt->gz.len);
    e->st.requests++;
    e->st.bytes_raw += bt->body.len;
    e->st.bytes_sent += bt->gz.len;
}

static void handle_items(struct es_sink *e, struct es_batch *bt, int64_t now)
{
    struct es_bulk_result res;
    char err[GL_ERRLEN];
    if (es_bulk_parse(e->resp.p ? e->resp.p : "", e->resp.len, bt->n, &res, err, sizeof err) != GL_OK) {
        whole_failure(e, bt, now, err);
        return;
    }
    e->conn_failures = 0;
    if (e->batch_limit < e->limit_cap) {
        e->batch_limit *= 2;
        if (e->batch_limit > e->limit_cap) e->batch_limit = e->limit_cap;
    }
    size_t n = bt->n;
    bt->n = 0;
    for (size_t i = 0; i < n; i++) {
        struct es_item *it = bt->it[i];
        int status = res.items[i].status;
        switch (es_item_verdict(status)) {
        case ES_STORED:
            if (status == 409) e->st.duplicates++;
            else e->st.stored++;
            settle(e, it, SINK_STORED);
            break;
        case ES_RETRY:
            e->st.item_retries++;
            delay_item(e, it, now);
            break;
        case ES_REJECT:
            reject_item(e, it, status, res.items[i].reason ? res.items[i].reason : "rejected", now);
            break;
        }
    }
    es_bulk_result_free(&res);
}

static void request_done(struct es_sink *e, CURLcode rc, int64_t now)
{
    curl_multi_remove_handle(e->multi, e->easy);
    e->busy = 0;
    struct es_batch *bt = &e->b[e->cur];
    long status = 0;
    curl_easy_getinfo(e->easy, CURLINFO_RESPONSE_CODE, &status);
    log_debug("bulk answer: status=%ld curl=%d ms=%lld response_bytes=%zu", status, (int)rc,
              (long long)(now - e->req_start), e->resp.len);
    char what[GL_ERRLEN];
    if (rc != CURLE_OK) {
        snprintf(what, sizeof what, "%.80s%s%.160s", curl_easy_strerror(rc), e->curl_err[0] ? ": " : "", e->curl_err);
        if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE)
            log_error("msg=\"the cluster's TLS certificate cannot be verified (is --es-ca the CA that signed it?); "
                      "documents are kept and sent again\" reason=\"%s\"", what);
        whole_failure(e, bt, now, what);
        return;
    }
    if (status >= 200 && status < 300) {
        handle_items(e, bt, now);
        return;
    }
    snprintf(what, sizeof what, "HTTP %ld: %.160s", status, e->resp.p ? e->resp.p : "");
    if (status == 413 || status == 400) {
        if (bt->n > 1) {
            /* too large, or one document breaks the whole request: split */
            e->batch_limit = bt->body.len / 2 ? bt->body.len / 2 : 1;
            if (status == 413) e->limit_cap = e->batch_limit;   /* the server's size limit */
            e->st.request_failures++;
            e->st.resent_docs += bt->n;
            metrics_add(M_BULK_RETRIES, bt->n);
            requeue_batch(e, bt);
            struct es_batch *nx = &e->b[e->cur ^ 1];
            if (nx->ready && nx->body.len > e->batch_limit) requeue_batch(e, nx);
            return;
        }
        if (bt->n == 1) {
            struct es_item *it = bt->it[0];
            bt->n = 0;
            reject_item(e, it, (int)status, what, now);
            return;
        }
    }
    if (status == 401 || status == 403)
        log_error("msg=\"the cluster refuses our credentials; documents are kept and sent again\" status=%ld", status);
    whole_failure(e, bt, now, what);
}

static long es_poll(void *st, int timeout_ms)
{
    struct es_sink *e = st;
    int64_t now = gl_now_ms();
    int64_t deadline = now + (timeout_ms > 0 ? timeout_ms : 0);
    for (;;) {
        start_request(e, now);
        if (e->busy) {
            int running = 0;
            curl_multi_perform(e->multi, &running);
            CURLMsg *m;
            int left;
            int done = 0;
            while ((m = curl_multi_info_read(e->multi, &left)))
                if (m->msg == CURLMSG_DONE && m->easy_handle == e->easy) {
                    request_done(e, m->data.result, gl_now_ms());
                    done = 1;
                }
            if (done) { now = gl_now_ms(); continue; }
            prepare_next(e, gl_now_ms());
        }
        now = gl_now_ms();
        if (!e->unsettled || now >= deadline) break;
        int64_t wait = deadline - now;
        if (!e->busy) {
            int64_t due = next_due(e);
            if (due <= now) continue;
            if (due - now < wait) wait = due - now;
        }
        if (e->busy) curl_multi_poll(e->multi, NULL, 0, (int)wait, NULL);
        else usleep((useconds_t)(wait * 1000));
        now = gl_now_ms();
    }
    return e->unsettled;
}

static int es_write(void *st, const struct sink_doc *d)
{
    struct es_sink *e = st;
    if (d->stream == STREAM_METRICS && !e->index_metrics) {
        e->st.skipped++;
        if (e->s->settle) e->s->settle(e->s->settle_ctx, d->token, SINK_STORED);
        return GL_OK;
    }
    size_t idlen = d->id ? strlen(d->id) : 0;
    if (idlen > 255) idlen = 0;          /* not an event.id: let the server pick one */
    size_t cost = sizeof(struct es_item) + idlen + 1 + d->len;
    if (e->unsettled && e->pending_bytes + cost > e->max_pending) {
        e->st.backpressure++;
        return GL_AGAIN;
    }
    struct es_item *it = xmalloc(cost);
    it->next = NULL;
    it->token = d->token;
    it->t = gl_now_ms();
    it->attempts = 0;
    it->len = (uint32_t)d->len;
    it->stream = (uint8_t)(d->stream <= STREAM_ANOMALIES ? d->stream : STREAM_METRICS);
    it->idlen = (uint8_t)idlen;
    if (idlen) memcpy(it->data, d->id, idlen);
    it->data[idlen] = '\0';
    memcpy(it->data + idlen + 1, d->json, d->len);
    if (e->ready_tail) e->ready_tail->next = it;
    else e->ready = it;
    e->ready_tail = it;
    e->ready_bytes += d->len;
    e->pending_bytes += cost;
    e->unsettled++;
    return GL_OK;
}

static void free_list(struct es_item *it)
{
    while (it) {
        struct es_item *n = it->next;
        free(it);
        it = n;
    }
}

static void es_destroy(void *st)
{
    struct es_sink *e = st;
    log_info("msg=\"es sink\" stored=%llu duplicates=%llu deadlettered=%llu item_retries=%llu "
             "requests=%llu request_failures=%llu unsettled=%ld",
             (unsigned long long)e->st.stored, (unsigned long long)e->st.duplicates,
             (unsigned long long)e->st.deadlettered, (unsigned long long)e->st.item_retries,
             (unsigned long long)e->st.requests, (unsigned long long)e->st.request_failures,
             e->unsettled);
    if (e->busy) curl_multi_remove_handle(e->multi, e->easy);
    if (e->easy) curl_easy_cleanup(e->easy);
    if (e->multi) curl_multi_cleanup(e->multi);
    curl_slist_free_all(e->hdrs);
    for (int k = 0; k < 2; k++) {
        for (size_t i = 0; i < e->b[k].n; i++) free(e->b[k].it[i]);
        free(e->b[k].it);
        buf_free(&e->b[k].body);
        buf_free(&e->b[k].gz);
    }
    free_list(e->ready);
    free_list(e->delayed);
    buf_free(&e->resp);
    if (e->zs_ready) deflateEnd(&e->zs);
    if (e->dl_fd >= 0) close(e->dl_fd);
    if (e->password) { volatile char *p = e->password; while (*p) *p++ = 0; }
    if (e->api_key) { volatile char *p = e->api_key; while (*p) *p++ = 0; }
    free(e->url); free(e->bulk_url); free(e->ns); free(e->user); free(e->password);
    free(e->api_key); free(e->ca); free(e->cert); free(e->key); free(e->dl_path);
    free(e);
}

static const struct sink_ops es_ops = {
    .name = "elasticsearch", .write = es_write, .poll = es_poll, .destroy = es_destroy,
};

static size_t collect_resp(char *p, size_t sz, size_t n, void *ud)
{
    struct es_sink *e = ud;
    if (e->resp.len + sz * n > ES_MAX_RESPONSE) return 0;   /* abort: retried whole */
    buf_append(&e->resp, p, sz * n);
    return sz * n;
}

static char *dup_or_null(const char *s) { return s ? xstrdup(s) : NULL; }

void sink_es_stats(const struct sink *s, struct es_stats *out)
{
    memset(out, 0, sizeof *out);
    if (s && s->ops == &es_ops) *out = ((const struct es_sink *)s->st)->st;
}

/* Copies the settings of ec (namespace ns) into e, which owns the copies,
 * with the defaults and the batch limit derived from them, and readies its
 * buffers. */
static void es_take_conf(struct es_sink *e, const struct es_conf *ec, const char *ns)
{
    e->url = xstrdup(ec->url);
    e->ns = xstrdup(ns);
    e->user = dup_or_null(ec->user);
    e->password = dup_or_null(ec->password);
    e->api_key = dup_or_null(ec->api_key);
    e->ca = dup_or_null(ec->ca_file);
    e->cert = dup_or_null(ec->cert_file);
    e->key = dup_or_null(ec->key_file);
    e->dl_path = dup_or_null(ec->deadletter_path);
    e->index_metrics = ec->index_metrics;
    for (int i = 0; i < 3; i++) es_stream_name((enum sink_stream)i, e->ns, e->index[i], sizeof e->index[i]);
    e->batch_bytes = ec->batch_bytes ? ec->batch_bytes : ES_DEFAULT_BATCH_BYTES;
    e->batch_age_ms = ec->batch_age_ms > 0 ? ec->batch_age_ms : ES_DEFAULT_BATCH_AGE_MS;
    e->max_pending = ec->max_pending_bytes ? ec->max_pending_bytes : ES_DEFAULT_MAX_PENDING;
    if (e->max_pending < e->batch_bytes) {
        /* the memory bound is honoured as given: requests shrink to half of
         * it, so one can be in flight while the next fills */
        size_t b = e->max_pending / 2 ? e->max_pending / 2 : 1;
        log_info("msg=\"es: max_pending_bytes below batch_bytes: bulk requests limited to half of it\" "
                 "max_pending_bytes=%zu batch_bytes=%zu effective_batch_bytes=%zu", e->max_pending, e->batch_bytes, b);
        e->batch_bytes = b;
    }
    e->batch_limit = e->limit_cap = e->batch_bytes;
    e->rnd = (uint64_t)gl_now_ms() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)e;
    for (int k = 0; k < 2; k++) {
        buf_init(&e->b[k].body);
        buf_init(&e->b[k].gz);
    }
    buf_init(&e->resp);
}

/* The curl handles of e (owned by e, freed by es_destroy): the multi handle
 * and the easy handle of the bulk request with auth, TLS, headers and
 * timeouts. Returns GL_OK, or GL_ERROR with a reason in err. */
static int es_curl_setup(struct es_sink *e, char *err, size_t errlen)
{
    struct buf u;
    buf_init(&u);
    buf_puts(&u, e->url);
    while (u.len && u.p[u.len - 1] == '/') u.p[--u.len] = '\0';
    buf_puts(&u, ES_BULK_PATH);
    e->bulk_url = u.p;

    e->multi = curl_multi_init();
    e->easy = curl_easy_init();
    if (!e->multi || !e->easy) {
        snprintf(err, errlen, "es: curl init failed");
        return GL_ERROR;
    }
    struct es_conf own = {
        .url = e->url, .user = e->user, .password = e->password, .api_key = e->api_key,
        .ca_file = e->ca, .cert_file = e->cert, .key_file = e->key,
    };
    es_curl_auth(e->easy, &own, &e->hdrs);
    e->hdrs = curl_slist_append(e->hdrs, "Content-Type: application/x-ndjson");
    e->hdrs = curl_slist_append(e->hdrs, "Content-Encoding: gzip");
    e->hdrs = curl_slist_append(e->hdrs, "Expect:");
    curl_easy_setopt(e->easy, CURLOPT_URL, e->bulk_url);
    curl_easy_setopt(e->easy, CURLOPT_POST, 1L);
    curl_easy_setopt(e->easy, CURLOPT_HTTPHEADER, e->hdrs);
    curl_easy_setopt(e->easy, CURLOPT_WRITEFUNCTION, collect_resp);
    curl_easy_setopt(e->easy, CURLOPT_WRITEDATA, e);
    curl_easy_setopt(e->easy, CURLOPT_ERRORBUFFER, e->curl_err);
    curl_easy_setopt(e->easy, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    /* a request the server does not answer in time is sent again;
     * GPULOG_ES_TIMEOUT_MS overrides the 120 s (tests) */
    const char *tmo = getenv("GPULOG_ES_TIMEOUT_MS");
    long timeout_ms = tmo && atol(tmo) > 0 ? atol(tmo) : 120000L;
    curl_easy_setopt(e->easy, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_multi_setopt(e->multi, CURLMOPT_MAXCONNECTS, 2L);
    return GL_OK;
}

struct sink *sink_es_new(const struct es_conf *ec, sink_settle_fn settle_fn, void *ctx,
                         char *err, size_t errlen)
{
    if (!ec || !ec->url || !config_url_ok(ec->url)) {
        snprintf(err, errlen, "es: the URL must be http:// or https:// with a host");
        return NULL;
    }
    const char *ns = ec->ns && *ec->ns ? ec->ns : "default";
    if (!es_ns_valid(ns)) {
        snprintf(err, errlen, "es: '%s' is not a valid namespace", ns);
        return NULL;
    }
    static int curl_ready;
    if (!curl_ready) { curl_global_init(CURL_GLOBAL_DEFAULT); curl_ready = 1; }

    struct es_sink *e = xcalloc(1, sizeof *e);
    e->dl_fd = -1;
    if (ec->deadletter_path && strcmp(ec->deadletter_path, "-")) {
        e->dl_fd = open(ec->deadletter_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (e->dl_fd < 0) {
            snprintf(err, errlen, "es: dead letter %s: %s", ec->deadletter_path, strerror(errno));
            free(e);
            return NULL;
        }
    }
    es_take_conf(e, ec, ns);

    if (es_curl_setup(e, err, errlen) != GL_OK) {
        es_destroy(e);
        return NULL;
    }

    struct sink *s = xcalloc(1, sizeof *s);
    s->ops = &es_ops;
    s->st = e;
    s->settle = settle_fn;
    s->settle_ctx = ctx;
    e->s = s;
    char masked[512];
    es_url_masked(e->url, masked, sizeof masked);
    log_debug("msg=\"es sink ready\" url=\"%s\" namespace=%s index_metrics=%d auth=%s",
              masked, e->ns, e->index_metrics,
              e->api_key ? "api_key" : e->user ? "basic" : "none");
    return s;
}
