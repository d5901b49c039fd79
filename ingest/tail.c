/*
 * tail.c - follows one path like `tail -F`: the line splitter for regular
 * files, rename rotation (the old file is read to its end before the new one
 * is opened), copytruncate (truncation or replaced content is detected; the
 * copy, a sibling path.N / path-SUFFIX with the same fingerprint, is read
 * from the old offset to its end first), files that do not exist yet, and
 * the whole rotation chain: when reading falls behind (or resumes after a
 * stop) by several rotations, every generation not read yet is read, oldest
 * first, and every one that is gone before it was finished is reported as a
 * loss (tail_take_loss), never skipped in silence.
 *
 * This file: the file being read, its identity, the generations done and
 * seen, the losses, and the API; the search of the rotation chain (which
 * file is the next generation, what is gone) is in tail_chain.c.
 */
#include "tail_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <inttypes.h>

const char *tail_path(const struct tail *t) { return t->path; }
int tail_is_open(const struct tail *t) { return t->fd >= 0; }
int tail_reads(const struct tail *t, uint64_t dev, uint64_t ino) { return t->fd >= 0 && t->dev == dev && t->ino == ino; }
int64_t tail_offset(const struct tail *t) { return t->lb.pos; }
uint64_t tail_gen(const struct tail *t) { return t->gen; }
int tail_behind(const struct tail *t) { return t->fd >= 0 && (t->reading_copy || t->truncated); }

int64_t tail_mtime_ns(const struct stat *st)
{
    return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

/* Reading moves on to another file of the path: a new generation, unless
 * this is the first file the path ever named. */
void tail_next_file(struct tail *t)
{
    if (t->had_file) t->gen++;
    t->had_file = 1;
}
void tail_update_fp(struct tail *t)
{
    if (t->fd < 0 || t->fp_len >= 256) return;
    /* only extend a fingerprint over the same content (a truncated and
     * rewritten file must keep its old identity until tail_check sees it) */
    if (t->fp_len > 0 && !tail_fp_matches(t->fd, t->fp, t->fp_len)) return;
    char fp[33];
    uint32_t n;
    if (file_fingerprint(t->fd, 0, fp, &n) == GL_OK && n >= t->fp_len) {
        memcpy(t->fp, fp, sizeof fp);
        t->fp_len = n;
    }
}

/* Does the file open on fd match the identity (fingerprint over fp_len)? */
int tail_fp_matches(int fd, const char *fp, uint32_t fp_len)
{
    char got[33];
    uint32_t n;
    if (file_fingerprint(fd, fp_len, got, &n) != GL_OK) return 0;
    return !strcmp(got, fp);
}

/* Makes fd (owned from now on) the file being read, from pos. */
void tail_adopt_fd(struct tail *t, int fd, int64_t pos)
{
    struct stat st;
    if (fstat(fd, &st) != 0) memset(&st, 0, sizeof st);
    if (t->fd >= 0) close(t->fd);
    t->fd = fd;
    t->dev = (uint64_t)st.st_dev;
    t->ino = (uint64_t)st.st_ino;
    t->size = (int64_t)st.st_size;
    t->cur_flags = 0;
    if (tail_mtime_ns(&st) > t->floor_ns) t->floor_ns = tail_mtime_ns(&st);
    t->fp_len = 0;
    t->fp[0] = '\0';
    tail_update_fp(t);
    lbuf_reset(&t->lb, pos);
}

/* Opens path for reading if it is a regular file, else -1 (errno EINVAL for
 * another kind): O_NONBLOCK, so a FIFO or device at a followed name never
 * blocks open() (it has no effect on a regular file's reads). The caller owns
 * the fd; st (may be NULL) gets its fstat. */
int tail_open_regular(const char *path, struct stat *st)
{
    struct stat own;
    if (!st) st = &own;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return -1;
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) { close(fd); errno = EINVAL; return -1; }
    return fd;
}

static int open_file(struct tail *t, const char *path, int64_t pos)
{
    int fd = tail_open_regular(path, NULL);
    if (fd < 0) return GL_ERROR;
    tail_adopt_fd(t, fd, pos);
    return GL_OK;
}

void tail_cur_id(const struct tail *t, struct gen_id *g)
{
    memset(g, 0, sizeof *g);
    g->dev = t->dev;
    g->ino = t->ino;
    memcpy(g->fp, t->fp, sizeof g->fp);
    g->fp_len = t->fp_len;
    g->end = t->lb.pos;
    g->flags = t->cur_flags;
}

