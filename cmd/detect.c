/* detect.c - `gpulog detect`: the stream processor. A member of a Kafka
 * consumer group that runs the detectors over the events of its partitions
 * and writes anomaly records to a file, stdout or an anomalies topic.
 *
 * Offsets: enable.auto.commit=false; a partition's committed offset only
 * moves past a message once every record produced while processing it was
 * settled by every sink (highest contiguous settled offset per partition).
 * Rebalance: on revocation the outputs are drained, the revoked partitions'
 * offsets committed and their detector state dropped; newly assigned
 * partitions start with empty state (windows warm up again).
 */
#include "cli.h"
#include "../sinks/sink.h"
#include "../sinks/es_cli.h"
#include "../detect/engine.h"
#include "../core/config.h"
#include "../core/metrics.h"
#include "../core/gpumetrics.h"

#include <errno.h>
#include <getopt.h>
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DETECT_BATCH 1024   /* messages per rd_kafka_consume_batch_queue call */
#define DETECT_POKE_LAG 20000   /* messages behind that make a low queue wake the fetcher */
#define DETECT_POKE_MS 5        /* at most one wake-up query per this many ms */
#define DETECT_POKE_QLEN 8192   /* messages left in the queue below which the fetcher is woken */

static void detect_help(void)
{
    printf(
        "usage: gpulog detect [--config FILE] [--brokers LIST] [--group G] [--topics gpu.metrics,gpu.events]\n"
        "                     [--detectors FILE] [--profile gpu|generic]\n"
        "                     [--output FILE | --anomalies-topic T] [-X key=value]... [--once]\n"
        "                     [--metrics-addr HOST:PORT] [--shutdown-timeout S]\n"
        "\n"
        "Consumes schema-v1 events from Kafka as a member of consumer group G, runs\n"
        "the anomaly detectors and writes anomaly records (NDJSON to FILE or stdout,\n"
        "or to topic T). Offsets are committed only after the records produced from\n"
        "the messages up to them were written and acknowledged.\n"
        "\n"
        "options:\n"
        "      --config FILE         gpulog configuration (YAML, docs/configuration.md;\n"
        "                            default $GPULOG_CONFIG); flags override it\n"
        "  -b, --brokers LIST        bootstrap servers (kafka.brokers, else $KAFKA_BROKERS)\n"
        "  -g, --group G             consumer group id (kafka.group, default gpulog-detect)\n"
        "  -t, --topics LIST         topics to consume (default: kafka.topics.metrics and\n"
        "                            kafka.topics.events, gpu.metrics,gpu.events)\n"
        "  -d, --detectors FILE      detector configuration, JSON or YAML (detect.config);\n"
        "                            -p NAME: built-in gpu|generic (detect.profile)\n"
        "  -o, --output FILE         NDJSON records to FILE ('-' = stdout, the default)\n"
        "  -a, --anomalies-topic T   produce records to topic T (e.g. gpu.anomalies)\n"
        "  -X key=value              librdkafka property for the consumer and producer\n"
        "                            (kafka.properties)\n"
        "      --once                consume up to the end offsets found at start, settle,\n"
        "                            commit and exit 0 (backfills, tests)\n"
        "      --metrics-addr HOST:PORT  serve /metrics, /healthz and /readyz\n"
        "      --shutdown-timeout S  after SIGTERM/SIGINT, time to settle outputs and\n"
        "                            commit (default 10 s, key shutdown_timeout)\n"
        "With --es, anomaly records go to logs-gpu.anomaly-NS, the consumed Xid/SXid\n"
        "events to logs-gpu.xid-NS and, with --index-metrics, metric events to\n"
        "metrics-gpu.dmon-NS; offsets wait for those documents too.\n"
        ES_CLI_HELP
        "\n"
        "State is per GPU and belongs to the partition its events arrive on: on a\n"
        "rebalance the state of revoked partitions is dropped and new partitions warm\n"
        "up (windows refill, peers and missing-data compare GPUs of one partition).\n"
        "Signals: SIGTERM/SIGINT stop consuming, settle the outputs, commit and exit\n"
        "within shutdown_timeout; SIGHUP reloads the detector configuration (rules\n"
        "that did not change keep their state and open anomalies; changed or removed\n"
        "rules end their open anomalies with an \"end\" record and start over).\n"
        "Exit status: 0 on a clean stop (SIGINT/SIGTERM with every record settled, or\n"
        "--once done), 1 on a Kafka or output error or records unsettled at the\n"
        "deadline, 2 on a usage error.\n");
}

struct pend { int64_t off; uint32_t n; };

struct pstate {
    char *topic;
    int32_t part;
    int tag;
    int64_t consumed;        /* last processed offset, -1 none */
    int64_t committed;       /* last committed position, -1 none */
    int64_t end;             /* --once: high watermark at assignment */
    int eof, revoked;
    struct pend *pend;       /* offsets with unsettled records, ascending */
    size_t npend, cappend;
    struct pstate *next;
};

