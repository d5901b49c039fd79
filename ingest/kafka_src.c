/* kafka_src.c - the Kafka consumer source (see kafka_src.h): a member of a
 * consumer group that hands out its partitions' messages one at a time and
 * commits, per partition, the position its owner gives (the position hook:
 * the loop's lane tracker, ingest/src_kafka.c, past the contiguous prefix of
 * messages whose outputs were all settled).
 *
 * Layout (for whoever changes the rebalance protocol):
 *   - struct kpart: one assigned partition (its tag, last consumed offset,
 *     committed position, --once end offset, snapshot marks);
 *   - the rebalance: ksrc_rebalance_cb (librdkafka's callback) dispatches to
 *     ksrc_on_assign (new kparts, their committed offsets and --once end
 *     offsets, rd_kafka_assign, the pause state), ksrc_on_revoke (the
 *     owner's drain hook, a synchronous commit, the owner's revoked hook per
 *     partition, unassign) and ksrc_on_rebalance_error. The protocol is
 *     cooperative-sticky by default (incremental assign/unassign of the
 *     partitions in the list; the kparts that stay are untouched), eager
 *     when -X partition.assignment.strategy=range|roundrobin says so (every
 *     partition revoked at every rebalance);
 *   - reading: fetch (a batch, or one message while paused), take (partition
 *     ends and errors), ksrc_next / ksrc_done, fetch_poke;
 *   - committing: commit_parts (the owner's position hook), ksrc_commit.
 */
#include "kafka_src.h"
#include "kstate.h"
#include "source.h"
#include "../core/kafka_conf.h"
#include "../core/kafka_log.h"
#include "../core/metrics.h"

#include <librdkafka/rdkafka.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KSRC_BATCH 1024        /* messages per rd_kafka_consume_batch_queue call */
#define KSRC_POKE_LAG 20000    /* messages behind that make a low queue wake the fetcher */
#define KSRC_POKE_MS 5         /* at most one wake-up query per this many ms */
#define KSRC_POKE_QLEN 8192    /* messages left in the queue below which the fetcher is woken */
#define KSRC_REVOKE_DRAIN_MS 1000   /* outputs settled at a revoke before its commit, at most */
#define KSRC_REPLAY_MAX 1000000     /* messages read again after a snapshot older than the commit, at most */

struct kpart {
    char *topic;
    int32_t part;
    int tag;
    int64_t consumed;          /* last processed offset, -1 none */
    int64_t committed;         /* last committed position, -1 none */
    int64_t end;               /* --once: high watermark at assignment, else -1 */
    int eof;
    int64_t snap_at, snap_off; /* the last snapshot written or restored: when, its offset */
    struct kpart *next;
};

struct ksrc {
    rd_kafka_t *rk;
    rd_kafka_queue_t *cq;
    int wake[2];               /* librdkafka writes to [1] when cq gets a message while empty; -1 none */
    struct ksrc_hooks h;
    struct kstate *st;         /* --state-topic: snapshots of the partitions' detector state */
    int snap_ms;               /* at most this often per partition */
    const char *name;          /* the command, in messages */
    int once, assigned_once, unassigned, paused, fatal, closed;
    int next_tag;
    struct kpart *parts;
    struct kpart *cur;         /* the partition of the message handed out, until ksrc_done */
    int64_t cur_off;
    rd_kafka_message_t *last;  /* the message handed out (its payload is borrowed) */
    rd_kafka_message_t *batch[KSRC_BATCH];
    size_t nb, bi;             /* fetched, handed out or skipped */
    int batched;               /* the last fetch was a batch (not one paused poll) */
    int64_t poke_last;
    unsigned poke_turn;
};

/* ------------------------------------------------------------ partitions */

static struct kpart *kpart_find(const struct ksrc *ks, const char *topic, int32_t part)
{
    for (struct kpart *p = ks->parts; p; p = p->next)
        if (p->part == part && !strcmp(p->topic, topic)) return p;
    return NULL;
}

