/*
 * fuzz_common.h - shared body of the parser fuzz targets (libFuzzer and the
 * replay main in replay.c).
 *
 * fuzz_parser() splits the input into lines as the line reader does (LF,
 * optional CR stripped), feeds them to a fresh parser, flushes it, and for
 * every emitted event checks the invariants of schema v1 on the JSON text:
 * it parses (jansson, UTF-8 checked), is an object, has the header keys, no
 * value is null (missing values are absent; NaN/Inf would be written as
 * null) and no key appears twice; and the ranges of the schema (issue 15
 * item 11): @timestamp in 1970..2099, every number storable as a float,
 * *.pct within 0..100 and numbers there (not text), power, clocks, sizes,
 * counts and codes not negative.
 * Any violation abort()s so the fuzzer (or the replay) reports the input.
 */
#ifndef GPULOG_FUZZ_COMMON_H
#define GPULOG_FUZZ_COMMON_H

#include "../../parsers/parser.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct buf fuzz_json;

/* Checks one encoded event; aborts with the text on a violation. */
static inline void fuzz_check_json(const char *s, size_t n)
{
    json_error_t je;
    json_t *j = json_loadb(s, n, JSON_REJECT_DUPLICATES, &je);
    const char *why = NULL;
    if (!j) why = je.text;
    else if (!json_is_object(j)) why = "not an object";
    else if (!json_is_string(json_object_get(j, "@timestamp")) ||
             json_string_length(json_object_get(j, "@timestamp")) != 24) why = "bad @timestamp";
    else if (!json_is_string(json_object_get(j, "event.id")) ||
             json_string_length(json_object_get(j, "event.id")) != 32) why = "bad event.id";
    else if (!json_is_string(json_object_get(j, "event.kind"))) why = "no event.kind";
    else if (!json_is_string(json_object_get(j, "event.dataset"))) why = "no event.dataset";
    else {
        const char *k;
        json_t *v;
        const char *ts = json_string_value(json_object_get(j, "@timestamp"));
        if (ts[0] < '0' || ts[0] > '9' || ts[4] != '-') why = "@timestamp without a 4-digit year";
        else if (strncmp(ts, "1970", 4) < 0 || strncmp(ts, "2099", 4) > 0) why = "@timestamp outside 1970..2099";
        json_object_foreach(j, k, v) {
            if (why) break;
            if (json_is_null(v)) { why = "null value (missing values must be absent)"; break; }
            if (!*k) { why = "empty key"; break; }
            size_t kl = strlen(k);
            if (json_is_string(v) && kl > 4 && !strcmp(k + kl - 4, ".pct")) { why = "text where the schema wants a number"; break; }
            if (!json_is_number(v)) continue;
            double d = json_number_value(v);
            if (!(d >= -3.4028234663852886e38 && d <= 3.4028234663852886e38)) why = "a number no float can hold";
            else if (kl > 4 && !strcmp(k + kl - 4, ".pct") && (d < 0 || d > 100)) why = "a percentage outside 0..100";
            else if (d < 0 && (strstr(k, "power.") || strstr(k, "clock.") || strstr(k, "_size") || strstr(k, ".count") ||
                               strstr(k, "throughput") || !strcmp(k, "gpu.index") || strstr(k, "xid.code") ||
                               !strcmp(k, "process.pid"))) why = "a negative value the schema forbids";
        }
    }
    if (why) {
        fprintf(stderr, "fuzz: invalid event JSON: %s\n%.*s\n", why, (int)(n > 2000 ? 2000 : n), s);
        abort();
    }
    json_decref(j);
}

static inline void fuzz_emit(void *ctx, const struct event *ev)
{
    (void)ctx;
    buf_reset(&fuzz_json);
    event_to_json(ev, &fuzz_json);
    fuzz_check_json(fuzz_json.p, fuzz_json.len);
}

/* Runs data through a new parser of ops (columns: --columns or NULL). */
static inline void fuzz_parser(const struct parser_ops *ops, const char *columns,
                        const uint8_t *data, size_t size)
{
    static int init;
    if (!init) {
        gl_tz_set("UTC");
        buf_init(&fuzz_json);
        init = 1;
    }
    struct parser *p = parser_new(ops, fuzz_emit, NULL);
    p->opt_columns = columns;
    struct line_src src = {
        .host = "fuzz-host", .path = "/fuzz/input", .source = "/fuzz/input",
        .now_ms = 1750000000000LL,
    };
    const char *s = (const char *)data;
    size_t off = 0;
    uint64_t lineno = 0;
    while (off < size) {
        const char *nl = memchr(s + off, '\n', size - off);
        size_t n = nl ? (size_t)(nl - (s + off)) : size - off;
        size_t len = n;
        if (len && s[off + len - 1] == '\r') len--;
        src.offset = (int64_t)off;
        src.lineno = ++lineno;
        src.keep_original = (int)(lineno & 1);
        /* a private copy so reads past the line are caught by ASan */
        char *line = malloc(len ? len : 1);
        if (len) memcpy(line, s + off, len);
        int rc = parser_feed(p, &src, line, len);
        if (rc != GL_OK && rc != GL_DECLINED && rc != GL_ERROR) {
            fprintf(stderr, "fuzz: parser_feed returned %d\n", rc);
            abort();
        }
        if (rc == GL_ERROR && !p->err[0]) {
            fprintf(stderr, "fuzz: line rejected without a reason (line %llu)\n", (unsigned long long)lineno);
            abort();
        }
        free(line);
        off += n + 1;
    }
    parser_flush(p);
    if (p->stats.lines != lineno) {
        fprintf(stderr, "fuzz: stats.lines %llu != %llu\n",
                (unsigned long long)p->stats.lines, (unsigned long long)lineno);
        abort();
    }
    parser_free(p);
}

#endif
