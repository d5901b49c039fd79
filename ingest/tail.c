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

#include "../core/metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <inttypes.h>

const char *tail_path(const struct tail *t) { return t->path; }
int tail_is_open(const struct tail *t) { return t->fd >= 0 || t->parked; }
int tail_reads(const struct tail *t, uint64_t dev, uint64_t ino)
{
    return (t->fd >= 0 || t->parked) && t->dev == dev && t->ino == ino;
}
int64_t tail_offset(const struct tail *t) { return t->lb.pos; }
uint64_t tail_gen(const struct tail *t) { return t->gen; }
int tail_behind(const struct tail *t)
{
    return (t->fd >= 0 && (t->reading_copy || t->truncated)) || t->waiting || t->park_stale;
}
int tail_waiting(const struct tail *t) { return t->waiting; }

void tail_trim(struct tail *t)
{
    if (t->quiet && !t->lb.skipping) lbuf_release(&t->lb);
}

int tail_unchanged(const struct tail *t)
{
    struct stat st;
    if (t->fd >= 0) {
        if (!t->quiet || fstat(t->fd, &st) != 0 || (int64_t)st.st_size != t->quiet_size ||
            tail_mtime_ns(&st) != t->quiet_mtime_ns)
            return 0;
    } else if (!t->parked || t->park_stale) {
        return 0;
    }
    if (stat(t->path, &st) != 0 || (uint64_t)st.st_dev != t->dev || (uint64_t)st.st_ino != t->ino) return 0;
    return t->fd >= 0 || ((int64_t)st.st_size == t->quiet_size && tail_mtime_ns(&st) == t->quiet_mtime_ns);
}
int tail_file_id(const struct tail *t, uint64_t *dev, uint64_t *ino)
{
    if (t->fd < 0 && !t->parked) return 0;
    *dev = t->dev;
    *ino = t->ino;
    return 1;
}
const struct gen_id *tail_done_list(const struct tail *t, uint32_t *n)
{
    *n = t->ndone;
    return t->done;
}
void tail_poke(struct tail *t) { t->last_check_ms = 0; }

int tail_real_path(const struct tail *t, char *out, size_t cap)
{
    if (t->fd < 0 || cap < 2) return 0;
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", t->fd);
    ssize_t n = readlink(link, out, cap - 1);
    if (n <= 0 || (size_t)n >= cap - 1 || out[0] != '/') return 0;
    out[n] = '\0';
    return 1;
}

/* ------------------------------------------------------ descriptor budget */

/* Every open tail of the process in one list, most recently active first;
 * fd_open of them hold a descriptor, fd_waiting want one. */
static struct tail *lru_first, *lru_last;
static size_t fd_open, fd_budget, fd_waiting;
static int64_t wait_said_ms;

static uint64_t nofile_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 1024;
    return rl.rlim_cur == RLIM_INFINITY ? UINT64_C(1) << 20 : (uint64_t)rl.rlim_cur;
}

size_t tail_fd_budget(void)
{
    if (!fd_budget) {
        /* the rest is for everything else: sockets (Kafka, up to 256 HTTP
         * connections), spools, checkpoints, a rotation scan's candidates */
        uint64_t cur = nofile_limit();
        fd_budget = cur > 512 ? (size_t)(cur - 256) : (size_t)(cur / 2);
        if (fd_budget < 4) fd_budget = 4;
    }
    return fd_budget;
}

void tail_set_fd_budget(size_t n) { fd_budget = n; }
size_t tail_fds_open(void) { return fd_open; }
size_t tail_fds_waiting(void) { return fd_waiting; }

static void lru_unlink(struct tail *t)
{
    if (!t->in_lru) return;
    if (t->lru_prev) t->lru_prev->lru_next = t->lru_next; else lru_first = t->lru_next;
    if (t->lru_next) t->lru_next->lru_prev = t->lru_prev; else lru_last = t->lru_prev;
    t->lru_prev = t->lru_next = NULL;
    t->in_lru = 0;
}

static void lru_front(struct tail *t)
{
    if (t->in_lru && lru_first == t) return;
    lru_unlink(t);
    t->lru_next = lru_first;
    if (lru_first) lru_first->lru_prev = t; else lru_last = t;
    lru_first = t;
    t->in_lru = 1;
}