struct tok { struct pstate *ps; int64_t off; };

struct dctx {
    rd_kafka_t *rk;
    struct engine *eng;
    struct sink *sinks[4];
    size_t nsinks;
    struct sink *es;                     /* also among sinks: gets the consumed events */
    int es_metrics;
    struct pstate *parts, *zombies;
    struct pstate *cur;
    int64_t cur_off;
    int next_tag;
    int once, assigned_once;
    int unassigned;                      /* revoked, the next assignment not yet here */
    struct buf json, key;
    uint64_t fields_dropped;      /* event_json_dropped() last seen */
    uint64_t consumed, bad, records, settled, deadletter;
    int fatal;
    /* backpressure: documents an output could not take yet; while any are
     * held the assigned partitions are paused and the consumer is still
     * polled, so the group does not evict us (max.poll.interval.ms) */
    struct sink_hold held;
    int paused;
    int64_t paused_since, pause_logged;  /* pause_logged: rate limit of the log lines */
    uint64_t pauses;
};

static volatile sig_atomic_t stop_flag, hup_flag;
static void on_signal(int sig)
{
    if (sig == SIGHUP) hup_flag = 1;
    else stop_flag = 1;
}

static int64_t commit_pos(const struct pstate *ps)
{
    if (ps->npend) return ps->pend[0].off;
    return ps->consumed >= 0 ? ps->consumed + 1 : -1;
}

static void pend_add(struct pstate *ps, int64_t off)
{
    if (ps->npend && ps->pend[ps->npend - 1].off == off) { ps->pend[ps->npend - 1].n++; return; }
    if (ps->npend == ps->cappend) {
        ps->cappend = ps->cappend ? ps->cappend * 2 : 16;
        ps->pend = xrealloc(ps->pend, ps->cappend * sizeof *ps->pend);
    }
    ps->pend[ps->npend].off = off;
    ps->pend[ps->npend].n = 1;
    ps->npend++;
}

static void detect_settle(void *ctx, void *token, enum sink_outcome outcome)
{
    struct dctx *d = ctx;
    d->settled++;
    if (outcome == SINK_DEADLETTER) { d->deadletter++; metrics_inc(M_DEADLETTERS); }
    else metrics_inc(M_EVENTS_PRODUCED);
    struct tok *t = token;
    if (!t) return;
    struct pstate *ps = t->ps;
    for (size_t i = 0; i < ps->npend; i++)
        if (ps->pend[i].off == t->off) {
            if (--ps->pend[i].n == 0) {
                memmove(&ps->pend[i], &ps->pend[i + 1], (ps->npend - i - 1) * sizeof *ps->pend);
                ps->npend--;
            }
            break;
        }
    free(t);
}

struct detect_opts {
    const char *brokers, *output, *anomalies_topic;
    const char **props;
    size_t nprops;
    struct es_cli es;                    /* --es URL and its options */
};

/* Builds the outputs of `detect` from its options: an anomalies topic, or
 * NDJSON to a file or stdout. (The Elasticsearch sink joins here.) Returns
 * the number of sinks or -1 with a reason in err. */
static int detect_build_sinks(const struct detect_opts *o, struct dctx *d, char *err, size_t errlen)
{
    d->nsinks = 0;
    if (o->anomalies_topic) {
        struct kafka_conf kc = { .brokers = o->brokers, .props = o->props, .nprops = o->nprops };
        kc.topic[STREAM_ANOMALIES] = o->anomalies_topic;
        struct sink *s = sink_kafka_new(&kc, detect_settle, d, err, errlen);
        if (!s) return -1;
        d->sinks[d->nsinks++] = s;
    }
    if (o->output || (!o->anomalies_topic && !o->es.conf.url)) {
        struct sink *s = sink_file_new(o->output, detect_settle, d, err, errlen);
        if (!s) return -1;
        d->sinks[d->nsinks++] = s;
    }
    if (o->es.conf.url) {
        struct sink *s = sink_es_new(&o->es.conf, detect_settle, d, err, errlen);
        if (!s) return -1;
        d->sinks[d->nsinks++] = s;
        d->es = s;
        d->es_metrics = o->es.conf.index_metrics;
    }
    return (int)d->nsinks;
}

static void detect_settle(void *ctx, void *token, enum sink_outcome outcome);

/* Offers the held documents to their outputs, in order, until one is full. */
static void held_flush(struct dctx *d)
{
    struct sink *failed;
    void *token;
    sink_hold_flush(&d->held, &failed, &token);
    if (failed) {
        fprintf(stderr, "gpulog detect: output: %s\n", failed->errstr);
        d->fatal = 1;
        if (token) detect_settle(d, token, SINK_DEADLETTER);
    }
}

/* Pauses (or resumes) every assigned partition. Paused partitions deliver
 * nothing, and resume where the application stopped; partitions assigned
 * later take the state in the rebalance callback. */
