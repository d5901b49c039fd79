/* lineread.c - see lineread.h. */
#include "lineread.h"
#include "common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void lineread_init(struct lineread *lr, int fd, size_t max_line)
{
    memset(lr, 0, sizeof *lr);
    lr->fd = fd;
    lr->max_line = max_line ? max_line : LR_DEFAULT_MAX_LINE;
    lr->cap = 65536;
    lr->buf = xmalloc(lr->cap);
}

void lineread_free(struct lineread *lr)
{
    free(lr->buf);
    lr->buf = NULL;
}

static enum lr_status fill(struct lineread *lr)
{
    if (lr->start > 0 && (lr->start == lr->end || lr->end == lr->cap)) {
        memmove(lr->buf, lr->buf + lr->start, lr->end - lr->start);
        lr->end -= lr->start;
        lr->start = 0;
    }
    if (lr->end == lr->cap) {
        size_t ncap = lr->cap * 2;
        if (ncap > lr->max_line + 2) ncap = lr->max_line + 2;
        if (ncap > lr->cap) {
            lr->buf = xrealloc(lr->buf, ncap);
            lr->cap = ncap;
        }
    }
    for (;;) {
        ssize_t n = read(lr->fd, lr->buf + lr->end, lr->cap - lr->end);
        if (n > 0) { lr->end += (size_t)n; return LR_LINE; }
        if (n == 0) { lr->eof = 1; return LR_EOF; }
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return LR_AGAIN;
        lr->err = errno;
        return LR_IOERR;
    }
}

/* The end of the first line of s (avail bytes): LF or CRLF; a CR inside a
 * line stays in it, unless the input has CR-only line breaks (old Mac
 * files: a CR followed by more data and no LF seen so far, nor in the
 * buffer), which lr remembers. Returns 1 with *n the line's length and *k
 * the bytes it takes with its line break, 0 when no line break is there yet. */
static int find_eol(struct lineread *lr, const char *s, size_t avail, size_t *n, size_t *k)
{
    const char *nl = avail ? memchr(s, '\n', avail) : NULL;
    if (nl) lr->seen_lf = 1;
    if (!lr->seen_lf) {
        const char *cr = avail ? memchr(s, '\r', avail) : NULL;
        size_t i = cr ? (size_t)(cr - s) : 0;
        if (cr && (i + 1 < avail || lr->cr_only)) lr->cr_only = 1;
        if (cr && lr->cr_only && (i + 1 < avail || lr->eof)) { *n = i; *k = i + 1; return 1; }
        if (cr && lr->eof && i + 1 == avail) { *n = i; *k = i + 1; return 1; }   /* a last CR */
        return 0;
    }
    if (!nl) return 0;
    *n = (size_t)(nl - s);
    *k = *n + 1;
    if (*n && s[*n - 1] == '\r') (*n)--;      /* CRLF */
    return 1;
}

enum lr_status lineread_next(struct lineread *lr, const char **line, size_t *len, int64_t *off)
{
    for (;;) {
        char *s = lr->buf + lr->start;
        size_t avail = lr->end - lr->start;
        size_t n, k;
        int have = find_eol(lr, s, avail, &n, &k);
        if (lr->skipping) {
            if (have) {
                lr->start += k;
                lr->offset += (int64_t)k;
                lr->skipping = 0;
                continue;
            }
            lr->offset += (int64_t)avail;
            lr->start = lr->end = 0;
        } else if (have) {
            *off = lr->offset;
            lr->offset += (int64_t)k;
            lr->start += k;
            lr->lineno++;
            if (n > lr->max_line) { *len = n; *line = s; return LR_TOOLONG; }   /* the limit excludes the CRLF */
            *line = s;
            *len = n;
            return LR_LINE;
        } else if (avail > lr->max_line && !(avail == lr->max_line + 1 && s[avail - 1] == '\r')) {
            /* over-long line: report once, then skip to its newline */
            *off = lr->offset;
            *line = s;
            *len = avail;
            lr->lineno++;
            lr->offset += (int64_t)avail;
            lr->start = lr->end = 0;
            lr->skipping = 1;
            return LR_TOOLONG;
        } else if (lr->eof) {
            if (avail == 0) return LR_EOF;
            *off = lr->offset;
            lr->offset += (int64_t)avail;
            lr->start = lr->end;
            lr->lineno++;
            *line = s;
            *len = avail && s[avail - 1] == '\r' ? avail - 1 : avail;
            return LR_LINE;
        }
        if (lr->eof) return LR_EOF;
        enum lr_status st = fill(lr);
        if (st == LR_AGAIN || st == LR_IOERR) return st;
    }
}
