/*
 * test_jsonl.c - unit tests of parsers/jsonl.c: W&B system metrics (one
 * event per GPU, W&B's own keys: gpu, memory, memoryAllocated, powerPercent,
 * its bookkeeping left out, host metrics apart), flat and nested objects of
 * other loggers, an array of per-GPU objects, gpulog's own events passing
 * through, bad lines rejected with a reason, through --format auto too.
 */
#include "csv_harness.h"


static struct got G;

/* The index of the event of GPU gpu (-1: the one without gpu.index), -1 if none. */
static int ev_of(struct got *g, int gpu)
{
    for (int i = 0; i < g->n; i++) {
        int has_gpu = has(g, i, "gpu.index");
        if ((gpu < 0 && !has_gpu) || (gpu >= 0 && has_gpu && num(g, i, "gpu.index") == gpu)) return i;
    }
    return -1;
}

TEST(wandb_system_metrics)
{
    run_text(&parser_auto,
        "{\"system.gpu.0.gpu\": 98, \"system.gpu.0.memory\": 40, \"system.gpu.0.memoryAllocated\": 55.3, "
        "\"system.gpu.0.temp\": 71.0, \"system.gpu.0.powerWatts\": 251.5, \"system.gpu.0.powerPercent\": 83.8, "
        "\"system.gpu.1.gpu\": 97, \"system.gpu.1.temp\": 69.0, \"system.gpu.1.memory_allocated\": 12, "
        "\"system.gpu.process.0.temp\": 71.0, \"system.cpu\": 12.5, \"system.memory\": 30.1, "
        "\"_wandb\": true, \"_timestamp\": 1690000000.25, \"_runtime\": 30}\n", &G);
    CHECK_EQ_INT(G.rejected, 0);
    CHECK_EQ_INT(G.n, 3);
    /* the GPUs first */
    CHECK(has(&G, 0, "gpu.index"));
    int g0 = ev_of(&G, 0), g1 = ev_of(&G, 1), h = ev_of(&G, -1);
    CHECK(g0 >= 0 && g1 >= 0 && h >= 0);
    if (g0 < 0 || g1 < 0 || h < 0) return;
    CHECK_EQ_STR(str(&G, g0, "@timestamp"), "2023-07-22T04:26:40.250Z");
    CHECK_EQ_STR(str(&G, g0, "event.dataset"), "json.generic");
    CHECK_NEAR(num(&G, g0, "gpu.utilization.gpu.pct"), 98, 0);
    CHECK_NEAR(num(&G, g0, "gpu.utilization.memory_copy.pct"), 40, 0);
    CHECK_NEAR(num(&G, g0, "gpu.temperature.gpu"), 71, 0);
    CHECK_NEAR(num(&G, g0, "gpu.power.usage"), 251.5, 1e-9);
    CHECK_NEAR(num(&G, g0, "metrics.memory_allocated"), 55.3, 1e-9);
    CHECK_NEAR(num(&G, g0, "metrics.power_percent"), 83.8, 1e-9);
    CHECK(!has(&G, g0, "gpu.memory.framebuffer.used_size"));
    CHECK_NEAR(num(&G, g1, "gpu.temperature.gpu"), 69, 0);
    CHECK_NEAR(num(&G, g1, "metrics.memory_allocated"), 12, 0);   /* 2019's snake case, one series name */
    CHECK_NEAR(num(&G, h, "metrics.system_cpu"), 12.5, 1e-9);
    CHECK_NEAR(num(&G, h, "metrics.system_memory"), 30.1, 1e-9);  /* the host's memory, no GPU field */
    CHECK(!has(&G, h, "metrics.runtime"));
    CHECK(!has(&G, h, "metrics.wandb"));
    CHECK(strcmp(str(&G, g0, "event.id"), str(&G, g1, "event.id")) != 0);
}

