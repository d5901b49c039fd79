/*
 * fuzz_detectors.c - libFuzzer target: the detector-file loader
 * (profile_load) over arbitrary bytes, as a YAML and as a JSON file.
 * Refusals must name the file (most with LINE:COL); an accepted file must
 * compile into an engine that takes samples without undefined behaviour
 * (every number it accepts is range-checked: issue 15 item 13).
 */
#include "../../detect/engine.h"
#include "../../core/common.h"
#include "../../core/event.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void drop(void *ctx, const struct event *rec) { (void)ctx; (void)rec; }

/* Feeds a short two-GPU trace with a gap, a step back in time and a spike. */
static void exercise(struct profile *p)
{
    struct engine *e = engine_new(p, drop, NULL);
    static const int64_t steps[] = { 0, 1000, 2000, 500, 3000, 900000, 901000, 902000 };
    for (size_t i = 0; i < sizeof steps / sizeof *steps; i++)
        for (int g = 0; g < 2; g++) {
            struct event ev;
            event_init(&ev);
            ev.kind = "metric"; ev.dataset = "gpu.dmon"; ev.host = "h"; ev.offset = -1;
            ev.ts_ms = 1700000000000LL + steps[i];
            event_add_int(&ev, "gpu.index", g);
            event_add_num(&ev, "gpu.temperature.gpu", i == 5 ? 99 : 60 + (double)g);
            event_add_num(&ev, "gpu.power.usage", 300);
            event_add_num(&ev, "gpu.utilization.gpu.pct", 95);
            event_add_num(&ev, "gpu.ecc.single_bit.count", (double)i * 7);
            engine_feed(e, &ev);
            event_free(&ev);
        }
    engine_flush(e);
    engine_free(e);
}

static char dir[512];

/* Removes the scratch folder at exit. */
static void rm_dir(void) { rmdir(dir); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {   /* a scratch folder under $GPULOG_TEST_TMP, $TMPDIR or /tmp */
        const char *t = getenv("GPULOG_TEST_TMP");
        if (!t || !*t) t = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/gpulog-fuzz-det-XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(dir)) abort();
        atexit(rm_dir);
    }
    static const char *const ext[] = { "yaml", "json" };
    for (int k = 0; k < 2; k++) {
        char path[sizeof dir + 16];
        snprintf(path, sizeof path, "%s/d.%s", dir, ext[k]);
        FILE *f = fopen(path, "wb");
        if (!f) abort();
        if (size) fwrite(data, 1, size, f);
        fclose(f);
        char err[GL_ERRLEN];
        err[0] = '\0';
        struct profile *p = profile_load(path, "gpu", err, sizeof err);
        unlink(path);
        if (!p) {
            if (strncmp(err, path, strlen(path))) {
                fprintf(stderr, "fuzz: refusal without the file name: '%s'\n", err);
                abort();
            }
            continue;
        }
        exercise(p);
        profile_free(p);
    }
    return 0;
}
