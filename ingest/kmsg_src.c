/* kmsg_src.c - /dev/kmsg records to dmesg-style lines with wall-clock time
 * (the kmsg parser reads "kern  :warn  : 2025-01-21T04:41:44,283302+00:00 ..."). */
#include "source.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

int64_t kmsg_boot_ms(void)
{
    struct timespec rt, mono;
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    int64_t r = (int64_t)rt.tv_sec * 1000000 + rt.tv_nsec / 1000;
    int64_t m = (int64_t)mono.tv_sec * 1000000 + mono.tv_nsec / 1000;
    return (r - m) / 1000;
}

static int parse_u64(const char **s, const char *end, uint64_t *out)
{
    const char *p = *s;
    uint64_t v = 0;
    if (p >= end || *p < '0' || *p > '9') return 0;
    while (p < end && *p >= '0' && *p <= '9') {
        if (v > (UINT64_MAX - 9) / 10) return 0;
        v = v * 10 + (uint64_t)(*p++ - '0');
    }
    *s = p;
    *out = v;
    return 1;
}

int kmsg_record_to_line(const char *rec, size_t len, int64_t boot_ms,
                        struct buf *out, uint64_t *seq)
{
    static const char *const levels[8] = { "emerg", "alert", "crit", "err", "warn", "notice", "info", "debug" };
    static const char *const facs[] = { "kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news" };
    const char *p = rec, *end = rec + len;
    uint64_t pri, sq, usec;
    if (!parse_u64(&p, end, &pri) || p >= end || *p++ != ',') return 0;
    if (!parse_u64(&p, end, &sq) || p >= end || *p++ != ',') return 0;
    if (!parse_u64(&p, end, &usec) || p >= end || *p != ',') return 0;
    const char *semi = memchr(p, ';', (size_t)(end - p));
    if (!semi) return 0;
    const char *text = semi + 1;
    /* the text ends at the first newline; continuation lines (" KEY=value")
     * follow it. Non-printable bytes arrive escaped as \xNN already. */
    const char *nl = memchr(text, '\n', (size_t)(end - text));
    size_t tlen = nl ? (size_t)(nl - text) : (size_t)(end - text);
    unsigned fac = (unsigned)(pri >> 3);
    int64_t ms = boot_ms + (int64_t)(usec / 1000);
    char ts[25];
    gl_fmt_ts(ms, ts);   /* YYYY-MM-DDTHH:MM:SS.mmmZ */
    buf_reset(out);
    buf_printf(out, "%-6s:%-6s: %.19s,%06u+00:00 ", fac < GL_ARRAY_LEN(facs) ? facs[fac] : "kern",
               levels[pri & 7], ts, (unsigned)((ms % 1000) * 1000 + usec % 1000));
    buf_append(out, text, tlen);
    *seq = sq;
    return 1;
}
