/*
 * kafka.c - the Kafka producer sink (librdkafka).
 *
 * Settings, chosen so that nothing is lost silently:
 *   enable.idempotence=true    no duplicates or reordering from internal retries
 *   acks=all                   acknowledged = on every in-sync replica
 *   message.timeout.ms=0       never give up on a message (librdkafka's default
 *                              of 5 minutes drops data during longer outages)
 *   compression.codec=lz4      cheap on the node, ~4x on event JSON
 *   queue.buffering.max.kbytes=8192, queue.buffering.max.messages=50000
 *                              bounded memory; a full queue is backpressure
 *   linger.ms=20               20 ms of latency on a 1 s sample stream; fewer,
 *                              larger batches cost less CPU here and in the
 *                              broker: a 400k-line backfill ran 1.38-1.55 s vs
 *                              1.51-1.67 s with 5 and 1.52-1.67 s with 50
 * then the user's -X properties on top.
 *
 * Settling: the delivery report of each message settles its token: success
 * -> SINK_STORED; a permanent error (too large, unknown topic, invalid,
 * authorization...) -> the message goes to the dead letter file with its
 * reason and is settled SINK_DEADLETTER. Purged messages (shutdown) are never
 * settled, so their lines are read again on the next start. A fatal
 * producer error (idempotence violated) or a delivery timeout (only possible
 * if the user set message.timeout.ms) sets errstr: the caller must stop and
 * re-read from its checkpoints; errstr stays empty otherwise.
 */
#include "sink.h"
#include "../core/config.h"
#include "../core/kafka_conf.h"
#include "../core/kafka_log.h"
#include "../core/metrics.h"

#include <librdkafka/rdkafka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct kafka_sink {
    struct sink *s;
    rd_kafka_t *rk;
    rd_kafka_topic_t *rkt[3];
    char *deadletter_path;
    long inflight;            /* produced, not yet reported */
    long purged;
    int give_up;              /* kafka_conf.give_up */
};

static void dead_letter(struct kafka_sink *k, const char *topic, const void *key, size_t keylen,
                        const void *val, size_t len, int err, const char *reason)
{
    struct buf b;
    buf_init(&b);
    struct deadletter d = { .now_ms = gl_now_ms(), .output = "kafka", .status = err, .reason = reason, .topic = topic,
                            .key = key ? key : "", .keylen = key ? keylen : 0, .json = val, .len = val ? len : 0 };
    sink_deadletter_record(&b, &d);
    int ok = 0;
    if (k->deadletter_path) {
        int fd = open(k->deadletter_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd >= 0) {
            ok = write(fd, b.p, b.len) == (ssize_t)b.len;
            fsync(fd);
            close(fd);
        }
    }
    log_error("msg=\"kafka: message rejected permanently: dead-lettered\" topic=\"%s\" reason=\"%s\" file=\"%s\"%s",
              topic, reason, k->deadletter_path ? k->deadletter_path : "(none)",
              ok ? "" : " dead_letter_write=failed");
    if (!ok) {
        /* no dead letter file: the message itself goes to the log */
        fwrite(b.p, 1, b.len, stderr);
    }
    buf_free(&b);
}

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    struct kafka_sink *k = opaque;
    (void)rk;
    k->inflight--;
    if (!m->err) {
        if (k->s->settle) k->s->settle(k->s->settle_ctx, m->_private, SINK_STORED);
        return;
    }
    if (m->err == RD_KAFKA_RESP_ERR__PURGE_QUEUE || m->err == RD_KAFKA_RESP_ERR__PURGE_INFLIGHT) {
        k->purged++;
        return;   /* not settled: re-read after restart */
    }
    if (m->err == RD_KAFKA_RESP_ERR__FATAL || m->err == RD_KAFKA_RESP_ERR__MSG_TIMED_OUT) {
        char fe[256] = "";
        if (m->err == RD_KAFKA_RESP_ERR__FATAL) rd_kafka_fatal_error(k->rk, fe, sizeof fe);
        if (!k->s->errstr[0])
            snprintf(k->s->errstr, sizeof k->s->errstr, "kafka: %.60s%s%.120s (restart re-reads unacknowledged lines)",
                     rd_kafka_err2str(m->err), fe[0] ? ": " : "", fe);
        return;
    }
    const char *topic = m->rkt ? rd_kafka_topic_name(m->rkt) : "?";
    dead_letter(k, topic, m->key, m->key_len, m->payload, m->len, (int)m->err, rd_kafka_err2str(m->err));
    if (k->s->settle) k->s->settle(k->s->settle_ctx, m->_private, SINK_DEADLETTER);
}

static void error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    struct kafka_sink *k = opaque;
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        char fe[256];
        rd_kafka_fatal_error(rk, fe, sizeof fe);
        if (!k->s->errstr[0]) snprintf(k->s->errstr, sizeof k->s->errstr, "kafka: fatal: %.200s", fe);
        return;
    }
    /* transport errors while the broker is away: librdkafka retries */
    metrics_inc(M_DELIVERY_ERRORS);
    kafka_log_error(err, reason);
    /* --once: waiting will not fix a password or a CA; what is not
     * acknowledged stays in the checkpoints and spool for the next run */
    const char *hint = k->give_up && !k->s->errstr[0] ? kafka_error_hint(err, reason) : NULL;
    if (hint) snprintf(k->s->errstr, sizeof k->s->errstr, "%s (--once: giving up; nothing is lost)", hint);
}

