/*
 * lineread.h - reads an fd as lines, with a hard cap on line length.
 *
 * Lines are returned without their terminator ("\n" or "\r\n"); a final line
 * without a newline is returned at end of input. A line longer than the cap is
 * not buffered: its bytes are skipped up to the next newline and reported once
 * as LR_TOOLONG. The returned pointer is borrowed and valid until the next call.
 */
#ifndef GPULOG_LINEREAD_H
#define GPULOG_LINEREAD_H

#include <stddef.h>
#include <stdint.h>

#define LR_DEFAULT_MAX_LINE (1024 * 1024)   /* 1 MiB, documented in README */

enum lr_status { LR_LINE = 0, LR_EOF, LR_AGAIN, LR_TOOLONG, LR_IOERR };

struct lineread {
    int fd;
    char *buf;
    size_t cap, start, end;
    size_t max_line;
    int eof;
    int skipping;          /* inside an over-long line */
    int64_t offset;        /* byte offset of the next line in the input */
    uint64_t lineno;       /* number of the last returned line (1-based) */
    int err;               /* errno of an I/O error */
    int seen_lf;           /* an LF was seen: a CR inside a line stays in it */
    int cr_only;           /* CR-only line breaks (old Mac files): see find_eol */
};

/* Borrows fd (the caller closes it). max_line 0 = default. */
void lineread_init(struct lineread *lr, int fd, size_t max_line);
void lineread_free(struct lineread *lr);
/* Returns LR_LINE with line, len and off set, LR_TOOLONG (lineno and off set
 * to the skipped line), LR_EOF, LR_AGAIN (non-blocking fd had no full line),
 * or LR_IOERR. */
enum lr_status lineread_next(struct lineread *lr, const char **line, size_t *len, int64_t *off);

#endif