static void set_paused(struct dctx *d, int pause)
{
    if (pause == d->paused) return;
    rd_kafka_topic_partition_list_t *a = NULL;
    if (rd_kafka_assignment(d->rk, &a) == RD_KAFKA_RESP_ERR_NO_ERROR && a) {
        if (a->cnt) {
            if (pause) rd_kafka_pause_partitions(d->rk, a);
            else rd_kafka_resume_partitions(d->rk, a);
        }
        rd_kafka_topic_partition_list_destroy(a);
    }
    int64_t now = gl_now_ms();
    d->paused = pause;
    if (pause) {
        d->paused_since = now;
        d->pauses++;
    }
    /* at most one pair of lines per 10 s: a slow cluster pauses often */
    if (now - d->pause_logged < 10000 && (pause || now - d->paused_since < 10000)) return;
    if (pause) {
        d->pause_logged = now;
        log_warn("msg=\"outputs full for over 1 s: partitions paused, still polling the group\" held=%zu pauses=%" PRIu64,
                 d->held.n, d->pauses);
    } else {
        log_info("msg=\"outputs took the held records: partitions resumed\" paused_ms=%" PRId64, now - d->paused_since);
    }
}

/* Hands a consumed event to the ES sink (Xid/SXid events, and metric events
 * with --index-metrics); its offset waits for the document's settle. */
static void detect_forward(struct dctx *d, struct pstate *ps, int64_t off, const struct event *ev,
                           const void *payload, size_t len)
{
    enum sink_stream st = sink_stream_of(ev->dataset);
    if (st == STREAM_ANOMALIES || (st == STREAM_METRICS && !d->es_metrics)) return;
    struct tok *t = xmalloc(sizeof *t);
    t->ps = ps;
    t->off = off;
    pend_add(ps, off);
    struct sink_doc doc = { .stream = st, .id = ev->id, .json = payload, .len = len, .token = t };
    if (sink_hold_write(&d->held, d->es, &doc) == GL_ERROR) {   /* held when full */
        fprintf(stderr, "gpulog detect: es: %s\n", d->es->errstr);
        d->fatal = 1;
        detect_settle(d, t, SINK_DEADLETTER);
    }
}

static void detect_emit(void *ctx, const struct event *rec)
{
    struct dctx *d = ctx;
    d->records++;
    gpumetrics_record(rec);
    struct sink_doc doc;
    sink_doc_of(&doc, rec, STREAM_ANOMALIES, NULL, NULL, &d->json, &d->key);
    for (size_t i = 0; i < d->nsinks; i++) {
        struct tok *t = NULL;
        if (d->cur) {
            t = xmalloc(sizeof *t);
            t->ps = d->cur;
            t->off = d->cur_off;
            pend_add(d->cur, d->cur_off);
        }
        doc.token = t;
        if (sink_hold_write(&d->held, d->sinks[i], &doc) == GL_ERROR) {
            fprintf(stderr, "gpulog detect: output: %s\n", d->sinks[i]->errstr);
            d->fatal = 1;
            if (t) detect_settle(d, t, SINK_DEADLETTER);
        }
    }
}

static struct pstate *ps_find(struct dctx *d, const char *topic, int32_t part)
{
    for (struct pstate *p = d->parts; p; p = p->next)
        if (p->part == part && !strcmp(p->topic, topic)) return p;
    return NULL;
}

static void poll_sinks(struct dctx *d, int timeout_ms)
{
    for (size_t i = 0; i < d->nsinks; i++) sink_poll(d->sinks[i], timeout_ms);
}

static long drain_sinks(struct dctx *d, int timeout_ms)
{
    long left = 0;
    for (size_t i = 0; i < d->nsinks; i++) left += sink_drain(d->sinks[i], timeout_ms);
    return left;
}

/* Commits the settled positions of the partitions that moved (only = one
 * partition, or all when NULL). */
static void commit_positions(struct dctx *d, struct pstate *only, int sync)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(8);
    for (struct pstate *p = only ? only : d->parts; p; p = only ? NULL : p->next) {
        int64_t pos = commit_pos(p);
        if (pos >= 0 && pos > p->committed) {
            rd_kafka_topic_partition_list_add(l, p->topic, p->part)->offset = pos;
            p->committed = pos;
        }
    }
    if (l->cnt) {
        rd_kafka_resp_err_t err = rd_kafka_commit(d->rk, l, !sync);
        if (err && err != RD_KAFKA_RESP_ERR__NO_OFFSET)
            fprintf(stderr, "gpulog detect: commit: %s\n", rd_kafka_err2str(err));
    }
    rd_kafka_topic_partition_list_destroy(l);
}

static void ps_free(struct pstate *p)
{
    free(p->topic);
    free(p->pend);
    free(p);
}

