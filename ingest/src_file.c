/*
 * src_file.c - the file source (`collect --file`): a path followed like
 * tail -F through its rotation chain (parts.h: tail_new), and the --file
 * patterns that decide which paths become file sources (a glob re-scanned
 * every second; rotated and compressed matches, other names of a followed
 * file and non-regular files are not followed).
 */
#include "pipeline.h"
#include "../core/metrics.h"

#include <errno.h>
#include <glob.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct src_file {
    struct source base;
    struct tail *tail;
};

#define FILE_OF(s) ((struct src_file *)(s))

/* Reports what the tail could not read (a rotated generation gone before
 * it was finished, or beyond the bounds): /metrics, a source-data-lost
 * health event through the loop, and s->losses (--once fails on it). */
static void report_losses(struct src_file *f)
{
    struct source *s = &f->base;
    struct tail_loss l;
    static const char *const why[][2] = {
        { "deleted", "was deleted before it was read" },
        { "compressed", "was compressed before it was read (compressed files are not read)" },
        { "truncated", "was truncated before it was read, and no copy of it was found" },
        { "too_old", "is older than collect.rotate_max_age" },
        { "too_many", "is beyond collect.rotate_max_generations" },
    };
    while (f->tail && tail_take_loss(f->tail, &l)) {
        s->losses++;
        metrics_inc_label(M_FILES_LOST, l.reason);
        if (l.to > l.from) metrics_add_label(M_BYTES_LOST, l.reason, (uint64_t)(l.to - l.from));
        if (l.lines > 0) metrics_add_label(M_LINES_LOST, l.reason, (uint64_t)l.lines);
        char range[192], lines[48] = "", msg[1024];
        if (l.to >= 0) snprintf(range, sizeof range, "bytes %" PRId64 "-%" PRId64 " (%" PRId64 " bytes%s)", l.from, l.to, l.to - l.from,
                                l.more ? " or more: it may have grown after it was last seen" : "");
        else snprintf(range, sizeof range, "bytes from %" PRId64 " to its end (size unknown)", l.from);
        if (l.lines >= 0) snprintf(lines, sizeof lines, ", %" PRId64 " lines", l.lines);
        const char *text = l.reason;
        for (size_t i = 0; i < GL_ARRAY_LEN(why); i++) if (!strcmp(why[i][0], l.reason)) text = why[i][1];
        snprintf(msg, sizeof msg,
                 "data lost: %s %s; never read: %s%s (device %" PRIu64 " inode %" PRIu64 " fingerprint %s, generation after %" PRIu64 ")",
                 l.name, text, range, lines, l.dev, l.ino, l.fp[0] ? l.fp : "-", l.gen);
        s->env->health(s->env->ctx, s, "source-data-lost", l.name, l.from, msg);
    }
}

/* Opens path, resuming at its checkpoint wherever that file is now. */
static struct source *file_open(const char *path, const struct source_env *env, char *err, size_t errlen)
{
    struct src_file *f = xcalloc(1, sizeof *f);
    struct source *s = &f->base;
    source_init(s, &src_file, path, env);
    s->path = s->name;
    struct ckpt ck;
    int have = source_ckpt_load(s, &ck);
    f->tail = tail_new(path, have ? &ck : NULL, env->tail);
    report_losses(f);
    s->start = tail_offset(f->tail);
    if (!tail_is_open(f->tail)) {
        log_warn("msg=\"file not found (yet): waiting for it\" path=\"%s\"", path);
        if (env->once) log_warn("msg=\"--once: file not found\" path=\"%s\"", path);
    } else if (s->start > 0) {
        log_info("msg=\"resuming\" path=\"%s\" offset=%" PRId64, path, s->start);
    }
    return s;
}

/* The next line; at the end of what is there, checks the path for a
 * rotation, a truncation or the file appearing. */
static int file_next(struct source *s, int timeout_ms, struct src_rec *r)
{
    struct src_file *f = FILE_OF(s);
    struct rline l;
    int st = tail_next(f->tail, s->env->once, &l);
    if (st == RL_LINE || st == RL_TOOLONG) return source_rec(r, &l, st, tail_gen(f->tail));
    if (st == RL_IOERR) {
        log_error("msg=\"read error\" source=\"%s\" error=\"%s\"", s->name, strerror(errno));
        return SRC_AGAIN;
    }
    int64_t ns;
    int sw = tail_check(f->tail, track_pending(&s->lanes[0].tr) == 0, &ns);
    report_losses(f);
    if (sw) {
        r->lane = 0;
        r->off = ns;
        return SRC_MOVED;
    }
    /* a rotated generation read to its end waits for its acknowledgements
     * before the next one: not the end yet */
    return tail_behind(f->tail) ? SRC_BUSY : SRC_AGAIN;
}

/* Saves the position with the identity and rotation chain of the file. */
static int file_checkpoint(struct source *s, uint32_t lane, int64_t committed, int changed)
{
    struct src_file *f = FILE_OF(s);
    if (!changed || !tail_is_open(f->tail)) return GL_DONE;
    struct ckpt ck;
    memset(&ck, 0, sizeof ck);
    tail_identity(f->tail, &ck);
    return source_ckpt_save(s, &ck, committed);
}

/* Once a second: notes the file at the path, reports losses. */
static void file_tick(struct source *s)
{
    tail_watch(FILE_OF(s)->tail);
    report_losses(FILE_OF(s));
}

/* A followed file never ends, except for --once (read to its end). */
static int file_ended(struct source *s) { return s->env->once; }

