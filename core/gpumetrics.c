/*
 * gpumetrics.c - the GPU metrics table (latest value per host and GPU), the
 * Xid counts and the open anomalies, rendered for /metrics. See gpumetrics.h.
 * This file: the field mapping, the state, events in (samples, Xids,
 * anomaly records) and setup; the rows are kept by gpumetrics_table.c and
 * written out by gpumetrics_render.c.
 */
#include "gpumetrics_int.h"
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct gm_field gm_fields[GM_NF] = {
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
_Static_assert(GL_ARRAY_LEN(gm_fields) == GM_NF, "GM_NF is the number of gm_fields rows");

pthread_mutex_t gm_mu = PTHREAD_MUTEX_INITIALIZER;
_Atomic int gm_enabled;
_Atomic int gm_tracking = 1;   /* 0: no /metrics server, nothing is kept at all */
int64_t gm_stale_periods = 3;
size_t gm_max_gpus = 16384;
struct gm_gpu *gm_gpus;         /* rows [0, gm_ngpus) */
size_t gm_ngpus, gm_capgpus;
uint32_t *gm_gidx;              /* open addressing: row + 1, 0 = empty */
size_t gm_gmask;
struct gm_host *gm_hosts;
size_t gm_nhosts, gm_caphosts;
uint32_t *gm_hidx;
size_t gm_hmask;
struct gm_xid gm_xids[GM_MAX_XID];
size_t gm_nxids;
struct gm_anom *gm_anoms;       /* GM_MAX_ANOMALIES, allocated on first use */
size_t gm_nanoms;
uint64_t gm_rows_dropped, gm_anoms_dropped, gm_xid_dropped;

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
        if (!strcmp(gm_fields[i].key, k)) return (int)i;
    if (!strcmp(k, "gpu.index")) return K_INDEX;
    if (!strcmp(k, "gpu.pci.bus_id")) return K_BUS;
    if (!strcmp(k, "gpu.uuid")) return K_UUID;
    if (!strcmp(k, "gpu.name")) return K_NAME;
    if (!strcmp(k, "gpu.mig.gpu_instance")) return K_MIG;
    return K_NONE;
}

/* What a field key is to the table: a gm_fields[] index or a K_* code. A
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
    if (sm->bus) gm_norm_bus(sm->bus, sm->bn, bus);
    int host = gm_host_of(ev->host);
    struct gm_gpu *g = host < 0 ? NULL : gm_gpu_get(host, sm->index, "", now_ms);
    if (!g) {
        if (host < 0) gm_rows_dropped++;
        return;
    }
    int changed = !g->labels || (bus[0] && strcmp(bus, g->bus));
    if (bus[0]) memcpy(g->bus, bus, sizeof g->bus);
    gm_set_label(g->uuid, sizeof g->uuid, sm->uuid, sm->un, &changed);
    gm_set_label(g->model, sizeof g->model, sm->name, sm->nn, &changed);
    if (changed) gm_gpu_labels(g);
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
    if (ts > gm_hosts[host].newest_ts) gm_hosts[host].newest_ts = ts;
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
    gm_copy_str(ev, sx ? "gpu.sxid.severity" : "gpu.xid.severity", sev, sizeof sev, &dummy);
    gm_copy_str(ev, sx ? "gpu.sxid.name" : "gpu.xid.name", name, sizeof name, &dummy);
    int host = gm_host_of(ev->host);
    if (host < 0) { gm_xid_dropped++; return; }
    struct gm_xid *x = NULL;
    for (size_t i = 0; i < gm_nxids && !x; i++)
        if (gm_xids[i].host == host && gm_xids[i].code == code && gm_xids[i].sx == sx && !strcmp(gm_xids[i].sev, sev)) x = &gm_xids[i];
    if (!x && gm_nxids < GM_MAX_XID) {
        x = &gm_xids[gm_nxids++];
        x->host = host;
        x->code = code;
        x->sx = sx;
        memcpy(x->sev, sev, sizeof x->sev);
        memcpy(x->name, name, sizeof x->name);
        x->n = 0;
    }
    if (x) x->n++;
    else gm_xid_dropped++;
    if (sx || !atomic_load(&gm_enabled)) return;
    char bus[16] = "";
    size_t bn;
    const char *bs = event_get_str(ev, "gpu.pci.bus_id", &bn);
    if (bs) gm_norm_bus(bs, bn, bus);
    double di;
    struct gm_gpu *g = NULL;
    if (event_get_num(ev, "gpu.index", &di)) g = gm_gpu_find(host, (int)di, "");
    for (size_t r = 0; !g && bus[0] && r < gm_ngpus; r++)
        if (gm_gpus[r].host == host && !strcmp(gm_gpus[r].bus, bus)) g = &gm_gpus[r];
    if (!g && bus[0]) {
        g = gm_gpu_get(host, -1, bus, now_ms);
        if (g && !g->labels) gm_gpu_labels(g);
    }
    if (g) g->xid_last = code;
}

void gpumetrics_observe(const struct event *ev)
{
    if (!ev->dataset || !atomic_load_explicit(&gm_tracking, memory_order_relaxed)) return;
    if (!strcmp(ev->dataset, "gpu.anomaly")) { gpumetrics_record(ev); return; }
    int xid = !strcmp(ev->dataset, "gpu.xid"), sx = !strcmp(ev->dataset, "gpu.sxid");
    if (!xid && !sx && !atomic_load_explicit(&gm_enabled, memory_order_relaxed)) return;
    int64_t now = gl_now_ms();
    pthread_mutex_lock(&gm_mu);
    if (xid || sx) {
        observe_xid(ev, sx, now);
    } else if (ev->kind && !strcmp(ev->kind, "metric") && strcmp(ev->dataset, "gpu.pmon")) {
        struct sample sm;
        if (sample_of(ev, &sm)) observe_sample(ev, &sm, now);
    }
    pthread_mutex_unlock(&gm_mu);
}

/* ------------------------------------------------------------ anomalies */

