/* test_fleet.c - the fleet correlator (detect/fleet.h, issue 28 item 3): a
 * fault starting on 40 GPUs of 5 hosts of one rack is one fleet incident
 * naming all 40 GPUs; independent faults (scattered hosts, too few GPUs or
 * hosts, too far apart in time, other racks) make none; grouping by the
 * first topology label present, or by time alone; thresholds at their
 * edges; Xid codes as signatures; change records rate-limited; the end
 * after the hold or the expiry; a replay of the same records and a restart
 * through the per-partition state give no second fleet incident and the
 * same ids; bad state is refused with a reason and changes nothing; a
 * storm of distinct keys and GPUs stays within the caps. */
#include "test.h"
#include "../detect/fleet.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T0 1762473600000LL   /* 2025-11-07T00:00:00Z */
#define MAXREC 256

struct rec {
    char type[8], id[33], evid[33], sig[64], hosts[2048], gpus[8192], reason[1024], group[32], action[32];
    int gpu_count, host_count, open_count, xid;
    int64_t ts, start, end;
};
struct recs { struct rec r[MAXREC]; int n; };

static void str_of(const struct event *ev, const char *key, char *out, size_t n)
{
    size_t len;
    const char *s = event_get_str(ev, key, &len);
    snprintf(out, n, "%.*s", s ? (int)len : 0, s ? s : "");
}

static int64_t ts_of(const struct event *ev, const char *key)
{
    size_t len;
    int64_t t = 0;
    const char *s = event_get_str(ev, key, &len);
    if (s) gl_parse_iso_ts(s, len, &t);
    return t;
}

static int num_of(const struct event *ev, const char *key)
{
    double d = -1;
    event_get_num(ev, key, &d);
    return (int)d;
}

static void rec_emit(void *ctx, const struct event *ev)
{
    struct recs *c = ctx;
    if (c->n >= MAXREC) return;
    struct rec *r = &c->r[c->n++];
    memset(r, 0, sizeof *r);
    CHECK_EQ_STR(ev->dataset, "gpu.fleet_incident");
    CHECK_EQ_STR(ev->kind, "alert");
    char rule[32];
    str_of(ev, "rule.id", rule, sizeof rule);
    CHECK_EQ_STR(rule, "gpu.fleet");
    str_of(ev, "event.type", r->type, sizeof r->type);
    str_of(ev, "anomaly.incident_id", r->id, sizeof r->id);
    str_of(ev, "anomaly.signature", r->sig, sizeof r->sig);
    str_of(ev, "anomaly.hosts", r->hosts, sizeof r->hosts);
    str_of(ev, "anomaly.gpus", r->gpus, sizeof r->gpus);
    str_of(ev, "event.reason", r->reason, sizeof r->reason);
    str_of(ev, "anomaly.group", r->group, sizeof r->group);
    str_of(ev, "anomaly.action", r->action, sizeof r->action);
    memcpy(r->evid, ev->id, 33);
    r->gpu_count = num_of(ev, "anomaly.gpu_count");
    r->host_count = num_of(ev, "anomaly.host_count");
    r->open_count = num_of(ev, "anomaly.open_count");
    r->xid = num_of(ev, "gpu.xid.code");
    r->ts = ev->ts_ms;
    r->start = ts_of(ev, "event.start");
    r->end = ts_of(ev, "event.end");
    CHECK(strlen(r->id) == 32 && strlen(r->evid) == 32);
    CHECK(r->start > 0 && event_get(ev, "event.risk_score") && event_get(ev, "rule.name"));
    if (getenv("TEST_VERBOSE")) printf("    %s %s %s\n", r->type, r->id, r->reason);
}

static int count(const struct recs *c, const char *type)
{
    int n = 0;
    for (int i = 0; i < c->n; i++) n += !strcmp(c->r[i].type, type);
    return n;
}

static const struct rec *last_of(const struct recs *c, const char *type)
{
    for (int i = c->n; i-- > 0;)
        if (!strcmp(c->r[i].type, type)) return &c->r[i];
    return NULL;
}

/* A deterministic incident id of (host, gpu, start). */
static void incid(const char *host, int gpu, int64_t start, char out[33])
{
    struct hash128 h;
    hash128_init(&h);
    hash128_feed(&h, host, strlen(host) + 1);
    hash128_feed_u64(&h, (uint64_t)gpu);
    hash128_feed_u64(&h, (uint64_t)start);
    hash128_hex(&h, out);
}

struct inc {
    const char *host;
    int gpu;
    const char *rule;        /* first rule */
    int64_t start_s;         /* after T0 */
    const char *lkey, *lval; /* a label, or NULL */
    const char *lkey2, *lval2;
    const char *action;
    int xid;                 /* >= 0: its episode record carries gpu.xid.code first */
};

