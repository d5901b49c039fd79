/*
 * common.h - return codes, allocation, growable buffers, logging, hashing
 * and time helpers shared by every gpulog module.
 *
 * Ownership: a struct buf owns its bytes; buf_free releases them. xmalloc and
 * friends never return NULL (they abort with a message on out-of-memory).
 */
#ifndef GPULOG_COMMON_H
#define GPULOG_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>

#define GPULOG_VERSION "0.1.0"

/* One vocabulary of return codes (nginx style). */
#define GL_OK        0
#define GL_ERROR    -1   /* failed; reason in an errstr */
#define GL_AGAIN    -2   /* nothing yet, try later */
#define GL_DONE     -3   /* end of input */
#define GL_DECLINED -4   /* not an error: input ignored on purpose (header, blank) */

#define GL_ERRLEN 256

/* Allocation that aborts on failure. Caller owns the result. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t sz);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

/* Growable byte buffer; always NUL-terminated after any append. */
struct buf {
    char  *p;
    size_t len;
    size_t cap;
};
void buf_init(struct buf *b);
void buf_free(struct buf *b);
void buf_reset(struct buf *b);
void buf_grow(struct buf *b, size_t extra);
void buf_append(struct buf *b, const void *data, size_t n);
void buf_puts(struct buf *b, const char *s);
void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void buf_putc(struct buf *b, char c)
{
    if (b->len + 2 > b->cap) buf_grow(b, 1);
    b->p[b->len++] = c;
    b->p[b->len] = '\0';
}
/* Appends the decimal form of v. */
void buf_put_i64(struct buf *b, int64_t v);
/* Appends s (n bytes) as a JSON string literal with quotes; invalid UTF-8
 * and NUL become U+FFFD, control characters are escaped. */
void buf_put_json_str(struct buf *b, const char *s, size_t n);
/* Appends s (n bytes) so that it can neither act on a terminal nor end or
 * forge a log line: a newline becomes \n; other control bytes, DEL, C1
 * controls (U+0080..U+009F) and bytes outside valid UTF-8 become \xNN;
 * with quote also " and \ are escaped (\" \\: a logfmt quoted value). */
void buf_put_printable(struct buf *b, const char *s, size_t n, int quote);
/* The same into out (cap bytes, NUL-terminated; an escape is never cut):
 * text from input for a terminal (the live view). */
void gl_printable(char *out, size_t cap, const char *s, size_t n);
/* Appends a finite double in the shortest round-trip form (no NaN/Inf: those
 * are written as null, and callers must not produce them). */
void buf_put_double(struct buf *b, double v);

/* Logging on stderr in logfmt (ts=... level=... msg="..." k=v) or, with
 * gl_log_json, one JSON object per line. fmt is either plain text (becomes
 * msg="...", escaped) or a logfmt body starting with msg= whose key=value
 * pairs become fields. An identical message repeated within the same second
 * is suppressed and counted ("previous message repeated", count=N).
 * Thread-safe. */
