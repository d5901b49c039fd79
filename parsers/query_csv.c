/*
 * query_csv.c - `nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]`
 * and its sibling `--query-compute-apps`.
 *
 * The header names the columns, numeric ones with a unit ("memory.used [MiB]").
 * Aliases are folded onto the printed spelling (gpu_name -> name, clocks.gr ->
 * clocks.current.graphics), known names map onto schema fields, every other
 * column is kept as gpu.nvsmi.<name>. Units inside values ("106.56 W") are
 * checked against the header's unit and stripped; missing spellings ([N/A],
 * N/A, [Not Supported], any [...]) leave the field out. Header-less output
 * takes its column names from --columns.
 */
#include "parser.h"
#include "columns.h"
#include "fieldname.h"
#include "throttle.h"

#include <stdlib.h>
#include <string.h>

#define Q_MAX_COLS 4096
#define Q_MAX_NAME 200

enum qkind {
    Q_AUTO,     /* gpu.nvsmi.*: number if numeric, else string */
    Q_NUM,      /* mapped numeric field: must be a number */
    Q_STR,      /* always a string */
    Q_TS,       /* timestamp -> @timestamp */
    Q_MASK,     /* clocks_event_reasons.active bitmask */
    Q_REASON,   /* clocks_event_reasons.<reason>: Active / Not Active */
    Q_BOOL,     /* a boolean field: Yes / No ... */
    Q_SKIP,     /* duplicate of another column */
};

struct qcol {
    const char *key;       /* field name (static or dyn) */
    enum qkind kind;
    char unit[16];         /* unit from the header without brackets, "" if none */
    char *dyn;             /* owned key for gpu.nvsmi.* columns */
};

struct qcsv {
    struct qcol *cols;
    int ncols, capcols;
    const char **tok;      /* per-row tokens (reused) */
    size_t *tl;
    size_t captok;
    int have_header;
    char *hdr;             /* text of the current header, to skip repeats */
    size_t hdr_len;
    struct col_gpuids gpuids; /* no index column: which GPU a row is */
};

/* Alternative spellings accepted by --query-gpu / --query-compute-apps,
 * folded onto the name nvidia-smi prints in the header. */
static const struct { const char *alias, *name; } q_alias[] = {
    { "gpu_name", "name" },
    { "gpu_uuid", "uuid" },
    { "gpu_bus_id", "pci.bus_id" },
    { "gpu_serial", "serial" },
    { "clocks.gr", "clocks.current.graphics" },
    { "clocks.sm", "clocks.current.sm" },
    { "clocks.mem", "clocks.current.memory" },
    { "clocks.video", "clocks.current.video" },
    { "clocks.applications.gr", "clocks.applications.graphics" },
    { "clocks.applications.mem", "clocks.applications.memory" },
    { "clocks.default_applications.gr", "clocks.default_applications.graphics" },
    { "clocks.default_applications.mem", "clocks.default_applications.memory" },
    { "clocks.max.gr", "clocks.max.graphics" },
    { "clocks.max.mem", "clocks.max.memory" },
    { "used_gpu_memory", "used_memory" },
};

