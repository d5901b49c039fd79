/* parser.c - registry, common event header and shared helpers. */
#include "parser.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

const struct parser_ops *const parser_formats[] = {
    &parser_auto, &parser_dmon, &parser_dmon_csv, &parser_query_csv, &parser_csv,
    &parser_pmon, &parser_dcgmi, &parser_kmsg, &parser_jsonl, &parser_smiq, NULL
};

const struct parser_ops *parser_find(const char *name)
{
    for (size_t i = 0; parser_formats[i]; i++)
        if (!strcmp(parser_formats[i]->name, name)) return parser_formats[i];
    return NULL;
}

const char *const *parser_format_names(void)
{
    static const char *names[32];
    if (!names[0])
        for (size_t i = 0; parser_formats[i] && i + 1 < GL_ARRAY_LEN(names); i++) names[i] = parser_formats[i]->name;
    return names;
}

struct parser *parser_new(const struct parser_ops *ops, emit_fn emit, void *ctx)
{
    struct parser *p = xcalloc(1, sizeof *p);
    p->ops = ops;
    p->emit = emit;
    p->emit_ctx = ctx;
    event_init(&p->ev);
    p->st = ops->create ? ops->create(p) : NULL;
    return p;
}

void parser_free(struct parser *p)
{
    if (!p) return;
    if (p->ops->destroy) p->ops->destroy(p->st);
    event_free(&p->ev);
    free(p);
}

int parser_feed(struct parser *p, const struct line_src *src, const char *line, size_t len)
{
    p->stats.lines++;
    p->err[0] = '\0';
    p->err_reason = RJ_OTHER;
    p->ts_refused = 0;
    uint64_t ev0 = p->stats.events;
    int rc = p->ops->feed(p, p->st, src, line, len);
    if (rc == GL_OK && p->ts_refused) {   /* the reason is in p->err (parser_emit) */
        if (p->stats.events == ev0) rc = GL_ERROR;
        else if (parser_ts_refused() <= 20) log_warn("msg=\"%s\" line=%llu", p->err, (unsigned long long)src->lineno);
    }
    if (rc == GL_DECLINED) p->stats.declined++;
    else if (rc == GL_ERROR) p->stats.rejected++;
    return rc;
}

void parser_flush(struct parser *p)
{
    if (p->ops->flush) p->ops->flush(p, p->st);
}

struct event *parser_begin(struct parser *p, const struct line_src *src,
                           const char *kind, const char *dataset,
                           const char *line, size_t len, int always_original)
{
    struct event *ev = &p->ev;
    event_reset(ev);
    ev->kind = kind;
    ev->dataset = dataset;
    ev->host = src->host;
    ev->path = src->path;
    ev->offset = src->path ? src->offset : -1;
    ev->ts_ms = src->now_ms;
    ev->created_ms = src->now_ms;
    event_make_id(ev, src->host, src->source, src->gen, src->offset, line, len);
    if (always_original || src->keep_original) {
        ev->original = line;
        ev->original_len = len;
    }
    return ev;
}

struct event *parser_begin_sub(struct parser *p, const struct line_src *src, const char *kind, const char *dataset,
                               const char *line, size_t len, int always_original, uint64_t sub)
{
    struct event *ev = parser_begin(p, src, kind, dataset, line, len, always_original);
    if (sub) event_id_sub(ev, sub);
    return ev;
}

/* Numeric ranges of schemas/event.schema.json (minimum/maximum) for the
 * fields parsers emit; keys ending in .pct are 0..100 and .throughput >= 0
 * by pattern. tests/t_hostile.sh checks this table against the schema. */
