/* report.c - see report.h. */
#include "report.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define REP_MAX_ENTS 64       /* GPUs (host, index) charted; more are counted */
#define REP_MAX_EXTRA 6       /* generic numeric columns (metrics.*) charted */
#define REP_MAX_EPS 4000      /* episodes kept */
#define REP_MAX_XIDS 2000     /* kernel events kept */
#define REP_TABLE_ROWS 200    /* incident rows in the header table */
#define REP_ZOOMS 16          /* incidents that get a finer zoom window */
#define REP_ZOOM_COLS 300

/* the series of a GPU: charts, overlays, counters (markers), generic columns */
enum { S_TEMP, S_POWER, S_SM, S_UTIL, S_FB, S_PLIMIT, S_FBTOTAL, S_SBE, S_DBE, S_PCIE, S_X0, S_N = S_X0 + REP_MAX_EXTRA };
#define S_FIRST_COUNTER S_SBE
#define S_NCOUNTERS 3

static const struct { const char *field, *key, *label, *unit; } rep_known[] = {
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
#define REP_NKNOWN (S_PCIE + 1)

struct rep_series {
    struct rep_env *v;        /* buckets [0, len) of the shared grid */
    size_t len, cap;
};

struct rep_ent {
    char *host;
    char *bus;                /* gpu.pci.bus_id when the input names it */
    int gpu;                  /* -1: the input has no GPU index */
    uint64_t samples;
    struct rep_series s[S_N];
    double last[S_NCOUNTERS];
    unsigned char have_last[S_NCOUNTERS];
};

struct rep_ep {
    char *host, *rule, *name, *reason;
    int gpu;                  /* -1: not about one GPU */
    int64_t start, end;
    int open, sev;
    double risk;
};

struct rep_xid {
    int64_t ts;
    char *host, *name, *sev, *bus, *msg;
    int gpu, code, sxid;
};

struct report {
    double temp_limit;        /* NAN: unknown */
    struct rep_grid g;
    int have_grid;
    struct rep_ent ents[REP_MAX_ENTS];
    size_t nents, last_ent;
    char *extra[REP_MAX_EXTRA];
    size_t nextra;
    struct rep_ep *eps;
    size_t neps, capeps;
    struct rep_xid *xids;
    size_t nxids, capxids;
    int64_t tmin, tmax;
    uint64_t samples, kernel, other, older, dropped_ents, dropped_eps, dropped_xids, dropped_extra;
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

struct report *report_new(const struct profile *prof)
{
    struct report *r = xcalloc(1, sizeof *r);
    r->temp_limit = rep_temp_limit(prof);
    r->tmin = INT64_MAX;
    r->tmax = INT64_MIN;
    return r;
}

void report_free(struct report *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->nents; i++) {
        free(r->ents[i].host);
        free(r->ents[i].bus);
        for (int s = 0; s < S_N; s++) free(r->ents[i].s[s].v);
    }
    for (size_t i = 0; i < r->nextra; i++) free(r->extra[i]);
    for (size_t i = 0; i < r->neps; i++) {
        free(r->eps[i].host);
        free(r->eps[i].rule);
        free(r->eps[i].name);
        free(r->eps[i].reason);
    }
    for (size_t i = 0; i < r->nxids; i++) {
        struct rep_xid *x = &r->xids[i];
        free(x->host);
        free(x->name);
        free(x->sev);
        free(x->bus);
        free(x->msg);
    }
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

/* Halves every series of r (the grid's merge callback; r is the ctx). */
static void rep_halve_all(void *ctx, size_t nb_old)
{
    struct report *r = ctx;
    (void)nb_old;
    for (size_t i = 0; i < r->nents; i++)
        for (int s = 0; s < S_N; s++) {
            struct rep_series *se = &r->ents[i].s[s];
            if (!se->len) continue;
            rep_env_halve(se->v, se->len);
            se->len = (se->len + 1) / 2;
        }
}

/* Adds x at bucket slot of series se (owned by its entity), growing it. */
static void rep_series_add(struct rep_series *se, long slot, double x)
{
    size_t need = (size_t)slot + 1;
    if (need > se->cap) {
        size_t nc = se->cap ? se->cap : 64;
        while (nc < need) nc *= 2;
        if (nc > REP_BUCKETS) nc = REP_BUCKETS;
        se->v = xrealloc(se->v, nc * sizeof *se->v);
        memset(se->v + se->cap, 0, (nc - se->cap) * sizeof *se->v);
        se->cap = nc;
    }
    if (need > se->len) se->len = need;
    rep_env_add(&se->v[slot], x);
}

/* The entity of (host, gpu), created when new; NULL past REP_MAX_ENTS. */
static struct rep_ent *rep_ent_get(struct report *r, const char *host, int gpu, int create)
{
    if (!host) host = "";
    if (r->last_ent < r->nents) {
        struct rep_ent *e = &r->ents[r->last_ent];
        if (e->gpu == gpu && !strcmp(e->host, host)) return e;
    }
    for (size_t i = 0; i < r->nents; i++)
        if (r->ents[i].gpu == gpu && !strcmp(r->ents[i].host, host)) {
            r->last_ent = i;
            return &r->ents[i];
        }
    if (!create) return NULL;
    if (r->nents == REP_MAX_ENTS) {
        r->dropped_ents++;
        return NULL;
    }
    struct rep_ent *e = &r->ents[r->nents];
    memset(e, 0, sizeof *e);
    e->host = xstrdup(host);
    e->gpu = gpu;
    r->last_ent = r->nents++;
    return e;
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
 * allocated, elements of size sz, owned by the caller), or NULL (counted
 * in *dropped) when it holds max already. */
static void *rep_push(void *arr, size_t *n, size_t *cap, size_t max, size_t sz, uint64_t *dropped)
{
    void **pa = arr;
    if (*n == max) {
        (*dropped)++;
        return NULL;
    }
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 32;
        *pa = xrealloc(*pa, *cap * sz);
    }
    char *e = (char *)*pa + (*n)++ * sz;
    memset(e, 0, sz);
    return e;
}

/* One kernel event (Xid/SXid) into r's list. */
static void rep_kernel(struct report *r, const struct event *ev, int sxid)
{
    r->kernel++;
    rep_time(r, ev->ts_ms);
    struct rep_xid *x = rep_push(&r->xids, &r->nxids, &r->capxids, REP_MAX_XIDS, sizeof *x, &r->dropped_xids);
    if (!x) return;
    x->ts = ev->ts_ms;
    x->sxid = sxid;
    x->host = xstrdup(ev->host ? ev->host : "");
    double d;
    x->code = event_get_num(ev, sxid ? "gpu.sxid.code" : "gpu.xid.code", &d) ? (int)d : -1;
    x->gpu = event_get_num(ev, "gpu.index", &d) ? (int)d : -1;
    x->name = rep_strdup_field(ev, sxid ? "gpu.sxid.name" : "gpu.xid.name");
    x->sev = rep_strdup_field(ev, sxid ? "gpu.sxid.severity" : "gpu.xid.severity");
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
        rep_series_add(&e->s[s], slot, x);
    }
}

