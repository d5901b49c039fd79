/*
 * csv_header.c - the header lines of the CSV parser (see csv.c): which
 * line is a header, the column names and their aliases (gpu, host, the
 * time columns, GPU fields with their units), one column per field.
 */
#include "csv_int.h"
#include "columns.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A header name: starts with a letter, '@' or '_', then name characters. */
static int name_like(const char *t, size_t l)
{
    if (l == 0 || l > CSV_MAX_NAME) return 0;
    unsigned char c0 = (unsigned char)t[0];
    if (!isalpha(c0) && c0 != '@' && c0 != '_') return 0;
    for (size_t i = 0; i < l; i++) {
        unsigned char c = (unsigned char)t[i];
        if (c == 0 || (!isalnum(c) && c < 0x80 && !strchr(" _.@/()[]%-", c))) return 0;   /* UTF-8: "[°C]" */
    }
    return 1;
}

/* Next comma-separated field (trimmed), without unquoting. 0 at the end. */
int csv_next_field(const char *s, size_t n, size_t *pos, int *done, const char **t, size_t *l)
{
    if (*done) return 0;
    size_t i = *pos, a = i;
    while (i < n && s[i] != ',') i++;
    *t = s + a;
    *l = i - a;
    str_trim(t, l);
    if (i >= n) *done = 1;
    else *pos = i + 1;
    return 1;
}

/* Scores a header line: 60 when it has at least two name-like, non-numeric
 * fields and one of them is a time column, a GPU column or a GPU field
 * (fn_recognise); else 0. Kept below the 90 of query-csv and dmon-csv so
 * their own headers go to them. */
int csv_header_score(const char *line, size_t len, int *nfields)
{
    const char *s = line;
    size_t n = len;
    if (n && s[n - 1] == '\r') n--;
    str_trim(&s, &n);
    *nfields = 0;
    col_skip_bom(&s, &n);
    if (n && s[0] == '#') { s++; n--; str_trim(&s, &n); }
    if (n == 0) return 0;
    size_t pos = 0;
    int done = 0, k = 0, hint = 0, units = 0;
    const char *t;
    size_t l;
    while (csv_next_field(s, n, &pos, &done, &t, &l)) {
        if (l >= 2 && t[0] == '"' && t[l - 1] == '"') { t++; l -= 2; }
        if (!name_like(t, l)) return 0;
        enum dim d;
        double f;
        /* dmon's units line ("# Idx, W, C, %, MHz"): no header */
        if (fn_unit_lookup(t, l, &d, &f) || (l == 3 && !strncasecmp(t, "Idx", 3))) units++;
        struct fn_result r;
        if (!hint) {
            if (!fn_map_lookup(t, l, &r)) fn_recognise(t, l, &r);
            if (r.role != FN_OTHER) hint = 1;
        }
        k++;
    }
    *nfields = k;
    if (units == k) return 0;
    return k >= 2 && hint ? 60 : 0;
}

int csv_sniff(const char *line, size_t len)
{
    int k;
    return csv_header_score(line, len, &k);
}


/* One column per field (per GPU of a wide row): a later column of a GPU
 * field taken by an earlier one of the k columns stays its own metrics.*
 * (power.draw.instant beside power.draw: no value lost); a second GPU,
 * host or bitmask column is skipped. */
static void skip_repeats(struct csvp *c, int k)
{
    for (int i = 0; i < k; i++) {
        struct ccol *a = &c->cols[i];
        for (int j = 0; j < i; j++) {
            const struct ccol *b = &c->cols[j];
            if (a->kind == b->kind && a->gpu == b->gpu &&
                (a->kind == C_GPU || a->kind == C_HOST || a->kind == C_MASK ||
                 ((a->kind == C_NUM || a->kind == C_STR) && !strcmp(a->key, b->key)) ||
                 (a->kind == C_VALUE && !strcmp(a->metric, b->metric)))) {
                a->kind = (a->kind == C_NUM || a->kind == C_STR) ? C_VALUE : C_SKIP;
                if (a->kind == C_VALUE) a->key = NULL;
                break;
            }
        }
    }
}

/* What the columns of a header are (fn_recognise, or the user's --map),
 * into res[0..k). Returns 1 when the table is about GPUs: a column names a
 * GPU by itself (gpu_index, "gpu_temp", dmon's "pwr", DCGM's names, a wide
 * row's "gpu3_"), or three different GPU fields are named with generic
 * words ("temp", "power", "memory_used"); a generic word alone is no GPU
 * field (weather data has a "temp"). */
static int recognise_all(const struct csvp *c, int k, struct fn_result *res)
{
    int gpu_table = 0;
    const char *weak[8];
    int nweak = 0;
    for (int i = 0; i < k; i++) {
        struct fn_result *r = &res[i];
        if (!fn_map_lookup(c->tok[i], c->tl[i], r)) fn_recognise(c->tok[i], c->tl[i], r);
        if (r->role == FN_GPU || fn_is_field(r)) {
            if (r->strong) gpu_table = 1;
            else if (r->key && nweak < 8) {
                int seen = 0;
                for (int j = 0; j < nweak; j++) if (!strcmp(weak[j], r->key)) seen = 1;
                if (!seen) weak[nweak++] = r->key;
            }
        }
    }
    return gpu_table || nweak >= 3;
}

