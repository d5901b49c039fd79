/* test_det_params.c - every detector parameter has a valid range (issue 27,
 * item 1): the defaults lie in it, a value just outside it is refused at
 * load naming the parameter (FILE:LINE:COL from a file), docs/detectors.md
 * lists every range, and the detectors stay defensive when a degenerate
 * value reaches them anyway (no peers, no scale, an infinite reference):
 * no NaN or Inf in a verdict, no read outside the peers.
 *
 * GPULOG_PRINT_PARAM_TABLE=1 build/tests/test_det_params prints the table
 * docs/detectors.md should hold (between its params:begin/end markers). */
#include "test.h"
#include "../detect/engine.h"
#include "engine_harness.h"

#include <math.h>
#include <stdlib.h>
#include <unistd.h>

/* The documented table of every detector's parameters into out. */
static void param_table(struct buf *out)
{
    buf_puts(out, "| detector | parameter | default | valid values | meaning |\n|---|---|---|---|---|\n");
    for (size_t d = 0; det_registry[d]; d++)
        for (const struct det_param *q = det_registry[d]->params; q && q->name; q++) {
            char range[96], def[32];
            det_param_range(q, range, sizeof range);
            if (fabs(q->def) >= 1e300) snprintf(def, sizeof def, "unset");
            else snprintf(def, sizeof def, "%.15g", q->def);
            buf_printf(out, "| `%s` | `%s` | %s | %s | ", det_registry[d]->name, q->name, def, range);
            for (const char *c = q->help; *c; c++) buf_puts(out, *c == '|' ? "\\|" : (char[]){ *c, 0 });   /* a cell holds no bare | */
            buf_puts(out, " |\n");
        }
}

TEST(every_default_lies_in_its_range)
{
    size_t n = 0;
    for (size_t d = 0; det_registry[d]; d++)
        for (const struct det_param *q = det_registry[d]->params; q && q->name; q++, n++) {
            /* threshold's limits default to "unset" (1e300): no limit */
            int ok = det_param_ok(q, q->def) || (fabs(q->def) >= 1e300 && !strcmp(det_registry[d]->name, "threshold"));
            if (!ok) printf("  %s.%s default %g outside its range\n", det_registry[d]->name, q->name, q->def);
            CHECK(ok);
            CHECK(q->lo <= q->hi && q->hi <= DET_PARAM_MAX && q->lo >= -DET_PARAM_MAX);
        }
    CHECK(n > 100);
}

TEST(the_docs_list_every_range)
{
    struct buf want;
    buf_init(&want);
    param_table(&want);
    if (getenv("GPULOG_PRINT_PARAM_TABLE")) fputs(want.p, stdout);
    FILE *f = fopen("docs/detectors.md", "r");
    CHECK(f != NULL);
    struct buf doc;
    buf_init(&doc);
    char chunk[4096];
    size_t k;
    while (f && (k = fread(chunk, 1, sizeof chunk, f)) > 0) buf_append(&doc, chunk, k);
    if (f) fclose(f);
    buf_putc(&doc, '\0');
    const char *b = doc.p ? strstr(doc.p, "<!-- params:begin -->\n") : NULL;
    const char *e = b ? strstr(b, "<!-- params:end -->") : NULL;
    CHECK(b && e);
    if (b && e) {
        b += strlen("<!-- params:begin -->\n");
        int same = (size_t)(e - b) == want.len && !memcmp(b, want.p, want.len);
        if (!same) printf("  docs/detectors.md's parameter table is stale: GPULOG_PRINT_PARAM_TABLE=1 %s\n",
                          "build/tests/test_det_params prints it");
        CHECK(same);
    }
    buf_free(&doc);
    buf_free(&want);
}

/* The profile of one rule of detector d with parameter name = v (JSON text). */
static struct profile *one_param(const char *d, const char *name, double v, char *err, size_t errlen)
{
    char js[400];
    snprintf(js, sizeof js, "{\"rules\":[{\"id\":\"r\",\"detector\":\"%s\",\"metric\":\"m\",\"params\":{\"%s\":%.17g}}]}",
             d, name, v);
    return profile_from_json(js, strlen(js), err, errlen);
}

