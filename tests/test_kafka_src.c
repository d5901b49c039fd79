/* test_kafka_src.c - the Kafka consumer source (source kind "kafka":
 * ingest/src_kafka.c over ingest/kafka_src.c) in the one loop
 * (ingest/pipeline.h) against librdkafka's mock cluster: what a
 * partition's committed offset is when outputs settle late and out of
 * order (the first message with an output still out, else past the last
 * consumed), a message with two outputs of which one settles at once,
 * --once's end, the revoke at close reaching the stage, and the offset the
 * group keeps. About 3 s (the mock group's first join).
 * The real-broker tests (rebalances, SIGKILL, outages) are t_detect_kafka.sh,
 * t_detect_coop.sh and t_e2e.sh. */
#include "test.h"
#include "../ingest/kafka_src.h"
#include "../ingest/pipeline.h"
#include "../sinks/sink.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NMSG 10

static rd_kafka_mock_cluster_t *mc;
static const char *bootstraps;

static void on_settle(void *ctx, void *token, enum sink_outcome o)
{
    (void)token;
    (void)o;
    ++*(int *)ctx;
}

/* Produces NMSG schema-v1 metric events (message N at second N) to topic (one partition) and waits for
 * their acknowledgements. Returns how many were acknowledged. */
static int produce(const char *topic)
{
    char err[256];
    int acked = 0;
    struct kafka_conf kc = { .brokers = bootstraps, .topic = { topic, topic, topic } };
    struct sink *s = sink_kafka_new(&kc, on_settle, &acked, err, sizeof err);
    if (!s) { printf("  sink_kafka_new: %s\n", err); return 0; }
    for (int i = 0; i < NMSG; i++) {
        char json[256];
        int n = snprintf(json, sizeof json, "{\"@timestamp\":\"2025-03-01T00:00:%02d.000Z\",\"event.kind\":\"metric\","
                         "\"event.dataset\":\"gpu.dmon\",\"event.id\":\"%032d\",\"host.name\":\"h\",\"gpu.index\":0,"
                         "\"gpu.power.usage\":%d}", i, i, i);
        struct sink_doc d = { .stream = STREAM_METRICS, .key = "h", .keylen = 1, .id = "x", .json = json,
                              .len = (size_t)n };
        while (sink_write(s, &d) == GL_AGAIN) sink_poll(s, 10);
    }
    sink_drain(s, 10000);
    sink_free(s);
    return acked;
}

/* The loop's sink: keeps what is written; poll settles every document not
 * held back (late[i]). */
struct lsink { void *tok[NMSG]; int n, settled[NMSG], late[NMSG]; struct sink *sk; };

static int ls_write(void *st, const struct sink_doc *d)
{
    struct lsink *l = st;
    if (l->n == NMSG) return GL_AGAIN;
    l->tok[l->n++] = d->token;
    return GL_OK;
}

static long ls_poll(void *st, int timeout_ms)
{
    (void)timeout_ms;
    struct lsink *l = st;
    long out = 0;
    for (int i = 0; i < l->n; i++) {
        if (l->settled[i]) continue;
        if (l->late[i]) { out++; continue; }
        l->settled[i] = 1;
        l->sk->settle(l->sk->settle_ctx, l->tok[i], SINK_STORED);
    }
    return out;
}

static const struct sink_ops lsink_ops = { "late", ls_write, ls_poll, NULL };

/* The stage: message 2 gets one output, 5 two, 7 one; a revoke is counted. */
struct stage { struct pipeline *pl; int msgs, revoked; int64_t lane; };
static void stage_event(void *ctx, const struct event *ev)
{
    struct stage *st = ctx;
    int i = st->msgs++;
    st->lane = pipeline_lane(st->pl);
    for (int k = 0; k < (i == 5 ? 2 : i == 2 || i == 7 ? 1 : 0); k++) pipeline_emit(st->pl, ev, STREAM_ANOMALIES);
}
static void stage_revoked(void *ctx, struct source *s, uint32_t lane)
{
    (void)s;
    (void)lane;
    ((struct stage *)ctx)->revoked++;
}

/* The committed offset ksrc_report says for TOPIC[0] after the outputs
 * were polled and a commit. */
static long long committed(struct pipeline *pl, struct ksrc *ks)
{
    pipeline_drain(pl, 10);
    ksrc_commit(ks, 1);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ksrc_report(ks, f);
    fclose(f);
    const char *p = text ? strstr(text, "committed ") : NULL;
    long long v = p ? strtoll(p + 10, NULL, 10) : -2;
    free(text);
    return v;
}