static void rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *parts, void *opaque)
{
    struct dctx *d = opaque;
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        rd_kafka_topic_partition_list_t *c = rd_kafka_topic_partition_list_copy(parts);
        rd_kafka_committed(rk, c, 10000);
        for (int i = 0; i < parts->cnt; i++) {
            rd_kafka_topic_partition_t *tp = &parts->elems[i];
            struct pstate *p = xcalloc(1, sizeof *p);
            p->topic = xstrdup(tp->topic);
            p->part = tp->partition;
            p->tag = ++d->next_tag;
            p->consumed = -1;
            p->committed = c->elems[i].offset >= 0 ? c->elems[i].offset : -1;
            p->end = -1;
            int64_t lo = 0, hi = 0;
            if (d->once && rd_kafka_query_watermark_offsets(rk, tp->topic, tp->partition, &lo, &hi, 10000) == 0) {
                p->end = hi;
                int64_t start = p->committed >= 0 ? p->committed : lo;
                if (start >= hi) p->eof = 1;
            }
            p->next = d->parts;
            d->parts = p;
            fprintf(stderr, "gpulog detect: assigned %s[%d] (committed %lld%s)\n", p->topic, (int)p->part,
                    (long long)p->committed, p->eof ? ", nothing to read" : "");
        }
        rd_kafka_topic_partition_list_destroy(c);
        rd_kafka_assign(rk, parts);
        /* a partition paused before a revoke stays paused in librdkafka when
         * it is assigned again: set its state to ours explicitly */
        if (d->paused) rd_kafka_pause_partitions(rk, parts);
        else rd_kafka_resume_partitions(rk, parts);
        d->assigned_once = 1;
        d->unassigned = 0;
    } else if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS) {
        /* settle what was produced, commit, then forget the state */
        if (drain_sinks(d, 30000) > 0) fprintf(stderr, "gpulog detect: revoke: outputs not all settled\n");
        commit_positions(d, NULL, 1);
        struct pstate **pp = &d->parts;
        while (*pp) {
            struct pstate *p = *pp;
            int hit = 0;
            for (int i = 0; i < parts->cnt; i++)
                if (parts->elems[i].partition == p->part && !strcmp(parts->elems[i].topic, p->topic)) hit = 1;
            if (!hit) { pp = &p->next; continue; }
            *pp = p->next;
            engine_drop_tag(d->eng, p->tag);
            fprintf(stderr, "gpulog detect: revoked %s[%d] (committed %lld)\n", p->topic, (int)p->part,
                    (long long)p->committed);
            if (d->cur == p) d->cur = NULL;
            if (p->npend) { p->next = d->zombies; d->zombies = p; }   /* tokens still point here */
            else ps_free(p);
        }
        rd_kafka_assign(rk, NULL);
        d->unassigned = 1;
    } else {
        fprintf(stderr, "gpulog detect: rebalance error: %s\n", rd_kafka_err2str(err));
        rd_kafka_assign(rk, NULL);
        d->unassigned = 1;
    }
}

static int once_done(struct dctx *d)
{
    /* after a revoke (an eviction, another member joining) the partitions
     * come back or go elsewhere with the next assignment: wait for it, or
     * --once would stop with their messages unread */
    if (!d->assigned_once || d->unassigned) return 0;
    for (struct pstate *p = d->parts; p; p = p->next)
        if (!p->eof && !(p->end >= 0 && p->consumed + 1 >= p->end)) return 0;
    return 1;
}

/* Handles one consumed message: partition end, error, or an event for the
 * engine (and the ES sink); an undecodable payload is counted and skipped. */
static void detect_message(struct dctx *d, struct event *ev, const rd_kafka_message_t *m)
{
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        struct pstate *p = ps_find(d, rd_kafka_topic_name(m->rkt), m->partition);
        if (p) p->eof = 1;
    } else if (m->err) {
        fprintf(stderr, "gpulog detect: consume: %s\n", rd_kafka_message_errstr(m));
        if (m->err == RD_KAFKA_RESP_ERR__FATAL) d->fatal = 1;
    } else {
        struct pstate *p = ps_find(d, rd_kafka_topic_name(m->rkt), m->partition);
        if (p) {
            d->consumed++;
            metrics_inc(M_LINES_READ);
            char jerr[128];
            if (event_from_json(ev, m->payload, m->len, jerr, sizeof jerr) == GL_OK) {
                uint64_t dropped = event_json_dropped();
                if (dropped != d->fields_dropped) {   /* the key table is full: say so once */
                    metrics_add(M_FIELDS_DROPPED, dropped - d->fields_dropped);
                    if (!d->fields_dropped)
                        log_warn("msg=\"more than %d distinct field keys: fields with new keys are dropped\" topic=\"%s\" partition=%d offset=%lld",
                                 EVENT_INTERN_MAX, rd_kafka_topic_name(m->rkt), (int)m->partition, (long long)m->offset);
                    d->fields_dropped = dropped;
                }
                d->cur = p;
                d->cur_off = m->offset;
                engine_feed_tag(d->eng, ev, p->tag);
                gpumetrics_observe(ev);
                d->cur = NULL;
                if (d->es) detect_forward(d, p, m->offset, ev, m->payload, m->len);
            } else {
                metrics_inc_label(M_LINES_REJECTED, "not_json");
                if (d->bad++ < 10)
                    fprintf(stderr, "gpulog detect: %s[%d]@%lld: %s (skipped)\n", rd_kafka_topic_name(m->rkt),
                            (int)m->partition, (long long)m->offset, jerr);
            }
            p->consumed = m->offset;
            if (p->end >= 0 && m->offset + 1 >= p->end) p->eof = 1;
        }
    }
}

