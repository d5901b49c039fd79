/*
 * metrics_bench.c - one /metrics scrape with N GPUs in the GPU table
 * (core/gpumetrics.c): render time (best and median of R renders, the
 * whole exposition as httpd.c serves it), bytes, series, the memory the
 * table took per GPU, and the size of the same DCGM_* series in
 * dcgm-exporter's label set (pci_bus_id as 00000000:BB:DD.0 and
 * DCGM_FI_DRIVER_VERSION on every series).
 *   metrics_bench N [R]     (defaults: 10000 GPUs, 20 renders)
 * Each GPU gets two samples of every dmon -s pucvmet field plus the
 * query-csv identity (UUID, name, bus id, total memory), 8 GPUs per host.
 */
#include "../core/gpumetrics.h"
#include "../core/metrics.h"
#include "../core/event.h"
#include "../core/common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* One GPU sample with every field gpulog maps (dmon pucvmet + identity). */
static void fill(struct event *ev, const char *host, int g, int64_t ts)
{
    event_reset(ev);
    ev->kind = "metric";
    ev->dataset = "gpu.dmon";
    ev->host = host;
    ev->ts_ms = ts;
    ev->offset = -1;
    char uuid[48], bus[24];
    snprintf(uuid, sizeof uuid, "GPU-%08x-0000-4000-8000-%012d", g, g);
    snprintf(bus, sizeof bus, "00000000:%02X:00.0", 0x18 + (g % 8) * 16);
    event_add_int(ev, "gpu.index", g % 8);
    event_add_str(ev, "gpu.uuid", uuid, strlen(uuid));
    event_add_str(ev, "gpu.name", "NVIDIA H100 80GB HBM3", 21);
    event_add_str(ev, "gpu.pci.bus_id", bus, strlen(bus));
    static const char *const keys[] = {
        "gpu.power.usage", "gpu.temperature.gpu", "gpu.temperature.memory", "gpu.utilization.gpu.pct",
        "gpu.utilization.memory_copy.pct", "gpu.utilization.encoder.pct", "gpu.utilization.decoder.pct",
        "gpu.utilization.jpeg.pct", "gpu.utilization.ofa.pct", "gpu.clock.mem_frequency",
        "gpu.clock.streaming_multiprocessor_frequency", "gpu.throttling.power.pct", "gpu.throttling.thermal.active",
        "gpu.memory.framebuffer.used_size", "gpu.memory.framebuffer.total_size", "gpu.memory.bar1.used_size",
        "gpu.memory.protected.used_size", "gpu.ecc.single_bit.count", "gpu.ecc.double_bit.count", "gpu.pcie.replay",
        "gpu.pcie.rx.throughput", "gpu.pcie.tx.throughput" };
    for (size_t i = 0; i < GL_ARRAY_LEN(keys); i++) event_add_int(ev, keys[i], (int64_t)(g % 97 + i * 13));
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 10000, reps = argc > 2 ? atoi(argv[2]) : 20;
    if (n < 1 || reps < 1) { fprintf(stderr, "usage: metrics_bench N [R]\n"); return 2; }
    gpumetrics_configure("on", 1, 3, n);
    struct event ev;
    event_init(&ev);
    int64_t rss0 = gl_rss_bytes();
    int64_t t0 = gl_now_ms();
    char host[32];
    for (int t = 0; t < 2; t++)
        for (int g = 0; g < n; g++) {
            snprintf(host, sizeof host, "gpu-node-%05d", g / 8);
            fill(&ev, host, g, 1762506000000LL + t * 1000);
            gpumetrics_observe(&ev);
        }
    int64_t feed_ms = gl_now_ms() - t0;
    int64_t rss1 = gl_rss_bytes();
    struct buf b;
    buf_init(&b);
    int64_t *ns = malloc(sizeof *ns * (size_t)reps);
    struct timespec a, z;
    for (int r = 0; r < reps; r++) {
        buf_reset(&b);
        clock_gettime(CLOCK_MONOTONIC, &a);
        metrics_render(&b);
        clock_gettime(CLOCK_MONOTONIC, &z);
        ns[r] = (z.tv_sec - a.tv_sec) * 1000000000LL + (z.tv_nsec - a.tv_nsec);
    }
    qsort(ns, (size_t)reps, sizeof *ns, cmp_i64);
    /* series, and the bytes of the DCGM_* lines with dcgm-exporter's labels */
    size_t series = 0, dcgm_ours = 0, dcgm_theirs = 0;
    static const char driver[] = ",DCGM_FI_DRIVER_VERSION=\"550.54.15\"";
    for (const char *p = b.p; *p;) {
        const char *e = strchr(p, '\n');
        if (!e) break;
        if (*p != '#') series++;
        if (!strncmp(p, "DCGM_", 5)) {
            size_t len = (size_t)(e - p) + 1;
            dcgm_ours += len;
            /* pci_bus_id "0000:bb:dd" (10) is "00000000:BB:DD.0" (16) there */
            dcgm_theirs += len + (sizeof driver - 1) + (memmem(p, len, "pci_bus_id=", 11) ? 6 : 0);
        }
        p = e + 1;
    }
    printf("  %6d GPUs: /metrics render best %.2f ms, median %.2f ms; %zu bytes (%.1f MB), %zu series; "
           "table %.2f KiB/GPU (RSS growth), fed 2 samples/GPU in %lld ms\n",
           n, ns[0] / 1e6, ns[reps / 2] / 1e6, b.len, b.len / 1e6, series,
           rss1 >= 0 && rss0 >= 0 ? (double)(rss1 - rss0) / 1024.0 / n : -1.0, (long long)feed_ms);
    printf("          DCGM_* series: %zu bytes here, %zu bytes with dcgm-exporter's labels (+%.0f %%)\n",
           dcgm_ours, dcgm_theirs, dcgm_ours ? 100.0 * ((double)dcgm_theirs - (double)dcgm_ours) / (double)dcgm_ours : 0);
    int rc = gpumetrics_up(gl_now_ms()) == (size_t)n ? 0 : 1;
    if (rc) fprintf(stderr, "metrics_bench: not every GPU is up\n");
    free(ns);
    buf_free(&b);
    event_free(&ev);
    return rc;
}
