/* sink.c - generic sink helpers and the NDJSON file sink. */
#include "sink.h"

#include <jansson.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum sink_stream sink_stream_of(const char *dataset)
{
    if (!dataset) return STREAM_METRICS;
    /* by length first: every event of a metric stream asks (five strcmp
     * calls were ~100 instructions an event on collect's main thread) */
    switch (strlen(dataset)) {
    case 7: return memcmp(dataset, "gpu.xid", 7) ? STREAM_METRICS : STREAM_EVENTS;
    case 8: return memcmp(dataset, "gpu.sxid", 8) ? STREAM_METRICS : STREAM_EVENTS;
    case 11: return memcmp(dataset, "gpu.anomaly", 11) ? STREAM_METRICS : STREAM_ANOMALIES;
    case 12: return memcmp(dataset, "gpu.incident", 12) ? STREAM_METRICS : STREAM_ANOMALIES;
    case 16: return memcmp(dataset, "gpulog.collector", 16) ? STREAM_METRICS : STREAM_EVENTS;
    case 18: return memcmp(dataset, "gpu.fleet_incident", 18) ? STREAM_METRICS : STREAM_ANOMALIES;
    default: return STREAM_METRICS;
    }
}

void sink_doc_of(struct sink_doc *d, const struct event *ev, enum sink_stream stream, const char *default_host,
                 void *token, struct buf *json, struct buf *key)
{
    buf_reset(json);
    event_to_json(ev, json);
    buf_reset(key);
    buf_puts(key, ev->host && *ev->host ? ev->host : default_host && *default_host ? default_host : "-");
    memset(d, 0, sizeof *d);
    d->stream = stream;
    d->key = key->p;
    d->keylen = key->len;
    d->id = ev->id;
    d->json = json->p;
    d->len = json->len;
    d->token = token;
}

void sink_deadletter_record(struct buf *out, const struct deadletter *d)
{
    char ts[25];
    gl_fmt_ts(d->now_ms, ts);
    buf_puts(out, "{\"@timestamp\":\"");
    buf_puts(out, ts);
    buf_puts(out, "\",\"deadletter.output\":");
    buf_put_json_str(out, d->output ? d->output : "", d->output ? strlen(d->output) : 0);
    buf_puts(out, ",\"deadletter.status\":");
    buf_put_i64(out, d->status);
    buf_puts(out, ",\"deadletter.reason\":");
    buf_put_json_str(out, d->reason ? d->reason : "", d->reason ? strlen(d->reason) : 0);
    if (d->topic) {
        buf_puts(out, ",\"deadletter.topic\":");
        buf_put_json_str(out, d->topic, strlen(d->topic));
    }
    if (d->index) {
        buf_puts(out, ",\"deadletter.index\":");
        buf_put_json_str(out, d->index, strlen(d->index));
    }
    if (d->key) {
        buf_puts(out, ",\"deadletter.key\":");
        buf_put_json_str(out, d->key, d->keylen);
    }
    const char *json = d->json ? d->json : "";
    json_t *doc = json_loadb(json, d->len, 0, NULL);
    const char *id = d->id;
    if (!id && json_is_object(doc)) id = json_string_value(json_object_get(doc, "event.id"));
    if (id && *id) {
        buf_puts(out, ",\"event.id\":");
        buf_put_json_str(out, id, strlen(id));
    }
    buf_puts(out, ",\"document\":");
    if (json_is_object(doc)) {
        /* the original bytes, minus raw line breaks (whitespace in JSON) */
        size_t start = out->len;
        buf_append(out, json, d->len);
        for (size_t i = start; i < out->len; i++)
            if (out->p[i] == '\n' || out->p[i] == '\r') out->p[i] = ' ';
    } else {
        buf_put_json_str(out, json, d->len);
    }
    json_decref(doc);
    buf_puts(out, "}\n");
}

long sink_drain(struct sink *s, int timeout_ms)
{
    int64_t deadline = timeout_ms < 0 ? INT64_MAX : gl_now_ms() + timeout_ms;
    long left;
    /* a sink that failed for good (errstr: disk full, closed pipe) is not waited for */
    while ((left = sink_poll(s, 100)) > 0 && gl_now_ms() < deadline && !s->errstr[0])
        ;
    return left;
}

void sink_free(struct sink *s)
{
    if (!s) return;
    if (s->ops->destroy) s->ops->destroy(s->st);
    free(s);
}

/* ---------------------------------------------------------------- file sink */

struct file_sink {
    struct sink *s;
    int fd;
    int own_fd;
    struct buf b;
    void **pending;          /* tokens written to b but not yet on disk */
    size_t npending, cappending;
};