void tail_add_loss(struct tail *t, const char *reason, const char *name, const struct gen_id *g,
                     int64_t from, int64_t to, int64_t lines)
{
    if (t->nloss == t->caploss) {
        t->caploss = t->caploss ? t->caploss * 2 : 4;
        t->loss = xrealloc(t->loss, t->caploss * sizeof *t->loss);
    }
    struct tail_loss *l = &t->loss[t->nloss++];
    memset(l, 0, sizeof *l);
    l->reason = reason;
    snprintf(l->name, sizeof l->name, "%s", name);
    if (g) {
        l->dev = g->dev;
        l->ino = g->ino;
        memcpy(l->fp, g->fp, sizeof l->fp);
    }
    l->gen = t->gen;
    l->from = from;
    l->to = to;
    l->lines = lines;
}

int tail_take_loss(struct tail *t, struct tail_loss *out)
{
    if (!t->nloss) return 0;
    *out = t->loss[0];
    memmove(t->loss, t->loss + 1, (t->nloss - 1) * sizeof *t->loss);
    t->nloss--;
    return 1;
}

void tail_done_push(struct tail *t, const struct gen_id *g)
{
    for (uint32_t i = 0; i < t->ndone; i++)
        if (t->done[i].dev == g->dev && t->done[i].ino == g->ino && !strcmp(t->done[i].fp, g->fp)) {
            if (g->end > t->done[i].end) t->done[i].end = g->end;
            return;
        }
    if (t->ndone == CKPT_DONE_MAX) {
        memmove(t->done, t->done + 1, (CKPT_DONE_MAX - 1) * sizeof *t->done);
        t->ndone--;
    }
    t->done[t->ndone++] = *g;
}

void tail_seen_remove(struct tail *t, uint32_t i)
{
    memmove(t->seen + i, t->seen + i + 1, (t->nseen - i - 1) * sizeof *t->seen);
    t->nseen--;
}

/* ------------------------------------------------------------------- API */

struct tail *tail_new(const char *path, const struct ckpt *resume, const struct tail_opts *o)
{
    struct tail *t = xcalloc(1, sizeof *t);
    t->path = xstrdup(path);
    t->dir = xstrdup(path);
    char *slash = strrchr(t->dir, '/');
    if (slash) {
        *slash = '\0';
        if (!t->dir[0]) strcpy(t->dir, "/");
        t->base = t->path + (slash - t->dir) + 1;
    } else {
        strcpy(t->dir, ".");
        t->base = t->path;
    }
    t->fd = -1;
    if (o) t->o = *o;
    lbuf_init(&t->lb, 0, t->o.max_line);
    if (!resume || !resume->ino) {
        if (resume) t->gen = resume->gen;
        if (open_file(t, path, 0) == GL_OK) tail_next_file(t);
        return t;
    }
    t->gen = resume->gen;
    t->had_file = 1;
    t->floor_ns = resume->floor_ns;
    t->ndone = resume->ndone <= CKPT_DONE_MAX ? resume->ndone : CKPT_DONE_MAX;
    memcpy(t->done, resume->done, t->ndone * sizeof *t->done);
    t->nseen = resume->nseen <= CKPT_SEEN_MAX ? resume->nseen : CKPT_SEEN_MAX;
    memcpy(t->seen, resume->seen, t->nseen * sizeof *t->seen);
    chain_resume(t, resume);
    return t;
}

void tail_free(struct tail *t)
{
    if (!t) return;
    if (t->fd >= 0) close(t->fd);
    lbuf_free(&t->lb);
    free(t->loss);
    free(t->path);
    free(t->dir);
    free(t);
}

int tail_next(struct tail *t, int final, struct rline *l)
{
    if (t->fd < 0 || t->truncated) return RL_AGAIN;
    /* a rotated copy is complete: its last line may lack a newline */
    int r = lbuf_next(&t->lb, t->fd, final || t->reading_copy, l);
    if (r == RL_LINE && t->fp_len < 256 && l->end <= 4096 + 256) tail_update_fp(t);
    return r;
}

void tail_identity(struct tail *t, struct ckpt *c)
{
    tail_update_fp(t);
    c->dev = t->dev;
    c->ino = t->ino;
    memcpy(c->fp, t->fp, sizeof c->fp);
    c->fp_len = t->fp_len;
    c->gen = t->gen;
    struct stat st;
    if (t->fd >= 0 && fstat(t->fd, &st) == 0 && (int64_t)st.st_size > t->size && !t->truncated)
        t->size = (int64_t)st.st_size;
    c->floor_ns = t->floor_ns;
    c->size = t->size;
    c->finished = t->reading_copy;
    c->ndone = t->ndone;
    memcpy(c->done, t->done, t->ndone * sizeof *t->done);
    c->nseen = t->nseen;
    memcpy(c->seen, t->seen, t->nseen * sizeof *t->seen);
}

