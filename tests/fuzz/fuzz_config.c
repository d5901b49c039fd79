/*
 * fuzz_config.c - libFuzzer target: the configuration loader over arbitrary
 * bytes. Refusals must carry a FILE:LINE:COL reason; whatever is accepted
 * must print (unmasked) to YAML that loads again and prints identically.
 */
#include "../../core/config.h"
#include "../../core/common.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gpulog_config a, b;
    char err[2048];
    config_defaults(&a);
    config_defaults(&b);
    int rc = config_load_string("f", (const char *)data, size, &a, err, sizeof err);
    if (rc != GL_OK && strncmp(err, "f:", 2)) {
        fprintf(stderr, "fuzz: refusal without a location: '%s'\n", err);
        abort();
    }
    struct buf p1, p2;
    buf_init(&p1);
    buf_init(&p2);
    config_print(&a, 1, &p1);     /* masked printing works on any state */
    buf_reset(&p1);
    config_print(&a, 0, &p1);
    if (rc == GL_OK) {
        if (config_load_string("printed", p1.p, p1.len, &b, err, sizeof err) != GL_OK) {
            fprintf(stderr, "fuzz: printed configuration refused: %s\n%s\n", err, p1.p);
            abort();
        }
        config_print(&b, 0, &p2);
        if (strcmp(p1.p, p2.p)) {
            fprintf(stderr, "fuzz: print is not a fixed point:\n%s\n---\n%s\n", p1.p, p2.p);
            abort();
        }
    }
    buf_free(&p1);
    buf_free(&p2);
    config_free(&a);
    config_free(&b);
    return 0;
}
