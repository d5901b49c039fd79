/*
 * tail.c - follows one path like `tail -F`: the line splitter for regular
 * files, rename rotation (the old file is read to its end before the new one
 * is opened), copytruncate (truncation or replaced content is detected; the
 * copy, a sibling path.N / path-SUFFIX with the same fingerprint, is read
 * from the old offset to its end first), and files that do not exist yet.
 */
#include "source.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------- lbuf */

void lbuf_init(struct lbuf *b, int64_t pos, size_t max_line)
{
    memset(b, 0, sizeof *b);
    b->max_line = max_line ? max_line : 1024 * 1024;
    b->cap = 65536;
    b->buf = xmalloc(b->cap);
    b->pos = pos;
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
    b->pos = pos;
}

int lbuf_next(struct lbuf *b, int fd, int final, struct rline *l)
{
    for (;;) {
        char *s = b->buf + b->start;
        size_t avail = b->end - b->start;
        char *nl = avail ? memchr(s, '\n', avail) : NULL;
        if (nl) {
            size_t n = (size_t)(nl - s);
            l->off = b->pos;
            l->end = b->pos + (int64_t)n + 1;
            b->pos = l->end;
            b->start += n + 1;
            if (b->skipping) {
                b->skipping = 0;
                l->p = s; l->len = 0;
                return RL_TOOLONG;
            }
            if (n > b->max_line) { l->p = s; l->len = n; return RL_TOOLONG; }
            if (n && s[n - 1] == '\r') n--;
            l->p = s;
            l->len = n;
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
            if (len && s[len - 1] == '\r') len--;
            l->p = b->buf;
            l->len = len;
            l->ms = 0;
            return RL_LINE;
        }
        return RL_AGAIN;
    }
}

/* ------------------------------------------------------------------- tail */

struct tail {
    char *path;
    int fd;                   /* -1: not open */
    uint64_t dev, ino;
    char fp[33];
    uint32_t fp_len;
    struct lbuf lb;
    int reading_copy;         /* fd is a rotated copy; the path is next */
    int truncated;            /* truncation seen: read nothing until handled */
    int64_t last_check_ms;
    uint64_t gen;             /* see tail_gen */
    int had_file;             /* a file was read (or checkpointed) under this path */
};

const char *tail_path(const struct tail *t) { return t->path; }
int tail_is_open(const struct tail *t) { return t->fd >= 0; }
int64_t tail_offset(const struct tail *t) { return t->lb.pos; }
uint64_t tail_gen(const struct tail *t) { return t->gen; }

/* Reading moves on to another file of the path: a new generation, unless
 * this is the first file the path ever named. */
static void next_file(struct tail *t)
{
    if (t->had_file) t->gen++;
    t->had_file = 1;
}

static int fp_matches(int fd, const char *fp, uint32_t fp_len);

static void update_fp(struct tail *t)
{
    if (t->fd < 0 || t->fp_len >= 256) return;
    /* only extend a fingerprint over the same content (a truncated and
     * rewritten file must keep its old identity until tail_check sees it) */
    if (t->fp_len > 0 && !fp_matches(t->fd, t->fp, t->fp_len)) return;
    char fp[33];
    uint32_t n;
    if (file_fingerprint(t->fd, 0, fp, &n) == GL_OK && n >= t->fp_len) {
        memcpy(t->fp, fp, sizeof fp);
        t->fp_len = n;
    }
}

static int open_file(struct tail *t, const char *path, int64_t pos)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return GL_ERROR;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) { close(fd); return GL_ERROR; }
    if (t->fd >= 0) close(t->fd);
    t->fd = fd;
    t->dev = (uint64_t)st.st_dev;
    t->ino = (uint64_t)st.st_ino;
    t->fp_len = 0;
    t->fp[0] = '\0';
    update_fp(t);
    lbuf_reset(&t->lb, pos);
    return GL_OK;
}

/* Does the file open on fd match the identity (fingerprint over fp_len)? */
static int fp_matches(int fd, const char *fp, uint32_t fp_len)
{
    char got[33];
    uint32_t n;
    if (file_fingerprint(fd, fp_len, got, &n) != GL_OK) return 0;
    return !strcmp(got, fp);
}

/* Looks for a rotated sibling of path (path.*, path-*, path_*) that is the
 * file with identity (dev, ino) if by_inode, else has the fingerprint.
 * Returns an open fd or -1. */
