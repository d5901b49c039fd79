/*
 * tail_chain.c - the rotation chain of a followed path (see tail.c): the
 * rotated names (NAME.1, NAME-DATE, compressed ones), the candidates for
 * the next generation in the path's directory, their order, which of them
 * are generations not read yet, the bounds (age, number), and every known
 * generation that is gone (deleted, compressed, truncated, beyond the
 * bounds) reported as a loss, never skipped in silence.
 */
#include "tail_int.h"

#include <dirent.h>
#include <errno.h>
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

void chain_free(struct cand *c, size_t n)
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
struct cand *chain_scan(struct tail *t, size_t *np)
{
    struct cand *c = NULL;
    size_t n = 0, cap = 0;
    t->scan_short = 0;
    DIR *d = opendir(t->dir);
    if (!d) {
        t->scan_short = errno == EMFILE || errno == ENFILE;
        *np = 0;
        return NULL;
    }
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
            k->fd = tail_open_file(t, k->name, &st);
            if (k->fd < 0) {
                /* out of descriptors: the list is not whole, decide nothing */
                if (errno == EMFILE || errno == ENFILE) t->scan_short = 1;
                continue;
            }
            k->head = xmalloc(FP_HEAD_MAX);
            ssize_t r;
            do r = pread(k->fd, k->head, FP_HEAD_MAX, 0); while (r < 0 && errno == EINTR);
            k->headlen = r > 0 ? (size_t)r : 0;
        }
        k->compressed = comp;
        k->dev = (uint64_t)st.st_dev;
        k->ino = (uint64_t)st.st_ino;
        k->size = (int64_t)st.st_size;
        k->mtime_ns = tail_mtime_ns(&st);
        n++;
    }
    closedir(d);
    fix_suffixes(t, c, n);
    *np = n;
    return c;
}

/* Content of c starts like g (a copy or the file itself). */
int chain_cand_content(const struct cand *c, const struct gen_id *g)
{
    char fp[33];
    uint32_t fl;
    return c->head && g->fp_len > 0 && fingerprint_buf(c->head, c->headlen, g->fp_len, fp, &fl) == GL_OK &&
           !strcmp(fp, g->fp);
}

int chain_cand_is(const struct cand *c, const struct gen_id *g)
{
    return c->dev == g->dev && c->ino == g->ino;
}

/* c holds the generation g was seen as: the same file (its content
 * unchanged, as far as g knows it) or a copy of it (copytruncate). */
static int cand_holds(const struct cand *c, const struct gen_id *g)
{
    if (c->fd < 0) return 0;
    return chain_cand_is(c, g) ? g->fp_len == 0 || chain_cand_content(c, g) : c->size > 0 && chain_cand_content(c, g);
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
const char *chain_gone_reason(struct cand *c, size_t n, const struct gen_id *g)
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
            int same = chain_cand_is(k, d) && (d->fp_len == 0 ? k->size <= d->end : chain_cand_content(k, d));
            int copy = (d->flags & GEN_TRUNCATED) && !chain_cand_is(k, d) && chain_cand_content(k, d);
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

/* The generations seen at the path that are among none of the n
 * candidates any more are lost (deleted or compressed): reported and
 * forgotten. Returns how many of them were deleted. */
static int report_seen_gone(struct tail *t, struct cand *c, size_t n)
{
    int seen_deleted = 0;
    for (uint32_t j = 0; j < t->nseen;) {
        const struct gen_id *s = &t->seen[j];
        int found = 0;
        for (size_t i = 0; i < n && !found; i++)
            found = cand_holds(&c[i], s);
        if (found) { j++; continue; }
        const char *why = chain_gone_reason(c, n, s);
        char what[600];
        snprintf(what, sizeof what, "%s (a generation seen at the path, inode %" PRIu64 ")", t->path, s->ino);
        tail_add_loss(t, why, what, s, 0, -1, -1);
        seen_deleted += !strcmp(why, "deleted");
        tail_seen_remove(t, j);
    }
    return seen_deleted;
}

/* The bounds on the n candidates (sorted oldest first): rotated generations
 * older than max_age, then the oldest beyond max_gens, are not read and are
 * reported as lost (too_old, too_many). */
static void apply_bounds(struct tail *t, struct cand *c, size_t n)
{
    int64_t now_ns = gl_now_ms() * 1000000;
    int64_t max_age_ns = (t->o.max_age_ms ? t->o.max_age_ms : INT64_C(7) * 86400 * 1000) * 1000000;
    int max_gens = t->o.max_gens ? t->o.max_gens : 64;
    int rotated = 0;
    for (size_t i = 0; i < n; i++) {
        struct cand *k = &c[i];
        if (!k->eligible || !k->suffix) continue;
        if (k->mtime_ns < now_ns - max_age_ns) {
            struct gen_id g = { .dev = k->dev, .ino = k->ino };
            tail_add_loss(t, "too_old", k->name, &g, k->start, k->size, count_lines(k->fd, k->start));
            k->eligible = 0;
            continue;
        }
        rotated++;
    }
    for (size_t i = 0; i < n && rotated > max_gens; i++) {
        struct cand *k = &c[i];
        if (!k->eligible || !k->suffix) continue;
        struct gen_id g = { .dev = k->dev, .ino = k->ino };
        tail_add_loss(t, "too_many", k->name, &g, k->start, k->size, count_lines(k->fd, k->start));
        k->eligible = 0;
        rotated--;
    }
}

/* Numbered rotation: NAME.k (prev_suffix) finished, next is NAME.j;
 * NAME.j+1 .. NAME.k-1 were generations in between: each one that is gone
 * or compressed is lost, unless already reported (seen_deleted: deleted
 * generations report_seen_gone reported). */
static void report_numbered_gap(struct tail *t, struct cand *c, size_t n, const char *prev_suffix,
                                const struct cand *next, int seen_deleted)
{
    long pk = suffix_num(prev_suffix[0] ? prev_suffix : NULL);
    long nj = next && next->suffix ? suffix_num(next->suffix) : (next ? 0 : -1);
    if (!(pk > 0 && nj >= 0 && pk - nj > 1 && pk - nj < 1000)) return;
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
        tail_add_loss(t, at ? "compressed" : "deleted", at ? at->name : what, NULL, 0, -1, -1);
    }
}

