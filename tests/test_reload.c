/* test_reload.c - engine_reload (SIGHUP in detect and run): identical rules
 * keep state and open episodes, changed and removed rules end theirs with an
 * "end" record, a changed threshold applies to later samples, metrics no
 * rule tracks any more are dropped, "*" rules keep their series, and a new
 * window size starts every GPU over. */
#include "test.h"
#include "../detect/engine.h"
#include "engine_harness.h"

#include <stdlib.h>
#include <string.h>

struct cap {
    int start, change, end;
    char last_reason[320];
    char last_rule[32];
};

static void cap_emit(void *ctx, const struct event *r)
{
    struct cap *c = ctx;
    size_t n;
    const char *t = event_get_str(r, "event.type", &n);
    if (!strncmp(t, "start", n)) c->start++;
    else if (!strncmp(t, "change", n)) c->change++;
    else c->end++;
    const char *s = event_get_str(r, "event.reason", &n);
    snprintf(c->last_reason, sizeof c->last_reason, "%.*s", (int)n, s);
    s = event_get_str(r, "rule.id", &n);
    snprintf(c->last_rule, sizeof c->last_rule, "%.*s", (int)n, s);
}

#define TEMP "{\"id\":\"temp\",\"detector\":\"threshold\",\"metric\":\"gpu.temperature.gpu\",\"for\":1,\"clear\":1," \
             "\"params\":{\"high\":80}}"
#define POWER(h) "{\"id\":\"power\",\"detector\":\"threshold\",\"metric\":\"gpu.power.usage\",\"for\":1,\"clear\":1," \
                 "\"params\":{\"high\":" #h "}}"

TEST(unchanged_rule_keeps_episode_changed_rule_ends)
{
    struct profile *a = prof_of("{\"rules\":[" TEMP "," POWER(200) "]}");
    struct profile *b = prof_of("{\"rules\":[" TEMP "," POWER(300) "]}");
    CHECK(a && b);
    if (!a || !b) return;
    struct cap c = { 0 };
    struct engine *e = engine_new(a, cap_emit, &c);
    for (int s = 0; s < 3; s++) sample(e, "h", 0, s, "gpu.temperature.gpu", 85.0, "gpu.power.usage", 250.0, NULL);
    CHECK_EQ_INT(c.start, 2);
    CHECK_EQ_INT(engine_get_stats(e)->open, 2);
    size_t changed = 99;
    size_t kept = engine_reload(e, b, &changed);
    profile_free(a);
    CHECK_EQ_INT(kept, 1);
    CHECK_EQ_INT(changed, 1);
    CHECK_EQ_INT(c.end, 1);
    CHECK_EQ_STR(c.last_rule, "power");
    CHECK(strstr(c.last_reason, "configuration reload") != NULL);
    CHECK_EQ_INT(engine_get_stats(e)->open, 1);
    /* 250 W is below the new limit; the temperature episode is not re-opened */
    for (int s = 3; s < 6; s++) sample(e, "h", 0, s, "gpu.temperature.gpu", 85.0, "gpu.power.usage", 250.0, NULL);
    CHECK_EQ_INT(c.start, 2);
    /* 350 W is above it */
    sample(e, "h", 0, 6, "gpu.temperature.gpu", 85.0, "gpu.power.usage", 350.0, NULL);
    sample(e, "h", 0, 7, "gpu.temperature.gpu", 85.0, "gpu.power.usage", 350.0, NULL);
    CHECK_EQ_INT(c.start, 3);
    CHECK_EQ_STR(c.last_rule, "power");
    /* the kept episode still ends normally */
    sample(e, "h", 0, 8, "gpu.temperature.gpu", 50.0, "gpu.power.usage", 350.0, NULL);
    sample(e, "h", 0, 9, "gpu.temperature.gpu", 50.0, "gpu.power.usage", 350.0, NULL);
    CHECK_EQ_INT(c.end, 2);
    CHECK_EQ_STR(c.last_rule, "temp");
    engine_free(e);
    profile_free(b);
}

TEST(identical_profile_keeps_everything)
{
    struct profile *a = prof_of("{\"rules\":[" TEMP "," POWER(200) "]}");
    struct profile *b = prof_of("{\"rules\":[" TEMP "," POWER(200) "]}");
    CHECK(a && b);
    if (!a || !b) return;
    struct cap c = { 0 };
    struct engine *e = engine_new(a, cap_emit, &c);
    for (int s = 0; s < 3; s++) sample(e, "h", 0, s, "gpu.temperature.gpu", 85.0, "gpu.power.usage", 250.0, NULL);
    uint64_t series = engine_get_stats(e)->series;
    size_t changed = 99;
    CHECK_EQ_INT(engine_reload(e, b, &changed), 2);
    profile_free(a);
    CHECK_EQ_INT(changed, 0);
    CHECK_EQ_INT(c.end, 0);
    CHECK_EQ_INT(engine_get_stats(e)->series, series);
    CHECK_EQ_INT(engine_get_stats(e)->open, 2);
    for (int s = 3; s < 6; s++) sample(e, "h", 0, s, "gpu.temperature.gpu", 85.0, "gpu.power.usage", 250.0, NULL);
    CHECK_EQ_INT(c.start, 2);
    engine_free(e);
    profile_free(b);
}