static int find_sibling(const char *path, uint64_t dev, uint64_t ino, int by_inode,
                        const char *fp, uint32_t fp_len, int64_t min_size)
{
    char *dir = xstrdup(path);
    char *slash = strrchr(dir, '/');
    const char *base = slash ? slash + 1 : path;
    if (slash) *slash = '\0';
    const char *dname = slash ? (dir[0] ? dir : "/") : ".";
    size_t blen = strlen(base);
    DIR *d = opendir(dname);
    int found = -1;
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)) && found < 0) {
            if (strncmp(de->d_name, base, blen) || !strchr(".-_", de->d_name[blen]) || !de->d_name[blen])
                continue;
            struct buf p;
            buf_init(&p);
            buf_printf(&p, "%s/%s", dname, de->d_name);
            int fd = open(p.p, O_RDONLY | O_CLOEXEC);
            buf_free(&p);
            if (fd < 0) continue;
            struct stat st;
            int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= min_size;
            if (ok && by_inode) ok = (uint64_t)st.st_dev == dev && (uint64_t)st.st_ino == ino;
            if (ok && !by_inode) ok = fp_len > 0 && fp_matches(fd, fp, fp_len);
            if (ok && by_inode && fp_len) ok = fp_matches(fd, fp, fp_len);
            if (ok) found = fd; else close(fd);
        }
        closedir(d);
    }
    free(dir);
    return found;
}

static void adopt_fd(struct tail *t, int fd, int64_t pos)
{
    struct stat st;
    fstat(fd, &st);
    if (t->fd >= 0) close(t->fd);
    t->fd = fd;
    t->dev = (uint64_t)st.st_dev;
    t->ino = (uint64_t)st.st_ino;
    lbuf_reset(&t->lb, pos);
}

struct tail *tail_new(const char *path, const struct ckpt *resume, size_t max_line)
{
    struct tail *t = xcalloc(1, sizeof *t);
    t->path = xstrdup(path);
    t->fd = -1;
    lbuf_init(&t->lb, 0, max_line);
    if (resume) {
        t->gen = resume->gen;
        t->had_file = resume->ino != 0;
    }
    if (open_file(t, path, 0) != GL_OK) {
        if (resume && resume->ino) {
            /* the path is gone but the file we were reading may be a sibling */
            int fd = find_sibling(path, resume->dev, resume->ino, 1, resume->fp, resume->fp_len, resume->offset);
            if (fd >= 0) {
                adopt_fd(t, fd, resume->offset);
                memcpy(t->fp, resume->fp, sizeof t->fp);
                t->fp_len = resume->fp_len;
                t->reading_copy = 1;
                log_info("msg=\"resuming rotated file\" path=\"%s\" offset=%lld", path, (long long)resume->offset);
            }
        }
        return t;
    }
    if (!resume) { t->had_file = 1; return t; }
    struct stat st;
    fstat(t->fd, &st);
    int same = resume->ino && resume->dev == t->dev && resume->ino == t->ino &&
               (resume->fp_len == 0 || fp_matches(t->fd, resume->fp, resume->fp_len)) &&
               st.st_size >= resume->offset;
    if (same) {
        lbuf_reset(&t->lb, resume->offset);
        return t;
    }
    if (resume->ino && resume->offset > 0) {
        /* rotated while we were away: finish the old file first */
        int fd = find_sibling(path, resume->dev, resume->ino, 1, resume->fp, resume->fp_len, resume->offset);
        if (fd < 0 && resume->fp_len == 256)   /* copytruncate: a copy with the same content */
            fd = find_sibling(path, 0, 0, 0, resume->fp, resume->fp_len, resume->offset);
        if (fd >= 0) {
            adopt_fd(t, fd, resume->offset);
            memcpy(t->fp, resume->fp, sizeof t->fp);
            t->fp_len = resume->fp_len;
            t->reading_copy = 1;
            log_info("msg=\"file rotated while stopped: reading the rotated file to its end first\" path=\"%s\" offset=%lld",
                     path, (long long)resume->offset);
            return t;
        }
        log_warn("msg=\"checkpoint names another file (rotated while stopped, rotated file not found): reading from the start\" path=\"%s\"", path);
    }
    next_file(t);   /* not the checkpointed file */
    return t;
}

