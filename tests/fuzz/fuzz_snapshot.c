/*
 * fuzz_snapshot.c - libFuzzer target: the detector state snapshot decoder
 * (detect/snapshot.c). The input is a snapshot's payload: its first 4 bytes
 * the GPU count (little-endian), the rest the raw payload, which the target
 * wraps with a valid header (the default GPU profile's fingerprint, size,
 * CRC: snapshot_wrap) so that the fuzzer reaches past the CRC into the
 * decoder; the input once more as a whole snapshot (header included) tests
 * the header checks. A refusal must carry a reason and leave the partition
 * empty; an accepted snapshot must give an engine that takes samples
 * without undefined behaviour and saves a snapshot that loads again.
 */
#include "../../detect/snapshot.h"
#include "../../core/common.h"
#include "../../core/event.h"
#include "../engine_harness.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void drop(void *ctx, const struct event *rec) { (void)ctx; (void)rec; }

/* A few samples for the GPUs a snapshot may hold (host "n1", GPUs 0-1). */
static void exercise(struct engine *e)
{
    for (int i = 0; i < 4; i++)
        for (int g = 0; g < 2; g++)
            sample_tagged(e, 1, "n1", g, i + 100, "gpu.temperature.gpu", 50.0 + 20 * i, "gpu.power.usage", 300.0,
                          "gpu.pcie.replay", 10.0 * i, NULL);
    engine_flush(e);
}

/* Loads one snapshot into a fresh engine and checks the outcome. */
static void try_load(struct profile *p, const void *snap, size_t len)
{
    struct engine *e = engine_new(p, drop, NULL);
    char err[512] = "";
    int64_t off = 0;
    enum snap_refusal r = snapshot_load(e, 1, snap, len, &off, err, sizeof err);
    if (r != SNAP_OK) {
        if (strncmp(err, "snapshot: ", 10) || engine_get_stats(e)->gpus || engine_get_stats(e)->open) {
            fprintf(stderr, "fuzz: refusal without a reason or with state left: '%s'\n", err);
            abort();
        }
    } else {
        exercise(e);
        struct buf again;
        buf_init(&again);
        if (snapshot_save(e, 1, off, &again, err, sizeof err) != GL_OK) { fprintf(stderr, "fuzz: save: %s\n", err); abort(); }
        struct engine *e2 = engine_new(p, drop, NULL);
        if (snapshot_load(e2, 1, again.p, again.len, NULL, err, sizeof err) != SNAP_OK) {
            fprintf(stderr, "fuzz: a saved snapshot is refused: %s\n", err);
            abort();
        }
        engine_free(e2);
        buf_free(&again);
    }
    engine_free(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct profile *p;
    if (!p) {
        char err[256];
        gl_log_level = GL_LOG_ERROR;
        p = profile_load(NULL, "gpu", err, sizeof err);
        if (!p) abort();
    }
    try_load(p, data, size);
    if (size < 4) return 0;
    uint32_t ngpus = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 | (uint32_t)data[3] << 24;
    struct engine *e = engine_new(p, drop, NULL);
    struct buf snap;
    buf_init(&snap);
    char err[256];
    if (snapshot_wrap(e, 7, ngpus, data + 4, size - 4, &snap, err, sizeof err) != GL_OK) abort();
    engine_free(e);
    try_load(p, snap.p, snap.len);
    buf_free(&snap);
    return 0;
}
