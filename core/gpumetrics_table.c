/*
 * gpumetrics_table.c - the rows of the GPU metrics table (gpumetrics.h):
 * the hash index by (host, GPU index, bus id), the host names, staleness,
 * rows made, reused or dropped at the bound, and their labels. Called with
 * gm_mu held.
 */
#include "gpumetrics_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    return gpu_hash(gm_gpus[r].host, gm_gpus[r].index, gm_gpus[r].bus);
}

static uint64_t host_hash(size_t r)
{
    return hash64(gm_hosts[r].name, strlen(gm_hosts[r].name), 7);
}

static void gidx_rebuild(void)
{
    gm_gidx = index_new(gm_gidx, gm_ngpus, &gm_gmask);
    for (size_t r = 0; r < gm_ngpus; r++) index_put(gm_gidx, gm_gmask, row_hash(r), r);
}

struct gm_gpu *gm_gpu_find(int host, int index, const char *bus)
{
    if (!gm_gidx) return NULL;
    for (size_t i = gpu_hash(host, index, bus) & gm_gmask; gm_gidx[i]; i = (i + 1) & gm_gmask)
        if (gpu_match(&gm_gpus[gm_gidx[i] - 1], host, index, bus)) return &gm_gpus[gm_gidx[i] - 1];
    return NULL;
}

static void hidx_rebuild(void)
{
    gm_hidx = index_new(gm_hidx, gm_nhosts, &gm_hmask);
    for (size_t r = 0; r < gm_nhosts; r++) index_put(gm_hidx, gm_hmask, host_hash(r), r);
}

/* Drops the hosts no row, Xid count or anomaly refers to any more. */
static void hosts_gc(void)
{
    int *map = xmalloc(gm_nhosts * sizeof *map);
    for (size_t h = 0; h < gm_nhosts; h++) map[h] = -1;
    for (size_t r = 0; r < gm_ngpus; r++) map[gm_gpus[r].host] = 0;
    for (size_t i = 0; i < gm_nxids; i++) map[gm_xids[i].host] = 0;
    for (size_t i = 0; i < gm_nanoms; i++) map[gm_anoms[i].host] = 0;
    size_t n = 0;
    for (size_t h = 0; h < gm_nhosts; h++)
        if (map[h] == 0) {
            gm_hosts[n] = gm_hosts[h];
            map[h] = (int)n++;
        }
    gm_nhosts = n;
    for (size_t r = 0; r < gm_ngpus; r++) gm_gpus[r].host = map[gm_gpus[r].host];
    for (size_t i = 0; i < gm_nxids; i++) gm_xids[i].host = map[gm_xids[i].host];
    for (size_t i = 0; i < gm_nanoms; i++) gm_anoms[i].host = map[gm_anoms[i].host];
    free(map);
    hidx_rebuild();
    gidx_rebuild();
}

/* The host's slot, added when new; -1 when the host table is full (it
 * holds at most as many hosts as rows, Xid counts and anomalies). */
int gm_host_of(const char *name)
{
    if (!name) name = "";
    size_t n = strlen(name);
    if (n > 63) n = 63;
    uint64_t h = hash64(name, n, 7);
    if (gm_hidx)
        for (size_t i = h & gm_hmask; gm_hidx[i]; i = (i + 1) & gm_hmask) {
            struct gm_host *x = &gm_hosts[gm_hidx[i] - 1];
            if (!strncmp(x->name, name, n) && x->name[n] == '\0') return (int)(gm_hidx[i] - 1);
        }
    if (gm_nhosts >= gm_max_gpus + GM_MAX_XID + GM_MAX_ANOMALIES) {
        hosts_gc();
        if (gm_nhosts >= gm_max_gpus + GM_MAX_XID + GM_MAX_ANOMALIES) return -1;
    }
    if (gm_nhosts == gm_caphosts) {
        gm_caphosts = gm_caphosts ? gm_caphosts * 2 : 16;
        gm_hosts = xrealloc(gm_hosts, gm_caphosts * sizeof *gm_hosts);
    }
    struct gm_host *x = &gm_hosts[gm_nhosts++];
    memcpy(x->name, name, n);
    x->name[n] = '\0';
    x->newest_ts = 0;
    if (!gm_hidx || gm_nhosts * 2 + 2 > gm_hmask + 1) hidx_rebuild();
    else index_put(gm_hidx, gm_hmask, h, gm_nhosts - 1);
    return (int)(gm_nhosts - 1);
}

