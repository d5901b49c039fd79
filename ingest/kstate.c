/* kstate.c - see kstate.h. */
#include "kstate.h"
#include "kchunk.h"
#include "../core/kafka_conf.h"
#include "../core/kafka_log.h"
#include "../core/metrics.h"

#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The chunk keys of one key this member no longer needs: deleted after its
 * next value is written (kchunk.h). */
struct kstale { char *key; struct kchunk_keys keys; };

struct kstate {
    rd_kafka_t *prod, *cons;
    rd_kafka_topic_t *rkt;
    char *topic;
    const char *name;
    uint64_t bytes;
    size_t chunk_max;          /* chunk value bytes at most (KCHUNK_MAX or the producer's limit) */
    uint64_t gen_seq;
    struct kstale *stale;
    size_t nstale;
};

/* The stale chunk keys of key (created empty). */
static struct kchunk_keys *stale_of(struct kstate *s, const char *key)
{
    for (size_t i = 0; i < s->nstale; i++)
        if (!strcmp(s->stale[i].key, key)) return &s->stale[i].keys;
    s->stale = xrealloc(s->stale, (s->nstale + 1) * sizeof *s->stale);
    struct kstale *t = &s->stale[s->nstale++];
    t->key = xstrdup(key);
    memset(&t->keys, 0, sizeof t->keys);
    return &t->keys;
}

/* The delivery report of a value: only failures are said. */
static void kstate_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    (void)opaque;
    if (m->err)
        gl_say(GL_LOG_ERROR, "gpulog: state topic %s: a snapshot of %zu bytes was not stored: %s\n",
                rd_kafka_topic_name(m->rkt), m->len, rd_kafka_err2str(m->err));
}

/* A client of type t with brokers, ours, then the user's properties. */
static rd_kafka_t *client(rd_kafka_type_t t, const char *brokers, const char *const *fixed, const char *const *props,
                          size_t nprops, char *err, size_t errlen)
{
    char e[GL_ERRLEN];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    int bad = kafka_conf_set(conf, "bootstrap.servers", brokers, e, sizeof e);
    for (size_t i = 0; !bad && fixed[i]; i += 2) bad = kafka_conf_set(conf, fixed[i], fixed[i + 1], e, sizeof e);
    for (size_t i = 0; !bad && i < nprops; i++) {
        const char *eq = strchr(props[i], '=');
        if (!eq) continue;
        char *k = xstrndup(props[i], (size_t)(eq - props[i]));
        /* the group and its protocol are the source's, not ours; consumer
         * settings are no producer's (librdkafka would warn) */
        static const char *const skip[] = { "group.", "partition.assignment", "session.", "heartbeat.", "max.poll",
                                            "auto.", "enable.auto", "fetch.", "queued.", "isolation.", NULL };
        int mine = 1;
        for (size_t j = 0; skip[j]; j++)
            if (!strncmp(k, skip[j], strlen(skip[j])) && (t == RD_KAFKA_PRODUCER || j < 2)) mine = 0;
        if (mine) bad = kafka_conf_set(conf, k, eq + 1, e, sizeof e);
        free(k);
    }
    if (bad) {
        rd_kafka_conf_destroy(conf);
        snprintf(err, errlen, "state topic: %s", e);
        return NULL;
    }
    if (t == RD_KAFKA_PRODUCER) rd_kafka_conf_set_dr_msg_cb(conf, kstate_dr);
    kafka_log_setup(conf);
    rd_kafka_t *rk = rd_kafka_new(t, conf, e, sizeof e);
    if (!rk) snprintf(err, errlen, "state topic: %s", e);
    return rk;
}

struct kstate *kstate_new(const char *brokers, const char *topic, const char *const *props, size_t nprops,
                          const char *name, char *err, size_t errlen)
{
    static const char *const pfixed[] = { "acks", "all", "enable.idempotence", "true", "compression.type", "lz4",
                                          "message.max.bytes", "1000000", "linger.ms", "50", NULL };
    static const char *const cfixed[] = { "group.id", "gpulog-state-reader", "enable.auto.commit", "false",
                                          "enable.partition.eof", "true", "fetch.max.bytes", "16777216", NULL };
    struct kstate *s = xcalloc(1, sizeof *s);
    s->name = name ? name : "detect";
    s->topic = xstrdup(topic);
    s->prod = client(RD_KAFKA_PRODUCER, brokers, pfixed, props, nprops, err, errlen);
    s->cons = s->prod ? client(RD_KAFKA_CONSUMER, brokers, cfixed, props, nprops, err, errlen) : NULL;
    if (!s->cons) { kstate_free(s); return NULL; }
    s->rkt = rd_kafka_topic_new(s->prod, topic, NULL);
    /* a chunk, its key and the batch framing within the producer's limit
     * (ours, or the user's -X message.max.bytes) */
    long mmb = 1000000;
    for (size_t i = 0; i < nprops; i++)
        if (!strncmp(props[i], "message.max.bytes=", 18)) mmb = atol(props[i] + 18);
    s->chunk_max = mmb > 4096 && (size_t)mmb - 2048 < KCHUNK_MAX ? (size_t)mmb - 2048 : KCHUNK_MAX;
    return s;
}

