/* test_slow_intervals.c - series sampled more slowly than every 6 hours
 * (weekly case counts, monthly and yearly business figures) are learnt and
 * judged like fast ones: the step that teaches the interval was refused as
 * "too far ahead" (a fixed 6 h limit before the interval was known), so such
 * a series kept one sample for ever and never alarmed; a date far in the
 * future is still refused once the interval is known. */
#include "cap_harness.h"

#include <string.h>

static const char *RZ = "{\"window\":64,\"window_span_s\":3600,\"gap_s\":5,\"rules\":[{\"id\":\"rz\",\"detector\":\"robust_z\","
                        "\"metric\":\"m\",\"params\":{\"z\":6,\"min_n\":30}}]}";

/* n samples step_s apart with a spike at spike_at: the rule fires once
 * there, no sample is refused and no gap is counted. */
static void learns_and_judges(int64_t step_s, int n, int spike_at)
{
    struct profile *p = prof_of(RZ);
    if (!p) { CHECK(0); return; }
    struct cap c;
    struct engine *e = cap_engine(&c, p);
    for (int i = 0; i < n; i++) {
        sample(e, "h", -1, i * step_s, "m", i == spike_at ? 400.0 : 100.0 + i % 7, NULL);
        if (i == spike_at - 1) CHECK_EQ_INT(c.n[0], 0);
        if (i == spike_at) CHECK_EQ_INT(c.n[0], 1);
    }
    const struct engine_stats *st = engine_get_stats(e);
    CHECK_EQ_INT((int)st->too_far_ahead, 0);
    CHECK_EQ_INT((int)st->clock_steps, 0);
    CHECK_EQ_INT((int)st->gaps, 0);
    CHECK_EQ_INT(c.n[0], 1);
    cap_done(e, p, &c);
}

/* The generic profile's own rule (seasonal likelihood) on a weekly series
 * with a spike: it warms up and opens one episode at the spike. */
TEST(generic_profile_judges_a_weekly_series)
{
    char err[256];
    struct profile *p = profile_load(NULL, "generic", err, sizeof err);
    if (!p) { CHECK(0); return; }
    struct cap c;
    struct engine *e = cap_engine(&c, p);
    uint64_t st = 88172645463325252ULL;
    int before = -1;
    for (int i = 0; i < 200; i++) {
        st ^= st << 13; st ^= st >> 7; st ^= st << 17;
        double noise = (double)(st >> 40) / (double)(1ULL << 24) - 0.5;
        if (i == 180) before = count_rec(&c, "metric.likelihood", "start");
        sample(e, "h", -1, (int64_t)i * 7 * 86400, "m", i == 180 ? 200.0 : 100.0 + 4 * noise, NULL);
    }
    CHECK_EQ_INT((int)engine_get_stats(e)->too_far_ahead, 0);
    CHECK_EQ_INT(count_rec(&c, "metric.likelihood", "start") - before, 1);
    cap_done(e, p, &c);
}

TEST(weekly_series_is_learnt)  { learns_and_judges(7 * 86400, 120, 100); }
TEST(monthly_series_is_learnt) { learns_and_judges(30 * 86400, 120, 100); }
TEST(yearly_series_is_learnt)  { learns_and_judges(365 * 86400, 60, 50); }

TEST(far_future_date_still_refused_once_the_interval_is_known)
{
    struct profile *p = prof_of(RZ);
    if (!p) { CHECK(0); return; }
    struct cap c;
    struct engine *e = cap_engine(&c, p);
    for (int i = 0; i < 40; i++) sample(e, "h", -1, i * 7 * 86400, "m", 100.0 + i % 7, NULL);
    sample(e, "h", -1, 40LL * 7 * 86400 + 30LL * 365 * 86400, "m", 100.0, NULL);   /* 30 years ahead */
    CHECK_EQ_INT((int)engine_get_stats(e)->too_far_ahead, 1);
    sample(e, "h", -1, 40LL * 7 * 86400, "m", 100.0, NULL);   /* the next week: taken, not out of order */
    CHECK_EQ_INT((int)engine_get_stats(e)->out_of_order, 0);
    CHECK_EQ_INT(c.n[0], 0);
    cap_done(e, p, &c);
}

int main(void)
{
    RUN(generic_profile_judges_a_weekly_series);
    RUN(weekly_series_is_learnt);
    RUN(monthly_series_is_learnt);
    RUN(yearly_series_is_learnt);
    RUN(far_future_date_still_refused_once_the_interval_is_known);
    return TEST_REPORT();
}
