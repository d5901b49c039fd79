/* report.c - see report.h: the state kept while reading (GPUs, series on
 * the shared grid, episodes, kernel events); report_html.c writes the page. */
#include "report_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
const struct rep_known_col rep_known[] = {
    [S_TEMP] = { "gpu.temperature.gpu", "temp", "Temperature", "\xc2\xb0" "C" },
    [S_POWER] = { "gpu.power.usage", "power", "Power", "W" },
    [S_SM] = { "gpu.clock.streaming_multiprocessor_frequency", "sm", "SM clock", "MHz" },
    [S_UTIL] = { "gpu.utilization.gpu.pct", "util", "Utilisation", "%" },
    [S_FB] = { "gpu.memory.framebuffer.used_size", "fb", "Framebuffer used", "MiB" },
    [S_PLIMIT] = { "gpu.power.limit", "plimit", "Power limit", "W" },
    [S_FBTOTAL] = { "gpu.memory.framebuffer.total_size", "fbtotal", "Framebuffer total", "MiB" },
    [S_SBE] = { "gpu.ecc.single_bit.count", "sbe", "ECC single-bit", "" },
    [S_DBE] = { "gpu.ecc.double_bit.count", "dbe", "ECC double-bit", "" },
    [S_PCIE] = { "gpu.pcie.replay", "pcie", "PCIe replays", "" },
};
/* Owns nothing: reads the threshold rule's "high" parameter of prof, if any. */
static double rep_temp_limit(const struct profile *prof)
{
    if (!prof) return NAN;
    for (size_t i = 0; i < prof->nrules; i++) {
        const struct rule_cfg *rc = &prof->rules[i];
        if (!rc->ops || strcmp(rc->ops->name, "threshold") || !rc->metric || strcmp(rc->metric, rep_known[S_TEMP].field))
            continue;
        for (size_t k = 0; rc->ops->params && rc->ops->params[k].name && k < DET_MAX_PARAMS; k++)
            if (!strcmp(rc->ops->params[k].name, "high") && isfinite(rc->p[k])) return rc->p[k];
    }
    return NAN;
}

static void rep_ep_clear(void *e);
static void rep_xid_clear(void *e);

struct report *report_new(const struct profile *prof)
{
    struct report *r = xcalloc(1, sizeof *r);
    r->temp_limit = rep_temp_limit(prof);
    r->tmin = INT64_MAX;
    r->tmax = INT64_MIN;
    u64map_init(&r->ent_idx);
    return r;
}

void report_free(struct report *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->nents; i++) {
        free(r->ents[i].host);
        free(r->ents[i].bus);
        for (int s = 0; s < S_N; s++) {
            free(r->ents[i].s[s].v);
            free(r->ents[i].c[s].v);
        }
    }
    free(r->ents);
    u64map_free(&r->ent_idx);
    for (size_t i = 0; i < r->nextra; i++) free(r->extra[i]);
    for (size_t i = 0; i < r->neps; i++) rep_ep_clear(&r->eps[i]);
    for (size_t i = 0; i < r->nincs; i++) rep_ep_clear(&r->incs[i]);
    free(r->incs);
    for (size_t i = 0; i < r->nxids; i++) rep_xid_clear(&r->xids[i]);
    free(r->eps);
    free(r->xids);
    free(r);
}

/* ------------------------------------------------------------ envelopes */

void rep_env_add(struct rep_env *e, double x)
{
    float f = (float)x;
    if (!e->n) e->lo = e->hi = f;
    else {
        if (f < e->lo) e->lo = f;
        if (f > e->hi) e->hi = f;
    }
    e->sum += f;
    e->n++;
}

/* Merges b into a (both owned by the caller). */
static void rep_env_merge(struct rep_env *a, const struct rep_env *b)
{
    if (!b->n) return;
    if (!a->n) { *a = *b; return; }
    if (b->lo < a->lo) a->lo = b->lo;
    if (b->hi > a->hi) a->hi = b->hi;
    a->sum += b->sum;
    a->n += b->n;
}

void rep_env_halve(struct rep_env *v, size_t nb_old)
{
    for (size_t j = 0; 2 * j < nb_old; j++) {
        struct rep_env m = v[2 * j];
        if (2 * j + 1 < nb_old) rep_env_merge(&m, &v[2 * j + 1]);
        v[j] = m;
    }
    size_t nb_new = (nb_old + 1) / 2;
    memset(v + nb_new, 0, (nb_old - nb_new) * sizeof *v);
}

