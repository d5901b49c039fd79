/*
 * fuzz_ckpt.c - libFuzzer target: the collector's checkpoint loader
 * (ingest/checkpoint.c) over arbitrary bytes. A checkpoint is a file gpulog
 * reads back after a crash, so a damaged one must be refused with a reason,
 * never crash; whatever is accepted must save and load again to the same
 * values (save is a fixed point).
 */
#include "../../ingest/source.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same(const struct ckpt *a, const struct ckpt *b)
{
#define DIFF(x) if (x) { fprintf(stderr, "fuzz: differs: %s\n", #x); return 0; }
    DIFF(a->offset != b->offset) DIFF(a->gen != b->gen) DIFF(a->kmsg_seq != b->kmsg_seq) DIFF(strcmp(a->boot_id, b->boot_id))
    DIFF(a->hdr_len != b->hdr_len) DIFF(a->floor_ns != b->floor_ns) DIFF(a->size != b->size) DIFF(strcmp(a->fp, b->fp))
    if (a->dev != b->dev || a->ino != b->ino || strcmp(a->fp, b->fp) || a->fp_len != b->fp_len ||
        a->offset != b->offset || a->gen != b->gen || a->kmsg_seq != b->kmsg_seq || strcmp(a->boot_id, b->boot_id) ||
        a->hdr_len != b->hdr_len || memcmp(a->hdr, b->hdr, a->hdr_len) || a->floor_ns != b->floor_ns ||
        a->size != b->size || a->finished != b->finished || a->ndone != b->ndone || a->nseen != b->nseen)
        return 0;
    for (uint32_t i = 0; i < a->ndone; i++)
        if (a->done[i].dev != b->done[i].dev || a->done[i].ino != b->done[i].ino || strcmp(a->done[i].fp, b->done[i].fp) ||
            a->done[i].fp_len != b->done[i].fp_len || a->done[i].end != b->done[i].end || a->done[i].flags != b->done[i].flags)
            return 0;
    for (uint32_t i = 0; i < a->nseen; i++)
        if (a->seen[i].ino != b->seen[i].ino || strcmp(a->seen[i].fp, b->seen[i].fp)) return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char dir[64];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/fuzz-ckpt.XXXXXX");
        if (!mkdtemp(dir)) abort();
    }
    char in[128], out[128], err[512];
    snprintf(in, sizeof in, "%s/in", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    FILE *f = fopen(in, "wb");
    if (!f) abort();
    if (size) fwrite(data, 1, size, f);
    fclose(f);
    static struct ckpt a, b;
    err[0] = '\0';
    int rc = ckpt_load(in, &a, err, sizeof err);
    if (rc == GL_ERROR && !strstr(err, in)) {
        fprintf(stderr, "fuzz: refusal without the file name: '%s'\n", err);
        abort();
    }
    if (rc == GL_OK) {
        if (ckpt_save(out, &a, err, sizeof err) != GL_OK) { fprintf(stderr, "fuzz: save failed: %s\n", err); abort(); }
        if (ckpt_load(out, &b, err, sizeof err) != GL_OK) { fprintf(stderr, "fuzz: saved checkpoint refused: %s\n", err); abort(); }
        if (!same(&a, &b)) { fprintf(stderr, "fuzz: save/load is not a fixed point\n"); abort(); }
    }
    unlink(in);
    unlink(out);
    return 0;
}