/* Makes candidate next (its fd taken over) the file being read: a new
 * generation; the seen generations it is are forgotten. */
static void open_next(struct tail *t, struct cand *next)
{
    int fd = next->fd;
    next->fd = -1;
    int64_t start = next->start;
    if (t->fresh && next->dev == t->fresh_dev && next->ino == t->fresh_ino) t->fresh = 0;
    tail_adopt_fd(t, fd, start);
    struct gen_id g;
    tail_cur_id(t, &g);
    for (uint32_t j = 0; j < t->nseen;) {   /* it is being read now */
        if (chain_cand_is(next, &t->seen[j]) || (t->seen[j].fp_len && g.fp_len >= t->seen[j].fp_len &&
                                                 tail_fp_matches(t->fd, t->seen[j].fp, t->seen[j].fp_len)))
            tail_seen_remove(t, j);
        else j++;
    }
    t->reading_copy = next->suffix != NULL;
    tail_next_file(t);
    log_info("msg=\"next generation\" path=\"%s\" file=\"%s\" offset=%" PRId64 " generation=%" PRIu64,
             t->path, next->name, start, t->gen);
}

/* After the current generation is finished (or gone): records the known
 * generations that disappeared, applies the bounds, and opens the oldest
 * generation not read yet (or nothing, when the path does not exist).
 * Returns 1 when a file was opened. */
int chain_pick_next(struct tail *t)
{
    char prev_suffix[64] = "";
    if (t->fd >= 0) {
        struct gen_id g;
        tail_cur_id(t, &g);
        tail_done_push(t, &g);
    }
    size_t n;
    struct cand *c = chain_scan(t, &n);
    if (t->scan_short) {   /* again at the next check, the current file kept */
        chain_free(c, n);
        return 0;
    }
    /* where the finished generation sits now (for the gap check below) */
    if (t->fd >= 0)
        for (size_t i = 0; i < n; i++)
            if (c[i].suffix && c[i].dev == t->dev && c[i].ino == t->ino)
                snprintf(prev_suffix, sizeof prev_suffix, "%s", c[i].suffix);
    /* generations seen at the path that are not there any more */
    int seen_deleted = report_seen_gone(t, c, n);
    mark_eligible(t, c, n);
    qsort(c, n, sizeof *c, cand_cmp);
    fix_suffixes(t, c, n);   /* they pointed into the elements' old places */
    apply_bounds(t, c, n);
    struct cand *next = NULL;
    for (size_t i = 0; i < n && !next; i++) if (c[i].eligible) next = &c[i];
    report_numbered_gap(t, c, n, prev_suffix, next, seen_deleted);
    if (next) {
        open_next(t, next);
    } else {
        tail_close_fd(t);
        t->reading_copy = 0;
    }
    chain_free(c, n);
    return next != NULL;
}

/* Resuming from a checkpoint (after tail_new set the generation, floor,
 * done and seen lists): opens the checkpointed file where it is now, at
 * the path, renamed, or copied by copytruncate, from its offset; else
 * reports it as lost (unless it was a finished rotated file read to its
 * end) and opens the oldest generation not read yet. */