void tail_free(struct tail *t)
{
    if (!t) return;
    if (t->fd >= 0) close(t->fd);
    lbuf_free(&t->lb);
    free(t->path);
    free(t);
}

int tail_next(struct tail *t, int final, struct rline *l)
{
    if (t->fd < 0 || t->truncated) return RL_AGAIN;
    /* a rotated copy is complete: its last line may lack a newline */
    int r = lbuf_next(&t->lb, t->fd, final || t->reading_copy, l);
    if (r == RL_LINE && t->fp_len < 256 && l->end <= 4096 + 256) update_fp(t);
    return r;
}

void tail_identity(struct tail *t, struct ckpt *c)
{
    update_fp(t);
    c->dev = t->dev;
    c->ino = t->ino;
    memcpy(c->fp, t->fp, sizeof c->fp);
    c->fp_len = t->fp_len;
    c->gen = t->gen;
}

int tail_check(struct tail *t, int pending_zero, int64_t *new_start)
{
    int64_t now = gl_now_ms();
    if (now - t->last_check_ms < 200) return 0;
    t->last_check_ms = now;
    if (t->fd < 0) {
        if (open_file(t, t->path, 0) == GL_OK) {
            next_file(t);
            *new_start = 0;
            log_info("msg=\"file appeared\" path=\"%s\"", t->path);
            return 1;
        }
        return 0;
    }
    struct stat cur, pst;
    if (fstat(t->fd, &cur) != 0) return 0;
    int64_t pos = t->lb.pos + (int64_t)(t->lb.end - t->lb.start);   /* bytes consumed from fd */
    if (t->reading_copy) {
        /* the copy was read to its end: go on with the live path */
        if (!pending_zero) return 0;
        if (open_file(t, t->path, 0) != GL_OK) { close(t->fd); t->fd = -1; }
        else next_file(t);
        t->reading_copy = 0;
        *new_start = 0;
        log_info("msg=\"rotated file done, following the new file\" path=\"%s\"", t->path);
        return 1;
    }
    int path_ok = stat(t->path, &pst) == 0;
    int rotated = path_ok && ((uint64_t)pst.st_dev != t->dev || (uint64_t)pst.st_ino != t->ino);
    if (rotated) {
        /* rename rotation: read the old file to its end (a partial last line
         * included), then the branch above switches to the new file */
        t->reading_copy = 1;
        log_info("msg=\"rotation (rename): reading the old file to its end\" path=\"%s\" offset=%lld",
                 t->path, (long long)pos);
        return 0;
    }
    if (!path_ok) return 0;   /* renamed away, new one not yet created: keep the old fd */
    int truncated = t->truncated || cur.st_size < pos;
    if (!truncated && t->fp_len > 0 && !fp_matches(t->fd, t->fp, t->fp_len)) truncated = 1;
    if (!truncated) return 0;
    /* the old offset means nothing in the new content: stop reading until
     * every line before it is settled, then switch */
    t->truncated = 1;
    if (!pending_zero) return 0;
    t->truncated = 0;
    /* copytruncate: lines written after our last read are in the copy */
    int64_t old_pos = t->lb.pos;
    int fd = t->fp_len > 0 ? find_sibling(t->path, 0, 0, 0, t->fp, t->fp_len, old_pos) : -1;
    if (fd >= 0) {
        struct stat cst;
        fstat(fd, &cst);
        if (cst.st_size > old_pos) {
            char fp[33];
            uint32_t fl = t->fp_len;
            memcpy(fp, t->fp, sizeof fp);
            adopt_fd(t, fd, old_pos);
            memcpy(t->fp, fp, sizeof fp);
            t->fp_len = fl;
            t->reading_copy = 1;
            log_info("msg=\"truncation (copytruncate): reading the copy from the old offset\" path=\"%s\" offset=%lld",
                     t->path, (long long)old_pos);
            return 0;   /* same offsets continue in the copy */
        }
        close(fd);
    }
    log_info("msg=\"truncation: reading from the start\" path=\"%s\" old_offset=%lld", t->path, (long long)old_pos);
    t->fp_len = 0;
    t->fp[0] = '\0';
    update_fp(t);
    lbuf_reset(&t->lb, 0);
    next_file(t);
    *new_start = 0;
    return 1;
}