/* Parameters whose edge value is refused by a rule of its detector
 * together with the other defaults (lag < min_n; tau_lo <= tau <= tau_hi;
 * a peer limit of 0): their single ranges are still checked below. */
static int tied(const char *d, const char *p, double v)
{
    return (!strcmp(d, "robust_z") && !strcmp(p, "lag") && v >= 30) ||
           (!strcmp(d, "thermal_model") && (!strcmp(p, "tau_lo") || !strcmp(p, "tau") || !strcmp(p, "tau_hi"))) ||
           (!strcmp(d, "peer") && !strcmp(p, "rel") && v == 0);
}

TEST(a_value_just_outside_a_range_is_refused_the_edges_taken)
{
    char err[300];
    size_t refused = 0, taken = 0;
    for (size_t d = 0; det_registry[d]; d++) {
        const char *dn = det_registry[d]->name;
        for (const struct det_param *q = det_registry[d]->params; q && q->name; q++) {
            double below = q->flags & DP_LO_OPEN ? q->lo : q->lo - (fabs(q->lo) > 1 ? fabs(q->lo) * 1e-6 : 1e-3);
            double above = q->flags & DP_HI_OPEN ? q->hi : q->hi + (fabs(q->hi) > 1 ? fabs(q->hi) * 1e-6 : 1e-3);
            double bad[3] = { below, above, q->flags & DP_WHOLE ? q->lo + 0.5 : NAN };
            for (int i = 0; i < 3; i++) {
                if (isnan(bad[i])) continue;
                struct profile *p = one_param(dn, q->name, bad[i], err, sizeof err);
                char want[64];
                snprintf(want, sizeof want, "parameter %s must be", q->name);
                if (p || !strstr(err, want)) printf("  %s.%s = %.17g: %s\n", dn, q->name, bad[i], p ? "taken" : err);
                CHECK(!p && strstr(err, want));
                profile_free(p);
                refused++;
            }
            double edge[2] = { q->flags & DP_LO_OPEN ? NAN : q->lo, q->flags & DP_HI_OPEN ? NAN : q->hi };
            for (int i = 0; i < 2; i++) {
                if (isnan(edge[i]) || tied(dn, q->name, edge[i])) continue;
                struct profile *p = one_param(dn, q->name, edge[i], err, sizeof err);
                if (!p) printf("  %s.%s = %.17g refused: %s\n", dn, q->name, edge[i], err);
                CHECK(p != NULL);
                profile_free(p);
                taken++;
            }
        }
    }
    CHECK(refused > 250 && taken > 150);
}

TEST(a_file_names_the_place_of_the_bad_value)
{
    char path[] = "/tmp/gpulog-test-params-XXXXXX.yaml";
    int fd = mkstemps(path, 5);
    CHECK(fd >= 0);
    if (fd < 0) return;
    const char *y = "extends: gpu\nrules:\n  - id: gpu.peer.power\n    params: {rel: 0.3, min_peers: 0}\n";
    CHECK(write(fd, y, strlen(y)) == (ssize_t)strlen(y));
    close(fd);
    char err[300], want[400];
    struct profile *p = profile_load(path, NULL, err, sizeof err);
    CHECK(p == NULL);
    snprintf(want, sizeof want, "%s:4:35: rule gpu.peer.power: parameter min_peers must be a whole number from 1 to 64", path);
    CHECK_EQ_STR(err, want);
    profile_free(p);
    /* two parameters that are fine alone but not together: at the rule's params */
    y = "extends: gpu\nrules:\n  - id: gpu.temp.rise\n    params:\n      lag: 40\n";
    FILE *f = fopen(path, "w");
    fputs(y, f);
    fclose(f);
    p = profile_load(path, NULL, err, sizeof err);
    CHECK(p == NULL);
    snprintf(want, sizeof want, "%s:5:12: rule gpu.temp.rise: lag must be below min_n", path);
    CHECK_EQ_STR(err, want);
    profile_free(p);
    unlink(path);
}

/* ---- the detectors themselves, given degenerate parameters directly ---- */

