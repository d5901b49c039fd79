/*
 * src_fd.c - a plain input read once to its end (`parse`, `run`): a file
 * or standard input ("-"), no checkpoint, no spool. A non-blocking input
 * (a pipe run polls) says SRC_AGAIN with pollfd to wait on.
 */
#include "source.h"
#include "../core/lineread.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct src_fd {
    struct source base;
    int fd, own;
    struct lineread lr;
    int eof;
};

#define FD_OF(s) ((struct src_fd *)(s))

extern const struct source_ops src_fd;

/* Opens path, or standard input for "-" or NULL (borrowed, not closed). */
static struct source *fd_open(const char *path, const struct source_env *env, char *err, size_t errlen)
{
    int is_stdin = !path || !strcmp(path, "-");
    int fd = 0;
    if (!is_stdin && (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    struct src_fd *f = xcalloc(1, sizeof *f);
    struct source *s = &f->base;
    source_init(s, &src_fd, is_stdin ? "-" : path, env);
    s->path = is_stdin ? NULL : s->name;
    s->label = is_stdin ? "<stdin>" : NULL;
    f->fd = fd;
    f->own = !is_stdin;
    lineread_init(&f->lr, fd, env->max_line);
    return s;
}

static int fd_next(struct source *s, int timeout_ms, struct src_rec *r)
{
    struct src_fd *f = FD_OF(s);
    if (f->eof) return SRC_AGAIN;
    const char *line;
    size_t len;
    int64_t off;
    enum lr_status st = lineread_next(&f->lr, &line, &len, &off);
    if (st == LR_LINE || st == LR_TOOLONG) {
        *r = (struct src_rec){ .p = line, .len = len, .off = off, .end = off + (int64_t)len };
        return st == LR_LINE ? SRC_REC : SRC_TOOLONG;
    }
    if (st == LR_IOERR) {
        gl_say(GL_LOG_ERROR, "%s: read error: %s\n", s->label ? s->label : s->name, strerror(f->lr.err));
        s->failed = 1;
    }
    if (st != LR_AGAIN) f->eof = 1;
    return SRC_AGAIN;
}

static int fd_ended(struct source *s) { return FD_OF(s)->eof; }
static int fd_pollfd(struct source *s) { return FD_OF(s)->eof ? -1 : FD_OF(s)->fd; }

static void fd_close(struct source *s)
{
    struct src_fd *f = FD_OF(s);
    lineread_free(&f->lr);
    if (f->own) close(f->fd);
    source_fini(s);
    free(f);
}

const struct source_ops src_fd = {
    .name = "fd",
    .open = fd_open,
    .next = fd_next,
    .ended = fd_ended,
    .close = fd_close,
    .pollfd = fd_pollfd,
};