long rep_grid_slot(struct rep_grid *g, int64_t t, void (*merge)(void *ctx, size_t nb_old), void *ctx)
{
    if (t < g->origin) return -1;
    int64_t slot = (t - g->origin) / g->bw;
    while (slot >= REP_BUCKETS) {
        merge(ctx, g->nb);
        g->nb = (g->nb + 1) / 2;
        g->bw *= 2;
        slot = (t - g->origin) / g->bw;
    }
    if ((size_t)slot >= g->nb) g->nb = (size_t)slot + 1;
    return (long)slot;
}

void rep_envelope(const struct rep_env *in, size_t nb, int64_t origin, int64_t bw, int64_t t0, int64_t t1,
                  struct rep_env *out, size_t cols)
{
    memset(out, 0, cols * sizeof *out);
    if (t1 <= t0 || !cols) return;
    double span = (double)(t1 - t0);
    for (size_t i = 0; i < nb; i++) {
        if (!in[i].n) continue;
        int64_t bt = origin + (int64_t)i * bw;
        if (bt + bw <= t0 || bt >= t1) continue;
        double x = bt < t0 ? 0 : (double)(bt - t0) / span * (double)cols;
        size_t c = x >= (double)cols ? cols - 1 : (size_t)x;
        rep_env_merge(&out[c], &in[i]);
    }
}

/* ------------------------------------------------------------ collecting */

static void rep_series_halve(struct rep_series *se)
{
    if (!se->len) return;
    rep_env_halve(se->v, se->len);
    se->len = (se->len + 1) / 2;
}

/* Halves every series of r, fine and coarse (the grid's merge callback; r
 * is the ctx): a coarse bucket stays 1 << REP_COARSE_SHIFT of the grid's. */
static void rep_halve_all(void *ctx, size_t nb_old)
{
    struct report *r = ctx;
    (void)nb_old;
    for (size_t i = 0; i < r->nents; i++)
        for (int s = 0; s < S_N; s++) {
            rep_series_halve(&r->ents[i].s[s]);
            rep_series_halve(&r->ents[i].c[s]);
        }
}

/* Adds x at bucket slot of series se (owned by its entity; at most max
 * buckets), growing it. */
static void rep_series_add(struct rep_series *se, long slot, double x, size_t max)
{
    size_t need = (size_t)slot + 1;
    if (need > se->cap) {
        size_t nc = se->cap ? se->cap : 64;
        while (nc < need) nc *= 2;
        if (nc > max) nc = max;
        se->v = xrealloc(se->v, nc * sizeof *se->v);
        memset(se->v + se->cap, 0, (nc - se->cap) * sizeof *se->v);
        se->cap = nc;
    }
    if (need > se->len) se->len = need;
    rep_env_add(&se->v[slot], x);
}

static uint64_t rep_ent_hash(const char *host, int gpu)
{
    return hash64(host, strlen(host), (uint64_t)(int64_t)gpu);
}

/* The entity of (host, gpu), created when new (a full-resolution place
 * while some are free); NULL past REP_MAX_ENTS, or when absent and not
 * create. The pointer lasts until the next creation. */
static struct rep_ent *rep_ent_get(struct report *r, const char *host, int gpu, int create)
{
    if (!host) host = "";
    if (r->last_ent < r->nents) {
        struct rep_ent *e = &r->ents[r->last_ent];
        if (e->gpu == gpu && !strcmp(e->host, host)) return e;
    }
    uint64_t h = rep_ent_hash(host, gpu);
    size_t it = 0;
    uint32_t i;
    while (u64map_next(&r->ent_idx, h, &it, &i))
        if (r->ents[i].gpu == gpu && !strcmp(r->ents[i].host, host)) {
            r->last_ent = i;
            return &r->ents[i];
        }
    if (!create) return NULL;
    if (r->nents == REP_MAX_ENTS) {
        r->dropped_ents++;
        return NULL;
    }
    if (r->nents == r->capents) {
        r->capents = r->capents ? r->capents * 2 : 16;
        r->ents = xrealloc(r->ents, r->capents * sizeof *r->ents);
    }
    struct rep_ent *e = &r->ents[r->nents];
    memset(e, 0, sizeof *e);
    e->host = xstrdup(host);
    e->gpu = gpu;
    if (r->nfine < REP_FINE) {
        e->fine = 1;
        e->fine_since = INT64_MIN;
        r->nfine++;
    }
    u64map_add(&r->ent_idx, h, (uint32_t)r->nents);
    r->last_ent = r->nents++;
    return e;
}