void tail_watch(struct tail *t)
{
    int64_t now = gl_now_ms();
    if (now - t->last_watch_ms < 500) return;
    t->last_watch_ms = now;
    if (t->fd < 0) return;
    struct stat pst, cur;
    if (fstat(t->fd, &cur) == 0 && !t->truncated && (int64_t)cur.st_size > t->size) t->size = (int64_t)cur.st_size;
    if (stat(t->path, &pst) != 0 || !S_ISREG(pst.st_mode)) return;
    if ((uint64_t)pst.st_dev == t->dev && (uint64_t)pst.st_ino == t->ino) return;   /* we are on it */
    /* the path names a file we have not read yet: remember it */
    uint32_t j = 0;
    while (j < t->nseen && !(t->seen[j].dev == (uint64_t)pst.st_dev && t->seen[j].ino == (uint64_t)pst.st_ino)) j++;
    if (j < t->nseen && t->seen[j].fp_len == 256) return;
    struct stat st;
    int fd = tail_open_regular(t->path, &st);
    if (fd < 0) return;
    struct gen_id g;
    memset(&g, 0, sizeof g);
    if (st.st_ino == pst.st_ino && st.st_dev == pst.st_dev &&
        file_fingerprint(fd, 0, g.fp, &g.fp_len) == GL_OK) {
        g.dev = (uint64_t)st.st_dev;
        g.ino = (uint64_t)st.st_ino;
        if (j < t->nseen) {
            if (g.fp_len > t->seen[j].fp_len) t->seen[j] = g;
        } else {
            if (t->nseen == CKPT_SEEN_MAX) {
                log_warn("msg=\"more generations behind than remembered: the oldest is forgotten (its loss would go unnoticed)\" path=\"%s\"", t->path);
                tail_seen_remove(t, 0);
            }
            t->seen[t->nseen++] = g;
        }
    }
    close(fd);
}

int tail_check(struct tail *t, int pending_zero, int64_t *new_start)
{
    int64_t now = gl_now_ms();
    /* a finished generation with nothing pending moves on at once */
    if (!(t->reading_copy && pending_zero) && now - t->last_check_ms < 200) return 0;
    t->last_check_ms = now;
    if (t->fd < 0) {
        int opened = t->had_file ? chain_pick_next(t) : open_file(t, t->path, 0) == GL_OK;
        if (!opened) return 0;
        if (!t->had_file || t->lb.pos == 0) {
            if (!t->had_file) tail_next_file(t);
            log_info("msg=\"file appeared\" path=\"%s\"", t->path);
        }
        *new_start = t->lb.pos;
        return 1;
    }
    struct stat cur, pst;
    if (fstat(t->fd, &cur) != 0) return 0;
    int64_t pos = t->lb.pos + (int64_t)(t->lb.end - t->lb.start);   /* bytes consumed from fd */
    if (t->reading_copy) {
        /* the finished generation was read to its end: go on with the next */
        if (!pending_zero) return 0;
        chain_pick_next(t);
        *new_start = t->lb.pos;
        return 1;
    }
    int path_ok = stat(t->path, &pst) == 0;
    int rotated = path_ok && ((uint64_t)pst.st_dev != t->dev || (uint64_t)pst.st_ino != t->ino);
    if (rotated) {
        /* rename rotation: read the old file to its end (a partial last line
         * included), then the branch above moves on */
        t->reading_copy = 1;
        log_info("msg=\"rotation (rename): reading the old file to its end\" path=\"%s\" offset=%lld",
                 t->path, (long long)pos);
        return 0;
    }
    if (!path_ok) return 0;   /* renamed away, new one not yet created: keep the old fd */
    int truncated = t->truncated || cur.st_size < pos;
    if (!truncated && t->fp_len > 0 && !tail_fp_matches(t->fd, t->fp, t->fp_len)) truncated = 1;
    if (!truncated) {
        if ((int64_t)cur.st_size > t->size) t->size = (int64_t)cur.st_size;
        return 0;
    }
    /* the old offset means nothing in the new content: stop reading until
     * every line before it is settled, then switch */
    t->truncated = 1;
    if (!pending_zero) return 0;
    return chain_after_truncation(t, new_start);
}
