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
#include "parser.h"
#include "columns.h"
#include "throttle.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CSV_MAX_COLS 1024
#define CSV_MAX_NAME 128

enum dim { D_NONE, D_PCT, D_W, D_C, D_MIB, D_MHZ };

enum ckind {
    C_VALUE,    /* metrics.<name> if numeric, else labels.<name> */
    C_TIME,     /* full timestamp or epoch */
    C_DATE,     /* date part of a date + time pair */
    C_TOD,      /* time-of-day part of a date + time pair */
    C_GPU,      /* gpu.index (or gpu.uuid for "GPU-..." values) */
    C_HOST,     /* host.name */
    C_NUM,      /* alias with a numeric gpu.* field */
    C_STR,      /* alias with a string gpu.* field */
    C_MASK,     /* throttle reasons bitmask */
    C_SKIP,     /* a second column for a field already taken */
};

struct ccol {
    enum ckind kind;
    const char *key;      /* gpu.* field for C_NUM / C_STR */
    enum dim dim;         /* unit family of the field (C_NUM) */
    double hscale;        /* factor from the header's unit: 0 none, -1 unknown unit */
    enum dim hdim;        /* family of the header's unit */
    char *metric;         /* owned "metrics.<name>" */
    char *label;          /* owned "labels.<name>" */
};

struct csvp {
    struct ccol *cols;
    int ncols, capcols;
    const char **tok;
    size_t *tl;
    size_t captok;
    struct buf unq;          /* unquoted values of the current row */
    int have_header;
    char *hdr;               /* text of the current header */
    size_t hdr_len;
    char *host;              /* host.name of the current row (valid during emit) */
    size_t hostcap;
};