/* librdkafka 2.0 looks at a full pre-fetch queue again only on its broker
 * thread's 1 s timer (librdkafka issue 2879), so a replica far behind read
 * its queue size per second and idled. When the queue runs low (under
 * DETECT_POKE_QLEN messages) while a partition is still DETECT_POKE_LAG
 * messages behind, a watermark query to that partition's leader (a small
 * request, about 1 ms) wakes the leader's thread, which then fetches at
 * once. Partitions take turns; at most one query per DETECT_POKE_MS; none
 * while the replica keeps up. */
static void fetch_poke(struct dctx *d)
{
    static int64_t last;
    static unsigned turn;
    int64_t now = gl_now_ms();
    if (now - last < DETECT_POKE_MS) return;
    unsigned n = 0;
    for (struct pstate *p = d->parts; p; p = p->next) n++;
    for (unsigned k = 0; k < n; k++) {
        unsigned want = (turn + k) % n, i = 0;
        struct pstate *p = d->parts;
        while (i++ < want) p = p->next;
        int64_t lo, hi;
        /* eof only ends a partition for --once, which reads up to end */
        if ((d->once && p->eof) || rd_kafka_get_watermark_offsets(d->rk, p->topic, p->part, &lo, &hi) || hi < 0)
            continue;
        if (p->end >= 0 && hi > p->end) hi = p->end;
        int64_t pos = p->consumed >= 0 ? p->consumed + 1 : p->committed >= 0 ? p->committed : lo;
        if (hi - pos < DETECT_POKE_LAG) continue;
        last = now;
        turn = want + 1;
        rd_kafka_query_watermark_offsets(d->rk, p->topic, p->part, &lo, &hi, 100);
        return;
    }
}

static int set_conf(rd_kafka_conf_t *c, const char *k, const char *v, char *err, size_t errlen)
{
    return kafka_conf_set(c, k, v, err, errlen);   /* never prints the value */
}

/* SIGHUP: loads the detector configuration again; unchanged rules keep
 * their state (engine_reload). A bad file is refused and the running
 * configuration stays. */
static void detect_reload(struct dctx *d, struct profile **prof, const char *path, const char *builtin)
{
    char err[GL_ERRLEN];
    struct profile *np = profile_load(path, builtin, err, sizeof err);
    if (!np) {
        log_error("msg=\"reload refused: the running detector configuration stays\" file=\"%s\" error=\"%s\"",
                  path ? path : "", err);
        metrics_inc_label(M_CONFIG_RELOADS, "error");
        return;
    }
    size_t changed = 0, kept = engine_reload(d->eng, np, &changed);
    profile_free(*prof);
    *prof = np;
    log_info("msg=reload file=\"%s\" rules=%zu kept=%zu changed=%zu", path ? path : "", np->nrules, kept, changed);
    metrics_inc_label(M_CONFIG_RELOADS, "ok");
}

/* Consumer lag: end offset (cached by the fetcher) minus the committed
 * position, summed over the assigned partitions. */
static void update_lag(struct dctx *d)
{
    int64_t lag = 0;
    for (struct pstate *p = d->parts; p; p = p->next) {
        int64_t lo = -1, hi = -1;
        if (rd_kafka_get_watermark_offsets(d->rk, p->topic, p->part, &lo, &hi) || hi < 0) continue;
        int64_t pos = p->committed >= 0 ? p->committed : lo >= 0 ? lo : 0;
        if (hi > pos) lag += hi - pos;
    }
    metrics_set(M_CONSUMER_LAG, lag);
}

/* Seeds the ES options from the configuration (elasticsearch.*); the --es
 * flags parsed afterwards override them. */

