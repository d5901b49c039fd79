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
#include <inttypes.h>
#include <zlib.h>

/* ----------------------------------------------------------- rotated names */

static const char *const comp_ext[] = { ".gz", ".xz", ".zst", ".bz2", ".lz4", ".zip" };

int compressed_name(const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < GL_ARRAY_LEN(comp_ext); i++) {
        size_t e = strlen(comp_ext[i]);
        if (n > e && !strcmp(name + n - e, comp_ext[i])) return 1;
    }
    return 0;
}

int rotated_name_of(const char *name, const char *base, int *compressed)
{
    size_t n = strlen(base);
    if (strncmp(name, base, n) || !name[n] || !strchr(".-_", name[n])) return 0;
    const char *s = name + n + 1;
    if (!(*s >= '0' && *s <= '9')) return 0;
    size_t len = strlen(s);
    int comp = 0;
    for (size_t i = 0; i < GL_ARRAY_LEN(comp_ext); i++) {
        size_t e = strlen(comp_ext[i]);
        if (len > e && !strcmp(s + len - e, comp_ext[i])) { len -= e; comp = 1; break; }
    }
    if (strspn(s, "0123456789.-_:T") < len) return 0;
    if (compressed) *compressed = comp;
    return 1;
}

/* ------------------------------------------------------------------- tail */

struct tail {
    char *path;
    char *dir;                /* directory of path */
    const char *base;         /* file name part of path */
    int fd;                   /* -1: not open */
    uint64_t dev, ino;
    char fp[33];
    uint32_t fp_len;
    struct lbuf lb;
    int reading_copy;         /* fd is a finished generation (rotated away or a copy): read it to its end */
    int truncated;            /* truncation seen: read nothing until handled */
    int64_t last_check_ms, last_watch_ms;
    uint64_t gen;             /* see tail_gen */
    int had_file;             /* a file was read (or checkpointed) under this path */
    /* the rotation chain */
    struct tail_opts o;
    int64_t floor_ns;         /* generations older than this were read before (or are history) */
    int64_t size;             /* largest size seen of the current file with its content */
    struct gen_id done[CKPT_DONE_MAX];
    uint32_t ndone;
    struct gen_id seen[CKPT_SEEN_MAX];
    uint32_t nseen;
    uint32_t cur_flags;       /* gen_id flags of the file being read (GEN_TRUNCATED) */
    uint64_t fresh_dev, fresh_ino;   /* truncated under us: its new content is a new generation */
    int fresh;
    struct tail_loss *loss;
    size_t nloss, caploss;
};

const char *tail_path(const struct tail *t) { return t->path; }
int tail_is_open(const struct tail *t) { return t->fd >= 0; }
int tail_reads(const struct tail *t, uint64_t dev, uint64_t ino) { return t->fd >= 0 && t->dev == dev && t->ino == ino; }
int64_t tail_offset(const struct tail *t) { return t->lb.pos; }
uint64_t tail_gen(const struct tail *t) { return t->gen; }
int tail_behind(const struct tail *t) { return t->fd >= 0 && (t->reading_copy || t->truncated); }

static int64_t st_mtime_ns(const struct stat *st)
{
    return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

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

/* Does the file open on fd match the identity (fingerprint over fp_len)? */
static int fp_matches(int fd, const char *fp, uint32_t fp_len)
{
    char got[33];
    uint32_t n;
    if (file_fingerprint(fd, fp_len, got, &n) != GL_OK) return 0;
    return !strcmp(got, fp);
}

/* Makes fd (owned from now on) the file being read, from pos. */
static void adopt_fd(struct tail *t, int fd, int64_t pos)
{
    struct stat st;
    if (fstat(fd, &st) != 0) memset(&st, 0, sizeof st);
    if (t->fd >= 0) close(t->fd);
    t->fd = fd;
    t->dev = (uint64_t)st.st_dev;
    t->ino = (uint64_t)st.st_ino;
    t->size = (int64_t)st.st_size;
    t->cur_flags = 0;
    if (st_mtime_ns(&st) > t->floor_ns) t->floor_ns = st_mtime_ns(&st);
    t->fp_len = 0;
    t->fp[0] = '\0';
    update_fp(t);
    lbuf_reset(&t->lb, pos);
}

/* Opens path for reading if it is a regular file, else -1 (errno EINVAL for
 * another kind): O_NONBLOCK, so a FIFO or device at a followed name never
 * blocks open() (it has no effect on a regular file's reads). The caller owns
 * the fd; st (may be NULL) gets its fstat. */
static int open_regular(const char *path, struct stat *st)
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
    int fd = open_regular(path, NULL);
    if (fd < 0) return GL_ERROR;
    adopt_fd(t, fd, pos);
    return GL_OK;
}