/* Says once, for a new header at line lineno of path, which columns stay
 * metrics.* / labels.* and how to name them; a column that looks like a
 * GPU field but could not be placed is a warning of its own (column, line,
 * why). */
static void tell_unrecognised(const struct csvp *c, int k, const struct fn_result *res, int gpu_table,
                              const struct line_src *src)
{
    struct buf list;
    buf_init(&list);
    int n = 0;
    const char *path = src && src->path ? src->path : "-";
    unsigned long long line = src ? (unsigned long long)src->lineno : 0;
    for (int i = 0; i < k; i++) {
        const struct ccol *col = &c->cols[i];
        const struct fn_result *r = &res[i];
        if (col->kind != C_VALUE || r->mapped) continue;
        if (r->role == FN_OTHER && r->gpu_like) {
            log_warn("msg=\"a column that looks like a GPU field was not recognised: kept as %s\" file=\"%s\" "
                     "line=%llu column=%d name=\"%.*s\" why=\"%s\" hint=\"name it with --map COL=FIELD (key map)\"",
                     col->metric, path, line, i + 1, (int)(c->tl[i] > 64 ? 64 : c->tl[i]), c->tok[i], r->why);
            continue;
        }
        if (n++ < 12) {
            if (list.len) buf_append(&list, ", ", 2);
            buf_append(&list, col->metric + 8, strlen(col->metric + 8));
        }
    }
    if (n > 12) buf_printf(&list, " and %d more", n - 12);
    if (n && gpu_table)
        log_info("msg=\"columns kept as metrics.*: not GPU fields\" file=\"%s\" line=%llu columns=\"%s\" "
                 "hint=\"if one is a GPU field, name it with --map COL=FIELD (key map)\"", path, line, list.p);
    else if (n)
        log_info("msg=\"no column names a GPU: a generic time series, every value column as metrics.*\" file=\"%s\" "
                 "line=%llu columns=\"%s\" hint=\"if this is GPU data, name the columns with --map COL=FIELD (key map), "
                 "e.g. --map temp=gpu.temperature.gpu\"", path, line, list.p);
    buf_free(&list);
}

/* The kind of column col from what it is (r) in a table about GPUs or not. */
static void learn_role(struct ccol *col, const struct fn_result *r, int gpu_table)
{
    col->kind = C_VALUE;
    col->gpu = r->gpu;
    int gpu_field = r->role == FN_GPU || fn_is_field(r);
    if (gpu_field && !r->strong && !gpu_table) return;     /* "temp" in weather data */
    switch (r->role) {
    case FN_GPU: col->kind = C_GPU; break;
    case FN_HOST: col->kind = C_HOST; break;
    case FN_NUM: col->kind = C_NUM; col->key = r->key; col->dim = r->dim; col->hscale = r->scale; break;
    case FN_STR: col->kind = C_STR; col->key = r->key; break;
    case FN_MASK: col->kind = C_MASK; col->key = r->key; break;
    case FN_BOOL: col->kind = C_BOOL; col->key = r->key; break;
    case FN_OTHER:
        /* --map to labels.NAME: that label, always text; to metrics.NAME: that metric */
        if (r->mapped && r->key && !strncmp(r->key, "labels.", 7)) {
            col->kind = C_STR;
            col->key = r->key;
        } else if (r->mapped && r->key) {
            free(col->metric);
            col->metric = xstrdup(r->key);
        }
        break;
    default: break;          /* the time columns: csv_learn */
    }
}

/* A long table: a field-name column ("Field", "metric", "field_name") and
 * a value column ("Value", "Values") beside a GPU or time column, one field
 * a row. Sets c->field_col / value_col (-1 when not). */
static void learn_long(struct csvp *c, int k, int keyed)
{
    static const char *const fields[] = { "field", "fields", "metric", "field_name", "metric_name", "fieldname" };
    static const char *const values[] = { "value", "values", "val", "reading" };
    c->field_col = c->value_col = -1;
    if (!keyed) return;
    for (int i = 0; i < k; i++) {
        if (c->cols[i].kind != C_VALUE) continue;
        const char *m = c->cols[i].metric + 8;    /* the sanitized name */
        for (size_t j = 0; j < GL_ARRAY_LEN(fields); j++) if (!strcmp(m, fields[j]) && c->field_col < 0) c->field_col = i;
        for (size_t j = 0; j < GL_ARRAY_LEN(values); j++) if (!strcmp(m, values[j]) && c->value_col < 0) c->value_col = i;
    }
    if (c->field_col < 0 || c->value_col < 0) { c->field_col = c->value_col = -1; return; }
    c->cols[c->field_col].kind = C_FIELD;
    c->cols[c->value_col].kind = C_FVALUE;
}

