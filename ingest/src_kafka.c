/* src_kafka.c - the Kafka consumer as a source of the one loop (source.h,
 * kind "kafka", format SRC_FORMAT_EVENTS): ingest/kafka_src.c's consumer
 * (group membership, batch fetch, rebalance, state snapshots) with its
 * partitions as the loop's lanes.
 *
 * A partition gets a free lane (slot) when it is first seen (at its
 * snapshot's restore, or its first message) and says so with SRC_MOVED at
 * the offset of its first message; the loop's tracker of the lane is then
 * the partition's commit position (the consumer's position hook), and
 * once a second (tick) the consumer commits what moved. A revoked
 * partition's lane is drained and handed back (env->drain, env->revoked)
 * from inside next, then freed for the next partition. The owner's
 * snapshot hooks see the lane + 1 as the partition's tag (SRC_KAFKA_TAG).
 * While the loop cannot write (its sinks are full) for over 1 s, pump
 * pauses the partitions and keeps serving the group.
 */
#include "kafka_src.h"
#include "source.h"
#include "../core/metrics.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct src_kafka {
    struct source base;
    struct ksrc *ks;
    struct ksrc_hooks owner;       /* the command's snapshot hooks (ctx, save, restore) */
    int *tag;                      /* by lane: the consumer's tag of its partition, 0 = free */
    unsigned char *fresh;          /* by lane: assigned, its SRC_MOVED not said yet */
    uint32_t nslots;
    int last_tag;                  /* cache of the last lookup */
    uint32_t last_lane;
    struct krec held;              /* a message kept back behind its lane's SRC_MOVED */
    int have_held;
    int64_t blocked_since;         /* the loop stopped taking messages, 0 = it takes them */
    int paused;
    int64_t paused_since, pause_logged;
    uint64_t pauses;
};

/* ------------------------------------------------------------ the lanes */

/* The lane of the partition with this tag; a new one (fresh) when alloc,
 * else -1 when it has none. */
static int64_t lane_of_tag(struct src_kafka *k, int tag, int alloc)
{
    if (k->last_tag == tag && k->tag[k->last_lane] == tag) return k->last_lane;
    uint32_t free_lane = UINT32_MAX;
    for (uint32_t i = 0; i < k->nslots; i++) {
        if (k->tag[i] == tag) { k->last_tag = tag; k->last_lane = i; return i; }
        if (!k->tag[i] && free_lane == UINT32_MAX) free_lane = i;
    }
    if (!alloc) return -1;
    if (free_lane == UINT32_MAX) {
        if (k->nslots == SRC_MAX_LANES) return -1;
        free_lane = k->nslots++;
        k->tag = xrealloc(k->tag, k->nslots * sizeof *k->tag);
        k->fresh = xrealloc(k->fresh, k->nslots);
    }
    k->tag[free_lane] = tag;
    k->fresh[free_lane] = 1;
    return free_lane;
}

/* The consumer's hooks: drain the loop, the lane revoked (then free),
 * the commit position from the lane's tracker, snapshots by lane. */
static long hk_drain(void *ctx, int timeout_ms)
{
    struct src_kafka *k = ctx;
    return k->base.env->drain(k->base.env->ctx, timeout_ms);
}

static void hk_revoked(void *ctx, int tag)
{
    struct src_kafka *k = ctx;
    int64_t lane = lane_of_tag(k, tag, 0);
    if (lane < 0) return;
    if (k->have_held && k->held.tag == tag) k->have_held = 0;   /* its messages are purged */
    k->base.env->revoked(k->base.env->ctx, &k->base, (uint32_t)lane);   /* also a restored state never read */
    k->tag[lane] = 0;
}

static int64_t hk_position(void *ctx, int tag)
{
    struct src_kafka *k = ctx;
    int64_t lane = lane_of_tag(k, tag, 0);
    if (lane < 0 || k->fresh[lane] || (uint32_t)lane >= k->base.nlanes) return -1;
    return k->base.lanes[lane].tr.committed;
}

static int hk_save(void *ctx, int tag, int64_t offset, struct buf *out)
{
    struct src_kafka *k = ctx;
    int64_t lane = lane_of_tag(k, tag, 0);
    return lane < 0 ? GL_ERROR : k->owner.save(k->owner.ctx, SRC_KAFKA_TAG(lane), offset, out);
}

static int hk_restore(void *ctx, int tag, const void *snap, size_t len, int64_t *offset)
{
    struct src_kafka *k = ctx;
    int64_t lane = lane_of_tag(k, tag, 1);
    return lane < 0 ? GL_ERROR : k->owner.restore(k->owner.ctx, SRC_KAFKA_TAG(lane), snap, len, offset);
}

/* ---------------------------------------------------------- the source */