/* Frees p (the caller unlinked it; no token may point to it any more). */
static void kpart_free(struct kpart *p)
{
    free(p->topic);
    free(p);
}

/* A newly assigned partition, owned by ks's list from now on: its committed
 * offset, and for --once the end offset it reads up to. */
static struct kpart *kpart_new(struct ksrc *ks, const rd_kafka_topic_partition_t *tp, int64_t committed)
{
    struct kpart *p = xcalloc(1, sizeof *p);
    p->topic = xstrdup(tp->topic);
    p->part = tp->partition;
    p->tag = ++ks->next_tag;
    p->consumed = -1;
    p->committed = committed >= 0 ? committed : -1;
    p->end = -1;
    int64_t lo = 0, hi = 0;
    if (ks->once && rd_kafka_query_watermark_offsets(ks->rk, tp->topic, tp->partition, &lo, &hi, 10000) == 0) {
        p->end = hi;
        int64_t start = p->committed >= 0 ? p->committed : lo;
        if (start >= hi) p->eof = 1;
    }
    p->next = ks->parts;
    ks->parts = p;
    return p;
}

/* Where p's committed offset may go (the owner's position hook: its first
 * message with an output still out, else past the last one processed);
 * -1 none. */
static int64_t commit_pos(const struct ksrc *ks, const struct kpart *p)
{
    return ks->h.position ? ks->h.position(ks->h.ctx, p->tag) : -1;
}

/* Commits the settled positions of the partitions that moved. */
static void commit_parts(struct ksrc *ks, int sync)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(8);
    for (struct kpart *p = ks->parts; p; p = p->next) {
        int64_t pos = commit_pos(ks, p);
        if (pos >= 0 && pos > p->committed) {
            rd_kafka_topic_partition_list_add(l, p->topic, p->part)->offset = pos;
            p->committed = pos;
        }
    }
    if (l->cnt) {
        rd_kafka_resp_err_t err = rd_kafka_commit(ks->rk, l, !sync);
        if (err && err != RD_KAFKA_RESP_ERR__NO_OFFSET)
            gl_say(GL_LOG_ERROR, "gpulog %s: commit: %s\n", ks->name, rd_kafka_err2str(err));
    }
    rd_kafka_topic_partition_list_destroy(l);
}

/* ------------------------------------------------------- state snapshots */

/* The state topic's key of p: "TOPIC/PARTITION". */
static void snap_key(const struct kpart *p, char *out, size_t n)
{
    snprintf(out, n, "%s/%d", p->topic, (int)p->part);
}

/* 1 when every message of p consumed so far is settled and committed: a
 * snapshot then covers exactly the committed prefix (one that covered
 * more would make the next owner skip records never stored). */
static int snap_ready(const struct ksrc *ks, const struct kpart *p)
{
    return p->consumed >= 0 && commit_pos(ks, p) == p->consumed + 1 && p->committed == p->consumed + 1;
}

/* Writes p's snapshot (the owner's save hook) to the state topic. */
static void snap_write(struct ksrc *ks, struct kpart *p)
{
    struct buf b;
    buf_init(&b);
    char key[320];
    snap_key(p, key, sizeof key);
    if (ks->h.save(ks->h.ctx, p->tag, p->committed, &b) == GL_OK) {
        kstate_put(ks->st, key, b.p, b.len);
        metrics_inc_label(M_STATE_SNAPSHOTS, "written");
        metrics_add(M_STATE_SNAPSHOT_BYTES, b.len);
    }
    buf_free(&b);
    p->snap_at = gl_now_ms();
    p->snap_off = p->committed;
}

/* Every snap_ms: the partitions that moved since their last snapshot, when
 * all they consumed is settled and committed. */
static void snap_tick(struct ksrc *ks)
{
    int64_t now = gl_now_ms();
    for (struct kpart *p = ks->parts; p; p = p->next)
        if (now - p->snap_at >= ks->snap_ms && p->committed != p->snap_off && snap_ready(ks, p)) snap_write(ks, p);
    kstate_poll(ks->st);
}

