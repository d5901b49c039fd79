/* report_bench.c - the report page on a day of 8 GPUs at 1 s: 691,200
 * dmon-shaped samples (21 metrics each, dmon_sample.h) and 100 episodes fed to
 * report_event/report_record, then the page written. Prints the page size
 * and the time taken (wall and CPU, one core). Targets: page < 3 MB, built
 * in < 2 s. usage: report_bench [seconds] [gpus] [OUT.html] */
#include "../detect/report.h"
#include "dmon_sample.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Feeds one anomaly record of gpu (start or end) to r. */
static void record(struct report *r, int gpu, int64_t ts, const char *type, int k)
{
    struct event ev;
    event_init(&ev);
    ev.kind = "alert";
    ev.dataset = "gpu.anomaly";
    ev.host = "bench-node";
    ev.ts_ms = ts;
    char reason[160];
    int n = snprintf(reason, sizeof reason, "GPU %d on bench-node: injected episode %d of the benchmark", gpu, k);
    event_add_str(&ev, "event.type", type, strlen(type));
    event_add_str(&ev, "rule.id", "bench.rule", 10);
    event_add_int(&ev, "event.severity", 1 + k % 3);
    event_add_num(&ev, "event.risk_score", 20 + k % 70);
    event_add_int(&ev, "gpu.index", gpu);
    event_add_str(&ev, "event.reason", reason, (size_t)n);
    report_record(r, &ev);
    event_free(&ev);
}

int main(int argc, char **argv)
{
    long secs = argc > 1 ? atol(argv[1]) : 86400;
    int gpus = argc > 2 ? atoi(argv[2]) : 8;
    const char *out = argc > 3 ? argv[3] : "/dev/null";
    if (secs < 10) secs = 10;
    if (gpus < 1) gpus = 1;
    double *temp = xcalloc((size_t)gpus, sizeof *temp);
    double w0 = now_s(CLOCK_MONOTONIC), c0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
    struct report *r = report_new(NULL);
    struct event ev;
    event_init(&ev);
    int64_t t0 = 1762506000000LL;
    int ep = 0;
    for (long s = 0; s < secs; s++) {
        for (int g = 0; g < gpus; g++) {
            event_reset(&ev);
            dmon_sample(&ev, "bench-node", 0, g, (int)s, t0, &temp[g]);
            report_event(r, &ev);
        }
        if (s % (secs / 100 + 1) == 0 && ep < 100) {
            /* 100 start/end pairs over the day: episodes of ~5 min */
            record(r, ep % gpus, t0 + s * 1000, "start", ep);
            record(r, ep % gpus, t0 + s * 1000 + 300000, "end", ep);
            ep++;
        }
    }
    event_free(&ev);
    free(temp);
    char *page = NULL;
    size_t size = 0;
    FILE *m = open_memstream(&page, &size);
    struct report_info info = { "report_bench (generated)", "none", (uint64_t)secs * gpus, 0, 0 };
    if (!m || report_write(r, &info, m) != GL_OK || fclose(m) != 0) { perror("report"); return 1; }
    report_free(r);
    FILE *f = fopen(out, "w");
    if (!f || fwrite(page, 1, size, f) != size || fclose(f) != 0) { perror(out); return 1; }
    free(page);
    double wall = now_s(CLOCK_MONOTONIC) - w0, cpu = now_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
    double mb = (double)size / 1e6;
    printf("  %ld s x %d GPUs = %ld samples (%zu metrics each), %d episodes\n", secs, gpus, secs * gpus, NK, ep);
    printf("  page: %.2f MB (target < 3 MB: %s)\n", mb, mb < 3 ? "met" : "NOT met");
    printf("  built in %.2f s wall, %.2f s CPU, one core (target < 2 s: %s)\n", wall, cpu, cpu < 2 ? "met" : "NOT met");
    return mb < 3 && cpu < 2 ? 0 : 1;
}