static void ev_base(struct event *ev, const char *dataset, const char *host, int gpu, int64_t ts)
{
    event_reset(ev);
    ev->kind = "alert";
    ev->dataset = dataset;
    ev->host = host;
    ev->offset = -1;
    ev->ts_ms = ts;
    if (gpu >= 0) event_add_int(ev, "gpu.index", gpu);
}

static void add_ts(struct event *ev, const char *key, int64_t ms)
{
    char tb[25];
    gl_fmt_ts(ms, tb);
    event_add_str(ev, key, tb, 24);
}

/* Feeds the start (end = 0) or end record of incident x (ending end_s after T0) as partition tag. */
static void feed_inc(struct fleet *f, const struct inc *x, int end, int64_t end_s, int tag)
{
    struct event ev;
    event_init(&ev);
    int64_t start = T0 + x->start_s * 1000;
    if (!end && x->xid >= 0) {
        ev_base(&ev, "gpu.anomaly", x->host, x->gpu, start);
        event_add_str(&ev, "event.type", "start", 5);
        event_add_str(&ev, "rule.id", x->rule, strlen(x->rule));
        add_ts(&ev, "event.start", start);
        event_add_int(&ev, "gpu.xid.code", x->xid);
        fleet_feed(f, &ev, tag);
    }
    ev_base(&ev, "gpu.incident", x->host, x->gpu, end ? T0 + end_s * 1000 : start);
    event_add_str(&ev, "event.type", end ? "end" : "start", end ? 3 : 5);
    event_add_str(&ev, "rule.id", "gpu.incident", 12);
    add_ts(&ev, "event.start", start);
    if (end) add_ts(&ev, "event.end", T0 + end_s * 1000);
    event_add_int(&ev, "event.severity", 2);
    event_add_int(&ev, "event.risk_score", 55);
    char id[33];
    incid(x->host, x->gpu, start, id);
    event_add_str(&ev, "anomaly.incident_id", id, 32);
    char rules[96];
    snprintf(rules, sizeof rules, "%s%s", x->rule, end ? ",gpu.clock.drop" : "");
    event_add_str(&ev, "anomaly.rules", rules, strlen(rules));
    if (x->lkey) event_add_str(&ev, x->lkey, x->lval, strlen(x->lval));
    if (x->lkey2) event_add_str(&ev, x->lkey2, x->lval2, strlen(x->lval2));
    if (x->action) event_add_str(&ev, "anomaly.action", x->action, strlen(x->action));
    fleet_feed(f, &ev, tag);
    event_free(&ev);
}

static struct fleet *mk(const struct fleet_conf *c, struct recs *r)
{
    memset(r, 0, sizeof *r);
    char err[256] = "";
    struct fleet *f = fleet_new(c, rec_emit, r, err, sizeof err);
    if (!f) printf("  fleet_new: %s\n", err);
    CHECK(f != NULL);
    return f;
}

static char hostbuf[400][16];
static const char *hostname(int h)
{
    snprintf(hostbuf[h], sizeof hostbuf[h], "node-%03d", h);
    return hostbuf[h];
}

/* The correlated fault: GPUs 0-7 of hosts 10..14 (rack r12, cluster c1),
 * host by host in turn, each start 13 s after the one before (within 9
 * minutes), rule gpu.temp.high, the 6th GPU's action check_cooling, the
 * others' watch: the i-th of the 40. */
static struct inc hot(int i)
{
    return (struct inc){ hostname(10 + i % 5), i / 5, "gpu.temp.high", 100 + (int64_t)i * 13, "labels.rack", "r12",
                         "labels.cluster", "c1", i == 5 ? "check_cooling" : "watch", -1 };
}

/* Independent faults: one GPU on each of 30 scattered hosts over three
 * hours, rules in turn, in racks of their own. */
static struct inc lone(int i)
{
    static const char *rules[] = { "gpu.temp.high", "gpu.xid", "gpu.power.cap", "gpu.ecc.dbe" };
    static char rack[30][8];
    snprintf(rack[i], sizeof rack[i], "r%d", 20 + i % 10);
    return (struct inc){ hostname(100 + i * 5), i % 8, rules[i % 4], (int64_t)i * 360, "labels.rack", rack[i],
                         NULL, NULL, NULL, -1 };
}