/* At assignment: the snapshot of each new partition, restored by the
 * owner. It covers the messages before its offset; when that is behind the
 * committed offset, the partition is read again from there (the records
 * made again carry the ids already stored: 409), so the start offset in
 * parts moves back. A snapshot ahead of the commit, or too far behind, is
 * not used: the partition starts cold at its committed offset. */
static void snap_restore(struct ksrc *ks, rd_kafka_topic_partition_list_t *parts)
{
    size_t n = (size_t)parts->cnt;
    char **keys = xcalloc(n, sizeof *keys);
    struct buf *vals = xcalloc(n, sizeof *vals);
    for (size_t i = 0; i < n; i++) {
        char key[320];
        snprintf(key, sizeof key, "%s/%d", parts->elems[i].topic, (int)parts->elems[i].partition);
        keys[i] = xstrdup(key);
        buf_init(&vals[i]);
    }
    char err[GL_ERRLEN];
    if (kstate_get(ks->st, (const char *const *)keys, n, vals, 10000, err, sizeof err) != GL_OK)
        gl_say(GL_LOG_WARN, "gpulog %s: %s: snapshots read so far are used\n", ks->name, err);
    for (size_t i = 0; i < n; i++) {
        struct kpart *p = kpart_find(ks, parts->elems[i].topic, parts->elems[i].partition);
        int64_t off = -1;
        if (!p || !vals[i].len) continue;
        if (ks->h.restore(ks->h.ctx, p->tag, vals[i].p, vals[i].len, &off) != GL_OK) {
            metrics_inc_label(M_STATE_SNAPSHOTS, "refused");
            continue;
        }
        if (p->committed < 0 || off > p->committed || p->committed - off > KSRC_REPLAY_MAX) {
            gl_say(GL_LOG_WARN, "gpulog %s: %s: its snapshot (offset %lld) does not fit the committed offset %lld: "
                            "not used, the partition starts cold\n", ks->name, keys[i], (long long)off,
                    (long long)p->committed);
            ks->h.revoked(ks->h.ctx, p->tag);
            metrics_inc_label(M_STATE_SNAPSHOTS, "unused");
            continue;
        }
        metrics_inc_label(M_STATE_SNAPSHOTS, "restored");
        parts->elems[i].offset = off;
        if (p->end >= 0 && off < p->end) p->eof = 0;
        p->snap_at = gl_now_ms();
        p->snap_off = off;
        gl_say(GL_LOG_INFO, "gpulog %s: %s: detector state restored from its snapshot (offset %lld, %zu bytes; "
                        "%lld messages read again)\n", ks->name, keys[i], (long long)off, vals[i].len,
                (long long)(p->committed - off));
    }
    for (size_t i = 0; i < n; i++) { free(keys[i]); buf_free(&vals[i]); }
    free(keys);
    free(vals);
}

/* ------------------------------------------------------------- rebalance */

/* 1 when the group runs the cooperative protocol (cooperative-sticky, our
 * default): rebalances then add and take away partitions one by one. */
static int cooperative(struct ksrc *ks)
{
    const char *proto = rd_kafka_rebalance_protocol(ks->rk);
    return proto && !strcmp(proto, "COOPERATIVE");
}

/* Says and frees the error of an incremental (un)assign. */
static void incremental_error(struct ksrc *ks, const char *what, rd_kafka_error_t *e)
{
    if (!e) return;
    gl_say(GL_LOG_ERROR, "gpulog %s: %s: %s\n", ks->name, what, rd_kafka_error_string(e));
    rd_kafka_error_destroy(e);
}

/* Partitions assigned (eager: the whole new assignment; cooperative: the
 * ones added, possibly none, while those kept go on as they were): state
 * for each, then the assignment itself, paused or not as the rest. */
