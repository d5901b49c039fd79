/* test_collect_kafka.c - the Kafka sink (sinks/kafka.c) against librdkafka's
 * mock cluster, for the faults a real broker cannot stage on demand: a
 * broker that is down (nothing settles, the queue fills: GL_AGAIN), a
 * permanent produce error (dead letter + SINK_DEADLETTER), and purge at
 * destroy (never settled). The real-broker tests are in t_collect.sh. */
#include "test.h"
#include "../sinks/sink.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static rd_kafka_t *mrk;
static rd_kafka_mock_cluster_t *mc;
static const char *bootstraps;
static char dlpath[256];

struct settled { int stored, dead; uintptr_t last; uint64_t tokensum; };

static void on_settle(void *ctx, void *token, enum sink_outcome o)
{
    struct settled *s = ctx;
    if (o == SINK_STORED) s->stored++; else s->dead++;
    s->last = (uintptr_t)token;
    s->tokensum += (uintptr_t)token;
}

static struct sink *new_sink(struct settled *st, const char *topic, const char *const *props, size_t n)
{
    char err[256];
    struct kafka_conf kc = { .brokers = bootstraps, .topic = { topic, topic, topic },
                             .props = props, .nprops = n, .deadletter_path = dlpath };
    struct sink *s = sink_kafka_new(&kc, on_settle, st, err, sizeof err);
    if (!s) printf("  sink_kafka_new: %s\n", err);
    return s;
}

static int write_doc(struct sink *s, int i)
{
    char json[64], key[16];
    int n = snprintf(json, sizeof json, "{\"i\":%d}", i);
    int k = snprintf(key, sizeof key, "h/%d", i % 4);
    struct sink_doc d = { .stream = STREAM_METRICS, .key = key, .keylen = (size_t)k, .id = "x",
                          .json = json, .len = (size_t)n, .token = (void *)(uintptr_t)(i + 1) };
    return sink_write(s, &d);
}

TEST(settles_stored_after_ack)
{
    struct settled st = { 0 };
    struct sink *s = new_sink(&st, "m1", NULL, 0);
    CHECK(s != NULL);
    if (!s) return;
    uint64_t want = 0;
    for (int i = 0; i < 200; i++) { CHECK_EQ_INT(write_doc(s, i), GL_OK); want += (uint64_t)i + 1; }
    CHECK_EQ_INT(sink_drain(s, 15000), 0);
    CHECK_EQ_INT(st.stored, 200);
    CHECK_EQ_INT(st.dead, 0);
    CHECK_EQ_INT(st.tokensum, want);   /* every token exactly once */
    CHECK_EQ_STR(s->errstr, "");
    sink_free(s);
}

TEST(broker_down_nothing_settles_then_all)
{
    struct settled st = { 0 };
    struct sink *s = new_sink(&st, "m2", NULL, 0);
    if (!s) { CHECK(0); return; }
    CHECK_EQ_INT(write_doc(s, 0), GL_OK);        /* connect and learn the metadata first */
    CHECK_EQ_INT(sink_drain(s, 15000), 0);
    rd_kafka_mock_broker_set_down(mc, 1);
    for (int i = 1; i <= 20; i++) CHECK_EQ_INT(write_doc(s, i), GL_OK);
    long left = sink_drain(s, 2500);
    CHECK_EQ_INT(left, 20);                      /* queued is not delivered */
    CHECK_EQ_INT(st.stored, 1);
    rd_kafka_mock_broker_set_up(mc, 1);
    CHECK_EQ_INT(sink_drain(s, 30000), 0);
    CHECK_EQ_INT(st.stored, 21);
    CHECK_EQ_INT(st.dead, 0);
    sink_free(s);
}

