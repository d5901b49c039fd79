/*
 * test_smiq.c - `nvidia-smi -q` dumps (parsers/smiq.c) and the health rule
 * that judges them (detect/det_health.c): one gpu.health event per GPU
 * block with memory health, ECC (new and old section layouts), throttle
 * reasons, temperatures with the slowdown limit, power and clocks; then
 * gpu.health episodes: a pending row remap needs a reset (severity 2), a
 * failed remap or uncorrectable ECC a drain and repair (3), a healthy
 * snapshot ends the episode.
 */
#include "csv_harness.h"
#include "cap_harness.h"
#include "../detect/engine.h"

#include <stdlib.h>

static struct got G;

TEST(dump_to_events)
{
    char *t = slurp("tests/fixtures/smiq/two-gpus-faults.txt");
    CHECK(t != NULL);
    if (!t) return;
    run_text(&parser_auto, t, &G);
    free(t);
    CHECK_EQ_INT(G.rejected, 0);
    CHECK_EQ_INT(G.n, 2);
    CHECK_EQ_STR(str(&G, 0, "event.dataset"), "gpu.health");
    CHECK_EQ_STR(str(&G, 0, "@timestamp"), "2024-11-05T10:00:00.000Z");
    CHECK_NEAR(num(&G, 0, "gpu.index"), 0, 0);
    CHECK_EQ_STR(str(&G, 0, "gpu.pci.bus_id"), "0000:07:00.0");
    CHECK_EQ_STR(str(&G, 0, "gpu.name"), "NVIDIA A100-SXM4-80GB");
    CHECK_NEAR(num(&G, 0, "gpu.memory.framebuffer.used_size"), 40960, 0);
    CHECK_NEAR(num(&G, 0, "gpu.utilization.gpu.pct"), 97, 0);
    CHECK_NEAR(num(&G, 0, "gpu.ecc.corrected.volatile.count"), 12, 0);
    CHECK_NEAR(num(&G, 0, "gpu.ecc.uncorrected.aggregate.count"), 1, 0);
    CHECK(json_is_true(field(&G, 0, "gpu.remapped_rows.pending")));
    CHECK(json_is_false(field(&G, 0, "gpu.remapped_rows.failure")));
    CHECK_NEAR(num(&G, 0, "gpu.remapped_rows.correctable.count"), 3, 0);
    CHECK(json_is_true(field(&G, 0, "gpu.throttling.reason.sw_power_cap")));
    CHECK_NEAR(num(&G, 0, "gpu.temperature.slowdown"), 89, 0);
    CHECK_NEAR(num(&G, 0, "gpu.power.usage"), 380.12, 1e-9);
    CHECK_NEAR(num(&G, 0, "gpu.power.limit"), 400, 0);
    CHECK_NEAR(num(&G, 0, "gpu.clock.streaming_multiprocessor_frequency"), 1410, 0);   /* Clocks, not Max Clocks */
    CHECK(!has(&G, 0, "gpu.fan.speed.pct"));                                           /* N/A */
    CHECK(!has(&G, 0, "gpu.retired_pages.single_bit.count"));                          /* N/A */
    CHECK_EQ_STR(str(&G, 0, "gpu.nvsmi.driver_version"), "550.54.15");
    /* the second GPU: older ECC sections, old throttle section name, average power preferred */
    CHECK_NEAR(num(&G, 1, "gpu.index"), 1, 0);
    CHECK_NEAR(num(&G, 1, "gpu.ecc.corrected.volatile.count"), 2, 0);
    CHECK_NEAR(num(&G, 1, "gpu.ecc.uncorrected.volatile.count"), 0, 0);
    CHECK(json_is_true(field(&G, 1, "gpu.throttling.reason.hw_thermal_slowdown")));
    CHECK_NEAR(num(&G, 1, "gpu.retired_pages.single_bit.count"), 1, 0);
    CHECK(!has(&G, 1, "gpu.remapped_rows.pending"));                                   /* "Remapped Rows : N/A" */
    CHECK_NEAR(num(&G, 1, "gpu.power.usage"), 250, 0);
    CHECK(strcmp(str(&G, 0, "event.id"), str(&G, 1, "event.id")) != 0);
    /* a bad timestamp is said, with the line */
    run_text(&parser_smiq, "==============NVSMI LOG==============\nTimestamp : yesterday\n", &G);
    CHECK_EQ_INT(G.rejected, 1);
    CHECK(strstr(G.err, "Timestamp") != NULL);
}

