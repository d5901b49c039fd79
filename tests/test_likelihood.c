/*
 * test_likelihood.c - the likelihood core (detect/lk_core.h,
 * detect/det_likelihood.c; shared by the seasonal detector) on change
 * points: one episode per incident, and a new incident seen as soon as the
 * last one is over; count data judged at its resolution (test_detectors.c
 * holds the older likelihood tests).
 * Series: one sample a minute, deterministic normal noise.
 */
#include "lk_harness.h"
#include "../detect/lk_core.h"

/* level plus noise of sd 1 (seed rs) with steps: from step_at[i] on the
 * level is step_to[i] (k steps); into v[0..n). */
static void steps(double *v, int n, uint64_t rs, double level, const int *step_at, const double *step_to, int k)
{
    for (int i = 0; i < n; i++) {
        double l = level;
        for (int s = 0; s < k; s++) if (i >= step_at[s]) l = step_to[s];
        v[i] = l + gauss(&rs);
    }
}

TEST(likelihood_change_back_inside_the_quiet_is_a_new_incident)
{
    /* a plateau: up by 8 sd at 150, back at 175 (an interval-training run,
     * a service switched over and back). Once the predictor explains the
     * plateau as well as it explains normal noise, the first incident is
     * over: the step back is a new one, though it comes within `quiet`
     * samples of the first episode's verdicts (before, the quiet hid it) */
    double v[400];
    int at[3];
    for (uint64_t seed = 1; seed <= 5; seed++) {
        steps(v, 400, seed, 50, (const int[]){ 150, 175 }, (const double[]){ 58, 50 }, 2);
        CHECK_EQ_INT(lk_run(v, 400, 100, at, 3), 2);
        CHECK(at[0] >= 150 && at[0] <= 152);
        CHECK(at[1] >= 175 && at[1] <= 177);
    }
    /* a step that stays is one incident: one episode */
    for (uint64_t seed = 1; seed <= 5; seed++) {
        steps(v, 400, seed, 50, (const int[]){ 150 }, (const double[]){ 58 }, 1);
        CHECK_EQ_INT(lk_run(v, 400, 100, at, 3), 1);
        CHECK(at[0] >= 150 && at[0] <= 152);
    }
}

TEST(likelihood_single_count_after_a_run_of_zeros_is_no_incident)
{
    /* weekly case counts of 0-7 for 100 weeks, then 60 weeks of zeros (the
     * typical error decays towards 0), a single case at 170 and an
     * outbreak of 15 at 190. Against a typical error of 0.1, the single
     * case was an incident; the data's resolution (whole counts) bounds
     * the typical error from below at a quarter of it: only the outbreak */
    double v[220];
    uint64_t rs = 11;
    for (int i = 0; i < 220; i++) {
        double g = 3 + 1.5 * gauss(&rs);
        v[i] = i < 100 ? floor(g < 0 ? 0 : g) : i == 170 ? 1 : i == 190 ? 15 : 0;
    }
    int at[2];
    CHECK_EQ_INT(lk_run(v, 220, 160, at, 2), 1);
    CHECK_EQ_INT(at[0], 190);
    /* the same series in tenths of a case (one decimal): the same verdicts */
    for (int i = 0; i < 220; i++) v[i] = v[i] / 10;
    CHECK_EQ_INT(lk_run(v, 220, 160, at, 2), 1);
    CHECK_EQ_INT(at[0], 190);
}

TEST(likelihood_huge_incidents_do_not_hide_the_next_one)
{
    /* five spikes of 200 sd (each an incident), then one of 10 sd at 330.
     * The long-run moments of the surprise learnt the huge spikes' surprises
     * in full: their spread grew to about twice that of the noise and the
     * 10 sd spike went unseen; winsorised at `clip` deviations it is seen */
    double v[400];
    for (uint64_t seed = 1; seed <= 3; seed++) {
        uint64_t rs = seed;
        for (int i = 0; i < 400; i++)
            v[i] = 50 + gauss(&rs) + (i >= 150 && i <= 230 && i % 20 == 10 ? 200 : 0) + (i == 330 ? 10 : 0);
        int at[6];
        CHECK_EQ_INT(lk_run(v, 400, 100, at, 6), 6);
        CHECK_EQ_INT(at[0], 150);
        CHECK_EQ_INT(at[5], 330);
    }
}

TEST(likelihood_state_with_a_bad_resolution_starts_over)
{
    /* state bytes read back from a snapshot: a resolution outside [0, 1]
     * (NaN, negative) would floor the typical error at nonsense; the
     * series starts over instead (never a NaN verdict) */
    static char id[] = "lk", metric[] = "m";
    struct rule_cfg rc;
    memset(&rc, 0, sizeof rc);
    rc.id = id; rc.metric = metric; rc.slot = -1;
    int np = 0;
    for (const struct det_param *q = det_likelihood.params; q->name; q++) rc.p[np++] = q->def;
    struct lk_st st;
    memset(&st, 0, sizeof st);
    struct det_out o;
    struct det_ctx cx;
    memset(&cx, 0, sizeof cx);
    cx.slot = -1;
    for (int i = 0; i < 100; i++) { cx.v = i % 5; det_likelihood.update(&rc, &st, &cx, &o); }
    CHECK_NEAR(st.res, 1, 1e-9);
    st.res = NAN;
    cx.v = 3;
    CHECK_EQ_INT(det_likelihood.update(&rc, &st, &cx, &o), DET_UNKNOWN);
    CHECK_EQ_INT((int)st.n, 0);
    det_likelihood.update(&rc, &st, &cx, &o);
    CHECK(st.res >= 0 && st.res <= 1);
    CHECK_EQ_INT((int)st.n, 1);
}

int main(void)
{
    RUN(likelihood_change_back_inside_the_quiet_is_a_new_incident);
    RUN(likelihood_single_count_after_a_run_of_zeros_is_no_incident);
    RUN(likelihood_huge_incidents_do_not_hide_the_next_one);
    RUN(likelihood_state_with_a_bad_resolution_starts_over);
    return TEST_REPORT();
}
