/* test_window.c - window statistics against a naive recomputation. */
#include "test.h"
#include "../detect/window.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmpf(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* naive statistics over the last n values pushed (as floats) */
struct naive { double mean, var, med, q10, q90, mad, min, max; };
static struct naive naive_of(const double *v, unsigned n)
{
    struct naive r = { 0 };
    double s = 0, *t = malloc(n * sizeof *t), *d = malloc(n * sizeof *d);
    for (unsigned i = 0; i < n; i++) { t[i] = (float)v[i]; s += t[i]; }
    r.mean = s / n;
    double m2 = 0;
    for (unsigned i = 0; i < n; i++) m2 += (t[i] - r.mean) * (t[i] - r.mean);
    r.var = n > 1 ? m2 / (n - 1) : 0;
    qsort(t, n, sizeof *t, cmpf);
    r.min = t[0]; r.max = t[n - 1];
    double pos;
    #define Q(q) (pos = (q) * (n - 1), t[(unsigned)pos] + (pos - (unsigned)pos) * ((unsigned)pos + 1 < n ? t[(unsigned)pos + 1] - t[(unsigned)pos] : 0))
    r.med = Q(0.5); r.q10 = Q(0.1); r.q90 = Q(0.9);
    for (unsigned i = 0; i < n; i++) d[i] = fabs(t[i] - r.med);
    qsort(d, n, sizeof *d, cmpf);
    r.mad = n % 2 ? d[n / 2] : (d[n / 2 - 1] + d[n / 2]) / 2;
    free(t); free(d);
    return r;
}

static unsigned rnd_state = 12345;
static double urand(void)
{
    rnd_state = rnd_state * 1103515245u + 12345u;
    return ((rnd_state >> 8) & 0xffffff) / (double)0x1000000;
}

TEST(random_vs_naive)
{
    static const unsigned caps[] = { 2, 7, 32, 64 };
    int bad = 0;
    for (unsigned c = 0; c < 4; c++) {
        struct win w;
        win_init(&w, caps[c], 0);
        double hist[5000];
        for (unsigned i = 0; i < 5000; i++) {
            /* mixture: noise, level shifts, outliers, repeated values */
            double v = (i / 700) * 10 + urand() * 5;
            if (urand() < 0.05) v += 1000 * urand();
            if (urand() < 0.2) v = floor(v);
            hist[i] = v;
            win_push(&w, 1000 * (int64_t)i, v);
            unsigned n = i + 1 < caps[c] ? i + 1 : caps[c];
            CHECK_EQ_INT(win_count(&w), n);
            struct naive r = naive_of(hist + i + 1 - n, n);
            double tol = 1e-6 * (1 + fabs(r.max) + fabs(r.min));
            if (fabs(win_mean(&w) - r.mean) > tol || fabs(win_var(&w) - r.var) > 1e-6 * (1 + r.var) + tol * tol ||
                win_median(&w) != r.med || fabs(win_quantile(&w, 0.1) - r.q10) > tol ||
                fabs(win_quantile(&w, 0.9) - r.q90) > tol || fabs(win_mad(&w) - r.mad) > tol ||
                win_min(&w) != r.min || win_max(&w) != r.max || win_last(&w) != (float)v) {
                if (bad++ < 5)
                    printf("  cap %u i %u: mean %g/%g var %g/%g med %g/%g mad %g/%g\n", caps[c], i, win_mean(&w), r.mean,
                           win_var(&w), r.var, win_median(&w), r.med, win_mad(&w), r.mad);
            }
        }
    }
    CHECK_EQ_INT(bad, 0);
}

/* lower_bound, remove, insert: the sorted copy as win_push kept it before
 * it replaced the dropped value in one shift (the reference) */
static unsigned ref_lb(const float *a, unsigned n, float v)
{
    unsigned i = 0;
    while (i < n && a[i] < v) i++;
    return i;
}

