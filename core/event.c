/* event.c - see event.h. */
#include "event.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

void event_init(struct event *ev)
{
    memset(ev, 0, sizeof *ev);
    ev->offset = -1;
    buf_init(&ev->arena);
}

void event_free(struct event *ev)
{
    free(ev->f);
    buf_free(&ev->arena);
    memset(ev, 0, sizeof *ev);
}

void event_reset(struct event *ev)
{
    struct ev_field *f = ev->f;
    size_t capf = ev->capf;
    struct buf arena = ev->arena;
    memset(ev, 0, sizeof *ev);
    ev->f = f;
    ev->capf = capf;
    ev->arena = arena;
    ev->offset = -1;
    buf_reset(&ev->arena);
}

static struct ev_field *add(struct event *ev, const char *key, enum ev_type t)
{
    if (ev->nf == ev->capf) {
        ev->capf = ev->capf ? ev->capf * 2 : 32;
        ev->f = xrealloc(ev->f, ev->capf * sizeof *ev->f);
    }
    struct ev_field *f = &ev->f[ev->nf++];
    f->key = key;
    f->type = t;
    return f;
}

void event_add_int(struct event *ev, const char *key, int64_t v)
{
    add(ev, key, EV_INT)->v.i = v;
}

void event_add_num(struct event *ev, const char *key, double v)
{
    add(ev, key, EV_NUM)->v.d = v;
}

void event_add_bool(struct event *ev, const char *key, int v)
{
    add(ev, key, EV_BOOL)->v.b = v ? 1 : 0;
}

void event_add_str(struct event *ev, const char *key, const char *s, size_t n)
{
    struct ev_field *f = add(ev, key, EV_STR);
    f->v.s.off = (uint32_t)ev->arena.len;
    f->v.s.len = (uint32_t)n;
    buf_append(&ev->arena, s, n);
    buf_putc(&ev->arena, '\0');
}

void event_set_str(struct event *ev, const char *key, const char *s, size_t n)
{
    for (size_t i = 0; i < ev->nf; i++) {
        if (!strcmp(ev->f[i].key, key)) {
            ev->f[i].type = EV_STR;
            ev->f[i].v.s.off = (uint32_t)ev->arena.len;
            ev->f[i].v.s.len = (uint32_t)n;
            buf_append(&ev->arena, s, n);
            buf_putc(&ev->arena, '\0');
            return;
        }
    }
    event_add_str(ev, key, s, n);
}

const struct ev_field *event_get(const struct event *ev, const char *key)
{
    for (size_t i = 0; i < ev->nf; i++)
        if (ev->f[i].key == key || !strcmp(ev->f[i].key, key)) return &ev->f[i];
    return NULL;
}

int event_get_num(const struct event *ev, const char *key, double *out)
{
    const struct ev_field *f = event_get(ev, key);
    if (!f) return 0;
    switch (f->type) {
    case EV_INT: *out = (double)f->v.i; return 1;
    case EV_NUM: *out = f->v.d; return 1;
    case EV_BOOL: *out = f->v.b; return 1;
    default: return 0;
    }
}

const char *event_get_str(const struct event *ev, const char *key, size_t *n)
{
    const struct ev_field *f = event_get(ev, key);
    if (!f || f->type != EV_STR) return NULL;
    if (n) *n = f->v.s.len;
    return event_str(ev, f);
}

void event_make_id(struct event *ev, const char *host, const char *source,
                   int64_t offset, const char *line, size_t len)
{
    struct hash128 h;
    hash128_init(&h);
    hash128_feed(&h, host ? host : "", host ? strlen(host) : 0);
    hash128_feed(&h, source ? source : "-", source ? strlen(source) : 1);
    hash128_feed_u64(&h, (uint64_t)offset);
    hash128_feed(&h, line, len);
    hash128_hex(&h, ev->id);
}

