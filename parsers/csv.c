/*
 * csv.c - compact CSV with units stuck to values ("# gpu, power_draw, temp_gpu"
 * / "0, 230W, 78C") and generic CSV time series with a header line.
 *
 * The header names the columns (a leading '#' is allowed). A time column
 * (timestamp, time, date, @timestamp, ts, or a date plus a time column) gives
 * @timestamp; gpu/index gives gpu.index; host gives host.name; the usual GPU
 * aliases (power_draw, temp_gpu, utilization_gpu, memory_used, clock_sm, ...)
 * give their gpu.* field; every other column is metrics.<name> when numeric
 * and labels.<name> otherwise. Units in values or in the header ("230W",
 * "power [W]") are stripped, and converted where the field's unit differs
 * (GiB -> MiB, GHz -> MHz, mW -> W). Empty and missing values leave the field
 * out; rows that do not parse are rejected with a reason, never guessed.
 */
#include "csv_int.h"
#include "columns.h"
#include "throttle.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void *csv_create(struct parser *p)
{
    (void)p;
    struct csvp *c = xcalloc(1, sizeof *c);
    buf_init(&c->unq);
    return c;
}

void csv_cols_clear(struct csvp *c)
{
    for (int i = 0; i < c->ncols; i++) {
        free(c->cols[i].metric);
        free(c->cols[i].label);
    }
    c->ncols = 0;
    c->have_header = 0;
}

static void csv_destroy(void *st)
{
    struct csvp *c = st;
    csv_cols_clear(c);
    free(c->cols);
    free(c->tok);
    free(c->tl);
    free(c->hdr);
    free(c->host);
    free(c->gpus);
    col_gpuids_free(&c->gpuids);
    if (c->keys) col_keys_free(c->keys);
    free(c->keys);
    buf_free(&c->unq);
    free(c);
}

/* Splits a row into c->tok, unquoting "..." fields ("" is a quote) into
 * c->unq. Returns the field count, or -1 on an unterminated quote. */
int csv_split(struct csvp *c, const char *s, size_t n)
{
    size_t commas = 0;
    for (size_t i = 0; i < n; i++) if (s[i] == ',') commas++;
    if (commas + 1 > c->captok) {
        size_t cap = c->captok ? c->captok : 16;
        while (cap < commas + 1) cap *= 2;
        c->tok = xrealloc(c->tok, cap * sizeof *c->tok);
        c->tl = xrealloc(c->tl, cap * sizeof *c->tl);
        c->captok = cap;
    }
    if (!memchr(s, '"', n)) {
        size_t pos = 0, k = 0;
        int done = 0;
        while (csv_next_field(s, n, &pos, &done, &c->tok[k], &c->tl[k])) k++;
        return (int)k;
    }
    buf_reset(&c->unq);
    buf_grow(&c->unq, n + 1);           /* no reallocation below: tokens point into it */
    size_t i = 0, k = 0;
    for (;;) {
        while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
        if (i < n && s[i] == '"') {
            size_t start = c->unq.len;
            i++;
            for (;;) {
                if (i >= n) return -1;
                if (s[i] == '"') {
                    if (i + 1 < n && s[i + 1] == '"') { c->unq.p[c->unq.len++] = '"'; i += 2; continue; }
                    i++;
                    break;
                }
                c->unq.p[c->unq.len++] = s[i++];
            }
            while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
            if (i < n && s[i] != ',') return -1;
            c->tok[k] = c->unq.p + start;
            c->tl[k] = c->unq.len - start;
        } else {
            size_t a = i;
            while (i < n && s[i] != ',') i++;
            const char *t = s + a;
            size_t l = i - a;
            str_trim(&t, &l);
            c->tok[k] = t;
            c->tl[k] = l;
        }
        k++;
        if (i >= n) break;
        i++;                              /* the comma */
        if (k >= c->captok) return -1;    /* cannot happen: counted commas */
    }
    return (int)k;
}

/* Splits a value into number and unit ("230W", "1.5 GiB", "92 %").
 * Returns 1 if the number part is a number and the unit part is unit-like. */