static void cur_id(const struct tail *t, struct gen_id *g)
{
    memset(g, 0, sizeof *g);
    g->dev = t->dev;
    g->ino = t->ino;
    memcpy(g->fp, t->fp, sizeof g->fp);
    g->fp_len = t->fp_len;
    g->end = t->lb.pos;
    g->flags = t->cur_flags;
}

static void add_loss(struct tail *t, const char *reason, const char *name, const struct gen_id *g,
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

static void done_push(struct tail *t, const struct gen_id *g)
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

static void seen_remove(struct tail *t, uint32_t i)
{
    memmove(t->seen + i, t->seen + i + 1, (t->nseen - i - 1) * sizeof *t->seen);
    t->nseen--;
}

/* Lines (newlines, and a last partial line) in [from, end of fd). */
static int64_t count_lines(int fd, int64_t from)
{
    char b[65536];
    int64_t n = 0, pos = from;
    int partial = 0;
    for (;;) {
        ssize_t r = pread(fd, b, sizeof b, pos);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        for (ssize_t i = 0; i < r; i++) if (b[i] == '\n') n++;
        partial = b[r - 1] != '\n';
        pos += r;
    }
    return n + partial;
}

/* ------------------------------------------------------------ candidates */

/* A file that may be a generation of the path: the path itself or a
 * rotated name of it. */
struct cand {
    char name[512];           /* dir/name */
    const char *suffix;       /* after base and its separator; NULL for the path (set again after qsort) */
    int fd;                   /* plain files: open; -1 otherwise */
    int compressed;
    uint64_t dev, ino;
    int64_t size, mtime_ns;
    int64_t start;            /* where reading would start */
    int eligible;
    int reported;             /* compressed: already reported as a lost generation */
    char *head;               /* plain files: the first FP_HEAD_MAX bytes (fingerprints) */
    size_t headlen;
};

static void cands_free(struct cand *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (c[i].fd >= 0) close(c[i].fd);
        free(c[i].head);
    }
    free(c);
}

static void fix_suffixes(const struct tail *t, struct cand *c, size_t n)
{
    size_t skip = strlen(t->dir) + 1 + strlen(t->base);
    for (size_t i = 0; i < n; i++)
        c[i].suffix = c[i].name[skip] ? c[i].name + skip + 1 : NULL;
}

