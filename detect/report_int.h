/*
 * report_int.h - the state `gpulog report` keeps while reading (report.c)
 * and renders into the page (report_html.c); private to those two files.
 */
#ifndef GPULOG_REPORT_INT_H
#define GPULOG_REPORT_INT_H

#include "report.h"
#include "../core/u64map.h"

#define REP_CHARTED 64        /* GPUs (host, index) charted in the page: faulty first, then by severity */
#define REP_FINE 64           /* GPUs holding full-resolution series (faulty ones take them over) */
#define REP_MAX_ENTS 4096     /* GPUs tracked (every one: a coarse series); more are counted */
#define REP_COARSE_SHIFT 6    /* a coarse bucket is 64 of the grid's: REP_BUCKETS >> 6 per series */
#define REP_MAX_EXTRA 6       /* generic numeric columns (metrics.*) charted */
#define REP_MAX_EPS 4000      /* episodes kept */
#define REP_MAX_INCS 2000     /* incidents (gpu.incident records) kept */
#define REP_MAX_XIDS 2000     /* kernel events kept */
#define REP_TABLE_ROWS 200    /* incident rows in the header table */
#define REP_ZOOMS 16          /* incidents that get a finer zoom window */
#define REP_ZOOM_COLS 300

/* the series of a GPU: charts, overlays, counters (markers), generic columns */
enum { S_TEMP, S_POWER, S_SM, S_UTIL, S_FB, S_PLIMIT, S_FBTOTAL, S_SBE, S_DBE, S_PCIE, S_X0, S_N = S_X0 + REP_MAX_EXTRA };
#define S_FIRST_COUNTER S_SBE
#define S_NCOUNTERS 3

struct rep_known_col { const char *field, *key, *label, *unit; };
/* The known series: event field, JSON key, chart label and unit (report.c). */
extern const struct rep_known_col rep_known[];
#define REP_NKNOWN (S_PCIE + 1)

struct rep_series {
    struct rep_env *v;        /* buckets [0, len) of the shared grid */
    size_t len, cap;
};

struct rep_ent {
    char *host;
    char *bus;                /* gpu.pci.bus_id when the input names it */
    int gpu;                  /* -1: the input has no GPU index */
    uint64_t samples;
    struct rep_series s[S_N]; /* full resolution, while fine (else empty) */
    struct rep_series c[S_N]; /* coarse (REP_COARSE_SHIFT), always: the chart of a GPU without fine series */
    int fine;                 /* holds one of the REP_FINE full-resolution places ... */
    int64_t fine_since;       /* ... since then (INT64_MIN: from its first sample): before, the coarse series */
    int sev;                  /* worst severity of its episodes, incidents and kernel events (0: none) */
    double risk;              /* highest risk of its episodes and incidents */
    double last[S_NCOUNTERS];
    unsigned char have_last[S_NCOUNTERS];
};

struct rep_ep {                /* an episode, or an incident (rules: its anomaly.rules) */
    char *host, *rule, *name, *reason, *rules;
    char *action, *action_why, *procs;   /* an incident's anomaly.action, its reason, anomaly.processes */
    int gpu;                  /* -1: not about one GPU */
    int64_t start, end;
    int open, sev;
    double risk;
};

struct rep_xid {
    int64_t ts;
    char *host, *name, *sev, *bus, *msg;
    int gpu, code, sxid;
};

struct report {
    double temp_limit;        /* NAN: unknown */
    struct rep_grid g;
    int have_grid;
    struct rep_ent *ents;     /* by arrival */
    size_t nents, capents, last_ent, nfine;
    struct u64map ent_idx;    /* hash of (host, gpu) -> index in ents */
    char *extra[REP_MAX_EXTRA];
    size_t nextra;
    struct rep_ep *eps;
    size_t neps, capeps;
    struct rep_ep *incs;      /* incidents, listed apart and first */
    size_t nincs, capincs;
    struct rep_xid *xids;
    size_t nxids, capxids;
    int64_t tmin, tmax;
    uint64_t samples, kernel, other, older, dropped_ents, dropped_eps, dropped_incs, dropped_xids, dropped_extra;
};

/* Index of the entity (host, gpu) in r->ents, or -1. */
long rep_ent_find(const struct report *r, const char *host, int gpu);
/* Severity rank of a kernel event (critical 3, warning 2, info 1, none 0). */
int rep_xid_rank(const char *sev);

#endif