/* Printed name -> schema field (shared/docs/event-fields.md). */
static const struct { const char *name, *key; enum qkind kind; } q_map[] = {
    { "timestamp", "@timestamp", Q_TS },
    { "index", "gpu.index", Q_NUM },
    { "name", "gpu.name", Q_STR },
    { "uuid", "gpu.uuid", Q_STR },
    { "pci.bus_id", "gpu.pci.bus_id", Q_STR },
    { "utilization.gpu", "gpu.utilization.gpu.pct", Q_NUM },
    { "utilization.memory", "gpu.utilization.memory_copy.pct", Q_NUM },
    { "utilization.encoder", "gpu.utilization.encoder.pct", Q_NUM },
    { "utilization.decoder", "gpu.utilization.decoder.pct", Q_NUM },
    { "utilization.jpeg", "gpu.utilization.jpeg.pct", Q_NUM },
    { "utilization.ofa", "gpu.utilization.ofa.pct", Q_NUM },
    { "temperature.gpu", "gpu.temperature.gpu", Q_NUM },
    { "temperature.memory", "gpu.temperature.memory", Q_NUM },
    { "power.draw", "gpu.power.usage", Q_NUM },
    { "power.limit", "gpu.power.limit", Q_NUM },
    { "memory.used", "gpu.memory.framebuffer.used_size", Q_NUM },
    { "memory.total", "gpu.memory.framebuffer.total_size", Q_NUM },
    { "clocks.current.sm", "gpu.clock.streaming_multiprocessor_frequency", Q_NUM },
    { "clocks.current.graphics", "gpu.clock.graphics_frequency", Q_NUM },
    { "clocks.current.memory", "gpu.clock.mem_frequency", Q_NUM },
    { "fan.speed", "gpu.fan.speed.pct", Q_NUM },
    { "pstate", "gpu.pstate", Q_STR },
    { "ecc.errors.corrected.volatile.total", "gpu.ecc.corrected.volatile.count", Q_NUM },
    { "ecc.errors.uncorrected.volatile.total", "gpu.ecc.uncorrected.volatile.count", Q_NUM },
    { "clocks_event_reasons.active", "gpu.throttling.reasons", Q_MASK },
    { "pid", "process.pid", Q_NUM },
    { "process_name", "process.name", Q_STR },
    { "used_memory", "gpu.process.memory.used_size", Q_NUM },
};

/* Unmapped names whose values are identifiers or versions: kept as strings
 * even when they look numeric ("570.86", "9.0", serial "0000000000000"). */
static const char *const q_strings[] = {
    "serial", "driver_version", "kmd_version", "vbios_version", "compute_cap",
    "hostname", "platform.chassis_serial_number", "fabric.clusterUuid",
};
static const char *const q_string_prefixes[] = { "inforom.", "pci." };

/* Other names nvidia-smi prints without a unit (for recognising headers). */
static const char *const q_known[] = {
    "count", "display_mode", "display_active", "display_attached", "persistence_mode",
    "compute_mode", "accounting.mode", "accounting.buffer_size", "addressing_mode",
    "gpu_recovery_action", "driver_model.current", "driver_model.pending",
    "ecc.mode.current", "ecc.mode.pending", "mig.mode.current", "mig.mode.pending",
    "power.management", "clocks_event_reasons.supported", "reset_status.reset_required",
};

/* Drops a UTF-8 byte order mark (output saved by Windows tools). */
static int has_prefix(const char *a, size_t n, const char *lit)
{
    size_t l = strlen(lit);
    return n >= l && !memcmp(a, lit, l);
}

/* Folds an alias onto the printed name; writes it into out (NUL-terminated).
 * Returns the length, or 0 if the name is too long. */
static size_t q_canon(const char *s, size_t n, char out[Q_MAX_NAME + 1])
{
    if (n == 0 || n > Q_MAX_NAME) return 0;
    for (size_t i = 0; i < GL_ARRAY_LEN(q_alias); i++)
        if (col_tok_is(s, n, q_alias[i].alias)) {
            size_t l = strlen(q_alias[i].name);
            memcpy(out, q_alias[i].name, l + 1);
            return l;
        }
    /* older drivers: clocks_throttle_reasons.* is today's clocks_event_reasons.* */
    static const char old[] = "clocks_throttle_reasons", cur[] = "clocks_event_reasons";
    if (has_prefix(s, n, old)) {
        size_t rest = n - (sizeof old - 1);
        memcpy(out, cur, sizeof cur - 1);
        memcpy(out + sizeof cur - 1, s + sizeof old - 1, rest);
        out[sizeof cur - 1 + rest] = '\0';
        return sizeof cur - 1 + rest;
    }
    memcpy(out, s, n);
    out[n] = '\0';
    return n;
}