static int number_unit(const char *t, size_t l, const char **num, size_t *nl, const char **u, size_t *ul)
{
    size_t i = l;
    /* the unit: trailing letters, '%', '/', and the degree sign */
    while (i > 0) {
        unsigned char c = (unsigned char)t[i - 1];
        if (isalpha(c) || c == '%' || c == '/' || c >= 0x80) i--;
        else break;
    }
    /* an exponent ("1e5") is part of the number, not a unit */
    double dv;
    if (gl_parse_double(t, l, &dv)) i = l;
    size_t n = i;
    while (n > 0 && (t[n - 1] == ' ' || t[n - 1] == '\t')) n--;
    if (n == 0 || l - i > 12) return 0;
    *num = t;
    *nl = n;
    *u = t + i;
    *ul = l - i;
    return gl_parse_double(t, n, &dv);
}

/* Adds v * f as an integer when it is one, else as a double. */
static void add_scaled(struct event *ev, const char *key, const char *num, size_t nl, double f)
{
    int64_t iv;
    double dv;
    if (f == 1 && gl_parse_i64(num, nl, &iv)) { event_add_int(ev, key, iv); return; }
    if (!gl_parse_double(num, nl, &dv)) return;
    dv *= f;
    if (fabs(dv) < 9007199254740992.0 && dv == floor(dv)) event_add_int(ev, key, (int64_t)dv);
    else event_add_num(ev, key, dv);
}

/* Missing spellings of generic CSV: the project's ones plus null/nan/none. */
static int csv_missing(const char *t, size_t l)
{
    if (value_is_missing(t, l)) return 1;
    return (l == 4 && !strncasecmp(t, "null", 4)) || (l == 3 && !strncasecmp(t, "nan", 3)) ||
           (l == 4 && !strncasecmp(t, "none", 4));
}

/* The time and host of a row (its C_TIME, C_DATE, C_TOD and C_HOST
 * columns, k of them) into *ts (left as it is when there are none) and
 * *host (c->host, or left). GL_OK or GL_ERROR (said). */
static int csv_row_when(struct parser *p, struct csvp *c, int k, int64_t *ts, const char **host)
{
    int y = 0, mo = 0, d = 0, h = 0, mi = 0, se = 0, ms = 0, have_date = 0, have_tod = 0;
    for (int i = 0; i < k; i++) {
        const struct ccol *col = &c->cols[i];
        const char *t = c->tok[i];
        size_t l = c->tl[i];
        if (col->kind == C_SKIP || csv_missing(t, l)) continue;
        int sl = l > 40 ? 40 : (int)l;
        switch (col->kind) {
        case C_TIME:
            if (col_time_value(t, l, ts) != GL_OK)
                return parser_error(p, RJ_BAD_TIME, "column %d: cannot read the time '%.*s' (want ISO 8601, "
                                       "YYYY/MM/DD HH:MM:SS, a ctime date or epoch seconds/ms)", i + 1, sl, t);
            break;
        case C_DATE:
            if (!col_parse_date(t, l, &y, &mo, &d))
                return parser_error(p, RJ_BAD_TIME, "column %d: bad date '%.*s' (want YYYY-MM-DD)", i + 1, sl, t);
            have_date = 1;
            break;
        case C_TOD:
            if (!col_parse_tod(t, l, &h, &mi, &se, &ms))
                return parser_error(p, RJ_BAD_TIME, "column %d: bad time of day '%.*s' (want HH:MM:SS)", i + 1, sl, t);
            have_tod = 1;
            break;
        case C_HOST:
            if (l + 1 > c->hostcap) {
                c->hostcap = l + 1 > 64 ? l + 1 : 64;
                c->host = xrealloc(c->host, c->hostcap);
            }
            memcpy(c->host, t, l);
            c->host[l] = '\0';
            *host = c->host;
            break;
        default:
            break;
        }
    }
    if (have_date) {
        if (gl_local_to_epoch_ms(y, mo, d, have_tod ? h : 0, mi, se, ms, ts) != GL_OK)
            return parser_error(p, RJ_BAD_TIME, "bad date/time %04d-%02d-%02d %02d:%02d:%02d", y, mo, d, h, mi, se);
    } else if (have_tod) {
        return parser_error(p, RJ_BAD_TIME, "a time of day without a date cannot be placed: add a date column");
    }
    return GL_OK;
}

/* Adds cell t (l bytes) of column i (what col says it is) to ev. GL_OK or
 * GL_ERROR (said). */
