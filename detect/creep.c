/* creep.c - per-interval summaries of a metric and the shape of their
 * change (see creep.h); the caller owns the struct. */
#include "creep.h"
#include "../core/common.h"

#include <math.h>
#include <string.h>

void creep_reset(struct creep *c)
{
    memset(c, 0, sizeof *c);
}

/* Keeps or drops the interval being filled; 1 when kept. */
static int creep_close(struct creep *c)
{
    int kept = 0;
    if (c->nacc && 4 * c->nok >= c->nacc) {
        float v = c->acc;
        if (c->n == CREEP_CAP) {
            memmove(c->v, c->v + 1, (CREEP_CAP - 1) * sizeof c->v[0]);
            c->n--;
        }
        c->v[c->n++] = v;
        c->bad = 0;
        kept = 1;
    } else if (c->nacc && ++c->bad >= 3) {
        c->n = 0;
        c->bad = 0;
    }
    c->nacc = c->nok = 0;
    c->acc = 0;
    return kept;
}

int creep_add(struct creep *c, int64_t ts_ms, double v, int ok, int64_t interval_ms, int floor)
{
    int kept = 0;
    if (c->t0 == 0 || ts_ms < c->t0) c->t0 = ts_ms;
    if (ts_ms - c->t0 >= interval_ms) {
        /* a long gap closes the interval and counts as the regime changing */
        int gap = ts_ms - c->t0 >= 3 * interval_ms;
        if (c->nok && !floor) c->acc /= c->nok;
        kept = creep_close(c);
        if (gap) { c->n = 0; kept = 0; }
        c->t0 = ts_ms;
    }
    c->nacc++;
    if (ok) {
        if (floor) c->acc = c->nok == 0 || v < c->acc ? (float)v : c->acc;
        else c->acc += (float)v;
        c->nok++;
    }
    return kept;
}

int creep_ok(const struct creep *c)
{
    if (c->n > CREEP_CAP || c->bad > 3 || c->nok > c->nacc || !isfinite(c->acc) || !gl_time_ok(c->t0)) return 0;
    for (unsigned i = 0; i < c->n; i++)
        if (!isfinite(c->v[i])) return 0;
    return 1;
}

void creep_shape(const struct creep *c, unsigned k, double eps, struct creep_shape *s)
{
    memset(s, 0, sizeof *s);
    if (k > c->n) k = c->n;
    s->k = k;
    if (k < 2) return;
    const float *v = c->v + (c->n - k);
    unsigned up = 0, mid = (k - 1) / 2;
    s->max_step = s->min_step = v[1] - v[0];
    for (unsigned i = 1; i < k; i++) {
        double d = v[i] - v[i - 1];
        if (d > eps) up++;
        if (d > s->max_step) s->max_step = d;
        if (d < s->min_step) s->min_step = d;
    }
    s->rise = v[k - 1] - v[0];
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (unsigned i = 0; i < k; i++) {
        sx += i; sy += v[i]; sxx += (double)i * i; sxy += i * (double)v[i];
    }
    double den = k * sxx - sx * sx;
    s->fit = den > 0 ? (k * sxy - sx * sy) / den * (k - 1) : 0;
    s->up_frac = (double)up / (k - 1);
    s->older = v[mid] - v[0];
    s->newer = v[k - 1] - v[mid];
}
