/* report_html.c - see report.h: the page of a report (header, incident
 * table, kernel events, the JSON the charts are drawn from) and the escaping
 * that keeps what the input says inert in it. */
#include "report_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
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
    struct rep_env *tmp, *tmp2;   /* cols columns of scratch each, owned by the writer */
};

/* The envelope of series s of e in window w, into w->tmp: the full
 * resolution series from the time the GPU has it, the coarse one before
 * (a GPU that took a full-resolution place late) or throughout (one that
 * never had one). 0 when the GPU has no such series. */
static int rep_ent_envelope(const struct report *r, const struct rep_ent *e, int s, const struct rep_win *w)
{
    const struct rep_series *fs = &e->s[s], *cs = &e->c[s];
    if (!fs->len && !cs->len) return 0;
    int64_t since = e->fine ? e->fine_since : INT64_MAX;
    rep_envelope(fs->v, fs->len, r->g.origin, r->g.bw, w->t0, w->t1, w->tmp, w->cols);
    if (since <= w->t0) return 1;
    rep_envelope(cs->v, cs->len, r->g.origin, r->g.bw << REP_COARSE_SHIFT, w->t0, w->t1, w->tmp2, w->cols);
    double span = (double)(w->t1 - w->t0);
    for (size_t i = 0; i < w->cols; i++)
        if ((double)w->t0 + (double)i * span / (double)w->cols < (double)since) w->tmp[i] = w->tmp2[i];
    return 1;
}

/* Appends "key":{...} for every series of entity e that has samples in the
 * window w; counters as [[column, rise], ...]. */
