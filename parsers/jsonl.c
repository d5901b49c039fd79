/*
 * jsonl.c - JSON lines: Weights & Biases system metrics (wandb-events.jsonl,
 * the "events" stream: {"system.gpu.0.temp": 45, "system.gpu.0.powerWatts":
 * 120.5, "system.cpu": 12, "_timestamp": 1690000000.1, ...}), JSON lines of
 * the same shape from other loggers (flat {"time": ..., "gpu": 0, "temp_c":
 * 61}, nested objects, an array of per-GPU objects as gpustat prints them),
 * and gpulog's own events (what `gpulog parse` writes), which pass through
 * as they are.
 *
 * One object a line. Nested objects are flattened with '.' ("gpu": {"0":
 * {"temp": 50}} is "gpu.0.temp"). Each key is recognised by the rule every
 * CSV-like format uses (parsers/fieldname.h: the user's --map first): a
 * time, the host, the GPU index, a gpu.* field with the unit its name gives,
 * a wide key's GPU ("system.gpu.3.temp", "gpu3_power"). A line gives one
 * event per GPU it names, and one for its values of no GPU (metrics.<key>,
 * labels.<key>), when it has any; an array of objects gives one event per
 * object (its own GPU index), the line's scalar time and host shared. A
 * generic word ("temp", "memory") is a GPU field only in a line about GPUs,
 * as for CSV. Depth is bounded (8), keys per line too (4096): beyond, the
 * line is rejected with the reason.
 */
#include "parser.h"
#include "fieldname.h"
#include "columns.h"
#include "throttle.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define J_MAX_DEPTH 8
#define J_MAX_KEYS 4096
#define J_KEY_MAX 200

/* One scalar of the line: its key (cache entry) and value, the row it
 * belongs to (0: the line; i + 1: element i of an array of objects). */
struct jval {
    const struct col_key *k;
    json_t *v;
    int row;
};

struct jsonl {
    struct col_keys keys;
    struct jval *vals;
    size_t nvals, capvals;
    struct buf key;           /* the key being flattened */
    char *host;
    size_t hostcap;
};

static void *jsonl_create(struct parser *p)
{
    (void)p;
    struct jsonl *j = xcalloc(1, sizeof *j);
    buf_init(&j->key);
    return j;
}

static void jsonl_destroy(void *st)
{
    struct jsonl *j = st;
    col_keys_free(&j->keys);
    free(j->vals);
    free(j->host);
    buf_free(&j->key);
    free(j);
}

static void push_val(struct jsonl *j, const struct col_key *k, json_t *v, int row)
{
    if (j->nvals == j->capvals) {
        j->capvals = j->capvals ? j->capvals * 2 : 64;
        j->vals = xrealloc(j->vals, j->capvals * sizeof *j->vals);
    }
    j->vals[j->nvals++] = (struct jval){ k, v, row };
}

/* Flattens object o under the key prefix in j->key (row: see struct jval).
 * Arrays of objects at the line's top become rows; other arrays are left
 * out. GL_OK, or GL_ERROR (said) past the limits. */
static int flatten(struct parser *p, struct jsonl *j, json_t *o, int depth, int row, int *nrows)
{
    if (depth > J_MAX_DEPTH) return parser_error(p, RJ_OTHER, "JSON nested deeper than %d levels", J_MAX_DEPTH);
    const char *k;
    json_t *v;
    size_t base = j->key.len;
    json_object_foreach(o, k, v) {
        size_t kl = strlen(k);
        j->key.len = base;
        if (base) buf_putc(&j->key, '.');
        buf_append(&j->key, k, kl);
        if (j->key.len > J_KEY_MAX) continue;              /* a key too long to be a name: left out */
        if (json_is_object(v)) {
            if (flatten(p, j, v, depth + 1, row, nrows) != GL_OK) return GL_ERROR;
        } else if (json_is_array(v)) {
            if (row || depth) continue;                        /* processes inside a GPU: not rows */
            size_t i;
            json_t *e;
            size_t save = j->key.len;
            json_array_foreach(v, i, e) {
                if (!json_is_object(e) || *nrows >= 1024) continue;
                ++*nrows;
                j->key.len = 0;
                if (flatten(p, j, e, depth + 1, *nrows, nrows) != GL_OK) return GL_ERROR;
                j->key.len = save;
            }
        } else if (!json_is_null(v)) {
            if (j->nvals >= J_MAX_KEYS) return parser_error(p, RJ_OTHER, "JSON object with more than %d values", J_MAX_KEYS);
            const struct col_key *jk = col_key_get(&j->keys, j->key.p, j->key.len);
            /* "_runtime", "_step", "_wandb": a logger's bookkeeping, not a measurement (its "_timestamp" is the time) */
            if (jk && j->key.p[0] == '_' && jk->r.role != FN_TIME) continue;
            if (jk) push_val(j, jk, v, row);
        }
    }
    j->key.len = base;
    if (j->key.p) j->key.p[base] = '\0';
    return GL_OK;
}

