/*
 * test_sampling.c - sampling at any rate (issue 25): several rows of one GPU
 * within one stamp (10 rows a second with whole-second stamps, interleaved
 * readers) are folded into the stamp's sample, not dropped as duplicates; a
 * duplicate is only a repeated row (the same event.id); 4 Hz input does not
 * open an episode faster than the rule's documented duration; a hot GPU
 * among seven peers at 4 Hz opens one episode and its peers none.
 */
#include "cap_harness.h"

#include <math.h>
#include <stdlib.h>

static uint64_t row_no;

/* Starts ev as a row of GPU gpu of host "ws" at ms after T0, with a fresh
 * event.id (or that of row same_as when it is not 0). */
static void begin_row(struct event *ev, int gpu, int64_t ms, uint64_t same_as)
{
    event_init(ev);
    ev->kind = "metric";
    ev->dataset = "csv.generic";
    ev->host = "ws";
    ev->offset = -1;
    ev->ts_ms = T0 + ms;
    snprintf(ev->id, sizeof ev->id, "%032llx", (unsigned long long)(same_as ? same_as : ++row_no));
    event_add_int(ev, "gpu.index", gpu);
}

/* Feeds one row of GPU gpu at ms (begin_row), then key/value pairs up to NULL. */
static void row(struct engine *e, int gpu, int64_t ms, uint64_t same_as, ...)
{
    struct event ev;
    begin_row(&ev, gpu, ms, same_as);
    va_list ap;
    va_start(ap, same_as);
    const char *k;
    while ((k = va_arg(ap, const char *))) {
        double v = va_arg(ap, double);
        size_t kl = strlen(k);
        if (kl > 7 && !strcmp(k + kl - 7, ".active")) event_add_bool(&ev, k, v != 0);   /* dmon's tviol */
        else event_add_num(&ev, k, v);
    }
    va_end(ap);
    engine_feed(e, &ev);
    event_free(&ev);
}

/* 11 minutes of a V100 at 10 rows a second with whole-second epoch stamps:
 * no row is a duplicate, nine of ten are folded, one sample a second; a
 * repeated row (same id) is the only duplicate; the folded value is the
 * rows' mean, an integer when they all were. */
TEST(rows_within_one_stamp_are_folded)
{
    struct profile *p = prof_builtin("gpu");
    if (!p) { CHECK(0); return; }
    struct cap c;
    struct engine *e = cap_engine(&c, p);
    uint64_t last = 0;
    for (int s = 0; s < 660; s++)
        for (int k = 0; k < 10; k++) {
            int busy = s >= 200;
            row(e, 0, s * 1000LL, 0, "gpu.temperature.gpu", (double)(busy ? 60 + (k >= 7) : 40),
                "gpu.utilization.gpu.pct", busy ? 95.0 : 0.0, "gpu.power.usage", busy ? 240.0 + k : 50.0, NULL);
            last = row_no;
        }
    row(e, 0, 659 * 1000LL, last, "gpu.temperature.gpu", 61.0, "gpu.utilization.gpu.pct", 95.0, "gpu.power.usage", 249.0, NULL);
    engine_flush(e);
    const struct engine_stats *st = engine_get_stats(e);
    CHECK_EQ_INT((int)st->duplicates, 1);
    CHECK_EQ_INT((int)st->samples, 660);
    CHECK_EQ_INT((int)st->folded, 6600 - 660);
    CHECK_EQ_INT((int)st->out_of_order, 0);
    /* healthy: a job start and steady load are no anomaly */
    CHECK_EQ_INT(c.n[0], 0);
    cap_done(e, p, &c);
}

/* The mean of a folded step, rounded when every row was an integer. */
TEST(folded_value_is_the_mean)
{
    struct profile *p = prof_of("{\"window\":64,\"resolution_ms\":1000,\"rules\":[{\"id\":\"t\",\"detector\":\"threshold\","
                                "\"metric\":\"gpu.temperature.gpu\",\"for\":1,\"params\":{\"high\":60.5}}]}");
    if (!p) { CHECK(0); return; }
    struct cap c;
    struct engine *e = cap_engine(&c, p);
    for (int s = 0; s < 5; s++)
        for (int k = 0; k < 4; k++) row(e, 0, s * 1000LL + k * 250, 0, "gpu.temperature.gpu", 60.0 + (k == 3), NULL);
    /* 60, 60, 60, 61: the mean 60.25 rounds to 60, under 60.5 */
    engine_flush(e);
    CHECK_EQ_INT(c.n[0], 0);
    for (int s = 5; s < 8; s++)
        for (int k = 0; k < 4; k++) row(e, 0, s * 1000LL + k * 250, 0, "gpu.temperature.gpu", 60.0 + (k >= 2), NULL);
    engine_flush(e);
    /* 60, 60, 61, 61: 60.5 rounds to 61: above */
    CHECK_EQ_INT(c.n[0], 1);
    CHECK(c.nrec >= 1 && fabs(c.value[0] - 61) < 1e-9);
    CHECK(c.nrec >= 1 && (c.ts[0] - T0) % 1000 == 0);       /* stamped at the step's start */
    cap_done(e, p, &c);
}