/* Column name (lower case, non-alphanumerics as '_') -> gpu.* field. */
static const struct { const char *name, *key; enum ckind kind; enum dim dim; } csv_alias[] = {
    { "power_draw", "gpu.power.usage", C_NUM, D_W },
    { "power_usage", "gpu.power.usage", C_NUM, D_W },
    { "power", "gpu.power.usage", C_NUM, D_W },
    { "gpu_power", "gpu.power.usage", C_NUM, D_W },
    { "power_limit", "gpu.power.limit", C_NUM, D_W },
    { "temp_gpu", "gpu.temperature.gpu", C_NUM, D_C },
    { "gpu_temp", "gpu.temperature.gpu", C_NUM, D_C },
    { "temperature_gpu", "gpu.temperature.gpu", C_NUM, D_C },
    { "gpu_temperature", "gpu.temperature.gpu", C_NUM, D_C },
    { "temp_mem", "gpu.temperature.memory", C_NUM, D_C },
    { "mem_temp", "gpu.temperature.memory", C_NUM, D_C },
    { "temperature_memory", "gpu.temperature.memory", C_NUM, D_C },
    { "utilization_gpu", "gpu.utilization.gpu.pct", C_NUM, D_PCT },
    { "gpu_util", "gpu.utilization.gpu.pct", C_NUM, D_PCT },
    { "gpu_utilization", "gpu.utilization.gpu.pct", C_NUM, D_PCT },
    { "util_gpu", "gpu.utilization.gpu.pct", C_NUM, D_PCT },
    { "utilization_mem", "gpu.utilization.memory_copy.pct", C_NUM, D_PCT },
    { "utilization_memory", "gpu.utilization.memory_copy.pct", C_NUM, D_PCT },
    { "mem_util", "gpu.utilization.memory_copy.pct", C_NUM, D_PCT },
    { "util_mem", "gpu.utilization.memory_copy.pct", C_NUM, D_PCT },
    { "utilization_enc", "gpu.utilization.encoder.pct", C_NUM, D_PCT },
    { "utilization_encoder", "gpu.utilization.encoder.pct", C_NUM, D_PCT },
    { "utilization_dec", "gpu.utilization.decoder.pct", C_NUM, D_PCT },
    { "utilization_decoder", "gpu.utilization.decoder.pct", C_NUM, D_PCT },
    { "memory_used", "gpu.memory.framebuffer.used_size", C_NUM, D_MIB },
    { "mem_used", "gpu.memory.framebuffer.used_size", C_NUM, D_MIB },
    { "fb_used", "gpu.memory.framebuffer.used_size", C_NUM, D_MIB },
    { "memory_total", "gpu.memory.framebuffer.total_size", C_NUM, D_MIB },
    { "mem_total", "gpu.memory.framebuffer.total_size", C_NUM, D_MIB },
    { "clock_sm", "gpu.clock.streaming_multiprocessor_frequency", C_NUM, D_MHZ },
    { "sm_clock", "gpu.clock.streaming_multiprocessor_frequency", C_NUM, D_MHZ },
    { "clocks_sm", "gpu.clock.streaming_multiprocessor_frequency", C_NUM, D_MHZ },
    { "clocks_current_sm", "gpu.clock.streaming_multiprocessor_frequency", C_NUM, D_MHZ },
    { "clock_mem", "gpu.clock.mem_frequency", C_NUM, D_MHZ },
    { "mem_clock", "gpu.clock.mem_frequency", C_NUM, D_MHZ },
    { "clocks_mem", "gpu.clock.mem_frequency", C_NUM, D_MHZ },
    { "clocks_current_memory", "gpu.clock.mem_frequency", C_NUM, D_MHZ },
    { "clock_gr", "gpu.clock.graphics_frequency", C_NUM, D_MHZ },
    { "clock_graphics", "gpu.clock.graphics_frequency", C_NUM, D_MHZ },
    { "graphics_clock", "gpu.clock.graphics_frequency", C_NUM, D_MHZ },
    { "clocks_gr", "gpu.clock.graphics_frequency", C_NUM, D_MHZ },
    { "clocks_current_graphics", "gpu.clock.graphics_frequency", C_NUM, D_MHZ },
    { "fan_speed", "gpu.fan.speed.pct", C_NUM, D_PCT },
    { "ecc_corrected", "gpu.ecc.corrected.volatile.count", C_NUM, D_NONE },
    { "ecc_uncorrected", "gpu.ecc.uncorrected.volatile.count", C_NUM, D_NONE },
    { "pstate", "gpu.pstate", C_STR, D_NONE },
    { "gpu_name", "gpu.name", C_STR, D_NONE },
    { "gpu_uuid", "gpu.uuid", C_STR, D_NONE },
    { "pci_bus_id", "gpu.pci.bus_id", C_STR, D_NONE },
    { "gpu_bus_id", "gpu.pci.bus_id", C_STR, D_NONE },
    { "throttle_reasons", "gpu.throttling.reasons", C_MASK, D_NONE },
    { "clocks_throttle_reasons_active", "gpu.throttling.reasons", C_MASK, D_NONE },
    { "clocks_event_reasons_active", "gpu.throttling.reasons", C_MASK, D_NONE },
};

/* Time columns by precedence; "date" and "time" together make a pair. */
static const char *const csv_time_names[] = {
    "timestamp", "datetime", "date_time", "ts", "time", "date",
};
static const char *const csv_gpu_names[] = { "gpu", "index", "gpu_index", "gpu_id", "gpu_idx" };
static const char *const csv_host_names[] = { "host", "hostname", "host_name", "node_name" };

/* Units written after numbers: family and factor to the field's unit. */
static const struct { const char *u; enum dim dim; double f; } csv_units[] = {
    { "%", D_PCT, 1 },
    { "W", D_W, 1 }, { "mW", D_W, 0.001 }, { "kW", D_W, 1000 },
    { "C", D_C, 1 }, { "\xc2\xb0" "C", D_C, 1 }, { "degC", D_C, 1 },
    { "MiB", D_MIB, 1 }, { "MB", D_MIB, 1 }, { "M", D_MIB, 1 },
    { "GiB", D_MIB, 1024 }, { "GB", D_MIB, 1024 }, { "G", D_MIB, 1024 },
    { "KiB", D_MIB, 1.0 / 1024 }, { "KB", D_MIB, 1.0 / 1024 }, { "kB", D_MIB, 1.0 / 1024 },
    { "TiB", D_MIB, 1048576 }, { "TB", D_MIB, 1048576 },
    { "MHz", D_MHZ, 1 }, { "GHz", D_MHZ, 1000 }, { "kHz", D_MHZ, 0.001 },
};

