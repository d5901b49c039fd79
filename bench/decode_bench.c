/*
 * decode_bench.c - decode-only throughput of schema-v1 JSON events on one
 * core: the flat decoder (event_from_json) against the jansson tree
 * (event_from_json_jansson) on the same lines in the same run, best of
 * ROUNDS passes each, alternating. Every line must decode with both.
 *   decode_bench FILE.ndjson [ROUNDS]     (ROUNDS default 3)
 * Prints one line per decoder: events, best seconds, events/s, ns/event.
 * DECODE_BENCH_FLAT_ONLY=1 runs the flat decoder alone (for a profiler).
 */
#include "../core/event.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int (*decode_fn)(struct event *, const char *, size_t, char *, size_t);

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One pass of fn over the n lines of text (offsets in at); returns CPU
 * seconds, or -1 when a line is refused. */
static double pass(decode_fn fn, const char *text, const size_t *at, size_t n, size_t *fields)
{
    struct event ev;
    event_init(&ev);
    char err[GL_ERRLEN];
    size_t nf = 0;
    double t0 = cpu_now();
    for (size_t i = 0; i < n; i++) {
        if (fn(&ev, text + at[i], at[i + 1] - at[i] - 1, err, sizeof err) != GL_OK) {
            fprintf(stderr, "decode_bench: line %zu refused: %s\n", i + 1, err);
            event_free(&ev);
            return -1;
        }
        nf += ev.nf;
    }
    double t = cpu_now() - t0;
    event_free(&ev);
    *fields = nf;
    return t;
}

int main(int argc, char **argv)
{
    if (argc < 2) { fprintf(stderr, "usage: decode_bench FILE.ndjson [ROUNDS]\n"); return 2; }
    int rounds = argc > 2 ? atoi(argv[2]) : 3;
    gl_tz_set("UTC");
    FILE *f = fopen(argv[1], "rb");
    if (!f) { perror(argv[1]); return 1; }
    struct buf text;
    buf_init(&text);
    char chunk[1 << 16];
    size_t k;
    while ((k = fread(chunk, 1, sizeof chunk, f)) > 0) buf_append(&text, chunk, k);
    fclose(f);
    size_t n = 0, cap = 1024;
    size_t *at = xmalloc(cap * sizeof *at);
    at[0] = 0;
    for (size_t i = 0; i < text.len; i++) {
        if (text.p[i] != '\n') continue;
        if (n + 2 >= cap) at = xrealloc(at, (cap *= 2) * sizeof *at);
        at[++n] = i + 1;
    }
    if (!n) { fprintf(stderr, "decode_bench: no lines in %s\n", argv[1]); return 1; }
    const char *names[2] = { "jansson tree (before)", "flat decoder" };
    decode_fn fns[2] = { event_from_json_jansson, event_from_json };
    double best[2] = { -1, -1 };
    size_t fields[2] = { 0, 0 };
    for (int r = 0; r < rounds; r++) {
        for (int d = getenv("DECODE_BENCH_FLAT_ONLY") ? 1 : 0; d < 2; d++) {
            double t = pass(fns[d], text.p, at, n, &fields[d]);
            if (t < 0) return 1;
            if (best[d] < 0 || t < best[d]) best[d] = t;
        }
    }
    if (getenv("DECODE_BENCH_FLAT_ONLY")) return 0;   /* for profiling */
    if (fields[0] != fields[1]) {
        fprintf(stderr, "decode_bench: the decoders disagree: %zu vs %zu fields\n", fields[0], fields[1]);
        return 1;
    }
    printf("  %zu events (%.1f MB), %zu fields; best of %d passes, CPU time, one core\n", n, text.len / 1e6,
           fields[0], rounds);
    for (int d = 0; d < 2; d++)
        printf("  %-24s %8.3f s %12.0f events/s %8.0f ns/event\n", names[d], best[d], n / best[d],
               best[d] * 1e9 / n);
    printf("  speed-up: %.1fx\n", best[0] / best[1]);
    free(at);
    buf_free(&text);
    return 0;
}
