/*
 * engine.h - the anomaly detection engine: events in, anomaly records out.
 *
 * A profile (config.c) lists the metric fields tracked and the rules. The
 * engine keeps, per host, per GPU, per metric, a bounded window and the
 * state of every rule, and turns detector verdicts into episodes: one open
 * episode per (GPU, rule), records of event.type start / change / end.
 *
 * Time is event time (@timestamp). Per GPU: a sample older than the newest
 * by more than ooo_tolerance_ms is dropped and counted; within the tolerance
 * it is processed; a sample with the newest timestamp again is a duplicate,
 * ignored and counted; a jump of more than gap_ms is counted as a gap.
 * Series are capped (max_series): when a new GPU would pass the cap, GPUs
 * idle for idle_evict_s of event time are evicted first, else the least
 * recently updated one.
 *
 * Ownership: engine_new borrows the profile (it must outlive the engine and
 * may gain slots for "*" rules); records passed to emit are borrowed for the
 * duration of the call.
 */
#ifndef GPULOG_ENGINE_H
#define GPULOG_ENGINE_H

#include "../core/event.h"
#include "detector.h"

struct profile {
    char *name;
    struct profile_slots slots;
    struct rule_cfg *rules;
    size_t nrules;
    unsigned win_cap;
    uint32_t win_span_ms;
    size_t max_series;
    int64_t idle_evict_ms, ooo_tol_ms, gap_ms;
    int64_t resolution_ms;            /* rows of a GPU within one such step fold into one sample; 0 = same stamp only */
    int incidents;                    /* group a GPU's overlapping episodes into gpu.incident records */
    /* the user's action table (key "actions"): "rule.id" or "xid:N" -> enum gl_action */
    struct { char *key; int act; } *actions;
    size_t nactions;
    /* derived by profile_finish */
    int star;                         /* has rules on "*" */
    int sl_power, sl_util, sl_clock;  /* slots for the learned references */
    int sl_mask;                      /* the slot of gpu.throttling.reasons (a bit mask: folded by OR), or -1 */
};

/* Loads a profile: the built-in one named builtin ("gpu" or "generic") when
 * path is NULL, else the JSON file at path (which may say "extends": NAME to
 * start from a built-in profile and override rules by id). */
struct profile *profile_load(const char *path, const char *builtin, char *err, size_t errlen);
/* Loads a profile from JSON text. */
struct profile *profile_from_json(const char *text, size_t len, char *err, size_t errlen);
void profile_free(struct profile *p);
/* Writes the built-in profile's JSON text (static storage), NULL if unknown. */
const char *profile_builtin_json(const char *name);

struct engine_stats {
    uint64_t events, samples, updates, kernel_events, ignored;
    uint64_t out_of_order, late_within_tolerance, duplicates, gaps, evicted;
    uint64_t too_far_ahead, clock_steps;   /* samples refused as far in the future; series re-anchored */
    uint64_t folded;                       /* rows folded into another row's sample (same stamp, sub-second) */
    uint64_t starts, changes, ends;
    uint64_t hosts, gpus, series, open;
    uint64_t nonfinite;   /* anomalous verdicts refused: a number of theirs was NaN or infinite */
    uint64_t evicted_active;   /* of evicted: GPUs still reporting (max_series below the active series) */
};

typedef void (*engine_emit_fn)(void *ctx, const struct event *rec);

struct engine;
struct engine *engine_new(struct profile *prof, engine_emit_fn emit, void *ctx);
/* Processes one event (metric sample, kernel event; others are ignored). */
void engine_feed(struct engine *e, const struct event *ev);
/* Same, for an event read from input partition `tag` (gpulog detect): the
 * GPUs and host sample blocks of different tags are kept apart, so that
 * engine_drop_tag can forget a revoked partition and host-level rules
 * (peers, missing data) compare only GPUs whose samples arrive in order. */
void engine_feed_tag(struct engine *e, const struct event *ev, int tag);
/* Forgets every GPU (and its open episodes, without end records) fed with
 * this tag. */
void engine_drop_tag(struct engine *e, int tag);
/* End of input: completes the last sample block of every host. Open
 * episodes stay open (the input did not show them ending). */
void engine_flush(struct engine *e);
void engine_free(struct engine *e);
/* Switches the engine to profile np (SIGHUP reload). A rule of np that is
 * identical to a rule of the running profile (same id, detector, metric and
 * settings) keeps its state and open episodes on every GPU; a changed or
 * removed rule's open episodes are ended with an "end" record, and its state
 * dropped; a new rule starts empty. Windows survive when window and
 * window_span_s are unchanged, else every GPU starts over. The engine then
 * borrows np; the caller frees the old profile. Returns the number of
 * rules whose state was kept; *changed gets the number of np's rules that
 * start empty (new or changed) plus the removed ones. */
size_t engine_reload(struct engine *e, struct profile *np, size_t *changed);
const struct engine_stats *engine_get_stats(const struct engine *e);
/* Bytes of detector state held (windows, rule states, tables). */
size_t engine_memory(const struct engine *e);

/* Callback over every open episode (for the live view). */
typedef void (*engine_open_fn)(void *ctx, const char *host, int gpu, const char *rule_id, int64_t start_ms,
                               double risk);
void engine_foreach_open(const struct engine *e, engine_open_fn fn, void *ctx);
/* Callback over every GPU with its latest values of a few fields. */
typedef void (*engine_gpu_fn)(void *ctx, const char *host, int gpu, int64_t last_ts, const double *vals,
                              const int *have);
/* Fields reported by engine_foreach_gpu, in order: temperature, power, util,
 * SM clock, framebuffer. */
void engine_foreach_gpu(const struct engine *e, engine_gpu_fn fn, void *ctx);

#endif