static const struct { const char *key; double lo, hi; } schema_ranges[] = {
    { "gpu.index", 0, HUGE_VAL },
    { "gpu.power.usage", 0, HUGE_VAL },
    { "gpu.power.limit", 0, HUGE_VAL },
    { "gpu.clock.mem_frequency", 0, HUGE_VAL },
    { "gpu.clock.streaming_multiprocessor_frequency", 0, HUGE_VAL },
    { "gpu.clock.graphics_frequency", 0, HUGE_VAL },
    { "gpu.throttling.reasons", 0, HUGE_VAL },
    { "gpu.memory.framebuffer.used_size", 0, HUGE_VAL },
    { "gpu.memory.framebuffer.total_size", 0, HUGE_VAL },
    { "gpu.memory.framebuffer.free_size", 0, HUGE_VAL },
    { "gpu.memory.bar1.used_size", 0, HUGE_VAL },
    { "gpu.memory.protected.used_size", 0, HUGE_VAL },
    { "gpu.ecc.single_bit.count", 0, HUGE_VAL },
    { "gpu.ecc.double_bit.count", 0, HUGE_VAL },
    { "gpu.ecc.corrected.volatile.count", 0, HUGE_VAL },
    { "gpu.ecc.uncorrected.volatile.count", 0, HUGE_VAL },
    { "gpu.ecc.corrected.aggregate.count", 0, HUGE_VAL },
    { "gpu.ecc.uncorrected.aggregate.count", 0, HUGE_VAL },
    { "gpu.retired_pages.single_bit.count", 0, HUGE_VAL },
    { "gpu.retired_pages.double_bit.count", 0, HUGE_VAL },
    { "gpu.remapped_rows.correctable.count", 0, HUGE_VAL },
    { "gpu.remapped_rows.uncorrectable.count", 0, HUGE_VAL },
    { "gpu.pcie.replay", 0, HUGE_VAL },
    { "gpu.pcie.rx.throughput", 0, HUGE_VAL },
    { "gpu.pcie.tx.throughput", 0, HUGE_VAL },
    { "gpu.mig.gpu_instance", 0, HUGE_VAL },
    { "gpu.mig.compute_instance", 0, HUGE_VAL },
    { "process.pid", 0, HUGE_VAL },
    { "gpu.process.memory.used_size", 0, HUGE_VAL },
    { "gpu.xid.code", 0, HUGE_VAL },
    { "gpu.sxid.code", 0, HUGE_VAL },
};
#define ES_FLOAT_MAX 3.4028234663852886e38   /* numbers are mapped as float: beyond this they cannot be stored */
/* A value within [ranges_lo_max, ranges_hi_min] is inside every range of the
 * table; set from it on the first out_of_range call. */
static double ranges_lo_max = HUGE_VAL, ranges_hi_min = -HUGE_VAL;
/* 1 once ranges_bounds found 0..100 inside every range of the table. */
static int ranges_small_ok;

static void ranges_bounds(void)
{
    ranges_lo_max = -HUGE_VAL;
    ranges_hi_min = HUGE_VAL;
    for (size_t i = 0; i < GL_ARRAY_LEN(schema_ranges); i++) {
        if (schema_ranges[i].lo > ranges_lo_max) ranges_lo_max = schema_ranges[i].lo;
        if (schema_ranges[i].hi < ranges_hi_min) ranges_hi_min = schema_ranges[i].hi;
    }
    ranges_small_ok = ranges_lo_max <= 0 && ranges_hi_min >= 100;
}

/* 1 when key (n bytes) ends with the suffix lit. */
static inline int key_ends(const char *key, size_t n, const char *lit, size_t l)
{
    return n > l && !memcmp(key + n - l, lit, l);
}
#define KEY_ENDS(k, n, lit) key_ends((k), (n), (lit), sizeof(lit) - 1)

/* 1 when the schema types key (n bytes) as a number: *.pct, *.throughput
 * and the keys of schema_ranges. */
static int numeric_key(const char *key, size_t n)
{
    if (KEY_ENDS(key, n, ".pct") || KEY_ENDS(key, n, ".throughput")) return 1;
    for (size_t i = 0; i < GL_ARRAY_LEN(schema_ranges); i++)
        if (!strcmp(schema_ranges[i].key, key)) return 1;
    return 0;
}