static inline void put_key(struct buf *b, const char *key, size_t klen)
{
    /* keys are plain ASCII schema names: no escaping needed, but guard */
    buf_grow(b, klen + 4);
    b->p[b->len++] = ',';
    b->p[b->len++] = '"';
    memcpy(b->p + b->len, key, klen);
    b->len += klen;
    b->p[b->len++] = '"';
    b->p[b->len++] = ':';
    b->p[b->len] = '\0';
}

static inline void put_lit(struct buf *b, const char *s, size_t n)
{
    buf_append(b, s, n);
}
#define PUT_LIT(b, s) put_lit((b), (s), sizeof(s) - 1)

static int key_is_plain(const char *k)
{
    for (; *k; k++)
        if ((unsigned char)*k < 0x20 || *k == '"' || *k == '\\' || (unsigned char)*k >= 0x80) return 0;
    return 1;
}

/* Appends s as a JSON string: copied as is when plain, else escaped. */
static inline void str_or_plain(struct buf *b, const char *s)
{
    size_t n = strlen(s);
    if (key_is_plain(s)) {
        buf_putc(b, '"');
        put_lit(b, s, n);
        buf_putc(b, '"');
    } else {
        buf_put_json_str(b, s, n);
    }
}

void event_to_json(const struct event *ev, struct buf *b)
{
    char ts[25];
    gl_fmt_ts(ev->ts_ms, ts);
    PUT_LIT(b, "{\"@timestamp\":\"");
    put_lit(b, ts, 24);
    /* kind, dataset and id may come from event_from_json: escape them */
    PUT_LIT(b, "\",\"event.kind\":");
    str_or_plain(b, ev->kind ? ev->kind : "metric");
    PUT_LIT(b, ",\"event.dataset\":");
    str_or_plain(b, ev->dataset ? ev->dataset : "unknown");
    PUT_LIT(b, ",\"event.id\":");
    str_or_plain(b, ev->id);
    if (ev->created_ms) {
        gl_fmt_ts(ev->created_ms, ts);
        PUT_LIT(b, ",\"event.created\":\"");
        put_lit(b, ts, 24);
        buf_putc(b, '"');
    }
    if (ev->host) {
        PUT_LIT(b, ",\"host.name\":");
        buf_put_json_str(b, ev->host, strlen(ev->host));
    }
    PUT_LIT(b, ",\"agent.name\":\"gpulog\",\"agent.version\":\"" GPULOG_VERSION "\"");
    if (ev->path) {
        PUT_LIT(b, ",\"log.file.path\":");
        buf_put_json_str(b, ev->path, strlen(ev->path));
    }
    if (ev->offset >= 0) {
        PUT_LIT(b, ",\"log.offset\":");
        buf_put_i64(b, ev->offset);
    }
    for (size_t i = 0; i < ev->nf; i++) {
        const struct ev_field *f = &ev->f[i];
        size_t kl = strlen(f->key);
        if (key_is_plain(f->key)) {
            put_key(b, f->key, kl);
        } else {
            buf_putc(b, ',');
            buf_put_json_str(b, f->key, kl);
            buf_putc(b, ':');
        }
        switch (f->type) {
        case EV_INT: buf_put_i64(b, f->v.i); break;
        case EV_NUM: buf_put_double(b, f->v.d); break;
        case EV_BOOL: if (f->v.b) PUT_LIT(b, "true"); else PUT_LIT(b, "false"); break;
        case EV_STR: buf_put_json_str(b, ev->arena.p + f->v.s.off, f->v.s.len); break;
        }
    }
    if (ev->original) {
        PUT_LIT(b, ",\"event.original\":");
        buf_put_json_str(b, ev->original, ev->original_len);
    }
    buf_putc(b, '}');
}

/* ---------------------------------------------------------------- decoding */

/* Process-wide intern table for keys read from JSON. */
static char **intern_tab;
static size_t intern_n, intern_cap;