/* Lists the path and its rotated names, opening the plain ones. */
static struct cand *scan_cands(struct tail *t, size_t *np)
{
    struct cand *c = NULL;
    size_t n = 0, cap = 0;
    DIR *d = opendir(t->dir);
    if (!d) { *np = 0; return NULL; }
    struct dirent *de;
    while ((de = readdir(d))) {
        int comp = 0, is_path = !strcmp(de->d_name, t->base);
        if (!is_path && !rotated_name_of(de->d_name, t->base, &comp)) continue;
        if (n == cap) { cap = cap ? cap * 2 : 16; c = xrealloc(c, cap * sizeof *c); }
        struct cand *k = &c[n];
        memset(k, 0, sizeof *k);
        k->fd = -1;
        if ((size_t)snprintf(k->name, sizeof k->name, "%s/%s", t->dir, de->d_name) >= sizeof k->name) continue;
        struct stat st;
        if (comp) {
            if (stat(k->name, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        } else {
            k->fd = open_regular(k->name, &st);
            if (k->fd < 0) continue;
            k->head = xmalloc(FP_HEAD_MAX);
            ssize_t r;
            do r = pread(k->fd, k->head, FP_HEAD_MAX, 0); while (r < 0 && errno == EINTR);
            k->headlen = r > 0 ? (size_t)r : 0;
        }
        k->compressed = comp;
        k->dev = (uint64_t)st.st_dev;
        k->ino = (uint64_t)st.st_ino;
        k->size = (int64_t)st.st_size;
        k->mtime_ns = st_mtime_ns(&st);
        n++;
    }
    closedir(d);
    fix_suffixes(t, c, n);
    *np = n;
    return c;
}

/* Content of c starts like g (a copy or the file itself). */
static int cand_content(const struct cand *c, const struct gen_id *g)
{
    char fp[33];
    uint32_t fl;
    return c->head && g->fp_len > 0 && fingerprint_buf(c->head, c->headlen, g->fp_len, fp, &fl) == GL_OK &&
           !strcmp(fp, g->fp);
}

static int cand_is(const struct cand *c, const struct gen_id *g)
{
    return c->dev == g->dev && c->ino == g->ino;
}

/* c holds the generation g was seen as: the same file (its content
 * unchanged, as far as g knows it) or a copy of it (copytruncate). */
static int cand_holds(const struct cand *c, const struct gen_id *g)
{
    if (c->fd < 0) return 0;
    return cand_is(c, g) ? g->fp_len == 0 || cand_content(c, g) : c->size > 0 && cand_content(c, g);
}

/* A gzip file whose content starts like g: the generation was compressed. */
static int gz_matches(const char *name, const struct gen_id *g)
{
    size_t n = strlen(name);
    if (g->fp_len == 0 || n < 3 || strcmp(name + n - 3, ".gz")) return 0;
    gzFile z = gzopen(name, "rb");
    if (!z) return 0;
    char head[FP_HEAD_MAX];
    int r = gzread(z, head, sizeof head);
    gzclose(z);
    char fp[33];
    uint32_t fl;
    return r > 0 && fingerprint_buf(head, (size_t)r, g->fp_len, fp, &fl) == GL_OK && !strcmp(fp, g->fp);
}

/* Why a generation we know of is not among the plain candidates; marks
 * the compressed file that holds it as reported. */
static const char *gone_reason(struct cand *c, size_t n, const struct gen_id *g)
{
    for (size_t i = 0; i < n; i++)
        if (c[i].compressed && !c[i].reported && gz_matches(c[i].name, g)) { c[i].reported = 1; return "compressed"; }
    return "deleted";
}

/* Rotation number of a name suffix ("3" of NAME.3 or NAME.3.gz), -1 if
 * not a number. */
static long suffix_num(const char *s)
{
    if (!s) return -1;
    size_t k = strspn(s, "0123456789");
    if (!k || k > 9 || (s[k] && !compressed_name(s))) return -1;
    if (s[k] && s[k] != '.') return -1;
    if (s[k] && strchr(s + k + 1, '.')) return -1;   /* NAME.3.1.gz is not numbered */
    return atol(s);
}

/* Order of generations: older first (mtime, then the path last, then
 * higher rotation numbers first, then names: dates sort as they read). */
static int cand_cmp(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    if (x->mtime_ns != y->mtime_ns) return x->mtime_ns < y->mtime_ns ? -1 : 1;
    if (!x->suffix || !y->suffix) return !x->suffix - !y->suffix;
    long nx = suffix_num(x->suffix), ny = suffix_num(y->suffix);
    if (nx >= 0 && ny >= 0 && nx != ny) return nx > ny ? -1 : 1;
    return strcmp(x->suffix, y->suffix);
}

/* Marks which candidates are generations not read yet. */
static void mark_eligible(struct tail *t, struct cand *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct cand *k = &c[i];
        k->eligible = 0;
        k->start = 0;
        if (k->compressed || k->fd < 0) continue;
        if (t->fresh && k->dev == t->fresh_dev && k->ino == t->fresh_ino) { k->eligible = 1; continue; }
        int excluded = 0, cont = 0;
        for (uint32_t j = 0; j < t->ndone && !excluded; j++) {
            const struct gen_id *d = &t->done[j];
            int same = cand_is(k, d) && (d->fp_len == 0 ? k->size <= d->end : cand_content(k, d));
            int copy = (d->flags & GEN_TRUNCATED) && !cand_is(k, d) && cand_content(k, d);
            if (!same && !copy) continue;
            if (k->size <= d->end) excluded = 1;
            else { cont = 1; k->start = d->end; }   /* grew after we finished it, or a fuller copy */
        }
        if (excluded) continue;
        if (cont) { k->eligible = 1; continue; }
        int seen = 0;
        for (uint32_t j = 0; j < t->nseen && !seen; j++)
            seen = cand_holds(k, &t->seen[j]);
        if (seen || !k->suffix) { k->eligible = 1; continue; }
        if (k->size == 0 || k->mtime_ns < t->floor_ns) continue;   /* empty, or history */
        k->eligible = 1;
    }
}

/* After the current generation is finished (or gone): records the known
 * generations that disappeared, applies the bounds, and opens the oldest
 * generation not read yet (or nothing, when the path does not exist).
 * Returns 1 when a file was opened. */
static int pick_next(struct tail *t)
{
    char prev_suffix[64] = "";
    if (t->fd >= 0) {
        struct gen_id g;
        cur_id(t, &g);
        done_push(t, &g);
    }
    size_t n;
    struct cand *c = scan_cands(t, &n);
    /* where the finished generation sits now (for the gap check below) */
    if (t->fd >= 0)
        for (size_t i = 0; i < n; i++)
            if (c[i].suffix && c[i].dev == t->dev && c[i].ino == t->ino)
                snprintf(prev_suffix, sizeof prev_suffix, "%s", c[i].suffix);
    /* generations seen at the path that are not there any more */
    int seen_deleted = 0;
    for (uint32_t j = 0; j < t->nseen;) {
        const struct gen_id *s = &t->seen[j];
        int found = 0;
        for (size_t i = 0; i < n && !found; i++)
            found = cand_holds(&c[i], s);
        if (found) { j++; continue; }
        const char *why = gone_reason(c, n, s);
        char what[600];
        snprintf(what, sizeof what, "%s (a generation seen at the path, inode %" PRIu64 ")", t->path, s->ino);
        add_loss(t, why, what, s, 0, -1, -1);
        seen_deleted += !strcmp(why, "deleted");
        seen_remove(t, j);
    }
    mark_eligible(t, c, n);
    qsort(c, n, sizeof *c, cand_cmp);
    fix_suffixes(t, c, n);   /* they pointed into the elements' old places */
    /* bounds: age, then number of rotated generations */
    int64_t now_ns = gl_now_ms() * 1000000;
    int64_t max_age_ns = (t->o.max_age_ms ? t->o.max_age_ms : INT64_C(7) * 86400 * 1000) * 1000000;
    int max_gens = t->o.max_gens ? t->o.max_gens : 64;
    int rotated = 0;
    for (size_t i = 0; i < n; i++) {
        struct cand *k = &c[i];
        if (!k->eligible || !k->suffix) continue;
        if (k->mtime_ns < now_ns - max_age_ns) {
            struct gen_id g = { .dev = k->dev, .ino = k->ino };
            add_loss(t, "too_old", k->name, &g, k->start, k->size, count_lines(k->fd, k->start));
            k->eligible = 0;
            continue;
        }
        rotated++;
    }
    for (size_t i = 0; i < n && rotated > max_gens; i++) {
        struct cand *k = &c[i];
        if (!k->eligible || !k->suffix) continue;
        struct gen_id g = { .dev = k->dev, .ino = k->ino };
        add_loss(t, "too_many", k->name, &g, k->start, k->size, count_lines(k->fd, k->start));
        k->eligible = 0;
        rotated--;
    }
    struct cand *next = NULL;
    for (size_t i = 0; i < n && !next; i++) if (c[i].eligible) next = &c[i];
    /* numbered rotation: NAME.k finished, NAME.j next; NAME.j+1 .. NAME.k-1
     * were generations in between: each one that is gone or compressed is
     * lost (unless already reported above) */
    long pk = suffix_num(prev_suffix[0] ? prev_suffix : NULL);
    long nj = next && next->suffix ? suffix_num(next->suffix) : (next ? 0 : -1);
    if (pk > 0 && nj >= 0 && pk - nj > 1 && pk - nj < 1000) {
        char sep = '.';
        for (size_t i = 0; i < n; i++)   /* the separator the rotation uses */
            if (c[i].suffix && !strcmp(c[i].suffix, prev_suffix)) sep = c[i].suffix[-1];
        for (long m = nj + 1; m < pk; m++) {
            struct cand *at = NULL;
            for (size_t i = 0; i < n; i++)
                if (c[i].suffix && suffix_num(c[i].suffix) == m && (!at || at->compressed)) at = &c[i];
            if (at && !at->compressed) continue;
            if (at && at->reported) continue;
            if (!at && seen_deleted > 0) { seen_deleted--; continue; }
            char what[600];
            snprintf(what, sizeof what, "%s%c%ld", t->path, sep, m);
            add_loss(t, at ? "compressed" : "deleted", at ? at->name : what, NULL, 0, -1, -1);
        }
    }
    int opened = 0;
    if (next) {
        int fd = next->fd;
        next->fd = -1;
        int64_t start = next->start;
        if (t->fresh && next->dev == t->fresh_dev && next->ino == t->fresh_ino) t->fresh = 0;
        adopt_fd(t, fd, start);
        struct gen_id g;
        cur_id(t, &g);
        for (uint32_t j = 0; j < t->nseen;) {   /* it is being read now */
            if (cand_is(next, &t->seen[j]) || (t->seen[j].fp_len && g.fp_len >= t->seen[j].fp_len &&
                                                fp_matches(t->fd, t->seen[j].fp, t->seen[j].fp_len)))
                seen_remove(t, j);
            else j++;
        }
        t->reading_copy = next->suffix != NULL;
        next_file(t);
        opened = 1;
        log_info("msg=\"next generation\" path=\"%s\" file=\"%s\" offset=%" PRId64 " generation=%" PRIu64,
                 t->path, next->name, start, t->gen);
    } else {
        if (t->fd >= 0) close(t->fd);
        t->fd = -1;
        t->reading_copy = 0;
    }
    cands_free(c, n);
    return opened;
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
        if (open_file(t, path, 0) == GL_OK) next_file(t);
        return t;
    }
    t->gen = resume->gen;
    t->had_file = 1;
    t->floor_ns = resume->floor_ns;
    t->ndone = resume->ndone <= CKPT_DONE_MAX ? resume->ndone : CKPT_DONE_MAX;
    memcpy(t->done, resume->done, t->ndone * sizeof *t->done);
    t->nseen = resume->nseen <= CKPT_SEEN_MAX ? resume->nseen : CKPT_SEEN_MAX;
    memcpy(t->seen, resume->seen, t->nseen * sizeof *t->seen);
    struct gen_id want = { .dev = resume->dev, .ino = resume->ino, .fp_len = resume->fp_len, .end = resume->offset };
    memcpy(want.fp, resume->fp, sizeof want.fp);
    size_t n;
    struct cand *c = scan_cands(t, &n);
    /* the checkpointed file: at the path, renamed, or copied by copytruncate */
    struct cand *at = NULL;
    int truncated_at_path = 0;
    for (size_t i = 0; i < n && !at; i++)
        if (c[i].fd >= 0 && cand_is(&c[i], &want) && c[i].size >= resume->offset &&
            (want.fp_len == 0 || cand_content(&c[i], &want)))
            at = &c[i];
    for (size_t i = 0; i < n && !at; i++) {
        if (c[i].fd >= 0 && cand_is(&c[i], &want)) truncated_at_path |= !c[i].suffix;
        if (c[i].fd >= 0 && !cand_is(&c[i], &want) && c[i].suffix && want.fp_len == 256 &&
            c[i].size >= resume->offset && cand_content(&c[i], &want))
            at = &c[i];
    }
    if (at) {
        int fd = at->fd;
        at->fd = -1;
        adopt_fd(t, fd, resume->offset);
        memcpy(t->fp, resume->fp, sizeof t->fp);
        t->fp_len = resume->fp_len;
        update_fp(t);
        t->reading_copy = at->suffix != NULL;
        if (!cand_is(at, &want)) t->cur_flags = GEN_TRUNCATED;   /* a copytruncate copy */
        if (t->reading_copy)
            log_info("msg=\"rotated while stopped: reading the checkpointed file to its end first\" path=\"%s\" file=\"%s\" offset=%" PRId64,
                     path, at->name, resume->offset);
        cands_free(c, n);
        return t;
    }
    /* the checkpointed generation is gone: a loss unless it was a finished
     * (rotated) file read to its end; a file that was still at the path may
     * have grown after we stopped, so the end of the loss is unknown then */
    const char *why = truncated_at_path ? "truncated" : gone_reason(c, n, &want);
    cands_free(c, n);
    if (resume->finished && resume->offset >= resume->size && strcmp(why, "compressed"))
        log_info("msg=\"the checkpointed rotated file is gone; it had been read to its end\" path=\"%s\" offset=%" PRId64,
                 path, resume->offset);
    else
    {
        add_loss(t, why, path, &want, resume->offset, resume->size > resume->offset ? resume->size : -1, -1);
        t->loss[t->nloss - 1].more = !resume->finished;
    }
    if (truncated_at_path) want.flags = GEN_TRUNCATED;
    done_push(t, &want);
    if (truncated_at_path) { t->fresh = 1; t->fresh_dev = want.dev; t->fresh_ino = want.ino; }
    pick_next(t);
    if (t->fd < 0) log_warn("msg=\"checkpointed file gone and the path does not exist: waiting for it\" path=\"%s\"", path);
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
    int fd = open_regular(t->path, &st);
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
                seen_remove(t, 0);
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
        int opened = t->had_file ? pick_next(t) : open_file(t, t->path, 0) == GL_OK;
        if (!opened) return 0;
        if (!t->had_file || t->lb.pos == 0) {
            if (!t->had_file) next_file(t);
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
        pick_next(t);
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
    if (!truncated && t->fp_len > 0 && !fp_matches(t->fd, t->fp, t->fp_len)) truncated = 1;
    if (!truncated) {
        if ((int64_t)cur.st_size > t->size) t->size = (int64_t)cur.st_size;
        return 0;
    }
    /* the old offset means nothing in the new content: stop reading until
     * every line before it is settled, then switch */
    t->truncated = 1;
    if (!pending_zero) return 0;
    t->truncated = 0;
    /* the file's new content is the next generation whatever it starts with */
    t->fresh = 1;
    t->fresh_dev = t->dev;
    t->fresh_ino = t->ino;
    /* copytruncate: lines written after our last read are in the copy */
    int64_t old_pos = t->lb.pos;
    struct gen_id me;
    cur_id(t, &me);
    size_t n;
    struct cand *c = scan_cands(t, &n);
    struct cand *copy = NULL;
    for (size_t i = 0; i < n; i++)
        if (c[i].suffix && !cand_is(&c[i], &me) && c[i].size > old_pos && cand_content(&c[i], &me) &&
            (!copy || c[i].size > copy->size))
            copy = &c[i];
    if (copy) {
        int fd = copy->fd;
        copy->fd = -1;
        log_info("msg=\"truncation (copytruncate): reading the copy from the old offset\" path=\"%s\" file=\"%s\" offset=%lld",
                 t->path, copy->name, (long long)old_pos);
        adopt_fd(t, fd, old_pos);
        memcpy(t->fp, me.fp, sizeof t->fp);
        t->fp_len = me.fp_len;
        update_fp(t);
        t->cur_flags = GEN_TRUNCATED;   /* other copies of this content are this generation too */
        t->reading_copy = 1;
        cands_free(c, n);
        return 0;   /* same offsets continue in the copy */
    }
    int had_copy = 0;
    for (size_t i = 0; i < n; i++)
        had_copy |= c[i].suffix && !cand_is(&c[i], &me) && cand_content(&c[i], &me);
    if (!had_copy && t->size > old_pos) {
        const char *why = gone_reason(c, n, &me);
        add_loss(t, !strcmp(why, "compressed") ? why : "truncated", t->path, &me, old_pos, t->size, -1);
    }
    cands_free(c, n);
    log_info("msg=\"truncation: the file holds a new generation\" path=\"%s\" old_offset=%lld", t->path, (long long)old_pos);
    t->cur_flags = GEN_TRUNCATED;   /* a late copy of the old content is not a new generation */
    pick_next(t);
    *new_start = t->lb.pos;
    return 1;
}