/* A rule of detector ops on slot 0 with its defaults (the caller sets p[]). */
static void rule_of(struct rule_cfg *rc, const struct det_ops *ops)
{
    memset(rc, 0, sizeof *rc);
    rc->id = (char *)"r";
    rc->name = (char *)"r";
    rc->metric = (char *)"m";
    rc->ops = ops;
    rc->slot = 0;
    for (int i = 0; i < 6; i++) rc->aux[i] = -1;
    for (size_t i = 0; ops->params[i].name; i++) rc->p[i] = ops->params[i].def;
}

static int param_index(const struct det_ops *ops, const char *name)
{
    for (int i = 0; ops->params[i].name; i++)
        if (!strcmp(ops->params[i].name, name)) return i;
    return -1;
}

TEST(peer_with_no_peers_and_min_peers_0_reads_nothing_and_says_nothing)
{
    struct rule_cfg rc;
    rule_of(&rc, &det_peer);
    rc.p[param_index(&det_peer, "min_peers")] = 0;
    rc.p[param_index(&det_peer, "busy_util")] = 0;
    rc.p[param_index(&det_peer, "same_fb")] = 0;
    struct host h = { .name = (char *)"h" };
    struct ent x = { .host = &h, .gpu = 0, .last_ts = T0, .present = 1 };
    x.val[0] = 250;
    struct ent *peers[1] = { &x };   /* the GPU itself only: no peer */
    struct det_ctx cx = { .ts = T0, .e = &x, .h = &h, .slot = -1, .peers = peers, .npeers = 1 };
    struct det_out o;
    det_out_init(&o);
    int v = det_peer.update(&rc, NULL, &cx, &o);
    CHECK(v != DET_ANOMALY);
    CHECK(det_out_finite(&o));
}

/* A series of n samples of value c (its window) for the SERIES detectors. */
static void flat_series(struct series *s, struct win *w, unsigned n, double c)
{
    memset(s, 0, sizeof *s);
    win_init(w, 64, 0);
    for (unsigned i = 0; i < n; i++) win_push(w, T0 + i * 1000, c);
    s->w = w;
    s->nsamples = n;
    s->has_last = 1;
    s->last = c;
}

TEST(window_detectors_on_a_flat_series_with_no_scale_say_nothing)
{
    struct { const struct det_ops *ops; const char *p; double v; } cases[] = {
        { &det_zscore, "min_std", 0 }, { &det_zscore, "min_std", -1 }, { &det_robust_z, "min_scale", 0 },
        { &det_cusum, "min_std", 0 }, { &det_ewma, "min_std", 0 }, { &det_ewma, "lambda", 0 },
    };
    for (size_t i = 0; i < GL_ARRAY_LEN(cases); i++) {
        struct rule_cfg rc;
        rule_of(&rc, cases[i].ops);
        rc.p[param_index(cases[i].ops, cases[i].p)] = cases[i].v;
        struct series s;
        struct win w;
        flat_series(&s, &w, 40, 60);
        struct host h = { .name = (char *)"h" };
        struct ent x = { .host = &h, .gpu = 0 };
        struct det_ctx cx = { .ts = T0 + 40000, .e = &x, .h = &h, .slot = -1, .s = &s, .v = 60 };
        unsigned char st[256] = { 0 };
        for (int k = 0; k < 3; k++) {
            struct det_out o;
            det_out_init(&o);
            int v = cases[i].ops->update(&rc, st, &cx, &o);
            if (v == DET_ANOMALY) printf("  %s with %s %g: an anomaly on a flat series\n", cases[i].ops->name, cases[i].p, cases[i].v);
            CHECK(v != DET_ANOMALY);
        }
    }
}

TEST(counter_that_does_not_grow_never_alarms)
{
    struct rule_cfg rc;
    rule_of(&rc, &det_counter);
    rc.p[param_index(&det_counter, "min_increase")] = 0;
    struct host h = { .name = (char *)"h" };
    struct ent x = { .host = &h, .gpu = 0 };
    unsigned char st[512] = { 0 };
    int anomalies = 0;
    for (int i = 0; i < 10; i++) {
        struct det_ctx cx = { .ts = T0 + i * 1000, .e = &x, .h = &h, .slot = -1, .v = 7 };
        struct det_out o;
        det_out_init(&o);
        anomalies += det_counter.update(&rc, st, &cx, &o) == DET_ANOMALY;
    }
    CHECK_EQ_INT(anomalies, 0);
}

