/*
 * u64map.h - a hash multimap from 64-bit keys (usually hash64 of a name or
 * of a device and inode) to 32-bit values (usually an index into the
 * caller's array): open addressing over a power-of-two table, grown at half
 * full. Keys may repeat: a lookup walks every value stored under its key,
 * and the caller checks each one against what the key was made from (two
 * names can share a hash). Nothing is ever removed; u64map_clear empties it
 * for a rebuild.
 *
 * Ownership: the map owns its table; u64map_free releases it.
 */
#ifndef GPULOG_U64MAP_H
#define GPULOG_U64MAP_H

#include <stddef.h>
#include <stdint.h>

struct u64map {
    uint64_t *k;
    uint32_t *v;              /* value + 1; 0 = empty slot */
    size_t cap, n;
};

void u64map_init(struct u64map *m);
void u64map_free(struct u64map *m);
/* Empties the map, keeping its table. */
void u64map_clear(struct u64map *m);
/* Adds val (< UINT32_MAX) under key. */
void u64map_add(struct u64map *m, uint64_t key, uint32_t val);
/* The values under key, one per call: start with *it = 0; 1 with *val set,
 * 0 when there are no more. */
int u64map_next(const struct u64map *m, uint64_t key, size_t *it, uint32_t *val);

#endif
