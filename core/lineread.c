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

enum lr_status lineread_next(struct lineread *lr, const char **line, size_t *len, int64_t *off)
{
    for (;;) {
        char *s = lr->buf + lr->start;
        size_t avail = lr->end - lr->start;
        char *nl = avail ? memchr(s, '\n', avail) : NULL;
        if (lr->skipping) {
            if (nl) {
                size_t k = (size_t)(nl - s) + 1;
                lr->start += k;
                lr->offset += (int64_t)k;
                lr->skipping = 0;
                continue;
            }
            lr->offset += (int64_t)avail;
            lr->start = lr->end = 0;
        } else if (nl) {
            size_t n = (size_t)(nl - s);
            *off = lr->offset;
            lr->offset += (int64_t)n + 1;
            lr->start += n + 1;
            lr->lineno++;
            if (n && s[n - 1] == '\r') n--;      /* the limit excludes the CRLF */
            if (n > lr->max_line) { *len = n; *line = s; return LR_TOOLONG; }
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
            size_t n = avail;
            if (n && s[n - 1] == '\r') n--;
            *line = s;
            *len = n;
            return LR_LINE;
        }
        if (lr->eof) return LR_EOF;
        enum lr_status st = fill(lr);
        if (st == LR_AGAIN || st == LR_IOERR) return st;
    }
}