/* ------------------------------------------------------------ staleness */

int64_t gm_period_of(const struct gm_gpu *g)
{
    return g->period_ms > 0 ? g->period_ms : 10000;   /* one sample seen: assume 10 s */
}

/* A row is shown while its last sample is younger than gm_stale_periods periods,
 * by the wall clock and by its host's newest sample time. */
int gm_gpu_live(const struct gm_gpu *g, int64_t now_ms)
{
    if (!g->sampled) return 0;
    int64_t lim = gm_stale_periods * gm_period_of(g);
    int64_t wall = lim < 1000 * gm_stale_periods ? 1000 * gm_stale_periods : lim;   /* scrape jitter */
    if (now_ms - g->seen_ms > wall) return 0;
    return gm_hosts[g->host].newest_ts - g->last_ts <= lim;
}

/* ------------------------------------------------------------ rows */

void gm_put_label(struct buf *b, const char *name, const char *v, int comma)
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
void gm_gpu_labels(struct gm_gpu *g)
{
    struct buf b;
    buf_init(&b);
    buf_putc(&b, '{');
    char num[16] = "", dev[24] = "";
    if (g->index >= 0) {
        snprintf(num, sizeof num, "%d", g->index);
        snprintf(dev, sizeof dev, "nvidia%d", g->index);
    }
    gm_put_label(&b, "gpu", num, 0);
    gm_put_label(&b, "UUID", g->uuid, 1);
    if (g->bus[0]) gm_put_label(&b, "pci_bus_id", g->bus, 1);
    gm_put_label(&b, "device", dev, 1);
    gm_put_label(&b, "modelName", g->model, 1);
    gm_put_label(&b, "Hostname", gm_hosts[g->host].name, 1);
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
struct gm_gpu *gm_gpu_get(int host, int index, const char *bus, int64_t now_ms)
{
    struct gm_gpu *g = gm_gpu_find(host, index, bus);
    if (g) return g;
    int reused = 0;
    if (gm_ngpus < gm_max_gpus) {
        if (gm_ngpus == gm_capgpus) {
            gm_capgpus = gm_capgpus ? gm_capgpus * 2 : 16;
            if (gm_capgpus > gm_max_gpus) gm_capgpus = gm_max_gpus;
            gm_gpus = xrealloc(gm_gpus, gm_capgpus * sizeof *gm_gpus);
        }
        g = &gm_gpus[gm_ngpus++];
        memset(g, 0, sizeof *g);
        g->xid_last = -1;
    } else {
        size_t victim = gm_ngpus;   /* the row silent for longest among the stale ones */
        for (size_t r = 0; r < gm_ngpus; r++)
            if (!gm_gpu_live(&gm_gpus[r], now_ms) && (victim == gm_ngpus || gm_gpus[r].seen_ms < gm_gpus[victim].seen_ms)) victim = r;
        if (victim == gm_ngpus) { gm_rows_dropped++; return NULL; }
        g = &gm_gpus[victim];
        gpu_clear(g);
        reused = 1;
    }
    g->host = host;
    g->index = index;
    snprintf(g->bus, sizeof g->bus, "%s", bus);
    size_t r = (size_t)(g - gm_gpus);
    if (!gm_gidx || reused || gm_ngpus * 2 + 2 > gm_gmask + 1) gidx_rebuild();   /* a reused row changed its key */
    else index_put(gm_gidx, gm_gmask, row_hash(r), r);
    return g;
}

/* "PCI:0000:3b:00", "00000000:3B:00.0", "0000:3b:00.0" -> "0000:3b:00";
 * "" when s is not a bus id. */
void gm_norm_bus(const char *s, size_t n, char out[16])
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
void gm_set_label(char *dst, size_t cap, const char *s, size_t n, int *changed)
{
    if (!s || !n) return;
    if (n >= cap) n = cap - 1;
    if (!strncmp(dst, s, n) && dst[n] == '\0') return;
    memcpy(dst, s, n);
    dst[n] = '\0';
    *changed = 1;
}

void gm_copy_str(const struct event *ev, const char *key, char *dst, size_t cap, int *changed)
{
    size_t n = 0;
    const char *s = event_get_str(ev, key, &n);
    gm_set_label(dst, cap, s, s ? n : 0, changed);
}

/* What one metric event says about its GPU, gathered in one pass. */
