/* hash.c - 128-bit and 64-bit hashes for ids and tables (see common.h). */
#include "common.h"

#include <string.h>

/* ---------------------------------------------------------------- hashing */

static inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static inline uint64_t fmix64(uint64_t k)
{
    k ^= k >> 33; k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33; k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return k;
}

void hash128_init(struct hash128 *h)
{
    h->a = 0x9E3779B97F4A7C15ULL;
    h->b = 0xC2B2AE3D27D4EB4FULL;
}

static inline void hash128_word(struct hash128 *h, uint64_t k)
{
    h->a ^= rotl64(k * 0x87c37b91114253d5ULL, 31) * 0x4cf5ad432745937fULL;
    h->a = rotl64(h->a, 27) + h->b;
    h->a = h->a * 5 + 0x52dce729;
    h->b ^= rotl64(k * 0x4cf5ad432745937fULL, 33) * 0x87c37b91114253d5ULL;
    h->b = rotl64(h->b, 31) + h->a;
    h->b = h->b * 5 + 0x38495ab5;
}

void hash128_feed(struct hash128 *h, const void *data, size_t n)
{
    const unsigned char *p = data;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t k;
        memcpy(&k, p + i, 8);
        hash128_word(h, k);
    }
    uint64_t k = 0;
    for (size_t j = 0; i + j < n; j++) k |= (uint64_t)p[i + j] << (8 * j);
    hash128_word(h, k ^ ((uint64_t)n << 56) ^ 0xA5);
}

void hash128_feed_u64(struct hash128 *h, uint64_t v)
{
    hash128_word(h, v);
}

void hash128_hex(const struct hash128 *h, char out[33])
{
    static const char hx[] = "0123456789abcdef";
    uint64_t a = fmix64(h->a + h->b), b = fmix64(h->b + 2 * h->a);
    for (int i = 0; i < 16; i++) {
        out[i] = hx[(a >> (60 - 4 * i)) & 15];
        out[16 + i] = hx[(b >> (60 - 4 * i)) & 15];
    }
    out[32] = '\0';
}

uint64_t hash64(const void *data, size_t n, uint64_t seed)
{
    struct hash128 h;
    hash128_init(&h);
    hash128_word(&h, seed);
    hash128_feed(&h, data, n);
    return fmix64(h.a ^ h.b);
}