TEST(correlated_fault_is_one_fleet_incident)
{
    struct fleet_conf c;
    fleet_conf_defaults(&c);
    struct recs *r = calloc(1, sizeof *r);
    struct fleet *f = mk(&c, r);
    if (!f) { free(r); return; }
    for (int i = 0; i < 30; i++) {
        struct inc x = lone(i);
        feed_inc(f, &x, 0, 0, 1 + i % 3);
    }
    for (int i = 0; i < 40; i++) {
        struct inc x = hot(i);
        feed_inc(f, &x, 0, 0, 1 + (10 + i % 5) % 3);
        if (i == 7) CHECK_EQ_INT(count(r, "start"), 1);   /* the 8th GPU... */
        if (i == 6) CHECK_EQ_INT(count(r, "start"), 0);   /* ... not before */
    }
    for (int s = 0; s < 5; s++) fleet_tick(f, 1000 + s * 1000);
    /* the same rule in the rack long after (a GPU of the fault again, and
     * another host): not part of it */
    struct inc late = hot(0), other = hot(1);
    late.start_s += 3000;
    other.start_s += 3000;
    other.host = hostname(16);
    feed_inc(f, &late, 0, 0, 1);
    feed_inc(f, &other, 0, 0, 1);
    for (int i = 0; i < 40; i++) {
        struct inc x = hot(i);
        feed_inc(f, &x, 1, 1500 + i, 1 + i % 3);
    }
    CHECK_EQ_INT(count(r, "end"), 0);        /* the hold is not over */
    for (int s = 0; s < 200; s++) fleet_tick(f, 10000 + s * 1000);
    CHECK_EQ_INT(count(r, "start"), 1);
    CHECK_EQ_INT(count(r, "end"), 1);
    CHECK(count(r, "change") >= 1);
    const struct rec *e = last_of(r, "end"), *s0 = last_of(r, "start");
    if (e && s0) {
        CHECK_EQ_STR(e->id, s0->id);
        for (int i = 0; i < r->n; i++) CHECK_EQ_STR(r->r[i].id, s0->id);   /* one fleet incident */
        CHECK_EQ_INT(s0->gpu_count, 8);
        CHECK_EQ_INT(s0->host_count, 5);
        CHECK_EQ_INT(e->gpu_count, 40);
        CHECK_EQ_INT(e->host_count, 5);
        CHECK_EQ_INT(e->open_count, 0);
        CHECK_EQ_STR(e->hosts, "node-010,node-011,node-012,node-013,node-014");
        char want[1024] = "";
        for (int i = 0; i < 40; i++)
            snprintf(want + strlen(want), sizeof want - strlen(want), "%snode-%03d:%d", i ? "," : "", 10 + i / 8, i % 8);
        CHECK_EQ_STR(e->gpus, want);
        CHECK_EQ_STR(e->sig, "gpu.temp.high");
        CHECK_EQ_STR(e->group, "r12");      /* rack before cluster */
        CHECK_EQ_STR(e->action, "check_cooling");   /* the most severe of its GPUs' */
        CHECK_EQ_INT(e->start, T0 + 100000);
        CHECK_EQ_INT(e->end, T0 + 1539000);   /* the last GPU incident's end */
        CHECK(strstr(e->reason, "gpu.temp.high on 40 GPUs of 5 hosts of rack r12 within 8 minutes") != NULL);
        CHECK(!strncmp(e->reason, "fleet incident over after", 25));
    }
    CHECK_EQ_INT(fleet_get_stats(f)->open, 0);
    fleet_free(f);
    free(r);
}

TEST(independent_faults_make_none)
{
    struct fleet_conf c;
    fleet_conf_defaults(&c);
    struct recs *r = calloc(1, sizeof *r);
    struct fleet *f = mk(&c, r);
    if (!f) { free(r); return; }
    struct inc x;
    for (int i = 0; i < 30; i++) { x = lone(i); feed_inc(f, &x, 0, 0, 0); }
    /* 16 GPUs of 2 hosts at once: too few hosts */
    for (int i = 0; i < 16; i++) {
        x = (struct inc){ hostname(200 + i / 8), i % 8, "gpu.clock.drop", 50000, NULL, NULL, NULL, NULL, NULL, -1 };
        feed_inc(f, &x, 0, 0, 0);
    }
    /* 7 GPUs of 7 hosts at once: too few GPUs */
    for (int i = 0; i < 7; i++) {
        x = (struct inc){ hostname(220 + i), 0, "gpu.mem.leak", 60000, NULL, NULL, NULL, NULL, NULL, -1 };
        feed_inc(f, &x, 0, 0, 0);
    }
    /* 12 hosts, 2 GPUs each, one host every 11 minutes: never 3 hosts within 10 */
    for (int i = 0; i < 24; i++) {
        x = (struct inc){ hostname(240 + i / 2), i % 2, "gpu.pcie.replay", 70000 + (int64_t)(i / 2) * 660, NULL, NULL,
                          NULL, NULL, NULL, -1 };
        feed_inc(f, &x, 0, 0, 0);
    }
    /* the same GPU starting again and again counts once */
    for (int i = 0; i < 20; i++) {
        x = (struct inc){ hostname(300 + i % 2), 0, "gpu.power.cap", 90000 + i * 10, NULL, NULL, NULL, NULL, NULL, -1 };
        feed_inc(f, &x, 0, 0, 0);
        feed_inc(f, &x, 1, 90000 + i * 10 + 5, 0);
    }
    for (int s = 0; s < 5; s++) fleet_tick(f, s * 1000);
    CHECK_EQ_INT(r->n, 0);
    CHECK_EQ_INT(fleet_get_stats(f)->members, 97);   /* every start was read */
    fleet_free(f);
    free(r);
}

