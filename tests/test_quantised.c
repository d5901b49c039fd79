/*
 * test_quantised.c - the generic profile (--profile generic: the likelihood
 * core through the seasonal detector) on GPU telemetry sampled fast and
 * written in whole units, as people's own logging scripts keep it (issue
 * 25): integer temperatures that move by one degree, whole watts, an
 * utilisation of 0 or 100, 4 or 10 samples a second, a job that starts,
 * runs and ends, idle stretches. Healthy data: a whole-degree temperature
 * gives at most one episode per series (the whole run is less than a day:
 * one quantum of change is never unlikely), an utilisation of 0 or 100
 * with an odd 99 at most one per level change (the job's start and end).
 * Power in whole watts, whose noise grows sixfold when the job starts and
 * swings over a second or two (the board's power filter): at most one
 * episode per level change (the job's start and end; issue 26: 9 and 7 at
 * 4 Hz, 4 and 5 at 10 Hz before the likelihood core judged series
 * sampled faster than a second as oversampled: the short average's spread
 * learnt, the drift over seconds, a change point taken back when the
 * series returns; and `tail_s` 5).
 * Real faults on the same series are still seen: a temperature step of 12
 * degrees, a power spike.
 * The series: a first-order thermal model (time constant 60 s, 0.16 degC
 * per W) whose output is read with sensor noise and rounded to a whole
 * degree; power and utilisation follow the job.
 */
#include "lk_harness.h"

#include <stdio.h>
#include <string.h>

#define GPUS 2

struct gpu_sim { double temp, power; uint64_t rs; };

/* One sample of GPU g at time t (s) of a job running over [on, off) (s):
 * fills temperature, power and utilisation (whole units); fault: a step of
 * +12 degC from `hot` on (hot < 0: none), power spike of 3 s at
 * `spike` (< 0: none). The state g is the caller's. */
static void gpu_step(struct gpu_sim *g, double t, double dt, double on, double off, double hot, double spike,
                     double *temp, double *power, double *util)
{
    int busy = t >= on && t < off;
    double p_target = busy ? 250 + 6 * gauss(&g->rs) : 60 + 1.5 * gauss(&g->rs);
    /* the board's power filter: a few hundred ms */
    g->power += (p_target - g->power) * (dt / 0.5 < 1 ? dt / 0.5 : 1);
    double t_target = 30 + 0.16 * g->power;
    g->temp += (t_target - g->temp) * dt / 60;
    *temp = nearbyint(g->temp + 0.3 * gauss(&g->rs) + (hot >= 0 && t >= hot ? 12 : 0));
    *power = nearbyint(g->power + (spike >= 0 && t >= spike && t < spike + 3 ? 200 : 0));
    *util = busy ? (xorshift(&g->rs) % 50 == 0 ? 99 : 100) : 0;
}

static const char *names[3] = { "temperature_C", "power_W", "utilization_gpu_percent" };

/* What the engine wrote: episode starts per GPU and metric, the first start
 * (s) of GPU 1's temperature at or after `from[0]` and of its power at or
 * after `from[1]` (-1: none), the first reason of GPU 1's temperature. */
struct tally { int eps[GPUS][3]; double from[2], first[2]; int starts; char why[512]; };

static void tally_emit(void *ctx, const struct event *r)
{
    struct tally *t = ctx;
    size_t n;
    if (r->dataset && !strcmp(r->dataset, "gpu.incident")) return;
    const char *ty = event_get_str(r, "event.type", &n);
    if (strncmp(ty, "start", n)) return;
    t->starts++;
    double g = -1;
    event_get_num(r, "gpu.index", &g);
    const char *m = event_get_str(r, "anomaly.metric", &n);
    const char *st = event_get_str(r, "event.start", &n);
    int64_t at_ms = 0;
    gl_parse_iso_ts(st, n, &at_ms);
    double at = (double)(at_ms - T0) / 1000;
    for (int k = 0; k < 3; k++) {
        size_t mn;
        m = event_get_str(r, "anomaly.metric", &mn);
        if (g < 0 || g >= GPUS || !m || !memmem(m, mn, names[k], strlen(names[k]))) continue;
        t->eps[(int)g][k]++;
        if (g == 1 && k < 2 && t->from[k] >= 0 && at >= t->from[k] && t->first[k] < 0) {
            t->first[k] = at;
            const char *w = event_get_str(r, "event.reason", &n);
            if (k == 0 && w) snprintf(t->why, sizeof t->why, "%.*s", (int)n, w);
        }
    }
}

