/* test_incident.c - one incident per fault (issue 11 item 6) on the
 * built-in `gpu` profile, where incidents are on: a broken fan that opens
 * several rules' episodes on one GPU is exactly one incident listing every
 * one of those rules; two faults far apart on one GPU are two incidents
 * with distinct ids; a storm (a fault flapping for an hour, with Xid
 * bursts and power-cap spells out of phase) is one incident; GPUs without
 * a fault have none. */
#include "test.h"
#include "../detect/engine.h"
#include "engine_harness.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAXREC 512

struct rec { char type[8], rule[32], rules[256], incid[33]; int gpu, count; int64_t ts; };
struct recs { struct rec r[MAXREC]; int n; };

static void rec_emit(void *ctx, const struct event *ev)
{
    struct recs *c = ctx;
    if (c->n >= MAXREC) return;
    struct rec *r = &c->r[c->n++];
    ev_str(ev, "event.type", r->type, sizeof r->type);
    ev_str(ev, "rule.id", r->rule, sizeof r->rule);
    ev_str(ev, "anomaly.rules", r->rules, sizeof r->rules);
    ev_str(ev, "anomaly.incident_id", r->incid, sizeof r->incid);
    double g = -1, n = 0;
    event_get_num(ev, "gpu.index", &g);
    event_get_num(ev, "anomaly.rule_count", &n);
    r->gpu = (int)g;
    r->count = (int)n;
    r->ts = ev->ts_ms;
    if (getenv("TEST_VERBOSE"))
        printf("    %s %s gpu %d at %lld s %s\n", r->type, r->rule, r->gpu, (long long)((ev->ts_ms - T0) / 1000), r->rules);
}

/* Records of rule (NULL: any rule but gpu.incident) and type on gpu. */
static int count(const struct recs *c, const char *rule, const char *type, int gpu)
{
    int n = 0;
    for (int i = 0; i < c->n; i++) {
        const struct rec *r = &c->r[i];
        int inc = !strcmp(r->rule, "gpu.incident");
        if (r->gpu == gpu && !strcmp(r->type, type) && (rule ? !strcmp(r->rule, rule) : !inc)) n++;
    }
    return n;
}

/* 1 when the comma-separated list has the id. */
static int listed(const char *list, const char *id)
{
    size_t n = strlen(id);
    for (const char *p = list; (p = strstr(p, id)); p += n)
        if ((p == list || p[-1] == ',') && (p[n] == ',' || !p[n])) return 1;
    return 0;
}

static struct engine *gpu_engine(struct profile **p, struct recs *c)
{
    memset(c, 0, sizeof *c);
    char err[256];
    *p = profile_load(NULL, "gpu", err, sizeof err);
    CHECK(*p != NULL);
    if (*p) CHECK((*p)->incidents);    /* on in the built-in gpu profile */
    return *p ? engine_new(*p, rec_emit, c) : NULL;
}

/* Deterministic noise in [0,1). */
static double rnd(uint64_t *st)
{
    *st = *st * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*st >> 11) / 9007199254740992.0;
}

/* One busy sample of 4 GPUs at second s; hot(g, s) gives GPU g's excess
 * temperature (a fan or cooling fault), which throttles its clock above
 * 88 C and sets the thermal flag. */
static void busy(struct engine *e, int64_t s, uint64_t *r, double (*hot)(int, int64_t), double pviol1)
{
    for (int g = 0; g < 4; g++) {
        double temp = 64 + g + hot(g, s) + rnd(r) - 0.5, clk = 1980, pw = 520 + 10 * rnd(r);
        if (temp > 88) { clk = 1980 - (temp - 86) * 90; pw = 470; }
        sample(e, "h", g, s, "gpu.utilization.gpu.pct", 97 + 2 * rnd(r), "gpu.power.usage", pw,
               "gpu.clock.streaming_multiprocessor_frequency", clk, "gpu.temperature.gpu", (double)(int)(temp + 0.5),
               "gpu.memory.framebuffer.used_size", 50000.0, "gpu.throttling.power.pct", g == 1 ? pviol1 : 0.0,
               "gpu.throttling.thermal.active", temp > 88 ? 1.0 : 0.0, NULL);
    }
}

/* GPU 2's fan fails at 600 s: +0.8 C a minute for 40 minutes (creep,
 * rise, temperature limit, throttling, clock drop, peers...), replaced at
 * 3000 s. */
static double fan(int g, int64_t s)
{
    if (g != 2 || s < 600) return 0;
    if (s < 3000) return 0.8 * (double)(s - 600) / 60;
    double left = 32 - (double)(s - 3000) / 4;    /* cools within 2 minutes */
    return left > 0 ? left : 0;
}