/* The same start within 10 minutes on 3 racks of 2 hosts x 4 GPUs: none by
 * rack (8 GPUs but 2 hosts each); one of 24 GPUs by time alone. */
TEST(grouping_by_label_or_time)
{
    for (int bytime = 0; bytime < 2; bytime++) {
        struct fleet_conf c;
        fleet_conf_defaults(&c);
        if (bytime) c.group_by = "";
        struct recs *r = calloc(1, sizeof *r);
        struct fleet *f = mk(&c, r);
        if (!f) { free(r); return; }
        static const char *racks[] = { "ra", "rb", "rc" };
        for (int i = 0; i < 24; i++) {
            struct inc x = { hostname(i / 4), i % 4, "gpu.throttle.thermal", 1000 + i * 20, "labels.rack",
                             racks[i / 8], NULL, NULL, NULL, -1 };
            feed_inc(f, &x, 0, 0, 0);
        }
        fleet_tick(f, 0);
        fleet_tick(f, 1000);
        fleet_tick(f, 2000);
        CHECK_EQ_INT(count(r, "start"), bytime);
        if (bytime) {
            const struct rec *x = r->n ? &r->r[r->n - 1] : NULL;
            CHECK(x && x->gpu_count == 24 && x->host_count == 6 && !x->group[0]);
            CHECK(x && strstr(x->reason, "on 24 GPUs of 6 hosts within") && !strstr(x->reason, "rack"));
        }
        fleet_free(f);
        free(r);
    }
    /* a host without the first label is grouped by the next one present */
    struct fleet_conf c;
    fleet_conf_defaults(&c);
    c.group_by = "rack,slurm_cluster";
    c.min_hosts = 2;
    c.min_gpus = 2;
    struct recs *r = calloc(1, sizeof *r);
    struct fleet *f = mk(&c, r);
    if (!f) { free(r); return; }
    struct inc a = { "h1", 0, "gpu.xid", 10, "labels.slurm_cluster", "west", NULL, NULL, NULL, -1 };
    struct inc b = { "h2", 0, "gpu.xid", 20, "labels.slurm_cluster", "west", "labels.rack", "", NULL, -1 };
    feed_inc(f, &a, 0, 0, 0);
    feed_inc(f, &b, 0, 0, 0);   /* an empty rack label is no label */
    CHECK_EQ_INT(count(r, "start"), 1);
    if (r->n) CHECK(strstr(r->r[0].reason, "of slurm_cluster west") != NULL);
    fleet_free(f);
    free(r);
}

/* min_hosts / min_gpus exactly met opens; one short does not. */
TEST(thresholds)
{
    for (int short_by = 0; short_by < 3; short_by++) {
        struct fleet_conf c;
        fleet_conf_defaults(&c);
        c.min_hosts = 4;
        c.min_gpus = 6;
        c.group_by = "";
        struct recs *r = calloc(1, sizeof *r);
        struct fleet *f = mk(&c, r);
        if (!f) { free(r); return; }
        /* 4 hosts (3 when short_by 1), 6 GPUs (5 when short_by 2) */
        int hosts = short_by == 1 ? 3 : 4, gpus = short_by == 2 ? 5 : 6;
        for (int i = 0; i < gpus; i++) {
            struct inc x = { hostname(i % hosts), i / hosts, "gpu.ecc.sbe", 500 + i, NULL, NULL, NULL, NULL, NULL, -1 };
            feed_inc(f, &x, 0, 0, 0);
        }
        CHECK_EQ_INT(count(r, "start"), short_by == 0);
        fleet_free(f);
        free(r);
    }
    /* the window: 8 GPUs of 8 hosts 80 s apart make one within 10 minutes, none within 9 */
    for (int w = 0; w < 2; w++) {
        struct fleet_conf c;
        fleet_conf_defaults(&c);
        c.window_ms = w ? 540000 : 600000;
        struct recs *r = calloc(1, sizeof *r);
        struct fleet *f = mk(&c, r);
        if (!f) { free(r); return; }
        for (int i = 0; i < 8; i++) {
            struct inc x = { hostname(i), 0, "gpu.ecc.sbe", 500 + i * 80, NULL, NULL, NULL, NULL, NULL, -1 };
            feed_inc(f, &x, 0, 0, 0);
        }
        CHECK_EQ_INT(count(r, "start"), !w);
        fleet_free(f);
        free(r);
    }
    char err[256];
    struct fleet_conf c;
    fleet_conf_defaults(&c);
    CHECK_EQ_INT(fleet_conf_check(&c, err, sizeof err), GL_OK);
    c.min_gpus = 0;
    CHECK_EQ_INT(fleet_conf_check(&c, err, sizeof err), GL_ERROR);
    CHECK(strstr(err, "fleet.min_gpus") != NULL);
    fleet_conf_defaults(&c);
    c.group_by = "rack,Bad-Name";
    CHECK_EQ_INT(fleet_conf_check(&c, err, sizeof err), GL_ERROR);
    CHECK(strstr(err, "Bad-Name") != NULL);
    fleet_conf_defaults(&c);
    c.group_by = " labels.rack , switch ";
    CHECK_EQ_INT(fleet_conf_check(&c, err, sizeof err), GL_OK);
}