static int file_flush(struct file_sink *f)
{
    size_t off = 0;
    while (off < f->b.len) {
        ssize_t n = write(f->fd, f->b.p + off, f->b.len - off);
        if (n < 0) {
            if (errno == EINTR) continue;
            snprintf(f->s->errstr, sizeof f->s->errstr, "write: %s", strerror(errno));
            return GL_ERROR;
        }
        off += (size_t)n;
    }
    buf_reset(&f->b);
    for (size_t i = 0; i < f->npending; i++)
        if (f->s->settle) f->s->settle(f->s->settle_ctx, f->pending[i], SINK_STORED);
    f->npending = 0;
    return GL_OK;
}

static int file_write(void *st, const struct sink_doc *d)
{
    struct file_sink *f = st;
    if (f->s->errstr[0]) return GL_ERROR;   /* a write failed: nothing more is taken */
    buf_append(&f->b, d->json, d->len);
    buf_putc(&f->b, '\n');
    if (f->npending == f->cappending) {
        f->cappending = f->cappending ? f->cappending * 2 : 256;
        f->pending = xrealloc(f->pending, f->cappending * sizeof *f->pending);
    }
    f->pending[f->npending++] = d->token;
    if (f->b.len >= 65536) return file_flush(f);
    return GL_OK;
}

static long file_poll(void *st, int timeout_ms)
{
    (void)timeout_ms;
    struct file_sink *f = st;
    if (f->s->errstr[0]) return (long)f->npending;
    if (f->b.len && file_flush(f) != GL_OK) return (long)f->npending;
    return 0;
}

static void file_destroy(void *st)
{
    struct file_sink *f = st;
    if (f->b.len && !f->s->errstr[0]) file_flush(f);
    if (f->own_fd) close(f->fd);
    buf_free(&f->b);
    free(f->pending);
    free(f);
}

/* ------------------------------------------------------------- the hold */

int sink_hold_write(struct sink_hold *h, struct sink *s, const struct sink_doc *doc)
{
    if (!h->n) {
        int rc = sink_write(s, doc);
        if (rc != GL_AGAIN) return rc;
        h->since = gl_now_ms();
    }
    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 16;
        h->v = xrealloc(h->v, h->cap * sizeof *h->v);
    }
    struct sink_held *e = &h->v[h->n++];
    e->sink = s;
    e->doc = *doc;
    e->doc.key = doc->key ? xstrndup(doc->key, doc->keylen) : NULL;
    e->doc.id = doc->id ? xstrdup(doc->id) : NULL;
    e->doc.json = xstrndup(doc->json, doc->len);
    return GL_AGAIN;
}

static void held_free(struct sink_held *e)
{
    free((char *)e->doc.key);
    free((char *)e->doc.id);
    free((char *)e->doc.json);
}

size_t sink_hold_flush(struct sink_hold *h, struct sink **failed, void **failed_token)
{
    size_t k = 0, written = 0;
    *failed = NULL;
    while (k < h->n) {
        struct sink_held *e = &h->v[k];
        int rc = sink_write(e->sink, &e->doc);
        if (rc == GL_AGAIN) break;
        if (rc == GL_ERROR) {
            *failed = e->sink;
            *failed_token = e->doc.token;
        } else {
            written++;
        }
        held_free(e);
        k++;
        if (rc == GL_ERROR) break;
    }
    if (k) {
        memmove(h->v, h->v + k, (h->n - k) * sizeof *h->v);
        h->n -= k;
        if (!h->n) h->since = 0;
    }
    return written;
}

void sink_hold_free(struct sink_hold *h)
{
    for (size_t i = 0; i < h->n; i++) held_free(&h->v[i]);
    free(h->v);
    memset(h, 0, sizeof *h);
}

static const struct sink_ops file_ops = {
    .name = "file", .write = file_write, .poll = file_poll, .destroy = file_destroy,
};

struct sink *sink_file_new(const char *path, sink_settle_fn settle, void *ctx,
                           char *err, size_t errlen)
{
    int fd = 1, own = 0;
    if (path && strcmp(path, "-")) {
        fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0) {
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
            return NULL;
        }
        own = 1;
    }
    struct sink *s = xcalloc(1, sizeof *s);
    struct file_sink *f = xcalloc(1, sizeof *f);
    f->s = s;
    f->fd = fd;
    f->own_fd = own;
    buf_init(&f->b);
    s->ops = &file_ops;
    s->st = f;
    s->settle = settle;
    s->settle_ctx = ctx;
    return s;
}
