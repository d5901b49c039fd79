/*
 * dmon.c - `nvidia-smi dmon`, whitespace layout and `--format csv`.
 *
 * Columns are learnt from every '#' header line, so any -s selection, any
 * order, old and new widths, -o D/T/DT and GPM columns parse the same way.
 * Rows are split on runs of blanks (or on commas in CSV mode) by a hand
 * scanner: this is the hot path of the collector.
 */
#include "parser.h"
#include "columns.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DMON_MAX_COLS 128

enum col_kind { COL_INT, COL_BOOL, COL_DATE, COL_TIME, COL_AUTO, COL_SKIP };

struct dmon {
    int csv;                     /* 1 = --format csv */
    int ncols;
    struct col_def cols[DMON_MAX_COLS];   /* kind: enum col_kind */
    int have_header;
    int header_too_wide;         /* the last names line had too many columns */
    char today_src[1];           /* unused placeholder */
    struct col_when_memo when_memo;   /* the last date and time tokens */
};

/* gpu.index: the one key a row must have, known by its pointer in the
 * hot loop (a header's gpu column is this string: dynamic keys are
 * "gpu.dmon."-prefixed, and a second gpu column is skipped). */
static const char key_gpu_index[] = "gpu.index";

/* dmon column name -> schema field (shared/docs/event-fields.md). */
static const struct col_map dmon_map[] = {
    { "Date",  "date", COL_DATE },
    { "Time",  "time", COL_TIME },
    { "gpu",   key_gpu_index, COL_INT },
    { "pwr",   "gpu.power.usage", COL_INT },
    { "gtemp", "gpu.temperature.gpu", COL_INT },
    { "temp",  "gpu.temperature.gpu", COL_INT },
    { "mtemp", "gpu.temperature.memory", COL_INT },
    { "sm",    "gpu.utilization.gpu.pct", COL_INT },
    { "mem",   "gpu.utilization.memory_copy.pct", COL_INT },
    { "enc",   "gpu.utilization.encoder.pct", COL_INT },
    { "dec",   "gpu.utilization.decoder.pct", COL_INT },
    { "jpg",   "gpu.utilization.jpeg.pct", COL_INT },
    { "ofa",   "gpu.utilization.ofa.pct", COL_INT },
    { "mclk",  "gpu.clock.mem_frequency", COL_INT },
    { "pclk",  "gpu.clock.streaming_multiprocessor_frequency", COL_INT },
    { "pviol", "gpu.throttling.power.pct", COL_INT },
    { "tviol", "gpu.throttling.thermal.active", COL_BOOL },
    { "fb",    "gpu.memory.framebuffer.used_size", COL_INT },
    { "bar1",  "gpu.memory.bar1.used_size", COL_INT },
    { "ccpm",  "gpu.memory.protected.used_size", COL_INT },
    { "sbecc", "gpu.ecc.single_bit.count", COL_INT },
    { "dbecc", "gpu.ecc.double_bit.count", COL_INT },
    { "pci",   "gpu.pcie.replay", COL_INT },
    { "rxpci", "gpu.pcie.rx.throughput", COL_INT },
    { "txpci", "gpu.pcie.tx.throughput", COL_INT },
    { "gract",   "gpu.gpm.gract.pct", COL_AUTO },
    { "smutil",  "gpu.gpm.smutil.pct", COL_AUTO },
    { "smocc",   "gpu.gpm.smocc.pct", COL_AUTO },
    { "intutil", "gpu.gpm.intutil.pct", COL_AUTO },
    { "mmaact",  "gpu.gpm.mmaact.pct", COL_AUTO },
    { "dram",    "gpu.gpm.dram.pct", COL_AUTO },
    { "fp64",    "gpu.gpm.fp64.pct", COL_AUTO },
    { "fp32",    "gpu.gpm.fp32.pct", COL_AUTO },
    { "fp16",    "gpu.gpm.fp16.pct", COL_AUTO },
    { "pcitx",   "gpu.gpm.pcitx.throughput", COL_AUTO },
    { "pcirx",   "gpu.gpm.pcirx.throughput", COL_AUTO },
    { "nvltx",   "gpu.gpm.nvltx.throughput", COL_AUTO },
    { "nvlrx",   "gpu.gpm.nvlrx.throughput", COL_AUTO },
};

static void *dmon_create_common(int csv)
{
    struct dmon *d = xcalloc(1, sizeof *d);
    d->csv = csv;
    return d;
}

static void *dmon_create(struct parser *p) { (void)p; return dmon_create_common(0); }
static void *dmon_csv_create(struct parser *p) { (void)p; return dmon_create_common(1); }

static void cols_clear(struct dmon *d)
{
    col_free_all(d->cols, d->ncols);
    d->ncols = 0;
    d->have_header = 0;
}