/* The open episode of (host, gpu, rule) in r, or NULL. */
static struct rep_ep *rep_ep_find(struct report *r, const char *host, int gpu, const char *rule)
{
    for (size_t i = r->neps; i-- > 0;) {
        struct rep_ep *p = &r->eps[i];
        if (p->open && p->gpu == gpu && !strcmp(p->rule, rule) && !strcmp(p->host, host)) return p;
    }
    return NULL;
}

void report_record(struct report *r, const struct event *rec)
{
    char rule[128], type[16];
    size_t n;
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
    struct rep_ep *p = rep_ep_find(r, host, gpu, rule);
    if (!p) {
        p = rep_push(&r->eps, &r->neps, &r->capeps, REP_MAX_EPS, sizeof *p, &r->dropped_eps);
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
    if (risk > p->risk || !p->reason) {
        /* the reason shown is the one of the record with the highest risk */
        free(p->reason);
        p->reason = rep_strdup_field(rec, "event.reason");
        if (risk > p->risk) p->risk = risk;
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

/* ------------------------------------------------------------ escaping */

void rep_html_escape(struct buf *out, const char *s, size_t n)
{
    /* the JSON string writer already replaces NUL and invalid UTF-8: take
     * its output, undo its escapes (control characters become spaces) and
     * entity-escape what HTML needs */
    struct buf j;
    buf_init(&j);
    buf_put_json_str(&j, s, n);
    for (size_t i = 1; i + 1 < j.len; i++) {
        char c = j.p[i];
        if (c == '\\') {
            c = j.p[++i];
            if (c == 'u') i += 4;
            if (c != '"' && c != '\\') c = ' ';
        }
        switch (c) {
        case '&': buf_puts(out, "&amp;"); break;
        case '<': buf_puts(out, "&lt;"); break;
        case '>': buf_puts(out, "&gt;"); break;
        case '"': buf_puts(out, "&quot;"); break;
        case '\'': buf_puts(out, "&#39;"); break;
        default: buf_putc(out, c);
        }
    }
    buf_free(&j);
}

void rep_script_json(struct buf *out, const char *json, size_t n)
{
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        const char *rep;
        switch (json[i]) {
        case '<': rep = "\\u003c"; break;
        case '>': rep = "\\u003e"; break;
        case '&': rep = "\\u0026"; break;
        default: continue;
        }
        buf_append(out, json + run, i - run);
        buf_puts(out, rep);
        run = i + 1;
    }
    buf_append(out, json + run, n - run);
}

/* ------------------------------------------------------------ the page */

/* Appends x compactly (enough digits for a chart and its hover text). */
static void rep_num(struct buf *b, double x)
{
    char t[32];
    int n;
    if (!isfinite(x)) n = snprintf(t, sizeof t, "null");
    else if (fabs(x) >= 1000 || x == floor(x)) n = snprintf(t, sizeof t, "%.0f", x);
    else n = snprintf(t, sizeof t, "%.4g", x);
    buf_append(b, t, (size_t)n);
}

/* Appends a JSON array of lo, hi or mean (which: 0, 1, 2) of cols columns. */
static void rep_json_col(struct buf *b, const struct rep_env *c, size_t cols, int which)
{
    buf_putc(b, '[');
    for (size_t i = 0; i < cols; i++) {
        if (i) buf_putc(b, ',');
        if (!c[i].n) buf_puts(b, "null");
        else rep_num(b, which == 0 ? c[i].lo : which == 1 ? c[i].hi : c[i].sum / (double)c[i].n);
    }
    buf_putc(b, ']');
}

struct rep_win {
    int64_t t0, t1;
    size_t cols;
    struct rep_env *tmp;      /* cols columns of scratch, owned by the writer */
};

/* Appends "key":{...} for every series of entity e that has samples in the
 * window w; counters as [[column, rise], ...]. */
static void rep_json_series(struct buf *b, const struct report *r, const struct rep_ent *e, const struct rep_win *w)
{
    int first = 1;
    for (int s = 0; s < S_N; s++) {
        const struct rep_series *se = &e->s[s];
        if (!se->len) continue;
        rep_envelope(se->v, se->len, r->g.origin, r->g.bw, w->t0, w->t1, w->tmp, w->cols);
        size_t used = 0;
        for (size_t i = 0; i < w->cols; i++) used += w->tmp[i].n != 0;
        if (!used) continue;
        if (!first) buf_putc(b, ',');
        first = 0;
        char key[8];
        snprintf(key, sizeof key, "x%d", s - S_X0);
        buf_put_json_str(b, s < S_X0 ? rep_known[s].key : key, strlen(s < S_X0 ? rep_known[s].key : key));
        buf_putc(b, ':');
        if (s >= S_FIRST_COUNTER && s < S_FIRST_COUNTER + S_NCOUNTERS) {
            buf_putc(b, '[');
            int f = 1;
            for (size_t i = 0; i < w->cols; i++) {
                if (!w->tmp[i].n) continue;
                buf_printf(b, "%s[%zu,", f ? "" : ",", i);
                rep_num(b, w->tmp[i].sum);
                buf_putc(b, ']');
                f = 0;
            }
            buf_putc(b, ']');
            continue;
        }
        buf_puts(b, "{\"lo\":");
        rep_json_col(b, w->tmp, w->cols, 0);
        buf_puts(b, ",\"hi\":");
        rep_json_col(b, w->tmp, w->cols, 1);
        buf_puts(b, ",\"av\":");
        rep_json_col(b, w->tmp, w->cols, 2);
        buf_putc(b, '}');
    }
}

/* Appends "key":"value" (value JSON-escaped; NULL as ""), with a leading comma unless first. */
static void rep_json_kv(struct buf *b, const char *key, const char *val, int first)
{
    if (!first) buf_putc(b, ',');
    buf_put_json_str(b, key, strlen(key));
    buf_putc(b, ':');
    buf_put_json_str(b, val ? val : "", val ? strlen(val) : 0);
}

/* Appends the name of entity e: "GPU n", with the host when several hosts. */
static void rep_ent_name(struct buf *b, const struct rep_ent *e, int many_hosts)
{
    if (e->gpu >= 0 && many_hosts) buf_printf(b, "%s GPU %d", e->host, e->gpu);
    else if (e->gpu >= 0) buf_printf(b, "GPU %d", e->gpu);
    else buf_puts(b, *e->host ? e->host : "all");
}

static const struct report *rep_sort_ctx;
static int rep_cmp_eps(const void *a, const void *b)
{
    const struct rep_ep *x = &rep_sort_ctx->eps[*(const size_t *)a], *y = &rep_sort_ctx->eps[*(const size_t *)b];
    if (x->sev != y->sev) return y->sev - x->sev;
    if (x->risk != y->risk) return y->risk > x->risk ? 1 : -1;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return (*(const size_t *)a > *(const size_t *)b) - (*(const size_t *)a < *(const size_t *)b);
}

/* Appends a duration in plain words ("4 min 10 s"). */
static void rep_dur(struct buf *b, int64_t ms)
{
    int64_t s = ms / 1000;
    if (s < 60) buf_printf(b, "%lld s", (long long)s);
    else if (s < 3600) buf_printf(b, "%lld min %02lld s", (long long)(s / 60), (long long)(s % 60));
    else if (s < 86400) buf_printf(b, "%lld h %02lld min", (long long)(s / 3600), (long long)(s % 3600 / 60));
    else buf_printf(b, "%lld d %lld h", (long long)(s / 86400), (long long)(s % 86400 / 3600));
}

/* Appends time t as "YYYY-MM-DD HH:MM:SS" (UTC). */
static void rep_ts(struct buf *b, int64_t t)
{
    char ts[25];
    gl_fmt_ts(t, ts);
    ts[10] = ' ';
    buf_append(b, ts, 19);
}

/* Appends HTML-escaped NUL-terminated s (NULL as ""). */
static void rep_h(struct buf *b, const char *s)
{
    if (s) rep_html_escape(b, s, strlen(s));
}

/* The header facts and the incident table (HTML). order: sorted episodes. */
static void rep_html_head(struct buf *h, const struct report *r, const struct report_info *info, const size_t *order,
                          const char *hosts, int64_t t0, int64_t t1)
{
    buf_puts(h, "<header><h1>GPU report <span class=\"node\">");
    rep_h(h, *hosts ? hosts : "(no host)");
    buf_puts(h, "</span></h1><dl class=\"facts\"><dt>Source</dt><dd>");
    rep_h(h, info && info->source ? info->source : "-");
    buf_puts(h, "</dd><dt>Time (UTC)</dt><dd>");
    if (t1 > t0) {
        rep_ts(h, t0);
        buf_puts(h, " &ndash; ");
        rep_ts(h, r->tmax);
        buf_puts(h, " (");
        rep_dur(h, r->tmax - t0);
        buf_puts(h, ")");
    } else buf_puts(h, "no timestamped events");
    buf_puts(h, "</dd><dt>GPUs</dt><dd>");
    int many = 0;
    for (size_t i = 1; i < r->nents; i++) many |= strcmp(r->ents[i].host, r->ents[0].host) != 0;
    buf_printf(h, "%zu", r->nents);
    for (size_t i = 0; i < r->nents && i < 16; i++) {
        buf_puts(h, i ? ", " : ": ");
        struct buf nm;
        buf_init(&nm);
        rep_ent_name(&nm, &r->ents[i], many);
        rep_html_escape(h, nm.p, nm.len);
        buf_free(&nm);
    }
    if (r->nents > 16) buf_printf(h, " and %zu more", r->nents - 16);
    if (r->dropped_ents) buf_printf(h, " (%llu samples of further GPUs not charted)", (unsigned long long)r->dropped_ents);
    buf_printf(h, "</dd><dt>Samples</dt><dd>%llu", (unsigned long long)r->samples);
    if (info) buf_printf(h, " from %llu lines (%llu rejected)", (unsigned long long)info->lines,
                         (unsigned long long)info->rejected);
    buf_printf(h, "</dd><dt>Kernel events</dt><dd>%llu Xid/SXid</dd><dt>Detectors</dt><dd>", (unsigned long long)r->kernel);
    rep_h(h, info && info->profile ? info->profile : "-");
    buf_puts(h, "</dd></dl></header>\n<section id=\"incidents\"><h2>Incidents");
    buf_printf(h, " <small>(%zu, most severe first)</small></h2>\n", r->neps);
    if (!r->neps) {
        buf_puts(h, "<p class=\"none\">No anomalies were found.</p></section>\n");
        return;
    }
    buf_puts(h, "<div class=\"inc-wrap\"><table class=\"inc\"><thead><tr><th>Severity</th><th>Risk</th><th>GPU</th><th>What</th>"
                "<th>Reason</th><th>Start (UTC)</th><th>Duration</th></tr></thead><tbody>\n");
    static const char *const sev_name[] = { "low", "low", "medium", "high" };
    for (size_t k = 0; k < r->neps && k < REP_TABLE_ROWS; k++) {
        const struct rep_ep *p = &r->eps[order[k]];
        int sv = p->sev < 1 ? 1 : p->sev > 3 ? 3 : p->sev;
        buf_printf(h, "<tr class=\"sev%d\" data-ep=\"%zu\" tabindex=\"0\" title=\"click to zoom\"><td><b>%s</b></td>"
                      "<td>%.0f</td><td>", sv, k, sev_name[sv], p->risk);
        if (many && p->host[0]) {
            rep_h(h, p->host);
            buf_putc(h, ' ');
        }
        if (p->gpu >= 0) buf_printf(h, "%d", p->gpu);
        else buf_puts(h, "&ndash;");
        buf_puts(h, "</td><td>");
        rep_h(h, p->name ? p->name : p->rule);
        buf_puts(h, "<br><small>");
        rep_h(h, p->rule);
        buf_puts(h, "</small></td><td>");
        rep_h(h, p->reason);
        buf_puts(h, "</td><td class=\"nw\">");
        rep_ts(h, p->start);
        buf_puts(h, "</td><td class=\"nw\">");
        rep_dur(h, p->end - p->start);
        if (p->open) buf_puts(h, " or more, still open at the end");
        buf_puts(h, "</td></tr>\n");
    }
    buf_puts(h, "</tbody></table></div>\n");
    if (r->neps > REP_TABLE_ROWS) buf_printf(h, "<p>%zu more not listed.</p>\n", r->neps - REP_TABLE_ROWS);
    if (r->dropped_eps) buf_printf(h, "<p>%llu further episodes not kept.</p>\n", (unsigned long long)r->dropped_eps);
    buf_puts(h, "</section>\n");
}

/* The kernel event table (HTML). */
static void rep_html_kernel(struct buf *h, const struct report *r)
{
    if (!r->nxids) return;
    buf_printf(h, "<section id=\"kernel\"><h2>Kernel events <small>(%llu)</small></h2>\n"
                  "<table class=\"xid\"><thead><tr><th>Time (UTC)</th><th>GPU / bus</th><th>Code</th><th>Name</th>"
                  "<th>Severity</th><th>Message</th></tr></thead><tbody>\n", (unsigned long long)r->kernel);
    for (size_t i = 0; i < r->nxids && i < REP_TABLE_ROWS; i++) {
        const struct rep_xid *x = &r->xids[i];
        buf_puts(h, "<tr><td>");
        rep_ts(h, x->ts);
        buf_puts(h, "</td><td>");
        if (x->gpu >= 0) buf_printf(h, "GPU %d ", x->gpu);
        rep_h(h, x->bus);
        buf_printf(h, "</td><td>%s %d</td><td>", x->sxid ? "SXid" : "Xid", x->code);
        rep_h(h, x->name);
        buf_puts(h, "</td><td>");
        rep_h(h, x->sev);
        buf_puts(h, "</td><td>");
        if (x->msg) rep_html_escape(h, x->msg, strlen(x->msg) > 240 ? 240 : strlen(x->msg));
        buf_puts(h, "</td></tr>\n");
    }
    buf_puts(h, "</tbody></table>\n");
    if (r->nxids > REP_TABLE_ROWS) buf_printf(h, "<p>%zu more not listed.</p>\n", r->nxids - REP_TABLE_ROWS);
    buf_puts(h, "</section>\n");
}

/* Index of the entity (host, gpu) or -1. */
static long rep_ent_index(const struct report *r, const char *host, int gpu)
{
    for (size_t i = 0; i < r->nents; i++)
        if (r->ents[i].gpu == gpu && !strcmp(r->ents[i].host, host)) return (long)i;
    return -1;
}

/* Gives the kernel events that name only a PCI bus the GPU index that the
 * metric samples of the same host and bus carry (query CSV with
 * pci.bus_id does; dmon does not). */
static void rep_xid_gpus(struct report *r)
{
    for (size_t i = 0; i < r->nxids; i++) {
        struct rep_xid *x = &r->xids[i];
        for (size_t k = 0; x->gpu < 0 && x->bus && k < r->nents; k++) {
            const struct rep_ent *e = &r->ents[k];
            if (e->bus && !strcasecmp(e->bus, x->bus) && !strcmp(e->host, x->host)) x->gpu = e->gpu;
        }
    }
}

/* The data the script draws from (JSON). */
static void rep_json(struct buf *b, const struct report *r, const size_t *order, int64_t t0, int64_t t1, int many)
{
    struct rep_env *tmp = xmalloc(REP_COLS * sizeof *tmp);
    buf_printf(b, "{\"v\":1,\"t0\":%lld,\"t1\":%lld,\"cols\":%d,\"limit\":", (long long)t0, (long long)t1, REP_COLS);
    rep_num(b, r->temp_limit);
    buf_puts(b, ",\"charts\":[");
    for (int s = S_TEMP; s <= S_FB; s++) {
        buf_puts(b, s == S_TEMP ? "{" : ",{");
        rep_json_kv(b, "k", rep_known[s].key, 1);
        rep_json_kv(b, "label", rep_known[s].label, 0);
        rep_json_kv(b, "unit", rep_known[s].unit, 0);
        if (s == S_POWER) rep_json_kv(b, "ov", rep_known[S_PLIMIT].key, 0);
        if (s == S_FB) rep_json_kv(b, "ov", rep_known[S_FBTOTAL].key, 0);
        buf_putc(b, '}');
    }
    for (size_t i = 0; i < r->nextra; i++) {
        buf_printf(b, ",{\"k\":\"x%zu\"", i);
        rep_json_kv(b, "label", r->extra[i] + 8, 0);
        rep_json_kv(b, "unit", "", 0);
        buf_putc(b, '}');
    }
    buf_puts(b, "],\"marks\":[");
    for (int s = S_FIRST_COUNTER; s < S_FIRST_COUNTER + S_NCOUNTERS; s++) {
        buf_puts(b, s == S_FIRST_COUNTER ? "{" : ",{");
        rep_json_kv(b, "k", rep_known[s].key, 1);
        rep_json_kv(b, "label", rep_known[s].label, 0);
        buf_putc(b, '}');
    }
    buf_puts(b, "],\"ents\":[");
    struct rep_win w = { t0, t1, REP_COLS, tmp };
    for (size_t i = 0; i < r->nents; i++) {
        const struct rep_ent *e = &r->ents[i];
        struct buf nm;
        buf_init(&nm);
        rep_ent_name(&nm, e, many);
        buf_puts(b, i ? ",{" : "{");
        rep_json_kv(b, "name", nm.p, 1);
        rep_json_kv(b, "host", e->host, 0);
        buf_printf(b, ",\"gpu\":%d,\"n\":%llu,\"s\":{", e->gpu, (unsigned long long)e->samples);
        rep_json_series(b, r, e, &w);
        buf_puts(b, "}}");
        buf_free(&nm);
    }
    buf_puts(b, "],\"eps\":[");
    for (size_t k = 0; k < r->neps; k++) {
        const struct rep_ep *p = &r->eps[order[k]];
        buf_printf(b, "%s{\"e\":%ld,\"g\":%d,\"t0\":%lld,\"t1\":%lld,\"open\":%d,\"sev\":%d,\"risk\":%.0f", k ? "," : "",
                   rep_ent_index(r, p->host, p->gpu), p->gpu, (long long)p->start, (long long)p->end, p->open, p->sev,
                   p->risk);
        rep_json_kv(b, "name", p->name ? p->name : p->rule, 0);
        buf_putc(b, '}');
    }
    buf_puts(b, "],\"xids\":[");
    for (size_t i = 0; i < r->nxids; i++) {
        const struct rep_xid *x = &r->xids[i];
        buf_printf(b, "%s{\"t\":%lld,\"e\":%ld,\"code\":%d,\"sx\":%d", i ? "," : "", (long long)x->ts,
                   x->gpu >= 0 ? rep_ent_index(r, x->host, x->gpu) : -1L, x->code, x->sxid);
        rep_json_kv(b, "name", x->name, 0);
        buf_putc(b, '}');
    }
    /* finer windows around the worst incidents, for zooming into them */
    buf_puts(b, "],\"zoom\":[");
    double main_col = (double)(t1 - t0) / REP_COLS;
    int nz = 0;
    for (size_t k = 0; k < r->neps && nz < REP_ZOOMS && r->have_grid; k++) {
        const struct rep_ep *p = &r->eps[order[k]];
        long ei = rep_ent_index(r, p->host, p->gpu);
        if (ei < 0) continue;
        int64_t pad = (p->end - p->start) / 2;
        if (pad < 30000) pad = 30000;
        int64_t z0 = p->start - pad < t0 ? t0 : p->start - pad, z1 = p->end + pad > t1 ? t1 : p->end + pad;
        if (z1 <= z0) continue;
        int64_t nbk = (z1 - z0) / r->g.bw + 1;
        size_t cols = nbk < REP_ZOOM_COLS ? (size_t)nbk : REP_ZOOM_COLS;
        double zcol = (double)(z1 - z0) / (double)cols;
        if (cols < 2 || main_col <= 2.0 * (double)r->g.bw || main_col <= 2.0 * zcol) continue;
        struct rep_win zw = { z0, z1, cols, tmp };
        buf_printf(b, "%s{\"e\":%ld,\"t0\":%lld,\"t1\":%lld,\"cols\":%zu,\"s\":{", nz ? "," : "", ei, (long long)z0,
                   (long long)z1, cols);
        rep_json_series(b, r, &r->ents[ei], &zw);
        buf_puts(b, "}}");
        nz++;
    }
    buf_puts(b, "]}");
    free(tmp);
}

int report_write(struct report *r, const struct report_info *info, FILE *out)
{
    rep_xid_gpus(r);
    size_t *order = xmalloc((r->neps + 1) * sizeof *order);
    for (size_t i = 0; i < r->neps; i++) {
        order[i] = i;
        /* an episode still open lasted at least until the end of the input */
        if (r->eps[i].open && r->tmax > r->eps[i].end) r->eps[i].end = r->tmax;
    }
    rep_sort_ctx = r;
    qsort(order, r->neps, sizeof *order, rep_cmp_eps);
    int64_t t0 = r->tmin, t1 = r->tmax;
    if (t0 > t1) t0 = t1 = 0;
    else if (t1 - t0 < 60000) {
        /* a tiny input: a minute around it */
        int64_t mid = t0 + (t1 - t0) / 2;
        t0 = mid - 30000;
        t1 = mid + 30000;
    } else t1 += 1;
    struct buf hosts;
    buf_init(&hosts);
    int many = 0;
    for (size_t i = 0; i < r->nents; i++) {
        const char *hn = r->ents[i].host;
        int seen = 0;
        for (size_t k = 0; k < i && !seen; k++) seen = !strcmp(r->ents[k].host, hn);
        if (seen || !*hn) continue;
        if (hosts.len) {
            buf_puts(&hosts, ", ");
            many = 1;
        }
        buf_puts(&hosts, hn);
    }
    if (!hosts.len)
        for (size_t i = 0; i < r->nxids && !hosts.len; i++) buf_puts(&hosts, r->xids[i].host);

    const char *hostlist = hosts.p ? hosts.p : "";
    struct buf h, js;
    buf_init(&h);
    buf_init(&js);
    buf_puts(&h, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                 "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\n"
                 "<script>window.onerror=function(m){document.documentElement.setAttribute('data-error',String(m));};"
                 "</script>\n<title>GPU report ");
    rep_html_escape(&h, hostlist, hosts.len);
    buf_puts(&h, "</title>\n<style>");
    buf_puts(&h, rep_page_css);
    buf_puts(&h, "</style></head>\n<body>\n");
    rep_html_head(&h, r, info, order, hostlist, t0, t1);
    buf_puts(&h, "<section id=\"charts\"><h2>GPUs over time <small>(UTC)</small></h2>\n"
                 "<div class=\"ctl\"><label>heat strip: <select id=\"heatby\"></select></label> "
                 "<button id=\"reset\" type=\"button\">show all</button> <span id=\"range\"></span>"
                 "<span class=\"help\">drag on a chart to zoom, double-click to show all</span></div>\n"
                 "<div id=\"heatbox\"></div><div id=\"gpus\"></div>"
                 "<noscript><p>The charts need JavaScript.</p></noscript></section>\n");
    rep_html_kernel(&h, r);
    buf_puts(&h, "<footer>");
    if (r->older) buf_printf(&h, "%llu samples older than the first sample were left out. ", (unsigned long long)r->older);
    if (r->dropped_extra) buf_printf(&h, "%llu values of further generic columns were not charted. ",
                                     (unsigned long long)r->dropped_extra);
    if (r->dropped_xids) buf_printf(&h, "%llu further kernel events were not kept. ", (unsigned long long)r->dropped_xids);
    buf_printf(&h, "Made by gpulog %s; charts: min/max of the samples in each column, the line is the mean.</footer>\n"
                   "<div id=\"tip\" hidden></div>\n<script type=\"application/json\" id=\"gpulog-data\">",
               GPULOG_VERSION);
    rep_json(&js, r, order, t0, t1, many);
    rep_script_json(&h, js.p, js.len);
    buf_puts(&h, "</script>\n<script>");
    buf_puts(&h, rep_page_js);
    buf_puts(&h, "</script>\n</body></html>\n");
    size_t wr = fwrite(h.p, 1, h.len, out);
    int rc = wr == h.len && fflush(out) == 0 && !ferror(out) ? GL_OK : GL_ERROR;
    if (rc != GL_OK && !errno) errno = EIO;
    buf_free(&h);
    buf_free(&js);
    buf_free(&hosts);
    free(order);
    return rc;
}