TEST(other_loggers)
{
    /* flat, with unit suffixes and a GPU index */
    run_text(&parser_jsonl, "{\"time\": \"2024-05-01T10:00:00Z\", \"gpu\": 1, \"temp_c\": 61, \"power_w\": 120.5, "
                       "\"util_pct\": 50, \"mem_used_gib\": 2}\n", &G);
    CHECK_EQ_INT(G.n, 1);
    CHECK_NEAR(num(&G, 0, "gpu.index"), 1, 0);
    CHECK_NEAR(num(&G, 0, "gpu.temperature.gpu"), 61, 0);
    CHECK_NEAR(num(&G, 0, "gpu.memory.framebuffer.used_size"), 2048, 0);
    CHECK_EQ_STR(str(&G, 0, "@timestamp"), "2024-05-01T10:00:00.000Z");
    /* nested objects flatten with '.'; an array of per-GPU objects is one event each */
    run_text(&parser_jsonl, "{\"hostname\": \"node7\", \"query_time\": \"2024-05-01T10:00:00Z\", \"gpus\": ["
                       "{\"index\": 0, \"name\": \"NVIDIA A100\", \"temperature.gpu\": 40, \"power\": {\"draw\": 60}, "
                       "\"processes\": [{\"pid\": 1}]}, {\"index\": 1, \"temperature.gpu\": 42}]}\n", &G);
    CHECK_EQ_INT(G.rejected, 0);
    CHECK_EQ_INT(G.n, 2);
    CHECK_EQ_STR(str(&G, 0, "host.name"), "node7");
    CHECK_NEAR(num(&G, 0, "gpu.index"), 0, 0);
    CHECK_EQ_STR(str(&G, 0, "gpu.name"), "NVIDIA A100");
    CHECK_NEAR(num(&G, 0, "gpu.power.usage"), 60, 0);
    CHECK_NEAR(num(&G, 1, "gpu.temperature.gpu"), 42, 0);
    CHECK_EQ_STR(str(&G, 1, "@timestamp"), "2024-05-01T10:00:00.000Z");
    /* a line about no GPU: generic words stay metrics */
    run_text(&parser_jsonl, "{\"ts\": 1700000000, \"temp\": 21.5, \"humidity\": 40, \"site\": \"lab\"}\n", &G);
    CHECK_EQ_INT(G.n, 1);
    CHECK_NEAR(num(&G, 0, "metrics.temp"), 21.5, 1e-9);
    CHECK_EQ_STR(str(&G, 0, "labels.site"), "lab");
}

TEST(gpulog_events_pass_through)
{
    run_text(&parser_auto, "{\"@timestamp\":\"2024-05-01T10:00:00.000Z\",\"event.kind\":\"metric\",\"event.dataset\":\"gpu.dmon\","
                      "\"event.id\":\"491cf2cbef395d169ba9d9a62f38113f\",\"host.name\":\"n1\",\"agent.name\":\"gpulog\","
                      "\"agent.version\":\"0.1.0\",\"gpu.index\":3,\"gpu.power.usage\":37}\n", &G);
    CHECK_EQ_INT(G.n, 1);
    CHECK_EQ_STR(str(&G, 0, "event.id"), "491cf2cbef395d169ba9d9a62f38113f");
    CHECK_EQ_STR(str(&G, 0, "event.dataset"), "gpu.dmon");
    CHECK_EQ_STR(str(&G, 0, "host.name"), "n1");
    CHECK_NEAR(num(&G, 0, "gpu.index"), 3, 0);
}

TEST(bad_lines)
{
    run_text(&parser_jsonl, "{\"a\": 1,\n[1,2]\n{\"gpu\": \"x7\", \"temp_gpu\": 50}\n{\"gpu\": 0, \"gpu_temp\": \"hot\"}\n"
                       "{\"gpu\": 0, \"gpu_temp\": \"N/A\", \"gpu_power_w\": 99}\n", &G);
    CHECK_EQ_INT(G.rejected, 4);
    CHECK_EQ_INT(G.n, 1);
    CHECK(!has(&G, 0, "gpu.temperature.gpu"));
    CHECK_NEAR(num(&G, 0, "gpu.power.usage"), 99, 0);
    char deep[256] = "{";
    for (int i = 0; i < 12; i++) strcat(deep, "\"k\":{");
    strcat(deep, "\"v\":1");
    for (int i = 0; i < 12; i++) strcat(deep, "}");
    strcat(deep, "}\n");
    run_text(&parser_jsonl, deep, &G);
    CHECK_EQ_INT(G.rejected, 1);
    CHECK(strstr(G.err, "deeper") != NULL);
}

int main(void)
{
    gl_tz_set("UTC");
    RUN(wandb_system_metrics);
    RUN(other_loggers);
    RUN(gpulog_events_pass_through);
    RUN(bad_lines);
    got_clear(&G);
    return TEST_REPORT();
}