/* The number in v (a JSON number, or a numeric string "61", "230 W" is
 * not: units in JSON strings are text). 1 and *d when there is one. */
static int num_of(json_t *v, double *d, int *is_int, int64_t *iv)
{
    if (json_is_integer(v)) { *iv = json_integer_value(v); *d = (double)*iv; *is_int = 1; return 1; }
    if (json_is_real(v)) { *d = json_real_value(v); *is_int = 0; return isfinite(*d); }
    if (json_is_boolean(v)) { *iv = json_is_true(v); *d = (double)*iv; *is_int = 1; return 1; }
    return 0;
}

/* A time value: a JSON number is epoch seconds, ms, us or ns by magnitude
 * (fractions on seconds); a string goes through the CSV time reader. */
static int time_of(json_t *v, int64_t *ts)
{
    double d;
    int is_int;
    int64_t iv;
    if (num_of(v, &d, &is_int, &iv) && !json_is_boolean(v)) {
        double a = fabs(d);
        if (a < 1e11) *ts = (int64_t)llround(d * 1000.0);
        else if (a < 1e14) *ts = (int64_t)llround(d);
        else if (a < 1e17) *ts = (int64_t)llround(d / 1000.0);
        else *ts = (int64_t)llround(d / 1e6);
        return GL_OK;
    }
    if (json_is_string(v)) return col_time_value(json_string_value(v), json_string_length(v), ts);
    return GL_ERROR;
}

/* 1 when the line is about GPUs: a key that says GPU by itself (or names
 * the GPU index), or three different GPU fields in generic words. */
static int about_gpus(const struct jsonl *j)
{
    const char *weak[8];
    int nweak = 0;
    for (size_t i = 0; i < j->nvals; i++) {
        const struct fn_result *r = &j->vals[i].k->r;
        if (r->role != FN_GPU && !fn_is_field(r)) continue;
        if (r->strong) return 1;
        int seen = 0;
        for (int w = 0; w < nweak; w++) if (!strcmp(weak[w], r->key ? r->key : "gpu.index")) seen = 1;
        if (!seen && nweak < 8) weak[nweak++] = r->key ? r->key : "gpu.index";
    }
    return nweak >= 3;
}

/* Adds value jv to ev as what its key is (gpu_table: the line is about
 * GPUs). GL_OK or GL_ERROR (said). */
static int add_value(struct parser *p, struct event *ev, const struct jval *jv, int gpu_table)
{
    const struct col_key *k = jv->k;
    const struct fn_result *r = &k->r;
    double d;
    int is_int;
    int64_t iv;
    int numeric = num_of(jv->v, &d, &is_int, &iv);
    int gpu_field = fn_is_field(r) && (r->strong || gpu_table);
    if (gpu_field && r->role == FN_NUM) {
        if (!numeric) {
            if (json_is_string(jv->v) && value_is_missing(json_string_value(jv->v), json_string_length(jv->v)))
                return GL_OK;
            return parser_error(p, RJ_NOT_A_NUMBER, "key '%.60s': not a number", k->name);
        }
        double f = r->scale > 0 ? r->scale : 1;
        if (f == 1 && is_int) event_add_int(ev, r->key, iv);
        else if (fabs(d * f) < 9007199254740992.0 && d * f == floor(d * f)) event_add_int(ev, r->key, (int64_t)(d * f));
        else event_add_num(ev, r->key, d * f);
        return GL_OK;
    }
    if (gpu_field && r->role == FN_BOOL) {
        int b;
        if (json_is_boolean(jv->v)) event_add_bool(ev, r->key, json_is_true(jv->v));
        else if (numeric) event_add_bool(ev, r->key, d != 0);
        else if (json_is_string(jv->v) && col_parse_bool(json_string_value(jv->v), json_string_length(jv->v), &b))
            event_add_bool(ev, r->key, b);
        else return parser_error(p, RJ_NOT_A_NUMBER, "key '%.60s': not a yes/no value", k->name);
        return GL_OK;
    }
    if (gpu_field && r->role == FN_MASK) {
        uint64_t mask;
        if (numeric && d >= 0) throttle_add_fields(ev, (uint64_t)d);
        else if (json_is_string(jv->v) && throttle_parse_mask(json_string_value(jv->v), json_string_length(jv->v), &mask))
            throttle_add_fields(ev, mask);
        else return parser_error(p, RJ_NOT_A_NUMBER, "key '%.60s': not a bitmask", k->name);
        return GL_OK;
    }
    if (gpu_field && r->role == FN_STR) {
        if (json_is_string(jv->v)) {
            const char *s = json_string_value(jv->v);
            size_t n = json_string_length(jv->v);
            if (!strcmp(r->key, "gpu.pci.bus_id")) event_add_bus_id(ev, s, n);
            else if (!value_is_missing(s, n)) event_add_str(ev, r->key, s, n);
        } else if (numeric && !strcmp(r->key, "process.pid")) {
            event_add_int(ev, r->key, iv);
        }
        return GL_OK;
    }
    if (r->mapped && r->key && !strncmp(r->key, "labels.", 7)) {
        if (json_is_string(jv->v)) event_add_str(ev, r->key, json_string_value(jv->v), json_string_length(jv->v));
        else if (numeric) {
            char t[64];
            int n = is_int ? snprintf(t, sizeof t, "%lld", (long long)iv) : snprintf(t, sizeof t, "%.17g", d);
            event_add_str(ev, r->key, t, (size_t)n);
        }
        return GL_OK;
    }
    const char *metric = r->mapped && r->key ? r->key : k->metric;
    if (numeric && !json_is_boolean(jv->v)) {
        if (is_int) event_add_int(ev, metric, iv);
        else event_add_num(ev, metric, d);
    } else if (json_is_string(jv->v)) {
        event_add_str(ev, k->label, json_string_value(jv->v), json_string_length(jv->v));
    }
    return GL_OK;
}

