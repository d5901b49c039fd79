/*
 * event.h - the in-memory form of one schema-v1 event and its JSON encoding.
 *
 * An event is a fixed header (time, kind, dataset, source position) plus a
 * flat list of typed fields keyed by their dotted schema name
 * ("gpu.power.usage"). Field keys are borrowed: static strings or strings
 * owned by whoever filled the event (a parser's header table), valid until
 * that producer is fed again. String values are copied into the event's own
 * arena. The event owns its arrays; event_free releases them.
 */
#ifndef GPULOG_EVENT_H
#define GPULOG_EVENT_H

#include "common.h"

#include <string.h>

enum ev_type { EV_INT, EV_NUM, EV_STR, EV_BOOL };

struct ev_field {
    const char *key;
    enum ev_type type;
    uint32_t klen;          /* strlen(key) when the adder knew it (event_add_*_k), else 0: measured
                             * when needed; | EV_KLEN_PLAIN: the key needs no JSON escaping */
    union {
        int64_t i;
        double d;
        int b;
        struct { uint32_t off, len; } s;   /* into event.arena */
    } v;
};

struct event {
    int64_t ts_ms;          /* @timestamp */
    int64_t created_ms;     /* event.created; 0 = omit */
    const char *kind;       /* "metric", "event", "alert" */
    const char *dataset;    /* "gpu.dmon", ... */
    const char *host;       /* host.name; NULL = omit */
    const char *path;       /* log.file.path; NULL = omit */
    int64_t offset;         /* log.offset; -1 = omit */
    const char *original;   /* event.original (borrowed); NULL = omit */
    size_t original_len;
    char id[33];            /* event.id, 32 hex chars */
    size_t nf, capf;
    struct ev_field *f;
    struct buf arena;       /* string values */
    char *own[4];           /* event_from_json: host, path, dataset, kind copies once the intern table is full */
};

void event_init(struct event *ev);
void event_free(struct event *ev);
/* Clears fields and header for reuse; keeps allocations. */
void event_reset(struct event *ev);

void event_add_int(struct event *ev, const char *key, int64_t v);
void event_add_num(struct event *ev, const char *key, double v);
void event_add_bool(struct event *ev, const char *key, int v);
/* The same with the key's length known (klen == strlen(key), or
 * event_key_info(key): the length and whether the key needs escaping): the
 * hot path of the table parsers, whose header tables measure each key once,
 * so neither the schema check at emission nor the encoder measures (or
 * looks up) it again. */
#define EV_KLEN_PLAIN 0x80000000u
uint32_t event_key_info(const char *key);
void event_fields_grow(struct event *ev);
static inline struct ev_field *event_field_k(struct event *ev, const char *key, size_t klen, enum ev_type t)
{
    if (ev->nf == ev->capf) event_fields_grow(ev);
    struct ev_field *f = &ev->f[ev->nf++];
    f->key = key;
    f->type = t;
    f->klen = (uint32_t)klen;
    return f;
}
static inline void event_add_int_k(struct event *ev, const char *key, size_t klen, int64_t v)
{
    event_field_k(ev, key, klen, EV_INT)->v.i = v;
}
static inline void event_add_bool_k(struct event *ev, const char *key, size_t klen, int v)
{
    event_field_k(ev, key, klen, EV_BOOL)->v.b = v ? 1 : 0;
}
static inline void event_add_num_k(struct event *ev, const char *key, size_t klen, double v)
{
    event_field_k(ev, key, klen, EV_NUM)->v.d = v;
}
/* The length of f's key (its klen, or measured). */
static inline size_t event_key_len(const struct ev_field *f)
{
    return f->klen ? f->klen & ~EV_KLEN_PLAIN : strlen(f->key);
}
void event_add_str(struct event *ev, const char *key, const char *s, size_t n);
/* Replaces the value of key if present, else adds it. */
void event_set_str(struct event *ev, const char *key, const char *s, size_t n);

/* Lookup. Returns the field or NULL. */
const struct ev_field *event_get(const struct event *ev, const char *key);
/* Numeric value of an INT/NUM/BOOL field; returns 1 if found. */
int event_get_num(const struct event *ev, const char *key, double *out);
/* String value (not NUL-terminated: length in *n); NULL if absent. */
const char *event_get_str(const struct event *ev, const char *key, size_t *n);
static inline const char *event_str(const struct event *ev, const struct ev_field *f)
{
    return ev->arena.p + f->v.s.off;
}

/* Computes event.id from the source identity and position: host, source
 * name (path or "-"), generation, byte offset of the line, and the raw line
 * bytes. gen counts the files a tailed path has moved on to (rotation,
 * truncation): offsets restart in each, and without -o DT dmon writes the
 * same bytes at the same offset often. gen 0 (the first file, `parse`) is
 * not hashed, so those ids are what they always were. */
void event_make_id(struct event *ev, const char *host, const char *source,
                   uint64_t gen, int64_t offset, const char *line, size_t len);
/* Makes ev->id the id of the sub-th event of the same line (sub > 0): a
 * hash of the line's id and sub, so each event of a line that gives
 * several keeps an id of its own, the same on every replay. */
void event_id_sub(struct event *ev, uint64_t sub);

/* Decodes one JSON object produced by event_to_json (or any flat schema-v1
 * event) into ev (reset first). Keys and the
 * host, path and dataset strings are interned in a process-wide table of at
 * most EVENT_INTERN_MAX strings, so a stream of events costs no allocation
 * per field; once it is full, host/path/dataset are copied into the event
 * (freed by its next reset) and fields with keys not in the table are
 * dropped and counted (event_json_dropped, gpulog_fields_dropped_total):
 * memory stays bounded whatever keys a topic carries. GL_OK, or GL_ERROR
 * with the reason in err. */
#define EVENT_INTERN_MAX 65536
int event_from_json(struct event *ev, const char *json, size_t len, char *err, size_t errlen);
/* The same decoding through a jansson tree: the reference event_from_json
 * (a flat single-pass decoder, core/event_json.c) is checked against by the
 * differential fuzz target and measured against by the decode bench. */
int event_from_json_jansson(struct event *ev, const char *json, size_t len, char *err, size_t errlen);
/* Keys in the key table, and fields dropped because it was full. */
size_t event_json_interned(void);
uint64_t event_json_dropped(void);

/* Appends the event as one JSON object (no newline) to out. Keys are flat
 * dotted names in schema order: header first, then fields in insertion order. */
void event_to_json(const struct event *ev, struct buf *out);


#endif