/* Xid incidents: the signature is the code of the GPU's Xid episode; Xid 79
 * on 10 hosts is one fleet incident, Xid 13 on 10 others another; the rule
 * without a code on 4 more GPUs is a signature of its own (too few). */
TEST(xid_signature)
{
    struct fleet_conf c;
    fleet_conf_defaults(&c);
    struct recs *r = calloc(1, sizeof *r);
    struct fleet *f = mk(&c, r);
    if (!f) { free(r); return; }
    for (int i = 0; i < 20; i++) {
        struct inc x = { hostname(i), 0, "gpu.xid", 100 + i * 5, NULL, NULL, NULL, NULL, NULL, i % 2 ? 13 : 79 };
        feed_inc(f, &x, 0, 0, 0);
    }
    for (int i = 0; i < 4; i++) {
        struct inc x = { hostname(40 + i), 1, "gpu.xid", 110, NULL, NULL, NULL, NULL, NULL, -1 };
        feed_inc(f, &x, 0, 0, 0);
    }
    CHECK_EQ_INT(count(r, "start"), 2);
    if (r->n >= 2) {
        const struct rec *x79 = &r->r[0], *x13 = &r->r[1];
        for (int i = 0; i < r->n; i++) {
            if (!strcmp(r->r[i].type, "start") && !strcmp(r->r[i].sig, "xid:79")) x79 = &r->r[i];
            if (!strcmp(r->r[i].type, "start") && !strcmp(r->r[i].sig, "xid:13")) x13 = &r->r[i];
        }
        CHECK_EQ_STR(x79->sig, "xid:79");
        CHECK_EQ_INT(x79->xid, 79);
        CHECK_EQ_STR(x13->sig, "xid:13");
        CHECK_EQ_INT(x13->xid, 13);
        CHECK(strstr(x13->reason, "Xid 13 on 8 GPUs of 8 hosts within") != NULL);
        CHECK(strcmp(x79->id, x13->id) != 0);
    }
    fleet_free(f);
    free(r);
}

/* Feeds the correlated fault's starts [from, to) and ends, as
 * partitions 1..3 by host. */
static void feed_hot(struct fleet *f, int from, int to, int ends)
{
    for (int i = from; i < to; i++) {
        struct inc x = hot(i);
        feed_inc(f, &x, ends, 1500 + i, 1 + (10 + i % 5) % 3);
    }
}

/* The same records read twice (a consumer that restarts without state
 * reads them again): no second fleet incident, the same record ids. */
TEST(replay_is_idempotent)
{
    struct fleet_conf c;
    fleet_conf_defaults(&c);
    struct recs *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
    struct fleet *f = mk(&c, a);
    if (!f) { free(a); free(b); return; }
    feed_hot(f, 0, 40, 0);
    int n = a->n;
    feed_hot(f, 0, 40, 0);
    CHECK_EQ_INT(a->n, n);
    CHECK_EQ_INT(count(a, "start"), 1);
    fleet_free(f);
    /* a second instance fed the same records: the same ids */
    struct fleet *g = mk(&c, b);
    if (!g) { free(a); free(b); return; }
    feed_hot(g, 0, 40, 0);
    CHECK_EQ_INT(b->n, n);
    for (int i = 0; i < n && i < b->n; i++) {
        CHECK_EQ_STR(a->r[i].evid, b->r[i].evid);
        CHECK_EQ_STR(a->r[i].id, b->r[i].id);
    }
    fleet_free(g);
    free(a);
    free(b);
}

/* A restart in the middle of the fault through the saved state of each
 * partition: the new instance writes no second start, its changes and end
 * carry the first one's id and name all 40 GPUs. */