static void ksrc_on_assign(struct ksrc *ks, rd_kafka_topic_partition_list_t *parts)
{
    rd_kafka_topic_partition_list_t *c = rd_kafka_topic_partition_list_copy(parts);
    if (parts->cnt) rd_kafka_committed(ks->rk, c, 10000);
    for (int i = 0; i < parts->cnt; i++) {
        struct kpart *p = kpart_new(ks, &parts->elems[i], c->elems[i].offset);
        gl_say(GL_LOG_INFO, "gpulog %s: assigned %s[%d] (committed %lld%s)\n", ks->name, p->topic, (int)p->part,
                (long long)p->committed, p->eof ? ", nothing to read" : "");
    }
    rd_kafka_topic_partition_list_destroy(c);
    if (ks->st && parts->cnt) snap_restore(ks, parts);
    if (cooperative(ks)) incremental_error(ks, "assign", rd_kafka_incremental_assign(ks->rk, parts));
    else rd_kafka_assign(ks->rk, parts);
    /* a partition paused before a revoke stays paused in librdkafka when
     * it is assigned again: set its state to ours explicitly */
    if (parts->cnt) {
        if (ks->paused) rd_kafka_pause_partitions(ks->rk, parts);
        else rd_kafka_resume_partitions(ks->rk, parts);
    }
    ks->assigned_once = 1;
    ks->unassigned = 0;
}

static int in_list(const rd_kafka_topic_partition_list_t *l, const struct kpart *p)
{
    for (int i = 0; i < l->cnt; i++)
        if (l->elems[i].partition == p->part && !strcmp(l->elems[i].topic, p->topic)) return 1;
    return 0;
}

/* Partitions revoked (eager: all of them; cooperative: only those that
 * move): settle what was produced for at most KSRC_REVOKE_DRAIN_MS, commit,
 * then forget their state (the owner's revoked hook). The revoke never
 * waits longer: a rebalance during an Elasticsearch outage must not hold
 * up the group (or outlive max.poll.interval.ms); what was not settled is
 * not committed, so the next owner reads it again and its records get the
 * same ids (409); the loop ignores the late settles of a lane taken away. */
static void ksrc_on_revoke(struct ksrc *ks, const rd_kafka_topic_partition_list_t *parts)
{
    if (ks->h.drain && ks->h.drain(ks->h.ctx, KSRC_REVOKE_DRAIN_MS) > 0)
        gl_say(GL_LOG_WARN, "gpulog %s: revoke: outputs not all settled within %d ms: their messages are read again by "
                        "the next owner\n", ks->name, KSRC_REVOKE_DRAIN_MS);
    commit_parts(ks, 1);
    struct kpart **pp = &ks->parts;
    while (*pp) {
        struct kpart *p = *pp;
        if (!in_list(parts, p)) { pp = &p->next; continue; }
        *pp = p->next;
        if (ks->st && snap_ready(ks, p)) snap_write(ks, p);   /* the next owner goes on from here */
        if (ks->h.revoked) ks->h.revoked(ks->h.ctx, p->tag);
        gl_say(GL_LOG_INFO, "gpulog %s: revoked %s[%d] (committed %lld)\n", ks->name, p->topic, (int)p->part,
                (long long)p->committed);
        if (ks->cur == p) ks->cur = NULL;
        kpart_free(p);
    }
    if (cooperative(ks)) incremental_error(ks, "unassign", rd_kafka_incremental_unassign(ks->rk, parts));
    else rd_kafka_assign(ks->rk, NULL);
    ks->unassigned = 1;          /* until the rebalance ends with an assignment (cooperative: maybe empty) */
}

/* A rebalance error: give everything up; the next assignment starts over. */
static void ksrc_on_rebalance_error(struct ksrc *ks, rd_kafka_resp_err_t err)
{
    gl_say(GL_LOG_ERROR, "gpulog %s: rebalance error: %s\n", ks->name, rd_kafka_err2str(err));
    if (cooperative(ks)) {
        rd_kafka_topic_partition_list_t *a = NULL;
        if (!rd_kafka_assignment(ks->rk, &a) && a) {
            incremental_error(ks, "unassign", rd_kafka_incremental_unassign(ks->rk, a));
            rd_kafka_topic_partition_list_destroy(a);
        }
    } else {
        rd_kafka_assign(ks->rk, NULL);
    }
    ks->unassigned = 1;
}

