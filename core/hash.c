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
    /* the last 0..7 bytes, little-endian, zero-extended: on a
     * little-endian machine the top of the word that ends with them, when
     * there is one (no byte loop) */
    uint64_t k = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (i < n && n >= 8) {
        memcpy(&k, p + n - 8, 8);
        k >>= 8 * (8 - (n - i));
    } else
#endif
    for (size_t j = 0; i + j < n; j++) k |= (uint64_t)p[i + j] << (8 * j);
    hash128_word(h, k ^ ((uint64_t)n << 56) ^ 0xA5);
}

void hash128_feed_u64(struct hash128 *h, uint64_t v)
{
    hash128_word(h, v);
}

void hash128_hex(const struct hash128 *h, char out[33])
{
    /* two hex digits per byte from a table (one per nibble was a quarter
     * of an event id's cost) */
    static const char hx2[513] =
        "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
        "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
        "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
        "606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f"
        "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
        "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
        "c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf"
        "e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";
    uint64_t a = fmix64(h->a + h->b), b = fmix64(h->b + 2 * h->a);
    for (int i = 0; i < 8; i++) {
        memcpy(out + 2 * i, hx2 + 2 * ((a >> (56 - 8 * i)) & 255), 2);
        memcpy(out + 16 + 2 * i, hx2 + 2 * ((b >> (56 - 8 * i)) & 255), 2);
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
