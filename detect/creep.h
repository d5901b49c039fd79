/*
 * creep.h - slow, steady change over minutes: a metric summarised per fixed
 * interval of event time (its mean, or its floor: the lowest value) in a
 * small ring, and the shape of the change over the ring (total rise, share
 * of rising steps, largest step, rise in the older and the newer half).
 *
 * Detectors that look further back than their 64-sample window use it: a
 * framebuffer leaking in chunks for minutes (floor per 30 s), a temperature
 * creeping at steady load (mean per minute). A steady fault rises in most
 * intervals and does not slow down; a job start or an allocator settling
 * rises in a few big steps and levels off. 16 intervals, 80 bytes, O(1)
 * per sample, O(16) per closed interval.
 */
#ifndef GPULOG_CREEP_H
#define GPULOG_CREEP_H

#include <stdint.h>

#define CREEP_CAP 16

struct creep {
    int64_t t0;               /* start of the interval being filled (0 = none) */
    float acc;                /* its sum (mean mode) or its lowest value (floor mode) */
    uint16_t nacc, nok;       /* samples seen in it, samples counted */
    uint8_t n, bad;           /* closed intervals held; consecutive uncounted ones */
    float v[CREEP_CAP];       /* closed intervals, oldest first */
};

/* The shape of the change over the newest k intervals. */
struct creep_shape {
    unsigned k;
    double rise;              /* newest - oldest */
    double fit;               /* least-squares slope x (k - 1): the rise of the fitted line */
    double up_frac;           /* share of steps that rose by more than eps */
    double max_step, min_step;
    double older, newer;      /* rise over the older half and over the newer half */
};

void creep_reset(struct creep *c);
/* Adds a sample v at ts_ms (ms since 1970; a state's t0 of 0 means no
 * interval yet); ok = it counts (e.g. the GPU was under load).
 * An interval of interval_ms closes when a sample falls past it: kept when
 * at least a quarter of its samples counted; three uncounted intervals in
 * a row, or a gap of three intervals, empty the ring (the regime changed). Returns 1 when an interval was
 * kept. floor: summarise by the lowest value instead of the mean. */
int creep_add(struct creep *c, int64_t ts_ms, double v, int ok, int64_t interval_ms, int floor);
/* Shape over the newest k (<= n) intervals; eps: a step counts as rising
 * above it. */
void creep_shape(const struct creep *c, unsigned k, double eps, struct creep_shape *s);
/* 1 when c could have been made by the functions above (a snapshot read
 * back: counts within the ring, values finite, its time gl_time_ok). */
int creep_ok(const struct creep *c);
/* The newest closed interval's value (0 when none). */
static inline double creep_last(const struct creep *c) { return c->n ? c->v[c->n - 1] : 0.0; }

#endif