/* Why the value of field f breaks the schema, or NULL. */
static const char *out_of_range(const struct ev_field *f)
{
    double v;
    if (f->type == EV_INT) {
        /* most values of a metric row: 0..100, in every range of the table
         * (ranges_small_ok) and a valid percentage, decided on the integer */
        if ((uint64_t)f->v.i <= 100 && ranges_small_ok) return NULL;
        v = (double)f->v.i;
    } else if (f->type == EV_NUM) {
        v = f->v.d;
        if (!isfinite(v) || fabs(v) > ES_FLOAT_MAX) return "not storable as a float";
    } else if (f->type == EV_STR) {
        /* a text cell where the schema wants a number (dmon's GPM columns
         * keep text they cannot read as a number, e.g. "0\xe6611") */
        return numeric_key(f->key, event_key_len(f)) ? "not a number where the schema wants one" : NULL;
    } else {
        return NULL;
    }
    /* the common case, a value in 0..100, breaks no rule: no key compared
     * (the per-key comparisons were 16 % of collect's CPU) */
    if (ranges_lo_max > ranges_hi_min) ranges_bounds();
    int in_table = v >= ranges_lo_max && v <= ranges_hi_min;
    if (in_table && v >= 0 && v <= 100) return NULL;
    /* above 100 (counters, clocks, sizes): only a percentage can be wrong,
     * a suffix compare on the key's known length (no strlen, no strcmp) */
    size_t n = event_key_len(f);
    if ((v < 0 || v > 100) && KEY_ENDS(f->key, n, ".pct")) return "a percentage outside 0..100";
    if (v < 0 && KEY_ENDS(f->key, n, ".throughput")) return "negative";
    if (in_table) return NULL;
    for (size_t i = 0; i < GL_ARRAY_LEN(schema_ranges); i++)
        if (!strcmp(schema_ranges[i].key, f->key)) {
            if (v < schema_ranges[i].lo) return "below the schema's minimum";
            if (v > schema_ranges[i].hi) return "above the schema's maximum";
            break;
        }
    return NULL;
}

static uint64_t dropped_total;   /* parser_fields_dropped */

uint64_t parser_fields_dropped(void) { return dropped_total; }

/* @timestamp bounds at emission, 1970-01-01T00:00:00.000Z .. 2099-12-31T23:59:59.999Z:
 * outside them a date was misread or a clock is wrong (the schema's four-digit
 * year ends at 9999; the detectors' clocks and Elasticsearch's indices would
 * take a year-1900 or year-9999 sample as real). */
#define TS_MIN_MS 0LL
#define TS_MAX_MS 4102444799999LL
static uint64_t ts_refused_total, rounded_total;   /* parser_ts_refused, parser_fields_rounded */

uint64_t parser_fields_rounded(void) { return rounded_total; }

/* What the schema's integer type asks of a fraction in field f: WHOLE_NONE
 * (the schema types the field as a number: gauges, W, %, degrees, MHz,
 * MB/s), WHOLE_ROUND (a count or a size in MiB: a unit conversion left a
 * fraction, the nearest whole number is the value) or WHOLE_ID (an
 * identifier or a code: a fraction is no identifier, the event is refused).
 * tests/t_hostile_config.sh checks these lists against the schema. */
enum whole_kind { WHOLE_NONE, WHOLE_ROUND, WHOLE_ID };
static const struct { const char *key; size_t len; enum whole_kind kind; } whole_keys[] = {
#define WK(k, kind) { k, sizeof(k) - 1, kind }
    WK("gpu.pcie.replay", WHOLE_ROUND), WK("gpu.index", WHOLE_ID), WK("gpu.mig.gpu_instance", WHOLE_ID),
    WK("gpu.mig.compute_instance", WHOLE_ID), WK("process.pid", WHOLE_ID), WK("gpu.xid.code", WHOLE_ID),
    WK("gpu.sxid.code", WHOLE_ID), WK("gpu.throttling.reasons", WHOLE_ID), WK("event.severity", WHOLE_ID),
    WK("log.offset", WHOLE_ID), WK("event.duration", WHOLE_ID),
#undef WK
};