TEST(restart_through_state)
{
    struct fleet_conf c;
    fleet_conf_defaults(&c);
    struct recs *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
    struct fleet *f = mk(&c, a);
    struct buf snap[4];
    if (!f) { free(a); free(b); return; }
    feed_hot(f, 0, 20, 0);
    CHECK_EQ_INT(count(a, "start"), 1);
    char err[256] = "";
    for (int t = 1; t <= 3; t++) {
        buf_init(&snap[t]);
        CHECK_EQ_INT(fleet_save(f, t, 1000 + t, &snap[t], err, sizeof err), GL_OK);
    }
    fleet_free(f);
    struct fleet *g = mk(&c, b);
    if (!g) { free(a); free(b); return; }
    for (int t = 1; t <= 3; t++) {
        int64_t off = -1;
        int rc = fleet_load(g, t, snap[t].p, snap[t].len, &off, err, sizeof err);
        if (rc != GL_OK) printf("  load: %s\n", err);
        CHECK_EQ_INT(rc, GL_OK);
        CHECK_EQ_INT(off, 1000 + t);
        buf_free(&snap[t]);
    }
    CHECK_EQ_INT(fleet_get_stats(g)->open, 1);
    CHECK_EQ_INT(fleet_get_stats(g)->tracked, 20);
    feed_hot(g, 15, 40, 0);     /* some read again */
    feed_hot(g, 0, 40, 1);
    for (int s = 0; s < 200; s++) fleet_tick(g, s * 1000);
    CHECK_EQ_INT(count(b, "start"), 0);
    CHECK_EQ_INT(count(b, "end"), 1);
    const struct rec *e = last_of(b, "end");
    if (e && a->n) {
        CHECK_EQ_STR(e->id, a->r[0].id);
        CHECK_EQ_INT(e->gpu_count, 40);
        CHECK_EQ_INT(e->host_count, 5);
        CHECK_EQ_INT(e->start, T0 + 100000);
    }
    /* restored without the state (cold) from the start: the same ids */
    struct recs *d = calloc(1, sizeof *d);
    struct fleet *h = mk(&c, d);
    if (h) {
        feed_hot(h, 0, 40, 0);
        CHECK_EQ_INT(count(d, "start"), 1);
        if (d->n && a->n) CHECK_EQ_STR(d->r[0].evid, a->r[0].evid);
        fleet_free(h);
    }
    fleet_free(g);
    free(a);
    free(b);
    free(d);
}

/* A replay reads partitions one after the other (a restart without
 * state, a cold member): each host's records, whose later ones run the
 * event-time clock hours ahead (the same rule on another GPU), come a
 * partition at a time with ticks in between. Still one fleet incident of
 * the 40 GPUs: windows are spans of starts, whatever order they came in,
 * and what rests on event time (forgetting members, ending) waits a few
 * seconds of wall time. */
TEST(skewed_partitions)
{
    struct fleet_conf c;
    fleet_conf_defaults(&c);
    struct recs *r = calloc(1, sizeof *r);
    struct fleet *f = mk(&c, r);
    if (!f) { free(r); return; }
    for (int h = 0; h < 5; h++) {
        for (int i = h; i < 40; i += 5) {
            struct inc x = hot(i);
            feed_inc(f, &x, 0, 0, h);
            feed_inc(f, &x, 1, 1500 + i, h);
        }
        struct inc later = hot(h);    /* the same rule on another GPU of the host, hours later */
        later.gpu = 9;
        later.start_s = 16000;
        feed_inc(f, &later, 0, 0, h);
        feed_inc(f, &later, 1, 16300, h);
        fleet_tick(f, 100000 + h * 1000);   /* a partition a second */
    }
    for (int s = 0; s < 10; s++) fleet_tick(f, 105000 + s * 1000);
    CHECK_EQ_INT(count(r, "start"), 1);
    CHECK_EQ_INT(count(r, "end"), 1);
    const struct rec *e = last_of(r, "end");
    if (e) {
        CHECK_EQ_INT(e->gpu_count, 40);
        CHECK_EQ_INT(e->host_count, 5);
        CHECK_EQ_INT(e->end, T0 + 1539000);
    }
    fleet_free(f);
    free(r);
}

/* A fleet incident after another of the same key in the same window-long
 * bucket gets an id of its own. */
TEST(second_fleet_incident_new_id)
{
    struct fleet_conf c;
    fleet_conf_defaults(&c);
    c.hold_ms = 0;
    struct recs *r = calloc(1, sizeof *r);
    struct fleet *f = mk(&c, r);
    if (!f) { free(r); return; }
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 9; i++) {
            struct inc x = { hostname(i), round, "gpu.temp.high", 60 + round * 100 + i, NULL, NULL, NULL, NULL, NULL, -1 };
            feed_inc(f, &x, 0, 0, 0);
        }
        for (int i = 0; i < 9; i++) {
            struct inc x = { hostname(i), round, "gpu.temp.high", 60 + round * 100 + i, NULL, NULL, NULL, NULL, NULL, -1 };
            feed_inc(f, &x, 1, 90 + round * 100, 0);
        }
        fleet_tick(f, round * 10000 + 5000);
    }
    CHECK_EQ_INT(count(r, "start"), 2);
    CHECK_EQ_INT(count(r, "end"), 2);
    if (r->n == 4) CHECK(strcmp(r->r[0].id, r->r[2].id) != 0);
    fleet_free(f);
    free(r);
}

/* Changes: at most one per change interval while GPUs join, and the
 * growth is written once it pauses (ticks); expiry ends a fleet incident
 * whose GPUs never report an end. */