/* Drops a UTF-8 byte order mark (spreadsheet exports start with one). */
static int in_list(const char *a, size_t n, const char *const *list, size_t cnt)
{
    for (size_t i = 0; i < cnt; i++) if (col_tok_is(a, n, list[i])) return 1;
    return 0;
}

/* Splits "power [W]" / "power (W)" into the name and the unit inside. */
static void split_header_unit(const char *t, size_t l, size_t *nl, const char **u, size_t *ul)
{
    *nl = l;
    *u = NULL;
    *ul = 0;
    if (l < 3 || (t[l - 1] != ']' && t[l - 1] != ')')) return;
    char open = t[l - 1] == ']' ? '[' : '(';
    for (size_t i = l - 1; i > 0; i--) {
        if (t[i - 1] == open) {
            const char *nm = t;
            size_t n = i - 1;
            str_trim(&nm, &n);
            if (n == 0) return;
            *nl = n;
            *u = t + i;
            *ul = l - 1 - i;
            return;
        }
    }
}

/* Lower case, runs of non-alphanumerics as one '_', no '_' at the ends.
 * Returns the length written (at most CSV_MAX_NAME). */
static size_t norm_name(const char *s, size_t n, char out[CSV_MAX_NAME + 1])
{
    size_t o = 0;
    int us = 1;
    for (size_t i = 0; i < n && o < CSV_MAX_NAME; i++) {
        unsigned char c = (unsigned char)s[i];
        if (isalnum(c)) { out[o++] = (char)tolower(c); us = 0; }
        else if (!us) { out[o++] = '_'; us = 1; }
    }
    while (o && out[o - 1] == '_') o--;
    out[o] = '\0';
    return o;
}

/* A header name: starts with a letter, '@' or '_', then name characters. */
static int name_like(const char *t, size_t l)
{
    if (l == 0 || l > CSV_MAX_NAME) return 0;
    unsigned char c0 = (unsigned char)t[0];
    if (!isalpha(c0) && c0 != '@' && c0 != '_') return 0;
    for (size_t i = 0; i < l; i++) {
        unsigned char c = (unsigned char)t[i];
        if (c == 0 || (!isalnum(c) && !strchr(" _.@/()[]%-", c))) return 0;
    }
    return 1;
}

/* Next comma-separated field (trimmed), without unquoting. 0 at the end. */
static int next_field(const char *s, size_t n, size_t *pos, int *done, const char **t, size_t *l)
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

static void csv_name_kind(const char *nm, size_t nl, int *is_time, int *is_alias)
{
    *is_time = in_list(nm, nl, csv_time_names, GL_ARRAY_LEN(csv_time_names));
    *is_alias = 0;
    for (size_t j = 0; j < GL_ARRAY_LEN(csv_alias); j++)
        if (col_tok_is(nm, nl, csv_alias[j].name)) { *is_alias = 1; break; }
}

/* Scores a header line: 60 when it has at least two name-like, non-numeric
 * fields and one of them is a time column or a GPU alias; else 0. Kept below
 * the 90 of query-csv and dmon-csv so their own headers go to them. */
static int csv_header_score(const char *line, size_t len, int *nfields)
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
    int done = 0, k = 0, hint = 0;
    const char *t;
    size_t l;
    char nm[CSV_MAX_NAME + 1];
    while (next_field(s, n, &pos, &done, &t, &l)) {
        if (l >= 2 && t[0] == '"' && t[l - 1] == '"') { t++; l -= 2; }
        if (!name_like(t, l)) return 0;
        size_t hl, ul;
        const char *u;
        split_header_unit(t, l, &hl, &u, &ul);
        size_t nl = norm_name(t, hl, nm);
        int is_time, is_alias;
        csv_name_kind(nm, nl, &is_time, &is_alias);
        if (is_time || is_alias) hint = 1;
        k++;
    }
    *nfields = k;
    return k >= 2 && hint ? 60 : 0;
}

static int csv_sniff(const char *line, size_t len)
{
    int k;
    return csv_header_score(line, len, &k);
}