TEST(removed_rule_drops_its_metric)
{
    /* m.x is tracked only for its rule (power, util and clock are always
     * tracked for the learned references) */
    struct profile *a = prof_of("{\"rules\":[" TEMP ",{\"id\":\"x\",\"detector\":\"threshold\",\"metric\":\"m.x\","
                                "\"for\":1,\"clear\":1,\"params\":{\"high\":5}}]}");
    struct profile *b = prof_of("{\"rules\":[" TEMP "]}");
    CHECK(a && b);
    if (!a || !b) return;
    struct cap c = { 0 };
    struct engine *e = engine_new(a, cap_emit, &c);
    for (int s = 0; s < 3; s++) sample(e, "h", 0, s, "gpu.temperature.gpu", 85.0, "m.x", 9.0, NULL);
    uint64_t series = engine_get_stats(e)->series;
    CHECK_EQ_INT(c.start, 2);
    size_t changed = 0;
    CHECK_EQ_INT(engine_reload(e, b, &changed), 1);
    profile_free(a);
    CHECK_EQ_INT(changed, 1);
    CHECK_EQ_INT(c.end, 1);
    CHECK_EQ_STR(c.last_rule, "x");
    CHECK_EQ_INT(engine_get_stats(e)->series, series - 1);
    CHECK_EQ_INT(engine_get_stats(e)->open, 1);
    for (int s = 3; s < 6; s++) sample(e, "h", 0, s, "gpu.temperature.gpu", 85.0, "m.x", 9.0, NULL);
    CHECK_EQ_INT(c.start, 2);
    engine_free(e);
    profile_free(b);
}

TEST(star_rules_keep_their_series)
{
    const char *g = "{\"rules\":[{\"id\":\"z\",\"detector\":\"robust_z\",\"metric\":\"*\",\"for\":1,\"clear\":1,"
                    "\"params\":{\"z\":6,\"min_n\":5}}]}";
    struct profile *a = prof_of(g), *b = prof_of(g);
    CHECK(a && b);
    if (!a || !b) return;
    struct cap c = { 0 };
    struct engine *e = engine_new(a, cap_emit, &c);
    for (int s = 0; s < 20; s++) sample(e, "h", 0, s, "m.a", 10.0 + (s % 3), "m.b", 20.0 + (s % 2), NULL);
    uint64_t series = engine_get_stats(e)->series;
    CHECK(series >= 2);
    CHECK_EQ_INT(engine_reload(e, b, NULL), 1);
    profile_free(a);
    CHECK_EQ_INT(engine_get_stats(e)->series, series);
    /* the windows were kept: a spike is judged at once (no new warm-up) */
    sample(e, "h", 0, 20, "m.a", 500.0, "m.b", 20.0, NULL);
    sample(e, "h", 0, 21, "m.a", 11.0, "m.b", 20.0, NULL);
    CHECK_EQ_INT(c.start, 1);
    engine_free(e);
    profile_free(b);
}

TEST(new_window_starts_over)
{
    struct profile *a = prof_of("{\"window\":64,\"rules\":[" TEMP "]}");
    struct profile *b = prof_of("{\"window\":32,\"rules\":[" TEMP "]}");
    CHECK(a && b);
    if (!a || !b) return;
    struct cap c = { 0 };
    struct engine *e = engine_new(a, cap_emit, &c);
    for (int s = 0; s < 3; s++) sample(e, "h", 0, s, "gpu.temperature.gpu", 85.0, NULL);
    CHECK_EQ_INT(c.start, 1);
    engine_reload(e, b, NULL);
    profile_free(a);
    CHECK_EQ_INT(c.end, 1);
    CHECK_EQ_INT(engine_get_stats(e)->gpus, 0);
    CHECK_EQ_INT(engine_get_stats(e)->series, 0);
    CHECK_EQ_INT(engine_get_stats(e)->open, 0);
    for (int s = 3; s < 6; s++) sample(e, "h", 0, s, "gpu.temperature.gpu", 85.0, NULL);
    CHECK_EQ_INT(c.start, 2);
    CHECK_EQ_INT(engine_get_stats(e)->gpus, 1);
    engine_free(e);
    profile_free(b);
}

int main(void)
{
    RUN(unchanged_rule_keeps_episode_changed_rule_ends);
    RUN(identical_profile_keeps_everything);
    RUN(removed_rule_drops_its_metric);
    RUN(star_rules_keep_their_series);
    RUN(new_window_starts_over);
    return TEST_REPORT();
}
