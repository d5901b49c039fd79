/* detect_bench.c - detector throughput and memory: metric updates per second
 * on one core with the default GPU profile over a large generated trace held
 * in memory (dmon -s pucvmet shaped samples: 21 metrics per GPU sample), and
 * detector state bytes per series. Targets: >= 2 million updates/s, < 2 KB
 * per series. usage: detect_bench [hosts] [seconds] */
#include "../detect/engine.h"
#include "dmon_sample.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
                dmon_sample(e, names[h], h, g, s, t0, &temp[(h * 8 + g) % (8 * 1024)]);
            }
    char err[256];
    struct profile *p = profile_load(NULL, "gpu", err, sizeof err);
    if (!p) { fprintf(stderr, "detect_bench: %s\n", err); return 1; }
    struct engine *eng = engine_new(p, count, NULL);
    /* CPU time of this process (one thread): a shared, loaded machine
     * stretches wall time, not the work done */
    struct timespec a, b, wa, wb;
    clock_gettime(CLOCK_MONOTONIC, &wa);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    for (size_t i = 0; i < nev; i++) engine_feed(eng, &ev[i]);
    engine_flush(eng);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
    clock_gettime(CLOCK_MONOTONIC, &wb);
    double dt = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
    double wall = (wb.tv_sec - wa.tv_sec) + (wb.tv_nsec - wa.tv_nsec) / 1e9;
    const struct engine_stats *st = engine_get_stats(eng);
    double updates = (double)nev * NK;
    double ups = updates / dt;
    double per_series = (double)engine_memory(eng) / (double)st->series;
    printf("detect_bench: %zu samples (%d hosts x 8 GPUs x %d s), %.0f metric values in %.3f s of CPU (%.3f s wall)\n",
           nev, hosts, secs, updates, dt, wall);
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
