/*
 * engine_int.h - the engine's internal types, shared by its files only:
 * engine.c (hosts, GPUs, series, the sample path), episode.c (verdicts to
 * episodes and records), engine_reload.c (SIGHUP reload) and snapshot.c
 * (state snapshots). Nothing outside detect/engine*.c, episode.c and
 * snapshot.c includes it.
 */
#ifndef GPULOG_ENGINE_INT_H
#define GPULOG_ENGINE_INT_H

#include "engine.h"

/* Episode bookkeeping in front of each rule's detector state. The
 * episode's id comes from its key (host, GPU, rule, metric), the UTC hour
 * of its start (id_hour) and how many episodes of this rule on this GPU
 * started earlier in that hour (id_n), not from its exact start: a cold
 * start that re-opens an episode in progress gets its id (episode.c). */
struct episode {
    int64_t start, first_bad, last_anom, last_change;
    float peak_risk, last_risk, peak_value;
    uint32_t seq;
    uint16_t bad_run, good_run;
    uint8_t open;
    int8_t last_sev;
    uint8_t id_n;            /* episodes before this one in id_hour (0-254) */
    uint8_t id_set;          /* id_hour/id_n describe the last episode opened */
    int32_t id_hour;         /* hours since 1970 of the last episode's start */
    uint8_t backoff;         /* flapping: reopened soon after ending this many times (cooldown x 2^backoff) */
};

#define ALIGN8(x) (((x) + 7) & ~(size_t)7)
#define EP_SIZE ALIGN8(sizeof(struct episode))

struct rule_set {              /* rules applying to one slot, or to GPUs */
    int *idx;
    size_t *off;
    size_t n, size;            /* count, state block bytes */
};

#define KCACHE 512
struct kcache { const char *key; int slot; };

#define HBUCKETS 256   /* initial host buckets */

struct engine {
    struct profile *prof;
    engine_emit_fn emit;
    void *emit_ctx;
    struct host **hb;                /* host hash table: nhb buckets, grown with the hosts */
    size_t nhb;
    struct ent *lru_head, *lru_tail; /* every GPU, least recently updated first (eviction) */
    struct host *last_host;
    struct rule_set slot_rules[ENG_MAX_SLOTS];
    unsigned char slot_ready[ENG_MAX_SLOTS];
    unsigned char slot_star[ENG_MAX_SLOTS];
    struct rule_set ent_rules;         /* GPU, HOST and EVENT scope */
    struct kcache kc[KCACHE];
    struct ent **peers;
    size_t cappeers;
    int64_t newest_ts, clock;
    struct engine_stats st;
    size_t mem;
    struct event rec;
    int reloading;                     /* end records say the rule changed */
    unsigned fold_said;                /* GPUs that started folding (the first is logged) */
};

enum { REC_START, REC_CHANGE, REC_END };

/* engine.c: appends rule ri (state of state_size bytes) to rs. */
void eng_add_rule(struct rule_set *rs, int ri, size_t state_size);
/* engine.c: builds the SERIES rule list of slot s once. */
void eng_slot_prepare(struct engine *e, int s);
/* engine.c: 1 when a series of slot s needs a window. */
int eng_slot_needs_window(const struct profile *p, const struct rule_set *rs, int s);
/* engine.c: the host name of input partition tag, made if new. */
struct host *eng_host_get(struct engine *e, const char *name, int tag);
/* engine.c: GPU gpu of host h, made (with fresh rule states) if new. */
struct ent *eng_ent_get(struct engine *e, struct host *h, int gpu);
/* engine.c: the series of slot on x, made if new (NULL when max_series is
 * reached and nothing can be evicted). */
struct series *eng_series_get(struct engine *e, struct ent *x, int slot);
/* engine.c: takes x out of the engine's LRU list. */
void eng_lru_unlink(struct engine *e, struct ent *x);
/* episode.c: the UTC hour (hours since 1970, floored) of a time in ms:
 * episode and incident ids are numbered within it. */
int32_t eng_hour_of(int64_t ms);
/* episode.c: the engine's record, emptied and set up as an alert of
 * dataset about GPU x at ts (incidents use it too). */
struct event *eng_alert_begin(struct engine *e, const struct ent *x, const char *dataset, int64_t ts);
/* The head every alert record (episode or incident) carries, after its id:
 * event.type (type: REC_START, REC_CHANGE, REC_END), rule.id/name (borrowed,
 * copied into r), event.start, event.end (REC_END only), risk score,
 * severity, and the GPU of x. */
void eng_alert_head(struct event *r, const struct ent *x, int type, const char *rule_id, const char *rule_name,
                    int64_t start, int64_t end, double risk, int sev);
/* episode.c: writes one start/change/end record of episode ep through
 * e->emit; key_metric names the series for the ids, metric is the field
 * the record reports. */
void eng_emit_record(struct engine *e, int type, const struct rule_cfg *rc, struct ent *x,
                     const char *key_metric, const char *metric, struct episode *ep, const struct det_out *o,
                     int sev, double risk, int64_t ts);
/* episode.c: the id of episode ep of rule rc on x for the series key_metric
 * (hex, 33 bytes) and of its records (type, seq, ts: see eng_emit_record). */
void eng_episode_id(const struct rule_cfg *rc, const struct ent *x, const char *key_metric,
                    const struct episode *ep, char out[33]);
/* episode.c: applies the verdict of rule rc on this sample to its episode
 * (the block inst: episode, then the detector's state). */
void eng_judge(struct engine *e, const struct rule_cfg *rc, struct ent *x, const char *metric,
               unsigned char *inst, int64_t ts, struct det_ctx *cx);

/* A 32-bit hash (FNV-1a) of a rule id or an Xid key, as snapshots keep an
 * incident's rules and a GPU's episode history. Pure. */
static inline uint32_t eng_name_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

#endif
