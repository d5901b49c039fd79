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
    int done = 0, k = 0, hint = 0;
    const char *t;
    size_t l;
    char nm[CSV_MAX_NAME + 1];
    while (csv_next_field(s, n, &pos, &done, &t, &l)) {
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

int csv_sniff(const char *line, size_t len)
{
    int k;
    return csv_header_score(line, len, &k);
}


const char *csv_unit_lookup(const char *u, size_t ul, enum dim *dim, double *f)
{
    for (size_t i = 0; i < GL_ARRAY_LEN(csv_units); i++)
        if (col_tok_is(u, ul, csv_units[i].u)) { *dim = csv_units[i].dim; *f = csv_units[i].f; return csv_units[i].u; }
    return NULL;
}

/* The role of header column col by its normalised name nm (nl bytes):
 * GPU index, host or a GPU field alias; else it stays a plain value. */
static void learn_role(struct ccol *col, const char *nm, size_t nl)
{
    if (in_list(nm, nl, csv_gpu_names, GL_ARRAY_LEN(csv_gpu_names))) { col->kind = C_GPU; return; }
    if (in_list(nm, nl, csv_host_names, GL_ARRAY_LEN(csv_host_names))) { col->kind = C_HOST; return; }
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
            return;
        }
}

/* One column per field: later spellings of a field taken by an earlier
 * one of the k columns are skipped. */
static void skip_repeats(struct csvp *c, int k)
{
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
}

/* Learns the columns from a header line (a leading '#' removed by caller). */
int csv_learn(struct parser *p, struct csvp *c, const char *s, size_t n)
{
    if (c->have_header && c->hdr && c->hdr_len == n && !memcmp(c->hdr, s, n)) return GL_DECLINED;
    int k = csv_split(c, s, n);
    if (k < 0) return parser_error(p, RJ_NO_HEADER, "header has an unterminated quote");
    if (k > CSV_MAX_COLS) return parser_error(p, RJ_NO_HEADER, "header has more than %d columns", CSV_MAX_COLS);
    csv_cols_clear(c);
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
            csv_cols_clear(c);
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
            if (csv_unit_lookup(u, ul, &d, &f)) { col->hscale = f; col->hdim = d; }
            else col->hdim = D_NONE, col->hscale = -1;     /* a unit we do not know */
        }
        for (size_t j = 0; j < GL_ARRAY_LEN(csv_time_names); j++)
            if (col_tok_is(nm, nl, csv_time_names[j])) {
                if (!strcmp(csv_time_names[j], "date")) { if (date_idx < 0) date_idx = i; }
                if (!strcmp(csv_time_names[j], "time")) { if (tod_idx < 0) tod_idx = i; }
                if ((int)j < time_rank) { time_rank = (int)j; time_idx = i; }
            }
        learn_role(col, nm, nl);
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
    skip_repeats(c, k);
    c->ncols = k;
    c->have_header = 1;
    free(c->hdr);
    c->hdr = xstrndup(s, n);
    c->hdr_len = n;
    return GL_DECLINED;
}