static enum whole_kind whole_kind(const struct ev_field *f)
{
    size_t n = event_key_len(f);
    /* sizes (gpu.memory.*_size, gpu.process.memory.used_size) and counts (gpu.ecc.*.count) */
    if (KEY_ENDS(f->key, n, "_size") || KEY_ENDS(f->key, n, ".count")) return WHOLE_ROUND;
    for (size_t i = 0; i < GL_ARRAY_LEN(whole_keys); i++)
        if (whole_keys[i].len == n && !memcmp(whole_keys[i].key, f->key, n)) return whole_keys[i].kind;
    return WHOLE_NONE;
}

/* A fraction in a field the schema types as an integer: rounded in place
 * (counted), or the event refused (the reason in p->err; returns 1). */
static int whole_numbers(struct parser *p)
{
    struct event *ev = &p->ev;
    for (size_t i = 0; i < ev->nf; i++) {
        struct ev_field *f = &ev->f[i];
        if (f->type != EV_NUM || f->v.d == floor(f->v.d) || !isfinite(f->v.d)) continue;
        enum whole_kind k = whole_kind(f);
        if (k == WHOLE_ROUND && fabs(f->v.d) < 9e15) {
            int64_t r = (int64_t)floor(f->v.d + 0.5);   /* an integer on the wire, as the schema types it */
            f->type = EV_INT;
            f->v.i = r;
            rounded_total++;
        } else if (k == WHOLE_ID) {
            p->ts_refused++;
            ts_refused_total++;
            parser_error(p, RJ_NOT_A_NUMBER, "%s %g is not a whole number (an identifier): event refused", f->key, f->v.d);
            return 1;
        }
    }
    return 0;
}

uint64_t parser_ts_refused(void) { return ts_refused_total; }

/* Refuses p->ev when its @timestamp is out of bounds: counted, the reason in
 * p->err (parser_feed rejects the line with it, or says it for the first 20
 * when the line emitted other events). Returns 1 when refused. */
static int ts_refuse(struct parser *p)
{
    int64_t ms = p->ev.ts_ms;
    if (ms >= TS_MIN_MS && ms <= TS_MAX_MS) return 0;
    time_t t = (time_t)(ms / 1000 - (ms % 1000 < 0));
    struct tm tm;
    char when[40] = "?";
    if (gmtime_r(&t, &tm)) snprintf(when, sizeof when, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900,
                                    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    p->ts_refused++;
    ts_refused_total++;
    parser_error(p, RJ_BAD_TIME, "time %s is outside 1970-01-01..2099-12-31 (a misread date or a wrong clock): event refused",
                 when);
    return 1;
}

#define LABELS_MAX 16

/* The node's labels (parser_labels_set): key "labels.NAME", value. */
static struct { char key[72]; char val[128]; size_t vlen; } node_labels[LABELS_MAX];
static size_t n_node_labels;

int parser_labels_set(const char *const *kv, size_t n, char *err, size_t errlen)
{
    n_node_labels = 0;
    if (n > LABELS_MAX) { snprintf(err, errlen, "labels: at most %d", LABELS_MAX); return -1; }
    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(kv[i], '=');
        size_t kl = eq ? (size_t)(eq - kv[i]) : 0;
        int ok = eq && kl > 0 && kl <= 60;
        for (size_t j = 0; ok && j < kl; j++) {
            char c = kv[i][j];
            if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) ok = 0;
        }
        if (!ok || !eq[1] || strlen(eq + 1) >= sizeof node_labels[0].val) {
            snprintf(err, errlen, "label '%.60s': want NAME=VALUE, NAME of lower case letters, digits and '_', a value of 1 "
                     "to 127 bytes", kv[i]);
            n_node_labels = 0;
            return -1;
        }
        snprintf(node_labels[n_node_labels].key, sizeof node_labels[0].key, "labels.%.*s", (int)kl, kv[i]);
        snprintf(node_labels[n_node_labels].val, sizeof node_labels[0].val, "%s", eq + 1);
        node_labels[n_node_labels].vlen = strlen(eq + 1);
        n_node_labels++;
    }
    return 0;
}