/* librdkafka's rebalance callback (served inside ksrc_next's fetch and at
 * ksrc_close). */
static void ksrc_rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *parts,
                              void *opaque)
{
    (void)rk;
    struct ksrc *ks = opaque;
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) ksrc_on_assign(ks, parts);
    else if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS) ksrc_on_revoke(ks, parts);
    else ksrc_on_rebalance_error(ks, err);
}

/* ----------------------------------------------------------- the client */

/* The consumer's error callback (from its poll; ks is the conf's opaque):
 * each error logged typed by kafka_log_error; a fatal one stops the
 * source, and with --once so does a refused login or certificate. */
static void ksrc_error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    (void)rk;
    struct ksrc *ks = opaque;
    kafka_log_error(err, reason);
    if (err == RD_KAFKA_RESP_ERR__FATAL) ks->fatal = 1;
    /* --once: waiting will not fix a password or a CA; nothing was committed */
    if (ks->once && !ks->fatal && kafka_error_hint(err, reason)) {
        log_error("msg=\"%s: --once: giving up: nothing was committed\"", ks->name);
        ks->fatal = 1;
    }
}

/* gpulog's consumer settings, then the user's properties (-X). */
static int ksrc_conf(rd_kafka_conf_t *conf, const struct ksrc_opts *o, char *err, size_t errlen)
{
    static const char *const fixed[][2] = {
        { "enable.auto.commit", "false" },
        { "enable.auto.offset.store", "false" },
        { "auto.offset.reset", "earliest" },
        { "enable.partition.eof", "true" },
        { "client.id", "gpulog-detect" },
        /* a rebalance moves only the partitions that change hands: the
         * others keep their detector state and open episodes */
        { "partition.assignment.strategy", "cooperative-sticky" },
        /* the pre-fetch queue, deliberately (docs/operations.md, "Kafka
         * consumer queue"): 16 MiB keeps peak RSS under 64 MB; with
         * fetch_poke a replica catching up still reads at 100,000-155,000
         * events/s (one core decodes and detects ~260,000/s); -X trades
         * memory for catch-up speed. One fetch response is at most 8 MiB
         * (compressed). */
        { "queued.max.messages.kbytes", "16384" },
        { "queued.min.messages", "100000" },
        { "fetch.max.bytes", "8388608" },
    };
    if (kafka_conf_set(conf, "bootstrap.servers", o->brokers, err, errlen) ||
        kafka_conf_set(conf, "group.id", o->group, err, errlen))
        return GL_ERROR;
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (kafka_conf_set(conf, fixed[i][0], fixed[i][1], err, errlen)) return GL_ERROR;
    for (size_t i = 0; i < o->nprops; i++) {
        const char *eq = strchr(o->props[i], '=');
        char *k = xstrndup(o->props[i], (size_t)(eq - o->props[i]));
        int bad = kafka_conf_set(conf, k, eq + 1, err, errlen);
        free(k);
        if (bad) return GL_ERROR;
    }
    return GL_OK;
}

