/*
 * gpumetrics.c - the GPU metrics table (latest value per host and GPU), the
 * Xid counts and the open anomalies, rendered for /metrics. See gpumetrics.h.
 */
#include "gpumetrics.h"
#include "metrics.h"
#include "event.h"
#include "common.h"
#include "config.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum gm_type { GM_GAUGE, GM_COUNTER };

/* One exposed family fed by one event field. Names, types and units of the
 * DCGM_* rows follow dcgm-exporter's default-counters.csv (and the DCGM
 * field of that name where the row is commented out there). */
struct gm_field {
    const char *key;        /* event field (schema v1) */
    const char *name;       /* exposed name */
    enum gm_type type;
    const char *help;
};

static const struct gm_field fields[] = {
    { "gpu.clock.streaming_multiprocessor_frequency", "DCGM_FI_DEV_SM_CLOCK", GM_GAUGE, "SM clock frequency (in MHz)." },
    { "gpu.clock.mem_frequency", "DCGM_FI_DEV_MEM_CLOCK", GM_GAUGE, "Memory clock frequency (in MHz)." },
    { "gpu.temperature.memory", "DCGM_FI_DEV_MEMORY_TEMP", GM_GAUGE, "Memory temperature (in C)." },
    { "gpu.temperature.gpu", "DCGM_FI_DEV_GPU_TEMP", GM_GAUGE, "GPU temperature (in C)." },
    { "gpu.power.usage", "DCGM_FI_DEV_POWER_USAGE", GM_GAUGE, "Power draw (in W)." },
    { "gpu.power.limit", "DCGM_FI_DEV_POWER_MGMT_LIMIT", GM_GAUGE, "Power management limit (in W)." },
    { "gpu.pcie.replay", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", GM_COUNTER, "Total number of PCIe retries." },
    { "gpu.utilization.gpu.pct", "DCGM_FI_DEV_GPU_UTIL", GM_GAUGE, "GPU utilization (in %)." },
    { "gpu.utilization.memory_copy.pct", "DCGM_FI_DEV_MEM_COPY_UTIL", GM_GAUGE, "Memory utilization (in %)." },
    { "gpu.utilization.encoder.pct", "DCGM_FI_DEV_ENC_UTIL", GM_GAUGE, "Encoder utilization (in %)." },
    { "gpu.utilization.decoder.pct", "DCGM_FI_DEV_DEC_UTIL", GM_GAUGE, "Decoder utilization (in %)." },
    { "gpu.memory.framebuffer.free_size", "DCGM_FI_DEV_FB_FREE", GM_GAUGE, "Framebuffer memory free (in MiB)." },
    { "gpu.memory.framebuffer.used_size", "DCGM_FI_DEV_FB_USED", GM_GAUGE, "Framebuffer memory used (in MiB)." },
    { "gpu.memory.framebuffer.total_size", "DCGM_FI_DEV_FB_TOTAL", GM_GAUGE, "Framebuffer memory total (in MiB)." },
    { "gpu.ecc.single_bit.count", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", GM_COUNTER, "Total number of single-bit volatile ECC errors." },
    { "gpu.ecc.double_bit.count", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", GM_COUNTER, "Total number of double-bit volatile ECC errors." },
    { "gpu.ecc.corrected.volatile.count", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", GM_COUNTER, NULL },   /* query-csv twin */
    { "gpu.ecc.uncorrected.volatile.count", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", GM_COUNTER, NULL },
    { "gpu.fan.speed.pct", "DCGM_FI_DEV_FAN_SPEED", GM_GAUGE, "Fan speed (in %)." },
    { "gpu.throttling.reasons", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", GM_GAUGE, "Current clock throttle reasons (bitmask of nvmlClocksThrottleReasons)." },
    /* what dcgm-exporter does not have under these units */
    { "gpu.clock.graphics_frequency", "gpulog_gpu_graphics_clock_mhz", GM_GAUGE, "Graphics clock frequency (in MHz)." },
    { "gpu.utilization.jpeg.pct", "gpulog_gpu_jpg_util_percent", GM_GAUGE, "JPEG decoder utilization (in %), dmon jpg." },
    { "gpu.utilization.ofa.pct", "gpulog_gpu_ofa_util_percent", GM_GAUGE, "Optical flow accelerator utilization (in %), dmon ofa." },
    { "gpu.memory.bar1.used_size", "gpulog_gpu_bar1_used_mib", GM_GAUGE, "BAR1 memory used (in MiB), dmon bar1." },
    { "gpu.memory.protected.used_size", "gpulog_gpu_protected_memory_used_mib", GM_GAUGE, "Protected (confidential computing) memory used (in MiB), dmon ccpm." },
    { "gpu.throttling.power.pct", "gpulog_gpu_power_violation_percent", GM_GAUGE, "Share of the last sample period the GPU was held back by its power limit (in %), dmon pviol." },
    { "gpu.throttling.thermal.active", "gpulog_gpu_thermal_violation_active", GM_GAUGE, "1 while the GPU is held back by a thermal limit, dmon tviol." },
    { "gpu.pcie.rx.throughput", "gpulog_gpu_pcie_rx_mb_per_second", GM_GAUGE, "PCIe receive throughput (in MB/s), dmon rxpci." },
    { "gpu.pcie.tx.throughput", "gpulog_gpu_pcie_tx_mb_per_second", GM_GAUGE, "PCIe transmit throughput (in MB/s), dmon txpci." },
};
#define GM_NF GL_ARRAY_LEN(fields)
enum { F_FB_FREE = 11, F_FB_USED = 12, F_FB_TOTAL = 13, F_PVIOL = 25, F_TVIOL = 26 };
/* derived counters: violation time accumulated from pviol/tviol and the period */
enum { D_POWER_VIOL, D_THERMAL_VIOL, D__N };

struct gm_gpu {
    int host;                   /* index into hosts[] */
    int index;                  /* gpu.index; -1 = known by bus id only (an Xid) */
    char bus[16];               /* normalised "dddd:bb:dd"; "" = unknown */
    char uuid[48], model[64];
    int sampled;                /* a metric sample seen (rows made by an Xid alone are not) */
    uint64_t have;              /* bit i: fields[i] holds a value */
    double v[GM_NF];
    int64_t fts[GM_NF];         /* event time of each field's value */
    double viol_us[D__N];
    int have_viol[D__N];
    int64_t last_ts, period_ms, seen_ms;
    int64_t xid_last;           /* DCGM_FI_DEV_XID_ERRORS; -1 none */
    char *labels;               /* rendered {gpu="0",UUID=...}, rebuilt when a label changes */
};

struct gm_host { char name[64]; int64_t newest_ts; };

struct gm_xid { int host; int code; int sx; char sev[12]; char name[40]; uint64_t n; };
struct gm_anom { int host; int gpu; char rule[48]; char metric[64]; int sev; double risk; };

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int enabled;
static _Atomic int tracking = 1;   /* 0: no /metrics server, nothing is kept at all */
static int64_t stale_periods = 3;
static size_t max_gpus = 16384;
static struct gm_gpu *gpus;         /* rows [0, ngpus) */
static size_t ngpus, capgpus;
static uint32_t *gidx;              /* open addressing: row + 1, 0 = empty */
static size_t gmask;
static struct gm_host *hosts;
static size_t nhosts, caphosts;
static uint32_t *hidx;
static size_t hmask;
static struct gm_xid xids[GM_MAX_XID];
static size_t nxids;
static struct gm_anom *anoms;       /* GM_MAX_ANOMALIES, allocated on first use */
static size_t nanoms;
static uint64_t rows_dropped, anoms_dropped, xid_dropped;

/* ------------------------------------------------------------ key index */

static uint64_t gpu_hash(int host, int index, const char *bus)
{
    uint64_t h = hash64(&host, sizeof host, 0x9e3779b97f4a7c15ull);
    if (index >= 0) return hash64(&index, sizeof index, h);
    return hash64(bus, strlen(bus), h ^ 1);
}

static int gpu_match(const struct gm_gpu *g, int host, int index, const char *bus)
{
    if (g->host != host) return 0;
    if (index >= 0) return g->index == index;
    return g->index < 0 && !strcmp(g->bus, bus);
}

/* Puts entry r (hash h) into an open-addressing index of entry + 1. */
static void index_put(uint32_t *idx, size_t mask, uint64_t h, size_t r)
{
    size_t i = h & mask;
    while (idx[i]) i = (i + 1) & mask;
    idx[i] = (uint32_t)r + 1;
}

/* A fresh, empty index for n entries (load at most 1/2); the old one is freed. */
static uint32_t *index_new(uint32_t *old, size_t n, size_t *mask)
{
    size_t sz = 64;
    while (sz < n * 2 + 2) sz <<= 1;
    free(old);
    *mask = sz - 1;
    return xcalloc(sz, sizeof *old);
}

static uint64_t row_hash(size_t r)
{
    return gpu_hash(gpus[r].host, gpus[r].index, gpus[r].bus);
}

static uint64_t host_hash(size_t r)
{
    return hash64(hosts[r].name, strlen(hosts[r].name), 7);
}

static void gidx_rebuild(void)
{
    gidx = index_new(gidx, ngpus, &gmask);
    for (size_t r = 0; r < ngpus; r++) index_put(gidx, gmask, row_hash(r), r);
}

static struct gm_gpu *gpu_find(int host, int index, const char *bus)
{
    if (!gidx) return NULL;
    for (size_t i = gpu_hash(host, index, bus) & gmask; gidx[i]; i = (i + 1) & gmask)
        if (gpu_match(&gpus[gidx[i] - 1], host, index, bus)) return &gpus[gidx[i] - 1];
    return NULL;
}

static void hidx_rebuild(void)
{
    hidx = index_new(hidx, nhosts, &hmask);
    for (size_t r = 0; r < nhosts; r++) index_put(hidx, hmask, host_hash(r), r);
}

/* Drops the hosts no row, Xid count or anomaly refers to any more. */
static void hosts_gc(void)
{
    int *map = xmalloc(nhosts * sizeof *map);
    for (size_t h = 0; h < nhosts; h++) map[h] = -1;
    for (size_t r = 0; r < ngpus; r++) map[gpus[r].host] = 0;
    for (size_t i = 0; i < nxids; i++) map[xids[i].host] = 0;
    for (size_t i = 0; i < nanoms; i++) map[anoms[i].host] = 0;
    size_t n = 0;
    for (size_t h = 0; h < nhosts; h++)
        if (map[h] == 0) {
            hosts[n] = hosts[h];
            map[h] = (int)n++;
        }
    nhosts = n;
    for (size_t r = 0; r < ngpus; r++) gpus[r].host = map[gpus[r].host];
    for (size_t i = 0; i < nxids; i++) xids[i].host = map[xids[i].host];
    for (size_t i = 0; i < nanoms; i++) anoms[i].host = map[anoms[i].host];
    free(map);
    hidx_rebuild();
    gidx_rebuild();
}

/* The host's slot, added when new; -1 when the host table is full (it
 * holds at most as many hosts as rows, Xid counts and anomalies). */
static int host_of(const char *name)
{
    if (!name) name = "";
    size_t n = strlen(name);
    if (n > 63) n = 63;
    uint64_t h = hash64(name, n, 7);
    if (hidx)
        for (size_t i = h & hmask; hidx[i]; i = (i + 1) & hmask) {
            struct gm_host *x = &hosts[hidx[i] - 1];
            if (!strncmp(x->name, name, n) && x->name[n] == '\0') return (int)(hidx[i] - 1);
        }
    if (nhosts >= max_gpus + GM_MAX_XID + GM_MAX_ANOMALIES) {
        hosts_gc();
        if (nhosts >= max_gpus + GM_MAX_XID + GM_MAX_ANOMALIES) return -1;
    }
    if (nhosts == caphosts) {
        caphosts = caphosts ? caphosts * 2 : 16;
        hosts = xrealloc(hosts, caphosts * sizeof *hosts);
    }
    struct gm_host *x = &hosts[nhosts++];
    memcpy(x->name, name, n);
    x->name[n] = '\0';
    x->newest_ts = 0;
    if (!hidx || nhosts * 2 + 2 > hmask + 1) hidx_rebuild();
    else index_put(hidx, hmask, h, nhosts - 1);
    return (int)(nhosts - 1);
}

/* ------------------------------------------------------------ staleness */

static int64_t period_of(const struct gm_gpu *g)
{
    return g->period_ms > 0 ? g->period_ms : 10000;   /* one sample seen: assume 10 s */
}

/* A row is shown while its last sample is younger than stale_periods periods,
 * by the wall clock and by its host's newest sample time. */
static int gpu_live(const struct gm_gpu *g, int64_t now_ms)
{
    if (!g->sampled) return 0;
    int64_t lim = stale_periods * period_of(g);
    int64_t wall = lim < 1000 * stale_periods ? 1000 * stale_periods : lim;   /* scrape jitter */
    if (now_ms - g->seen_ms > wall) return 0;
    return hosts[g->host].newest_ts - g->last_ts <= lim;
}

/* ------------------------------------------------------------ rows */

static void put_label(struct buf *b, const char *name, const char *v, int comma)
{
    if (comma) buf_putc(b, ',');
    buf_puts(b, name);
    buf_puts(b, "=\"");
    for (; *v; v++) {
        if (*v == '\\') buf_puts(b, "\\\\");
        else if (*v == '"') buf_puts(b, "\\\"");
        else if (*v == '\n') buf_puts(b, "\\n");
        else buf_putc(b, *v);
    }
    buf_putc(b, '"');
}

/* Renders a row's labels once; dcgm-exporter's label names. */
static void gpu_labels(struct gm_gpu *g)
{
    struct buf b;
    buf_init(&b);
    buf_putc(&b, '{');
    char num[16] = "", dev[24] = "";
    if (g->index >= 0) {
        snprintf(num, sizeof num, "%d", g->index);
        snprintf(dev, sizeof dev, "nvidia%d", g->index);
    }
    put_label(&b, "gpu", num, 0);
    put_label(&b, "UUID", g->uuid, 1);
    if (g->bus[0]) put_label(&b, "pci_bus_id", g->bus, 1);
    put_label(&b, "device", dev, 1);
    put_label(&b, "modelName", g->model, 1);
    put_label(&b, "Hostname", hosts[g->host].name, 1);
    buf_putc(&b, '}');
    free(g->labels);
    g->labels = b.p;
}

static void gpu_clear(struct gm_gpu *g)
{
    free(g->labels);
    memset(g, 0, sizeof *g);
    g->xid_last = -1;
}

/* Finds or makes the row; NULL when the table is full of live rows. */
static struct gm_gpu *gpu_get(int host, int index, const char *bus, int64_t now_ms)
{
    struct gm_gpu *g = gpu_find(host, index, bus);
    if (g) return g;
    int reused = 0;
    if (ngpus < max_gpus) {
        if (ngpus == capgpus) {
            capgpus = capgpus ? capgpus * 2 : 16;
            if (capgpus > max_gpus) capgpus = max_gpus;
            gpus = xrealloc(gpus, capgpus * sizeof *gpus);
        }
        g = &gpus[ngpus++];
        memset(g, 0, sizeof *g);
        g->xid_last = -1;
    } else {
        size_t victim = ngpus;   /* the row silent for longest among the stale ones */
        for (size_t r = 0; r < ngpus; r++)
            if (!gpu_live(&gpus[r], now_ms) && (victim == ngpus || gpus[r].seen_ms < gpus[victim].seen_ms)) victim = r;
        if (victim == ngpus) { rows_dropped++; return NULL; }
        g = &gpus[victim];
        gpu_clear(g);
        reused = 1;
    }
    g->host = host;
    g->index = index;
    snprintf(g->bus, sizeof g->bus, "%s", bus);
    size_t r = (size_t)(g - gpus);
    if (!gidx || reused || ngpus * 2 + 2 > gmask + 1) gidx_rebuild();   /* a reused row changed its key */
    else index_put(gidx, gmask, row_hash(r), r);
    return g;
}

/* "PCI:0000:3b:00", "00000000:3B:00.0", "0000:3b:00.0" -> "0000:3b:00";
 * "" when s is not a bus id. */
static void norm_bus(const char *s, size_t n, char out[16])
{
    unsigned long part[4];
    int np = 0;
    size_t i = 0;
    out[0] = '\0';
    if (n >= 4 && !strncmp(s, "PCI:", 4)) i = 4;
    while (i < n && np < 4) {
        unsigned long v = 0;
        size_t st = i;
        for (; i < n && ((s[i] >= '0' && s[i] <= '9') || ((s[i] | 32) >= 'a' && (s[i] | 32) <= 'f')); i++)
            v = v * 16 + (unsigned long)(s[i] <= '9' ? s[i] - '0' : (s[i] | 32) - 'a' + 10);
        if (i == st || i - st > 8) return;
        part[np++] = v;
        if (i < n && (s[i] == ':' || s[i] == '.')) i++;
        else break;
    }
    if (np < 3) return;
    snprintf(out, 16, "%04lx:%02lx:%02lx", part[0] & 0xffff, part[1] & 0xff, part[2] & 0xff);
}

/* Copies n bytes of s into dst (truncated to cap) and sets *changed when
 * that changes dst; nothing when s is absent or empty. */
static void set_label(char *dst, size_t cap, const char *s, size_t n, int *changed)
{
    if (!s || !n) return;
    if (n >= cap) n = cap - 1;
    if (!strncmp(dst, s, n) && dst[n] == '\0') return;
    memcpy(dst, s, n);
    dst[n] = '\0';
    *changed = 1;
}

static void copy_str(const struct event *ev, const char *key, char *dst, size_t cap, int *changed)
{
    size_t n = 0;
    const char *s = event_get_str(ev, key, &n);
    set_label(dst, cap, s, s ? n : 0, changed);
}

/* What one metric event says about its GPU, gathered in one pass. */
struct sample {
    int index, mig;
    const char *bus, *uuid, *name;
    size_t bn, un, nn;
    uint64_t have;
    double v[GM_NF];
};

enum { K_NONE = -1, K_INDEX = -2, K_BUS = -3, K_UUID = -4, K_NAME = -5, K_MIG = -6 };

static int key_slot_uncached(const char *k)
{
    for (size_t i = 0; i < GM_NF; i++)
        if (!strcmp(fields[i].key, k)) return (int)i;
    if (!strcmp(k, "gpu.index")) return K_INDEX;
    if (!strcmp(k, "gpu.pci.bus_id")) return K_BUS;
    if (!strcmp(k, "gpu.uuid")) return K_UUID;
    if (!strcmp(k, "gpu.name")) return K_NAME;
    if (!strcmp(k, "gpu.mig.gpu_instance")) return K_MIG;
    return K_NONE;
}

/* What a field key is to the table: a fields[] index or a K_* code. A
 * cache by key pointer (keys are the parsers' static or header strings),
 * checked by content, makes it one strcmp per field (mutex held). */
static int key_slot(const char *k)
{
    static struct { const char *ptr; char key[56]; int f; } cache[512];
    uintptr_t h = (uintptr_t)k;
    size_t i = (size_t)((h >> 4) ^ (h >> 13)) & 511;
    if (cache[i].ptr == k && !strcmp(cache[i].key, k)) return cache[i].f;
    int f = key_slot_uncached(k);
    size_t n = strlen(k);
    if (n < sizeof cache[i].key) {
        cache[i].ptr = k;
        memcpy(cache[i].key, k, n + 1);
        cache[i].f = f;
    }
    return f;
}

/* Reads ev's fields once into sm; 0 when it is no GPU sample. */
static int sample_of(const struct event *ev, struct sample *sm)
{
    sm->index = -1;
    sm->mig = 0;
    sm->bus = sm->uuid = sm->name = NULL;
    sm->bn = sm->un = sm->nn = 0;
    sm->have = 0;
    for (size_t i = 0; i < ev->nf; i++) {
        const struct ev_field *f = &ev->f[i];
        int k = key_slot(f->key);
        if (k == K_NONE) continue;
        if (f->type == EV_STR) {
            const char *v = event_str(ev, f);
            if (k == K_BUS) { sm->bus = v; sm->bn = f->v.s.len; }
            else if (k == K_UUID) { sm->uuid = v; sm->un = f->v.s.len; }
            else if (k == K_NAME) { sm->name = v; sm->nn = f->v.s.len; }
            continue;
        }
        double d = f->type == EV_NUM ? f->v.d : f->type == EV_INT ? (double)f->v.i : (double)f->v.b;
        if (k == K_MIG) sm->mig = 1;
        else if (k == K_INDEX) sm->index = d >= 0 && d < 1e6 ? (int)d : -1;
        else if (k >= 0 && isfinite(d)) {
            sm->v[k] = d;
            sm->have |= 1ull << k;
        }
    }
    /* one sample per GPU: per-process rows and MIG instances are not GPUs */
    return sm->index >= 0 && !sm->mig;
}

/* One GPU sample (mutex held). */
static void observe_sample(const struct event *ev, const struct sample *sm, int64_t now_ms)
{
    char bus[16] = "";
    if (sm->bus) norm_bus(sm->bus, sm->bn, bus);
    int host = host_of(ev->host);
    struct gm_gpu *g = host < 0 ? NULL : gpu_get(host, sm->index, "", now_ms);
    if (!g) {
        if (host < 0) rows_dropped++;
        return;
    }
    int changed = !g->labels || (bus[0] && strcmp(bus, g->bus));
    if (bus[0]) memcpy(g->bus, bus, sizeof g->bus);
    set_label(g->uuid, sizeof g->uuid, sm->uuid, sm->un, &changed);
    set_label(g->model, sizeof g->model, sm->name, sm->nn, &changed);
    if (changed) gpu_labels(g);
    int64_t ts = ev->ts_ms;
    if (g->sampled && ts > g->last_ts) {
        int64_t p = ts - g->last_ts;
        g->period_ms = p > 3600000 ? 3600000 : p;
    }
    int64_t dt = g->sampled && ts > g->last_ts ? ts - g->last_ts : 0;
    for (size_t i = 0; i < GM_NF; i++)
        if (sm->have >> i & 1) {
            g->v[i] = sm->v[i];
            g->fts[i] = ts;
        }
    g->have |= sm->have;
    /* DCGM_FI_DEV_FB_FREE from total - used when the input has no free column */
    if ((g->have >> F_FB_USED & 1) && (g->have >> F_FB_TOTAL & 1) && g->fts[F_FB_USED] == ts &&
        g->fts[F_FB_TOTAL] == ts && !(g->fts[F_FB_FREE] == ts && (g->have >> F_FB_FREE & 1))) {
        g->v[F_FB_FREE] = g->v[F_FB_TOTAL] - g->v[F_FB_USED];
        g->fts[F_FB_FREE] = ts;
        g->have |= 1ull << F_FB_FREE;
    }
    /* violation time: the share of this period spent throttled, in us */
    if (g->fts[F_PVIOL] == ts && (g->have >> F_PVIOL & 1)) {
        g->viol_us[D_POWER_VIOL] += g->v[F_PVIOL] / 100.0 * (double)dt * 1000.0;
        g->have_viol[D_POWER_VIOL] = 1;
    }
    if (g->fts[F_TVIOL] == ts && (g->have >> F_TVIOL & 1)) {
        g->viol_us[D_THERMAL_VIOL] += g->v[F_TVIOL] != 0 ? (double)dt * 1000.0 : 0;
        g->have_viol[D_THERMAL_VIOL] = 1;
    }
    if (!g->sampled || ts > g->last_ts) g->last_ts = ts;
    g->sampled = 1;
    g->seen_ms = now_ms;
    if (ts > hosts[host].newest_ts) hosts[host].newest_ts = ts;
}

/* One Xid/SXid event (mutex held): counts by code and severity, and sets
 * DCGM_FI_DEV_XID_ERRORS on the GPU of its bus id. */
static void observe_xid(const struct event *ev, int sx, int64_t now_ms)
{
    double dc;
    if (!event_get_num(ev, sx ? "gpu.sxid.code" : "gpu.xid.code", &dc)) return;
    int code = (int)dc;
    char sev[12] = "", name[40] = "";
    int dummy = 0;
    copy_str(ev, sx ? "gpu.sxid.severity" : "gpu.xid.severity", sev, sizeof sev, &dummy);
    copy_str(ev, sx ? "gpu.sxid.name" : "gpu.xid.name", name, sizeof name, &dummy);
    int host = host_of(ev->host);
    if (host < 0) { xid_dropped++; return; }
    struct gm_xid *x = NULL;
    for (size_t i = 0; i < nxids && !x; i++)
        if (xids[i].host == host && xids[i].code == code && xids[i].sx == sx && !strcmp(xids[i].sev, sev)) x = &xids[i];
    if (!x && nxids < GM_MAX_XID) {
        x = &xids[nxids++];
        x->host = host;
        x->code = code;
        x->sx = sx;
        memcpy(x->sev, sev, sizeof x->sev);
        memcpy(x->name, name, sizeof x->name);
        x->n = 0;
    }
    if (x) x->n++;
    else xid_dropped++;
    if (sx || !atomic_load(&enabled)) return;
    char bus[16] = "";
    size_t bn;
    const char *bs = event_get_str(ev, "gpu.pci.bus_id", &bn);
    if (bs) norm_bus(bs, bn, bus);
    double di;
    struct gm_gpu *g = NULL;
    if (event_get_num(ev, "gpu.index", &di)) g = gpu_find(host, (int)di, "");
    for (size_t r = 0; !g && bus[0] && r < ngpus; r++)
        if (gpus[r].host == host && !strcmp(gpus[r].bus, bus)) g = &gpus[r];
    if (!g && bus[0]) {
        g = gpu_get(host, -1, bus, now_ms);
        if (g && !g->labels) gpu_labels(g);
    }
    if (g) g->xid_last = code;
}

void gpumetrics_observe(const struct event *ev)
{
    if (!ev->dataset || !atomic_load_explicit(&tracking, memory_order_relaxed)) return;
    if (!strcmp(ev->dataset, "gpu.anomaly")) { gpumetrics_record(ev); return; }
    int xid = !strcmp(ev->dataset, "gpu.xid"), sx = !strcmp(ev->dataset, "gpu.sxid");
    if (!xid && !sx && !atomic_load_explicit(&enabled, memory_order_relaxed)) return;
    int64_t now = gl_now_ms();
    pthread_mutex_lock(&mu);
    if (xid || sx) {
        observe_xid(ev, sx, now);
    } else if (ev->kind && !strcmp(ev->kind, "metric") && strcmp(ev->dataset, "gpu.pmon")) {
        struct sample sm;
        if (sample_of(ev, &sm)) observe_sample(ev, &sm, now);
    }
    pthread_mutex_unlock(&mu);
}

/* ------------------------------------------------------------ anomalies */

void gpumetrics_record(const struct event *rec)
{
    char ty[8] = "", rule[48] = "", metric[64] = "";
    int dummy = 0;
    copy_str(rec, "event.type", ty, sizeof ty, &dummy);
    copy_str(rec, "rule.id", rule, sizeof rule, &dummy);
    copy_str(rec, "anomaly.metric", metric, sizeof metric, &dummy);
    if (!strcmp(ty, "start")) metrics_inc_label(M_ANOMALIES, rule);
    if (!atomic_load_explicit(&tracking, memory_order_relaxed)) return;
    double d;
    int gpu = event_get_num(rec, "gpu.index", &d) ? (int)d : -1;
    int sev = event_get_num(rec, "event.severity", &d) ? (int)d : 1;
    double risk = event_get_num(rec, "event.risk_score", &d) && isfinite(d) ? d : 0;
    pthread_mutex_lock(&mu);
    if (!anoms) anoms = xcalloc(GM_MAX_ANOMALIES, sizeof *anoms);
    int host = host_of(rec->host);
    if (host < 0) {
        anoms_dropped++;
        pthread_mutex_unlock(&mu);
        return;
    }
    size_t i = 0;
    while (i < nanoms && !(anoms[i].host == host && anoms[i].gpu == gpu && !strcmp(anoms[i].rule, rule) &&
                           !strcmp(anoms[i].metric, metric)))
        i++;
    if (!strcmp(ty, "end")) {
        if (i < nanoms) anoms[i] = anoms[--nanoms];
    } else if (i < nanoms || nanoms < GM_MAX_ANOMALIES) {
        struct gm_anom *a = &anoms[i];
        if (i == nanoms) {
            nanoms++;
            a->host = host;
            a->gpu = gpu;
            memcpy(a->rule, rule, sizeof a->rule);
            memcpy(a->metric, metric, sizeof a->metric);
        }
        a->sev = sev;
        a->risk = risk;
    } else {
        anoms_dropped++;
    }
    pthread_mutex_unlock(&mu);
}

/* ------------------------------------------------------------ render */

static void header(struct buf *b, const char *name, const char *type, const char *help)
{
    buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void put_value(struct buf *b, double v)
{
    if (v == floor(v) && fabs(v) < 9e15) buf_put_i64(b, (int64_t)v);
    else buf_printf(b, "%.6g", v);
    buf_putc(b, '\n');
}

/* A field is shown while its row is live and its value is no older than
 * stale_periods periods behind the row's last sample. */
static int field_live(const struct gm_gpu *g, size_t f)
{
    return (g->have >> f & 1) && g->last_ts - g->fts[f] <= stale_periods * period_of(g);
}

static void render_gpus(struct buf *b, const unsigned char *live)
{
    for (size_t f = 0; f < GM_NF; f++) {
        if (!fields[f].help) continue;   /* a twin: rendered with its first name */
        header(b, fields[f].name, fields[f].type == GM_COUNTER ? "counter" : "gauge", fields[f].help);
        for (size_t r = 0; r < ngpus; r++) {
            const struct gm_gpu *g = &gpus[r];
            if (!live[r]) continue;
            size_t use = f;   /* the twin (query-csv ECC names) when only it has a value */
            for (size_t t = f + 1; !field_live(g, use) && t < GM_NF; t++)
                if (!fields[t].help && !strcmp(fields[t].name, fields[f].name)) use = t;
            if (!field_live(g, use)) continue;
            buf_puts(b, fields[f].name);
            buf_puts(b, g->labels);
            buf_putc(b, ' ');
            put_value(b, g->v[use]);
        }
    }
    static const char *const vname[D__N] = { "DCGM_FI_DEV_POWER_VIOLATION", "DCGM_FI_DEV_THERMAL_VIOLATION" };
    static const char *const vhelp[D__N] = {
        "Throttling duration due to power constraints (in us); gpulog: accumulated from dmon pviol since gpulog started.",
        "Throttling duration due to thermal constraints (in us); gpulog: accumulated from dmon tviol since gpulog started." };
    for (int d = 0; d < D__N; d++) {
        header(b, vname[d], "counter", vhelp[d]);
        for (size_t r = 0; r < ngpus; r++)
            if (live[r] && gpus[r].have_viol[d]) {
                buf_puts(b, vname[d]);
                buf_puts(b, gpus[r].labels);
                buf_putc(b, ' ');
                put_value(b, floor(gpus[r].viol_us[d]));
            }
    }
}

void gpumetrics_render(struct buf *b, int64_t now_ms)
{
    pthread_mutex_lock(&mu);
    int on = atomic_load(&enabled);
    unsigned char *live = ngpus ? xmalloc(ngpus) : NULL;
    for (size_t r = 0; r < ngpus; r++) live[r] = (unsigned char)gpu_live(&gpus[r], now_ms);
    if (on) {
        render_gpus(b, live);
        header(b, "DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.");
        for (size_t r = 0; r < ngpus; r++)
            if (gpus[r].xid_last >= 0 && (live[r] || !gpus[r].sampled)) {
                buf_puts(b, "DCGM_FI_DEV_XID_ERRORS");
                buf_puts(b, gpus[r].labels);
                buf_printf(b, " %lld\n", (long long)gpus[r].xid_last);
            }
        header(b, "gpulog_gpu_up", "gauge",
               "1 while the GPU reports, 0 once it missed gpu_metrics_stale_periods sample periods (its other series are then left out).");
        for (size_t r = 0; r < ngpus; r++)
            if (gpus[r].sampled) {
                buf_puts(b, "gpulog_gpu_up");
                buf_puts(b, gpus[r].labels);
                buf_puts(b, live[r] ? " 1\n" : " 0\n");
            }
        header(b, "gpulog_gpu_last_sample_timestamp_seconds", "gauge", "Time of the GPU's newest sample (event time, seconds since the epoch).");
        for (size_t r = 0; r < ngpus; r++)
            if (gpus[r].sampled) {
                buf_puts(b, "gpulog_gpu_last_sample_timestamp_seconds");
                buf_puts(b, gpus[r].labels);
                buf_printf(b, " %lld.%03lld\n", (long long)(gpus[r].last_ts / 1000), (long long)(gpus[r].last_ts % 1000));
            }
        header(b, "gpulog_gpu_rows", "gauge", "GPU rows held (bounded by gpu_metrics_max_gpus).");
        buf_printf(b, "gpulog_gpu_rows %zu\n", ngpus);
        header(b, "gpulog_gpu_rows_dropped_total", "counter", "New GPUs not shown because the table was full of reporting GPUs.");
        buf_printf(b, "gpulog_gpu_rows_dropped_total %llu\n", (unsigned long long)rows_dropped);
    }
    header(b, "gpulog_xid_errors_total", "counter", "Xid and SXid kernel messages by code, name and severity (kind xid or sxid).");
    for (size_t i = 0; i < nxids; i++) {
        buf_puts(b, "gpulog_xid_errors_total{");
        put_label(b, "kind", xids[i].sx ? "sxid" : "xid", 0);
        char code[16];
        snprintf(code, sizeof code, "%d", xids[i].code);
        put_label(b, "code", code, 1);
        put_label(b, "name", xids[i].name, 1);
        put_label(b, "severity", xids[i].sev, 1);
        put_label(b, "Hostname", hosts[xids[i].host].name, 1);
        buf_printf(b, "} %llu\n", (unsigned long long)xids[i].n);
    }
    static const char *const an[2] = { "gpulog_anomaly_open", "gpulog_anomaly_risk_score" };
    static const char *const ah[2] = { "1 while an anomaly episode is open (series removed when it ends).",
                                       "Current 0-100 risk score of an open anomaly episode." };
    for (int k = 0; k < 2; k++) {
        header(b, an[k], "gauge", ah[k]);
        for (size_t i = 0; i < nanoms; i++) {
            const struct gm_anom *a = &anoms[i];
            char gpu[16] = "", sev[8];
            if (a->gpu >= 0) snprintf(gpu, sizeof gpu, "%d", a->gpu);
            snprintf(sev, sizeof sev, "%d", a->sev);
            buf_puts(b, an[k]);
            buf_putc(b, '{');
            put_label(b, "rule_id", a->rule, 0);
            put_label(b, "severity", sev, 1);
            put_label(b, "gpu", gpu, 1);
            put_label(b, "Hostname", hosts[a->host].name, 1);
            put_label(b, "metric", a->metric, 1);
            buf_puts(b, "} ");
            put_value(b, k ? a->risk : 1);
        }
    }
    header(b, "gpulog_gpu_series_dropped_total", "counter", "Anomaly and Xid series not kept because their table was full, by table.");
    buf_printf(b, "gpulog_gpu_series_dropped_total{table=\"anomaly\"} %llu\n", (unsigned long long)anoms_dropped);
    buf_printf(b, "gpulog_gpu_series_dropped_total{table=\"xid\"} %llu\n", (unsigned long long)xid_dropped);
    free(live);
    pthread_mutex_unlock(&mu);
}

/* ------------------------------------------------------------ setup */

void gpumetrics_configure(const char *mode, int default_on, int64_t periods, int64_t maxg)
{
    int on = default_on;
    if (mode && !strcmp(mode, "on")) on = 1;
    else if (mode && !strcmp(mode, "off")) on = 0;
    pthread_mutex_lock(&mu);
    stale_periods = periods >= 1 ? periods : 1;
    max_gpus = maxg >= 1 ? (size_t)maxg : 1;
    pthread_mutex_unlock(&mu);
    atomic_store(&enabled, on);
}

int gpumetrics_setup(const struct gpulog_config *cfg, int default_on, char *err, size_t errlen)
{
    if (cfg->gpu_metrics_stale_periods < 1 || cfg->gpu_metrics_stale_periods > 1000000) {
        snprintf(err, errlen, "gpu_metrics_stale_periods must be 1..1000000, got %lld", (long long)cfg->gpu_metrics_stale_periods);
        return GL_ERROR;
    }
    if (cfg->gpu_metrics_max_gpus < 1 || cfg->gpu_metrics_max_gpus > (1 << 24)) {
        snprintf(err, errlen, "gpu_metrics_max_gpus must be 1..16777216, got %lld", (long long)cfg->gpu_metrics_max_gpus);
        return GL_ERROR;
    }
    gpumetrics_configure(cfg->gpu_metrics, default_on, cfg->gpu_metrics_stale_periods, cfg->gpu_metrics_max_gpus);
    int serving = cfg->metrics_addr && *cfg->metrics_addr;   /* nobody could scrape it: keep nothing */
    atomic_store(&tracking, serving);
    if (!serving) atomic_store(&enabled, 0);
    return GL_OK;
}

int gpumetrics_enabled(void)
{
    return atomic_load(&enabled);
}

size_t gpumetrics_rows(void)
{
    pthread_mutex_lock(&mu);
    size_t n = ngpus;
    pthread_mutex_unlock(&mu);
    return n;
}

size_t gpumetrics_up(int64_t now_ms)
{
    pthread_mutex_lock(&mu);
    size_t n = 0;
    for (size_t r = 0; r < ngpus; r++) n += (size_t)gpu_live(&gpus[r], now_ms);
    pthread_mutex_unlock(&mu);
    return n;
}

void gpumetrics_reset(void)
{
    pthread_mutex_lock(&mu);
    for (size_t r = 0; r < ngpus; r++) free(gpus[r].labels);
    free(gpus);
    free(gidx);
    free(hosts);
    free(hidx);
    free(anoms);
    gpus = NULL;
    gidx = hidx = NULL;
    hosts = NULL;
    anoms = NULL;
    ngpus = capgpus = nhosts = caphosts = nxids = nanoms = 0;
    gmask = hmask = 0;
    rows_dropped = anoms_dropped = xid_dropped = 0;
    stale_periods = 3;
    max_gpus = 16384;
    pthread_mutex_unlock(&mu);
    atomic_store(&enabled, 0);
    atomic_store(&tracking, 1);
}