static void file_close(struct source *s)
{
    tail_free(FILE_OF(s)->tail);
    source_fini(s);
    free(s);
}

const struct source_ops src_file = {
    .name = "file",
    .open = file_open,
    .next = file_next,
    .checkpoint = file_checkpoint,
    .ended = file_ended,
    .close = file_close,
    .tick = file_tick,
};

/* ------------------------------------------------------------- patterns */

struct file_scan {
    char **patterns;              /* borrowed */
    const char **formats;
    size_t n;
    uint64_t *said;               /* hashes of paths already reported as not followed */
    size_t nsaid;
    int failed;                   /* --once: a path is not a regular file */
};

struct file_scan *file_scan_new(void) { return xcalloc(1, sizeof(struct file_scan)); }

void file_scan_free(struct file_scan *fs)
{
    if (!fs) return;
    free(fs->patterns);
    free(fs->formats);
    free(fs->said);
    free(fs);
}

void file_scan_add(struct file_scan *fs, char *pattern, const char *format)
{
    fs->patterns = xrealloc(fs->patterns, (fs->n + 1) * sizeof *fs->patterns);
    fs->formats = xrealloc(fs->formats, (fs->n + 1) * sizeof *fs->formats);
    fs->patterns[fs->n] = pattern;
    fs->formats[fs->n++] = format;
}

size_t file_scan_count(const struct file_scan *fs) { return fs->n; }
int file_scan_failed(const struct file_scan *fs) { return fs->failed; }

/* Whether name was reported already (once per name: patterns are scanned
 * every second); remembers it. */
static int said_once(struct file_scan *fs, const char *name)
{
    uint64_t h = hash64(name, strlen(name), 0x736b6970ULL);
    for (size_t j = 0; j < fs->nsaid; j++)
        if (fs->said[j] == h) return 1;
    fs->said = xrealloc(fs->said, (fs->nsaid + 1) * sizeof *fs->said);
    fs->said[fs->nsaid++] = h;
    return 0;
}

static const char *file_type(mode_t m)
{
    return S_ISFIFO(m) ? "fifo" : S_ISDIR(m) ? "directory" : S_ISSOCK(m) ? "socket" :
           S_ISCHR(m) || S_ISBLK(m) ? "device" : "other";
}

/* Follows path unless it is followed already (by name, or by device and
 * inode: a symlink or hard link would send it twice, under other event
 * ids) or is not a regular file (a FIFO would block, and has no offsets). */
static void follow(struct file_scan *fs, struct pipeline *pl, const char *path, const char *format)
{
    size_t n = pipeline_nsources(pl);
    for (size_t i = 0; i < n; i++) {
        struct source *s = pipeline_source(pl, i);
        if (s->ops == &src_file && !strcmp(s->name, path)) return;
    }
    struct stat st;
    int exists = stat(path, &st) == 0;
    if (exists && !S_ISREG(st.st_mode)) {
        if (!said_once(fs, path))
            log_error("msg=\"not a regular file: not followed (pipe a stream to 'gpulog collect -' or --exec)\" path=\"%s\" type=%s",
                      path, file_type(st.st_mode));
        if (pipeline_env(pl)->once) fs->failed = 1;
        return;
    }
    for (size_t i = 0; i < n && exists; i++) {
        struct source *s = pipeline_source(pl, i);
        if (s->ops == &src_file && tail_reads(FILE_OF(s)->tail, (uint64_t)st.st_dev, (uint64_t)st.st_ino)) {
            if (!said_once(fs, path))
                log_info("msg=\"not followed: another name of a followed file\" path=\"%s\" followed=\"%s\"", path, s->name);
            return;
        }
    }
    char err[GL_ERRLEN];
    if (!pipeline_open(pl, "file", path, format, err, sizeof err)) log_error("msg=\"%s\" path=\"%s\"", err, path);
}

/* Why a glob match is not a source of its own, or NULL: a rotated file of
 * another match or of a followed file is read through that file's rotation,
 * and a compressed file is not text. Returns a static string. */
static const char *skip_reason(struct pipeline *pl, const glob_t *g, const char *m)
{
    if (compressed_name(m)) return "compressed";
    for (size_t k = 0; k < g->gl_pathc; k++)
        if (rotated_name_of(m, g->gl_pathv[k], NULL)) return "rotated file of another match";
    size_t n = pipeline_nsources(pl);
    for (size_t i = 0; i < n; i++) {
        struct source *s = pipeline_source(pl, i);
        if (s->ops == &src_file && rotated_name_of(m, s->name, NULL)) return "rotated file of a followed file";
    }
    return NULL;
}

/* Follows every path the patterns name now (at the start, every second,
 * on SIGHUP). */
void file_scan_run(struct file_scan *fs, struct pipeline *pl)
{
    for (size_t i = 0; i < fs->n; i++) {
        const char *p = fs->patterns[i];
        if (!strpbrk(p, "*?[")) { follow(fs, pl, p, fs->formats[i]); continue; }
        glob_t g;
        if (glob(p, 0, NULL, &g) == 0) {
            for (size_t k = 0; k < g.gl_pathc; k++) {
                struct stat st;
                const char *m = g.gl_pathv[k];
                if (stat(m, &st) != 0 || !S_ISREG(st.st_mode)) continue;
                const char *why = skip_reason(pl, &g, m);
                if (!why) { follow(fs, pl, m, fs->formats[i]); continue; }
                if (said_once(fs, m)) continue;
                log_info("msg=\"glob match not followed\" path=\"%s\" reason=\"%s\" pattern=\"%s\"", m, why, p);
            }
        }
        globfree(&g);
    }
}
