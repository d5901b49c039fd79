/*
 * event_intern.c - the process-wide intern tables of the JSON decoders
 * (event_json.c, event_json_ref.c): field keys, and host/path/dataset/kind
 * values, bounded, never freed.
 */
#include "event_json_int.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Process-wide intern tables for strings read from JSON: one for field
 * keys (at most EVENT_INTERN_MAX), one for host/path/dataset values (at most
 * 4 x that), so a fleet of many hosts never crowds out keys. Never freed:
 * cached pointers stay valid. */
struct itab {
    char **tab;
    size_t n, cap, max;
};
static struct itab keys_tab = { .max = EVENT_INTERN_MAX }, vals_tab = { .max = 4 * EVENT_INTERN_MAX };
static _Atomic uint64_t dropped_fields;

size_t event_json_interned(void) { return keys_tab.n; }
uint64_t event_json_dropped(void) { return dropped_fields; }

/* The interned copy of s[0..n) (hash h = hash64(s, n, 0); s holds no NUL) in
 * t, or NULL when s is new and t is full. */
static const char *intern(struct itab *t, const char *s, size_t n, uint64_t h)
{
    /* open addressing over a power-of-two table */
    if (t->n * 2 >= t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 256;
        char **nt = xcalloc(ncap, sizeof *nt);
        for (size_t i = 0; i < t->cap; i++) {
            if (!t->tab[i]) continue;
            size_t j = hash64(t->tab[i], strlen(t->tab[i]), 0) & (ncap - 1);
            while (nt[j]) j = (j + 1) & (ncap - 1);
            nt[j] = t->tab[i];
        }
        free(t->tab);
        t->tab = nt;
        t->cap = ncap;
    }
    size_t j = h & (t->cap - 1);
    while (t->tab[j]) {
        if (!strncmp(t->tab[j], s, n) && t->tab[j][n] == '\0') return t->tab[j];   /* s holds no NUL */
        j = (j + 1) & (t->cap - 1);
    }
    if (t->n >= t->max) return NULL;
    t->tab[j] = xstrndup(s, n);
    t->n++;
    return t->tab[j];
}

static const char *intern_cstr(struct itab *t, const char *s)
{
    size_t n = strlen(s);
    return intern(t, s, n, hash64(s, n, 0));
}

/* A header string of ev (host, path, dataset, kind): interned, or once the
 * value table is full a copy the event owns in slot k. */
const char *ej_ev_string(struct event *ev, int k, const char *s, size_t n)
{
    /* a stream repeats its host, path and dataset: the last one per slot
     * is answered without hashing (the decoders run on one thread) */
    static const char *last[4];
    static size_t lastn[4];
    if (last[k] && lastn[k] == n && !memcmp(last[k], s, n)) return last[k];
    const char *p = intern(&vals_tab, s, n, hash64(s, n, 0));
    if (p) {
        last[k] = p;
        lastn[k] = n;
        return p;
    }
    free(ev->own[k]);
    ev->own[k] = xstrndup(s, n);
    return ev->own[k];
}

/* event.kind: the three schema-v1 kinds are static strings. */
const char *ej_ev_kind(struct event *ev, const char *s, size_t n)
{
    if (n == 6 && !memcmp(s, "metric", 6)) return "metric";
    if (n == 5 && !memcmp(s, "alert", 5)) return "alert";
    if (n == 5 && !memcmp(s, "event", 5)) return "event";
    return ej_ev_string(ev, 3, s, n);
}

const char *event_intern(const char *s);
const char *event_intern(const char *s)
{
    const char *p = intern_cstr(&keys_tab, s);
    return p ? p : "";
}

/* The flat decoder's handle on the key table. */
const char *ej_intern_key(const char *s, size_t n, uint64_t h) { return intern(&keys_tab, s, n, h); }

const char *ej_intern_key_cstr(const char *s) { return intern_cstr(&keys_tab, s); }

/* A field dropped because the key table is full (gpulog_fields_dropped_total). */
void ej_field_dropped(void) { dropped_fields++; }

