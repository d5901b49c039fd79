/*
 * smiq.c - `nvidia-smi -q` text dumps: a health snapshot per GPU.
 *
 *   ==============NVSMI LOG==============
 *   Timestamp                                 : Tue Nov  5 10:00:00 2024
 *   Driver Version                            : 535.104.05
 *   Attached GPUs                             : 8
 *   GPU 00000000:07:00.0
 *       Product Name                          : NVIDIA A100-SXM4-80GB
 *       Clocks Event Reasons
 *           SW Power Cap                      : Not Active
 *       ECC Errors
 *           Volatile
 *               DRAM Uncorrectable            : 0
 *       Remapped Rows
 *           Pending                           : No
 *   ...
 *
 * Sections are lines without a value; their depth is their indentation, so
 * "ECC Errors / Volatile / DRAM Uncorrectable" is a path. Each GPU block
 * ("GPU <bus id>" at the left margin) gives one gpu.health event when the
 * block ends (the next GPU, the next log, a key at the left margin, the end
 * of the input): model, uuid, bus id, the GPU's position in the log as
 * gpu.index (nvidia-smi lists them by index), performance state, fan,
 * memory, utilisation, clocks (the current ones), power draw and limit,
 * temperatures with the slowdown and shutdown limits, the active clock event
 * (throttle) reasons, volatile and aggregate ECC counts (SRAM and DRAM
 * summed; older drivers' "Single Bit / Double Bit" totals), retired pages
 * (single-bit, double-bit, pending) and remapped rows (correctable,
 * uncorrectable, pending, failure). Its time is the log's Timestamp (ctime,
 * read in --tz) or the read time. N/A and other missing spellings leave a
 * field out; lines the table does not name are skipped. The detectors judge
 * the snapshot (rule gpu.health: a reset, a drain, an RMA, by the Xid
 * catalog's actions).
 */
#include "parser.h"
#include "columns.h"
#include "throttle.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SQ_DEPTH 8
#define SQ_NAME 48

struct smiq {
    int64_t ts;                     /* the log's Timestamp, 0 = none */
    char driver[40], cuda[24];
    int gpu_no;                     /* GPUs seen in this log */
    int open;                       /* a GPU block is being read into p->ev */
    struct { int indent; char name[SQ_NAME]; } sec[SQ_DEPTH];
    int depth;
    /* the open GPU's sums and choices */
    uint64_t ecc[4];                /* corrected/uncorrected volatile, corrected/uncorrected aggregate */
    uint8_t have_ecc[4];
    uint64_t mask;
    int have_mask;
    int power_rank;                 /* which power line gave gpu.power.usage (average < draw < instant) */
};

static void *smiq_create(struct parser *p)
{
    (void)p;
    return xcalloc(1, sizeof(struct smiq));
}

static void smiq_destroy(void *st) { free(st); }

/* Lower-cases s (n bytes) into out (at most cap - 1 bytes). */
static void lower(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 1 < cap; i++) out[o++] = (char)tolower((unsigned char)s[i]);
    out[o] = '\0';
}

/* The number at the start of a value ("81920 MiB", "60.12 W", "34 C",
 * "0 %"): 1 and *v, *is_int; 0 for N/A and text. */
static int value_num(const char *v, size_t n, double *d, int64_t *iv, int *is_int)
{
    size_t i = 0;
    while (i < n && v[i] != ' ') i++;
    if (!i || value_is_missing(v, n)) return 0;
    *is_int = gl_parse_i64(v, i, iv);
    if (*is_int) { *d = (double)*iv; return 1; }
    return gl_parse_double(v, i, d);
}

static void add_num(struct event *ev, const char *key, const char *v, size_t n)
{
    double d;
    int64_t iv;
    int is_int;
    if (!value_num(v, n, &d, &iv, &is_int)) return;
    if (is_int) event_add_int(ev, key, iv);
    else event_add_num(ev, key, d);
}

static void add_bool(struct event *ev, const char *key, const char *v, size_t n)
{
    int b;
    if (col_parse_bool(v, n, &b)) event_add_bool(ev, key, b);
}