int cmd_detect(int argc, char **argv)
{
    enum { O_CONFIG = 0x100, O_METRICS, O_SHUTDOWN };
    static const struct option opts[] = {
        { "config", required_argument, NULL, O_CONFIG },
        { "brokers", required_argument, NULL, 'b' },
        { "group", required_argument, NULL, 'g' },
        { "topics", required_argument, NULL, 't' },
        { "detectors", required_argument, NULL, 'd' },
        { "profile", required_argument, NULL, 'p' },
        { "output", required_argument, NULL, 'o' },
        { "anomalies-topic", required_argument, NULL, 'a' },
        { "once", no_argument, NULL, '1' },
        { "metrics-addr", required_argument, NULL, O_METRICS },
        { "shutdown-timeout", required_argument, NULL, O_SHUTDOWN },
        { "help", no_argument, NULL, 'h' },
        ES_CLI_LONGOPTS,
        { NULL, 0, NULL, 0 },
    };
    if (cli_wants_help(argc, argv)) { detect_help(); return EXIT_OK; }
    char err[GL_ERRLEN * 4];
    struct gpulog_config cfg;
    if (config_init_command(&cfg, "detect", argc, argv) != GL_OK) return EXIT_USAGE;
    struct detect_opts o = { 0 };
    es_cli_init(&o.es);
    const char *topics = NULL;
    int once = 0, c, rc = EXIT_OK;
    const char **props = NULL;
    struct profile *prof = NULL;
    char *tl_default = NULL;
    struct dctx d;
    memset(&d, 0, sizeof d);
    buf_init(&d.json);
    buf_init(&d.key);
    if (es_cli_from_config(&o.es, &cfg, err, sizeof err) != GL_OK) {
        rc = cli_usage_error("detect", "%s", err);
        goto out;
    }
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":b:g:t:d:p:o:a:X:h", opts, NULL)) != -1) {
        const char *key = NULL;
        switch (c) {
        case O_CONFIG: break;   /* read above */
        case 'b': key = "kafka.brokers"; break;
        case 'g': key = "kafka.group"; break;
        case 't': topics = optarg; break;
        case 'd': key = "detect.config"; break;
        case 'p': key = "detect.profile"; break;
        case 'o': o.output = optarg; break;
        case 'a': key = "kafka.topics.anomalies"; o.anomalies_topic = optarg; break;
        case '1': once = 1; break;
        case O_METRICS: key = "metrics_addr"; break;
        case O_SHUTDOWN: key = "shutdown_timeout"; break;
        case 'X':
            if (!strchr(optarg, '=')) { rc = cli_usage_error("detect", "-X wants key=value, got '%s'", optarg); goto out; }
            key = "kafka.properties";
            break;
        case ':': rc = cli_usage_error("detect", "option %s needs a value", argv[optind - 1]); goto out;
        default: {
            int er = es_cli_opt(&o.es, c, optarg, err, sizeof err);
            if (er > 0) break;
            if (er < 0) rc = cli_usage_error("detect", "%s", err);
            else rc = cli_usage_error("detect", "unknown option %s", argv[optind - 1]);
            goto out;
        }
        }
        if (key && config_set(&cfg, key, optarg, err, sizeof err) != GL_OK) {
            rc = cli_usage_error("detect", "%s", err);
            goto out;
        }
    }
    if (es_cli_finish(&o.es, err, sizeof err) != GL_OK) { rc = cli_usage_error("detect", "%s", err); goto out; }
    if (!o.es.conf.password && *cfg.es.password && o.es.conf.user) o.es.conf.password = cfg.es.password;
    if (!o.es.conf.api_key && *cfg.es.api_key) o.es.conf.api_key = cfg.es.api_key;
    if (optind < argc) { rc = cli_usage_error("detect", "unexpected argument '%s'", argv[optind]); goto out; }
    if (config_apply_process(&cfg, err, sizeof err) != GL_OK) { rc = cli_usage_error("detect", "%s", err); goto out; }
    o.brokers = *cfg.kafka.brokers ? cfg.kafka.brokers : getenv("KAFKA_BROKERS");
    if (!o.brokers || !*o.brokers) { rc = cli_usage_error("detect", "--brokers is required (or kafka.brokers, KAFKA_BROKERS)"); goto out; }
    const char *group = cfg.kafka.group;
    if (!*group) { rc = cli_usage_error("detect", "--group is required (kafka.group)"); goto out; }
    if (o.anomalies_topic) o.anomalies_topic = cfg.kafka.topic_anomalies;
    if (!topics) {
        struct buf tb;
        buf_init(&tb);
        buf_printf(&tb, "%s,%s", cfg.kafka.topic_metrics, cfg.kafka.topic_events);
        tl_default = xstrdup(tb.p);
        buf_free(&tb);
        topics = tl_default;
    }
    props = xcalloc(cfg.kafka.properties.n + 1, sizeof *props);
    for (size_t i = 0; i < cfg.kafka.properties.n; i++) props[i] = cfg.kafka.properties.kv[i];
    o.props = props;
    o.nprops = cfg.kafka.properties.n;
    const char *detectors = *cfg.detect.config ? cfg.detect.config : NULL;
    prof = profile_load(detectors, cfg.detect.profile, err, sizeof err);
    if (!prof) { rc = cli_usage_error("detect", "%s", err); goto out; }
    if (gpumetrics_setup(&cfg, 0, err, sizeof err) != GL_OK || metrics_serve(cfg.metrics_addr, err, sizeof err) != GL_OK) {
        fprintf(stderr, "gpulog detect: metrics: %s\n", err);
        rc = EXIT_IOERR;
        goto out;
    }

    d.once = once;
    if (detect_build_sinks(&o, &d, err, sizeof err) < 0) {
        rc = cli_usage_error("detect", "%s", err);
        goto out;
    }
    d.eng = engine_new(prof, detect_emit, &d);

    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    int bad = set_conf(conf, "bootstrap.servers", o.brokers, err, sizeof err) ||
              set_conf(conf, "group.id", group, err, sizeof err) ||
              set_conf(conf, "enable.auto.commit", "false", err, sizeof err) ||
              set_conf(conf, "enable.auto.offset.store", "false", err, sizeof err) ||
              set_conf(conf, "auto.offset.reset", "earliest", err, sizeof err) ||
              set_conf(conf, "enable.partition.eof", "true", err, sizeof err) ||
              set_conf(conf, "client.id", "gpulog-detect", err, sizeof err) ||
              /* the pre-fetch queue, deliberately (docs/operations.md,
               * "Kafka consumer queue"): 16 MiB keeps peak RSS under 64 MB;
               * with fetch_poke a replica catching up still reads at
               * 100,000-155,000 events/s (one core decodes and detects
               * ~260,000/s); -X trades memory for catch-up speed. One fetch
               * response is at most 8 MiB (compressed). */
              set_conf(conf, "queued.max.messages.kbytes", "16384", err, sizeof err) ||
              set_conf(conf, "queued.min.messages", "100000", err, sizeof err) ||
              set_conf(conf, "fetch.max.bytes", "8388608", err, sizeof err);
    for (size_t i = 0; !bad && i < o.nprops; i++) {
        const char *eq = strchr(props[i], '=');
        char *k = xstrndup(props[i], (size_t)(eq - props[i]));
        bad = set_conf(conf, k, eq + 1, err, sizeof err);
        free(k);
    }
    if (bad) {
        rd_kafka_conf_destroy(conf);
        fprintf(stderr, "gpulog detect: kafka: %s\n", err);
        rc = EXIT_USAGE;
        goto out;
    }
    rd_kafka_conf_set_rebalance_cb(conf, rebalance);
    rd_kafka_conf_set_opaque(conf, &d);
    char kerr[512];
    d.rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, kerr, sizeof kerr);
    if (!d.rk) {
        fprintf(stderr, "gpulog detect: kafka: %s\n", kerr);
        rc = EXIT_IOERR;
        goto out;
    }
    rd_kafka_poll_set_consumer(d.rk);
    rd_kafka_topic_partition_list_t *subs = rd_kafka_topic_partition_list_new(4);
    char *tl = xstrdup(topics);
    for (char *sv = NULL, *t = strtok_r(tl, ",", &sv); t; t = strtok_r(NULL, ",", &sv))
        if (*t) rd_kafka_topic_partition_list_add(subs, t, RD_KAFKA_PARTITION_UA);
    free(tl);
    rd_kafka_resp_err_t se = rd_kafka_subscribe(d.rk, subs);
    rd_kafka_topic_partition_list_destroy(subs);
    if (se) {
        fprintf(stderr, "gpulog detect: subscribe: %s\n", rd_kafka_err2str(se));
        rc = EXIT_IOERR;
        goto close;
    }
    cli_catch_signals(on_signal);
    log_info("msg=started brokers=\"%s\" group=\"%s\" topics=\"%s\" detectors=\"%s\" profile=%s metrics_port=%d",
             o.brokers, group, topics, detectors ? detectors : "", cfg.detect.profile, metrics_port());
    int ready = 0;                       /* /readyz: once the group gave us partitions */
    struct event ev;
    event_init(&ev);
    int64_t last_commit = gl_now_ms(), last_lag = 0;
    rd_kafka_queue_t *cq = rd_kafka_queue_get_consumer(d.rk);
    rd_kafka_message_t *batch[DETECT_BATCH];
    while (!stop_flag && !d.fatal) {
        if (hup_flag) {
            hup_flag = 0;
            detect_reload(&d, &prof, detectors, cfg.detect.profile);
        }
        if (!ready && d.assigned_once) {
            metrics_set_ready(1);
            ready = 1;
        }
        if (d.held.n) {
            /* an output is full: wait for it as a blocking write would, but
             * after 1 s pause the partitions and poll the group meanwhile, or
             * it evicts us after max.poll.interval.ms */
            poll_sinks(&d, d.paused ? 0 : 100);
            held_flush(&d);
            if (d.held.n) {
                if (gl_now_ms() - d.held.since < 1000) continue;
                set_paused(&d, 1);
            }
        }
        if (!d.held.n && d.paused) set_paused(&d, 0);
        if (d.paused) {
            /* outputs full: one message at a time, as the group must still
             * be polled. (librdkafka 2.0's batch call can skip offsets when
             * a pause or resume lands inside it.) */
            rd_kafka_message_t *m = rd_kafka_consumer_poll(d.rk, 100);
            if (m) {
                detect_message(&d, &ev, m);
                rd_kafka_message_destroy(m);
            }
        } else {
            /* A batch at a time: one queue call for up to DETECT_BATCH
             * messages (a call per message was the cost), each handled in
             * order as before. The held/pause check above runs between
             * batches, so a full output holds at most one batch's records
             * more. Messages of a partition revoked during the call are
             * purged by librdkafka (its barrier on assign). */
            ssize_t nb = rd_kafka_consume_batch_queue(cq, 100, batch, DETECT_BATCH);
            if (nb < 0) {
                fprintf(stderr, "gpulog detect: consume: %s\n", rd_kafka_err2str(rd_kafka_last_error()));
                nb = 0;
            }
            ssize_t bi = 0;
            for (; bi < nb && !stop_flag && !d.fatal; bi++) {
                detect_message(&d, &ev, batch[bi]);
                rd_kafka_message_destroy(batch[bi]);
                /* --once stops at the end offsets found at start */
                if (d.once && once_done(&d)) { bi++; break; }
            }
            for (; bi < nb; bi++) rd_kafka_message_destroy(batch[bi]);   /* unprocessed: not committed */
            if (!stop_flag && !d.fatal && rd_kafka_queue_length(cq) < DETECT_POKE_QLEN) fetch_poke(&d);
        }
        poll_sinks(&d, 0);
        int64_t now = gl_now_ms();
        if (now - last_commit >= 1000) {
            commit_positions(&d, NULL, 0);
            last_commit = now;
            metrics_set(M_ANOMALIES_OPEN, (int64_t)engine_get_stats(d.eng)->open);
        }
        if (now - last_lag >= 2000) {
            update_lag(&d);
            last_lag = now;
        }
        if (d.once && once_done(&d)) break;
    }
    rd_kafka_queue_destroy(cq);
    metrics_set_ready(0);
    event_free(&ev);
    if (d.once && !stop_flag) engine_flush(d.eng);
    {
        /* --once without a signal waits as before; a signal bounds the wait */
        int64_t limit = stop_flag ? cfg.shutdown_timeout_ms : 60000;
        int64_t until = gl_now_ms() + limit;
        while (d.held.n && !d.fatal && gl_now_ms() < until) {
            held_flush(&d);
            if (d.held.n) poll_sinks(&d, 100);
        }
        int64_t rest = until - gl_now_ms();
        long left = drain_sinks(&d, (int)(rest > INT32_MAX ? INT32_MAX : rest > 0 ? rest : 0)) + (long)d.held.n;
        if (left > 0) {
            fprintf(stderr, "gpulog detect: %ld records not settled within the shutdown deadline (%lld ms): their "
                            "offsets are not committed and are consumed again after a restart\n",
                    left, (long long)limit);
            rc = EXIT_IOERR;
        }
    }
    commit_positions(&d, NULL, 1);
    update_lag(&d);
    metrics_set(M_ANOMALIES_OPEN, (int64_t)engine_get_stats(d.eng)->open);
    if (d.fatal) rc = EXIT_IOERR;