struct ksrc *ksrc_new(const struct ksrc_opts *o, const struct ksrc_hooks *h, int *usage, char *err, size_t errlen)
{
    char e[GL_ERRLEN];
    *usage = 0;
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (ksrc_conf(conf, o, e, sizeof e) != GL_OK) {
        rd_kafka_conf_destroy(conf);
        snprintf(err, errlen, "kafka: %s", e);
        *usage = 1;
        return NULL;
    }
    struct ksrc *ks = xcalloc(1, sizeof *ks);
    ks->wake[0] = ks->wake[1] = -1;
    ks->h = *h;
    ks->name = o->name ? o->name : "detect";
    ks->once = o->once;
    rd_kafka_conf_set_rebalance_cb(conf, ksrc_rebalance_cb);
    rd_kafka_conf_set_opaque(conf, ks);
    kafka_log_setup(conf);   /* librdkafka's lines in our log, a failed login or certificate named */
    rd_kafka_conf_set_error_cb(conf, ksrc_error_cb);
    ks->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, e, sizeof e);
    if (!ks->rk) {
        snprintf(err, errlen, "kafka: %s", e);
        free(ks);
        return NULL;
    }
    rd_kafka_poll_set_consumer(ks->rk);
    ks->cq = rd_kafka_queue_get_consumer(ks->rk);
    /* the loop sleeps in poll() on wake[0] instead of waking every 50 ms to look */
    if (pipe2(ks->wake, O_NONBLOCK | O_CLOEXEC) == 0) rd_kafka_queue_io_event_enable(ks->cq, ks->wake[1], "m", 1);
    else ks->wake[0] = ks->wake[1] = -1;
    if (o->state_topic && h->save && h->restore && h->revoked) {
        ks->st = kstate_new(o->brokers, o->state_topic, o->props, o->nprops, ks->name, e, sizeof e);
        if (!ks->st) {
            snprintf(err, errlen, "%s", e);
            ksrc_free(ks);
            return NULL;
        }
        ks->snap_ms = o->snapshot_ms > 0 ? o->snapshot_ms : 60000;
    }
    return ks;
}

int ksrc_subscribe(struct ksrc *ks, const char *topics, char *err, size_t errlen)
{
    rd_kafka_topic_partition_list_t *subs = rd_kafka_topic_partition_list_new(4);
    char *tl = xstrdup(topics);
    for (char *sv = NULL, *t = strtok_r(tl, ",", &sv); t; t = strtok_r(NULL, ",", &sv))
        if (*t) rd_kafka_topic_partition_list_add(subs, t, RD_KAFKA_PARTITION_UA);
    free(tl);
    rd_kafka_resp_err_t se = rd_kafka_subscribe(ks->rk, subs);
    rd_kafka_topic_partition_list_destroy(subs);
    if (!se) return GL_OK;
    snprintf(err, errlen, "subscribe: %s", rd_kafka_err2str(se));
    return GL_ERROR;
}

/* Destroys the fetched messages not handed out and the last one handed out. */
static void drop_fetched(struct ksrc *ks)
{
    if (ks->last) rd_kafka_message_destroy(ks->last);
    ks->last = NULL;
    for (; ks->bi < ks->nb; ks->bi++) rd_kafka_message_destroy(ks->batch[ks->bi]);   /* unprocessed: not committed */
    ks->bi = ks->nb = 0;
}

void ksrc_close(struct ksrc *ks)
{
    if (!ks || ks->closed) return;
    ks->closed = 1;
    drop_fetched(ks);
    if (ks->wake[0] >= 0) {
        rd_kafka_queue_io_event_enable(ks->cq, -1, NULL, 0);
        close(ks->wake[0]);
        close(ks->wake[1]);
        ks->wake[0] = ks->wake[1] = -1;
    }
    rd_kafka_queue_destroy(ks->cq);
    rd_kafka_consumer_close(ks->rk);   /* the revoke writes the last snapshots */
    kstate_free(ks->st);
    ks->st = NULL;
    rd_kafka_destroy(ks->rk);
}

void ksrc_free(struct ksrc *ks)
{
    if (!ks) return;
    ksrc_close(ks);
    for (struct kpart *l = ks->parts; l;) { struct kpart *n = l->next; kpart_free(l); l = n; }
    free(ks);
}

/* --------------------------------------------------------------- reading */

/* librdkafka 2.0 looks at a full pre-fetch queue again only on its broker
 * thread's 1 s timer (librdkafka issue 2879), so a replica far behind read
 * its queue size per second and idled. When the queue runs low (under
 * KSRC_POKE_QLEN messages) while a partition is still KSRC_POKE_LAG
 * messages behind, a watermark query to that partition's leader (a small
 * request, about 1 ms) wakes the leader's thread, which then fetches at
 * once. Partitions take turns; at most one query per KSRC_POKE_MS; none
 * while the replica keeps up. */