/* The GPUs a wide header names, ascending, into c->gpus. */
static void learn_gpus(struct csvp *c, int k)
{
    free(c->gpus);
    c->gpus = NULL;
    c->ngpus = 0;
    for (int i = 0; i < k; i++) {
        int g = c->cols[i].gpu;
        if (g < 0 || c->cols[i].kind == C_SKIP) continue;
        int j = 0;
        while (j < c->ngpus && c->gpus[j] < g) j++;
        if (j < c->ngpus && c->gpus[j] == g) continue;
        c->gpus = xrealloc(c->gpus, (size_t)(c->ngpus + 1) * sizeof *c->gpus);
        memmove(c->gpus + j + 1, c->gpus + j, (size_t)(c->ngpus - j) * sizeof *c->gpus);
        c->gpus[j] = g;
        c->ngpus++;
    }
}

/* Learns the columns from a header line (a leading '#' removed by caller). */
int csv_learn(struct parser *p, struct csvp *c, const struct line_src *src, const char *s, size_t n)
{
    if (c->have_header && c->hdr && c->hdr_len == n && !memcmp(c->hdr, s, n)) {
        c->gpuids.row = 0;                   /* the header again (looped output): a new poll */
        return GL_DECLINED;
    }
    int k = csv_split(c, s, n);
    if (k < 0) return parser_error(p, RJ_NO_HEADER, "header has an unterminated quote");
    if (k > CSV_MAX_COLS) return parser_error(p, RJ_NO_HEADER, "header has more than %d columns", CSV_MAX_COLS);
    for (int i = 0; i < k; i++)
        if (!name_like(c->tok[i], c->tl[i]))
            return parser_error(p, RJ_NO_HEADER, "header column %d is not a name: '%.*s'", i + 1,
                                (int)(c->tl[i] > 40 ? 40 : c->tl[i]), c->tok[i]);
    csv_cols_clear(c);
    if (k > c->capcols) {
        c->cols = xrealloc(c->cols, (size_t)k * sizeof *c->cols);
        c->capcols = k;
    }
    struct fn_result *res = xcalloc((size_t)k, sizeof *res);
    int gpu_table = recognise_all(c, k, res);
    int time_idx = -1, time_rank = 99, date_idx = -1, tod_idx = -1;
    for (int i = 0; i < k; i++) {
        struct ccol *col = &c->cols[i];
        memset(col, 0, sizeof *col);
        /* metrics/labels keep the whole header text ("Latency (ms)" -> metrics.latency_ms) */
        const char *nm = res[i].gpu >= 0 && res[i].base[0] ? res[i].base : c->tok[i];   /* a wide column: its GPU part out */
        size_t nml = nm == c->tok[i] ? c->tl[i] : strlen(nm);
        col->metric = name_sanitize("metrics.", nm, nml);
        col->label = name_sanitize("labels.", nm, nml);
        learn_role(col, &res[i], gpu_table);
        const struct fn_result *r = &res[i];
        if (r->role == FN_TIME || r->role == FN_DATE || r->role == FN_TOD) {
            if (r->role == FN_DATE && date_idx < 0) date_idx = i;
            if (r->role == FN_TOD && tod_idx < 0) tod_idx = i;
            if (r->time_rank < time_rank) { time_rank = r->time_rank; time_idx = i; }
        }
    }
    /* time: a date and a time-of-day column together form one timestamp */
    if (time_idx >= 0) {
        if (date_idx >= 0 && tod_idx >= 0 && time_rank >= 4) {
            c->cols[date_idx].kind = C_DATE;
            c->cols[tod_idx].kind = C_TOD;
        } else {
            c->cols[time_idx].kind = C_TIME;
        }
    }
    skip_repeats(c, k);
    c->ncols = k;
    learn_gpus(c, k);
    /* a table about GPUs that names none: one GPU (a single-GPU query log), or
     * the GPUs its uuid / bus id column tells apart */
    int have_gpu = 0, id_col = -1;
    for (int i = 0; i < k; i++) {
        if (c->cols[i].kind == C_GPU) have_gpu = 1;
        if (c->cols[i].kind == C_STR && id_col < 0 &&
            (!strcmp(c->cols[i].key, "gpu.uuid") || !strcmp(c->cols[i].key, "gpu.pci.bus_id")))
            id_col = i;
    }
    col_gpuids_learn(&c->gpuids, gpu_table && !have_gpu ? (id_col >= 0 ? id_col : k) : -1, time_idx >= 0);
    learn_long(c, k, have_gpu || time_idx >= 0);
    c->long_gpu = have_gpu;
    tell_unrecognised(c, k, res, gpu_table, src);
    free(res);
    c->have_header = 1;
    free(c->hdr);
    c->hdr = xstrndup(s, n);
    c->hdr_len = n;
    return GL_DECLINED;
}