static void *csv_create(struct parser *p)
{
    (void)p;
    struct csvp *c = xcalloc(1, sizeof *c);
    buf_init(&c->unq);
    return c;
}

static void cols_clear(struct csvp *c)
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
    cols_clear(c);
    free(c->cols);
    free(c->tok);
    free(c->tl);
    free(c->hdr);
    free(c->host);
    buf_free(&c->unq);
    free(c);
}

/* Splits a row into c->tok, unquoting "..." fields ("" is a quote) into
 * c->unq. Returns the field count, or -1 on an unterminated quote. */
static int csv_split(struct csvp *c, const char *s, size_t n)
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
        while (next_field(s, n, &pos, &done, &c->tok[k], &c->tl[k])) k++;
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

static const char *unit_lookup(const char *u, size_t ul, enum dim *dim, double *f)
{
    for (size_t i = 0; i < GL_ARRAY_LEN(csv_units); i++)
        if (col_tok_is(u, ul, csv_units[i].u)) { *dim = csv_units[i].dim; *f = csv_units[i].f; return csv_units[i].u; }
    return NULL;
}

/* Learns the columns from a header line (a leading '#' removed by caller). */
static int csv_learn(struct parser *p, struct csvp *c, const char *s, size_t n)
{
    if (c->have_header && c->hdr && c->hdr_len == n && !memcmp(c->hdr, s, n)) return GL_DECLINED;
    int k = csv_split(c, s, n);
    if (k < 0) return parser_error(p, RJ_NO_HEADER, "header has an unterminated quote");
    if (k > CSV_MAX_COLS) return parser_error(p, RJ_NO_HEADER, "header has more than %d columns", CSV_MAX_COLS);
    cols_clear(c);
    if (k > c->capcols) {
        c->cols = xrealloc(c->cols, (size_t)k * sizeof *c->cols);
        c->capcols = k;
    }
    char nm[CSV_MAX_NAME + 1];
    int time_idx = -1, time_rank = 99, date_idx = -1, tod_idx = -1;
    for (int i = 0; i < k; i++) {
        struct ccol *col = &c->cols[i];
        memset(col, 0, sizeof *col);
        const char *t = c->tok[i];
        size_t l = c->tl[i];
        if (!name_like(t, l)) {
            c->ncols = i;
            cols_clear(c);
            return parser_error(p, RJ_NO_HEADER, "header column %d is not a name: '%.*s'", i + 1, (int)(l > 40 ? 40 : l), t);
        }
        size_t hl, ul;
        const char *u;
        split_header_unit(t, l, &hl, &u, &ul);
        /* metrics/labels keep the whole header text ("Latency (ms)" ->
         * metrics.latency_ms); the other roles match the name without unit */
        col->kind = C_VALUE;
        col->metric = name_sanitize("metrics.", t, l);
        col->label = name_sanitize("labels.", t, l);
        size_t nl = norm_name(t, hl, nm);
        if (u) {
            enum dim d;
            double f;
            if (unit_lookup(u, ul, &d, &f)) { col->hscale = f; col->hdim = d; }
            else col->hdim = D_NONE, col->hscale = -1;     /* a unit we do not know */
        }
        for (size_t j = 0; j < GL_ARRAY_LEN(csv_time_names); j++)
            if (col_tok_is(nm, nl, csv_time_names[j])) {
                if (!strcmp(csv_time_names[j], "date")) { if (date_idx < 0) date_idx = i; }
                if (!strcmp(csv_time_names[j], "time")) { if (tod_idx < 0) tod_idx = i; }
                if ((int)j < time_rank) { time_rank = (int)j; time_idx = i; }
            }
        if (in_list(nm, nl, csv_gpu_names, GL_ARRAY_LEN(csv_gpu_names))) col->kind = C_GPU;
        else if (in_list(nm, nl, csv_host_names, GL_ARRAY_LEN(csv_host_names))) col->kind = C_HOST;
        else {
            for (size_t j = 0; j < GL_ARRAY_LEN(csv_alias); j++)
                if (col_tok_is(nm, nl, csv_alias[j].name)) {
                    col->kind = csv_alias[j].kind;
                    col->key = csv_alias[j].key;
                    col->dim = csv_alias[j].dim;
                    /* "power [F]": not the field's unit, keep it as a plain metric */
                    if (col->kind == C_NUM && col->hscale != 0 && col->dim != D_NONE && col->hdim != col->dim) {
                        col->kind = C_VALUE;
                        col->key = NULL;
                    }
                    break;
                }
        }
    }
    /* time: "date" + "time" columns together form one timestamp */
    if (time_idx >= 0) {
        if (date_idx >= 0 && tod_idx >= 0 && time_rank >= 4) {
            c->cols[date_idx].kind = C_DATE;
            c->cols[tod_idx].kind = C_TOD;
        } else {
            c->cols[time_idx].kind = C_TIME;
        }
    }
    /* one column per field: later spellings of a taken field are skipped */
    for (int i = 0; i < k; i++) {
        struct ccol *a = &c->cols[i];
        for (int j = 0; j < i; j++) {
            const struct ccol *b = &c->cols[j];
            if (a->kind == b->kind && (a->kind == C_GPU || a->kind == C_HOST || a->kind == C_MASK ||
                                       ((a->kind == C_NUM || a->kind == C_STR) && !strcmp(a->key, b->key)) ||
                                       (a->kind == C_VALUE && !strcmp(a->metric, b->metric)))) {
                a->kind = C_SKIP;
                break;
            }
        }
    }
    c->ncols = k;
    c->have_header = 1;
    free(c->hdr);
    c->hdr = xstrndup(s, n);
    c->hdr_len = n;
    return GL_DECLINED;
}