static void dmon_destroy(void *st)
{
    struct dmon *d = st;
    cols_clear(d);
    free(d);
}

/* Splits line into at most max tokens. Whitespace mode: runs of blanks.
 * CSV mode: commas, each token trimmed. Returns the count, or max+1 if more. */
static int split(const char *s, size_t n, int csv, const char **tok, size_t *tlen, int max)
{
    int k = 0;
    size_t i = 0;
    if (!csv) return col_split_blanks(s, n, tok, tlen, max);
    if (n == 0) return 0;
    for (;;) {
        size_t a = i;
        while (i < n && s[i] != ',') i++;
        if (k == max) return max + 1;
        const char *t = s + a;
        size_t l = i - a;
        str_trim(&t, &l);
        tok[k] = t;
        tlen[k] = l;
        k++;
        if (i >= n) break;
        i++;
    }
    return k;
}

/* A '#' line: either the names line (has "gpu") or the units line ("Idx"). */
static int dmon_header(struct parser *p, struct dmon *d, const char *line, size_t len)
{
    const char *tok[DMON_MAX_COLS + 1];
    size_t tl[DMON_MAX_COLS + 1];
    const char *s = line + 1;
    size_t n = len - 1;
    int csv = d->csv || memchr(s, ',', n) != NULL;
    int k = split(s, n, csv, tok, tl, DMON_MAX_COLS);
    if (k > DMON_MAX_COLS) {
        /* said once: the units line under it is part of the same header */
        if (d->header_too_wide) return GL_DECLINED;
        d->header_too_wide = 1;
        d->have_header = 0;
        return parser_error(p, RJ_NO_HEADER, "header has more than %d columns (the most gpulog reads): not read, the "
                            "rows under it are rejected", DMON_MAX_COLS);
    }
    int has_gpu = 0, has_idx = 0;
    for (int i = 0; i < k; i++) {
        if (col_tok_is(tok[i], tl[i], "gpu")) has_gpu = 1;
        if (col_tok_is(tok[i], tl[i], "Idx")) has_idx = 1;
    }
    if (has_idx && !has_gpu) return GL_DECLINED;      /* units line */
    if (!has_gpu) return GL_DECLINED;                  /* some other comment */
    cols_clear(d);
    d->csv = csv;
    /* a column named twice (or temp with gtemp) would put one key twice in
     * the event, which JSON consumers reject: the first one wins */
    col_name_all(d->cols, tok, tl, k, dmon_map, GL_ARRAY_LEN(dmon_map), "gpu.dmon.", COL_AUTO, COL_SKIP);
    d->ncols = k;
    d->have_header = 1;
    d->header_too_wide = 0;
    return GL_DECLINED;
}


static int set_columns_from_option(struct parser *p, struct dmon *d)
{
    if (!p->opt_columns) return 0;
    size_t n = strlen(p->opt_columns);
    char *tmp = xmalloc(n + 2);
    tmp[0] = '#';
    for (size_t i = 0; i < n; i++) tmp[i + 1] = p->opt_columns[i] == ',' ? ' ' : p->opt_columns[i];
    int csv = d->csv;
    d->csv = 0;
    dmon_header(p, d, tmp, n + 1);
    d->csv = csv;
    free(tmp);
    return d->have_header;
}