/* Adds the node's labels that ev does not set itself. */
static void add_node_labels(struct event *ev)
{
    for (size_t i = 0; i < n_node_labels; i++)
        if (!event_get(ev, node_labels[i].key)) event_add_str(ev, node_labels[i].key, node_labels[i].val, node_labels[i].vlen);
}

void parser_emit(struct parser *p)
{
    if (n_node_labels) add_node_labels(&p->ev);
    if (ts_refuse(p) || whole_numbers(p)) return;
    /* every emitted event validates against the schema: an out-of-range
     * field is dropped (the rest kept), counted, and the first 20 said */
    struct event *ev = &p->ev;
    for (size_t i = 0; i < ev->nf; i++) {
        const char *why = out_of_range(&ev->f[i]);
        if (!why) continue;
        double v = ev->f[i].type == EV_NUM ? ev->f[i].v.d : ev->f[i].type == EV_INT ? (double)ev->f[i].v.i : 0;
        if (++dropped_total <= 20) log_warn("msg=\"value out of the schema's range: field dropped, the rest of the event kept\" field=%s value=%g reason=\"%s\"",
                 ev->f[i].key, v, why);
        memmove(&ev->f[i], &ev->f[i + 1], (ev->nf - i - 1) * sizeof *ev->f);
        ev->nf--;
        i--;
    }
    p->stats.events++;
    if (p->emit) p->emit(p->emit_ctx, &p->ev);
}

const char *reject_reason_name(enum reject_reason r)
{
    static const char *const names[RJ__COUNT] = {
        [RJ_OTHER] = "other", [RJ_FIELD_COUNT] = "field_count", [RJ_NOT_A_NUMBER] = "not_a_number",
        [RJ_NO_HEADER] = "no_header", [RJ_BAD_TIME] = "bad_time", [RJ_BAD_UNIT] = "bad_unit",
        [RJ_TOOL_ERROR] = "tool_error", [RJ_TOO_LONG] = "too_long",
        [RJ_NOT_JSON] = "not_json",
    };
    return (unsigned)r < RJ__COUNT && names[r] ? names[r] : "other";
}

int parser_error(struct parser *p, enum reject_reason r, const char *fmt, ...)
{
    p->err_reason = (int)r;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err, sizeof p->err, fmt, ap);
    va_end(ap);
    return GL_ERROR;
}

int str_all_digits(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9') return 0;
    return 1;
}

void str_trim(const char **s, size_t *n)
{
    const char *a = *s;
    size_t l = *n;
    while (l && (*a == ' ' || *a == '\t')) { a++; l--; }
    while (l && (a[l - 1] == ' ' || a[l - 1] == '\t')) l--;
    *s = a;
    *n = l;
}

int value_is_missing(const char *s, size_t n)
{
    if (n == 0) return 1;
    if (n == 1 && s[0] == '-') return 1;
    if (n == 3 && (!memcmp(s, "N/A", 3) || !memcmp(s, "N/W", 3))) return 1;
    if (s[0] == '[' && s[n - 1] == ']') return 1;
    return 0;
}

int event_add_auto(struct event *ev, const char *key, const char *s, size_t n, int allow_str)
{
    int64_t i;
    double d;
    if (gl_parse_i64(s, n, &i)) { event_add_int(ev, key, i); return 1; }
    if (gl_parse_double(s, n, &d)) { event_add_num(ev, key, d); return 1; }
    if (allow_str) { event_add_str(ev, key, s, n); return 1; }
    return 0;
}

