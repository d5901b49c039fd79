/*
 * gpumetrics_int.h - the state of the GPU metrics table, shared by its
 * files: gpumetrics.c (events in, setup), gpumetrics_table.c (rows, hosts,
 * the key index, staleness) and gpumetrics_render.c (/metrics text).
 * Private to them; see gpumetrics.h. Every gm_* variable is guarded by gm_mu.
 */
#ifndef GPULOG_GPUMETRICS_INT_H
#define GPULOG_GPUMETRICS_INT_H

#include "gpumetrics.h"
#include "metrics.h"
#include "event.h"
#include "common.h"

#include <pthread.h>
#include <stdatomic.h>

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

/* The families fed by event fields (gpumetrics.c); GM_NF rows. */
#define GM_NF 29
extern const struct gm_field gm_fields[GM_NF];
enum { F_FB_FREE = 11, F_FB_USED = 12, F_FB_TOTAL = 13, F_PVIOL = 25, F_TVIOL = 26 };
/* derived counters: violation time accumulated from pviol/tviol and the period */
enum { D_POWER_VIOL, D_THERMAL_VIOL, D__N };

struct gm_gpu {
    int host;                   /* index into gm_hosts[] */
    int index;                  /* gpu.index; -1 = known by bus id only (an Xid) */
    char bus[16];               /* normalised "dddd:bb:dd"; "" = unknown */
    char uuid[48], model[64];
    int sampled;                /* a metric sample seen (rows made by an Xid alone are not) */
    uint64_t have;              /* bit i: gm_fields[i] holds a value */
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
struct gm_anom { int host; int gpu; char rule[48]; char metric[64]; char action[16]; int sev; double risk; };

extern pthread_mutex_t gm_mu;
extern _Atomic int gm_enabled;
extern _Atomic int gm_tracking;     /* 0: no /metrics server, nothing is kept at all */
extern int64_t gm_stale_periods;
extern size_t gm_max_gpus;
extern struct gm_gpu *gm_gpus;      /* rows [0, gm_ngpus) */
extern size_t gm_ngpus, gm_capgpus;
extern uint32_t *gm_gidx;           /* open addressing: row + 1, 0 = empty */
extern size_t gm_gmask;
extern struct gm_host *gm_hosts;
extern size_t gm_nhosts, gm_caphosts;
extern uint32_t *gm_hidx;
extern size_t gm_hmask;
extern struct gm_xid gm_xids[GM_MAX_XID];
extern size_t gm_nxids;
extern struct gm_anom *gm_anoms;    /* GM_MAX_ANOMALIES, allocated on first use */
extern size_t gm_nanoms;
extern uint64_t gm_rows_dropped, gm_anoms_dropped, gm_xid_dropped;

/* gpumetrics_table.c (gm_mu held) */
int64_t gm_period_of(const struct gm_gpu *g);
int gm_gpu_live(const struct gm_gpu *g, int64_t now_ms);
struct gm_gpu *gm_gpu_get(int host, int index, const char *bus, int64_t now_ms);
struct gm_gpu *gm_gpu_find(int host, int index, const char *bus);
int gm_host_of(const char *name);
void gm_norm_bus(const char *s, size_t n, char out[16]);
void gm_set_label(char *dst, size_t cap, const char *s, size_t n, int *changed);
void gm_copy_str(const struct event *ev, const char *key, char *dst, size_t cap, int *changed);
void gm_gpu_labels(struct gm_gpu *g);
void gm_put_label(struct buf *b, const char *name, const char *v, int comma);

#endif