static struct source *kafka_open(const char *topics, const struct source_env *env, char *err, size_t errlen)
{
    const struct ksrc_source_opts *ko = env->kafka;
    if (!ko || !topics) { snprintf(err, errlen, "kafka: no consumer settings or topics"); return NULL; }
    struct src_kafka *k = xcalloc(1, sizeof *k);
    source_init(&k->base, &src_kafka, topics, env);
    k->owner = ko->snap;
    int snap = ko->snap.save && ko->snap.restore;
    struct ksrc_hooks h = { .ctx = k, .drain = hk_drain, .revoked = hk_revoked, .position = hk_position,
                            .save = snap ? hk_save : NULL, .restore = snap ? hk_restore : NULL };
    int usage = 0;
    k->ks = ksrc_new(&ko->o, &h, &usage, err, errlen);
    if (ko->usage) *ko->usage = usage;
    if (!k->ks || ksrc_subscribe(k->ks, topics, err, errlen) != GL_OK) {
        k->base.ops->close(&k->base);
        return NULL;
    }
    return &k->base;
}

static int kafka_next(struct source *s, int timeout_ms, struct src_rec *r)
{
    struct src_kafka *k = (struct src_kafka *)s;
    struct krec kr;
    if (k->have_held) {
        k->have_held = 0;
        kr = k->held;
    } else {
        ksrc_done(k->ks);   /* the previous message is processed: --once's end may be reached */
        if (ksrc_failed(k->ks) || (s->env->once && ksrc_once_done(k->ks))) return SRC_AGAIN;
        if (ksrc_next(k->ks, &kr, timeout_ms) != GL_OK) return SRC_AGAIN;
        int64_t lane = lane_of_tag(k, kr.tag, 1);
        if (lane < 0) return SRC_AGAIN;   /* more partitions than lanes: not read (never: 4096) */
        if (k->fresh[lane]) {
            k->fresh[lane] = 0;
            k->held = kr;
            k->have_held = 1;
            *r = (struct src_rec){ .off = kr.offset, .end = kr.offset, .lane = (uint32_t)lane };
            return SRC_MOVED;
        }
    }
    *r = (struct src_rec){ .p = kr.payload, .len = kr.len, .off = kr.offset, .end = kr.offset + 1,
                           .lane = (uint32_t)lane_of_tag(k, kr.tag, 0) };
    return SRC_REC;
}

/* Positions are committed by tick (one request for every partition). */
static int kafka_checkpoint(struct source *s, uint32_t lane, int64_t committed, int changed)
{
    (void)s; (void)lane; (void)committed; (void)changed;
    return GL_OK;
}

static int kafka_ended(struct source *s)
{
    struct src_kafka *k = (struct src_kafka *)s;
    return !k->have_held && (ksrc_failed(k->ks) || (s->env->once && ksrc_once_done(k->ks)));
}

static void kafka_close(struct source *s)
{
    struct src_kafka *k = (struct src_kafka *)s;
    ksrc_free(k->ks);
    free(k->tag);
    free(k->fresh);
    source_fini(s);
    free(k);
}

/* Pauses (or resumes) the partitions and says so (at most one pair of
 * lines per 10 s: a slow cluster pauses often). */
static void set_paused(struct src_kafka *k, int pause)
{
    if (!ksrc_pause(k->ks, pause)) return;
    int64_t now = gl_now_ms();
    k->paused = pause;
    if (pause) {
        k->paused_since = now;
        k->pauses++;
    }
    if (now - k->pause_logged < 10000 && (pause || now - k->paused_since < 10000)) return;
    if (pause) {
        k->pause_logged = now;
        log_warn("msg=\"outputs full for over 1 s: partitions paused, still polling the group\" pauses=%" PRIu64,
                 k->pauses);
    } else {
        log_info("msg=\"outputs took the held records: partitions resumed\" paused_ms=%" PRId64, now - k->paused_since);
    }
}

/* Backpressure: the loop takes no message while its sinks are full; after
 * 1 s the partitions are paused and the group still served, or it evicts
 * us after max.poll.interval.ms. */
static void kafka_pump(struct source *s, int readable, int keeping_up)
{
    struct src_kafka *k = (struct src_kafka *)s;
    if (readable) ksrc_wake_drain(k->ks);
    if (keeping_up) {
        k->blocked_since = 0;
        if (k->paused) set_paused(k, 0);
        return;
    }
    int64_t now = gl_now_ms();
    if (!k->blocked_since) k->blocked_since = now;
    if (now - k->blocked_since < 1000) return;
    if (!k->paused) set_paused(k, 1);
    ksrc_poll_group(k->ks);
}

static int kafka_pollfd(struct source *s)
{
    return ksrc_pollfd(((struct src_kafka *)s)->ks);
}

/* Once a second: the settled positions committed, snapshots, the lag. */
static void kafka_tick(struct source *s)
{
    struct src_kafka *k = (struct src_kafka *)s;
    ksrc_commit(k->ks, 0);
    metrics_set(M_CONSUMER_LAG, ksrc_lag(k->ks));
}

const struct source_ops src_kafka = {
    .name = "kafka",
    .format = SRC_FORMAT_EVENTS,
    .open = kafka_open,
    .next = kafka_next,
    .checkpoint = kafka_checkpoint,
    .ended = kafka_ended,
    .close = kafka_close,
    .pump = kafka_pump,
    .pollfd = kafka_pollfd,
    .tick = kafka_tick,
};

struct ksrc *src_kafka_consumer(struct source *s)
{
    return s->ops == &src_kafka ? ((struct src_kafka *)s)->ks : NULL;
}