/* 1 if the canonical name is one nvidia-smi prints (mapped, string or listed). */
static int q_is_known(const char *c, size_t n)
{
    for (size_t i = 0; i < GL_ARRAY_LEN(q_map); i++) if (col_tok_is(c, n, q_map[i].name)) return 1;
    for (size_t i = 0; i < GL_ARRAY_LEN(q_strings); i++) if (col_tok_is(c, n, q_strings[i])) return 1;
    for (size_t i = 0; i < GL_ARRAY_LEN(q_known); i++) if (col_tok_is(c, n, q_known[i])) return 1;
    static const char rp[] = "clocks_event_reasons.";
    if (has_prefix(c, n, rp) && throttle_reason_key(c + sizeof rp - 1, n - (sizeof rp - 1))) return 1;
    return 0;
}

/* Next field of a row: fields are separated by ", " (nvidia-smi) when
 * space_sep, else by ','. Each field is trimmed. Returns 0 at the end. */
static int q_next(const char *s, size_t n, size_t *pos, int space_sep, int *done,
                  const char **t, size_t *l)
{
    if (*done) return 0;
    size_t i = *pos, a = i;
    if (space_sep) while (i < n && !(s[i] == ',' && i + 1 < n && s[i + 1] == ' ')) i++;
    else while (i < n && s[i] != ',') i++;
    *t = s + a;
    *l = i - a;
    str_trim(t, l);
    if (i >= n) *done = 1;
    else *pos = i + (space_sep ? 2 : 1);
    return 1;
}

/* Splits "memory.used [MiB]" into the name and the unit (without brackets). */
static void q_split_unit(const char *t, size_t l, size_t *namelen, const char **unit, size_t *ulen)
{
    *unit = NULL;
    *ulen = 0;
    *namelen = l;
    if (l >= 3 && t[l - 1] == ']') {
        const char *ob = memchr(t, '[', l);
        if (ob && ob > t) {
            size_t nl = (size_t)(ob - t);
            const char *nm = t;
            str_trim(&nm, &nl);
            *namelen = nl;
            *unit = ob + 1;
            *ulen = (size_t)(t + l - 1 - (ob + 1));
        }
    }
}

/* A unit word after a number: letters, '%', '/', at most 12 characters. */
static int unit_like(const char *u, size_t n)
{
    if (n == 0 || n > 12) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = u[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '%' || c == '/')) return 0;
    }
    return 1;
}

/* Splits a value into its number text and unit ("106.56 W" -> "106.56", "W").
 * The unit is empty when there is none. Returns 0 if the tail is not unit-like. */
static int q_value_unit(const char *t, size_t l, const char **num, size_t *nl,
                        const char **unit, size_t *ul)
{
    const char *sp = NULL;
    for (size_t i = l; i > 0; i--) if (t[i - 1] == ' ') { sp = t + i - 1; break; }
    *num = t;
    *nl = l;
    *unit = t + l;
    *ul = 0;
    if (!sp) return 1;
    const char *u = sp + 1;
    size_t ulen = (size_t)(t + l - u);
    if (!unit_like(u, ulen)) return 0;
    *nl = (size_t)(sp - t);
    const char *nt = t;
    str_trim(&nt, nl);
    *unit = u;
    *ul = ulen;
    return 1;
}

/* 1 if the text is a number, possibly followed by a unit ("36 %", "28.16"). */
static int q_numeric(const char *t, size_t l)
{
    const char *num, *unit;
    size_t nl, ul;
    double d;
    if (!q_value_unit(t, l, &num, &nl, &unit, &ul)) return 0;
    return gl_parse_double(num, nl, &d);
}

/* How much a line looks like a query header: 90 when every name is one that
 * nvidia-smi prints (known, with a "[unit]", or dotted like "pcie.link.gen.max"),
 * 55 when at least one is and the others are plain words, else 0. Any numeric
 * field, empty field or odd character means a data row: 0. */
