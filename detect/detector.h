/*
 * detector.h - the detector interface and the engine state detectors read.
 *
 * A rule is one configured detector (id, name, metric, parameters, episode
 * settings). The engine keeps per-rule state for every series (scope
 * SERIES: one metric of one GPU), GPU (scope GPU: several metrics of one
 * GPU), host sample block (scope HOST: peers, missing data) or kernel event
 * (scope EVENT: Xid/SXid). Each call to update() gives the detector's verdict
 * for one sample: DET_ANOMALY, DET_NORMAL, DET_UNKNOWN (warming up / not
 * applicable: never opens an episode, counts towards resolving one) or
 * DET_HOLD (an open episode's condition cannot be judged on this sample but
 * nothing shows it is gone: the episode neither grows nor moves towards
 * resolving). An open episode ends only when the condition that opened it is
 * gone, so detectors judge an open episode against its clear level
 * (hysteresis), not against a reference that drifted with the fault. The
 * engine turns verdicts into episodes (minimum duration, cooldown,
 * start/change/end records).
 *
 * Ownership: the engine owns every state block; detectors only write their
 * own state (state_size bytes, zeroed, then init) and the det_out they get.
 */
#ifndef GPULOG_DETECTOR_H
#define GPULOG_DETECTOR_H

#include "../core/common.h"
#include "window.h"

#define DET_MAX_PARAMS 24
/* A Gaussian's standard deviation in mean absolute deviations (sqrt(pi / 2)) */
#define DET_MAE_SD 1.2533
#define ENG_MAX_SLOTS 64       /* metric fields tracked per profile */

enum det_scope { DS_SERIES, DS_GPU, DS_HOST, DS_EVENT };
enum det_verdict { DET_UNKNOWN = -1, DET_NORMAL = 0, DET_ANOMALY = 1, DET_HOLD = 2 };

/* A detector parameter: its name, default and valid range [lo, hi] (flags:
 * DP_LO_OPEN / DP_HI_OPEN exclude the bound, DP_WHOLE asks for a whole
 * number). Every value a detector file sets is checked against its range
 * at load (detect/config.c, FILE:LINE:COL); beyond it a detector's
 * arithmetic divides by zero, indexes nothing or decays to infinity.
 * docs/detectors.md lists the ranges (tests/test_detectors.c checks it). */
#define DP_LO_OPEN 1u
#define DP_HI_OPEN 2u
#define DP_WHOLE 4u
#define DET_PARAM_MAX 1e15          /* no parameter's magnitude goes beyond this */
#define DP_DAYS365 31536000.0       /* a year in seconds: the longest time a parameter may span */
struct det_param { const char *name; double def, lo, hi; unsigned flags; const char *help; };
/* 1 when v is within p's range. */
int det_param_ok(const struct det_param *p, double v);
/* p's range as text ("a number in (0, 1]", "a whole number from 1 to 64")
 * into buf (n bytes). */
void det_param_range(const struct det_param *p, char *buf, size_t n);


struct rule_cfg;
struct det_ctx;
struct det_out;
struct event;

/* Metric slot table, shared by the profile and configure(). */
struct profile_slots {
    size_t n;
    char *name[ENG_MAX_SLOTS];
    unsigned char need_win[ENG_MAX_SLOTS];
};
/* Slot of a metric name, added if new (-1 when the table is full). */
int profile_slot(struct profile_slots *ps, const char *name, int need_win);

struct det_ops {
    const char *name;
    enum det_scope scope;
    /* traits the configuration reads instead of special cases: a rule of
     * this detector must name a metric (needs_metric, true for every
     * DS_SERIES detector whatever this says), and the metric it judges when
     * the rule names none (default_metric; NULL = the detector's name), and
 * whether it needs no window (no_window) */
    int needs_metric;
    const char *default_metric;
    /* a DS_SERIES rule of this detector keeps all it needs in its own state:
     * a series judged only by such rules gets no window (800 bytes) */
    int no_window;
    size_t state_size;
    const struct det_param *params;          /* NULL-name terminated */
    /* Resolves extra metric slots (multi-metric rules); may be NULL. */
    int (*configure)(struct rule_cfg *rc, struct profile_slots *ps, char *err, size_t errlen);
    void (*init)(const struct rule_cfg *rc, void *st);
    int (*update)(const struct rule_cfg *rc, void *st, const struct det_ctx *cx, struct det_out *out);
    void (*free)(void *st);                  /* may be NULL */
    /* State snapshots (snapshot.c) copy a rule's state as bytes: a state
     * must hold no pointers, and check says whether bytes read back are a
     * state update() can use safely (counts and indices in range); NULL =
     * any bytes are (plain numbers). */
    int (*check)(const struct rule_cfg *rc, const void *st);
};

struct rule_cfg {
    char *id, *name;
    const struct det_ops *ops;
    char *metric;            /* primary field; "*" = every numeric field */
    int slot;                /* primary slot (-1 for "*" templates and events) */
    int aux[12];             /* extra slots resolved by configure() */
    int severity;            /* 1..3 */
    int for_n, clear_n;      /* consecutive verdicts to open / to resolve */
    int64_t cooldown_ms;     /* quiet time before resolving */
    int64_t change_ms;       /* minimum time between change records */
    double p[DET_MAX_PARAMS];
};