/* 4 Hz: a temperature over 87 °C for 6 s opens nothing (the rule wants
 * 10 s); for 20 s it opens one episode no sooner than 9 s after the heat
 * began. Without folding, 10 samples at 4 Hz are 2.5 s. */
TEST(fast_sampling_keeps_documented_durations)
{
    struct profile *p = prof_builtin("gpu");
    if (!p) { CHECK(0); return; }
    struct cap c;
    struct engine *e = cap_engine(&c, p);
    int64_t t = 0;
    for (int i = 0; i < 4 * 120; i++, t += 250) row(e, 0, t, 0, "gpu.temperature.gpu", 70.0, "gpu.utilization.gpu.pct", 90.0, NULL);
    for (int i = 0; i < 4 * 6; i++, t += 250) row(e, 0, t, 0, "gpu.temperature.gpu", 90.0, "gpu.utilization.gpu.pct", 90.0, NULL);
    for (int i = 0; i < 4 * 60; i++, t += 250) row(e, 0, t, 0, "gpu.temperature.gpu", 70.0, "gpu.utilization.gpu.pct", 90.0, NULL);
    CHECK_EQ_INT(count_rec(&c, "gpu.temp.high", "start"), 0);
    int64_t hot = t;
    for (int i = 0; i < 4 * 20; i++, t += 250) row(e, 0, t, 0, "gpu.temperature.gpu", 90.0, "gpu.utilization.gpu.pct", 90.0, NULL);
    engine_flush(e);
    CHECK_EQ_INT(count_rec(&c, "gpu.temp.high", "start"), 1);
    for (int i = 0; i < c.nrec; i++)
        if (!strcmp(c.rule[i], "gpu.temp.high") && !strcmp(c.type[i], "start")) CHECK(c.ts[i] - (T0 + hot) >= 9000);
    cap_done(e, p, &c);
}

/* 8 GPUs at 4 Hz, fine stamps a little apart per GPU; GPU 5 runs 20 °C hotter
 * at the same load for the whole run: one episode of gpu.peer.temp on GPU
 * 5, none elsewhere, none before its documented 30 s. */
TEST(hot_gpu_among_peers_at_4hz)
{
    struct profile *p = prof_builtin("gpu");
    if (!p) { CHECK(0); return; }
    struct cap c;
    struct engine *e = cap_engine(&c, p);
    unsigned seed = 7;
    for (int i = 0; i < 158 * 4; i++)
        for (int g = 0; g < 8; g++) {
            seed = seed * 1103515245u + 12345u;
            double noise = (double)((seed >> 16) % 3) - 1;
            row(e, g, i * 250LL + g * 3, 0, "gpu.temperature.gpu", (g == 5 ? 82.0 : 62.0) + noise,
                "gpu.utilization.gpu.pct", 100.0, "gpu.power.usage", (g == 5 ? 330.0 : 300.0) + noise * 5,
                "gpu.memory.framebuffer.used_size", 70000.0, NULL);
        }
    engine_flush(e);
    int on5 = 0, elsewhere = 0;
    for (int i = 0; i < c.nrec; i++) {
        if (strcmp(c.type[i], "start")) continue;
        if (c.gpu[i] == 5 && !strcmp(c.rule[i], "gpu.peer.temp")) {
            on5++;
            CHECK(c.ts[i] - T0 >= 29000);
        } else if (c.gpu[i] != 5) {
            elsewhere++;
            printf("  start of %s on GPU %d\n", c.rule[i], c.gpu[i]);
        }
    }
    CHECK_EQ_INT(on5, 1);
    CHECK_EQ_INT(elsewhere, 0);
    cap_done(e, p, &c);
}

/* Rows of a step already judged (a GPU that turned out to be fast after
 * its first samples) are folded away and counted; booleans are true when
 * any row said so; a late row of an older step goes the usual way. */
