/* test_gpu_rules.c - limits of the built-in `gpu` profile as
 * docs/detectors.md states them ("The gpu profile: ..."), for the rules
 * whose limits no other test pinned (scripts/mutate.sh changes each one
 * and needs a test to fail): the temperature rules' clear counts, the
 * robust z of gpu.temp.rise, the clock drop's `for`, the peers' power and
 * temperature limits, the ECC counters, missing data after 5 s, and the
 * generic profile's likelihood rule's clear count.
 * Timing (docs/detectors.md, "Episodes and records"): a start record's
 * @timestamp is the sample that completed `for` anomalous verdicts after
 * event.start; an end's is the one that completed `clear` normal verdicts
 * and `cooldown_s` after event.end. With 1-s samples a clear count below
 * the cooldown is hidden by it, so clear counts are pinned on sparser
 * samples (dmon -d 10, -d 2). */
#include "lk_harness.h"

static const char *TEMP = "gpu.temperature.gpu", *UT = "gpu.utilization.gpu.pct", *PW = "gpu.power.usage",
                  *CLK = "gpu.clock.streaming_multiprocessor_frequency", *FB = "gpu.memory.framebuffer.used_size";

/* An engine on a built-in profile and the capture of its records. */
struct rig {
    struct profile *p;
    struct cap c;
    struct engine *e;
};

/* Opens r on the built-in profile name; 0, or -1 (the test failed). */
static int rig_open(struct rig *r, const char *name)
{
    r->p = profile_load(NULL, name, (char[256]){ 0 }, 256);
    if (!r->p) { CHECK(0); return -1; }
    r->e = cap_engine(&r->c, r->p);
    return 0;
}

/* Checks that rule has one episode on gpu, opened lag_start ms after its
 * first anomalous sample, and (lag_end >= 0) ended lag_end ms after its
 * last one; then frees r. */
static void rig_check_close(struct rig *r, const char *rule, int gpu, int64_t lag_start, int64_t lag_end)
{
    const struct cap *c = &r->c;
    int s = find_rec(c, rule, "start", gpu), n = find_rec(c, rule, "end", gpu), starts = 0;
    CHECK(s >= 0);
    if (s >= 0) CHECK_EQ_INT(c->ts[s] - c->start_field[s], lag_start);
    for (int i = 0; i < c->nrec; i++) starts += !strcmp(c->rule[i], rule) && !strcmp(c->type[i], "start") && c->gpu[i] == gpu;
    CHECK_EQ_INT(starts, 1);
    if (lag_end >= 0) {
        CHECK(n >= 0);
        if (n >= 0) CHECK_EQ_INT(c->ts[n] - c->end_field[n], lag_end);
    }
    cap_done(r->e, r->p, &r->c);
}

/* gpu.temp.high: above 87 C for 10 samples, ended by 10 samples under 82 C
 * and 60 s: every 10 s, the end comes 100 s after the last hot sample */
TEST(temp_high_for_10_clear_10_samples)
{
    struct rig r;
    if (rig_open(&r, "gpu")) return;
    for (int64_t t = 0; t < 1200; t += 10) sample(r.e, "h", 0, t, TEMP, t >= 300 && t < 600 ? 90.0 : 70.0, NULL);
    rig_check_close(&r, "gpu.temp.high", 0, 90000, 100000);
}

/* gpu.temp.rise at steady load: robust z >= 4 and 4 C over the median.
 * Temperatures 60-61 C (median 60.5, scale at its floor of 1): a step to
 * 65.5 (z 5, 5 C) opens an episode after 3 samples; one to 64 (z 3.5,
 * 3.5 C) does not. Every 2 s: ended 20 samples (40 s, more than the 30 s
 * cooldown) after the step went away. */
TEST(temp_rise_at_z_4_and_4_degrees_clear_20_samples)
{
    struct rig r;
    if (rig_open(&r, "gpu")) return;
    for (int64_t t = 0; t < 800; t += 2)
        for (int g = 0; g < 2; g++) {
            double temp = t >= 300 && t < 340 ? (g == 0 ? 65.5 : 64.0) : 60.0 + (t / 2 % 3) * 0.5;
            sample(r.e, "h", g, t, UT, 90.0, PW, 500.0 + g, TEMP, temp, NULL);
        }
    CHECK_EQ_INT(find_rec(&r.c, "gpu.temp.rise", "start", 1), -1);
    rig_check_close(&r, "gpu.temp.rise", 0, 4000, 40000);
}

/* gpu.clock.drop: the SM clock 20 % under what it sustains, under load,
 * for 5 samples (docs: "clock drop (5 s)") */
TEST(clock_drop_for_5)
{
    struct rig r;
    if (rig_open(&r, "gpu")) return;
    for (int64_t t = 0; t < 130; t++) sample(r.e, "h", 0, t, UT, 99.0, CLK, t < 100 ? 1980.0 : 1500.0, NULL);
    rig_check_close(&r, "gpu.clock.drop", 0, 4000, -1);
}