static const char *intern(const char *s)
{
    /* open addressing over a power-of-two table */
    if (intern_n * 2 >= intern_cap) {
        size_t ncap = intern_cap ? intern_cap * 2 : 256;
        char **nt = xcalloc(ncap, sizeof *nt);
        for (size_t i = 0; i < intern_cap; i++) {
            if (!intern_tab[i]) continue;
            size_t j = hash64(intern_tab[i], strlen(intern_tab[i]), 0) & (ncap - 1);
            while (nt[j]) j = (j + 1) & (ncap - 1);
            nt[j] = intern_tab[i];
        }
        free(intern_tab);
        intern_tab = nt;
        intern_cap = ncap;
    }
    size_t j = hash64(s, strlen(s), 0) & (intern_cap - 1);
    while (intern_tab[j]) {
        if (!strcmp(intern_tab[j], s)) return intern_tab[j];
        j = (j + 1) & (intern_cap - 1);
    }
    intern_tab[j] = xstrdup(s);
    intern_n++;
    return intern_tab[j];
}

const char *event_intern(const char *s);
const char *event_intern(const char *s)
{
    return intern(s);
}

int event_from_json(struct event *ev, const char *json, size_t len, char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    event_reset(ev);
    if (!root) {
        snprintf(err, errlen, "invalid JSON: %s (column %d)", je.text, je.column);
        return GL_ERROR;
    }
    if (!json_is_object(root)) {
        snprintf(err, errlen, "not a JSON object");
        json_decref(root);
        return GL_ERROR;
    }
    const char *key;
    json_t *val;
    int have_ts = 0;
    json_object_foreach(root, key, val) {
        if (!strcmp(key, "@timestamp")) {
            if (!json_is_string(val) ||
                gl_parse_iso_ts(json_string_value(val), json_string_length(val), &ev->ts_ms) != GL_OK) {
                snprintf(err, errlen, "bad @timestamp");
                json_decref(root);
                return GL_ERROR;
            }
            have_ts = 1;
        } else if ((!strcmp(key, "event.kind") || !strcmp(key, "event.dataset") ||
                    !strcmp(key, "event.id") || !strcmp(key, "event.created") ||
                    !strcmp(key, "host.name") || !strcmp(key, "log.file.path")) && !json_is_string(val)) {
            snprintf(err, errlen, "%s is not a string", key);
            json_decref(root);
            return GL_ERROR;
        } else if (!strcmp(key, "log.offset") && !json_is_integer(val)) {
            snprintf(err, errlen, "log.offset is not an integer");
            json_decref(root);
            return GL_ERROR;
        } else if (!strcmp(key, "event.kind") && json_is_string(val)) {
            ev->kind = intern(json_string_value(val));
        } else if (!strcmp(key, "event.dataset") && json_is_string(val)) {
            ev->dataset = intern(json_string_value(val));
        } else if (!strcmp(key, "event.id") && json_is_string(val)) {
            snprintf(ev->id, sizeof ev->id, "%s", json_string_value(val));
        } else if (!strcmp(key, "event.created") && json_is_string(val)) {
            gl_parse_iso_ts(json_string_value(val), json_string_length(val), &ev->created_ms);
        } else if (!strcmp(key, "host.name") && json_is_string(val)) {
            ev->host = intern(json_string_value(val));
        } else if (!strcmp(key, "log.file.path") && json_is_string(val)) {
            ev->path = intern(json_string_value(val));
        } else if (!strcmp(key, "log.offset") && json_is_integer(val)) {
            ev->offset = json_integer_value(val);
        } else if (!strcmp(key, "agent.name") || !strcmp(key, "agent.version")) {
            /* regenerated on output */
        } else if (json_is_integer(val)) {
            event_add_int(ev, intern(key), json_integer_value(val));
        } else if (json_is_real(val)) {
            event_add_num(ev, intern(key), json_real_value(val));
        } else if (json_is_boolean(val)) {
            event_add_bool(ev, intern(key), json_is_true(val));
        } else if (json_is_string(val)) {
            event_add_str(ev, intern(key), json_string_value(val), json_string_length(val));
        }
        /* nested objects, arrays and nulls are not part of schema v1: skipped */
    }
    json_decref(root);
    if (!have_ts) {
        snprintf(err, errlen, "missing @timestamp");
        return GL_ERROR;
    }
    return GL_OK;
}