/* The GPU index a row names (a gpu/index key: a number, "GPU 3" or a
 * UUID), -1 when none; GL_ERROR (said) for a value that is neither. */
static int row_gpu(struct parser *p, const struct jsonl *j, int row, int gpu_table, int *gpu, const char **uuid,
                   size_t *ul)
{
    *gpu = -1;
    *uuid = NULL;
    for (size_t i = 0; i < j->nvals; i++) {
        const struct jval *jv = &j->vals[i];
        if (jv->row != row || jv->k->r.role != FN_GPU || jv->k->r.gpu >= 0 || (!jv->k->r.strong && !gpu_table)) continue;
        double d;
        int is_int;
        int64_t iv;
        if (num_of(jv->v, &d, &is_int, &iv) && is_int && iv >= 0 && iv < 1000000) { *gpu = (int)iv; return GL_OK; }
        if (json_is_string(jv->v)) {
            const char *s = json_string_value(jv->v);
            size_t n = json_string_length(jv->v);
            if (n > 4 && (!memcmp(s, "GPU-", 4) || !memcmp(s, "MIG-", 4))) { *uuid = s; *ul = n; return GL_OK; }
            if (gl_parse_i64(s, n, &iv) && iv >= 0 && iv < 1000000) { *gpu = (int)iv; return GL_OK; }
        }
        return parser_error(p, RJ_NOT_A_NUMBER, "key '%.60s': not a GPU index or UUID", jv->k->name);
    }
    return GL_OK;
}

/* Emits the events of row `row` (0: the line's own values) with the
 * line's time ts and host; GPUs of wide keys each get an event of their
 * own. sub numbers the events of the line (their ids). */
static int emit_row(struct parser *p, struct jsonl *j, const struct line_src *src, const char *line, size_t len,
                    int row, int gpu_table, int64_t ts, const char *host, uint64_t *sub)
{
    /* the wide GPUs this row's keys name, then -1: the row itself (last: a
     * reader that tells a profile by the first event sees a GPU first) */
    int gpus[65];
    int ng = 0;
    for (size_t i = 0; i < j->nvals; i++) {
        const struct jval *jv = &j->vals[i];
        int g = jv->k->r.gpu;
        if (jv->row != row || g < 0) continue;
        int have = 0;
        for (int x = 0; x < ng; x++) if (gpus[x] == g) have = 1;
        if (!have && ng < 64) gpus[ng++] = g;
    }
    gpus[ng++] = -1;
    int rgpu;
    const char *uuid;
    size_t ul = 0;
    if (row_gpu(p, j, row, gpu_table, &rgpu, &uuid, &ul) != GL_OK) return GL_ERROR;
    for (int x = 0; x < ng; x++) {
        int g = gpus[x];
        struct event *ev = parser_begin_sub(p, src, "metric", "json.generic", line, len, 0, (*sub)++);
        ev->ts_ms = ts;
        if (host) ev->host = host;
        if (g >= 0) event_add_int(ev, "gpu.index", g);
        else if (rgpu >= 0) event_add_int(ev, "gpu.index", rgpu);
        else if (uuid) event_add_str(ev, "gpu.uuid", uuid, ul);
        size_t before = ev->nf;
        for (size_t i = 0; i < j->nvals; i++) {
            const struct jval *jv = &j->vals[i];
            const struct fn_result *r = &jv->k->r;
            if (jv->row != row || r->gpu != g || r->role == FN_TIME || r->role == FN_DATE || r->role == FN_TOD ||
                r->role == FN_HOST || (r->role == FN_GPU && (r->strong || gpu_table)) || r->skip)
                continue;
            if (add_value(p, ev, jv, gpu_table) != GL_OK) return GL_ERROR;
        }
        if (ev->nf == before && g < 0 && ng > 1) continue;   /* a wide line's values of no GPU: none */
        if (ev->nf == 0) continue;
        parser_emit(p);
    }
    return GL_OK;
}