TEST(sorted_copy_bitwise)
{
    /* repeats, +0 and -0 (equal, different bits), window full or cut by span */
    static const float pool[] = { 0.0f, -0.0f, 1.0f, 1.0f, -1.0f, 2.5f, -0.0f, 3.0f };
    static const unsigned caps[] = { 2, 5, 64 };
    int bad = 0;
    for (unsigned c = 0; c < 3; c++) {
        struct win w;
        win_init(&w, caps[c], c == 2 ? 40000 : 0);
        float ref[WIN_CAP], ring[WIN_CAP];
        unsigned n = 0, head = 0;
        int64_t t = 0, ts[WIN_CAP];
        for (unsigned i = 0; i < 20000; i++) {
            float v = urand() < 0.3 ? pool[(unsigned)(urand() * 8)] : (float)floor(urand() * 6 - 3);
            t += urand() < 0.02 ? 30000 : 1000;
            /* the reference: evict by span, then by count; remove, insert */
            while (n && c == 2 && ts[head] < t - 40000) {
                unsigned k = ref_lb(ref, n, ring[head]);
                memmove(&ref[k], &ref[k + 1], (n - 1 - k) * sizeof(float));
                head = (head + 1) % caps[c];
                n--;
            }
            if (n == caps[c]) {
                unsigned k = ref_lb(ref, n, ring[head]);
                memmove(&ref[k], &ref[k + 1], (n - 1 - k) * sizeof(float));
                head = (head + 1) % caps[c];
                n--;
            }
            ring[(head + n) % caps[c]] = v;
            ts[(head + n) % caps[c]] = t;
            unsigned k = ref_lb(ref, n, v);
            memmove(&ref[k + 1], &ref[k], (n - k) * sizeof(float));
            ref[k] = v;
            n++;
            win_push(&w, t, v);
            if (win_count(&w) != n || memcmp(w.sorted, ref, n * sizeof(float))) {
                if (bad++ < 3) printf("  cap %u push %u: sorted copy differs\n", caps[c], i);
            }
        }
    }
    CHECK_EQ_INT(bad, 0);
}

TEST(mean_abs_dev)
{
    struct win w;
    win_init(&w, 8, 0);
    double v[] = { 5, 6, 5, 6, 5 };
    for (int i = 0; i < 5; i++) win_push(&w, i, v[i]);
    CHECK(win_mad(&w) == 0.0);                       /* three 5s: MAD 0 */
    CHECK_NEAR(win_mean_abs_dev(&w, win_median(&w)), 0.4, 1e-9);
}

TEST(constant_series)
{
    struct win w;
    win_init(&w, 64, 0);
    for (int i = 0; i < 1000; i++) win_push(&w, i * 1000, 42.0);
    CHECK_NEAR(win_mean(&w), 42.0, 1e-12);
    CHECK(win_var(&w) == 0.0);
    CHECK(win_std(&w) == 0.0);
    CHECK(win_mad(&w) == 0.0);
    CHECK(win_median(&w) == 42.0);
}

TEST(huge_values_no_nan)
{
    struct win w;
    win_init(&w, 16, 0);
    for (int i = 0; i < 200; i++) {
        double v = (i % 2 ? 1e30 : -1e30) * (1 + i % 5);
        if (i % 17 == 0) v = 1e300;          /* beyond float: clamped */
        win_push(&w, i, v);
        CHECK(isfinite(win_mean(&w)));
        CHECK(isfinite(win_var(&w)) && win_var(&w) >= 0);
        CHECK(isfinite(win_mad(&w)));
        CHECK(isfinite(win_median(&w)));
    }
    win_push(&w, 1000, NAN);                  /* ignored */
    win_push(&w, 1001, INFINITY);
    CHECK(isfinite(win_mean(&w)));
}

TEST(time_span_eviction)
{
    struct win w;
    win_init(&w, 64, 10000);   /* 10 s */
    for (int i = 0; i < 30; i++) win_push(&w, 1000LL * i, i);
    /* samples at 19..29 s are within 10 s of 29 s */
    CHECK_EQ_INT(win_count(&w), 11);
    CHECK(win_min(&w) == 19);
    CHECK_NEAR(win_mean(&w), 24.0, 1e-9);
    CHECK_EQ_INT(win_time_at(&w, 0), 19000);
    /* a long gap empties the window down to the new sample */
    win_push(&w, 100000, 5);
    CHECK_EQ_INT(win_count(&w), 1);
    CHECK(win_median(&w) == 5);
    /* far-future timestamps (rebasing the uint32 offsets) keep order */
    win_push(&w, 100000 + 3000000000LL, 6);
    CHECK_EQ_INT(win_count(&w), 1);
    CHECK(win_last(&w) == 6);
}

TEST(empty_and_clear)
{
    struct win w;
    win_init(&w, 8, 0);
    CHECK(win_mean(&w) == 0 && win_var(&w) == 0 && win_mad(&w) == 0 && win_median(&w) == 0);
    win_push(&w, 0, 3);
    win_push(&w, 1, 5);
    CHECK_NEAR(win_var(&w), 2.0, 1e-12);
    win_clear(&w);
    CHECK_EQ_INT(win_count(&w), 0);
    CHECK(sizeof(struct win) <= 1024);
}

int main(void)
{
    RUN(random_vs_naive);
    RUN(sorted_copy_bitwise);
    RUN(mean_abs_dev);
    RUN(constant_series);
    RUN(huge_values_no_nan);
    RUN(time_span_eviction);
    RUN(empty_and_clear);
    return TEST_REPORT();
}