TEST(changes_and_expiry)
{
    struct fleet_conf c;
    fleet_conf_defaults(&c);
    c.expire_ms = 3600000;
    struct recs *r = calloc(1, sizeof *r);
    struct fleet *f = mk(&c, r);
    if (!f) { free(r); return; }
    /* 64 GPUs of 8 hosts, one every 5 s: 315 s of joining */
    for (int i = 0; i < 64; i++) {
        struct inc x = { hostname(i % 8), i / 8, "gpu.temp.high", 100 + i * 5, NULL, NULL, NULL, NULL, NULL, -1 };
        feed_inc(f, &x, 0, 0, 0);
    }
    int ch = count(r, "change");
    CHECK(ch >= 4 && ch <= 6);    /* (315 - 35) s / 60 s */
    fleet_tick(f, 0);
    fleet_tick(f, 1000);
    fleet_tick(f, 2000);
    CHECK_EQ_INT(count(r, "change"), ch + 1);
    const struct rec *x = last_of(r, "change");
    if (x) CHECK_EQ_INT(x->gpu_count, 64);
    fleet_tick(f, 3000);
    CHECK_EQ_INT(count(r, "change"), ch + 1);   /* nothing new */
    CHECK_EQ_INT(count(r, "end"), 0);
    fleet_tick(f, 3000 + 3600000);              /* an hour without news (wall time, no records) */
    CHECK_EQ_INT(count(r, "end"), 1);
    x = last_of(r, "end");
    if (x) {
        CHECK(strstr(x->reason, "no news") != NULL);
        CHECK_EQ_INT(x->open_count, 64);
    }
    fleet_free(f);
    free(r);
}

/* Dropping a revoked partition forgets its members; a fleet incident left
 * without members is forgotten without a record. */
TEST(drop_tag)
{
    struct fleet_conf c;
    fleet_conf_defaults(&c);
    struct recs *r = calloc(1, sizeof *r);
    struct fleet *f = mk(&c, r);
    if (!f) { free(r); return; }
    feed_hot(f, 0, 40, 0);
    uint64_t before = fleet_get_stats(f)->tracked;
    fleet_drop_tag(f, 1);
    CHECK(fleet_get_stats(f)->tracked < before);
    CHECK_EQ_INT(fleet_get_stats(f)->open, 1);
    int n = r->n;
    fleet_drop_tag(f, 2);
    fleet_drop_tag(f, 3);
    CHECK_EQ_INT(fleet_get_stats(f)->tracked, 0);
    CHECK_EQ_INT(fleet_get_stats(f)->open, 0);
    CHECK_EQ_INT(r->n, n);
    fleet_free(f);
    free(r);
}

/* Bad state is refused with a reason and adds nothing. */
TEST(bad_state_refused)
{
    struct fleet_conf c;
    fleet_conf_defaults(&c);
    struct recs *r = calloc(1, sizeof *r);
    struct fleet *f = mk(&c, r);
    if (!f) { free(r); return; }
    static const char *bad[] = {
        "",
        "[]",
        "{\"format\":\"gpulog-fleet\",\"v\":2,\"offset\":1,\"keys\":[],\"members\":[]}",
        "{\"format\":\"other\",\"v\":1,\"offset\":1,\"keys\":[],\"members\":[]}",
        "{\"format\":\"gpulog-fleet\",\"v\":1,\"offset\":-1,\"keys\":[],\"members\":[]}",
        "{\"format\":\"gpulog-fleet\",\"v\":1,\"offset\":1,\"keys\":[{\"s\":\"a\",\"l\":\"\",\"g\":\"\"}],"
        "\"members\":[{\"k\":1,\"h\":\"h\",\"i\":0,\"id\":\"0123456789abcdef0123456789abcdef\",\"t\":1}]}",
        "{\"format\":\"gpulog-fleet\",\"v\":1,\"offset\":1,\"keys\":[{\"s\":\"a\",\"l\":\"\",\"g\":\"\"}],"
        "\"members\":[{\"k\":0,\"h\":\"h\",\"i\":0,\"id\":\"0123456789ABCDEF0123456789abcdef\",\"t\":1}]}",
        "{\"format\":\"gpulog-fleet\",\"v\":1,\"offset\":1,\"keys\":[{\"s\":\"a\",\"l\":\"\",\"g\":\"\"}],"
        "\"members\":[{\"k\":0,\"h\":\"h\",\"i\":0,\"id\":\"0123456789abcdef0123456789abcdef\",\"t\":1e30}]}",
        "{\"format\":\"gpulog-fleet\",\"v\":1,\"offset\":1,\"keys\":[{\"s\":\"a\",\"l\":\"rack\",\"g\":\"\"}],\"members\":[]}",
        "{\"format\":\"gpulog-fleet\",\"v\":1,\"offset\":1,\"keys\":[{\"s\":\"a\",\"l\":\"\",\"g\":\"\",\"f\":{\"id\":\"x\"}}],"
        "\"members\":[]}",
        "{\"format\":\"gpulog-fleet\",\"v\":1,\"offset\":1,\"keys\":[{\"s\":\"a\",\"l\":\"\",\"g\":\"\"}],"
        "\"members\":[{\"k\":0,\"h\":\"h\",\"i\":0,\"id\":\"0123456789abcdef0123456789abcdef\",\"t\":1,\"a\":\"pray\"}]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[256] = "";
        int64_t off = -7;
        CHECK_EQ_INT(fleet_load(f, 1, bad[i], strlen(bad[i]), &off, err, sizeof err), GL_ERROR);
        CHECK(!strncmp(err, "fleet state:", 12));
        CHECK_EQ_INT(off, -7);
        CHECK_EQ_INT(fleet_get_stats(f)->tracked, 0);
        CHECK_EQ_INT(fleet_get_stats(f)->keys, 0);
    }
    /* a good one, to show the checks are not what refuses everything */
    const char *good = "{\"format\":\"gpulog-fleet\",\"v\":1,\"offset\":9,\"keys\":[{\"s\":\"a\",\"l\":\"\",\"g\":\"\"}],"
                       "\"members\":[{\"k\":0,\"h\":\"h\",\"i\":0,\"id\":\"0123456789abcdef0123456789abcdef\",\"t\":1,"
                       "\"a\":\"reset_gpu\"}]}";
    char err[256] = "";
    int64_t off = 0;
    CHECK_EQ_INT(fleet_load(f, 1, good, strlen(good), &off, err, sizeof err), GL_OK);
    CHECK_EQ_INT(off, 9);
    CHECK_EQ_INT(fleet_get_stats(f)->tracked, 1);
    fleet_free(f);
    free(r);
}

