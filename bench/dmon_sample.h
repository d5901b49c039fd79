/*
 * dmon_sample.h - the generated samples the in-memory benchmarks share
 * (detect_bench, report_bench): one `nvidia-smi dmon -s pucvmet` shaped
 * metric event per GPU and second, 21 metrics, GPUs busy two 5-minute
 * periods in three, temperature following the power drawn.
 */
#ifndef GPULOG_BENCH_DMON_SAMPLE_H
#define GPULOG_BENCH_DMON_SAMPLE_H

#include "../core/event.h"

static const char *const keys[] = {
    "gpu.power.usage", "gpu.temperature.gpu", "gpu.temperature.memory", "gpu.utilization.gpu.pct",
    "gpu.utilization.memory_copy.pct", "gpu.utilization.encoder.pct", "gpu.utilization.decoder.pct",
    "gpu.utilization.jpeg.pct", "gpu.utilization.ofa.pct", "gpu.clock.mem_frequency",
    "gpu.clock.streaming_multiprocessor_frequency", "gpu.throttling.power.pct", "gpu.throttling.thermal.active",
    "gpu.memory.framebuffer.used_size", "gpu.memory.bar1.used_size", "gpu.memory.protected.used_size",
    "gpu.ecc.single_bit.count", "gpu.ecc.double_bit.count", "gpu.pcie.replay", "gpu.pcie.rx.throughput",
    "gpu.pcie.tx.throughput",
};
#define NK (sizeof keys / sizeof keys[0])

static uint64_t rs = 88172645463325252ULL;
static double urand(void)
{
    rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17;
    return (rs >> 11) * (1.0 / 9007199254740992.0);
}

/* Fills e (initialised or reset by the caller, who owns it) with the sample
 * of GPU g of host number h named host at second s after t0; *tp is that
 * GPU's temperature state (0 at first). */
static void dmon_sample(struct event *e, const char *host, int h, int g, int s, int64_t t0, double *tp)
{
    e->kind = "metric";
    e->dataset = "gpu.dmon";
    e->host = host;
    e->offset = -1;
    e->ts_ms = t0 + s * 1000LL;
    int busy = ((s / 300) + h + (g / 4)) % 3 != 0;
    double pw = busy ? 550 + 30 * urand() : 70 + 4 * urand();
    if (*tp == 0) *tp = 35;
    *tp += (30 + pw * 0.068 - *tp) / 25;
    event_add_int(e, "gpu.index", g);
    double v[NK] = { pw, *tp, *tp + 4, busy ? 97 + 3 * urand() : 0, busy ? 40 : 0, 0, 0, 0, 0, 2619,
                     busy ? 1980 : 345, 0, 0, busy ? 60000 : 300, 5, 0, 12, 0, 40,
                     busy ? 120 + 10 * urand() : 1, busy ? 90 : 1 };
    for (size_t i = 0; i < NK; i++) event_add_int(e, keys[i], (int64_t)v[i]);
}

#endif
