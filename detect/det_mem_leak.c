/* det_mem_leak.c - memory leak: framebuffer use growing steadily (most
 * steps up, none down by much) by at least min_growth over the last span
 * samples (or 3/4 of it over the whole window, for slow leaks). A job start
 * is one jump, not a staircase, and is not reported. */
#include "detector.h"

#include <stdio.h>

static const struct det_param params[] = {
    { "span", 30, "samples looked back (<= window size)" },
    { "min_growth", 512, "MiB of growth over the span" },
    { "min_up_frac", 0.6, "share of steps that must go up" },
    { "max_drop", 64, "no step may drop by more than this (MiB)" },
    { NULL, 0, NULL },
};
/* the parameters above, by name (the same order) */
enum { P_SPAN, P_MIN_GROWTH, P_MIN_UP_FRAC, P_MAX_DROP, P__COUNT };

static int ml_configure(struct rule_cfg *rc, struct profile_slots *ps, char *err, size_t errlen)
{
    (void)err; (void)errlen;
    rc->aux[0] = profile_slot(ps, "gpu.memory.framebuffer.used_size", 1);
    return GL_OK;
}

static int ml_update(const struct rule_cfg *rc, void *st, const struct det_ctx *cx, struct det_out *o)
{
    (void)st;
    double fb;
    if (!ent_val(cx->e, rc->aux[0], &fb)) return DET_UNKNOWN;
    const struct win *w = ent_win(cx->e, rc->aux[0]);
    unsigned span = (unsigned)rc->p[P_SPAN];
    if (!w || span < 3) return DET_UNKNOWN;
    if (span > win_count(w)) {
        if (win_count(w) < span) return DET_UNKNOWN;
    }
    /* two looks: the last `span` samples against min_growth, and the whole
     * window (when at least twice as long) against 3/4 of it, for slow leaks */
    unsigned n = win_count(w), start = 0;
    int ups = 0, hit = 0;
    double growth = 0;
    for (int look = 0; look < 2 && !hit; look++) {
        unsigned sp = look == 0 ? span : n;
        if (look == 1 && n < 2 * span) break;
        double need = (look == 0 ? rc->p[P_MIN_GROWTH] : 0.75 * rc->p[P_MIN_GROWTH]) * (cx->open ? 0.25 : 1);
        start = n - sp;
        ups = 0;
        int bad = 0;
        for (unsigned i = start + 1; i < n; i++) {
            double d = win_at(w, i) - win_at(w, i - 1);
            if (d > 0) ups++;
            if (d < -rc->p[P_MAX_DROP]) bad = 1;
        }
        growth = win_last(w) - win_at(w, start);
        hit = !bad && growth >= need && ups >= rc->p[P_MIN_UP_FRAC] * (sp - 1) * (cx->open ? 0.5 : 1);
    }
    o->value = fb; o->metric_slot = rc->aux[0]; o->mean = win_mean(w); o->std = win_std(w);
    o->lo = win_at(w, start); o->hi = win_at(w, start) + rc->p[P_MIN_GROWTH]; o->score = growth;
    if (!hit) return DET_NORMAL;
    o->excess = det_clamp01(growth / (8 * rc->p[P_MIN_GROWTH]));
    char who[96];
    det_who(cx, who, sizeof who);
    double secs = (double)(win_time_at(w, n - 1) - win_time_at(w, start)) / 1000.0;
    snprintf(o->reason, sizeof o->reason, "%s framebuffer use grew steadily by %.0f MiB in %.0f s to %.0f MiB (possible memory leak)",
             who, growth, secs, fb);
    return DET_ANOMALY;
}

const struct det_ops det_mem_leak = {
    .name = "memory_leak", .scope = DS_GPU, .params = params, .configure = ml_configure, .update = ml_update,
};