/* "YYYY-MM-DD" or "YYYY/MM/DD". */
static int parse_date(const char *s, size_t n, int *y, int *mo, int *d)
{
    return n == 10 && (s[4] == '-' || s[4] == '/') && s[7] == s[4] &&
           gl_parse_digits(s, 4, y) && gl_parse_digits(s + 5, 2, mo) && gl_parse_digits(s + 8, 2, d);
}

/* "HH:MM:SS[.fff]" -> fields. */
static int parse_tod(const char *s, size_t n, int *h, int *mi, int *se, int *ms)
{
    if (n < 8 || s[2] != ':' || s[5] != ':' || !gl_parse_digits(s, 2, h) || !gl_parse_digits(s + 3, 2, mi) ||
        !gl_parse_digits(s + 6, 2, se))
        return 0;
    *ms = 0;
    if (n == 8) return 1;
    return (s[8] == '.' || s[8] == ',') && col_frac_ms(s + 9, n - 9, ms);
}

/* A time value: epoch seconds / ms / us / ns as an integer (by magnitude),
 * epoch seconds with a fraction, ISO 8601 with or without zone ('T' or ' ',
 * '-' or '/' in the date), or a date alone. Zone-less times are read in the
 * --tz zone. Returns GL_OK or GL_ERROR. */