static void rep_json_series(struct buf *b, const struct report *r, const struct rep_ent *e, const struct rep_win *w)
{
    int first = 1;
    for (int s = 0; s < S_N; s++) {
        if (!rep_ent_envelope(r, e, s, w)) continue;
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

static const struct rep_ep *rep_sort_v;    /* the episodes or incidents being sorted */
static int rep_cmp_eps(const void *a, const void *b)
{
    const struct rep_ep *x = &rep_sort_v[*(const size_t *)a], *y = &rep_sort_v[*(const size_t *)b];
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

/* One row of the incident or episode table (p->rules set: an incident,
 * its rules in the "what" cell; else the rule's name and id); ep >= 0:
 * the row zooms to episode ep of the sorted episodes (data-ep). */
static void rep_html_row(struct buf *h, const struct rep_ep *p, long ep, int many)
{
    static const char *const sev_name[] = { "low", "low", "medium", "high" };
    int sv = p->sev < 1 ? 1 : p->sev > 3 ? 3 : p->sev;
    buf_printf(h, "<tr class=\"sev%d\"", sv);
    if (ep >= 0) buf_printf(h, " data-ep=\"%ld\" tabindex=\"0\" title=\"click to zoom\"", ep);
    buf_printf(h, "><td><b>%s</b></td><td>%.0f</td><td>", sev_name[sv], p->risk);
    if (many && p->host[0]) {
        rep_h(h, p->host);
        buf_putc(h, ' ');
    }
    if (p->gpu >= 0) buf_printf(h, "%d", p->gpu);
    else buf_puts(h, "&ndash;");
    buf_puts(h, "</td><td>");
    if (p->rules) {
        for (const char *c = p->rules; *c; c++) {
            if (*c == ',') buf_puts(h, "<br>");
            else rep_html_escape(h, c, 1);
        }
    } else {
        rep_h(h, p->name ? p->name : p->rule);
        buf_puts(h, "<br><small>");
        rep_h(h, p->rule);
        buf_puts(h, "</small>");
    }
    buf_puts(h, "</td><td>");
    rep_h(h, p->reason);
    if (p->action) {                      /* an incident: what to do, and who was on the GPU */
        buf_puts(h, "<br><b class=\"act\">Action: ");
        rep_h(h, p->action);
        buf_puts(h, "</b>");
        if (p->action_why && *p->action_why) {
            buf_puts(h, " <small>(");
            rep_h(h, p->action_why);
            buf_puts(h, ")</small>");
        }
    }
    if (p->procs) {
        buf_puts(h, "<br><small class=\"procs\">Processes: ");
        rep_h(h, p->procs);
        buf_puts(h, "</small>");
    }
    buf_puts(h, "</td><td class=\"nw\">");
    rep_ts(h, p->start);
    buf_puts(h, "</td><td class=\"nw\">");
    rep_dur(h, p->end - p->start);
    if (p->open) buf_puts(h, " or more, still open at the end");
    buf_puts(h, "</td></tr>\n");
}

/* The incident table (HTML), before the episodes: each incident (a GPU's
 * overlapping episodes, gpu.incident records) most severe first with its
 * rules and summary; a click zooms to its worst episode (data-ep: its
 * index in order, the sorted episodes). */
static void rep_html_incidents(struct buf *h, const struct report *r, const size_t *order, int many)
{
    if (!r->nincs) return;
    size_t *io = xmalloc(r->nincs * sizeof *io);
    for (size_t i = 0; i < r->nincs; i++) io[i] = i;
    rep_sort_v = r->incs;
    qsort(io, r->nincs, sizeof *io, rep_cmp_eps);
    buf_printf(h, "<section id=\"gpu-incidents\"><h2>Incidents <small>(%zu, most severe first; each is the overlapping "
                  "anomalies of one GPU)</small></h2>\n<div class=\"inc-wrap\"><table class=\"inc\" id=\"incident-table\">"
                  "<thead><tr><th>Severity</th><th>Risk</th><th>GPU</th><th>Rules</th><th>Summary</th><th>Start (UTC)</th>"
                  "<th>Duration</th></tr></thead><tbody>\n", r->nincs);
    for (size_t k = 0; k < r->nincs && k < REP_TABLE_ROWS; k++) {
        const struct rep_ep *p = &r->incs[io[k]];
        long worst = -1;    /* its most severe episode: the same GPU, starting within it */
        for (size_t j = 0; j < r->neps && worst < 0; j++) {
            const struct rep_ep *q = &r->eps[order[j]];
            if (q->gpu == p->gpu && q->start >= p->start && q->start <= p->end && !strcmp(q->host, p->host)) worst = (long)j;
        }
        rep_html_row(h, p, worst, many);
    }
    buf_puts(h, "</tbody></table></div>\n");
    if (r->nincs > REP_TABLE_ROWS) buf_printf(h, "<p>%zu more not listed.</p>\n", r->nincs - REP_TABLE_ROWS);
    if (r->dropped_incs)
        buf_printf(h, "<p>%llu records of less severe incidents not kept (the %d most severe are).</p>\n",
                   (unsigned long long)r->dropped_incs, REP_MAX_INCS);
    buf_puts(h, "</section>\n");
    free(io);
}

/* The header facts, the incidents and the episode table (HTML). order:
 * sorted episodes. */
static void rep_html_head(struct buf *h, const struct report *r, const struct report_info *info, const size_t *order,
                          const char *hosts, int64_t t0, int64_t t1)
{
    buf_puts(h, "<header><h1>GPU report <span class=\"node\">");
    rep_h(h, *hosts ? hosts : "(no host)");
    buf_puts(h, "</span></h1>");
    if (info && info->partial) {
        buf_puts(h, "<p class=\"partial\" id=\"partial\"><b>Partial report:</b> stopped by a signal before the end of "
                    "the input; it covers what was read until ");
        if (r->tmax > INT64_MIN) rep_ts(h, r->tmax);
        else buf_puts(h, "then");
        buf_puts(h, " (UTC).</p>");
    }
    buf_puts(h, "<dl class=\"facts\"><dt>Source</dt><dd>");
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
    if (r->nents > REP_CHARTED)
        buf_printf(h, " (%d charted: those with faults first, by severity, then by arrival)", REP_CHARTED);
    if (r->dropped_ents) buf_printf(h, " (%llu samples of further GPUs not kept)", (unsigned long long)r->dropped_ents);
    buf_printf(h, "</dd><dt>Samples</dt><dd>%llu", (unsigned long long)r->samples);
    if (info) buf_printf(h, " from %llu lines (%llu rejected)", (unsigned long long)info->lines,
                         (unsigned long long)info->rejected);
    buf_printf(h, "</dd><dt>Kernel events</dt><dd>%llu Xid/SXid</dd><dt>Detectors</dt><dd>", (unsigned long long)r->kernel);
    rep_h(h, info && info->profile ? info->profile : "-");
    buf_puts(h, "</dd></dl></header>\n");
    rep_html_incidents(h, r, order, many);
    /* the episodes by rule (id "incidents" and #incident-N addresses kept
     * from before incidents were grouped: links to them still work) */
    buf_puts(h, "<section id=\"incidents\"><h2>Anomalies");
    buf_printf(h, " <small>(%zu, by rule, most severe first)</small></h2>\n", r->neps);
    if (!r->neps) {
        buf_puts(h, "<p class=\"none\">No anomalies were found.</p></section>\n");
        return;
    }
    buf_puts(h, "<div class=\"inc-wrap\"><table class=\"inc\"><thead><tr><th>Severity</th><th>Risk</th><th>GPU</th><th>What</th>"
                "<th>Reason</th><th>Start (UTC)</th><th>Duration</th></tr></thead><tbody>\n");
    for (size_t k = 0; k < r->neps && k < REP_TABLE_ROWS; k++) rep_html_row(h, &r->eps[order[k]], (long)k, many);
    buf_puts(h, "</tbody></table></div>\n");
    if (r->neps > REP_TABLE_ROWS) buf_printf(h, "<p>%zu more not listed.</p>\n", r->neps - REP_TABLE_ROWS);
    if (r->dropped_eps)
        buf_printf(h, "<p>%llu records of less severe episodes not kept (the %d most severe are).</p>\n",
                   (unsigned long long)r->dropped_eps, REP_MAX_EPS);
    buf_puts(h, "</section>\n");
}

static const struct rep_xid *rep_sort_x;
static int rep_cmp_xids(const void *a, const void *b)
{
    const struct rep_xid *x = &rep_sort_x[*(const size_t *)a], *y = &rep_sort_x[*(const size_t *)b];
    int rx = rep_xid_rank(x->sev), ry = rep_xid_rank(y->sev);
    if (rx != ry) return ry - rx;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return (*(const size_t *)a > *(const size_t *)b) - (*(const size_t *)a < *(const size_t *)b);
}

/* The kernel event table (HTML): most severe first, then by time. */
static void rep_html_kernel(struct buf *h, const struct report *r)
{
    if (!r->nxids) return;
    size_t *xo = xmalloc(r->nxids * sizeof *xo);
    for (size_t i = 0; i < r->nxids; i++) xo[i] = i;
    rep_sort_x = r->xids;
    qsort(xo, r->nxids, sizeof *xo, rep_cmp_xids);
    buf_printf(h, "<section id=\"kernel\"><h2>Kernel events <small>(%llu, most severe first)</small></h2>\n"
                  "<table class=\"xid\"><thead><tr><th>Time (UTC)</th><th>GPU / bus</th><th>Code</th><th>Name</th>"
                  "<th>Severity</th><th>Message</th></tr></thead><tbody>\n", (unsigned long long)r->kernel);
    for (size_t i = 0; i < r->nxids && i < REP_TABLE_ROWS; i++) {
        const struct rep_xid *x = &r->xids[xo[i]];
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
    free(xo);
}

/* The GPUs charted in the page: at most REP_CHARTED of r->ents, those
 * with faults first (severity, then risk), then by arrival; shown in
 * arrival order. page[i]: the chart of entity i, -1 when not charted. */
struct rep_charts {
    size_t *ent;              /* entity of chart k */
    size_t n;
    long *page;               /* by entity */
};

static const struct report *rep_rank_r;
static int rep_cmp_rank(const void *a, const void *b)
{
    const struct rep_ent *x = &rep_rank_r->ents[*(const size_t *)a], *y = &rep_rank_r->ents[*(const size_t *)b];
    if (x->sev != y->sev) return y->sev - x->sev;
    if (x->risk != y->risk) return y->risk > x->risk ? 1 : -1;
    return (*(const size_t *)a > *(const size_t *)b) - (*(const size_t *)a < *(const size_t *)b);
}

static int rep_cmp_size(const void *a, const void *b)
{
    return (*(const size_t *)a > *(const size_t *)b) - (*(const size_t *)a < *(const size_t *)b);
}

static void rep_charts_pick(struct rep_charts *c, const struct report *r)
{
    c->ent = xmalloc((r->nents + 1) * sizeof *c->ent);
    c->page = xmalloc((r->nents + 1) * sizeof *c->page);
    for (size_t i = 0; i < r->nents; i++) {
        c->ent[i] = i;
        c->page[i] = -1;
    }
    c->n = r->nents;
    if (c->n > REP_CHARTED) {
        rep_rank_r = r;
        qsort(c->ent, r->nents, sizeof *c->ent, rep_cmp_rank);
        c->n = REP_CHARTED;
        qsort(c->ent, c->n, sizeof *c->ent, rep_cmp_size);
    }
    for (size_t k = 0; k < c->n; k++) c->page[c->ent[k]] = (long)k;
}

static void rep_charts_free(struct rep_charts *c)
{
    free(c->ent);
    free(c->page);
}

/* The chart of the entity (host, gpu), or -1. */
static long rep_ent_index(const struct report *r, const struct rep_charts *c, const char *host, int gpu)
{
    long i = rep_ent_find(r, host, gpu);
    return i < 0 ? -1 : c->page[i];
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

/* The finer windows around the worst incidents (for zooming into them),
 * as the JSON array's items; tmp (borrowed) holds REP_COLS columns. */
static void rep_json_zoom(struct buf *b, const struct report *r, const struct rep_charts *ch, const size_t *order,
                          int64_t t0, int64_t t1, struct rep_env *tmp, struct rep_env *tmp2)
{
    double main_col = (double)(t1 - t0) / REP_COLS;
    int nz = 0;
    for (size_t k = 0; k < r->neps && nz < REP_ZOOMS && r->have_grid; k++) {
        const struct rep_ep *p = &r->eps[order[k]];
        long ei = rep_ent_index(r, ch, p->host, p->gpu);
        if (ei < 0) continue;
        int64_t pad = (p->end - p->start) / 2;
        if (pad < 30000) pad = 30000;
        int64_t z0 = p->start - pad < t0 ? t0 : p->start - pad, z1 = p->end + pad > t1 ? t1 : p->end + pad;
        if (z1 <= z0) continue;
        int64_t nbk = (z1 - z0) / r->g.bw + 1;
        size_t cols = nbk < REP_ZOOM_COLS ? (size_t)nbk : REP_ZOOM_COLS;
        double zcol = (double)(z1 - z0) / (double)cols;
        if (cols < 2 || main_col <= 2.0 * (double)r->g.bw || main_col <= 2.0 * zcol) continue;
        struct rep_win zw = { z0, z1, cols, tmp, tmp2 };
        buf_printf(b, "%s{\"e\":%ld,\"t0\":%lld,\"t1\":%lld,\"cols\":%zu,\"s\":{", nz ? "," : "", ei, (long long)z0,
                   (long long)z1, cols);
        rep_json_series(b, r, &r->ents[ch->ent[ei]], &zw);
        buf_puts(b, "}}");
        nz++;
    }
}

/* The data the script draws from (JSON). */
static void rep_json(struct buf *b, const struct report *r, const struct rep_charts *ch, const size_t *order, int64_t t0,
                     int64_t t1, int many)
{
    struct rep_env *tmp = xmalloc(REP_COLS * sizeof *tmp), *tmp2 = xmalloc(REP_COLS * sizeof *tmp2);
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
    struct rep_win w = { t0, t1, REP_COLS, tmp, tmp2 };
    for (size_t i = 0; i < ch->n; i++) {
        const struct rep_ent *e = &r->ents[ch->ent[i]];
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
                   rep_ent_index(r, ch, p->host, p->gpu), p->gpu, (long long)p->start, (long long)p->end, p->open, p->sev,
                   p->risk);
        rep_json_kv(b, "name", p->name ? p->name : p->rule, 0);
        buf_putc(b, '}');
    }
    buf_puts(b, "],\"xids\":[");
    for (size_t i = 0; i < r->nxids; i++) {
        const struct rep_xid *x = &r->xids[i];
        buf_printf(b, "%s{\"t\":%lld,\"e\":%ld,\"code\":%d,\"sx\":%d", i ? "," : "", (long long)x->ts,
                   x->gpu >= 0 ? rep_ent_index(r, ch, x->host, x->gpu) : -1L, x->code, x->sxid);
        rep_json_kv(b, "name", x->name, 0);
        buf_putc(b, '}');
    }
    /* finer windows around the worst incidents, for zooming into them */
    buf_puts(b, "],\"zoom\":[");
    rep_json_zoom(b, r, ch, order, t0, t1, tmp, tmp2);
    buf_puts(b, "]}");
    free(tmp);
    free(tmp2);
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
    for (size_t i = 0; i < r->nincs; i++)
        if (r->incs[i].open && r->tmax > r->incs[i].end) r->incs[i].end = r->tmax;
    rep_sort_v = r->eps;
    qsort(order, r->neps, sizeof *order, rep_cmp_eps);
    struct rep_charts ch;
    rep_charts_pick(&ch, r);
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
                 "</script>\n<title>");
    if (info && info->partial) buf_puts(&h, "(partial) ");
    buf_puts(&h, "GPU report ");
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
    if (r->dropped_xids)
        buf_printf(&h, "%llu less severe kernel events were not kept (the %d most severe are). ",
                   (unsigned long long)r->dropped_xids, REP_MAX_XIDS);
    buf_printf(&h, "Made by gpulog %s; charts: min/max of the samples in each column, the line is the mean.</footer>\n"
                   "<div id=\"tip\" hidden></div>\n<script type=\"application/json\" id=\"gpulog-data\">",
               GPULOG_VERSION);
    rep_json(&js, r, &ch, order, t0, t1, many);
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
    rep_charts_free(&ch);
    return rc;
}
