/*
 * jsonbytes.h - which bytes a JSON string carries as they are (anything
 * but a control character, '"', '\\' or a non-ASCII byte), tested 8 or 16
 * at a time: the one test the encoder (core/event.c: keys and strings that
 * need no escaping) and the decoder (core/event_json.c: the plain run of a
 * string) share with buf_put_json_str's byte loop.
 */
#ifndef GPULOG_JSONBYTES_H
#define GPULOG_JSONBYTES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* Nonzero when a byte of the 8 in w is one a JSON string escapes: below
 * 0x20, 0x80 and above, '"' or '\\' (exact: borrows never cross into a byte
 * that counts, the classic has-zero/has-less tests). */
static inline uint64_t json_bad8(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
    uint64_t q = w ^ (ones * '"'), bs = w ^ (ones * '\\');
    return (w & high) | ((w - ones * 0x20) & ~w & high) | ((q - ones) & ~q & high) | ((bs - ones) & ~bs & high);
}

/* 1 when the n bytes at s go into a JSON string as they are (no control
 * character, quote, backslash or non-ASCII byte: buf_put_json_str would
 * copy them unchanged): 16 at a time where SSE2 is there, else 8 at a time,
 * the last block overlapping the one before; nothing outside s read. */
static inline int json_plain(const char *s, size_t n)
{
    size_t i = 0;
#ifdef __SSE2__
    if (n >= 16) {
        const __m128i sp = _mm_set1_epi8(0x20), q = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\');
        for (;; i += 16) {
            if (i + 16 > n) i = n - 16;
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
            /* signed: bytes >= 0x80 are below 0x20 too */
            __m128i bad = _mm_or_si128(_mm_cmplt_epi8(v, sp), _mm_or_si128(_mm_cmpeq_epi8(v, q), _mm_cmpeq_epi8(v, bs)));
            if (_mm_movemask_epi8(bad)) return 0;
            if (i + 16 >= n) return 1;
        }
    }
#endif
    if (n >= 8) {
        uint64_t w;
        for (;; i += 8) {
            if (i + 8 > n) i = n - 8;
            memcpy(&w, s + i, 8);
            if (json_bad8(w)) return 0;
            if (i + 8 >= n) return 1;
        }
    }
    if (n >= 4) {   /* two overlapping words of 4 */
        uint32_t a, b;
        memcpy(&a, s, 4);
        memcpy(&b, s + n - 4, 4);
        return !json_bad8((uint64_t)a | (uint64_t)b << 32);
    }
    for (; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\') return 0;
    }
    return 1;
}

#endif
