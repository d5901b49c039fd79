/*
 * spool.c - append-only on-disk spool for sources that cannot be read again
 * (--exec children, stdin, /dev/kmsg); see source.h.
 *
 * Design choice: every line of such a source is written here before it is
 * parsed, so the spool is both the outage buffer (when Kafka is down the
 * reader falls behind and the spool grows, up to --spool-max, then the
 * collector stops reading the child: backpressure) and the crash log (a
 * restart re-reads from the checkpoint). Tailed files are not copied: they
 * are on disk already and the checkpoint protects them; when the sink is
 * full the collector simply stops reading them.
 */
#include "source.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SEG_BYTES (4 * 1024 * 1024)

struct spool {
    char *dir;
    int64_t *seg;             /* base offsets of the segments, ascending */
    int64_t *seglen;          /* their sizes (last one grows) */
    size_t nseg, capseg;
    /* writer: appends to the last segment */
    int wfd;
    struct buf wbuf;
    int dirty;                /* written since the last fsync */
    /* reader */
    int rfd;
    size_t rseg;              /* index of the segment being read */
    struct lbuf lb;           /* positions are segment-relative */
};

static char *seg_name(const struct spool *s, int64_t base)
{
    struct buf b;
    buf_init(&b);
    buf_printf(&b, "%s/%020" PRId64 ".seg", s->dir, base);
    return b.p;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void add_seg(struct spool *s, int64_t base, int64_t len)
{
    if (s->nseg == s->capseg) {
        s->capseg = s->capseg ? s->capseg * 2 : 16;
        s->seg = xrealloc(s->seg, s->capseg * sizeof *s->seg);
        s->seglen = xrealloc(s->seglen, s->capseg * sizeof *s->seglen);
    }
    s->seg[s->nseg] = base;
    s->seglen[s->nseg] = len;
    s->nseg++;
}

static int new_segment(struct spool *s, int64_t base)
{
    char *name = seg_name(s, base);
    int fd = open(name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    free(name);
    if (fd < 0) return GL_ERROR;
    if (s->wfd >= 0) { fsync(s->wfd); close(s->wfd); }
    s->wfd = fd;
    add_seg(s, base, 0);
    return GL_OK;
}

static int open_reader(struct spool *s, size_t i, int64_t rel)
{
    if (s->rfd >= 0) close(s->rfd);
    char *name = seg_name(s, s->seg[i]);
    s->rfd = open(name, O_RDONLY | O_CLOEXEC);
    free(name);
    s->rseg = i;
    lbuf_reset(&s->lb, rel);
    return s->rfd >= 0 ? GL_OK : GL_ERROR;
}

struct spool *spool_open(const char *dir, int64_t start, size_t max_line, char *err, size_t errlen)
{
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return NULL;
    }
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return NULL;
    }
    struct spool *s = xcalloc(1, sizeof *s);
    s->dir = xstrdup(dir);
    s->wfd = s->rfd = -1;
    buf_init(&s->wbuf);
    lbuf_init(&s->lb, 0, max_line + 32);
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n != 24 || strcmp(de->d_name + 20, ".seg")) continue;
        add_seg(s, strtoll(de->d_name, NULL, 10), 0);
    }
    closedir(d);
    if (s->nseg) qsort(s->seg, s->nseg, sizeof *s->seg, cmp_i64);
    int64_t end = start;
    for (size_t i = 0; i < s->nseg; i++) {
        struct stat st;
        char *name = seg_name(s, s->seg[i]);
        s->seglen[i] = stat(name, &st) == 0 ? st.st_size : 0;
        free(name);
        if (s->seg[i] + s->seglen[i] > end) end = s->seg[i] + s->seglen[i];
    }
    /* drop segments wholly before the checkpoint */
    spool_release(s, start);
    /* a restart always writes a fresh segment after everything that exists,
     * so offsets (and event ids) are never reused */
    if (new_segment(s, end) != GL_OK) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        spool_free(s);
        return NULL;
    }
    for (size_t i = 0; i < s->nseg; i++) {
        if (start < s->seg[i] + s->seglen[i] || i + 1 == s->nseg) {
            int64_t rel = start > s->seg[i] ? start - s->seg[i] : 0;
            if (rel > s->seglen[i] && i + 1 < s->nseg) rel = s->seglen[i];
            if (open_reader(s, i, rel) != GL_OK) {
                snprintf(err, errlen, "%s: %s", dir, strerror(errno));
                spool_free(s);
                return NULL;
            }
            break;
        }
    }
    return s;
}