static void fetch_poke(struct ksrc *ks)
{
    int64_t now = gl_now_ms();
    if (now - ks->poke_last < KSRC_POKE_MS) return;
    unsigned n = 0;
    for (struct kpart *p = ks->parts; p; p = p->next) n++;
    for (unsigned k = 0; k < n; k++) {
        unsigned want = (ks->poke_turn + k) % n, i = 0;
        struct kpart *p = ks->parts;
        while (i++ < want) p = p->next;
        int64_t lo, hi;
        /* eof only ends a partition for --once, which reads up to end */
        if ((ks->once && p->eof) || rd_kafka_get_watermark_offsets(ks->rk, p->topic, p->part, &lo, &hi) || hi < 0)
            continue;
        if (p->end >= 0 && hi > p->end) hi = p->end;
        int64_t pos = p->consumed >= 0 ? p->consumed + 1 : p->committed >= 0 ? p->committed : lo;
        if (hi - pos < KSRC_POKE_LAG) continue;
        ks->poke_last = now;
        ks->poke_turn = want + 1;
        rd_kafka_query_watermark_offsets(ks->rk, p->topic, p->part, &lo, &hi, 100);
        return;
    }
}

/* Fetches into the batch buffer: a batch at a time (one queue call for up
 * to KSRC_BATCH messages: a call per message was the cost), or, paused,
 * one message (the group must still be polled; librdkafka 2.0's batch call
 * can skip offsets when a pause or resume lands inside it). Messages of a
 * partition revoked during the call are purged by librdkafka (its barrier
 * on assign). Returns the number fetched. */
static size_t fetch(struct ksrc *ks, int timeout_ms)
{
    ks->bi = ks->nb = 0;
    if (ks->paused) {
        ks->batched = 0;
        rd_kafka_message_t *m = rd_kafka_consumer_poll(ks->rk, timeout_ms);
        if (m) ks->batch[ks->nb++] = m;
        return ks->nb;
    }
    if (ks->batched && rd_kafka_queue_length(ks->cq) < KSRC_POKE_QLEN) fetch_poke(ks);
    ks->batched = 1;
    ssize_t n = rd_kafka_consume_batch_queue(ks->cq, timeout_ms, ks->batch, KSRC_BATCH);
    if (n < 0) {
        gl_say(GL_LOG_ERROR, "gpulog %s: consume: %s\n", ks->name, rd_kafka_err2str(rd_kafka_last_error()));
        n = 0;
    }
    ks->nb = (size_t)n;
    return ks->nb;
}

/* The partition of a data message; NULL for a partition end (noted), an
 * error (said; a fatal one stops the source) or a partition no longer ours. */
static struct kpart *take(struct ksrc *ks, const rd_kafka_message_t *m)
{
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        struct kpart *p = kpart_find(ks, rd_kafka_topic_name(m->rkt), m->partition);
        if (p) p->eof = 1;
        return NULL;
    }
    if (m->err) {
        kafka_log_error(m->err, rd_kafka_message_errstr(m));
        if (m->err == RD_KAFKA_RESP_ERR__FATAL) ks->fatal = 1;
        return NULL;
    }
    return kpart_find(ks, rd_kafka_topic_name(m->rkt), m->partition);
}

int ksrc_next(struct ksrc *ks, struct krec *r, int timeout_ms)
{
    ksrc_done(ks);
    if (ks->last) rd_kafka_message_destroy(ks->last);
    ks->last = NULL;
    /* at most one fetch per call, none while a batch is being handed out:
     * the caller's checks (backpressure, commits) run between fetches */
    int fetched = ks->bi < ks->nb;
    while (!ks->fatal) {
        if (ks->bi == ks->nb) {
            if (fetched || !fetch(ks, timeout_ms)) return GL_AGAIN;
            fetched = 1;
        }
        rd_kafka_message_t *m = ks->batch[ks->bi++];
        struct kpart *p = take(ks, m);
        if (!p) {
            rd_kafka_message_destroy(m);
            continue;
        }
        ks->last = m;
        ks->cur = p;
        ks->cur_off = m->offset;
        *r = (struct krec){ .payload = m->payload, .len = m->len, .topic = p->topic,
                            .partition = p->part, .offset = m->offset, .tag = p->tag };
        return GL_OK;
    }
    return GL_AGAIN;
}