TEST(full_queue_is_backpressure_and_purge_never_settles)
{
    struct settled st = { 0 };
    const char *props[] = { "queue.buffering.max.messages=5" };
    struct sink *s = new_sink(&st, "m3", props, 1);
    if (!s) { CHECK(0); return; }
    CHECK_EQ_INT(write_doc(s, 0), GL_OK);
    CHECK_EQ_INT(sink_drain(s, 15000), 0);
    rd_kafka_mock_broker_set_down(mc, 1);
    int again = 0, okc = 0;
    for (int i = 1; i <= 10; i++) {
        int r = write_doc(s, i);
        if (r == GL_AGAIN) again++;
        else if (r == GL_OK) okc++;
    }
    CHECK_EQ_INT(okc, 5);
    CHECK_EQ_INT(again, 5);
    sink_poll(s, 200);
    CHECK_EQ_INT(st.stored, 1);
    sink_free(s);                                /* purges the 5 queued messages */
    CHECK_EQ_INT(st.stored, 1);
    CHECK_EQ_INT(st.dead, 0);
    rd_kafka_mock_broker_set_up(mc, 1);
}

TEST(permanent_error_goes_to_dead_letter)
{
    struct settled st = { 0 };
    struct sink *s = new_sink(&st, "m4", NULL, 0);
    if (!s) { CHECK(0); return; }
    CHECK_EQ_INT(write_doc(s, 0), GL_OK);
    CHECK_EQ_INT(sink_drain(s, 15000), 0);
    unlink(dlpath);
    rd_kafka_mock_push_request_errors(mc, 0 /* ApiKey Produce */, 1, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
    CHECK_EQ_INT(write_doc(s, 41), GL_OK);
    CHECK_EQ_INT(sink_drain(s, 15000), 0);
    CHECK_EQ_INT(st.dead, 1);
    CHECK_EQ_INT(st.last, 42);
    FILE *f = fopen(dlpath, "r");
    char line[1024] = "";
    CHECK(f != NULL);
    if (f) { if (!fgets(line, sizeof line, f)) line[0] = '\0'; fclose(f); }
    CHECK(strstr(line, "\"deadletter.output\":\"kafka\"") != NULL);   /* the one dead-letter format */
    CHECK(strstr(line, "\"deadletter.key\":\"h/1\"") != NULL);
    CHECK(strstr(line, "\"document\":{\"i\":41}") != NULL);
    CHECK(strstr(line, "\"deadletter.reason\":") != NULL);
    /* the producer goes on */
    CHECK_EQ_INT(write_doc(s, 50), GL_OK);
    CHECK_EQ_INT(sink_drain(s, 15000), 0);
    CHECK_EQ_INT(st.stored, 2);
    sink_free(s);
}

TEST(bad_property_is_a_config_error)
{
    struct settled st = { 0 };
    char err[256] = "";
    const char *props[] = { "no.such.property=1" };
    struct kafka_conf kc = { .brokers = "127.0.0.1:1", .props = props, .nprops = 1 };
    struct sink *s = sink_kafka_new(&kc, on_settle, &st, err, sizeof err);
    CHECK(s == NULL);
    CHECK(strstr(err, "no.such.property") != NULL);
    if (s) sink_free(s);
}

int main(void)
{
    char err[256];
    snprintf(dlpath, sizeof dlpath, "%s/test_collect_kafka.%d.dl", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "log_level", "0", err, sizeof err);
    mrk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    mc = mrk ? rd_kafka_mock_cluster_new(mrk, 1) : NULL;
    if (!mc) { printf("mock cluster: %s\n0 passed, 1 failed\n", err); return 1; }
    bootstraps = rd_kafka_mock_cluster_bootstraps(mc);
    for (int i = 1; i <= 4; i++) {
        char t[16];
        snprintf(t, sizeof t, "m%d", i);
        rd_kafka_mock_topic_create(mc, t, 3, 1);
    }
    gl_log_level = GL_LOG_ERROR + 1;   /* the outages below are expected */
    RUN(settles_stored_after_ack);
    RUN(broker_down_nothing_settles_then_all);
    RUN(full_queue_is_backpressure_and_purge_never_settles);
    RUN(permanent_error_goes_to_dead_letter);
    RUN(bad_property_is_a_config_error);
    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(mrk);
    unlink(dlpath);
    return TEST_REPORT();
}