TEST(broken_fan_is_one_incident_with_every_rule)
{
    struct profile *p;
    struct recs c;
    struct engine *e = gpu_engine(&p, &c);
    if (!e) return;
    uint64_t r = 41;
    for (int64_t s = 0; s < 4800; s++) busy(e, s, &r, fan, 0);
    engine_flush(e);
    CHECK_EQ_INT(count(&c, "gpu.incident", "start", 2), 1);
    CHECK_EQ_INT(count(&c, "gpu.incident", "end", 2), 1);
    /* every rule with an episode on GPU 2 is listed by the incident's end */
    const struct rec *end = NULL;
    for (int i = 0; i < c.n; i++)
        if (c.r[i].gpu == 2 && !strcmp(c.r[i].rule, "gpu.incident") && !strcmp(c.r[i].type, "end")) end = &c.r[i];
    CHECK(end != NULL);
    if (!end) goto out;
    int rules = 0;
    for (int i = 0; i < c.n; i++) {
        const struct rec *x = &c.r[i];
        if (x->gpu != 2 || strcmp(x->type, "start") || !strcmp(x->rule, "gpu.incident")) continue;
        int first = 1;
        for (int k = 0; k < i; k++)
            if (c.r[k].gpu == 2 && !strcmp(c.r[k].rule, x->rule)) first = 0;
        rules += first;
        if (!listed(end->rules, x->rule)) printf("  %s not listed in %s\n", x->rule, end->rules);
        CHECK(listed(end->rules, x->rule));
    }
    CHECK(rules >= 4);
    CHECK_EQ_INT(end->count, rules);
    /* the end comes after the last episode of the GPU ended */
    for (int i = 0; i < c.n; i++)
        if (c.r[i].gpu == 2 && !strcmp(c.r[i].type, "end") && strcmp(c.r[i].rule, "gpu.incident")) CHECK(c.r[i].ts <= end->ts);
    /* the healthy GPUs: no episode, no incident */
    for (int g = 0; g < 4; g++)
        if (g != 2) CHECK_EQ_INT(count(&c, NULL, "start", g) + count(&c, "gpu.incident", "start", g), 0);
out:
    engine_free(e);
    profile_free(p);
}

/* GPU 0 loses cooling twice, 40 minutes apart (within one UTC hour). */
static double twice(int g, int64_t s)
{
    if (g != 0) return 0;
    for (int64_t at = 300; at <= 2700; at += 2400)
        if (s >= at && s < at + 420) {
            double el = (double)(s - at);
            return el < 180 ? el / 180 * 30 : 30;
        }
    return 0;
}

TEST(two_faults_far_apart_are_two_incidents)
{
    struct profile *p;
    struct recs c;
    struct engine *e = gpu_engine(&p, &c);
    if (!e) return;
    uint64_t r = 43;
    for (int64_t s = 0; s < 3600; s++) busy(e, s, &r, twice, 0);
    engine_flush(e);
    CHECK_EQ_INT(count(&c, "gpu.incident", "start", 0), 2);
    CHECK_EQ_INT(count(&c, "gpu.incident", "end", 0), 2);
    CHECK(count(&c, NULL, "start", 0) >= 4);      /* several rules each time */
    const char *first = NULL;
    for (int i = 0; i < c.n; i++)
        if (!strcmp(c.r[i].rule, "gpu.incident") && !strcmp(c.r[i].type, "start")) {
            CHECK(strlen(c.r[i].incid) == 32);
            if (!first) first = c.r[i].incid;
            else CHECK(strcmp(first, c.r[i].incid) != 0);
        }
    engine_free(e);
    profile_free(p);
}

/* A storm on GPU 1 for an hour: the temperature above the limit for 20 s
 * every 2 minutes, power capping for 40 s every 5 minutes, and an Xid
 * burst every 7 minutes, each rule flapping out of phase with the others. */
static double flap(int g, int64_t s)
{
    return g == 1 && s >= 600 && s < 4200 && s % 120 < 20 ? 26 : 0;
}

TEST(storm_is_one_incident)
{
    struct profile *p;
    struct recs c;
    struct engine *e = gpu_engine(&p, &c);
    if (!e) return;
    uint64_t r = 47;
    for (int64_t s = 0; s < 5400; s++) {
        int storm = s >= 600 && s < 4200;
        busy(e, s, &r, flap, storm && s % 300 < 40 ? 60 : 0);
        if (storm && s % 420 == 0) {
            struct event ev;
            xid_event(&ev, "h", T0 + s * 1000, 13);
            event_add_int(&ev, "gpu.index", 1);
            engine_feed(e, &ev);
            event_free(&ev);
        }
    }
    engine_flush(e);
    int eps = count(&c, NULL, "start", 1);
    printf("  storm: %d episodes of %s on GPU 1\n", eps, "several rules");
    CHECK(eps >= 3);
    CHECK_EQ_INT(count(&c, "gpu.incident", "start", 1), 1);
    CHECK_EQ_INT(count(&c, "gpu.incident", "end", 1), 1);
    for (int g = 0; g < 4; g++)
        if (g != 1) CHECK_EQ_INT(count(&c, "gpu.incident", "start", g), 0);
    engine_free(e);
    profile_free(p);
}

/* A reload that turns incidents off while one is open, then on again: the
 * next fault is an incident of its own that ends (the forgotten one does
 * not hold it open). */
TEST(reload_off_and_on_again)
{
    struct recs c;
    memset(&c, 0, sizeof c);
    struct profile *on = prof_of("{\"extends\":\"gpu\",\"incidents\":true}");
    struct profile *off = prof_of("{\"extends\":\"gpu\",\"incidents\":false}");
    struct profile *on2 = prof_of("{\"extends\":\"gpu\",\"incidents\":true}");
    if (!on || !off || !on2) { CHECK(0); return; }
    struct engine *e = engine_new(on, rec_emit, &c);
    uint64_t r = 53;
    for (int64_t s = 0; s < 3600; s++) {
        if (s == 500) engine_reload(e, off, NULL);      /* the first fault's incident is open */
        if (s == 1500) engine_reload(e, on2, NULL);
        busy(e, s, &r, twice, 0);
    }
    engine_flush(e);
    CHECK_EQ_INT(count(&c, "gpu.incident", "start", 0), 2);   /* the first (cut off), the second */
    CHECK_EQ_INT(count(&c, "gpu.incident", "end", 0), 1);     /* the second ended */
    engine_free(e);
    profile_free(on);
    profile_free(off);
    profile_free(on2);
}

int main(void)
{
    gl_log_level = GL_LOG_ERROR;
    RUN(broken_fan_is_one_incident_with_every_rule);
    RUN(two_faults_far_apart_are_two_incidents);
    RUN(storm_is_one_incident);
    RUN(reload_off_and_on_again);
    return TEST_REPORT();
}