/* A tail starts or stops waiting for a descriptor: counted (gauge and
 * counter), and said as an error when a streak of waiting starts (again
 * at most once a minute while it lasts). */
static void set_waiting(struct tail *t, int on)
{
    if (on == t->waiting) return;
    t->waiting = on;
    if (on) {
        fd_waiting++;
        metrics_inc(M_FD_WAITS);
        int64_t now = gl_now_ms();
        if (fd_waiting == 1 || now - wait_said_ms >= 60000) {
            wait_said_ms = now;
            log_error("msg=\"descriptor limit: a followed file waits for a file descriptor; it is read as soon as one is free "
                      "(files idle at their end give theirs back; raise LimitNOFILE or ulimit -n)\" path=\"%s\" waiting=%zu "
                      "open=%zu budget=%zu rlimit_nofile=%" PRIu64, t->path, fd_waiting, fd_open, tail_fd_budget(), nofile_limit());
        }
    } else {
        fd_waiting--;
        if (!fd_waiting) log_info("msg=\"every followed file that wanted a descriptor has one again\" open=%zu", fd_open);
    }
    metrics_set(M_FILES_WAITING_FD, (int64_t)fd_waiting);
}

void tail_set_fd(struct tail *t, int fd)
{
    if (t->fd >= 0) close(t->fd);
    if (t->fd < 0 && fd >= 0) fd_open++;
    if (t->fd >= 0 && fd < 0) fd_open--;
    t->fd = fd;
    if (fd >= 0) {
        lru_front(t);
        t->parked = t->park_stale = 0;
        set_waiting(t, 0);
    } else {
        lru_unlink(t);
    }
    t->quiet = 0;
}

void tail_close_fd(struct tail *t) { tail_set_fd(t, -1); }

/* Can t give its descriptor back? Only a file read to its end with nothing
 * changed since (not a rotated or truncated generation being finished,
 * which might be gone when it is opened again, nor in an over-long line). */
static int parkable(const struct tail *t)
{
    return t->fd >= 0 && t->quiet && !t->reading_copy && !t->truncated && !t->lb.skipping;
}

/* Closes t's descriptor, keeping what names its file and where reading
 * stands: tail_check opens it again when its path shows a change. */
static void park(struct tail *t)
{
    struct stat st;
    tail_update_fp(t);
    if (fstat(t->fd, &st) == 0) {
        t->quiet_size = (int64_t)st.st_size;
        t->quiet_mtime_ns = tail_mtime_ns(&st);
        if (t->quiet_size > t->size) t->size = t->quiet_size;
    } else {
        t->quiet_size = -1;
    }
    tail_close_fd(t);
    lbuf_release(&t->lb);
    t->parked = 1;
}

/* Parks the least recently active parkable tail but self; 1 if one was. */
static int park_one(const struct tail *self)
{
    for (struct tail *v = lru_last; v; v = v->lru_prev)
        if (v != self && parkable(v)) { park(v); return 1; }
    return 0;
}

int tail_release_one(void) { return park_one(NULL); }

/* Room for one more descriptor within the budget, parking idle tails as
 * needed; 0 when every descriptor is held by a file being read. */
static int room_for(struct tail *self)
{
    while (fd_open >= tail_fd_budget())
        if (!park_one(self)) return 0;
    return 1;
}

int tail_open_file(struct tail *self, const char *path, struct stat *st)
{
    int fd = tail_open_regular(path, st);
    while (fd < 0 && (errno == EMFILE || errno == ENFILE) && park_one(self))
        fd = tail_open_regular(path, st);
    return fd;
}

/* The state of a tail resumed from c before it is looked at: parked, so
 * that tail_check resumes it (chain_resume) once a descriptor is free. */
static void park_checkpoint(struct tail *t, const struct ckpt *c)
{
    t->dev = c->dev;
    t->ino = c->ino;
    memcpy(t->fp, c->fp, sizeof t->fp);
    t->fp_len = c->fp_len;
    t->size = c->size;
    lbuf_reset(&t->lb, c->offset);
    t->parked = t->park_stale = 1;
    t->park_finished = c->finished;
}