static int dmon_feed(struct parser *p, void *st, const struct line_src *src,
                     const char *line, size_t len)
{
    struct dmon *d = st;
    const char *s = line;
    size_t n = len;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
    while (n && (*s == ' ' || *s == '\t')) { s++; n--; }
    if (n == 0) return GL_DECLINED;
    if (s[0] == '#') return dmon_header(p, d, s, n);
    if (!d->have_header && !set_columns_from_option(p, d)) {
        if (d->header_too_wide)
            return parser_error(p, RJ_NO_HEADER, "dmon row after a header line that was refused: it has more than %d "
                                "columns, the most gpulog reads", DMON_MAX_COLS);
        if (d->csv)
            return parser_error(p, RJ_NO_HEADER, "dmon CSV row without a header line: pass --columns with the dmon column names (for example --columns gpu,pwr,gtemp,mtemp,sm,mem,enc,dec,jpg,ofa,mclk,pclk)");
        return parser_error(p, RJ_NO_HEADER, "dmon row before any '#' header line");
    }
    const char *tok[DMON_MAX_COLS + 1];
    size_t tl[DMON_MAX_COLS + 1];
    int k = split(s, n, d->csv, tok, tl, DMON_MAX_COLS);
    if (k != d->ncols) {
        if (k == 1 || (s[0] < '0' || s[0] > '9'))
            return parser_error(p, RJ_FIELD_COUNT, "not a dmon row (%d field%s, header has %d): %.*s",
                                k, k == 1 ? "" : "s", d->ncols, (int)(n > 60 ? 60 : n), s);
        return parser_error(p, RJ_FIELD_COUNT, "expected %d fields as in the header, got %d", d->ncols, k);
    }
    struct event *ev = parser_begin(p, src, "metric", "gpu.dmon", line, len, 0);
    int have_gpu = 0;
    struct col_when when;
    col_when_init(&when);
    for (int i = 0; i < k; i++) {
        const char *t = tok[i];
        size_t l = tl[i];
        const struct col_def *c = &d->cols[i];
        if (l == 1 && t[0] == '-') continue;          /* missing value */
        int64_t v;
        switch ((enum col_kind)c->kind) {
        case COL_INT:
            if (parse_int_fast(t, l, &v)) {
                event_add_int_k(ev, c->key, c->klen, v);
                if (c->key == key_gpu_index) have_gpu = 1;
            } else if (value_is_missing(t, l)) {
                continue;
            } else {
                double dv;
                if (!gl_parse_double(t, l, &dv))
                    return parser_error(p, RJ_NOT_A_NUMBER, "column %d: not a number: '%.*s'", i + 1, (int)(l > 40 ? 40 : l), t);
                event_add_num_k(ev, c->key, c->klen, dv);
            }
            break;
        case COL_BOOL:
            if (parse_int_fast(t, l, &v)) event_add_bool_k(ev, c->key, c->klen, v != 0);
            else if (!value_is_missing(t, l))
                return parser_error(p, RJ_NOT_A_NUMBER, "column %d: not a flag: '%.*s'", i + 1, (int)(l > 40 ? 40 : l), t);
            break;
        case COL_DATE:
            if (col_when_date(p, &when, &d->when_memo, t, l) != GL_OK) return GL_ERROR;
            break;
        case COL_TIME:
            if (col_when_time(p, &when, &d->when_memo, t, l) != GL_OK) return GL_ERROR;
            break;
        case COL_AUTO:
            if (value_is_missing(t, l)) continue;
            event_add_auto(ev, c->key, t, l, 1);
            break;
        case COL_SKIP:
            break;
        }
    }
    if (!have_gpu) return parser_error(p, RJ_FIELD_COUNT, "row has no gpu index");
    if (col_when_stamp(p, &when, src->now_ms, &ev->ts_ms) != GL_OK) return GL_ERROR;
    parser_emit(p);
    return GL_OK;
}

/* A dmon header: '#' then names including gpu and at least one dmon column,
 * and not pmon's pid/command. */
static int dmon_sniff_common(const char *line, size_t len, int want_csv)
{
    const char *s = line;
    size_t n = len;
    str_trim(&s, &n);
    if (n < 4 || s[0] != '#') return 0;
    int csv = memchr(s, ',', n) != NULL;
    if (csv != want_csv) return 0;
    /* every column, however many (the parser then says when there are too
     * many: a header is known as dmon's wherever its gpu column sits) */
    int gpu = 0, known = 0;
    for (size_t i = 1; i < n;) {
        while (i < n && (s[i] == ' ' || s[i] == '\t' || (csv && s[i] == ','))) i++;
        size_t a = i;
        while (i < n && (csv ? s[i] != ',' : s[i] != ' ' && s[i] != '\t')) i++;
        const char *t = s + a;
        size_t tn = i - a;
        str_trim(&t, &tn);
        if (!tn) continue;
        if (col_tok_is(t, tn, "pid") || col_tok_is(t, tn, "command")) return 0;
        if (col_tok_is(t, tn, "gpu")) gpu = 1;
        for (size_t j = 0; j < GL_ARRAY_LEN(dmon_map); j++) {
            const struct col_map *m = &dmon_map[j];
            if (m->kind == COL_DATE || m->kind == COL_TIME || !strcmp(m->col, "gpu")) continue;   /* not dmon's own */
            if (col_tok_is(t, tn, m->col)) { known++; break; }
        }
    }
    return gpu && known ? 90 : 0;
}

static int dmon_sniff(const char *line, size_t len) { return dmon_sniff_common(line, len, 0); }
static int dmon_csv_sniff(const char *line, size_t len) { return dmon_sniff_common(line, len, 1); }

const struct parser_ops parser_dmon = {
    .name = "dmon",
    .help = "nvidia-smi dmon, whitespace layout (any -s, -o D/T/DT, GPM columns)",
    .create = dmon_create,
    .destroy = dmon_destroy,
    .sniff = dmon_sniff,
    .feed = dmon_feed,
    .flush = NULL,
};

const struct parser_ops parser_dmon_csv = {
    .name = "dmon-csv",
    .help = "nvidia-smi dmon --format csv[,nounit][,noheader] (noheader needs --columns)",
    .create = dmon_csv_create,
    .destroy = dmon_destroy,
    .sniff = dmon_csv_sniff,
    .feed = dmon_feed,
    .flush = NULL,
};
