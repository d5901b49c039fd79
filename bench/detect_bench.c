/* detect_bench.c - detector throughput and memory: metric updates per second
 * on one core with the default GPU profile over a large generated trace held
 * in memory (dmon -s pucvmet shaped samples: 21 metrics per GPU sample), and
 * detector state bytes per series. Targets: >= 2 million updates/s, < 2 KB
 * per series. usage: detect_bench [hosts] [seconds] */
#include "../detect/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static uint64_t nrec;
static void count(void *ctx, const struct event *r) { (void)ctx; (void)r; nrec++; }

int main(int argc, char **argv)
{
    int hosts = argc > 1 ? atoi(argv[1]) : 32;
    int secs = argc > 2 ? atoi(argv[2]) : 900;
    if (hosts < 1) hosts = 1;
    if (secs < 10) secs = 10;
    size_t nev = (size_t)hosts * 8 * secs;
    struct event *ev = xcalloc(nev, sizeof *ev);
    char (*names)[16] = xcalloc((size_t)hosts, 16);
    for (int h = 0; h < hosts; h++) snprintf(names[h], 16, "node-%d", h);
    int64_t t0 = 1762473600000LL;
    size_t k = 0;
    double temp[8 * 1024] = { 0 };
    for (int s = 0; s < secs; s++)
        for (int h = 0; h < hosts; h++)
            for (int g = 0; g < 8; g++, k++) {
                struct event *e = &ev[k];
                event_init(e);
                e->kind = "metric";
                e->dataset = "gpu.dmon";
                e->host = names[h];
                e->offset = -1;
                e->ts_ms = t0 + s * 1000LL;
                int busy = ((s / 300) + h + (g / 4)) % 3 != 0;
                double pw = busy ? 550 + 30 * urand() : 70 + 4 * urand();
                double *tp = &temp[(h * 8 + g) % (8 * 1024)];
                if (*tp == 0) *tp = 35;
                *tp += (30 + pw * 0.068 - *tp) / 25;
                event_add_int(e, "gpu.index", g);
                double v[NK] = { pw, *tp, *tp + 4, busy ? 97 + 3 * urand() : 0, busy ? 40 : 0, 0, 0, 0, 0, 2619,
                                 busy ? 1980 : 345, 0, 0, busy ? 60000 : 300, 5, 0, 12, 0, 40,
                                 busy ? 120 + 10 * urand() : 1, busy ? 90 : 1 };
                for (size_t i = 0; i < NK; i++) event_add_int(e, keys[i], (int64_t)v[i]);
            }
    char err[256];
    struct profile *p = profile_load(NULL, "gpu", err, sizeof err);
    if (!p) { fprintf(stderr, "detect_bench: %s\n", err); return 1; }
    struct engine *eng = engine_new(p, count, NULL);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (size_t i = 0; i < nev; i++) engine_feed(eng, &ev[i]);
    engine_flush(eng);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double dt = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
    const struct engine_stats *st = engine_get_stats(eng);
    double updates = (double)nev * NK;
    double ups = updates / dt;
    double per_series = (double)engine_memory(eng) / (double)st->series;
    printf("detect_bench: %zu samples (%d hosts x 8 GPUs x %d s), %.0f metric values in %.3f s\n", nev, hosts, secs,
           updates, dt);
    double per_gpu = (double)st->series / (double)st->gpus;
    printf("detect_bench: %.2f million metric updates/s on one core (all %zu fields of each sample; %.2f million/s "
           "counting only the %.0f tracked series per GPU; %.2f million samples/s, %.2f million rule verdicts/s)\n",
           ups / 1e6, NK, nev * per_gpu / dt / 1e6, per_gpu, nev / dt / 1e6, st->updates / dt / 1e6);
    printf("detect_bench: %llu series (tracked metrics), %zu bytes of detector state: %.0f bytes per series\n",
           (unsigned long long)st->series, engine_memory(eng), per_series);
    printf("detect_bench: %llu anomaly records\n", (unsigned long long)nrec);
    printf("detect_bench: targets >= 2 million updates/s: %s; < 2048 bytes per series: %s\n",
           ups >= 2e6 ? "met" : "NOT met", per_series < 2048 ? "met" : "NOT met");
    engine_free(eng);
    profile_free(p);
    for (size_t i = 0; i < nev; i++) event_free(&ev[i]);
    free(ev);
    free(names);
    return 0;
}