/* Emits the open GPU's event with what was summed over its block. */
static void close_gpu(struct parser *p, struct smiq *q)
{
    if (!q->open) return;
    struct event *ev = &p->ev;
    static const char *const ecc_key[4] = { "gpu.ecc.corrected.volatile.count", "gpu.ecc.uncorrected.volatile.count",
                                            "gpu.ecc.corrected.aggregate.count", "gpu.ecc.uncorrected.aggregate.count" };
    for (int i = 0; i < 4; i++) if (q->have_ecc[i]) event_add_int(ev, ecc_key[i], (int64_t)(q->ecc[i] & INT64_MAX));
    if (q->have_mask) throttle_add_fields(ev, q->mask);
    if (q->driver[0]) event_add_str(ev, "gpu.nvsmi.driver_version", q->driver, strlen(q->driver));
    if (q->cuda[0]) event_add_str(ev, "gpu.nvsmi.cuda_version", q->cuda, strlen(q->cuda));
    q->open = 0;
    parser_emit(p);
}

/* Opens the block of GPU `bus` (the header line at src). */
static void open_gpu(struct parser *p, struct smiq *q, const struct line_src *src, const char *line, size_t len,
                     const char *bus, size_t bl)
{
    struct event *ev = parser_begin(p, src, "metric", "gpu.health", line, len, 0);
    ev->original = NULL;       /* the block spans lines: no one line is its original */
    ev->original_len = 0;
    if (q->ts) ev->ts_ms = q->ts;
    event_add_int(ev, "gpu.index", q->gpu_no++);
    event_add_bus_id(ev, bus, bl);
    memset(q->ecc, 0, sizeof q->ecc);
    memset(q->have_ecc, 0, sizeof q->have_ecc);
    q->mask = 0;
    q->have_mask = 0;
    q->power_rank = 0;
    q->open = 1;
}

/* 1 when the section path (sec[0..depth)) is a, or a/b. */
static int in_sec(const struct smiq *q, const char *a, const char *b)
{
    if (q->depth < 1 || strcmp(q->sec[0].name, a)) return 0;
    if (!b) return q->depth == 1;
    return q->depth == 2 && !strcmp(q->sec[1].name, b);
}