static int csv_parse_time(const char *s, size_t n, int64_t *out)
{
    if (n == 0) return GL_ERROR;
    size_t i = 0, dot = 0;
    while (i < n && ((s[i] >= '0' && s[i] <= '9') || (s[i] == '.' && !dot))) { if (s[i] == '.') dot = i + 1; i++; }
    if (i == n) {
        size_t intlen = dot ? dot - 1 : n;
        if (intlen == 0 || intlen > 19) return GL_ERROR;
        uint64_t v = 0;
        for (size_t j = 0; j < intlen; j++) v = v * 10 + (uint64_t)(s[j] - '0');
        if (dot) {
            if (v >= 100000000000ULL) return GL_ERROR;   /* fractions only on seconds */
            double d;
            if (!gl_parse_double(s, n, &d)) return GL_ERROR;
            *out = (int64_t)llround(d * 1000.0);
            return GL_OK;
        }
        if (v < 100000000000ULL) *out = (int64_t)v * 1000;            /* seconds */
        else if (v < 100000000000000ULL) *out = (int64_t)v;           /* ms */
        else if (v < 100000000000000000ULL) *out = (int64_t)(v / 1000);  /* us */
        else *out = (int64_t)(v / 1000000);                          /* ns */
        return GL_OK;
    }
    int y, mo, d;
    if (n == 10 && parse_date(s, n, &y, &mo, &d)) return gl_local_to_epoch_ms(y, mo, d, 0, 0, 0, 0, out);
    char tmp[64];
    if (n >= sizeof tmp || n < 19) return GL_ERROR;
    memcpy(tmp, s, n);
    if (tmp[4] == '/' && tmp[7] == '/') tmp[4] = tmp[7] = '-';
    return gl_parse_iso_ts(tmp, n, out);
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

static int csv_row(struct parser *p, struct csvp *c, const struct line_src *src,
                   const char *line, size_t len, int k)
{
    struct event *ev = parser_begin(p, src, "metric", "csv.generic", line, len, 0);
    int y = 0, mo = 0, d = 0, h = 0, mi = 0, se = 0, ms = 0, have_date = 0, have_tod = 0;
    for (int i = 0; i < k; i++) {
        const struct ccol *col = &c->cols[i];
        const char *t = c->tok[i];
        size_t l = c->tl[i];
        if (col->kind == C_SKIP || csv_missing(t, l)) continue;
        int sl = l > 40 ? 40 : (int)l;
        const char *num, *u;
        size_t nl, ul;
        switch (col->kind) {
        case C_TIME:
            if (csv_parse_time(t, l, &ev->ts_ms) != GL_OK)
                return parser_error(p, RJ_BAD_TIME, "column %d: cannot read the time '%.*s' (want ISO 8601, "
                                       "YYYY/MM/DD HH:MM:SS or epoch seconds/ms)", i + 1, sl, t);
            break;
        case C_DATE:
            if (!parse_date(t, l, &y, &mo, &d))
                return parser_error(p, RJ_BAD_TIME, "column %d: bad date '%.*s' (want YYYY-MM-DD)", i + 1, sl, t);
            have_date = 1;
            break;
        case C_TOD:
            if (!parse_tod(t, l, &h, &mi, &se, &ms))
                return parser_error(p, RJ_BAD_TIME, "column %d: bad time of day '%.*s' (want HH:MM:SS)", i + 1, sl, t);
            have_tod = 1;
            break;
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
        case C_HOST:
            if (l + 1 > c->hostcap) {
                c->hostcap = l + 1 > 64 ? l + 1 : 64;
                c->host = xrealloc(c->host, c->hostcap);
            }
            memcpy(c->host, t, l);
            c->host[l] = '\0';
            ev->host = c->host;
            break;
        case C_STR:
            if (!strcmp(col->key, "gpu.pci.bus_id")) event_add_bus_id(ev, t, l);   /* not an address: left out */
            else event_add_str(ev, col->key, t, l);
            break;
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
                if (!unit_lookup(u, ul, &dm, &f) || (col->dim != D_NONE && dm != col->dim))
                    return parser_error(p, RJ_BAD_UNIT, "column %d: unit '%.*s' does not fit %s", i + 1, (int)ul, u, col->key);
            }
            add_scaled(ev, col->key, num, nl, f);
            break;
        }
        case C_VALUE:
            if (number_unit(t, l, &num, &nl, &u, &ul)) add_scaled(ev, col->metric, num, nl, 1);
            else event_add_str(ev, col->label, t, l);
            break;
        case C_SKIP:
            break;
        }
    }
    if (have_date) {
        if (gl_local_to_epoch_ms(y, mo, d, have_tod ? h : 0, mi, se, ms, &ev->ts_ms) != GL_OK)
            return parser_error(p, RJ_BAD_TIME, "bad date/time %04d-%02d-%02d %02d:%02d:%02d", y, mo, d, h, mi, se);
    } else if (have_tod) {
        return parser_error(p, RJ_BAD_TIME, "a time of day without a date cannot be placed: add a date column");
    }
    parser_emit(p);
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
        if (nf >= 2 && (score > 0 || !c->have_header)) return csv_learn(p, c, s, n);
        return GL_DECLINED;
    }
    if (score > 0 || (!c->have_header && nf >= 1) || (c->hdr && c->hdr_len == n && !memcmp(c->hdr, s, n)))
        return csv_learn(p, c, s, n);
    if (!c->have_header)
        return parser_error(p, RJ_NO_HEADER, "CSV row before a header line (the first line must name the columns)");
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
