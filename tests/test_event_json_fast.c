/*
 * test_event_json_fast.c - the shortcuts of the flat decoder (core/event_json.c)
 * give what the jansson reference gives: a layout key taken byte for byte
 * (and the same key spelled with escapes, or a lookalike with a quote in
 * it), the remembered minute of @timestamp/event.created (leap second,
 * second 61, another minute, another format), the remembered host, and
 * integers around the 18-digit boundary of the unchecked loop.
 */
#include "test.h"
#include "../core/event.h"

#include <string.h>

/* Decodes msg with both decoders; returns the flat decoder's status after
 * checking that both agree on it and on the event. */
static int both(struct event *a, struct event *b, const char *msg)
{
    char ea[GL_ERRLEN], eb[GL_ERRLEN];
    int ra = event_from_json(a, msg, strlen(msg), ea, sizeof ea);
    int rb = event_from_json_jansson(b, msg, strlen(msg), eb, sizeof eb);
    CHECK_EQ_INT(ra, rb);
    if (ra != GL_OK || rb != GL_OK) return ra;
    CHECK(a->ts_ms == b->ts_ms);
    CHECK(a->created_ms == b->created_ms);
    CHECK(a->host == b->host);
    CHECK_EQ_INT(a->nf, b->nf);
    for (size_t k = 0; k < a->nf && k < b->nf; k++) {
        CHECK(a->f[k].key == b->f[k].key);
        CHECK(a->f[k].type == b->f[k].type && (a->f[k].type == EV_STR || a->f[k].v.i == b->f[k].v.i));
    }
    return ra;
}

TEST(layout_keys_byte_for_byte)
{
    struct event a, b;
    event_init(&a);
    event_init(&b);
#define TS "{\"@timestamp\":\"2025-11-07T03:15:01.000Z\""
    /* the layout is learnt, then the same keys with escapes, a key with an
     * escaped quote whose raw bytes start like a layout key, and duplicates */
    static const char *const ok[] = {
        TS ",\"host.name\":\"n1\",\"gpu.power.usage\":1,\"gpu.index\":0}",
        TS ",\"host.name\":\"n1\",\"gpu.power.usage\":2,\"gpu.index\":1}",
        TS ",\"host.n\\u0061me\":\"n2\",\"gpu.po\\u0077er.usage\":3,\"gpu.index\":2}",
        TS ",\"host.name\":\"n1\",\"gpu.power.usage\\\"x\":4,\"gpu.index\":3}",
        TS ",\"host.name\":\"n1\",\"gpu.power.usage\":5,\"gpu.index\":4}",
        TS " , \"host.name\" : \"n1\" , \"gpu.power.usage\" : 6 , \"gpu.index\" : 5 }",
    };
    for (int round = 0; round < 2; round++)
        for (size_t i = 0; i < GL_ARRAY_LEN(ok); i++) CHECK_EQ_INT(both(&a, &b, ok[i]), GL_OK);
    static const char *const bad[] = {
        TS ",\"host.name\":\"n1\",\"gpu.power.usage\":1,\"gpu.power.usage\":2}",
        TS ",\"host.name\":\"n1\",\"gpu.power.usage\":1,\"gpu.po\\u0077er.usage\":2}",
        TS ",\"host.name\":\"n1\",\"gpu.power.usage\":1,\"gpu.index\":0,\"host.name\":\"n1\"}",
        TS ",\"host.name\":\"n1\",\"gpu.power.usage",
    };
    for (size_t i = 0; i < GL_ARRAY_LEN(bad); i++) {
        CHECK_EQ_INT(both(&a, &b, bad[i]), GL_ERROR);
        CHECK_EQ_INT(both(&a, &b, ok[i]), GL_OK);   /* the layouts still work after a refusal */
    }
    /* a layout key with a quote in it: its raw bytes "q"z" are not that key */
    CHECK_EQ_INT(both(&a, &b, TS ",\"q\\\"z\":1}"), GL_OK);
    CHECK_EQ_INT(both(&a, &b, TS ",\"q\"z\":1}"), GL_ERROR);
    CHECK_EQ_INT(both(&a, &b, TS ",\"q\\\"z\":2}"), GL_OK);
#undef TS
    event_free(&a);
    event_free(&b);
}

TEST(timestamp_minute_memo)
{
    struct event a, b;
    event_init(&a);
    event_init(&b);
    static const char *const ts[] = {
        "2025-12-31T23:59:58.999Z", "2025-12-31T23:59:59.000Z", "2025-12-31T23:59:60.500Z",
        "2025-12-31T23:59:61.000Z", "2025-12-31T23:59:5x.000Z", "2025-12-31T23:59:07.1Z",
        "2025-12-31T23:59:07.123+01:00", "2026-01-01T00:00:00.000Z", "2025-12-31T23:59:00.001Z",
        "2025-12-31T23:59:99.000Z", "2025-02-30T10:00:00.000Z", "2025-02-30T10:00:01.000Z",
        "2025-12-31 23:59:01.000Z", "2025-12-31T23:59:01.000Z",
    };
    char msg[256];
    for (int round = 0; round < 2; round++)
        for (size_t i = 0; i < GL_ARRAY_LEN(ts); i++) {
            snprintf(msg, sizeof msg, "{\"@timestamp\":\"%s\",\"event.created\":\"%s\",\"x\":1}", ts[i],
                     ts[GL_ARRAY_LEN(ts) - 1 - i]);
            both(&a, &b, msg);
        }
    /* a valid second after a refused one of the same minute */
    CHECK_EQ_INT(both(&a, &b, "{\"@timestamp\":\"2025-12-31T23:59:61.000Z\"}"), GL_ERROR);
    CHECK_EQ_INT(both(&a, &b, "{\"@timestamp\":\"2025-12-31T23:59:42.042Z\"}"), GL_OK);
    CHECK(a.ts_ms == b.ts_ms);
    event_free(&a);
    event_free(&b);
}

TEST(integer_digits)
{
    struct event a, b;
    event_init(&a);
    event_init(&b);
    static const char *const nums[] = {
        "999999999999999999", "-999999999999999999", "1000000000000000000", "9223372036854775807",
        "-9223372036854775808", "9223372036854775808", "-9223372036854775809", "18446744073709551616", "0", "-0",
    };
    char msg[128];
    for (size_t i = 0; i < GL_ARRAY_LEN(nums); i++) {
        snprintf(msg, sizeof msg, "{\"@timestamp\":\"2025-11-07T03:15:01.000Z\",\"n\":%s}", nums[i]);
        both(&a, &b, msg);
    }
    event_free(&a);
    event_free(&b);
}

int main(void)
{
    RUN(layout_keys_byte_for_byte);
    RUN(timestamp_minute_memo);
    RUN(integer_digits);
    return TEST_REPORT();
}