long rep_ent_find(const struct report *r, const char *host, int gpu)
{
    size_t it = 0;
    uint32_t i;
    while (u64map_next(&r->ent_idx, rep_ent_hash(host, gpu), &it, &i))
        if (r->ents[i].gpu == gpu && !strcmp(r->ents[i].host, host)) return (long)i;
    return -1;
}

/* Does a matter less than b (severity, then risk)? */
static int rep_ent_less(const struct rep_ent *a, const struct rep_ent *b)
{
    return a->sev != b->sev ? a->sev < b->sev : a->risk < b->risk;
}

/* e (of host, gpu, if tracked) had an episode, incident or kernel event
 * of severity sev and risk: the worst is kept, and a faulty GPU without
 * full-resolution series takes the place of the one that matters least
 * (its series from now on; its coarse one covers what came before). */
static void rep_ent_fault(struct report *r, const char *host, int gpu, int sev, double risk)
{
    struct rep_ent *e = rep_ent_get(r, host, gpu, 0);
    if (!e) return;
    if (sev > e->sev) e->sev = sev;
    if (risk > e->risk) e->risk = risk;
    if (e->fine) return;
    struct rep_ent *v = NULL;
    for (size_t i = 0; i < r->nents; i++)
        if (r->ents[i].fine && (!v || rep_ent_less(&r->ents[i], v))) v = &r->ents[i];
    if (!v || !rep_ent_less(v, e)) return;
    for (int s = 0; s < S_N; s++) {
        free(v->s[s].v);
        memset(&v->s[s], 0, sizeof v->s[s]);
    }
    v->fine = 0;
    e->fine = 1;
    e->fine_since = r->have_grid ? r->tmax + 1 : INT64_MIN;   /* the samples from now on */
}

static int rep_cmp_known(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Series index of a metric field name (-1: not charted). The known names
 * are looked up in a sorted copy of rep_known's fields. */
static int rep_slot_of(struct report *r, const char *key)
{
    static const char *sorted[REP_NKNOWN];
    static int sorted_idx[REP_NKNOWN], ready;
    if (!ready) {
        for (int i = 0; i < REP_NKNOWN; i++) sorted[i] = rep_known[i].field;
        qsort(sorted, REP_NKNOWN, sizeof *sorted, rep_cmp_known);
        for (int i = 0; i < REP_NKNOWN; i++)
            for (int k = 0; k < REP_NKNOWN; k++)
                if (sorted[i] == rep_known[k].field) sorted_idx[i] = k;
        ready = 1;
    }
    if (key[0] == 'g') {
        const char **hit = bsearch(&key, sorted, REP_NKNOWN, sizeof *sorted, rep_cmp_known);
        return hit ? sorted_idx[hit - sorted] : -1;
    }
    if (strncmp(key, "metrics.", 8)) return -1;
    for (size_t i = 0; i < r->nextra; i++)
        if (!strcmp(r->extra[i], key)) return S_X0 + (int)i;
    if (r->nextra == REP_MAX_EXTRA) {
        r->dropped_extra++;
        return -1;
    }
    r->extra[r->nextra] = xstrdup(key);
    return S_X0 + (int)r->nextra++;
}

static void rep_time(struct report *r, int64_t t)
{
    if (t < r->tmin) r->tmin = t;
    if (t > r->tmax) r->tmax = t;
}

/* A copy of string field key of ev (caller frees), NULL when absent. */
static char *rep_strdup_field(const struct event *ev, const char *key)
{
    size_t n;
    const char *s = event_get_str(ev, key, &n);
    return s ? xstrndup(s, n) : NULL;
}

/* A new zeroed element at the end of the array *arr (n used, cap
 * allocated, elements of size sz, owned by the caller); when it holds max
 * already, the place of its least element (less) if that is less than
 * cand (clear frees what it held; zeroed), else NULL. Either way a full
 * array counts one in *dropped: the most severe are kept, whatever came
 * first. */
static void *rep_keep(void *arr, size_t *n, size_t *cap, size_t max, size_t sz, uint64_t *dropped,
                      int (*less)(const void *a, const void *b), const void *cand, void (*clear)(void *e))
{
    void **pa = arr;
    if (*n == max) {
        (*dropped)++;
        char *least = NULL;
        for (size_t i = 0; i < *n; i++) {
            char *e = (char *)*pa + i * sz;
            if (!least || less(e, least)) least = e;
        }
        if (!least || !less(least, cand)) return NULL;
        clear(least);
        memset(least, 0, sz);
        return least;
    }
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 32;
        *pa = xrealloc(*pa, *cap * sz);
    }
    char *e = (char *)*pa + (*n)++ * sz;
    memset(e, 0, sz);
    return e;
}

