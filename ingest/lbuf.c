/* lbuf.c - splits a regular file into lines with pread, without consuming a
 * trailing partial line (the writer may still be writing it) unless asked
 * to (see source.h). */
#include "source.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void lbuf_init(struct lbuf *b, int64_t pos, size_t max_line)
{
    memset(b, 0, sizeof *b);
    b->max_line = max_line ? max_line : 1024 * 1024;
    b->pos = pos;   /* the buffer comes with the first read (lbuf_release gives it back) */
}

/* The buffer's first size: 64 KiB, or less for a smaller max_line. */
static void lb_alloc(struct lbuf *b)
{
    b->cap = b->max_line + 2 < 65536 ? b->max_line + 2 : 65536;
    b->buf = xmalloc(b->cap);
    b->start = b->end = 0;
}

void lbuf_release(struct lbuf *b)
{
    free(b->buf);
    b->buf = NULL;
    b->cap = b->start = b->end = 0;
}

void lbuf_free(struct lbuf *b)
{
    free(b->buf);
    b->buf = NULL;
}

void lbuf_reset(struct lbuf *b, int64_t pos)
{
    b->start = b->end = 0;
    b->skipping = 0;
    b->seen_lf = b->cr_only = 0;
    b->pos = pos;
}

/* The end of the first line of s (avail bytes): LF, or a lone CR while the
 * file has shown CR-only line breaks (a CR followed by more data, no LF
 * seen). A CR that is the last byte available ends a line only at the end
 * of input (final): an LF may follow. Returns 1 with *n the line's length
 * (a CR before the LF still in it) and *k the bytes it takes with its
 * break, 0 when no line break is there yet. */
static int lb_eol(struct lbuf *b, const char *s, size_t avail, int final, size_t *n, size_t *k)
{
    const char *nl = avail ? memchr(s, '\n', avail) : NULL;
    if (nl) b->seen_lf = 1;
    if (!b->seen_lf) {
        const char *cr = avail ? memchr(s, '\r', avail) : NULL;
        if (!cr) return 0;
        size_t i = (size_t)(cr - s);
        if (i + 1 < avail) b->cr_only = 1;
        if (!b->cr_only || (i + 1 == avail && !final)) return 0;
        *n = i;
        *k = i + 1;
        return 1;
    }
    if (!nl) return 0;
    *n = (size_t)(nl - s);
    *k = *n + 1;
    return 1;
}

int lbuf_next(struct lbuf *b, int fd, int final, struct rline *l)
{
    if (!b->buf) lb_alloc(b);
    for (;;) {
        char *s = b->buf + b->start;
        size_t avail = b->end - b->start;
        size_t ll, took;
        if (lb_eol(b, s, avail, final, &ll, &took)) {
            l->off = b->pos;
            l->end = b->pos + (int64_t)took;
            b->pos = l->end;
            b->start += took;
            if (b->skipping) {
                b->skipping = 0;
                l->p = s; l->len = 0;
                return RL_TOOLONG;
            }
            if (ll > b->max_line) { l->p = s; l->len = ll; return RL_TOOLONG; }
            if (ll && s[ll - 1] == '\r') ll--;
            l->p = s;
            l->len = ll;
            l->ms = 0;
            return RL_LINE;
        }
        if (avail > b->max_line && !b->skipping) {
            /* over-long line: drop what we have, skip to its newline */
            b->skipping = 1;
            b->pos += (int64_t)avail;
            b->start = b->end = 0;
            continue;
        }
        if (b->skipping && avail) {
            b->pos += (int64_t)avail;
            b->start = b->end = 0;
            avail = 0;
        }
        /* need more bytes */
        if (b->start > 0) {
            memmove(b->buf, b->buf + b->start, avail);
            b->start = 0;
            b->end = avail;
        }
        if (b->end == b->cap) {
            size_t ncap = b->cap * 2;
            if (ncap > b->max_line + 2) ncap = b->max_line + 2;
            if (ncap <= b->cap) ncap = b->cap + 4096;
            b->buf = xrealloc(b->buf, ncap);
            b->cap = ncap;
        }
        ssize_t n;
        do n = pread(fd, b->buf + b->end, b->cap - b->end, b->pos + (int64_t)b->end);
        while (n < 0 && errno == EINTR);
        if (n < 0) return RL_IOERR;
        if (n > 0) { b->end += (size_t)n; continue; }
        /* end of file for now */
        avail = b->end - b->start;
        if (final && avail && !b->skipping) {
            size_t len = avail;
            l->off = b->pos;
            l->end = b->pos + (int64_t)avail;
            b->pos = l->end;
            b->start = b->end = 0;
            if (len && b->buf[len - 1] == '\r') len--;   /* start is 0 here; s may predate a realloc */
            l->p = b->buf;
            l->len = len;
            l->ms = 0;
            return RL_LINE;
        }
        return RL_AGAIN;
    }
}