close:
    rd_kafka_consumer_close(d.rk);
    rd_kafka_destroy(d.rk);
    {
        const struct engine_stats *es = engine_get_stats(d.eng);
        fprintf(stderr, "gpulog detect: consumed %llu messages (%llu undecodable), %llu samples; records: %llu "
                        "(%llu started, %llu ended), %llu settled, %llu dead-lettered%s\n",
                (unsigned long long)d.consumed, (unsigned long long)d.bad, (unsigned long long)es->samples,
                (unsigned long long)d.records, (unsigned long long)es->starts, (unsigned long long)es->ends,
                (unsigned long long)d.settled, (unsigned long long)d.deadletter,
                stop_flag ? " (stopped by a signal)" : "");
        for (struct pstate *p = d.parts; p; p = p->next)
            fprintf(stderr, "gpulog detect: %s[%d] committed %lld\n", p->topic, (int)p->part, (long long)p->committed);
    }
out:
    metrics_stop();
    for (size_t i = 0; i < d.nsinks; i++) sink_free(d.sinks[i]);
    while (d.parts) { struct pstate *n = d.parts->next; ps_free(d.parts); d.parts = n; }
    while (d.zombies) { struct pstate *n = d.zombies->next; ps_free(d.zombies); d.zombies = n; }
    for (size_t i = 0; i < d.held.n; i++) free(d.held.v[i].doc.token);   /* not written: offsets not committed */
    sink_hold_free(&d.held);
    engine_free(d.eng);
    profile_free(prof);
    buf_free(&d.json);
    buf_free(&d.key);
    es_cli_free(&o.es);
    free(props);
    free(tl_default);
    config_free(&cfg);
    return rc;
}