/* A peer limit of rule on an 8-GPU training job (98 % busy, the same
 * framebuffer, power 600 W, 60 C, 1980 MHz): GPU 2 at the value `near`
 * for 200 s (metric: power when temp is 0, else temperature) opens no
 * episode; then GPU 5 at `far` opens one, lag ms after it began. */
static void peer_limit(const char *rule, int temp, double near, double far, int64_t lag)
{
    struct rig r;
    if (rig_open(&r, "gpu")) return;
    for (int64_t t = 0; t < 700; t++)
        for (int g = 0; g < 8; g++) {
            double pw = 600.0 + g, tc = 60.0, v = g == 2 && t >= 100 && t < 300 ? near : g == 5 && t >= 500 ? far : 0;
            if (v != 0 && temp) tc = v;
            else if (v != 0) pw = v;
            sample(r.e, "h", g, t, UT, 98.0, PW, pw, TEMP, tc, CLK, 1980.0, FB, 61000.0, NULL);
            if (t == 400 && g == 0) CHECK_EQ_INT(find_rec(&r.c, rule, "start", -1), -1);
        }
    rig_check_close(&r, rule, 5, lag, -1);
}

/* gpu.peer.power: 25 % apart from its peers for 10 s: 18 % under them is
 * no straggler, 35 % under is, 9 s after it began */
TEST(peer_power_25_percent_for_10)
{
    peer_limit("gpu.peer.power", 0, 492.0, 390.0, 9000);
}

/* gpu.peer.temp: 15 C above its peers for 30 s: 12 C above them is not
 * hotter than its peers, 18 C above is, 29 s after it began */
TEST(peer_temp_15_degrees_for_30)
{
    peer_limit("gpu.peer.temp", 1, 72.0, 78.0, 29000);
}

/* ECC counters: single-bit errors +10 within 60 s (9 is not), double-bit
 * errors any (+1) */
TEST(ecc_single_bit_10_in_60_s_double_bit_any)
{
    struct rig r;
    if (rig_open(&r, "gpu")) return;
    const char *SBE = "gpu.ecc.single_bit.count", *DBE = "gpu.ecc.double_bit.count";
    for (int64_t t = 0; t < 600; t++) {
        /* GPU 0: +9 over 100-159 s; GPU 1: +10 over 100-159 s; GPU 2: one double-bit error at 300 s */
        int64_t k = t < 100 ? 0 : t < 160 ? t - 100 : 60;
        sample(r.e, "h", 0, t, SBE, (double)(5 + k * 9 / 60), DBE, 0.0, NULL);
        sample(r.e, "h", 1, t, SBE, (double)(5 + k * 10 / 60), DBE, 0.0, NULL);
        sample(r.e, "h", 2, t, SBE, 0.0, DBE, t < 300 ? 0.0 : 1.0, NULL);
    }
    CHECK_EQ_INT(find_rec(&r.c, "gpu.ecc.sbe", "start", 0), -1);
    CHECK(find_rec(&r.c, "gpu.ecc.sbe", "start", 1) >= 0);
    int d = find_rec(&r.c, "gpu.ecc.dbe", "start", 2);
    CHECK(d >= 0 && r.c.ts[d] == T0 + 300000);
    rig_check_close(&r, "gpu.ecc.dbe", 2, 0, -1);
}

/* gpu.missing: a GPU silent for more than 5 s while the others report:
 * GPU 2's last sample at 99 s, the episode at 104-106 s */
TEST(missing_after_5_s)
{
    struct rig r;
    if (rig_open(&r, "gpu")) return;
    for (int64_t t = 0; t < 200; t++)
        for (int g = 0; g < 4; g++)
            if (g != 2 || t < 100) sample(r.e, "h", g, t, TEMP, 60.0, NULL);
    int s = find_rec(&r.c, "gpu.missing", "start", 2);
    CHECK(s >= 0 && r.c.ts[s] >= T0 + 104000 && r.c.ts[s] <= T0 + 106000);
    cap_done(r.e, r.p, &r.c);
}

/* The generic profile's metric.likelihood: `for` 1, `clear` 5 and no
 * cooldown: an outlier in a noisy series opens an episode at once, and it
 * ends 5 samples (5 minutes at 1-minute samples) after its last anomalous
 * sample. */
TEST(generic_likelihood_clear_5)
{
    struct rig r;
    if (rig_open(&r, "generic")) return;
    uint64_t st = 11;
    for (int64_t i = 0; i < 400; i++) sample(r.e, "h", -1, i * 60, "m", i == 300 ? 160 : 100 + 2 * gauss(&st), NULL);
    rig_check_close(&r, "metric.likelihood", -1, 0, 300000);
}

int main(void)
{
    RUN(temp_high_for_10_clear_10_samples);
    RUN(temp_rise_at_z_4_and_4_degrees_clear_20_samples);
    RUN(clock_drop_for_5);
    RUN(peer_power_25_percent_for_10);
    RUN(peer_temp_15_degrees_for_30);
    RUN(ecc_single_bit_10_in_60_s_double_bit_any);
    RUN(missing_after_5_s);
    RUN(generic_likelihood_clear_5);
    return TEST_REPORT();
}
