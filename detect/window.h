/*
 * window.h - a bounded sliding window over one series: the last N samples
 * (N <= WIN_CAP) no older than a time span, with O(1) mean/variance (sliding
 * Welford, recomputed from the ring every N pushes to stop drift), O(1)
 * min/max and median, quantiles and MAD from a sorted copy kept by binary
 * search + memmove (O(N) with N <= 64 floats: one cache line or four).
 *
 * Storage is float (values) and uint32 ms offsets (times), so one window is
 * 4 + 4 + 4 bytes per slot plus a small header: 800 bytes at WIN_CAP 64.
 * The caller owns the struct; there is nothing to free.
 */
#ifndef GPULOG_WINDOW_H
#define GPULOG_WINDOW_H

#include <stdint.h>

#define WIN_CAP 64

struct win {
    int64_t base_ms;          /* times are stored relative to this */
    double mean, m2;          /* sliding Welford */
    uint32_t span_ms;         /* 0 = count window only */
    uint16_t cap, n, head;    /* head = index of the oldest sample */
    uint16_t since_fix;       /* pushes since the last exact recompute */
    float ring[WIN_CAP];      /* values in arrival order */
    uint32_t tms[WIN_CAP];    /* their times, ms after base_ms */
    float sorted[WIN_CAP];    /* the same values in ascending order */
};

/* Sets up an empty window of cap samples (clamped to 2..WIN_CAP) and span_ms
 * of event time (0 = no time limit). */
void win_init(struct win *w, unsigned cap, uint32_t span_ms);
/* Empties the window, keeping its shape. */
void win_clear(struct win *w);
/* Adds a sample taken at ts_ms (ts must not go backwards by more than the
 * caller tolerates; older samples are evicted by count and by span). */
void win_push(struct win *w, int64_t ts_ms, double v);

static inline unsigned win_count(const struct win *w) { return w->n; }
static inline double win_mean(const struct win *w) { return w->n ? w->mean : 0.0; }
/* Sample variance (n-1); 0 for fewer than 2 samples. Never negative. */
double win_var(const struct win *w);
double win_std(const struct win *w);
static inline double win_min(const struct win *w) { return w->n ? w->sorted[0] : 0.0; }
static inline double win_max(const struct win *w) { return w->n ? w->sorted[w->n - 1] : 0.0; }
/* q-quantile (0..1) with linear interpolation between order statistics. */
double win_quantile(const struct win *w, double q);
static inline double win_median(const struct win *w) { return win_quantile(w, 0.5); }
/* Median absolute deviation from the median (unscaled), O(N) merge. */
double win_mad(const struct win *w);
/* Mean absolute deviation from c, O(N) (the scale fallback when MAD is 0). */
double win_mean_abs_dev(const struct win *w, double c);
/* Ring position of the i-th oldest sample (i < cap): no division. */
static inline unsigned win_pos(const struct win *w, unsigned i)
{
    unsigned k = (unsigned)w->head + i;
    return k >= w->cap ? k - w->cap : k;
}
/* The i-th oldest sample (0 = oldest) and the newest. */
static inline double win_at(const struct win *w, unsigned i)
{
    return i < w->n ? w->ring[win_pos(w, i)] : 0.0;
}
static inline double win_last(const struct win *w)
{
    return w->n ? w->ring[win_pos(w, w->n - 1u)] : 0.0;
}
static inline int64_t win_time_at(const struct win *w, unsigned i)
{
    return i < w->n ? w->base_ms + w->tms[win_pos(w, i)] : 0;
}

/* State snapshots (snapshot.c): win_export copies the samples oldest first
 * (times in ms after base_ms) and returns their count; win_import rebuilds
 * a window of that shape from them with the running mean, m2 and push
 * count it had, so it goes on exactly as the original would. win_import
 * returns 0 (w untouched) when they cannot be a window: cap outside
 * 2..WIN_CAP, n > cap, a value or moment not finite, m2 < 0, a base time
 * outside gl_time_ok (INT64_MIN overflowed the next push). */
unsigned win_export(const struct win *w, uint32_t *tms, float *v);
int win_import(struct win *w, unsigned cap, uint32_t span_ms, int64_t base_ms, double mean, double m2,
               unsigned since_fix, unsigned n, const uint32_t *tms, const float *v);

#endif
