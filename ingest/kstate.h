/*
 * kstate.h - a state store in a Kafka topic (`gpulog detect --state-topic`):
 * the latest value per key, as Kafka Streams keeps its changelogs. The
 * consumer source (kafka_src.c) writes each partition's detector snapshot
 * under the key "TOPIC/PARTITION" and reads the latest back when the
 * partition is assigned to it.
 *
 * A value larger than a message the broker takes by default (1 MiB; the
 * chunk bound is 512 KiB, less when -X message.max.bytes is lower) goes in
 * chunks under "KEY/GEN/I" with a manifest under KEY (ingest/kchunk.h): the
 * topic needs no raised max.message.bytes. A read takes a value whole or not
 * at all (a chunk missing or damaged: logged, counted as "incomplete", the
 * caller starts cold); the chunks of the value a write replaces are
 * tombstoned after it.
 *
 * The topic has one partition (every value goes to partition 0) and should
 * be compacted (cleanup.policy=compact: only the latest value of each key
 * is kept); a reader reads it from the beginning to its end. A topic the
 * broker creates on first use is not compacted: it works, and grows until
 * its retention.
 *
 * Ownership: kstate_new returns an object freed with kstate_free (which
 * waits up to 5 s for values not yet acknowledged).
 */
#ifndef GPULOG_KSTATE_H
#define GPULOG_KSTATE_H

#include "../core/common.h"

struct kstate;
/* A producer and a reader for topic on brokers, with the user's "key=value"
 * librdkafka properties (SASL, TLS). NULL with the reason in err. */
struct kstate *kstate_new(const char *brokers, const char *topic, const char *const *props, size_t nprops,
                          const char *name, char *err, size_t errlen);
/* Writes value (copied) under key; a failed delivery is logged. */
void kstate_put(struct kstate *s, const char *key, const void *value, size_t len);
/* Serves delivery reports (call often). */
void kstate_poll(struct kstate *s);
/* Reads the topic from its beginning to its end (within timeout_ms): vals[i]
 * gets the latest value of keys[i] (len 0: none). GL_OK, or GL_ERROR with
 * the reason in err (vals then hold what was read). */
int kstate_get(struct kstate *s, const char *const *keys, size_t n, struct buf *vals, int timeout_ms, char *err,
               size_t errlen);
/* Bytes written so far (values and keys). */
uint64_t kstate_bytes_put(const struct kstate *s);
void kstate_free(struct kstate *s);

#endif