static int q_header_score(const char *line, size_t len)
{
    const char *s = line;
    size_t n = len;
    if (n && s[n - 1] == '\r') n--;
    col_skip_bom(&s, &n);
    str_trim(&s, &n);
    if (n == 0 || s[0] == '#') return 0;
    int space_sep = 0;
    for (size_t i = 0; i + 1 < n; i++) if (s[i] == ',' && s[i + 1] == ' ') { space_sep = 1; break; }
    size_t pos = 0;
    int done = 0, known = 0, other = 0;
    const char *t;
    size_t l;
    char canon[Q_MAX_NAME + 1];
    while (q_next(s, n, &pos, space_sep, &done, &t, &l)) {
        if (l == 0 || l > Q_MAX_NAME) return 0;
        if (q_numeric(t, l)) return 0;
        size_t nl, ul;
        const char *unit;
        q_split_unit(t, l, &nl, &unit, &ul);
        int dotted = 0;
        for (size_t i = 0; i < nl; i++) {
            char c = t[i];
            if (c == '.') dotted = 1;
            else if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
                return 0;            /* spaces, '/', ':' ... : a value, not a name */
        }
        if (nl == 0 || (t[0] >= '0' && t[0] <= '9')) return 0;
        size_t cl = q_canon(t, nl, canon);
        if (unit && unit_like(unit, ul)) known++;
        else if (cl && q_is_known(canon, cl)) known++;
        else if (!dotted) other++;
    }
    if (!known) return 0;
    return other ? 55 : 90;
}

static int query_csv_sniff(const char *line, size_t len)
{
    return q_header_score(line, len);
}

static void *query_csv_create(struct parser *p)
{
    (void)p;
    return xcalloc(1, sizeof(struct qcsv));
}

static void q_cols_clear(struct qcsv *q)
{
    for (int i = 0; i < q->ncols; i++) free(q->cols[i].dyn);
    q->ncols = 0;
    q->have_header = 0;
}

static void query_csv_destroy(void *st)
{
    struct qcsv *q = st;
    q_cols_clear(q);
    free(q->cols);
    free(q->tok);
    free(q->tl);
    free(q->hdr);
    col_gpuids_free(&q->gpuids);
    free(q);
}

static void q_tok_reserve(struct qcsv *q, size_t need)
{
    if (need <= q->captok) return;
    size_t c = q->captok ? q->captok : 16;
    while (c < need) c *= 2;
    q->tok = xrealloc(q->tok, c * sizeof *q->tok);
    q->tl = xrealloc(q->tl, c * sizeof *q->tl);
    q->captok = c;
}

/* Splits a row into q->tok; returns the field count. */
static size_t q_split(struct qcsv *q, const char *s, size_t n, int space_sep)
{
    size_t commas = 0;
    for (size_t i = 0; i < n; i++) if (s[i] == ',') commas++;
    q_tok_reserve(q, commas + 1);
    size_t pos = 0, k = 0;
    int done = 0;
    const char *t;
    size_t l;
    while (q_next(s, n, &pos, space_sep, &done, &t, &l)) {
        q->tok[k] = t;
        q->tl[k] = l;
        k++;
    }
    return k;
}

static int has_comma_space(const char *s, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++) if (s[i] == ',' && s[i + 1] == ' ') return 1;
    return 0;
}

/* The query column c as what r says it is (a schema field, the GPU index,
 * the time), when it is one query CSV can hold; 1 then, else 0. */
static int q_kind_of(const struct fn_result *r, struct qcol *c)
{
    switch (r->role) {
    case FN_NUM: c->key = r->key; c->kind = Q_NUM; return 1;
    case FN_STR: c->key = r->key; c->kind = Q_STR; return 1;
    case FN_MASK: c->key = r->key; c->kind = Q_MASK; return 1;
    case FN_BOOL: c->key = r->key; c->kind = Q_BOOL; return 1;
    case FN_GPU: c->key = "gpu.index"; c->kind = Q_NUM; return 1;
    case FN_TIME: c->key = "@timestamp"; c->kind = Q_TS; return 1;
    case FN_OTHER:
        if (r->mapped && r->key) { c->key = r->key; c->kind = strncmp(r->key, "labels.", 7) ? Q_AUTO : Q_STR; return 1; }
        return 0;
    default: return 0;
    }
}

