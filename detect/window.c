/* window.c - see window.h. */
#include "window.h"
#include "../core/common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void win_init(struct win *w, unsigned cap, uint32_t span_ms)
{
    memset(w, 0, sizeof *w);
    if (cap < 2) cap = 2;
    if (cap > WIN_CAP) cap = WIN_CAP;
    w->cap = (uint16_t)cap;
    w->span_ms = span_ms;
}

void win_clear(struct win *w)
{
    unsigned cap = w->cap;
    uint32_t span = w->span_ms;
    win_init(w, cap, span);
}

/* Index of the first element >= v in the sorted copy (the number of
 * elements < v), without branches on the data: halving steps that a
 * conditional move takes, since a mispredicted branch per step cost more
 * than the search. */
static unsigned lower_bound(const float *a, unsigned n, float v)
{
    if (n == 0) return 0;
    const float *b = a;
    while (n > 1) {
        unsigned half = n / 2;
        b = b[half] < v ? b + half : b;
        n -= half;
    }
    return (unsigned)(b - a) + (*b < v);
}

static void sorted_remove(struct win *w, float v)
{
    unsigned i = lower_bound(w->sorted, w->n, v);
    if (i >= w->n) i = w->n - 1;   /* cannot happen: v is present */
    memmove(&w->sorted[i], &w->sorted[i + 1], (w->n - 1 - i) * sizeof(float));
}

static void sorted_insert(struct win *w, float v)
{
    unsigned i = lower_bound(w->sorted, w->n, v);
    memmove(&w->sorted[i + 1], &w->sorted[i], (w->n - i) * sizeof(float));
    w->sorted[i] = v;
}

/* The sorted copy of a full window (n + 1 values, the oldest one at index
 * i) with that value replaced by v: the same array sorted_remove then
 * sorted_insert would leave, with one shift of the values in between
 * instead of two of the tails. */
static void sorted_replace(struct win *w, unsigned i, float v)
{
    float *a = w->sorted;
    unsigned j = lower_bound(a, (unsigned)w->n + 1, v);
    if (j > i) j--;                 /* its place once a[i] is gone */
    if (j < i) memmove(&a[j + 1], &a[j], (i - j) * sizeof(float));
    else if (j > i) memmove(&a[i], &a[i + 1], (j - i) * sizeof(float));
    a[j] = v;
}

/* Exact mean and M2 from the ring (two-pass), used periodically. */
static void recompute(struct win *w)
{
    double s = 0;
    for (unsigned k = 0; k < w->n; k++) s += w->ring[win_pos(w, k)];
    double mean = w->n ? s / w->n : 0;
    double m2 = 0;
    for (unsigned k = 0; k < w->n; k++) {
        double d = w->ring[win_pos(w, k)] - mean;
        m2 += d * d;
    }
    w->mean = mean;
    w->m2 = m2;
    w->since_fix = 0;
}

/* Drops the oldest sample from the ring and the moments (not from the
 * sorted copy); returns it. */
static float pop_ring(struct win *w)
{
    float old = w->ring[w->head];
    w->head = (uint16_t)(w->head + 1u == w->cap ? 0 : w->head + 1u);
    w->n--;
    if (w->n == 0) {
        w->mean = 0; w->m2 = 0;
    } else {
        double d = old - w->mean;
        w->mean -= d / w->n;
        w->m2 -= d * (old - w->mean);
        if (w->m2 < 0) w->m2 = 0;
    }
    return old;
}

static void pop_oldest(struct win *w)
{
    float old = w->ring[w->head];
    sorted_remove(w, old);
    pop_ring(w);
}