static int kafka_write(void *st, const struct sink_doc *d)
{
    struct kafka_sink *k = st;
    if (k->s->errstr[0]) return GL_ERROR;
    rd_kafka_topic_t *rkt = k->rkt[d->stream <= STREAM_ANOMALIES ? d->stream : 0];
    if (rd_kafka_produce(rkt, RD_KAFKA_PARTITION_UA, RD_KAFKA_MSG_F_COPY, (void *)d->json, d->len,
                         d->key, d->keylen, d->token) == 0) {
        k->inflight++;
        return GL_OK;
    }
    rd_kafka_resp_err_t err = rd_kafka_last_error();
    if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) return GL_AGAIN;
    if (err == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE ||
        err == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC || err == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION) {
        dead_letter(k, rd_kafka_topic_name(rkt), d->key, d->keylen, d->json, d->len, (int)err, rd_kafka_err2str(err));
        if (k->s->settle) k->s->settle(k->s->settle_ctx, d->token, SINK_DEADLETTER);
        return GL_OK;
    }
    snprintf(k->s->errstr, sizeof k->s->errstr, "kafka: produce: %s", rd_kafka_err2str(err));
    return GL_ERROR;
}

static long kafka_poll(void *st, int timeout_ms)
{
    struct kafka_sink *k = st;
    rd_kafka_poll(k->rk, timeout_ms);
    return k->inflight;
}

static void kafka_destroy(void *st)
{
    struct kafka_sink *k = st;
    if (k->rk) {
        /* whatever is unacknowledged now is not settled: it will be re-read */
        rd_kafka_purge(k->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        rd_kafka_flush(k->rk, 1000);
        for (int i = 0; i < 3; i++)
            if (k->rkt[i]) rd_kafka_topic_destroy(k->rkt[i]);
        rd_kafka_destroy(k->rk);
    }
    free(k->deadletter_path);
    free(k);
}

static const struct sink_ops kafka_ops = {
    .name = "kafka", .write = kafka_write, .poll = kafka_poll, .destroy = kafka_destroy,
};

/* kafka_conf_set with "kafka: " before the error (the producer's errors). */
static int conf_set(rd_kafka_conf_t *conf, const char *key, const char *val, char *err, size_t errlen)
{
    char e[GL_ERRLEN];
    if (kafka_conf_set(conf, key, val, e, sizeof e) == GL_OK) return GL_OK;
    snprintf(err, errlen, "kafka: %s", e);
    return GL_ERROR;
}

struct sink *sink_kafka_new(const struct kafka_conf *kc, sink_settle_fn settle, void *ctx,
                            char *err, size_t errlen)
{
    static const char *const defaults[][2] = {
        { "enable.idempotence", "true" },
        { "acks", "all" },
        { "message.timeout.ms", "0" },
        { "compression.codec", "lz4" },
        { "queue.buffering.max.kbytes", "8192" },
        { "queue.buffering.max.messages", "50000" },
        { "linger.ms", "20" },
        { "socket.keepalive.enable", "true" },
        { "client.id", "gpulog-collect" },
    };
    static const char *const default_topic[3] = { "gpu.metrics", "gpu.events", "gpu.anomalies" };
    if (!kc->brokers || !*kc->brokers) {
        snprintf(err, errlen, "kafka: no brokers given");
        return NULL;
    }
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    for (size_t i = 0; i < GL_ARRAY_LEN(defaults); i++)
        if (conf_set(conf, defaults[i][0], defaults[i][1], err, errlen) != GL_OK) goto fail;
    if (conf_set(conf, "bootstrap.servers", kc->brokers, err, errlen) != GL_OK) goto fail;
    for (size_t i = 0; i < kc->nprops; i++) {
        const char *eq = strchr(kc->props[i], '=');
        if (!eq) {
            snprintf(err, errlen, "kafka: property %zu is not key=value", i + 1);   /* never the text: it may be a secret */
            goto fail;
        }
        char *key = xstrndup(kc->props[i], (size_t)(eq - kc->props[i]));
        int r = conf_set(conf, key, eq + 1, err, errlen);
        free(key);
        if (r != GL_OK) goto fail;
    }
    struct sink *s = xcalloc(1, sizeof *s);
    struct kafka_sink *k = xcalloc(1, sizeof *k);
    k->s = s;
    k->deadletter_path = kc->deadletter_path ? xstrdup(kc->deadletter_path) : NULL;
    k->give_up = kc->give_up;
    s->ops = &kafka_ops;
    s->st = k;
    s->settle = settle;
    s->settle_ctx = ctx;
    rd_kafka_conf_set_opaque(conf, k);
    rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
    kafka_log_setup(conf);
    rd_kafka_conf_set_error_cb(conf, error_cb);   /* after kafka_log_setup's default one */
    char e[512];
    k->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, e, sizeof e);
    if (!k->rk) {
        snprintf(err, errlen, "kafka: %s", e);
        rd_kafka_conf_destroy(conf);   /* not consumed on failure */
        free(k->deadletter_path);
        free(k);
        free(s);
        return NULL;
    }
    for (int i = 0; i < 3; i++) {
        const char *name = kc->topic[i] ? kc->topic[i] : default_topic[i];
        k->rkt[i] = rd_kafka_topic_new(k->rk, name, NULL);
        if (!k->rkt[i]) {
            snprintf(err, errlen, "kafka: topic %s: %s", name, rd_kafka_err2str(rd_kafka_last_error()));
            sink_free(s);
            return NULL;
        }
    }
    return s;
fail:
    rd_kafka_conf_destroy(conf);
    return NULL;
}