/* Learns the columns from a header line (or the --columns list). */
static int q_learn(struct parser *p, struct qcsv *q, const char *s, size_t n)
{
    if (q->have_header && q->hdr && q->hdr_len == n && !memcmp(q->hdr, s, n)) {
        q->gpuids.row = 0;                  /* the same header again (looped output): a new poll */
        return GL_DECLINED;
    }
    size_t k = q_split(q, s, n, has_comma_space(s, n));
    if (k > Q_MAX_COLS) return parser_error(p, RJ_NO_HEADER, "header has more than %d columns", Q_MAX_COLS);
    q_cols_clear(q);
    if ((int)k > q->capcols) {
        q->cols = xrealloc(q->cols, k * sizeof *q->cols);
        q->capcols = (int)k;
    }
    int have_mask = 0;
    char canon[Q_MAX_NAME + 1];
    for (size_t i = 0; i < k; i++) {
        struct qcol *c = &q->cols[i];
        memset(c, 0, sizeof *c);
        size_t nl, ul;
        const char *unit;
        q_split_unit(q->tok[i], q->tl[i], &nl, &unit, &ul);
        size_t cl = q_canon(q->tok[i], nl, canon);
        if (cl == 0) {
            q->ncols = (int)i;
            q_cols_clear(q);
            return parser_error(p, RJ_NO_HEADER, "header column %zu: empty or too long name", i + 1);
        }
        if (unit && ul < sizeof c->unit) { memcpy(c->unit, unit, ul); c->unit[ul] = '\0'; }
        c->kind = Q_AUTO;
        struct fn_result r;
        if (fn_map_lookup(q->tok[i], q->tl[i], &r) && q_kind_of(&r, c)) {
            /* the user's --map */
        } else {
            for (size_t j = 0; j < GL_ARRAY_LEN(q_map); j++)
                if (col_tok_is(canon, cl, q_map[j].name)) { c->key = q_map[j].key; c->kind = q_map[j].kind; break; }
        }
        static const char rp[] = "clocks_event_reasons.";
        if (!c->key && has_prefix(canon, cl, rp)) {
            const char *rk = throttle_reason_key(canon + sizeof rp - 1, cl - (sizeof rp - 1));
            if (rk) { c->key = rk; c->kind = Q_REASON; }
        }
        /* a name nvidia-smi's table does not hold ("power.draw.instant"): the
         * rule every CSV-like format uses, else gpu.nvsmi.<name> */
        if (!c->key) {
            fn_recognise(q->tok[i], q->tl[i], &r);
            q_kind_of(&r, c);
            /* a second column of a field already taken ("power.draw.instant"
             * beside "power.draw") keeps its own gpu.nvsmi.<name> */
            for (size_t j = 0; j < i && c->key; j++)
                if (q->cols[j].kind != Q_SKIP && !strcmp(q->cols[j].key, c->key)) { c->key = NULL; c->kind = Q_AUTO; }
        }
        if (!c->key) {
            c->dyn = name_sanitize("gpu.nvsmi.", canon, cl);
            c->key = c->dyn;
            for (size_t j = 0; j < GL_ARRAY_LEN(q_strings); j++)
                if (col_tok_is(canon, cl, q_strings[j])) c->kind = Q_STR;
            for (size_t j = 0; j < GL_ARRAY_LEN(q_string_prefixes); j++)
                if (has_prefix(canon, cl, q_string_prefixes[j])) c->kind = Q_STR;
        }
        if (c->kind == Q_MASK) have_mask = 1;
        for (size_t j = 0; j < i; j++)          /* two spellings of one column */
            if (q->cols[j].kind != Q_SKIP && !strcmp(q->cols[j].key, c->key)) { c->kind = Q_SKIP; break; }
    }
    /* the bitmask already gives every reason; the per-reason columns repeat it */
    if (have_mask)
        for (size_t i = 0; i < k; i++) if (q->cols[i].kind == Q_REASON) q->cols[i].kind = Q_SKIP;
    q->ncols = (int)k;
    /* no index column: the GPUs its uuid / bus id tells apart, numbered by
     * first appearance; else with a time column one GPU (a single-GPU log);
     * else (one poll a header) the rows since the header, in order -- not for
     * the compute-apps query, whose rows are processes */
    int lone = (int)k, id_col = -1, has_time = 0;
    for (size_t i = 0; i < k; i++) {
        const struct qcol *c = &q->cols[i];
        if (c->kind == Q_TS) has_time = 1;
        if (c->kind == Q_SKIP || !c->key) continue;
        if (!strcmp(c->key, "gpu.index") || !strcmp(c->key, "process.pid")) lone = -1;
        if (id_col < 0 && (!strcmp(c->key, "gpu.uuid") || !strcmp(c->key, "gpu.pci.bus_id"))) id_col = (int)i;
    }
    col_gpuids_learn(&q->gpuids, lone >= 0 && id_col >= 0 ? id_col : lone, has_time);
    q->have_header = 1;
    free(q->hdr);
    q->hdr = xstrndup(s, n);
    q->hdr_len = n;
    return GL_DECLINED;
}