/* Hex number of 1..maxd digits at s[*i], stopping at stop or the end. */
static int hex_part(const char *s, size_t n, size_t *i, size_t maxd, unsigned long *v)
{
    size_t d = 0;
    *v = 0;
    while (*i < n && isxdigit((unsigned char)s[*i])) {
        if (++d > maxd) return 0;
        int c = tolower((unsigned char)s[*i]);
        *v = *v * 16 + (unsigned long)(c <= '9' ? c - '0' : c - 'a' + 10);
        (*i)++;
    }
    return d > 0;
}

/* bus_id_canon, or with loose a device number past 0x1f (what a kernel
 * line printed, in the same spelling: it still names the device). */
static size_t bus_id_form(const char *s, size_t n, char out[BUS_ID_LEN], int loose)
{
    out[0] = '\0';
    while (n && isspace((unsigned char)*s)) { s++; n--; }
    while (n && isspace((unsigned char)s[n - 1])) n--;
    if (n >= 4 && !strncasecmp(s, "PCI:", 4)) { s += 4; n -= 4; }
    unsigned long part[3], func = 0;
    size_t i = 0, np = 0;
    for (;;) {
        if (np == 3 || !hex_part(s, n, &i, np == 0 ? 8 : 2, &part[np])) return 0;
        np++;
        if (i < n && s[i] == ':') { i++; continue; }
        break;
    }
    if (np < 2) return 0;
    if (i < n && s[i] == '.') {
        i++;
        if (!hex_part(s, n, &i, 1, &func) || func > 7) return 0;
    }
    if (i != n) return 0;
    unsigned long dom = np == 3 ? part[0] : 0, bus = part[np - 2], dev = part[np - 1];
    if (bus > 0xff || dev > (loose ? 0xffUL : 0x1fUL)) return 0;
    int k = snprintf(out, BUS_ID_LEN, "%04lx:%02lx:%02lx.%lx", dom, bus, dev, func);
    return k > 0 && k < BUS_ID_LEN ? (size_t)k : 0;
}

size_t bus_id_canon(const char *s, size_t n, char out[BUS_ID_LEN]) { return bus_id_form(s, n, out, 0); }

static uint64_t bus_unread_total;   /* parser_bus_ids_unread */
uint64_t parser_bus_ids_unread(void) { return bus_unread_total; }

int event_add_bus_id_said(struct event *ev, const char *s, size_t n)
{
    char b[BUS_ID_LEN];
    size_t k = bus_id_form(s, n, b, 1);
    if (k) {
        event_add_str(ev, "gpu.pci.bus_id", b, k);
        return 1;
    }
    dropped_total++;
    if (++bus_unread_total <= 20)
        log_warn("msg=\"a PCI address that cannot be read: gpu.pci.bus_id left out, the rest of the event kept\" "
                 "value=\"%.*s\"", (int)(n > 40 ? 40 : n), s);
    return 0;
}

int event_add_bus_id(struct event *ev, const char *s, size_t n)
{
    char b[BUS_ID_LEN];
    size_t k = bus_id_canon(s, n, b);
    if (!k) return 0;
    event_add_str(ev, "gpu.pci.bus_id", b, k);
    return 1;
}

size_t name_norm(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    int last_us = 1;
    for (size_t i = 0; i < n && o + 1 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (isalnum(c)) { out[o++] = (char)tolower(c); last_us = 0; }
        else if (!last_us) { out[o++] = '_'; last_us = 1; }
    }
    while (o && out[o - 1] == '_') o--;
    if (cap) out[o] = '\0';
    return o;
}

char *name_sanitize(const char *prefix, const char *s, size_t n)
{
    size_t pl = prefix ? strlen(prefix) : 0;
    char *out = xmalloc(pl + n + 2);   /* n == 0 still writes "_" and NUL */
    memcpy(out, prefix, pl);
    if (!name_norm(s, n, out + pl, n + 2)) strcpy(out + pl, "_");
    return out;
}