TEST(clock_drop_reference_stays_finite)
{
    struct rule_cfg rc;
    rule_of(&rc, &det_clock_drop);
    rc.p[param_index(&det_clock_drop, "decay")] = 1e15;
    rc.aux[0] = 0;   /* clock */
    rc.aux[1] = 1;   /* utilisation */
    struct host h = { .name = (char *)"h" };
    struct ent x = { .host = &h, .gpu = 0, .present = 3 };
    unsigned char st[64] = { 0 };
    int bad = 0;
    for (int i = 0; i < 200; i++) {
        x.val[0] = 1400;
        x.val[1] = 97;
        struct det_ctx cx = { .ts = T0 + i * 1000, .e = &x, .h = &h, .slot = -1 };
        struct det_out o;
        det_out_init(&o);
        int v = det_clock_drop.update(&rc, st, &cx, &o);
        if (v == DET_ANOMALY || !det_out_finite(&o)) bad++;
    }
    CHECK_EQ_INT(bad, 0);
}

TEST(det_out_finite_sees_every_number)
{
    struct det_out o;
    det_out_init(&o);
    CHECK(det_out_finite(&o));
    for (int i = 0; i < 10; i++) {
        det_out_init(&o);
        double *f[] = { &o.value, &o.score, &o.excess, &o.peer_median, &o.a[0], &o.a[1], &o.a[2], &o.a[3], &o.a[4], &o.a[5] };
        *f[i] = i % 2 ? INFINITY : NAN;
        CHECK(!det_out_finite(&o));
    }
}

/* A detector that gives a NaN score and reason number: the engine drops
 * the verdict (no record), counts it. */
static int nan_update(const struct rule_cfg *rc, void *st, const struct det_ctx *cx, struct det_out *o)
{
    (void)rc; (void)st;
    o->value = cx->v;
    o->score = NAN;
    o->a[0] = INFINITY;
    return DET_ANOMALY;
}
static const struct det_param nan_params[] = { { NULL, 0, 0, 0, 0, NULL } };
static const struct det_ops det_nan = { .name = "nan", .scope = DS_SERIES, .params = nan_params, .update = nan_update };
static int nrec;
static void count_rec(void *ctx, const struct event *r) { (void)ctx; (void)r; nrec++; }

TEST(engine_drops_a_verdict_with_a_number_that_is_not_finite)
{
    struct profile *p = prof_of("{\"rules\":[{\"id\":\"z\",\"detector\":\"zscore\",\"metric\":\"m\"}]}");
    CHECK(p != NULL);
    if (!p) return;
    p->rules[0].ops = &det_nan;
    struct engine *e = engine_new(p, count_rec, NULL);
    int64_t lvl = gl_log_level;
    gl_log_level = GL_LOG_ERROR;
    for (int i = 0; i < 5; i++) sample(e, "h", 0, i, "m", 1.0, NULL);
    gl_log_level = (int)lvl;
    CHECK_EQ_INT(nrec, 0);
    CHECK_EQ_INT(engine_get_stats(e)->nonfinite, 5);
    engine_free(e);
    profile_free(p);
}

int main(void)
{
    RUN(every_default_lies_in_its_range);
    RUN(the_docs_list_every_range);
    RUN(a_value_just_outside_a_range_is_refused_the_edges_taken);
    RUN(a_file_names_the_place_of_the_bad_value);
    RUN(peer_with_no_peers_and_min_peers_0_reads_nothing_and_says_nothing);
    RUN(window_detectors_on_a_flat_series_with_no_scale_say_nothing);
    RUN(counter_that_does_not_grow_never_alarms);
    RUN(clock_drop_reference_stays_finite);
    RUN(det_out_finite_sees_every_number);
    RUN(engine_drops_a_verdict_with_a_number_that_is_not_finite);
    return TEST_REPORT();
}