TEST(commit_waits_for_the_first_message_with_an_output_out)
{
    CHECK_EQ_INT(produce("ks1"), NMSG);
    static const char *const props[] = { "session.timeout.ms=6000", "heartbeat.interval.ms=100" };
    struct ksrc_source_opts ko = { .o = { .brokers = bootstraps, .group = "g1", .props = props, .nprops = 2,
                                          .once = 1, .name = "test" } };
    struct stage st = { .lane = -1 };
    struct pipeline_opts po = { .once = 1, .shutdown_ms = 1000, .quiet = 1, .stage = stage_event,
                                .revoked = stage_revoked, .kafka = &ko, .ctx = &st };
    struct pipeline *pl = st.pl = pipeline_new(&po);
    static struct lsink l;
    struct sink *sk = xcalloc(1, sizeof *sk);
    *sk = (struct sink){ .ops = &lsink_ops, .st = &l, .settle = pipeline_settle, .settle_ctx = pl };
    l.sk = sk;
    l.late[0] = l.late[1] = 1;          /* message 2's output, one of message 5's */
    pipeline_add_sink(pl, sk);
    char err[256];
    struct source *src = pipeline_open(pl, "kafka", "ks1", NULL, err, sizeof err);
    CHECK(src != NULL);
    if (!src) { printf("  %s\n", err); pipeline_free(pl); return; }
    struct ksrc *ks = src_kafka_consumer(src);
    pipeline_run(pl);                   /* --once: up to the end offset found at assignment */
    CHECK_EQ_INT(st.msgs, NMSG);
    CHECK_EQ_INT(st.lane, 0);
    CHECK_EQ_INT(l.n, 4);
    CHECK(ksrc_once_done(ks));
    CHECK(ksrc_assigned(ks));
    CHECK_EQ_INT(committed(pl, ks), 2);   /* message 2's output is still out */
    l.late[0] = 0;
    CHECK_EQ_INT(committed(pl, ks), 5);   /* message 5 waits for its second output */
    l.late[1] = 0;
    CHECK_EQ_INT(committed(pl, ks), NMSG);
    CHECK_EQ_INT(ksrc_lag(ks), 0);
    CHECK_EQ_INT(pipeline_finish(pl), 0);
    ksrc_close(ks);                     /* leaving the group revokes: the stage hears of the lane */
    CHECK_EQ_INT(st.revoked, 1);
    pipeline_free(pl);
}

TEST(the_group_holds_the_committed_offset)
{
    /* what a restarted member of g1 resumes from, asked without joining */
    char err[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", bootstraps, err, sizeof err);
    rd_kafka_conf_set(conf, "group.id", "g1", err, sizeof err);
    rd_kafka_conf_set(conf, "log_level", "0", err, sizeof err);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    CHECK(rk != NULL);
    if (!rk) return;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, "ks1", 0);
    CHECK_EQ_INT(rd_kafka_committed(rk, l, 5000), RD_KAFKA_RESP_ERR_NO_ERROR);
    CHECK_EQ_INT(l->elems[0].offset, NMSG);
    rd_kafka_topic_partition_list_destroy(l);
    rd_kafka_destroy(rk);
}

TEST(bad_property_is_a_usage_error)
{
    char err[256];
    static const char *const props[] = { "no.such.property=1" };
    struct ksrc_opts o = { .brokers = bootstraps, .group = "g3", .props = props, .nprops = 1, .name = "test" };
    struct ksrc_hooks h = { 0 };
    int usage = 0;
    struct ksrc *ks = ksrc_new(&o, &h, &usage, err, sizeof err);
    CHECK(ks == NULL);
    CHECK_EQ_INT(usage, 1);
    CHECK(strstr(err, "no.such.property") != NULL);
    ksrc_free(ks);
}

int main(void)
{
    char err[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "log_level", "0", err, sizeof err);
    rd_kafka_t *mrk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    mc = mrk ? rd_kafka_mock_cluster_new(mrk, 1) : NULL;
    if (!mc) { printf("mock cluster: %s\n0 passed, 1 failed\n", err); return 1; }
    bootstraps = rd_kafka_mock_cluster_bootstraps(mc);
    rd_kafka_mock_topic_create(mc, "ks1", 1, 1);
    gl_log_level = GL_LOG_ERROR + 1;
    RUN(commit_waits_for_the_first_message_with_an_output_out);
    RUN(the_group_holds_the_committed_offset);
    RUN(bad_property_is_a_usage_error);
    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(mrk);
    return TEST_REPORT();
}