/* One series: a metric of one GPU. */
struct series {
    struct win *w;           /* NULL when no rule needs a window */
    double last;             /* previous value */
    int64_t last_ts;
    uint32_t nsamples;
    uint16_t slot;
    unsigned char has_last;
    void *rstate;            /* rule states of the SERIES rules on this slot */
};

struct host;

/* The incident of one GPU: its overlapping episodes as one (detect/incident.c). */
#define INC_RULES 8
struct ent_incident {
    int64_t start, last;     /* first episode's start; latest record */
    int8_t act;              /* the most urgent action of its episodes (enum gl_action, parsers/xid_catalog.h) */
    char act_why[96];        /* that action's evidence in words */
    uint32_t rule_hash[INC_RULES];   /* rules that took part (hash of the id) */
    float peak_risk;
    int32_t id_hour;         /* UTC hour of the start (the id) */
    uint16_t open_eps;       /* episodes of this GPU open now */
    uint8_t nrules, open, id_n, more;  /* more: rules past INC_RULES */
    int8_t sev;
};

#define ENT_HIST 8
#define ENT_PROCS 8          /* processes kept per GPU (the least recently seen goes) */

/* A process seen on a GPU (pmon, compute-apps, an Xid line's pid=/name=, a
 * process column): who an incident hit. */
struct ent_proc {
    int64_t first, last;     /* event times it was seen first and last */
    int32_t pid;             /* -1 unknown */
    float sm, mem;           /* SM utilisation (%), framebuffer (MiB); < 0 unknown */
    char name[32], type[4];  /* process.name (cut), gpu.process.type */
};

/* One GPU (or the host itself for kernel events without a GPU: gpu -1). */
struct ent {
    struct host *host;
    int gpu;
    char *uuid, *bus_id;
    char *model;             /* gpu.name, the first seen (peers are GPUs of one model) */
    int64_t last_ts;         /* newest sample time */
    int64_t last_seen_ms;    /* engine clock of the last update (eviction) */
    uint64_t present;        /* slots present in the current sample */
    double val[ENG_MAX_SLOTS];
    unsigned char sidx[ENG_MAX_SLOTS];   /* slot -> index+1 into ser, 0 = none */
    struct series *ser;
    size_t nser, capser;
    void *rstate;            /* rule states of GPU/HOST/EVENT rules */
    /* learned per-GPU references */
    float pmax, pmin;        /* highest / lowest power seen (W) */
    float clk_busy;          /* SM clock under load, slow max */
    float interval_ms;       /* observed sampling interval (robust running estimate; 0 = unknown) */
    uint32_t nsamples;
    int64_t step_ts;         /* newest sample outside the expected time range (a clock step?) */
    uint32_t step_n;         /* consecutive such samples, each a little after the previous one */
    uint64_t last_id;        /* hash of the newest sample's event.id: a repeated row is a duplicate */
    struct fold *fold;       /* sampled faster than the profile's resolution: rows folded per step (engine.c) */
    uint8_t fast_n;          /* consecutive steps under half the resolution (3: fold from then on) */
    struct ent *next;        /* in the host's list */
    struct ent *lru_prev, *lru_next;   /* in the engine's list, least recently updated first */
    struct ent_incident inc;  /* its episodes grouped (profile key "incidents") */
    /* the episodes that started on this GPU lately, for the action table's
     * history (a second Xid 79 within 7 days): key (hash of the rule id, or
     * of "xid:N"), start; a ring of ENT_HIST */
    struct { uint32_t key; int64_t ts; } hist[ENT_HIST];
    uint8_t nhist, hist_pos;
    struct ent_proc *procs;  /* ENT_PROCS of them, allocated at the first process seen */
    uint8_t nprocs;
};

struct host {
    char *name;
    uint64_t hash;
    int tag;                 /* input partition (gpulog detect); 0 otherwise */
    int64_t block_ts;        /* time of the sample block being filled */
    int have_block;
    struct ent *ents;        /* GPUs of this host, ascending index */
    struct ent *hint;        /* the GPU found last (ent_get starts there) */
    char *labels;            /* the labels.* of its newest event, "key\0value\0..." (at most HOST_LABELS), NULL none */
    size_t labels_len;
    size_t nents;
    struct host *next;       /* hash chain */
};

/* What a detector sees for one verdict. */
struct det_ctx {
    int64_t ts;
    struct ent *e;
    struct host *h;
    const struct profile_slots *slots;
    int open;                /* this rule's episode is open */
    /* SERIES scope */
    int slot;
    const struct series *s;  /* before this sample was pushed */
    double v;
    /* EVENT scope: the kernel event (NULL on ticks) */
    const struct event *ev;
    /* HOST scope: the GPUs of the host that reported at ts */
    struct ent **peers;
    size_t npeers;
};

/* Writes the reason of a verdict about `who` ("GPU 3 on node-7") into buf
 * (n bytes) from the det_out the detector filled (owned by the detector's
 * file; called by the engine only when a record is written). */