/* tail_check of a parked tail: nothing while its file is unchanged at the
 * path; else its descriptor again (the same file at the path, from the
 * same offset), or, when the path names another file now (rotated while
 * parked) or it was never looked at, the resume of a checkpoint: the file
 * wherever it is now, read to its end, or reported lost. */
static int unpark(struct tail *t, int pending_zero, int64_t *new_start)
{
    struct stat pst;
    int at_path = stat(t->path, &pst) == 0 && S_ISREG(pst.st_mode) && (uint64_t)pst.st_dev == t->dev &&
                  (uint64_t)pst.st_ino == t->ino;
    if (at_path && !t->park_stale && (int64_t)pst.st_size == t->quiet_size && tail_mtime_ns(&pst) == t->quiet_mtime_ns)
        return 0;
    if (!room_for(t)) { set_waiting(t, 1); return 0; }
    if (at_path && !t->park_stale) {
        struct stat st;
        int fd = tail_open_file(t, t->path, &st);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE) set_waiting(t, 1);
            return 0;
        }
        if ((uint64_t)st.st_dev == t->dev && (uint64_t)st.st_ino == t->ino) {
            int64_t pos = t->lb.pos;
            tail_set_fd(t, fd);
            /* rewritten while parked: the truncation path of tail_check */
            if ((int64_t)st.st_size < pos || (t->fp_len && !tail_fp_matches(fd, t->fp, t->fp_len))) t->truncated = 1;
            else if ((int64_t)st.st_size > t->size) t->size = (int64_t)st.st_size;
            return 0;
        }
        close(fd);   /* replaced between the stat and the open */
    }
    if (!pending_zero) return 0;   /* another file: only with every line before settled */
    struct ckpt *c = xcalloc(1, sizeof *c);
    c->dev = t->dev;
    c->ino = t->ino;
    memcpy(c->fp, t->fp, sizeof c->fp);
    c->fp_len = t->fp_len;
    c->offset = t->lb.pos;
    c->size = t->size;
    c->finished = t->park_finished;
    t->parked = t->park_stale = 0;
    chain_resume(t, c);
    if (t->scan_short) {   /* out of descriptors in the middle: as it was */
        park_checkpoint(t, c);
        set_waiting(t, 1);
        free(c);
        return 0;
    }
    free(c);
    set_waiting(t, 0);
    *new_start = t->lb.pos;
    return 1;
}

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
    tail_set_fd(t, fd);
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

/* Opens path as the file being read, within the descriptor budget (else
 * the tail waits for a descriptor). */
static int open_file(struct tail *t, const char *path, int64_t pos)
{
    if (!room_for(t)) { set_waiting(t, 1); return GL_ERROR; }
    int fd = tail_open_file(t, path, NULL);
    if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE) set_waiting(t, 1);
        return GL_ERROR;
    }
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
    int room = room_for(t);
    if (room) chain_resume(t, resume);
    if (!room || t->scan_short) {   /* resumed once a descriptor is free */
        park_checkpoint(t, resume);
        set_waiting(t, 1);
    }
    return t;
}

void tail_free(struct tail *t)
{
    if (!t) return;
    tail_close_fd(t);
    set_waiting(t, 0);
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
    if (r == RL_LINE || r == RL_TOOLONG) {
        t->quiet = 0;
        lru_front(t);
    }
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
    int fd = tail_open_file(t, t->path, &st);
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
    if (t->parked) return unpark(t, pending_zero, new_start);
    if (t->fd < 0) {
        if (t->had_file && !room_for(t)) { set_waiting(t, 1); return 0; }
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
        if (t->scan_short) return 0;   /* out of descriptors: again at the next check */
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
        /* at its end and unchanged: may give its descriptor back (park);
         * tail_unchanged compares with this */
        t->quiet = 1;
        t->quiet_size = (int64_t)cur.st_size;
        t->quiet_mtime_ns = tail_mtime_ns(&cur);
        return 0;
    }
    /* the old offset means nothing in the new content: stop reading until
     * every line before it is settled, then switch */
    t->truncated = 1;
    if (!pending_zero) return 0;
    return chain_after_truncation(t, new_start);
}
