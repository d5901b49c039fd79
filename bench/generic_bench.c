/* generic_bench.c - the generic detector's cost (make bench): CPU time per
 * metric update and detector state per series with `--profile generic`
 * (the seasonal likelihood rule on every numeric field), measured in the
 * same run next to two baselines on the same samples: the plain
 * `likelihood` detector (no daily or weekly model) and a rolling z-score
 * (`zscore` over the engine's 64-sample window, the kind of detector the
 * rolling-Gaussian baseline of `make eval` is), and the generic profile
 * with its confirming view off (`confirm` 0: its cost) and with its
 * lone-sample view off (`point` 0: its cost). The samples, held in
 * memory: host-level series as a generic CSV gives them (no GPU index),
 * `metrics.cNN` fields every 5 minutes, a daily cycle, noise and a spike
 * now and then. Each profile runs `reps` times (best CPU time kept),
 * alternating, on a fresh engine. usage: generic_bench [hosts] [days]
 * [fields] [reps] (defaults 10 30 40 3: 400 series of 8,640 samples). */
#include "../detect/engine.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_FIELDS 64

static uint64_t nrec;
static void count(void *ctx, const struct event *r) { (void)ctx; (void)r; nrec++; }

static uint64_t rs = 0x9E3779B97F4A7C15ULL;
static double urand(void)
{
    rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17;
    return (rs >> 11) * (1.0 / 9007199254740992.0);
}

static const char *const profiles[][2] = {
    { "generic profile (seasonal likelihood)", "{\"extends\": \"generic\"}" },
    { "generic profile, no confirming view", "{\"extends\": \"generic\", \"rules\": [{\"id\": \"metric.likelihood\", \"params\": {\"confirm\": 0}}]}" },
    { "generic profile, no lone-sample view", "{\"extends\": \"generic\", \"rules\": [{\"id\": \"metric.likelihood\", \"params\": {\"point\": 0}}]}" },
    { "baseline: plain likelihood", "{\"extends\": \"generic\", \"rules\": [{\"id\": \"metric.likelihood\", \"detector\": \"likelihood\"}]}" },
    { "baseline: rolling z-score (64)", "{\"extends\": \"generic\", \"rules\": [{\"id\": \"metric.likelihood\", \"detector\": \"zscore\"}]}" },
};
#define NPROF (sizeof profiles / sizeof profiles[0])
/* the rows of profiles[], in order */
enum { P_GENERIC, P_NO_CONFIRM, P_NO_POINT, P_PLAIN, P_ZSCORE };

/* One run of profile json over the nev events ev (the caller's, read
 * only): CPU seconds, bytes of detector state per series, records. */
static int run(const char *json, const struct event *ev, size_t nev, double *cpu, double *per_series, uint64_t *recs,
               uint64_t *series)
{
    char err[256];
    struct profile *p = profile_from_json(json, strlen(json), err, sizeof err);
    if (!p) { fprintf(stderr, "generic_bench: %s\n", err); return -1; }
    struct engine *e = engine_new(p, count, NULL);
    nrec = 0;
    struct timespec a, b;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    for (size_t i = 0; i < nev; i++) engine_feed(e, &ev[i]);
    engine_flush(e);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
    *cpu = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
    const struct engine_stats *st = engine_get_stats(e);
    *series = st->series;
    *per_series = st->series ? (double)engine_memory(e) / (double)st->series : 0;
    *recs = nrec;
    engine_free(e);
    profile_free(p);
    return 0;
}

int main(int argc, char **argv)
{
    int hosts = argc > 1 ? atoi(argv[1]) : 10;
    int days = argc > 2 ? atoi(argv[2]) : 30;
    int fields = argc > 3 ? atoi(argv[3]) : 40;
    int reps = argc > 4 ? atoi(argv[4]) : 3;
    if (hosts < 1) hosts = 1;
    if (days < 1) days = 1;
    if (fields < 1) fields = 1;
    if (fields > MAX_FIELDS) fields = MAX_FIELDS;
    if (reps < 1) reps = 1;
    int steps = days * 288;
    size_t nev = (size_t)hosts * (size_t)steps;
    struct event *ev = calloc(nev, sizeof *ev);
    char (*hn)[16] = calloc((size_t)hosts, 16);
    static char key[MAX_FIELDS][24];
    double base[MAX_FIELDS], amp[MAX_FIELDS], sd[MAX_FIELDS];
    if (!ev || !hn) { fprintf(stderr, "generic_bench: out of memory\n"); return 1; }
    for (int f = 0; f < fields; f++) {
        snprintf(key[f], sizeof key[f], "metrics.c%02d", f);
        base[f] = 10 + 1000 * urand(); amp[f] = base[f] * 0.5 * urand(); sd[f] = base[f] * (0.01 + 0.05 * urand());
    }
    for (int h = 0; h < hosts; h++) snprintf(hn[h], sizeof hn[h], "host-%d", h);
    int64_t t0 = 1762473600000LL;
    size_t k = 0;
    for (int s = 0; s < steps; s++)
        for (int h = 0; h < hosts; h++, k++) {
            struct event *e = &ev[k];
            event_init(e);
            e->kind = "metric"; e->dataset = "csv.generic"; e->host = hn[h]; e->offset = -1;
            e->ts_ms = t0 + (int64_t)s * 300000;
            double day = sin(2 * M_PI * s / 288.0);
            for (int f = 0; f < fields; f++) {
                double g = sqrt(-2 * log(urand() + 1e-300)) * cos(2 * M_PI * urand());
                double v = base[f] + amp[f] * day + sd[f] * g + (urand() < 0.0005 ? 10 * sd[f] : 0);
                event_add_num(e, key[f], v);
            }
        }
    double best[NPROF], per[NPROF];
    uint64_t recs[NPROF], series[NPROF];
    for (size_t i = 0; i < NPROF; i++) best[i] = -1;
    for (int r = 0; r < reps; r++)
        for (size_t i = 0; i < NPROF; i++) {
            double c;
            if (run(profiles[i][1], ev, nev, &c, &per[i], &recs[i], &series[i]) < 0) return 1;
            if (best[i] < 0 || c < best[i]) best[i] = c;
        }
    double updates = (double)nev * fields;
    printf("generic_bench: %zu samples (%d hosts x %d fields every 5 min for %d days): %.0f metric updates, best of %d, one core\n",
           nev, hosts, fields, days, updates, reps);
    printf("  %-40s %12s %14s %12s %9s\n", "profile", "ns/update", "M updates/s", "bytes/series", "records");
    for (size_t i = 0; i < NPROF; i++)
        printf("  %-40s %12.1f %14.2f %12.0f %9llu\n", profiles[i][0], best[i] / updates * 1e9, updates / best[i] / 1e6,
               per[i], (unsigned long long)recs[i]);
    printf("generic_bench: %llu series; the generic profile costs %.2f x the plain likelihood and %.2f x the rolling z-score per update"
           " (its confirming view %.1f ns of it, its lone-sample view %.1f ns)\n",
           (unsigned long long)series[0], best[P_GENERIC] / best[P_PLAIN], best[P_GENERIC] / best[P_ZSCORE],
           (best[P_GENERIC] - best[P_NO_CONFIRM]) / updates * 1e9, (best[P_GENERIC] - best[P_NO_POINT]) / updates * 1e9);
    for (size_t i = 0; i < nev; i++) event_free(&ev[i]);
    free(ev);
    free(hn);
    return 0;
}
