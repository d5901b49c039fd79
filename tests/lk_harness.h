/*
 * lk_harness.h - shared by the likelihood tests (test_detectors.c,
 * test_likelihood.c): deterministic normal noise, a profile with one
 * likelihood rule, and the episode starts of that rule on a series.
 * Header-only; everything is static inline.
 */
#ifndef GPULOG_TEST_LK_HARNESS_H
#define GPULOG_TEST_LK_HARNESS_H

#include "cap_harness.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* The next deterministic 64-bit number of xorshift64 state st (the caller's). */
static inline uint64_t xorshift(uint64_t *st)
{
    *st ^= *st << 13; *st ^= *st >> 7; *st ^= *st << 17;
    return *st;
}

/* Deterministic standard normal numbers (xorshift64 + Box-Muller; st is the caller's). */
static inline double gauss(uint64_t *st)
{
    double u[2];
    for (int i = 0; i < 2; i++) u[i] = ((double)(xorshift(st) >> 11) + 0.5) / 9007199254740992.0;
    return sqrt(-2 * log(u[0])) * cos(2 * M_PI * u[1]);
}

static const char *LK_PROFILE = "{\"rules\":[{\"id\":\"lk\",\"detector\":\"likelihood\",\"metric\":\"m\",\"for\":1,\"clear\":5}]}";

/* Episode starts of rule lk of profile json (LK_PROFILE: its defaults) on
 * the values v[0..n) one minute apart, from sample `from` on: their count
 * (all of them: the capture starts afresh at sample `from`), the first
 * `max` sample indices in at[] (-1 where none; read among the first
 * CAP_RECORDS records from there: when a start is not among them, the
 * running test fails). */
static inline int lk_run_vals(const char *json, const double *v, int n, int from, int *at, double *val, int max);

static inline int lk_run_prof(const char *json, const double *v, int n, int from, int *at, int max)
{
    return lk_run_vals(json, v, n, from, at, NULL, max);
}

/* lk_run_prof, and the value each of those starts reports into val[]
 * (unless NULL). */
static inline int lk_run_vals(const char *json, const double *v, int n, int from, int *at, double *val, int max)
{
    for (int i = 0; i < max; i++) at[i] = -1;
    struct profile *p = prof_of(json);
    if (!p) return -1;
    struct cap c;
    struct engine *e = cap_engine(&c, p);
    c.prefix_ok = 1;   /* the first max starts are all that is read: checked below */
    for (int i = 0; i < n; i++) {
        if (i == from) { c.nrec = c.overflow = 0; c.n[0] = c.n[1] = c.n[2] = 0; }
        sample(e, "h", -1, i * 60, "m", v[i], NULL);
    }
    int j = 0;
    for (int i = 0; i < c.nrec && j < max; i++) {
        int ix = (int)((c.start_field[i] - T0) / 60000);
        if (!strcmp(c.type[i], "start") && ix >= from) {
            if (val) val[j] = c.value[i];
            at[j++] = ix;
        }
    }
    int k = c.n[0];
    if (c.overflow && j < max && j < k) {
        test_cur_failed = 1;
        printf("  lk_harness.h: %s: %d of the first %d starts are beyond the %d records captured: raise CAP_RECORDS\n",
               test_cur_name, (k < max ? k : max) - j, k < max ? k : max, CAP_RECORDS);
    }
    cap_done(e, p, &c);
    return k;
}

/* lk_run_prof with the likelihood detector's defaults. */
static inline int lk_run(const double *v, int n, int from, int *at, int max)
{
    return lk_run_prof(LK_PROFILE, v, n, from, at, max);
}

#endif