static int csv_cell(struct parser *p, struct event *ev, const struct ccol *col, int i, const char *t, size_t l)
{
    int sl = l > 40 ? 40 : (int)l;
    const char *num, *u;
    size_t nl, ul;
    switch (col->kind) {
    case C_GPU: {
        int64_t iv;
        const char *g = t;
        size_t gl = l;
        if (gl > 3 && !strncasecmp(g, "gpu", 3) && g[3] != '-') {   /* "GPU 0", "gpu1" */
            g += 3; gl -= 3;
            str_trim(&g, &gl);
        }
        if (gl_parse_i64(g, gl, &iv) && iv >= 0) event_add_int(ev, "gpu.index", iv);
        else if (l > 4 && (!memcmp(t, "GPU-", 4) || !memcmp(t, "MIG-", 4))) event_add_str(ev, "gpu.uuid", t, l);
        else return parser_error(p, RJ_NOT_A_NUMBER, "column %d: not a GPU index or UUID: '%.*s'", i + 1, sl, t);
        break;
    }
    case C_STR:
        if (!strcmp(col->key, "gpu.pci.bus_id")) event_add_bus_id(ev, t, l);   /* not an address: left out */
        else event_add_str(ev, col->key, t, l);
        break;
    case C_BOOL: {
        int b;
        if (!col_parse_bool(t, l, &b))
            return parser_error(p, RJ_NOT_A_NUMBER, "column %d: not a yes/no value: '%.*s'", i + 1, sl, t);
        event_add_bool(ev, col->key, b);
        break;
    }
    case C_MASK: {
        uint64_t mask;
        if (!throttle_parse_mask(t, l, &mask))
            return parser_error(p, RJ_NOT_A_NUMBER, "column %d: not a bitmask: '%.*s'", i + 1, sl, t);
        throttle_add_fields(ev, mask);
        break;
    }
    case C_NUM: {
        if (!number_unit(t, l, &num, &nl, &u, &ul))
            return parser_error(p, RJ_NOT_A_NUMBER, "column %d: not a number: '%.*s'", i + 1, sl, t);
        double f = col->hscale > 0 ? col->hscale : 1;
        if (ul) {
            enum dim dm;
            if (!fn_unit_lookup(u, ul, &dm, &f) || (col->dim != D_NONE && dm != col->dim))
                return parser_error(p, RJ_BAD_UNIT, "column %d: unit '%.*s' does not fit %s (%s)", i + 1, (int)ul, u,
                                    col->key, fn_dim_unit(col->dim));
        }
        add_scaled(ev, col->key, num, nl, f);
        break;
    }
    case C_VALUE:
        if (number_unit(t, l, &num, &nl, &u, &ul)) add_scaled(ev, col->metric, num, nl, 1);
        else event_add_str(ev, col->label, t, l);
        break;
    default:
        break;
    }
    return GL_OK;
}

/* A long table's row ("GPUId, TimeStampUs, Field, Values": one field a
 * row, as dcgmi and exporters' dumps hold it): the value goes to the field
 * its field cell names, recognised by the rule of every column name. The
 * rows of one GPU and stamp are folded into one sample by the engine. */
static int csv_long_cell(struct parser *p, struct csvp *c, struct event *ev)
{
    const char *f = c->tok[c->field_col], *v = c->tok[c->value_col];
    size_t fl = c->tl[c->field_col], vl = c->tl[c->value_col];
    if (!fl || csv_missing(v, vl)) return GL_OK;
    if (!c->keys) c->keys = xcalloc(1, sizeof *c->keys);
    const struct col_key *k = col_key_get(c->keys, f, fl);
    if (!k) return parser_error(p, RJ_OTHER, "more than %d different field names in a long table", COL_KEYS_MAX);
    struct ccol col = { .kind = C_VALUE, .gpu = -1, .metric = k->metric, .label = k->label };
    const struct fn_result *r = &k->r;
    /* a generic word ("temp") is a GPU field in a table with a GPU column */
    if (fn_is_field(r) && (r->strong || c->long_gpu)) {
        col.kind = r->role == FN_NUM ? C_NUM : r->role == FN_STR ? C_STR : r->role == FN_BOOL ? C_BOOL : C_MASK;
        col.key = r->key;
        col.dim = r->dim;
        col.hscale = r->scale;
    } else if (r->mapped && r->key) {
        col.metric = (char *)r->key;
    }
    return csv_cell(p, ev, &col, c->value_col, v, vl);
}

/* Adds to ev the values of the columns of GPU gpu (-1: the columns of no
 * wide GPU) of a row of k columns. GL_OK or GL_ERROR (said). */
