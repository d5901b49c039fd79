/*
 * kmsg_int.h - what the kernel-message parser's two files share: kmsg.c
 * (the NVIDIA messages) and kmsg_prefix.c (the time, facility and host
 * prefixes in front of them). Private to them; see kmsg.c for the formats.
 */
#ifndef GPULOG_KMSG_INT_H
#define GPULOG_KMSG_INT_H

#include "parser.h"

#include <string.h>

static inline int starts(const char *s, size_t n, const char *lit)
{
    size_t l = strlen(lit);
    return n >= l && !memcmp(s, lit, l);
}

static inline int is_digit(char c) { return c >= '0' && c <= '9'; }

struct kprefix {
    const char *body;            /* the message after every prefix */
    size_t blen;
    int has_ts;                  /* wall-clock time found */
    int64_t ts_ms;
    int has_up;                  /* boot-relative time found */
    double up;
    int indented;                /* started with blanks */
    int prefixed;                /* at least one prefix stripped */
};

/* Strips every prefix of line (len bytes, borrowed) into px; now_ms is the
 * read time that syslog times without a year are placed against. */
void kmsg_prefix(const char *line, size_t len, int64_t now_ms, struct kprefix *px);

#endif