/* Episodes (and incidents): the less severe, then the lower risk. */
static int rep_ep_less(const void *a, const void *b)
{
    const struct rep_ep *x = a, *y = b;
    return x->sev != y->sev ? x->sev < y->sev : x->risk < y->risk;
}

static void rep_ep_clear(void *e)
{
    struct rep_ep *p = e;
    free(p->host);
    free(p->rule);
    free(p->name);
    free(p->reason);
    free(p->rules);
    free(p->action);
    free(p->action_why);
    free(p->procs);
}

int rep_xid_rank(const char *sev)
{
    if (!sev) return 0;
    return !strcmp(sev, "critical") ? 3 : !strcmp(sev, "warning") ? 2 : !strcmp(sev, "info") ? 1 : 0;
}

/* Kernel events: the lower severity. */
static int rep_xid_less(const void *a, const void *b)
{
    return rep_xid_rank(((const struct rep_xid *)a)->sev) < rep_xid_rank(((const struct rep_xid *)b)->sev);
}

static void rep_xid_clear(void *e)
{
    struct rep_xid *x = e;
    free(x->host);
    free(x->name);
    free(x->sev);
    free(x->bus);
    free(x->msg);
}

/* One kernel event (Xid/SXid) into r's list. */
static void rep_kernel(struct report *r, const struct event *ev, int sxid)
{
    r->kernel++;
    rep_time(r, ev->ts_ms);
    struct rep_xid cand = { .sev = rep_strdup_field(ev, sxid ? "gpu.sxid.severity" : "gpu.xid.severity") };
    double d;
    int gpu = event_get_num(ev, "gpu.index", &d) ? (int)d : -1;
    if (gpu >= 0) rep_ent_fault(r, ev->host ? ev->host : "", gpu, rep_xid_rank(cand.sev), 0);
    struct rep_xid *x = rep_keep(&r->xids, &r->nxids, &r->capxids, REP_MAX_XIDS, sizeof *x, &r->dropped_xids,
                                 rep_xid_less, &cand, rep_xid_clear);
    if (!x) {
        free(cand.sev);
        return;
    }
    x->ts = ev->ts_ms;
    x->sxid = sxid;
    x->host = xstrdup(ev->host ? ev->host : "");
    x->code = event_get_num(ev, sxid ? "gpu.sxid.code" : "gpu.xid.code", &d) ? (int)d : -1;
    x->gpu = gpu;
    x->name = rep_strdup_field(ev, sxid ? "gpu.sxid.name" : "gpu.xid.name");
    x->sev = cand.sev;
    x->bus = rep_strdup_field(ev, "gpu.pci.bus_id");
    x->msg = rep_strdup_field(ev, "message");
}

void report_event(struct report *r, const struct event *ev)
{
    if (!ev->kind || strcmp(ev->kind, "metric")) {
        if (ev->dataset && !strcmp(ev->dataset, "gpu.xid")) rep_kernel(r, ev, 0);
        else if (ev->dataset && !strcmp(ev->dataset, "gpu.sxid")) rep_kernel(r, ev, 1);
        else r->other++;
        return;
    }
    double gd;
    int gpu = event_get_num(ev, "gpu.index", &gd) ? (int)gd : -1;
    struct rep_ent *e = rep_ent_get(r, ev->host, gpu, 1);
    if (!e) return;
    if (!r->have_grid) {
        r->g.origin = ev->ts_ms;
        r->g.bw = 1;
        r->have_grid = 1;
    }
    long slot = rep_grid_slot(&r->g, ev->ts_ms, rep_halve_all, r);
    if (slot < 0) {
        r->older++;
        return;
    }
    rep_time(r, ev->ts_ms);
    r->samples++;
    e->samples++;
    if (!e->bus && gpu >= 0) e->bus = rep_strdup_field(ev, "gpu.pci.bus_id");
    for (size_t i = 0; i < ev->nf; i++) {
        const struct ev_field *f = &ev->f[i];
        if (f->type != EV_INT && f->type != EV_NUM) continue;
        int s = rep_slot_of(r, f->key);
        if (s < 0) continue;
        double x = f->type == EV_INT ? (double)f->v.i : f->v.d;
        if (!isfinite(x)) continue;
        if (s >= S_FIRST_COUNTER && s < S_FIRST_COUNTER + S_NCOUNTERS) {
            /* counters: markers where they rise (a drop is a reset: new base) */
            int c = s - S_FIRST_COUNTER;
            double prev = e->last[c];
            int had = e->have_last[c];
            e->last[c] = x;
            e->have_last[c] = 1;
            if (!had || x <= prev) continue;
            x -= prev;
        }
        rep_series_add(&e->c[s], slot >> REP_COARSE_SHIFT, x, REP_BUCKETS >> REP_COARSE_SHIFT);
        if (e->fine) rep_series_add(&e->s[s], slot, x, REP_BUCKETS);
    }
}

