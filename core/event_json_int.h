/*
 * event_json_int.h - private to the decoders of schema-v1 JSON: the flat one
 * (event_json.c), its tokens (event_json_lex.c), jansson's reference
 * (event_json_ref.c) and the intern tables both use (event_intern.c). Not for
 * other modules: they use event.h.
 */
#ifndef GPULOG_EVENT_JSON_INT_H
#define GPULOG_EVENT_JSON_INT_H

#include "event.h"

/* The flat decoder's cursor over one message. */
struct jp {
    const char *p, *end;
    uint32_t nobj;            /* objects opened so far (0 = the top one) */
    const char *why;          /* the reason for a refusal */
};

static inline void jws(struct jp *j)
{
    /* compact JSON has none: one test for the common case */
    while (j->p < j->end && (unsigned char)*j->p <= ' ' &&
           (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}

/* A number or literal is done: jansson hands the byte after it back to its
 * stream, and a NUL byte handed back is lost (its stream buffer reads it as
 * empty), so one NUL right after a number, true, false or null is skipped
 * as jansson skips it. */
static inline void jafter_token(struct jp *j)
{
    if (j->p < j->end && *j->p == '\0') j->p++;
}

/* Tokens (event_json_lex.c): a valid UTF-8 sequence's length, four hex
 * digits, a number with jansson's grammar (EV_INT or EV_NUM, -1 with j->why),
 * true/false/null (1, 0, 2, or -1). */
size_t ej_utf8_len(const unsigned char *p, const unsigned char *end);
int ej_hex4(const char *p, const char *end);
int ej_jnum(struct jp *j, int64_t *iv, double *dv);
int ej_jlit(struct jp *j);

/* Intern tables (event_intern.c): a field key's interned copy (NULL once the
 * table is full and the key is new; h = hash64(s, n, 0)), a header string of
 * ev (interned, else ev's own copy in slot k: 0 host, 1 path, 2 dataset,
 * 3 kind), event.kind, and the count of fields dropped for a full table. */
const char *ej_intern_key(const char *s, size_t n, uint64_t h);
const char *ej_intern_key_cstr(const char *s);
const char *ej_ev_string(struct event *ev, int k, const char *s, size_t n);
const char *ej_ev_kind(struct event *ev, const char *s, size_t n);
void ej_field_dropped(void);

#endif