void chain_resume(struct tail *t, const struct ckpt *resume)
{
    struct gen_id want = { .dev = resume->dev, .ino = resume->ino, .fp_len = resume->fp_len, .end = resume->offset };
    memcpy(want.fp, resume->fp, sizeof want.fp);
    size_t n;
    struct cand *c = chain_scan(t, &n);
    if (t->scan_short) {   /* out of descriptors: the caller parks the tail again */
        chain_free(c, n);
        return;
    }
    /* the checkpointed file: at the path, renamed, or copied by copytruncate */
    struct cand *at = NULL;
    int truncated_at_path = 0;
    for (size_t i = 0; i < n && !at; i++)
        if (c[i].fd >= 0 && chain_cand_is(&c[i], &want) && c[i].size >= resume->offset &&
            (want.fp_len == 0 || chain_cand_content(&c[i], &want)))
            at = &c[i];
    for (size_t i = 0; i < n && !at; i++) {
        if (c[i].fd >= 0 && chain_cand_is(&c[i], &want)) truncated_at_path |= !c[i].suffix;
        if (c[i].fd >= 0 && !chain_cand_is(&c[i], &want) && c[i].suffix && want.fp_len == 256 &&
            c[i].size >= resume->offset && chain_cand_content(&c[i], &want))
            at = &c[i];
    }
    if (at) {
        int fd = at->fd;
        at->fd = -1;
        tail_adopt_fd(t, fd, resume->offset);
        memcpy(t->fp, resume->fp, sizeof t->fp);
        t->fp_len = resume->fp_len;
        tail_update_fp(t);
        t->reading_copy = at->suffix != NULL;
        if (!chain_cand_is(at, &want)) t->cur_flags = GEN_TRUNCATED;   /* a copytruncate copy */
        if (t->reading_copy)
            log_info("msg=\"rotated while stopped: reading the checkpointed file to its end first\" path=\"%s\" file=\"%s\" offset=%" PRId64,
                     t->path, at->name, resume->offset);
        chain_free(c, n);
        return;
    }
    /* the checkpointed generation is gone: a loss unless it was a finished
     * (rotated) file read to its end; a file that was still at the path may
     * have grown after we stopped, so the end of the loss is unknown then */
    const char *why = truncated_at_path ? "truncated" : chain_gone_reason(c, n, &want);
    chain_free(c, n);
    if (resume->finished && resume->offset >= resume->size && strcmp(why, "compressed"))
        log_info("msg=\"the checkpointed rotated file is gone; it had been read to its end\" path=\"%s\" offset=%" PRId64,
                 t->path, resume->offset);
    else
    {
        tail_add_loss(t, why, t->path, &want, resume->offset, resume->size > resume->offset ? resume->size : -1, -1);
        t->loss[t->nloss - 1].more = !resume->finished;
    }
    if (truncated_at_path) want.flags = GEN_TRUNCATED;
    tail_done_push(t, &want);
    if (truncated_at_path) { t->fresh = 1; t->fresh_dev = want.dev; t->fresh_ino = want.ino; }
    chain_pick_next(t);
    if (t->fd < 0) log_warn("msg=\"checkpointed file gone and the path does not exist: waiting for it\" path=\"%s\"", t->path);
}

/* After a truncation with every line before it settled: the file's new
 * content is the next generation; lines written after our last read are
 * read from the copytruncate copy when there is one, else counted lost.
 * Returns what tail_check returns. */
int chain_after_truncation(struct tail *t, int64_t *new_start)
{
    size_t n;
    struct cand *c = chain_scan(t, &n);
    if (t->scan_short) {   /* out of descriptors: again at the next check */
        chain_free(c, n);
        return 0;
    }
    t->truncated = 0;
    /* the file's new content is the next generation whatever it starts with */
    t->fresh = 1;
    t->fresh_dev = t->dev;
    t->fresh_ino = t->ino;
    /* copytruncate: lines written after our last read are in the copy */
    int64_t old_pos = t->lb.pos;
    struct gen_id me;
    tail_cur_id(t, &me);
    struct cand *copy = NULL;
    for (size_t i = 0; i < n; i++)
        if (c[i].suffix && !chain_cand_is(&c[i], &me) && c[i].size > old_pos && chain_cand_content(&c[i], &me) &&
            (!copy || c[i].size > copy->size))
            copy = &c[i];
    if (copy) {
        int fd = copy->fd;
        copy->fd = -1;
        log_info("msg=\"truncation (copytruncate): reading the copy from the old offset\" path=\"%s\" file=\"%s\" offset=%lld",
                 t->path, copy->name, (long long)old_pos);
        tail_adopt_fd(t, fd, old_pos);
        memcpy(t->fp, me.fp, sizeof t->fp);
        t->fp_len = me.fp_len;
        tail_update_fp(t);
        t->cur_flags = GEN_TRUNCATED;   /* other copies of this content are this generation too */
        t->reading_copy = 1;
        chain_free(c, n);
        return 0;   /* same offsets continue in the copy */
    }
    int had_copy = 0;
    for (size_t i = 0; i < n; i++)
        had_copy |= c[i].suffix && !chain_cand_is(&c[i], &me) && chain_cand_content(&c[i], &me);
    if (!had_copy && t->size > old_pos) {
        const char *why = chain_gone_reason(c, n, &me);
        tail_add_loss(t, !strcmp(why, "compressed") ? why : "truncated", t->path, &me, old_pos, t->size, -1);
    }
    chain_free(c, n);
    log_info("msg=\"truncation: the file holds a new generation\" path=\"%s\" old_offset=%lld", t->path, (long long)old_pos);
    t->cur_flags = GEN_TRUNCATED;   /* a late copy of the old content is not a new generation */
    chain_pick_next(t);
    if (t->scan_short) {   /* out of descriptors: the truncation is handled again */
        t->truncated = 1;
        return 0;
    }
    *new_start = t->lb.pos;
    return 1;
}