void gpumetrics_record(const struct event *rec)
{
    char ty[8] = "", rule[48] = "", metric[64] = "", action[16] = "";
    int dummy = 0;
    gm_copy_str(rec, "anomaly.action", action, sizeof action, &dummy);
    gm_copy_str(rec, "event.type", ty, sizeof ty, &dummy);
    gm_copy_str(rec, "rule.id", rule, sizeof rule, &dummy);
    gm_copy_str(rec, "anomaly.metric", metric, sizeof metric, &dummy);
    if (!strcmp(ty, "start")) metrics_inc_label(M_ANOMALIES, rule);
    if (!atomic_load_explicit(&gm_tracking, memory_order_relaxed)) return;
    double d;
    int gpu = event_get_num(rec, "gpu.index", &d) ? (int)d : -1;
    int sev = event_get_num(rec, "event.severity", &d) ? (int)d : 1;
    double risk = event_get_num(rec, "event.risk_score", &d) && isfinite(d) ? d : 0;
    pthread_mutex_lock(&gm_mu);
    if (!gm_anoms) gm_anoms = xcalloc(GM_MAX_ANOMALIES, sizeof *gm_anoms);
    int host = gm_host_of(rec->host);
    if (host < 0) {
        gm_anoms_dropped++;
        pthread_mutex_unlock(&gm_mu);
        return;
    }
    size_t i = 0;
    while (i < gm_nanoms && !(gm_anoms[i].host == host && gm_anoms[i].gpu == gpu && !strcmp(gm_anoms[i].rule, rule) &&
                           !strcmp(gm_anoms[i].metric, metric)))
        i++;
    if (!strcmp(ty, "end")) {
        if (i < gm_nanoms) gm_anoms[i] = gm_anoms[--gm_nanoms];
    } else if (i < gm_nanoms || gm_nanoms < GM_MAX_ANOMALIES) {
        struct gm_anom *a = &gm_anoms[i];
        if (i == gm_nanoms) {
            gm_nanoms++;
            a->host = host;
            a->gpu = gpu;
            memcpy(a->rule, rule, sizeof a->rule);
            memcpy(a->metric, metric, sizeof a->metric);
            a->action[0] = '\0';
        }
        if (action[0]) memcpy(a->action, action, sizeof a->action);   /* the start record's; changes carry none */
        a->sev = sev;
        a->risk = risk;
    } else {
        gm_anoms_dropped++;
    }
    pthread_mutex_unlock(&gm_mu);
}

/* ------------------------------------------------------------ setup */

void gpumetrics_configure(const char *mode, int default_on, int64_t periods, int64_t maxg)
{
    int on = default_on;
    if (mode && !strcmp(mode, "on")) on = 1;
    else if (mode && !strcmp(mode, "off")) on = 0;
    pthread_mutex_lock(&gm_mu);
    gm_stale_periods = periods >= 1 ? periods : 1;
    gm_max_gpus = maxg >= 1 ? (size_t)maxg : 1;
    pthread_mutex_unlock(&gm_mu);
    atomic_store(&gm_enabled, on);
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
    atomic_store(&gm_tracking, serving);
    if (!serving) atomic_store(&gm_enabled, 0);
    return GL_OK;
}

int gpumetrics_enabled(void)
{
    return atomic_load(&gm_enabled);
}

size_t gpumetrics_rows(void)
{
    pthread_mutex_lock(&gm_mu);
    size_t n = gm_ngpus;
    pthread_mutex_unlock(&gm_mu);
    return n;
}

size_t gpumetrics_up(int64_t now_ms)
{
    pthread_mutex_lock(&gm_mu);
    size_t n = 0;
    for (size_t r = 0; r < gm_ngpus; r++) n += (size_t)gm_gpu_live(&gm_gpus[r], now_ms);
    pthread_mutex_unlock(&gm_mu);
    return n;
}

void gpumetrics_reset(void)
{
    pthread_mutex_lock(&gm_mu);
    for (size_t r = 0; r < gm_ngpus; r++) free(gm_gpus[r].labels);
    free(gm_gpus);
    free(gm_gidx);
    free(gm_hosts);
    free(gm_hidx);
    free(gm_anoms);
    gm_gpus = NULL;
    gm_gidx = gm_hidx = NULL;
    gm_hosts = NULL;
    gm_anoms = NULL;
    gm_ngpus = gm_capgpus = gm_nhosts = gm_caphosts = gm_nxids = gm_nanoms = 0;
    gm_gmask = gm_hmask = 0;
    gm_rows_dropped = gm_anoms_dropped = gm_xid_dropped = 0;
    gm_stale_periods = 3;
    gm_max_gpus = 16384;
    pthread_mutex_unlock(&gm_mu);
    atomic_store(&gm_enabled, 0);
    atomic_store(&gm_tracking, 1);
}