int ksrc_pollfd(const struct ksrc *ks)
{
    return ks->closed ? -1 : ks->wake[0];
}

void ksrc_wake_drain(struct ksrc *ks)
{
    char b[64];
    if (ks->wake[0] >= 0)
        while (read(ks->wake[0], b, sizeof b) > 0) {}
}

void ksrc_poll_group(struct ksrc *ks)
{
    if (ks->fatal) return;
    if (ks->bi == ks->nb) { fetch(ks, 0); return; }   /* paused: one message at most, kept for ksrc_next */
    memmove(ks->batch, ks->batch + ks->bi, (ks->nb - ks->bi) * sizeof *ks->batch);   /* the rest of a batch */
    ks->nb -= ks->bi;
    ks->bi = 0;
    rd_kafka_message_t *m = ks->nb < KSRC_BATCH ? rd_kafka_consumer_poll(ks->rk, 0) : NULL;
    if (m) ks->batch[ks->nb++] = m;                   /* behind it, in order */
}

void ksrc_done(struct ksrc *ks)
{
    struct kpart *p = ks->cur;
    if (!p) return;
    ks->cur = NULL;
    p->consumed = ks->cur_off;
    if (p->end >= 0 && ks->cur_off + 1 >= p->end) p->eof = 1;
}

/* ------------------------------------------------------------ committing */

void ksrc_commit(struct ksrc *ks, int sync)
{
    commit_parts(ks, sync);
    if (ks->st) snap_tick(ks);
}

int ksrc_pause(struct ksrc *ks, int pause)
{
    if (pause == ks->paused) return 0;
    rd_kafka_topic_partition_list_t *a = NULL;
    if (rd_kafka_assignment(ks->rk, &a) == RD_KAFKA_RESP_ERR_NO_ERROR && a) {
        if (a->cnt) {
            if (pause) rd_kafka_pause_partitions(ks->rk, a);
            else rd_kafka_resume_partitions(ks->rk, a);
        }
        rd_kafka_topic_partition_list_destroy(a);
    }
    ks->paused = pause;
    return 1;
}

int64_t ksrc_lag(struct ksrc *ks)
{
    int64_t lag = 0;
    for (struct kpart *p = ks->parts; p; p = p->next) {
        int64_t lo = -1, hi = -1;
        if (rd_kafka_get_watermark_offsets(ks->rk, p->topic, p->part, &lo, &hi) || hi < 0) continue;
        int64_t pos = p->committed >= 0 ? p->committed : lo >= 0 ? lo : 0;
        if (hi > pos) lag += hi - pos;
    }
    return lag;
}

int ksrc_assigned(const struct ksrc *ks) { return ks->assigned_once; }
int ksrc_failed(const struct ksrc *ks) { return ks->fatal; }

int ksrc_once_done(const struct ksrc *ks)
{
    /* after a revoke (an eviction, another member joining) the partitions
     * come back or go elsewhere with the next assignment: wait for it, or
     * --once would stop with their messages unread */
    if (!ks->assigned_once || ks->unassigned) return 0;
    for (struct kpart *p = ks->parts; p; p = p->next)
        if (!p->eof && !(p->end >= 0 && p->consumed + 1 >= p->end)) return 0;
    return 1;
}

void ksrc_report(const struct ksrc *ks, FILE *f)
{
    for (struct kpart *p = ks->parts; p; p = p->next)
        fprintf(f, "gpulog %s: %s[%d] committed %lld\n", ks->name, p->topic, (int)p->part, (long long)p->committed);
}