/* The open episode (or incident) of (host, gpu, rule) among the n in v, or NULL. */
static struct rep_ep *rep_ep_find(struct rep_ep *v, size_t n, const char *host, int gpu, const char *rule)
{
    for (size_t i = n; i-- > 0;) {
        struct rep_ep *p = &v[i];
        if (p->open && p->gpu == gpu && !strcmp(p->rule, rule) && !strcmp(p->host, host)) return p;
    }
    return NULL;
}

void report_record(struct report *r, const struct event *rec)
{
    char rule[128], type[16];
    size_t n;
    if (rec->dataset && !strcmp(rec->dataset, "gpu.fleet_incident")) return;   /* the fleet's, not a node's */
    const char *s = event_get_str(rec, "rule.id", &n);
    snprintf(rule, sizeof rule, "%.*s", s ? (int)n : 0, s ? s : "");
    s = event_get_str(rec, "event.type", &n);
    snprintf(type, sizeof type, "%.*s", s ? (int)n : 0, s ? s : "");
    const char *host = rec->host ? rec->host : "";
    double d;
    int gpu = event_get_num(rec, "gpu.index", &d) ? (int)d : -1;
    double risk = event_get_num(rec, "event.risk_score", &d) ? d : 0;
    int sev = event_get_num(rec, "event.severity", &d) ? (int)d : 1;
    int64_t start = rec->ts_ms;
    if ((s = event_get_str(rec, "event.start", &n))) gl_parse_iso_ts(s, n, &start);
    /* incidents apart from the rules' episodes */
    int inc = rec->dataset && !strcmp(rec->dataset, "gpu.incident");
    struct rep_ep *p = inc ? rep_ep_find(r->incs, r->nincs, host, gpu, rule) : rep_ep_find(r->eps, r->neps, host, gpu, rule);
    if (gpu >= 0) rep_ent_fault(r, host, gpu, sev, risk);
    if (!p) {
        struct rep_ep cand = { .sev = sev, .risk = risk };
        p = inc ? rep_keep(&r->incs, &r->nincs, &r->capincs, REP_MAX_INCS, sizeof *p, &r->dropped_incs, rep_ep_less, &cand,
                           rep_ep_clear)
                : rep_keep(&r->eps, &r->neps, &r->capeps, REP_MAX_EPS, sizeof *p, &r->dropped_eps, rep_ep_less, &cand,
                           rep_ep_clear);
        if (!p) return;
        p->host = xstrdup(host);
        p->rule = xstrdup(rule);
        p->name = rep_strdup_field(rec, "rule.name");
        p->gpu = gpu;
        p->start = start;
        p->end = rec->ts_ms;
        p->open = 1;
        p->risk = -1;
    }
    if (risk > p->risk || !p->reason || inc) {
        /* the reason shown is the one of the record with the highest risk
         * (an incident's: its latest, the end's summary of its rules) */
        free(p->reason);
        p->reason = rep_strdup_field(rec, "event.reason");
        if (risk > p->risk) p->risk = risk;
    }
    if (inc) {
        free(p->rules);
        p->rules = rep_strdup_field(rec, "anomaly.rules");
        if (event_get_str(rec, "anomaly.action", &n)) {         /* the latest: raised by a change record */
            free(p->action);
            free(p->action_why);
            p->action = rep_strdup_field(rec, "anomaly.action");
            p->action_why = rep_strdup_field(rec, "anomaly.action_reason");
        }
        if (event_get_str(rec, "anomaly.processes", &n)) {
            free(p->procs);
            p->procs = rep_strdup_field(rec, "anomaly.processes");
        }
    }
    if (sev > p->sev) p->sev = sev;
    if (rec->ts_ms > p->end) p->end = rec->ts_ms;
    rep_time(r, start);
    if (!strcmp(type, "end")) {
        int64_t end = rec->ts_ms;
        if ((s = event_get_str(rec, "event.end", &n))) gl_parse_iso_ts(s, n, &end);
        p->end = end;
        p->open = 0;
    }
}