/* A storm of distinct keys (rules x racks) and of distinct GPUs: keys,
 * members and memory stay within the caps; a correlated fault after the
 * storm is still found. */
TEST(storm_bounded)
{
    struct fleet_conf c;
    fleet_conf_defaults(&c);
    c.max_keys = 256;
    c.max_members = 4096;
    struct recs *r = calloc(1, sizeof *r);
    struct fleet *f = mk(&c, r);
    if (!f) { free(r); return; }
    char host[32], rule[32], rack[32];
    uint64_t peak_bytes = 0;
    for (int i = 0; i < 200000; i++) {
        snprintf(host, sizeof host, "storm-%d", i % 50000);
        snprintf(rule, sizeof rule, "rule.%d", i % 997);
        snprintf(rack, sizeof rack, "r%d", i % 1009);
        struct inc x = { host, i % 4, rule, i / 100, "labels.rack", rack, NULL, NULL, NULL, -1 };
        feed_inc(f, &x, 0, 0, i & 7);
        const struct fleet_stats *st = fleet_get_stats(f);
        if (st->bytes > peak_bytes) peak_bytes = st->bytes;
        if (st->keys > 256 || st->tracked > 4096) { CHECK(!"over the caps"); break; }
    }
    const struct fleet_stats *st = fleet_get_stats(f);
    CHECK(st->evicted_keys > 100000);
    CHECK(peak_bytes < 4u << 20);
    printf("    storm: 200000 incidents, %llu keys and %llu members kept, peak %llu KiB\n",
           (unsigned long long)st->keys, (unsigned long long)st->tracked, (unsigned long long)(peak_bytes >> 10));
    /* one key, GPUs without end on 2 hosts: members capped, the oldest evicted */
    for (int i = 0; i < 20000; i++) {
        snprintf(host, sizeof host, "wide-%d", i % 2);
        struct inc x = { host, i, "gpu.wide", 3000 + i / 100, NULL, NULL, NULL, NULL, NULL, -1 };
        feed_inc(f, &x, 0, 0, 0);
    }
    CHECK(fleet_get_stats(f)->tracked <= 4096);
    CHECK(fleet_get_stats(f)->dropped > 0);    /* 256 GPUs per host and key */
    r->n = 0;
    for (int i = 0; i < 40; i++) {
        struct inc x = hot(i);
        x.start_s += 4000;
        feed_inc(f, &x, 0, 0, 0);
    }
    CHECK_EQ_INT(count(r, "start"), 1);
    fleet_free(f);
    free(r);
}

int main(void)
{
    RUN(correlated_fault_is_one_fleet_incident);
    RUN(independent_faults_make_none);
    RUN(grouping_by_label_or_time);
    RUN(thresholds);
    RUN(xid_signature);
    RUN(replay_is_idempotent);
    RUN(restart_through_state);
    RUN(skewed_partitions);
    RUN(second_fleet_incident_new_id);
    RUN(changes_and_expiry);
    RUN(drop_tag);
    RUN(bad_state_refused);
    RUN(storm_bounded);
    return TEST_REPORT();
}
