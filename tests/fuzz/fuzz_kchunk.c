/*
 * fuzz_kchunk.c - libFuzzer target: the reader of chunked state-topic values
 * (ingest/kchunk.c). The input is a topic: messages "[key length: 1 byte]
 * [key][value length: 2 bytes LE][value]" in offset order (a length past the
 * end ends it), read for the keys "t/0" and "t/1": a value must come back
 * whole (1), absent (0) or refused with a reason (-1), never a crash. Then
 * the input as a whole is written under "t/2" (chunks of 25 + data[0] bytes,
 * after the messages above) and must read back byte for byte (empty: a
 * tombstone, read back as none).
 */
#include "../../ingest/kchunk.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The messages kchunk_write makes, fed straight to a reader. */
static int to_reader(void *ctx, const char *key, const void *val, size_t len)
{
    kchunk_rd_feed(ctx, key, strlen(key), val, len);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *keys[] = { "t/0", "t/1", "t/2" };
    struct kchunk_rd *r = kchunk_rd_new(keys, 3);
    size_t at = 0;
    while (at < size) {
        size_t kl = data[at++];
        if (at + kl + 2 > size) break;
        const uint8_t *k = data + at;
        at += kl;
        size_t vl = (size_t)data[at] | (size_t)data[at + 1] << 8;
        at += 2;
        if (at + vl > size) break;
        kchunk_rd_feed(r, k, kl, data + at, vl);
        at += vl;
    }
    struct kchunk_keys ch = { 0 }, live = { 0 };
    if (kchunk_write("t/2", data, size, 25 + (size ? data[0] : 0), 7, to_reader, r, &ch) < 0) abort();
    struct buf v;
    buf_init(&v);
    for (size_t i = 0; i < 3; i++) {
        char why[256] = "";
        int rc = kchunk_rd_value(r, i, &v, &live, why, sizeof why);
        if (rc < 0 && (!why[0] || v.len)) abort();   /* a refusal has a reason and no value */
        /* (an empty value is a tombstone: none) */
        if (i == 2 && (rc != (size > 0) || v.len != size || (size && memcmp(v.p, data, size)))) abort();
    }
    buf_free(&v);
    kchunk_keys_free(&ch);
    kchunk_keys_free(&live);
    kchunk_rd_free(r);
    return 0;
}