TEST(switch_to_folding_and_booleans)
{
    struct profile *p = prof_of("{\"window\":64,\"resolution_ms\":1000,\"rules\":[{\"id\":\"t\",\"detector\":\"threshold\","
                                "\"metric\":\"gpu.throttling.thermal.active\",\"for\":1,\"params\":{\"high\":0.5}}]}");
    if (!p) { CHECK(0); return; }
    struct cap c;
    struct engine *e = cap_engine(&c, p);
    /* 1 s apart first: judged one by one */
    for (int s = 0; s < 3; s++) row(e, 0, s * 1000LL, 0, "gpu.throttling.thermal.active", 0.0, NULL);
    const struct engine_stats *st = engine_get_stats(e);
    CHECK_EQ_INT((int)st->samples, 3);
    CHECK_EQ_INT((int)st->folded, 0);
    /* then a second row at the last stamp: folded away (its stamp was judged) */
    row(e, 0, 2000, 0, "gpu.throttling.thermal.active", 1.0, NULL);
    CHECK_EQ_INT((int)st->folded, 1);
    CHECK_EQ_INT(c.n[0], 0);
    /* a step whose rows say false, false, true: true */
    row(e, 0, 3000, 0, "gpu.throttling.thermal.active", 0.0, NULL);
    row(e, 0, 3000, 0, "gpu.throttling.thermal.active", 0.0, NULL);
    row(e, 0, 3000, 0, "gpu.throttling.thermal.active", 1.0, NULL);
    row(e, 0, 4000, 0, "gpu.throttling.thermal.active", 0.0, NULL);
    CHECK_EQ_INT(c.n[0], 1);
    CHECK_EQ_INT((int)st->duplicates, 0);
    cap_done(e, p, &c);
}

/* Feeds 1 s rows of 8 GPUs for secs seconds: GPU g's model, temperature,
 * utilisation and power from the arrays (model NULL: none in the input). */
static void fleet_rows(struct engine *e, int secs, const char *const *model, const double *temp, const double *util,
                       const double *power)
{
    for (int s = 0; s < secs; s++)
        for (int g = 0; g < 8; g++) {
            struct event ev;
            begin_row(&ev, g, s * 1000LL, 0);
            if (model[g]) event_add_str(&ev, "gpu.name", model[g], strlen(model[g]));
            event_add_num(&ev, "gpu.temperature.gpu", temp[g] + (s + g) % 2);
            event_add_num(&ev, "gpu.utilization.gpu.pct", util[g]);
            event_add_num(&ev, "gpu.power.usage", power[g] + (s * 7 + g) % 5);
            event_add_num(&ev, "gpu.memory.framebuffer.used_size", 20000);
            engine_feed(e, &ev);
            event_free(&ev);
        }
}

/* Peers are GPUs of one model: an RTX 4080 that runs 20 °C hotter than seven
 * 4090s is no straggler among them; the same input without model names
 * flags it and says the comparison assumed the models alike. */
TEST(peers_are_of_one_model)
{
    static const char *const named[8] = { "NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4090",
                                          "NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4080", "NVIDIA GeForce RTX 4090",
                                          "NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4090" };
    static const char *const unnamed[8] = { NULL };
    static const double temp[8] = { 60, 61, 60, 62, 81, 60, 61, 60 }, util[8] = { 100, 100, 100, 100, 100, 100, 100, 100 },
                        power[8] = { 300, 300, 300, 300, 300, 300, 300, 300 };
    for (int k = 0; k < 2; k++) {
        struct profile *p = prof_builtin("gpu");
        if (!p) { CHECK(0); return; }
        struct cap c;
        struct engine *e = cap_engine(&c, p);
        fleet_rows(e, 300, k ? unnamed : named, temp, util, power);
        engine_flush(e);
        int n = count_rec(&c, "gpu.peer.temp", "start");
        CHECK_EQ_INT(n, k ? 1 : 0);
        if (k) CHECK(strstr(c.out.p ? c.out.p : "", "peers assumed alike") != NULL);
        cap_done(e, p, &c);
    }
}

/* Peers work at the same load: a GPU at 55 % utilisation drawing 200 W
 * beside seven at 100 % and 300 W is no power straggler (same_util 20);
 * at 100 % and 200 W it is. */
TEST(peers_are_at_the_same_load)
{
    static const char *const unnamed[8] = { NULL };
    static const double temp[8] = { 60, 60, 60, 60, 60, 60, 60, 60 };
    double util[8] = { 100, 100, 100, 55, 100, 100, 100, 100 }, power[8] = { 300, 300, 300, 200, 300, 300, 300, 300 };
    for (int k = 0; k < 2; k++) {
        struct profile *p = prof_builtin("gpu");
        if (!p) { CHECK(0); return; }
        struct cap c;
        struct engine *e = cap_engine(&c, p);
        util[3] = k ? 100 : 55;
        fleet_rows(e, 300, unnamed, temp, util, power);
        engine_flush(e);
        CHECK_EQ_INT(count_rec(&c, "gpu.peer.power", "start"), k ? 1 : 0);
        cap_done(e, p, &c);
    }
}

int main(void)
{
    RUN(rows_within_one_stamp_are_folded);
    RUN(folded_value_is_the_mean);
    RUN(fast_sampling_keeps_documented_durations);
    RUN(hot_gpu_among_peers_at_4hz);
    RUN(switch_to_folding_and_booleans);
    RUN(peers_are_of_one_model);
    RUN(peers_are_at_the_same_load);
    return TEST_REPORT();
}
