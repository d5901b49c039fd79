/*
 * kafka_src.h - the Kafka consumer source: one member of a consumer group,
 * reading schema-v1 events (`gpulog detect`).
 *
 * The consumer behind the "kafka" source of the one loop (ingest/src_kafka.c,
 * at the end of this header), which tracks the messages in its lanes:
 *   ksrc_next    the next message of an assigned partition (a batch is
 *                fetched at a time; partition ends and errors are handled
 *                inside);
 *   ksrc_done    the reader is finished with the current message;
 *   ksrc_commit  commits, per partition, the position the owner's position
 *                hook gives (its lane tracker: the contiguous prefix of
 *                messages with nothing outstanding, ingest/track.c);
 *   ksrc_close   leaves the group (revoking, so the hooks run), ksrc_free.
 * Offsets: enable.auto.commit=false; nothing moves on a mere enqueue.
 *
 * Rebalance (cooperative-sticky unless -X partition.assignment.strategy
 * says otherwise): ksrc_on_assign and ksrc_on_revoke in kafka_src.c; only
 * partitions that change hands are revoked; on revocation the owner's hooks
 * drain its outputs (at most 1 s) and drop the revoked partitions' state (a
 * partition is identified to the owner by its tag, e.g. the engine's state
 * tag); partitions assigned later start with fresh tags.
 *
 * Ownership: ksrc_new returns an object freed with ksrc_free; a record's
 * payload is borrowed until the next ksrc_next.
 */
#ifndef GPULOG_KAFKA_SRC_H
#define GPULOG_KAFKA_SRC_H

#include "../core/common.h"

#include <stdio.h>

/* What the source asks of its owner during a rebalance (borrowed for the
 * source's life). */
struct ksrc_hooks {
    void *ctx;
    /* settle the outputs for up to timeout_ms before revoked partitions are
     * committed; returns the documents still unsettled */
    long (*drain)(void *ctx, int timeout_ms);
    /* the partition with this tag was revoked: forget its state */
    void (*revoked)(void *ctx, int tag);
    /* with a state topic: append the snapshot of the partition with this
     * tag, covering the messages before offset, to out (GL_OK), and restore
     * one into the partition with this tag (GL_OK with the offset it
     * covers; else the owner said why and the partition has no state) */
    int (*save)(void *ctx, int tag, int64_t offset, struct buf *out);
    int (*restore)(void *ctx, int tag, const void *snap, size_t len, int64_t *offset);
    /* where the partition with this tag may commit (the owner tracks the
     * messages: the loop's lanes, src_kafka.c); -1: nothing yet. Without
     * it nothing is committed */
    int64_t (*position)(void *ctx, int tag);
};

struct ksrc_opts {
    const char *brokers, *group;
    const char *const *props;                /* "key=value" librdkafka settings, after ours */
    size_t nprops;
    int once;                                /* read up to the end offsets found at assignment */
    const char *name;                        /* the command, in messages ("gpulog NAME: ...") */
    /* detector state snapshots (kstate.h) in this topic, written per
     * partition every snapshot_ms (default 60 s) when all it consumed is
     * committed, and at a revoke; restored at assignment. NULL = none */
    const char *state_topic;
    int snapshot_ms;
};

/* One message handed out by ksrc_next (valid until the next call). */
struct krec {
    const void *payload;
    size_t len;
    const char *topic;
    int32_t partition;
    int64_t offset;
    int tag;                                 /* the partition's tag (per assignment) */
};

struct ksrc;
/* Makes the consumer (subscribing is ksrc_subscribe). Returns NULL with the reason in err;
 * *usage is set when the reason is the configuration (a bad property). */
struct ksrc *ksrc_new(const struct ksrc_opts *o, const struct ksrc_hooks *h, int *usage, char *err, size_t errlen);
/* Subscribes to the comma-separated topics: GL_OK, or GL_ERROR with the
 * reason in err. */
int ksrc_subscribe(struct ksrc *ks, const char *topics, char *err, size_t errlen);
/* Leaves the group (the revocation runs the hooks) and closes the client;
 * the partitions' figures stay for ksrc_report. */
void ksrc_close(struct ksrc *ks);
/* Closes if not closed yet and frees everything. NULL is ignored. */
void ksrc_free(struct ksrc *ks);

/* The next message: GL_OK with *r filled, GL_AGAIN when none came within timeout_ms (the group is served meanwhile).
 * Paused (ksrc_pause), one message is fetched at a time. */
int ksrc_next(struct ksrc *ks, struct krec *r, int timeout_ms);
/* Serves the group (rebalances, the poll interval) without handing
 * anything out, while the owner cannot take messages: call it paused
 * (ksrc_pause), when a poll brings one message at most, kept behind the
 * rest of the batch for ksrc_next (with 1024 kept, it does not poll). */
void ksrc_poll_group(struct ksrc *ks);
/* An fd that becomes readable when a message arrives while none was
 * waiting (librdkafka's queue IO event), for poll(); -1 when there is none
 * or the consumer is closed. The fd stays the consumer's. */
int ksrc_pollfd(const struct ksrc *ks);
/* Empties that fd's wake-up bytes; call after poll() said readable and
 * before reading, so a message that arrives afterwards wakes poll() again. */
void ksrc_wake_drain(struct ksrc *ks);
/* The reader is done with the current message (ksrc_next also does it for
 * the previous message): --once's end may be reached. */
void ksrc_done(struct ksrc *ks);

/* Commits every partition's position (the position hook) that moved; sync waits. */
void ksrc_commit(struct ksrc *ks, int sync);
/* Pauses (pause = 1) or resumes every assigned partition; partitions
 * assigned later follow. Returns 1 when the state changed. */
int ksrc_pause(struct ksrc *ks, int pause);
/* Messages behind: end offsets (as last seen by the fetcher) minus the
 * committed positions, over the assigned partitions. */
int64_t ksrc_lag(struct ksrc *ks);
/* 1 once the group assigned partitions at least once (readiness). */
int ksrc_assigned(const struct ksrc *ks);
/* --once: 1 when every assigned partition was read to its end offset and
 * no assignment is pending. */
int ksrc_once_done(const struct ksrc *ks);
/* 1 after a fatal consumer error. */
int ksrc_failed(const struct ksrc *ks);
/* Prints "gpulog detect: TOPIC[P] committed N" per assigned partition. */
void ksrc_report(const struct ksrc *ks, FILE *f);

/* The consumer as a source of the one loop (ingest/src_kafka.c, kind
 * "kafka" in the registry, records are events: SRC_FORMAT_EVENTS), opened
 * with the topics as arg and these settings in source_env.kafka: the
 * consumer's options and the owner's snapshot hooks (ctx, save, restore;
 * NULL = none), which see a partition as SRC_KAFKA_TAG(its lane); usage
 * (when not NULL) is set when opening fails on the configuration. Its
 * lanes are the partitions: a revoked one reaches opts.revoked of the
 * pipeline, which drops SRC_KAFKA_TAG(lane)'s state. */
struct ksrc_source_opts {
    struct ksrc_opts o;
    struct ksrc_hooks snap;
    int *usage;
};
#define SRC_KAFKA_TAG(lane) ((int)(lane) + 1)
struct source;
extern const struct source_ops src_kafka;
/* The consumer of a "kafka" source (readiness, the committed offsets at
 * the end, leaving the group before the loop is freed), else NULL. */
struct ksrc *src_kafka_consumer(struct source *s);

#endif
