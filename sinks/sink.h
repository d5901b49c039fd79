/*
 * sink.h - one interface for every output: NDJSON file/stdout, Kafka, and
 * Elasticsearch/OpenSearch.
 *
 * A document is written with an opaque token; once the sink knows the
 * document's fate it calls settle(ctx, token, outcome) exactly once:
 * SINK_STORED (acknowledged: stored, or already stored), or SINK_DEADLETTER
 * (permanently rejected and written to the dead letter with its reason).
 * Callers advance checkpoints/offsets only from settle callbacks, never from
 * write(). Nothing is ever dropped without a settle call.
 *
 * Ownership: write() borrows the document and copies what it keeps; the
 * caller owns the sink and frees it with sink_free (which does not flush).
 */
#ifndef GPULOG_SINK_H
#define GPULOG_SINK_H

#include "../core/common.h"
#include "../core/event.h"

/* Routing class of a document: decides topic / data stream. */
enum sink_stream { STREAM_METRICS, STREAM_EVENTS, STREAM_ANOMALIES };

/* Maps event.dataset to a routing class: gpu.xid, gpu.sxid and
 * gpulog.collector -> events, gpu.anomaly, gpu.incident and
 * gpu.fleet_incident -> anomalies,
 * everything else (NULL too) -> metrics. */
enum sink_stream sink_stream_of(const char *dataset);

struct sink_doc;
/* The one way an event becomes a document, for every command: encodes ev
 * into json and its Kafka key into key (both reset first, owned by the
 * caller) and fills *d, which borrows them until the next call. The key
 * policy: key = host.name (default_host when the event has none) for every
 * stream, so all GPUs of a node share a partition: per-node order and peer
 * comparison hold in `detect` whatever the partition count. */
void sink_doc_of(struct sink_doc *d, const struct event *ev, enum sink_stream stream, const char *default_host,
                 void *token, struct buf *json, struct buf *key);

/* What a dead-letter record says about one document refused for good. */
struct deadletter {
    int64_t now_ms;
    const char *output;        /* "kafka" or "elasticsearch" */
    int status;                /* HTTP status, or librdkafka's error code */
    const char *reason;
    const char *topic;         /* Kafka: the topic (NULL otherwise) */
    const char *index;         /* Elasticsearch: the index or data stream (NULL otherwise) */
    const char *key;           /* Kafka: the message key (may be NULL) */
    size_t keylen;
    const char *id;            /* event.id when known; NULL = taken from the document */
    const char *json;          /* the document as it was sent */
    size_t len;
};
/* Appends the one dead-letter record format of every sink (one JSON line
 * with '\n') to out: {"@timestamp", "deadletter.output", "deadletter.status",
 * "deadletter.reason", "deadletter.topic" | "deadletter.index",
 * "deadletter.key" (Kafka), "event.id", "document": the original, as an
 * object when it is a JSON object, else as a string}. Borrows d. */
void sink_deadletter_record(struct buf *out, const struct deadletter *d);

struct sink_doc {
    enum sink_stream stream;
    const char *key;  size_t keylen;     /* Kafka message key: host.name (sink_doc_of) */
    const char *id;                      /* event.id: ES _id, dedup key */
    const char *json; size_t len;        /* the event, one JSON object */
    void *token;                         /* handed back to settle() */
};

enum sink_outcome { SINK_STORED = 0, SINK_DEADLETTER = 1 };
typedef void (*sink_settle_fn)(void *ctx, void *token, enum sink_outcome outcome);

struct sink_ops {
    const char *name;
    /* GL_OK: accepted; GL_AGAIN: the sink is full (backpressure): call poll
     * and try again; GL_ERROR: fatal (configuration), reason in errstr. */
    int (*write)(void *st, const struct sink_doc *d);
    /* Makes progress on I/O for up to timeout_ms; calls settle callbacks.
     * Returns the number of documents still unsettled. */
    long (*poll)(void *st, int timeout_ms);
    void (*destroy)(void *st);
};