/* kchunk's emit: one message to partition 0 (len 0: a tombstone). */
static int kstate_emit(void *ctx, const char *key, const void *val, size_t len)
{
    struct kstate *s = ctx;
    int e = rd_kafka_produce(s->rkt, 0, RD_KAFKA_MSG_F_COPY, len ? (void *)(uintptr_t)val : NULL, len, key,
                             strlen(key), NULL);
    if (e)
        gl_say(GL_LOG_ERROR, "gpulog %s: state topic %s: %s not written: %s\n", s->name, s->topic, key,
                rd_kafka_err2str(rd_kafka_last_error()));
    else s->bytes += len + strlen(key);
    return e;
}

void kstate_put(struct kstate *s, const char *key, const void *value, size_t len)
{
    /* unique to this write: milliseconds, process, sequence */
    uint64_t gen = (uint64_t)gl_now_ms() << 22 ^ (uint64_t)(getpid() & 0x3ff) << 12 ^ (s->gen_seq++ & 0xfff);
    struct kchunk_keys mine = { 0 }, *stale = stale_of(s, key);
    if (kchunk_write(key, value, len, s->chunk_max, gen, kstate_emit, s, &mine) >= 0) {
        /* the new value is in: the chunks of the one before are not needed */
        for (size_t i = 0; i < stale->n; i++) kstate_emit(s, stale->k[i], NULL, 0);
        kchunk_keys_free(stale);
        *stale = mine;
    } else {   /* no manifest: its chunks go with the next value */
        for (size_t i = 0; i < mine.n; i++) kchunk_keys_add(stale, mine.k[i]);
        kchunk_keys_free(&mine);
    }
    rd_kafka_poll(s->prod, 0);
}

void kstate_poll(struct kstate *s) { if (s) rd_kafka_poll(s->prod, 0); }

uint64_t kstate_bytes_put(const struct kstate *s) { return s ? s->bytes : 0; }

int kstate_get(struct kstate *s, const char *const *keys, size_t n, struct buf *vals, int timeout_ms, char *err,
               size_t errlen)
{
    for (size_t i = 0; i < n; i++) vals[i].len = 0;
    int64_t lo = 0, hi = 0;
    rd_kafka_resp_err_t qe = rd_kafka_query_watermark_offsets(s->cons, s->topic, 0, &lo, &hi, timeout_ms);
    if (qe == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART || qe == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC ||
        qe == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION || (!qe && hi <= lo))
        return GL_OK;   /* no snapshot written yet */
    if (qe) {
        snprintf(err, errlen, "state topic %s: %s", s->topic, rd_kafka_err2str(qe));
        return GL_ERROR;
    }
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, s->topic, 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_assign(s->cons, l);
    rd_kafka_topic_partition_list_destroy(l);
    int64_t deadline = gl_now_ms() + timeout_ms, next = lo;
    int rc = GL_OK;
    struct kchunk_rd *rd = kchunk_rd_new(keys, n);
    while (next < hi) {
        int64_t left = deadline - gl_now_ms();
        if (left <= 0) {
            snprintf(err, errlen, "state topic %s: read up to offset %lld of %lld within %d ms", s->topic,
                     (long long)next, (long long)hi, timeout_ms);
            rc = GL_ERROR;
            break;
        }
        rd_kafka_message_t *m = rd_kafka_consumer_poll(s->cons, (int)(left < 200 ? left : 200));
        if (!m) continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) next = hi;
        else if (!m->err) {
            next = m->offset + 1;
            if (m->key) kchunk_rd_feed(rd, m->key, m->key_len, m->payload, m->len);
        }
        rd_kafka_message_destroy(m);
    }
    rd_kafka_assign(s->cons, NULL);
    for (size_t i = 0; i < n; i++) {
        char why[256];
        /* the chunks found now go after this member's next value of the key */
        if (kchunk_rd_value(rd, i, &vals[i], stale_of(s, keys[i]), why, sizeof why) < 0 && rc == GL_OK) {
            gl_say(GL_LOG_ERROR, "gpulog %s: state topic %s: the snapshot of %s is incomplete (%s): the partition "
                            "starts cold\n", s->name, s->topic, keys[i], why);
            metrics_inc_label(M_STATE_SNAPSHOTS, "incomplete");
        }
    }
    kchunk_rd_free(rd);
    return rc;
}

void kstate_free(struct kstate *s)
{
    if (!s) return;
    if (s->prod && rd_kafka_flush(s->prod, 5000))
        gl_say(GL_LOG_ERROR, "gpulog %s: state topic %s: snapshots not acknowledged within 5 s\n", s->name, s->topic);
    if (s->rkt) rd_kafka_topic_destroy(s->rkt);
    if (s->prod) rd_kafka_destroy(s->prod);
    if (s->cons) { rd_kafka_consumer_close(s->cons); rd_kafka_destroy(s->cons); }
    for (size_t i = 0; i < s->nstale; i++) { free(s->stale[i].key); kchunk_keys_free(&s->stale[i].keys); }
    free(s->stale);
    free(s->topic);
    free(s);
}