/* nvidia-smi's "YYYY/MM/DD HH:MM:SS.mmm" (local time, no zone; '-' accepted
 * for '/', fraction optional). Returns GL_OK or GL_ERROR. */
static int q_parse_ts(const char *s, size_t n, int64_t *out)
{
    int y, mo, d, h, mi, se, ms = 0;
    if (n < 19 || (s[4] != '/' && s[4] != '-') || s[7] != s[4] ||
        (s[10] != ' ' && s[10] != 'T') || s[13] != ':' || s[16] != ':')
        return GL_ERROR;
    if (!gl_parse_digits(s, 4, &y) || !gl_parse_digits(s + 5, 2, &mo) || !gl_parse_digits(s + 8, 2, &d) ||
        !gl_parse_digits(s + 11, 2, &h) || !gl_parse_digits(s + 14, 2, &mi) || !gl_parse_digits(s + 17, 2, &se))
        return GL_ERROR;
    if (n > 19 && (s[19] != '.' || !col_frac_ms(s + 20, n - 20, &ms))) return GL_ERROR;
    return gl_local_to_epoch_ms(y, mo, d, h, mi, se, ms, out);
}

/* The number inside a value, its unit checked against the header's.
 * Returns 1 with the number text, 0 if it is not a number, -1 on a unit that
 * differs from the header's. */
static int q_number_text(const struct qcol *c, const char *t, size_t l, const char **num, size_t *nl,
                         int64_t *iv, double *dv, int *is_int)
{
    const char *unit;
    size_t ul;
    if (!q_value_unit(t, l, num, nl, &unit, &ul)) return 0;
    *is_int = gl_parse_i64(*num, *nl, iv);
    if (!*is_int && !gl_parse_double(*num, *nl, dv)) return 0;
    if (ul && c->unit[0] && !col_tok_is(unit, ul, c->unit)) return -1;
    return 1;
}