void win_push(struct win *w, int64_t ts_ms, double v)
{
    if (!isfinite(v)) return;
    /* floats hold magnitudes up to 3.4e38; clamp beyond that */
    if (v > 3.0e38) v = 3.0e38;
    if (v < -3.0e38) v = -3.0e38;
    float fv = (float)v;
    if (w->n == 0) w->base_ms = ts_ms;
    int64_t rel = ts_ms - w->base_ms;
    if (rel < 0) rel = 0;
    if (rel > 0x7fffffffLL) {
        /* rebase on the oldest kept sample; drop what cannot be expressed */
        int64_t nb = ts_ms - 0x40000000LL;
        for (unsigned k = 0; k < w->n; k++) {
            unsigned i = win_pos(w, k);
            int64_t t = w->base_ms + w->tms[i];
            w->tms[i] = t > nb ? (uint32_t)(t - nb) : 0;
        }
        w->base_ms = nb;
        rel = ts_ms - nb;
    }
    if (w->span_ms) {
        while (w->n && (int64_t)w->tms[w->head] < rel - (int64_t)w->span_ms) pop_oldest(w);
    }
    unsigned old_at = WIN_CAP;      /* sorted index of the sample a full window drops */
    if (w->n == w->cap) {
        old_at = lower_bound(w->sorted, w->n, w->ring[w->head]);
        if (old_at >= w->n) old_at = w->n - 1u;   /* cannot happen: it is present */
        pop_ring(w);
    }
    unsigned tail = win_pos(w, w->n);
    w->ring[tail] = fv;
    w->tms[tail] = (uint32_t)rel;
    if (old_at < WIN_CAP) sorted_replace(w, old_at, fv);
    else sorted_insert(w, fv);
    w->n++;
    double x = fv;
    double d = x - w->mean;
    w->mean += d / w->n;
    w->m2 += d * (x - w->mean);
    if (w->m2 < 0) w->m2 = 0;
    if (++w->since_fix >= w->cap) recompute(w);
}

double win_var(const struct win *w)
{
    if (w->n < 2) return 0.0;
    double v = w->m2 / (w->n - 1);
    return v > 0 && isfinite(v) ? v : 0.0;
}

double win_std(const struct win *w)
{
    return sqrt(win_var(w));
}

double win_quantile(const struct win *w, double q)
{
    if (w->n == 0) return 0.0;
    if (q <= 0) return w->sorted[0];
    if (q >= 1) return w->sorted[w->n - 1];
    double pos = q * (w->n - 1);
    unsigned i = (unsigned)pos;
    double frac = pos - i;
    if (i + 1 >= w->n) return w->sorted[w->n - 1];
    return (double)w->sorted[i] + frac * ((double)w->sorted[i + 1] - (double)w->sorted[i]);
}

double win_mad(const struct win *w)
{
    unsigned n = w->n;
    if (n == 0) return 0.0;
    double med = win_median(w);
    /* deviations left of the median grow as i goes down, right of it as j
     * goes up: merge the two ascending sequences up to the middle rank(s). */
    int i = (int)lower_bound(w->sorted, n, (float)med) - 1;
    unsigned j = (unsigned)(i + 1);
    unsigned want_hi = n / 2, want_lo = (n - 1) / 2;
    double lo_v = 0, hi_v = 0;
    for (unsigned k = 0; k <= want_hi; k++) {
        double dl = i >= 0 ? med - w->sorted[i] : INFINITY;
        double dr = j < n ? w->sorted[j] - med : INFINITY;
        double d;
        if (dl <= dr) { d = dl; i--; } else { d = dr; j++; }
        if (k == want_lo) lo_v = d;
        if (k == want_hi) hi_v = d;
    }
    double m = (lo_v + hi_v) / 2;
    return isfinite(m) && m > 0 ? m : 0.0;
}

double win_mean_abs_dev(const struct win *w, double c)
{
    if (w->n == 0) return 0.0;
    double s = 0;
    for (unsigned i = 0; i < w->n; i++) s += fabs((double)w->sorted[i] - c);
    double m = s / w->n;
    return isfinite(m) ? m : 0.0;
}

unsigned win_export(const struct win *w, uint32_t *tms, float *v)
{
    for (unsigned k = 0; k < w->n; k++) {
        unsigned i = win_pos(w, k);
        tms[k] = w->tms[i];
        v[k] = w->ring[i];
    }
    return w->n;
}

static int float_cmp(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

int win_import(struct win *w, unsigned cap, uint32_t span_ms, int64_t base_ms, double mean, double m2,
               unsigned since_fix, unsigned n, const uint32_t *tms, const float *v)
{
    if (cap < 2 || cap > WIN_CAP || n > cap || !isfinite(mean) || !isfinite(m2) || m2 < 0 || !gl_time_ok(base_ms)) return 0;
    for (unsigned k = 0; k < n; k++)
        if (!isfinite(v[k])) return 0;
    win_init(w, cap, span_ms);
    w->base_ms = base_ms;
    w->n = (uint16_t)n;
    memcpy(w->ring, v, n * sizeof *v);
    memcpy(w->tms, tms, n * sizeof *tms);
    memcpy(w->sorted, v, n * sizeof *v);
    qsort(w->sorted, n, sizeof *w->sorted, float_cmp);
    w->mean = mean;
    w->m2 = m2;
    w->since_fix = (uint16_t)(since_fix < cap ? since_fix : cap - 1);
    return 1;
}
