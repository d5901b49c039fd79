/* test_kafka_src.c - the Kafka consumer source (ingest/kafka_src.c) against
 * librdkafka's mock cluster: what a partition's committed offset is when
 * outputs settle late and out of order (the first message with an output
 * still out, else past the last consumed), a message with two outputs of
 * which one settles at once, --once's end, the revoke hooks at close, and
 * the offset the group keeps. About 3 s (the mock group's first join).
 * The real-broker tests (rebalances, SIGKILL, outages) are t_detect_kafka.sh,
 * t_detect_coop.sh and t_e2e.sh. */
#include "test.h"
#include "../ingest/kafka_src.h"
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

/* Produces NMSG messages {"i":N} to topic (one partition) and waits for
 * their acknowledgements. Returns how many were acknowledged. */
static int produce(const char *topic)
{
    char err[256];
    int acked = 0;
    struct kafka_conf kc = { .brokers = bootstraps, .topic = { topic, topic, topic } };
    struct sink *s = sink_kafka_new(&kc, on_settle, &acked, err, sizeof err);
    if (!s) { printf("  sink_kafka_new: %s\n", err); return 0; }
    for (int i = 0; i < NMSG; i++) {
        char json[32];
        int n = snprintf(json, sizeof json, "{\"i\":%d}", i);
        struct sink_doc d = { .stream = STREAM_METRICS, .key = "h", .keylen = 1, .id = "x", .json = json,
                              .len = (size_t)n };
        while (sink_write(s, &d) == GL_AGAIN) sink_poll(s, 10);
    }
    sink_drain(s, 10000);
    sink_free(s);
    return acked;
}

/* What the owner hooks saw. */
struct seen { int drains, revoked, last_tag; };
static long hook_drain(void *ctx, int timeout_ms) { (void)timeout_ms; ((struct seen *)ctx)->drains++; return 0; }
static void hook_revoked(void *ctx, int tag)
{
    struct seen *s = ctx;
    s->revoked++;
    s->last_tag = tag;
}

static struct ksrc *open_src(const char *topic, const char *group, struct seen *seen)
{
    char err[256];
    static const char *const props[] = { "session.timeout.ms=6000", "heartbeat.interval.ms=100" };
    struct ksrc_opts o = { .brokers = bootstraps, .group = group, .props = props, .nprops = 2, .once = 1,
                           .name = "test" };
    struct ksrc_hooks h = { .ctx = seen, .drain = hook_drain, .revoked = hook_revoked };
    int usage = 0;
    struct ksrc *ks = ksrc_new(&o, &h, &usage, err, sizeof err);
    if (!ks) { printf("  ksrc_new: %s\n", err); return NULL; }
    if (ksrc_subscribe(ks, topic, err, sizeof err) != GL_OK) { printf("  %s\n", err); ksrc_free(ks); return NULL; }
    return ks;
}

/* The committed offset ksrc_report says for TOPIC[0] after a commit. */
static long long committed(struct ksrc *ks)
{
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

/* Reads until a message comes (the group join takes a moment). */
static int next(struct ksrc *ks, struct krec *r)
{
    for (int i = 0; i < 200; i++)
        if (ksrc_next(ks, r, 100) == GL_OK) return 1;
    return 0;
}

TEST(commit_waits_for_the_first_message_with_an_output_out)
{
    CHECK_EQ_INT(produce("ks1"), NMSG);
    struct seen seen = { 0 };
    struct ksrc *ks = open_src("ks1", "g1", &seen);
    CHECK(ks != NULL);
    if (!ks) return;
    void *tok2 = NULL, *tok5a = NULL, *tok5b = NULL;
    struct krec r;
    for (int i = 0; i < NMSG; i++) {
        if (!next(ks, &r)) { CHECK(!"message came"); break; }
        CHECK_EQ_INT(r.offset, i);
        if (i == 2) tok2 = ksrc_hold(ks);
        if (i == 5) {                       /* two outputs: one settles at once, one later */
            tok5a = ksrc_hold(ks);
            tok5b = ksrc_hold(ks);
            ksrc_settle(ks, tok5a);
        }
        if (i == 7) ksrc_settle(ks, ksrc_hold(ks));   /* settled before the reader is done */
        ksrc_done(ks);
    }
    CHECK(ksrc_once_done(ks));
    CHECK(ksrc_assigned(ks));
    CHECK_EQ_INT(committed(ks), 2);         /* message 2 is out */
    ksrc_settle(ks, tok2);
    CHECK_EQ_INT(committed(ks), 5);         /* 5's second output is still out */
    ksrc_settle(ks, tok5b);
    CHECK_EQ_INT(committed(ks), NMSG);      /* all settled: past the last consumed */
    CHECK(ksrc_hold(ks) == NULL);           /* no current message: not tracked */
    CHECK_EQ_INT(ksrc_lag(ks), 0);
    ksrc_close(ks);                         /* leaving the group revokes: hooks run */
    CHECK(seen.drains >= 1);
    CHECK_EQ_INT(seen.revoked, 1);
    CHECK(seen.last_tag > 0);
    ksrc_free(ks);
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
    struct seen seen = { 0 };
    struct ksrc_hooks h = { .ctx = &seen };
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