/* The time and host of row `row` (falling back to the line's). */
static int row_when(struct parser *p, struct jsonl *j, int row, int64_t *ts, const char **host)
{
    int rank = 99;
    for (size_t i = 0; i < j->nvals; i++) {
        const struct jval *jv = &j->vals[i];
        const struct fn_result *r = &jv->k->r;
        if (jv->row != row) continue;
        if ((r->role == FN_TIME || r->role == FN_TOD || r->role == FN_DATE) && r->time_rank < rank) {
            if (time_of(jv->v, ts) != GL_OK)
                return parser_error(p, RJ_BAD_TIME, "key '%.60s': cannot read the time (want epoch seconds/ms or ISO 8601)",
                                    jv->k->name);
            rank = r->time_rank;
        } else if (r->role == FN_HOST && json_is_string(jv->v)) {
            size_t n = json_string_length(jv->v);
            if (!n) continue;
            if (n + 1 > j->hostcap) {
                j->hostcap = n + 1 > 64 ? n + 1 : 64;
                j->host = xrealloc(j->host, j->hostcap);
            }
            memcpy(j->host, json_string_value(jv->v), n);
            j->host[n] = '\0';
            *host = j->host;
        }
    }
    return GL_OK;
}

static int jsonl_feed(struct parser *p, void *st, const struct line_src *src, const char *line, size_t len)
{
    struct jsonl *j = st;
    const char *s;
    size_t n;
    col_csv_text(line, &len, &s, &n);
    if (n == 0) return GL_DECLINED;
    if (s[0] != '{') return parser_error(p, RJ_NOT_JSON, "not a JSON object (a JSON lines input wants one object a line)");
    /* gpulog's own events pass through */
    if (memmem(s, n, "\"event.dataset\"", 15) && memmem(s, n, "\"event.kind\"", 12)) {
        char err[GL_ERRLEN];
        struct event *ev = &p->ev;
        event_reset(ev);
        if (event_from_json(ev, s, n, err, sizeof err) != GL_OK)
            return parser_error(p, RJ_NOT_JSON, "a gpulog event that does not decode: %s", err);
        parser_emit(p);
        return GL_OK;
    }
    json_error_t je;
    json_t *o = json_loadb(s, n, 0, &je);
    if (!o) return parser_error(p, RJ_NOT_JSON, "not JSON at column %d: %s", je.column, je.text);
    if (!json_is_object(o)) {
        json_decref(o);
        return parser_error(p, RJ_NOT_JSON, "not a JSON object (a JSON lines input wants one object a line)");
    }
    j->nvals = 0;
    buf_reset(&j->key);
    int nrows = 0;
    int rc = flatten(p, j, o, 0, 0, &nrows);
    if (rc == GL_OK) {
        int gpu_table = about_gpus(j);
        int64_t ts = src->now_ms;
        const char *host = NULL;
        uint64_t sub = 0;
        rc = row_when(p, j, 0, &ts, &host);
        if (rc == GL_OK) rc = emit_row(p, j, src, line, len, 0, gpu_table, ts, host, &sub);
        for (int r = 1; rc == GL_OK && r <= nrows; r++) {
            int64_t rts = ts;
            const char *rhost = host;
            rc = row_when(p, j, r, &rts, &rhost);
            if (rc == GL_OK) rc = emit_row(p, j, src, line, len, r, gpu_table, rts, rhost, &sub);
        }
    }
    json_decref(o);
    return rc == GL_OK ? GL_OK : GL_ERROR;
}

/* A line that is a JSON object: 80 (kernel lines and tables never start
 * with '{'). */
static int jsonl_sniff(const char *line, size_t len)
{
    const char *s = line;
    size_t n = len;
    str_trim(&s, &n);
    col_skip_bom(&s, &n);
    return n >= 2 && s[0] == '{' && (s[n - 1] == '}' || s[n - 1] == '\r') ? 80 : 0;
}

const struct parser_ops parser_jsonl = {
    .name = "jsonl",
    .help = "JSON lines: W&B system metrics (wandb-events.jsonl), other loggers' objects, gpulog events",
    .create = jsonl_create,
    .destroy = jsonl_destroy,
    .sniff = jsonl_sniff,
    .feed = jsonl_feed,
    .flush = NULL,
};