/* Runs `secs` seconds of GPUS GPUs sampled every dt_ms through the
 * generic profile; the job on every GPU over [on, off); GPU 1 gets the
 * faults (hot, spike; < 0: none). Fills t. */
static void run(int secs, int dt_ms, double on, double off, double hot, double spike, struct tally *t)
{
    struct profile *p = prof_of("{\"extends\": \"generic\"}");
    CHECK(p != NULL);
    if (!p) return;
    memset(t, 0, sizeof *t);
    t->from[0] = hot; t->from[1] = spike; t->first[0] = t->first[1] = -1;
    struct engine *e = engine_new(p, tally_emit, t);
    struct gpu_sim g[GPUS];
    for (int i = 0; i < GPUS; i++) g[i] = (struct gpu_sim){ 42, 60, 0x9E3779B97F4A7C15ULL + (uint64_t)i * 7919 };
    double dt = dt_ms / 1000.0;
    int n = (int)((int64_t)secs * 1000 / dt_ms);
    for (int k = 0; k < n; k++) {
        double tm = k * dt;
        for (int i = 0; i < GPUS; i++) {
            double tp, pw, ut;
            gpu_step(&g[i], tm, dt, on, off, i == 1 ? hot : -1, i == 1 ? spike : -1, &tp, &pw, &ut);
            sample_ms(e, "node", i, (int64_t)k * dt_ms, names[0], tp, names[1], pw, names[2], ut, NULL);
        }
    }
    engine_free(e);
    profile_free(p);
    printf("  %d episodes; per GPU temp/power/util:", t->starts);
    for (int i = 0; i < GPUS; i++) printf(" %d/%d/%d", t->eps[i][0], t->eps[i][1], t->eps[i][2]);
    printf("\n");
}

/* 4 Hz, integer temperatures: 20 idle minutes, an hour's job, 20 idle
 * minutes. */
TEST(generic_quiet_on_healthy_4hz_integer_telemetry)
{
    struct tally t;
    run(6000, 250, 1200, 4800, -1, -1, &t);
    for (int i = 0; i < GPUS; i++) {
        CHECK(t.eps[i][0] <= 1);
        CHECK(t.eps[i][1] <= 2);
        CHECK(t.eps[i][2] <= 2);
    }
}

/* 10 rows a second: a job starts after 2 idle minutes and runs for 9. */
TEST(generic_quiet_on_a_job_start_at_10hz)
{
    struct tally t;
    run(660, 100, 120, 1e9, -1, -1, &t);
    for (int i = 0; i < GPUS; i++) {
        CHECK(t.eps[i][0] <= 1);
        /* the job start, and at most one more (one GPU's power: a dip 57 s
         * after the start, while the typical error still follows the new
         * noise) */
        CHECK(t.eps[i][1] <= 2);
        CHECK(t.eps[i][2] <= 1);
    }
}

/* The same 4 Hz series with faults on GPU 1 in the job: a +12 degC step
 * at 40 minutes, a 200 W spike of 3 s at 60 minutes. */
TEST(generic_still_sees_faults_on_4hz_integer_telemetry)
{
    struct tally t;
    run(6000, 250, 1200, 4800, 2400, 3600, &t);
    printf("  first episodes of GPU 1: temperature at %.1f s, power at %.1f s\n  reason: %s\n", t.first[0],
           t.first[1], t.why);
    CHECK(t.first[0] >= 2400 && t.first[0] <= 2400 + 2);
    CHECK(t.first[1] >= 3600 && t.first[1] <= 3600 + 3);
    CHECK(t.eps[0][0] <= 1);
}

int main(void)
{
    RUN(generic_quiet_on_healthy_4hz_integer_telemetry);
    RUN(generic_quiet_on_a_job_start_at_10hz);
    RUN(generic_still_sees_faults_on_4hz_integer_telemetry);
    return TEST_REPORT();
}