/* A dump with one GPU whose memory health lines are given (NULL: a
 * healthy one), at minute m. */
static char *dump(int m, const char *health)
{
    static char buf[2048];
    snprintf(buf, sizeof buf,
             "==============NVSMI LOG==============\n"
             "Timestamp                                 : Tue Nov  5 10:%02d:00 2024\n"
             "Attached GPUs                             : 1\n"
             "GPU 00000000:07:00.0\n"
             "    Product Name                          : NVIDIA A100-SXM4-80GB\n"
             "%s"
             "    Temperature\n"
             "        GPU Current Temp                  : 50 C\n"
             "        GPU Slowdown Temp                 : 89 C\n",
             m, health ? health : "    Remapped Rows\n        Pending : No\n        Remapping Failure Occurred : No\n");
    return buf;
}

/* Feeds text through the auto parser into engine e. */
static void feed_engine(struct engine *e, const char *text)
{
    struct parser *p = parser_new(&parser_auto, (emit_fn)engine_feed, e);
    struct got g = { 0 };
    feed_text(p, &g, text);
    parser_flush(p);
    parser_free(p);
}

TEST(health_rule)
{
    char err[256];
    struct profile *prof = profile_load(NULL, "gpu", err, sizeof err);
    if (!prof) { printf("  %s\n", err); CHECK(0); return; }
    struct cap c;
    struct engine *e = cap_engine(&c, prof);
    feed_engine(e, dump(0, NULL));
    CHECK_EQ_INT(count_rec(&c, "gpu.health", "start"), 0);
    feed_engine(e, dump(1, "    Remapped Rows\n        Pending : Yes\n        Remapping Failure Occurred : No\n"));
    CHECK_EQ_INT(count_rec(&c, "gpu.health", "start"), 1);
    CHECK(strstr(c.out.p, "needs a reset") != NULL);
    CHECK(strstr(c.out.p, "\"event.severity\":2") != NULL);
    feed_engine(e, dump(2, NULL));
    CHECK_EQ_INT(count_rec(&c, "gpu.health", "end"), 1);
    feed_engine(e, dump(3, "    Remapped Rows\n        Pending : No\n        Remapping Failure Occurred : Yes\n"));
    CHECK_EQ_INT(count_rec(&c, "gpu.health", "start"), 2);
    CHECK(strstr(c.out.p, "needs repair: a row remapping failed") != NULL);
    CHECK(strstr(c.out.p, "RMA") != NULL);
    CHECK(strstr(c.out.p, "\"event.severity\":3") != NULL);
    cap_done(e, prof, &c);
    /* uncorrectable ECC since the last reset: drain and reset */
    prof = profile_load(NULL, "gpu", err, sizeof err);
    e = cap_engine(&c, prof);
    feed_engine(e, dump(0, "    ECC Errors\n        Volatile\n            DRAM Uncorrectable : 2\n"));
    CHECK_EQ_INT(count_rec(&c, "gpu.health", "start"), 1);
    CHECK(strstr(c.out.p, "2 uncorrectable ECC errors") != NULL);
    cap_done(e, prof, &c);
}

int main(void)
{
    gl_tz_set("UTC");
    RUN(dump_to_events);
    RUN(health_rule);
    got_clear(&G);
    return TEST_REPORT();
}