static int q_row(struct parser *p, struct qcsv *q, const struct line_src *src,
                 const char *line, size_t len, size_t k)
{
    struct event *ev = parser_begin(p, src, "metric", "gpu.query", line, len, 0);
    if (q->gpuids.col >= 0) {
        size_t l = (size_t)q->gpuids.col;
        int has = l < k && !value_is_missing(q->tok[l], q->tl[l]);
        int g = col_gpuids_row(&q->gpuids, has ? q->tok[l] : NULL, has ? q->tl[l] : 0);
        if (g >= 0) event_add_int(ev, "gpu.index", g);
    }
    for (size_t i = 0; i < k; i++) {
        const struct qcol *c = &q->cols[i];
        const char *t = q->tok[i];
        size_t l = q->tl[i];
        if (c->kind == Q_SKIP || value_is_missing(t, l)) continue;
        int sl = l > 40 ? 40 : (int)l;
        const char *num;
        size_t nl;
        int64_t iv;
        double dv;
        uint64_t mask;
        int isint = 0;
        switch (c->kind) {
        case Q_TS:
            if (q_parse_ts(t, l, &ev->ts_ms) != GL_OK && col_time_value(t, l, &ev->ts_ms) != GL_OK)
                return parser_error(p, RJ_BAD_TIME, "column %zu: bad timestamp '%.*s' (want YYYY/MM/DD HH:MM:SS.mmm)", i + 1, sl, t);
            break;
        case Q_STR:
            if (!strcmp(c->key, "gpu.pci.bus_id")) event_add_bus_id(ev, t, l);   /* not an address: left out */
            else event_add_str(ev, c->key, t, l);
            break;
        case Q_MASK:
            if (!throttle_parse_mask(t, l, &mask))
                return parser_error(p, RJ_NOT_A_NUMBER, "column %zu: not a bitmask: '%.*s'", i + 1, sl, t);
            throttle_add_fields(ev, mask);
            break;
        case Q_BOOL: {
            int b;
            if (!col_parse_bool(t, l, &b))
                return parser_error(p, RJ_NOT_A_NUMBER, "column %zu: want Yes or No, got '%.*s'", i + 1, sl, t);
            event_add_bool(ev, c->key, b);
            break;
        }
        case Q_REASON:
            if (col_tok_is(t, l, "Active")) event_add_bool(ev, c->key, 1);
            else if (col_tok_is(t, l, "Not Active")) event_add_bool(ev, c->key, 0);
            else return parser_error(p, RJ_NOT_A_NUMBER, "column %zu: want Active or Not Active, got '%.*s'", i + 1, sl, t);
            break;
        case Q_NUM: {
            int r = q_number_text(c, t, l, &num, &nl, &iv, &dv, &isint);
            if (r < 0)
                return parser_error(p, RJ_BAD_UNIT, "column %zu: unit of '%.*s' differs from the header's [%s]", i + 1, sl, t, c->unit);
            if (r == 0) return parser_error(p, RJ_NOT_A_NUMBER, "column %zu: not a number: '%.*s'", i + 1, sl, t);
            if (isint) event_add_int(ev, c->key, iv);
            else event_add_num(ev, c->key, dv);
            break;
        }
        case Q_AUTO: {
            int r = q_number_text(c, t, l, &num, &nl, &iv, &dv, &isint);
            /* leading zeros ("0000000000000") mark an identifier, not a count */
            int ident = nl > 1 && num[0] == '0' && num[1] >= '0' && num[1] <= '9';
            if (r == 1 && !ident && isint) event_add_int(ev, c->key, iv);
            else if (r == 1 && !ident) event_add_num(ev, c->key, dv);
            else event_add_str(ev, c->key, t, l);
            break;
        }
        case Q_SKIP:
            break;
        }
    }
    parser_emit(p);
    return GL_OK;
}

static int query_csv_feed(struct parser *p, void *st, const struct line_src *src,
                          const char *line, size_t len)
{
    struct qcsv *q = st;
    const char *s;
    size_t n;
    col_csv_text(line, &len, &s, &n);
    if (n == 0) return GL_DECLINED;
    if (s[0] == '#') return GL_DECLINED;
    if (q_header_score(s, n) >= 50) return q_learn(p, q, s, n);
    if (!q->have_header) {
        if (!p->opt_columns || !*p->opt_columns)
            return parser_error(p, RJ_NO_HEADER, "query CSV row without a header line (noheader): pass --columns with the "
                                   "queried names, e.g. --columns utilization.gpu or --columns pid,used_memory");
        int rc = q_learn(p, q, p->opt_columns, strlen(p->opt_columns));
        if (rc == GL_ERROR) return rc;
    }
    size_t want = (size_t)q->ncols;
    int space_sep = has_comma_space(s, n);
    size_t k = q_split(q, s, n, space_sep);
    if (k != want && space_sep) {
        size_t k2 = q_split(q, s, n, 0);     /* fields written without the space */
        if (k2 == want) k = k2;
        else q_split(q, s, n, 1);
    }
    if (k != want)
        return parser_error(p, RJ_FIELD_COUNT, "expected %zu field%s as in the header, got %zu", want, want == 1 ? "" : "s", k);
    return q_row(p, q, src, line, len, k);
}

const struct parser_ops parser_query_csv = {
    .name = "query-csv",
    .help = "nvidia-smi --query-gpu/--query-compute-apps --format=csv[,noheader][,nounits]",
    .create = query_csv_create,
    .destroy = query_csv_destroy,
    .sniff = query_csv_sniff,
    .feed = query_csv_feed,
    .flush = NULL,
};