void spool_free(struct spool *s)
{
    if (!s) return;
    spool_flush(s);
    if (s->wfd >= 0) { fsync(s->wfd); close(s->wfd); }
    if (s->rfd >= 0) close(s->rfd);
    buf_free(&s->wbuf);
    lbuf_free(&s->lb);
    free(s->seg);
    free(s->seglen);
    free(s->dir);
    free(s);
}

void spool_append(struct spool *s, int64_t ms, const char *line, size_t len)
{
    buf_put_i64(&s->wbuf, ms);
    buf_putc(&s->wbuf, ' ');
    /* a record is one line: a stray NUL or CR is kept, a newline cannot occur */
    buf_append(&s->wbuf, line, len);
    buf_putc(&s->wbuf, '\n');
    if (s->wbuf.len >= 65536) spool_flush(s);
}

int spool_flush(struct spool *s)
{
    if (!s->wbuf.len) return GL_OK;
    size_t last = s->nseg - 1;
    if (s->seglen[last] >= SEG_BYTES) {
        if (new_segment(s, s->seg[last] + s->seglen[last]) != GL_OK) {
            log_error("msg=\"spool: cannot create a segment\" dir=\"%s\" error=\"%s\"", s->dir, strerror(errno));
            return GL_ERROR;
        }
        last = s->nseg - 1;
    }
    size_t off = 0;
    while (off < s->wbuf.len) {
        ssize_t n = write(s->wfd, s->wbuf.p + off, s->wbuf.len - off);
        if (n < 0) {
            if (errno == EINTR) continue;
            log_error("msg=\"spool: write failed\" dir=\"%s\" error=\"%s\"", s->dir, strerror(errno));
            /* keep what is unwritten; retried on the next flush */
            memmove(s->wbuf.p, s->wbuf.p + off, s->wbuf.len - off);
            s->wbuf.len -= off;
            s->seglen[last] += (int64_t)off;
            return GL_ERROR;
        }
        off += (size_t)n;
    }
    s->seglen[last] += (int64_t)s->wbuf.len;
    buf_reset(&s->wbuf);
    s->dirty = 1;
    return GL_OK;
}

int spool_sync(struct spool *s)
{
    if (!s->dirty || s->wfd < 0) return GL_OK;
    s->dirty = 0;
    return fsync(s->wfd) == 0 ? GL_OK : GL_ERROR;
}

int spool_next(struct spool *s, struct rline *l)
{
    for (;;) {
        if (s->rfd < 0) return RL_AGAIN;
        int is_last = s->rseg + 1 == s->nseg;
        int r = lbuf_next(&s->lb, s->rfd, !is_last, l);
        if (r == RL_AGAIN) {
            if (is_last) return RL_AGAIN;
            if (open_reader(s, s->rseg + 1, 0) != GL_OK) return RL_IOERR;
            continue;
        }
        if (r == RL_IOERR) return r;
        int64_t base = s->seg[s->rseg];
        l->off += base;
        l->end += base;
        if (r == RL_TOOLONG) return r;
        /* "MS LINE" */
        const char *sp = memchr(l->p, ' ', l->len);
        int64_t ms = 0;
        if (!sp || !gl_parse_i64(l->p, (size_t)(sp - l->p), &ms)) {
            l->ms = 0;   /* damaged record: pass it on as it is */
            return RL_LINE;
        }
        l->ms = ms;
        l->len -= (size_t)(sp + 1 - l->p);
        l->p = sp + 1;
        return RL_LINE;
    }
}

void spool_release(struct spool *s, int64_t committed)
{
    size_t drop = 0;
    /* never the last (active) segment, never the one being read */
    while (drop + 1 < s->nseg && s->seg[drop] + s->seglen[drop] <= committed &&
           (s->rfd < 0 || drop < s->rseg))
        drop++;
    if (!drop) return;
    for (size_t i = 0; i < drop; i++) {
        char *name = seg_name(s, s->seg[i]);
        unlink(name);
        free(name);
    }
    memmove(s->seg, s->seg + drop, (s->nseg - drop) * sizeof *s->seg);
    memmove(s->seglen, s->seglen + drop, (s->nseg - drop) * sizeof *s->seglen);
    s->nseg -= drop;
    if (s->rfd >= 0) s->rseg -= drop;
}

int64_t spool_bytes(const struct spool *s)
{
    int64_t n = (int64_t)s->wbuf.len;
    for (size_t i = 0; i < s->nseg; i++) n += s->seglen[i];
    return n;
}

int64_t spool_backlog(const struct spool *s)
{
    if (s->rfd < 0 || !s->nseg) return 0;
    int64_t n = (int64_t)s->wbuf.len;
    for (size_t i = s->rseg; i < s->nseg; i++) n += s->seglen[i];
    return n - s->lb.pos;
}