/* One "key : value" line of the open GPU (key lower-cased). */
static void gpu_value(struct smiq *q, struct event *ev, const char *key, const char *v, size_t n)
{
    const char *s0 = q->depth ? q->sec[0].name : "";
    if (q->depth == 0) {
        if (!strcmp(key, "product name")) { if (!value_is_missing(v, n)) event_add_str(ev, "gpu.name", v, n); }
        else if (!strcmp(key, "gpu uuid")) { if (!value_is_missing(v, n)) event_add_str(ev, "gpu.uuid", v, n); }
        else if (!strcmp(key, "fan speed")) add_num(ev, "gpu.fan.speed.pct", v, n);
        else if (!strcmp(key, "performance state")) { if (!value_is_missing(v, n)) event_add_str(ev, "gpu.pstate", v, n); }
        else if (!strcmp(key, "vbios version")) { if (!value_is_missing(v, n)) event_add_str(ev, "gpu.nvsmi.vbios_version", v, n); }
        return;
    }
    if (!strcmp(s0, "clocks event reasons") || !strcmp(s0, "clocks throttle reasons")) {
        char nm[64];
        size_t o = 0;
        for (const char *c = key; *c && o + 1 < sizeof nm; c++) nm[o++] = *c == ' ' ? '_' : *c;
        nm[o] = '\0';
        if (!strcmp(nm, "idle")) strcpy(nm, "gpu_idle");
        for (size_t i = 0; i < throttle_nreasons; i++)
            if (!strcmp(throttle_reasons[i].name, nm)) {
                int b;
                if (!col_parse_bool(v, n, &b)) return;
                q->have_mask = 1;
                if (b) q->mask |= throttle_reasons[i].bit;
            }
        return;
    }
    if (in_sec(q, "fb memory usage", NULL)) {
        if (!strcmp(key, "total")) add_num(ev, "gpu.memory.framebuffer.total_size", v, n);
        else if (!strcmp(key, "used")) add_num(ev, "gpu.memory.framebuffer.used_size", v, n);
        else if (!strcmp(key, "free")) add_num(ev, "gpu.memory.framebuffer.free_size", v, n);
        return;
    }
    if (in_sec(q, "bar1 memory usage", NULL)) {
        if (!strcmp(key, "used")) add_num(ev, "gpu.memory.bar1.used_size", v, n);
        return;
    }
    if (in_sec(q, "utilization", NULL)) {
        static const struct { const char *k, *f; } u[] = {
            { "gpu", "gpu.utilization.gpu.pct" }, { "memory", "gpu.utilization.memory_copy.pct" },
            { "encoder", "gpu.utilization.encoder.pct" }, { "decoder", "gpu.utilization.decoder.pct" },
            { "jpeg", "gpu.utilization.jpeg.pct" }, { "ofa", "gpu.utilization.ofa.pct" },
        };
        for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) if (!strcmp(key, u[i].k)) add_num(ev, u[i].f, v, n);
        return;
    }
    if (!strcmp(s0, "ecc errors") && q->depth >= 2) {
        int agg = !strcmp(q->sec[1].name, "aggregate");
        if (!agg && strcmp(q->sec[1].name, "volatile")) return;
        /* older drivers: "Single Bit" / "Double Bit" sections, their "Total" */
        int unc;
        if (q->depth == 3) {
            if (strcmp(key, "total")) return;
            if (!strcmp(q->sec[2].name, "single bit")) unc = 0;
            else if (!strcmp(q->sec[2].name, "double bit")) unc = 1;
            else return;
        } else if (q->depth == 2) {
            if (strstr(key, "uncorrectable")) unc = 1;
            else if (strstr(key, "correctable")) unc = 0;
            else return;
        } else {
            return;
        }
        double d;
        int64_t iv;
        int is_int;
        if (!value_num(v, n, &d, &iv, &is_int) || !is_int || iv < 0) return;
        int slot = (agg ? 2 : 0) + unc;
        q->ecc[slot] += (uint64_t)iv;
        q->have_ecc[slot] = 1;
        return;
    }
    if (in_sec(q, "retired pages", NULL)) {
        if (!strncmp(key, "single bit", 10)) add_num(ev, "gpu.retired_pages.single_bit.count", v, n);
        else if (!strncmp(key, "double bit", 10)) add_num(ev, "gpu.retired_pages.double_bit.count", v, n);
        else if (!strncmp(key, "pending", 7)) add_bool(ev, "gpu.retired_pages.pending", v, n);
        return;
    }
    if (in_sec(q, "retired pages", "single bit ecc") || in_sec(q, "retired pages", "double bit ecc")) {
        if (!strcmp(key, "count"))
            add_num(ev, q->sec[1].name[0] == 's' ? "gpu.retired_pages.single_bit.count" : "gpu.retired_pages.double_bit.count",
                    v, n);
        return;
    }
    if (in_sec(q, "remapped rows", NULL)) {
        if (!strcmp(key, "correctable error")) add_num(ev, "gpu.remapped_rows.correctable.count", v, n);
        else if (!strcmp(key, "uncorrectable error")) add_num(ev, "gpu.remapped_rows.uncorrectable.count", v, n);
        else if (!strcmp(key, "pending")) add_bool(ev, "gpu.remapped_rows.pending", v, n);
        else if (!strcmp(key, "remapping failure occurred")) add_bool(ev, "gpu.remapped_rows.failure", v, n);
        return;
    }
    if (in_sec(q, "temperature", NULL)) {
        if (!strcmp(key, "gpu current temp")) add_num(ev, "gpu.temperature.gpu", v, n);
        else if (!strcmp(key, "memory current temp")) add_num(ev, "gpu.temperature.memory", v, n);
        else if (!strcmp(key, "gpu slowdown temp")) add_num(ev, "gpu.temperature.slowdown", v, n);
        else if (!strcmp(key, "gpu shutdown temp")) add_num(ev, "gpu.temperature.shutdown", v, n);
        return;
    }
    if (in_sec(q, "gpu power readings", NULL) || in_sec(q, "power readings", NULL)) {
        /* one reading: the average where there is one, else the draw, else the instantaneous */
        int rank = !strcmp(key, "average power draw") ? 3 : !strcmp(key, "power draw") ? 2 :
                   !strcmp(key, "instantaneous power draw") ? 1 : 0;
        double d;
        int64_t iv;
        int is_int;
        if (rank > q->power_rank && value_num(v, n, &d, &iv, &is_int)) {
            if (q->power_rank) {            /* a better reading than the one taken: replace it */
                for (size_t i = 0; i < ev->nf; i++)
                    if (!strcmp(ev->f[i].key, "gpu.power.usage")) { ev->f[i].type = EV_NUM; ev->f[i].v.d = d; }
            } else {
                event_add_num(ev, "gpu.power.usage", d);
            }
            q->power_rank = rank;
        } else if (!strcmp(key, "current power limit") || !strcmp(key, "enforced power limit") || !strcmp(key, "power limit")) {
            size_t i;
            for (i = 0; i < ev->nf; i++) if (!strcmp(ev->f[i].key, "gpu.power.limit")) break;
            if (i == ev->nf) add_num(ev, "gpu.power.limit", v, n);
        }
        return;
    }
    if (in_sec(q, "clocks", NULL)) {
        if (!strcmp(key, "graphics")) add_num(ev, "gpu.clock.graphics_frequency", v, n);
        else if (!strcmp(key, "sm")) add_num(ev, "gpu.clock.streaming_multiprocessor_frequency", v, n);
        else if (!strcmp(key, "memory")) add_num(ev, "gpu.clock.mem_frequency", v, n);
        return;
    }
    if (in_sec(q, "pci", NULL) && !strcmp(key, "bus id")) {
        size_t i;
        for (i = 0; i < ev->nf; i++) if (!strcmp(ev->f[i].key, "gpu.pci.bus_id")) break;
        if (i == ev->nf) event_add_bus_id(ev, v, n);
    }
}