enum gl_level { GL_LOG_DEBUG, GL_LOG_INFO, GL_LOG_WARN, GL_LOG_ERROR };
extern enum gl_level gl_log_level;
extern int gl_log_json;
void gl_log(enum gl_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define log_debug(...) gl_log(GL_LOG_DEBUG, __VA_ARGS__)
#define log_info(...)  gl_log(GL_LOG_INFO, __VA_ARGS__)
#define log_warn(...)  gl_log(GL_LOG_WARN, __VA_ARGS__)
#define log_error(...) gl_log(GL_LOG_ERROR, __VA_ARGS__)
/* A command's own report line ("gpulog parse: FILE: 10 lines, ...", a
 * rejected line "FILE:LINE: why"): printf-like, but every %s argument
 * (names, paths, input, remote replies) goes through buf_put_printable; in
 * log.format json the whole line is one JSON log object {ts, level, msg}.
 * Printed whatever the log level. */
void gl_say(enum gl_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Set by a command whose loop handles signals (ingest/pipeline.c sets
 * pipeline_stopping): 1 once SIGTERM, SIGINT or SIGQUIT asked it to stop.
 * Loaders that may run long (the YAML walk, a detector profile's compile)
 * poll it and give up, so a signal during a SIGHUP reload is honoured at
 * once. NULL (the default) = never interrupted. */
extern int (*gl_interrupted)(void);

/* 128-bit non-cryptographic hash of several byte strings; writes 32 lowercase
 * hex characters plus NUL into out. Deterministic across runs and machines. */
struct hash128 { uint64_t a, b; };
void hash128_init(struct hash128 *h);
void hash128_feed(struct hash128 *h, const void *data, size_t n);
void hash128_feed_u64(struct hash128 *h, uint64_t v);
void hash128_hex(const struct hash128 *h, char out[33]);
uint64_t hash64(const void *data, size_t n, uint64_t seed);

/* Time. All epoch values are milliseconds since 1970-01-01 UTC. */
int64_t gl_now_ms(void);
/* Times that state read back from outside (a detector state snapshot) may
 * hold: within +-2^53 ms (285,000 years, past any time an event carries),
 * so that their differences, and sums with any interval, never overflow. */
#define GL_TIME_LIMIT ((int64_t)1 << 53)
static inline int gl_time_ok(int64_t t) { return t >= -GL_TIME_LIMIT && t <= GL_TIME_LIMIT; }
/* Resident memory of this process in bytes (/proc/self/statm); -1 if unknown. */
int64_t gl_rss_bytes(void);
/* Selects the zone used to read tool timestamps (NULL or "" = local zone).
 * Returns GL_ERROR if the zone is unknown. */
int gl_tz_set(const char *zone);
/* Converts a local wall-clock time (in the zone set by gl_tz_set) to epoch
 * ms. Returns GL_ERROR on an out-of-range field. */
int gl_local_to_epoch_ms(int year, int mon, int day, int hour, int min, int sec,
                         int msec, int64_t *out);
/* ctime's date, as date(1), nvidia-smi -q and many loggers print it:
 * "Tue Nov  5 10:00:00 2024", "Tue Nov 05 10:00:00 UTC 2024" (UTC, GMT and
 * Z are read as UTC; another zone word or none: the --tz zone). Epoch ms
 * into *out; GL_OK or GL_ERROR. Pure apart from the zone. */
int gl_parse_ctime(const char *s, size_t n, int64_t *out);
/* A time of day without a date (dmon/pmon -o T): the epoch ms of that wall
 * time in the gl_tz_set zone on the day that puts it closest to now_ms.
 * Returns GL_OK or GL_ERROR. */
int gl_time_of_day_near(int hour, int min, int sec, int64_t now_ms, int64_t *out);
/* Days since 1970-01-01 for a proleptic Gregorian date. */
int64_t gl_days_from_civil(int y, int m, int d);
/* Writes "YYYY-MM-DDTHH:MM:SS.mmmZ" (24 chars + NUL). */
void gl_fmt_ts(int64_t ms, char out[25]);
/* Parses the ISO form written by gl_fmt_ts (and offsets like +02:00).
 * Returns GL_OK or GL_ERROR. */
int gl_parse_iso_ts(const char *s, size_t n, int64_t *out);

/* Parsing helpers for ASCII numbers; return 1 on success with the whole
 * string consumed. */
int gl_parse_i64(const char *s, size_t n, int64_t *out);
int gl_parse_double(const char *s, size_t n, double *out);
/* The n ASCII digits at s as a number (n <= 9); 0 if one is not a digit. */
/* Levenshtein distance of a and b (for "did you mean"); 99 when either is
 * longer than 64 bytes. Pure. */
size_t gl_edit_distance(const char *a, const char *b);
int gl_parse_digits(const char *s, size_t n, int *out);

#define GL_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif
