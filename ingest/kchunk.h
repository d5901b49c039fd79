/*
 * kchunk.h - values of a compacted Kafka topic split into messages a broker
 * with its default limit (message.max.bytes 1 MiB) takes (ingest/kstate.c's
 * detector snapshots grow with the GPUs of a partition: 1.3-1.7 KB each).
 *
 * Layout under one key K (docs/operations.md, "state topic"):
 *   - a value of at most `max` bytes is written as it is under K (inline:
 *     what gpulog wrote before chunking, still read as such);
 *   - a larger one goes as chunks under "K/GEN/I" (GEN 16 hex digits, a
 *     generation unique to this write; I from 0), each with a 24-byte header
 *     (magic "GLKC", version, GEN, I, the count), then a 32-byte manifest
 *     under K (magic "GLKM", version, GEN, the count, the value's CRC-32 and
 *     length), written after its chunks.
 * A reader takes the latest value under K: inline, or the chunks the latest
 * manifest names (all present, lengths and CRC right), else nothing with a
 * reason (the caller starts cold). A write never overwrites the chunks of
 * the manifest it replaces (a new GEN), so a writer that dies half-way
 * leaves the previous value readable; chunks no manifest needs any more
 * (the previous generation, ones left by a writer that died) are deleted
 * with tombstones after the next manifest (the caller keeps their keys: a
 * struct kchunk_keys).
 *
 * Ownership: kchunk_keys and kchunk_rd own their strings and buffers.
 */
#ifndef GPULOG_KCHUNK_H
#define GPULOG_KCHUNK_H

#include "../core/common.h"

#define KCHUNK_MAX (512u << 10)   /* chunk value bytes at most, unless the producer allows less */
#define KCHUNK_HEADER 24
#define KCHUNK_MANIFEST 32

/* A set of message keys (chunks to delete later). */
struct kchunk_keys { char **k; size_t n, cap; };
void kchunk_keys_add(struct kchunk_keys *s, const char *key);   /* once per key */
void kchunk_keys_free(struct kchunk_keys *s);

/* Writes one message (value NULL/0: a tombstone); 0 when it was queued. */
typedef int (*kchunk_emit_fn)(void *ctx, const char *key, const void *val, size_t len);

/* Writes v/len under key through emit: inline when it fits max (a value
 * beginning with the manifest's magic is always chunked), else its chunks of
 * at most max bytes under generation gen, then the manifest. The keys of
 * the chunks emitted go to `chunks`. Returns the chunk count (0 inline), or
 * -1 when an emit failed (no manifest was written). */
int kchunk_write(const char *key, const void *v, size_t len, size_t max, uint64_t gen, kchunk_emit_fn emit,
                 void *ctx, struct kchunk_keys *chunks);

/* A reader of keys[0..n) over a topic's messages in offset order. */
struct kchunk_rd;
struct kchunk_rd *kchunk_rd_new(const char *const *keys, size_t n);
/* One message (len 0: a tombstone); others' keys are skipped. */
void kchunk_rd_feed(struct kchunk_rd *r, const void *key, size_t klen, const void *val, size_t len);
/* The value of keys[i]: 1 with it in val, 0 none written (or deleted), -1
 * incomplete or damaged (the reason in why). live gets the keys of its
 * chunks still in the topic (the ones to delete after the next write). */
int kchunk_rd_value(struct kchunk_rd *r, size_t i, struct buf *val, struct kchunk_keys *live, char *why,
                    size_t whylen);
void kchunk_rd_free(struct kchunk_rd *r);

#endif