/* The position of the key/value separator of a dump line: the first ':'
 * after a blank ("Bus Id    : 0000:07:00.0"); 0 when there is none. */
static size_t key_sep(const char *s, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (s[i] == ':' && s[i - 1] == ' ') return i;
    return 0;
}

static int smiq_feed(struct parser *p, void *st, const struct line_src *src, const char *line, size_t len)
{
    struct smiq *q = st;
    if (len && line[len - 1] == '\r') len--;
    const char *s = line;
    size_t n = len;
    col_skip_bom(&s, &n);
    int indent = 0;
    while (n && (*s == ' ' || *s == '\t')) { indent += *s == '\t' ? 4 : 1; s++; n--; }
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
    if (n == 0) return GL_DECLINED;
    if (n >= 8 && s[0] == '=' && memmem(s, n, "NVSMI LOG", 9)) {      /* a new log */
        close_gpu(p, q);
        q->ts = 0;
        q->gpu_no = 0;
        q->depth = 0;
        q->driver[0] = q->cuda[0] = '\0';
        return GL_DECLINED;
    }
    if (indent == 0 && n > 4 && !memcmp(s, "GPU ", 4) && !key_sep(s, n)) {   /* "GPU 00000000:07:00.0" */
        close_gpu(p, q);
        q->depth = 0;
        const char *bus = s + 4;
        size_t bl = n - 4;
        str_trim(&bus, &bl);
        open_gpu(p, q, src, line, len, bus, bl);
        return GL_OK;
    }
    size_t sep = key_sep(s, n);
    /* the sections this line is inside: those indented less */
    while (q->depth && q->sec[q->depth - 1].indent >= indent) q->depth--;
    if (!sep) {                                                      /* a section */
        if (q->depth < SQ_DEPTH) {
            q->sec[q->depth].indent = indent;
            lower(s, n, q->sec[q->depth].name, SQ_NAME);
            q->depth++;
        }
        return GL_DECLINED;
    }
    const char *k = s, *v = s + sep + 1;
    size_t kl = sep, vl = n - sep - 1;
    str_trim(&k, &kl);
    str_trim(&v, &vl);
    char key[64];
    lower(k, kl, key, sizeof key);
    if (indent == 0) {                                               /* the log's own lines */
        close_gpu(p, q);
        q->depth = 0;
        if (!strcmp(key, "timestamp")) {
            if (gl_parse_ctime(v, vl, &q->ts) != GL_OK) {
                q->ts = 0;
                return parser_error(p, RJ_BAD_TIME, "bad Timestamp '%.*s' (want ctime, e.g. Tue Nov  5 10:00:00 2024)",
                                    (int)(vl > 40 ? 40 : vl), v);
            }
        } else if (!strcmp(key, "driver version")) {
            snprintf(q->driver, sizeof q->driver, "%.*s", (int)vl, v);
        } else if (!strcmp(key, "cuda version")) {
            snprintf(q->cuda, sizeof q->cuda, "%.*s", (int)vl, v);
        }
        return GL_DECLINED;
    }
    if (!q->open) return GL_DECLINED;                                /* a value outside a GPU block */
    gpu_value(q, &p->ev, key, v, vl);
    return GL_DECLINED;
}

static void smiq_flush(struct parser *p, void *st)
{
    close_gpu(p, st);
}

/* The dump's banner, or its "Attached GPUs" line. */
static int smiq_sniff(const char *line, size_t len)
{
    if (len >= 9 && line[0] == '=' && memmem(line, len, "NVSMI LOG", 9)) return 95;
    if (len > 14 && !strncasecmp(line, "Attached GPUs", 13)) return 80;
    return 0;
}

const struct parser_ops parser_smiq = {
    .name = "nvidia-smi-q",
    .help = "nvidia-smi -q text dumps: one health snapshot per GPU (ECC, retired pages, remapped rows, throttling)",
    .create = smiq_create,
    .destroy = smiq_destroy,
    .sniff = smiq_sniff,
    .feed = smiq_feed,
    .flush = smiq_flush,
};
