/* u64map.c - a hash multimap of 64-bit keys to 32-bit values (u64map.h). */
#include "u64map.h"
#include "common.h"

#include <stdlib.h>
#include <string.h>

void u64map_init(struct u64map *m) { memset(m, 0, sizeof *m); }

void u64map_free(struct u64map *m)
{
    free(m->k);
    free(m->v);
    memset(m, 0, sizeof *m);
}

void u64map_clear(struct u64map *m)
{
    if (m->v) memset(m->v, 0, m->cap * sizeof *m->v);
    m->n = 0;
}

/* The slot a key starts its probe at (the keys are hashes already, but a
 * caller's sequential values must not cluster). */
static size_t home(const struct u64map *m, uint64_t key)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return (size_t)key & (m->cap - 1);
}

static void put(struct u64map *m, uint64_t key, uint32_t v1)
{
    size_t i = home(m, key);
    while (m->v[i]) i = (i + 1) & (m->cap - 1);
    m->k[i] = key;
    m->v[i] = v1;
    m->n++;
}

void u64map_add(struct u64map *m, uint64_t key, uint32_t val)
{
    if ((m->n + 1) * 2 > m->cap) {
        struct u64map old = *m;
        m->cap = old.cap ? old.cap * 2 : 64;
        m->k = xmalloc(m->cap * sizeof *m->k);
        m->v = xcalloc(m->cap, sizeof *m->v);
        m->n = 0;
        for (size_t i = 0; i < old.cap; i++)
            if (old.v[i]) put(m, old.k[i], old.v[i]);
        free(old.k);
        free(old.v);
    }
    put(m, key, val + 1);
}

int u64map_next(const struct u64map *m, uint64_t key, size_t *it, uint32_t *val)
{
    if (!m->cap) return 0;
    /* *it: probes done so far from the key's home slot */
    for (size_t i = (home(m, key) + *it) & (m->cap - 1); m->v[i] && *it < m->cap; i = (i + 1) & (m->cap - 1)) {
        ++*it;
        if (m->k[i] == key) { *val = m->v[i] - 1; return 1; }
    }
    return 0;
}