struct sink {
    const struct sink_ops *ops;
    void *st;
    sink_settle_fn settle;
    void *settle_ctx;
    char errstr[GL_ERRLEN];
    /* the streams the command routes to this sink (SINK_STREAM bits; 0 =
     * every stream): e.g. detect's file and anomalies-topic outputs take
     * the anomaly records only, Elasticsearch also the consumed events */
    unsigned streams;
};
#define SINK_STREAM(st) (1u << (st))
#define SINK_ALL_STREAMS (SINK_STREAM(STREAM_METRICS) | SINK_STREAM(STREAM_EVENTS) | SINK_STREAM(STREAM_ANOMALIES))
/* 1 when documents of stream st go to s. */
static inline int sink_takes(const struct sink *s, enum sink_stream st) { return !s->streams || (s->streams & SINK_STREAM(st)); }

static inline int sink_write(struct sink *s, const struct sink_doc *d) { return s->ops->write(s->st, d); }
static inline long sink_poll(struct sink *s, int timeout_ms) { return s->ops->poll(s->st, timeout_ms); }
/* Polls until every document is settled or timeout_ms passed (-1 = no limit).
 * Returns the number still unsettled (0 = all settled). */
long sink_drain(struct sink *s, int timeout_ms);
void sink_free(struct sink *s);

/* Documents sinks refused for now (GL_AGAIN), copied and kept in order with
 * the sink each is for, so that a caller can go on polling (Kafka, its
 * inputs) instead of blocking; while anything is held, new documents queue
 * behind it, so order is kept. A zeroed struct is an empty hold. */
struct sink_held {
    struct sink *sink;
    struct sink_doc doc;     /* key, id and json are copies the hold owns */
};
struct sink_hold {
    struct sink_held *v;
    size_t n, cap;
    int64_t since;           /* when the oldest held document was refused */
};
/* Writes doc (borrowed) to s, or copies it to the end of h when h is not
 * empty or s answers GL_AGAIN. Returns GL_OK (written), GL_AGAIN (held) or
 * GL_ERROR (s failed; nothing held). */
int sink_hold_write(struct sink_hold *h, struct sink *s, const struct sink_doc *doc);
/* Writes held documents in order until a sink answers GL_AGAIN; returns how
 * many were written. A document whose sink fails is dropped, its sink and
 * token are put in *failed and *failed_token, and flushing stops there. */
size_t sink_hold_flush(struct sink_hold *h, struct sink **failed, void **failed_token);
/* Frees the copies (not the tokens: they belong to the caller). */
void sink_hold_free(struct sink_hold *h);

/* NDJSON to a file, or stdout when path is NULL or "-". Settles on write. */
struct sink *sink_file_new(const char *path, sink_settle_fn settle, void *ctx,
                           char *err, size_t errlen);

/* Kafka producer (sinks/kafka.c). props are "key=value" librdkafka settings
 * applied after gpulog's defaults (idempotence, acks=all, compression,
 * message.timeout.ms=0). */
struct kafka_conf {
    const char *brokers;
    const char *topic[3];               /* by enum sink_stream; NULL = default */
    const char *const *props;
    size_t nprops;
    const char *deadletter_path;        /* file for permanently rejected messages */
    int give_up;                        /* --once: a refused login or an untrusted certificate fails the sink */
};
struct sink *sink_kafka_new(const struct kafka_conf *kc, sink_settle_fn settle, void *ctx,
                            char *err, size_t errlen);

/* Elasticsearch/OpenSearch _bulk (sinks/es.c). */
struct es_conf {
    const char *url;                    /* http(s)://host:port */
    const char *ns;                     /* data stream namespace, default "default" */
    int index_metrics;                  /* also index metric events */
    const char *user, *password;        /* basic auth (password from env/file) */
    const char *api_key;
    const char *ca_file, *cert_file, *key_file;
    const char *deadletter_path;        /* file for rejected documents */
    size_t batch_bytes;                 /* flush a bulk body at this size */
    int batch_age_ms;                   /* or when the oldest item is this old */
    size_t max_pending_bytes;           /* backpressure above this */
};
struct sink *sink_es_new(const struct es_conf *ec, sink_settle_fn settle, void *ctx,
                         char *err, size_t errlen);

#endif