static int csv_row_values(struct parser *p, struct csvp *c, struct event *ev, int k, int gpu)
{
    for (int i = 0; i < k; i++) {
        const struct ccol *col = &c->cols[i];
        const char *t = c->tok[i];
        size_t l = c->tl[i];
        if (col->gpu != gpu || col->kind == C_SKIP || csv_missing(t, l)) continue;
        if (col->kind == C_FIELD) {
            if (csv_long_cell(p, c, ev) != GL_OK) return GL_ERROR;
            continue;
        }
        if (csv_cell(p, ev, col, i, t, l) != GL_OK) return GL_ERROR;
    }
    return GL_OK;
}

/* One row: one event, or for a wide header ("gpu0_temp, gpu1_temp") one
 * event per GPU and one for the columns of no GPU when it has any. */
static int csv_row(struct parser *p, struct csvp *c, const struct line_src *src,
                   const char *line, size_t len, int k)
{
    int64_t ts = src->now_ms;
    const char *host = NULL;
    if (csv_row_when(p, c, k, &ts, &host) != GL_OK) return GL_ERROR;
    /* the GPUs first: a reader that tells a profile by the first event sees a GPU */
    for (int gi = 0; gi <= c->ngpus; gi++) {
        int gpu = gi < c->ngpus ? c->gpus[gi] : -1;
        struct event *ev = parser_begin_sub(p, src, "metric", "csv.generic", line, len, 0, (uint64_t)(gpu + 1));
        ev->ts_ms = ts;
        if (host) ev->host = host;
        if (gpu >= 0) event_add_int(ev, "gpu.index", gpu);
        else if (c->gpuids.col >= 0 && !c->ngpus) {
            /* a GPU table without a GPU column: one GPU, or its uuid / bus id numbered */
            int l = c->gpuids.col, has = l < k && !csv_missing(c->tok[l], c->tl[l]);
            int g = col_gpuids_row(&c->gpuids, has ? c->tok[l] : NULL, has ? c->tl[l] : 0);
            if (g >= 0) event_add_int(ev, "gpu.index", g);
        }
        if (csv_row_values(p, c, ev, k, gpu) != GL_OK) return GL_ERROR;
        if (gpu < 0 && c->ngpus && ev->nf == 0) continue;   /* a wide row's columns of no GPU: none */
        parser_emit(p);
    }
    return GL_OK;
}

static int csv_feed(struct parser *p, void *st, const struct line_src *src,
                    const char *line, size_t len)
{
    struct csvp *c = st;
    const char *s;
    size_t n;
    col_csv_text(line, &len, &s, &n);
    if (n == 0) return GL_DECLINED;
    int nf = 0;
    int score = csv_header_score(s, n, &nf);
    if (s[0] == '#') {
        s++; n--;
        str_trim(&s, &n);
        /* '#' and at least two names: a header (once one is known, only a line
         * that names a time column or GPU alias replaces it, so a units line
         * like "# Idx, W, C" stays a comment); any other '#' line: a comment */
        if (nf >= 2 && (score > 0 || !c->have_header)) return csv_learn(p, c, src, s, n);
        return GL_DECLINED;
    }
    if (score > 0 || (!c->have_header && nf >= 1) || (c->hdr && c->hdr_len == n && !memcmp(c->hdr, s, n)))
        return csv_learn(p, c, src, s, n);
    if (!c->have_header && p->opt_columns && *p->opt_columns &&
        csv_learn(p, c, src, p->opt_columns, strlen(p->opt_columns)) == GL_ERROR)
        return GL_ERROR;                     /* header-less: the names --columns gives */
    if (!c->have_header)
        return parser_error(p, RJ_NO_HEADER, "CSV row before a header line (the first line must name the columns, "
                               "or give them with --columns)");
    int k = csv_split(c, s, n);
    if (k < 0) return parser_error(p, RJ_OTHER, "unterminated quote");
    if (k != c->ncols)
        return parser_error(p, RJ_FIELD_COUNT, "expected %d field%s as in the header, got %d", c->ncols, c->ncols == 1 ? "" : "s", k);
    return csv_row(p, c, src, line, len, k);
}

const struct parser_ops parser_csv = {
    .name = "csv",
    .help = "compact CSV with units in values, generic CSV time series with a header",
    .create = csv_create,
    .destroy = csv_destroy,
    .sniff = csv_sniff,
    .feed = csv_feed,
    .flush = NULL,
};