typedef void (*det_why_fn)(const struct det_out *o, const char *who, char *buf, size_t n);

/* A detector's verdict details, copied into records by the engine. */
struct det_out {
    double value;            /* observed value */
    double lo, hi;           /* expected range; lo > hi means unset */
    double mean, std;        /* window statistics; std < 0 means unset */
    double score;            /* the detector's own statistic (z, S, count) */
    double excess;           /* 0..1: how far past its threshold */
    int npeers;              /* peers compared against; 0 = none */
    double peer_median;
    int severity;            /* 0 = the rule's; 1..3 overrides (Xid) */
    int metric_slot;         /* -1 = the rule's metric */
    const char *metric;      /* overrides the field name when set */
    int xid_code;            /* Xid/SXid code, -1 = none */
    int action;              /* the detector's own choice of enum gl_action (gpu.health's finding), -1 = none */
    const char *xid_name, *xid_sev, *xid_key;
    /* the reason, formatted only when a record is written (most anomalous
     * verdicts write none): why() from the fields above and the values the
     * detector left in a[] and s[]; NULL = the rule's name */
    det_why_fn why;
    double a[6];
    const char *s[2];
};

/* Sets o up for a verdict: nothing observed, ranges unset, a[] zero (the
 * engine checks the numbers of an anomalous verdict: det_out_finite). s[]
 * is left as it is (a detector sets what its why() reads): clearing all of
 * det_out per verdict cost more than the judging around it. */
static inline void det_out_init(struct det_out *o)
{
    o->value = 0; o->lo = 1; o->hi = 0; o->mean = 0; o->std = -1; o->score = 0; o->excess = 0;
    o->npeers = 0; o->peer_median = 0; o->severity = 0; o->metric_slot = -1; o->metric = NULL;
    o->xid_code = -1; o->xid_name = o->xid_sev = o->xid_key = NULL;
    o->action = -1;
    o->why = NULL;
    o->a[0] = o->a[1] = o->a[2] = o->a[3] = o->a[4] = o->a[5] = 0;
}
/* 1 when every number a record or its reason takes from o is finite (value,
 * score, excess, peer median, a[]): the engine refuses an anomalous verdict
 * otherwise (no NaN or Inf reaches event.reason or a score). */
int det_out_finite(const struct det_out *o);

/* Longest reason (bytes with the NUL) a why() may write. */
#define DET_REASON_MAX 240
/* The reason of a record about GPU x from o (o->why, else fallback) into buf. */
void det_reason(const struct det_out *o, struct ent *x, const char *fallback, char *buf, size_t n);

/* Value of a slot in the current sample of e; 1 if present. */
static inline int ent_val(const struct ent *e, int slot, double *v)
{
    if (slot < 0 || !(e->present & (1ULL << slot))) return 0;
    *v = e->val[slot];
    return 1;
}
/* Series of a slot (NULL if never seen). */
static inline struct series *ent_series(const struct ent *e, int slot)
{
    if (slot < 0 || !e->sidx[slot]) return NULL;
    return &e->ser[e->sidx[slot] - 1];
}
static inline const struct win *ent_win(const struct ent *e, int slot)
{
    struct series *s = ent_series(e, slot);
    return s ? s->w : NULL;
}

/* Plain-language name and unit of a field ("temperature", "°C"). */
void metric_label(const char *field, const char **label, const char **unit);
/* "GPU 3 on node-7" (or the host name for host-level series). */
void det_who(const struct det_ctx *cx, char *out, size_t n);
/* 1 if a deviation dev agrees with a direction parameter (+1 up, -1 down, 0 both). */
int det_direction_ok(double dev, double dir);
/* 1 when the GPU's load was steady over full windows: utilisation spanning
 * at most util_range (slot util_slot, skipped if < 0) and power spanning at
 * most power_frac of its median (slot power_slot, skipped if < 0), each
 * window holding at least min_n samples. */
int det_load_steady(const struct ent *e, int util_slot, double util_range, int power_slot, double power_frac,
                    unsigned min_n);
/* The GPU's sampling interval in ms as observed so far (fallback when
 * none yet), so time limits can scale with it: 1 s GPU samples and 5-minute
 * business metrics alike. */
static inline double ent_interval_ms(const struct ent *e, double fallback)
{
    return e->interval_ms > 0 ? e->interval_ms : fallback;
}
/* Clamps to [0,1]; NaN -> 0. */
double det_clamp01(double x);
/* v limited to [lo, hi] (lo <= hi). */
static inline double det_clamp(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

/* The detectors (one file each). */
extern const struct det_ops det_threshold, det_zscore, det_robust_z, det_ewma, det_cusum,
    det_counter, det_flatline, det_missing, det_thermal, det_power_cap, det_idle_power,
    det_mem_leak, det_mem_pressure, det_hang, det_clock_drop, det_peer, det_xid, det_trend, det_likelihood,
    det_creep, det_seasonal, det_thermal_model, det_health;
/* NULL-terminated registry; lookup by name. */
extern const struct det_ops *const det_registry[];
const struct det_ops *det_find(const char *name);

#endif
