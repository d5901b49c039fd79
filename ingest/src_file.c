/*
 * src_file.c - the file source (`collect --file`): a path followed like
 * tail -F through its rotation chain (parts.h: tail_new), and the --file
 * patterns that decide which paths become file sources (a glob re-scanned
 * every second, skipped while its directory is unchanged; rotated and
 * compressed matches, other names of a followed file and non-regular files
 * are not followed; a file read before under another name resumes where
 * it was read to).
 *
 * Thousands of followed files: a file at its end sleeps (next() answers at
 * once) until inotify reports a change under one of its names (fwatch.h)
 * or a slow poll comes round; the tail gives its descriptor back when
 * others need one (the descriptor budget, parts.h); the pattern scan and
 * the checks of a new path use hash indexes, never a walk of every
 * source per match.
 */
#include "pipeline.h"
#include "fwatch.h"
#include "../core/metrics.h"
#include "../core/u64map.h"

#include <dirent.h>
#include <stddef.h>
#include <errno.h>
#include <glob.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct src_file {
    struct source base;
    struct tail *tail;
    struct fwatch *w;         /* the process's watcher (a reference), NULL: poll */
    struct fw_client fw;      /* woken when a name of the file changes */
    char *real;               /* the file being read as the kernel names it, when not the path (watched too) */
    int sleeping;             /* at its end: next() answers at once until woken or wake_ms */
    int64_t wake_ms, last_data_ms;
};

static size_t nfiles;         /* file sources open (the poll interval) */
static void file_woken(struct fw_client *c);

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

/* The longest a file at its end sleeps with no change reported: its share
 * of about 2,000 checks a second over every followed file, 1 to 10 s
 * (10,000 files: 5 s). A file whose names are not watched (no inotify)
 * polls sooner while it was written recently: after a quarter of the time
 * it has been idle. */
static int64_t sleep_ms(const struct src_file *f, int64_t now)
{
    int64_t p = (int64_t)nfiles / 2;
    if (p < 1000) p = 1000;
    if (p > 10000) p = 10000;
    if (f->fw.watched) return p;
    int64_t q = (now - f->last_data_ms) / 4;
    return q < p ? q : p;
}

/* Watches the name path (DIR/NAME) for f; 1 when watched. */
static int watch_name(struct src_file *f, const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return fwatch_add(f->w, ".", path, &f->fw);
    if (slash == path) return fwatch_add(f->w, "/", path + 1, &f->fw);
    char *dir = xstrndup(path, (size_t)(slash - path));
    int ok = fwatch_add(f->w, dir, slash + 1, &f->fw);
    free(dir);
    return ok;
}

/* Registers the names a change of f's file is reported under: its path,
 * and the name the kernel has for the file being read when it differs (a
 * symlink's target: writes to it are reported under that name). Parked
 * (no descriptor), the name it had stays. */
static void watch_names(struct src_file *f)
{
    if (!f->w) return;
    char real[4096];
    int have = tail_real_path(f->tail, real, sizeof real);
    if (!have && tail_is_open(f->tail) && f->real) {
        snprintf(real, sizeof real, "%s", f->real);
        have = 1;
    }
    if (have && !strcmp(real, f->base.name)) have = 0;
    if (f->fw.watched && (have ? f->real && !strcmp(f->real, real) : !f->real)) return;
    fwatch_remove(f->w, &f->fw);
    free(f->real);
    f->real = have ? xstrdup(real) : NULL;
    if (watch_name(f, f->base.name) && f->real) watch_name(f, f->real);
}

/* Opens path, resuming at its checkpoint wherever that file is now; seed
 * (may be NULL): the same file read before under another name, used when
 * the path has no checkpoint of its own (see seed_for). */
static struct source *open_seeded(const char *path, const struct source_env *env, const struct ckpt *seed,
                                  const char *seed_name)
{
    struct src_file *f = xcalloc(1, sizeof *f);
    struct source *s = &f->base;
    source_init(s, &src_file, path, env);
    s->path = s->name;
    struct ckpt *ck = xmalloc(sizeof *ck);
    int have = source_ckpt_load(s, ck);
    if (!have && seed) {
        *ck = *seed;
        have = 1;
        buf_reset(&s->hdr);
        buf_append(&s->hdr, seed->hdr, seed->hdr_len);
        s->force_save = 1;   /* the position under this name too */
        log_info("msg=\"another name of a file read before: resuming where it was read to\" path=\"%s\" offset=%" PRId64
                 " read_as=\"%s\"", path, seed->offset, seed_name);
    }
    f->tail = tail_new(path, have ? ck : NULL, env->tail);
    free(ck);
    nfiles++;
    f->w = fwatch_acquire();
    f->fw.on_wake = file_woken;
    f->last_data_ms = gl_now_ms();
    watch_names(f);
    report_losses(f);
    s->start = tail_offset(f->tail);
    if (tail_waiting(f->tail)) {
        log_warn("msg=\"waiting for a file descriptor (descriptor limit): read as soon as one is free\" path=\"%s\"", path);
    } else if (!tail_is_open(f->tail)) {
        log_warn("msg=\"file not found (yet): waiting for it\" path=\"%s\"", path);
        if (env->once) log_warn("msg=\"--once: file not found\" path=\"%s\"", path);
    } else if (s->start > 0) {
        log_info("msg=\"resuming\" path=\"%s\" offset=%" PRId64, path, s->start);
    }
    return s;
}

static struct source *file_open(const char *path, const struct source_env *env, char *err, size_t errlen)
{
    return open_seeded(path, env, NULL, NULL);
}

/* The next line; at the end of what is there, checks the path for a
 * rotation, a truncation or the file appearing, then sleeps until a change
 * is reported or sleep_ms passes (answering at once meanwhile). */
static int file_next(struct source *s, int timeout_ms, struct src_rec *r)
{
    struct src_file *f = FILE_OF(s);
    int64_t now = s->env->now_ms ? s->env->now_ms : gl_now_ms();
    if (f->sleeping) {
        if (!s->env->wake) fwatch_drain(f->w, now);   /* outside the loop: no turn hook */
        if (!f->fw.woken && now < f->wake_ms) {
            s->idle_until = f->wake_ms;
            return SRC_AGAIN;
        }
        f->sleeping = 0;
        if (f->fw.woken) {
            tail_poke(f->tail);   /* a rename or truncation is looked for at once */
            f->fw.woken = 0;
        } else if (f->fw.watched && tail_unchanged(f->tail)) {
            /* the poll came round and nothing changed: asleep again */
            f->sleeping = 1;
            f->wake_ms = now + sleep_ms(f, now);
            s->idle_until = f->wake_ms;
            return SRC_AGAIN;
        }
        if (!f->fw.watched) watch_names(f);   /* its directory may exist now */
    }
    struct rline l;
    int st = tail_next(f->tail, s->env->once, &l);
    if (st == RL_LINE || st == RL_TOOLONG) {
        f->last_data_ms = now;
        return source_rec(r, &l, st, tail_gen(f->tail));
    }
    if (st == RL_IOERR) {
        log_error("msg=\"read error\" source=\"%s\" error=\"%s\"", s->name, strerror(errno));
        return SRC_AGAIN;
    }
    int64_t ns;
    int sw = tail_check(f->tail, track_pending(&s->lanes[0].tr) == 0, &ns);
    report_losses(f);
    if (sw) {
        watch_names(f);
        r->lane = 0;
        r->off = ns;
        return SRC_MOVED;
    }
    /* a rotated generation read to its end waits for its acknowledgements
     * before the next one: not the end yet */
    if (tail_behind(f->tail)) return SRC_BUSY;
    int64_t nap = sleep_ms(f, now);
    if (nap > 0) {
        if (nap >= 1000) tail_trim(f->tail);   /* asleep for a while: no 64 KiB buffer meanwhile */
        f->sleeping = 1;
        f->wake_ms = now + nap;
        s->idle_until = f->wake_ms;
    }
    return SRC_AGAIN;
}

/* A change was reported under a name of the file: the loop reads it. */
static void file_woken(struct fw_client *c)
{
    struct src_file *f = (struct src_file *)((char *)c - offsetof(struct src_file, fw));
    if (f->base.env->wake) f->base.env->wake(f->base.env->ctx, &f->base);
}

/* Once a loop turn: the change reports of every file source. */
static void file_turn(int64_t now_ms) { fwatch_turn(now_ms); }

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

/* Once a second: notes the file at the path (not while it sleeps at its
 * end: a change wakes it), reports losses. */
static void file_tick(struct source *s)
{
    struct src_file *f = FILE_OF(s);
    if (!f->sleeping) tail_watch(f->tail);
    report_losses(f);
}

/* A followed file never ends, except for --once (read to its end). */
static int file_ended(struct source *s) { return s->env->once; }

static void file_close(struct source *s)
{
    struct src_file *f = FILE_OF(s);
    fwatch_remove(f->w, &f->fw);
    fwatch_release(f->w);
    free(f->real);
    tail_free(f->tail);
    nfiles--;
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
    .turn = file_turn,
};

/* ------------------------------------------------------------- patterns */

#define NAME_SEED 0x736b6970ULL
#define LIVE 0x80000000u      /* by_id values: a finished generation (fs->live), else a source */

/* One --file pattern. A glob whose directory part has no wildcard is
 * matched again only when that directory changed (its time, or every
 * 30 s): a directory of 10,000 files is not listed every second. */
struct pat {
    char *pattern;            /* borrowed */
    const char *format;
    char *dir;                /* the directory of a glob without wildcards in it, else NULL */
    uint64_t dir_dev, dir_ino;
    int64_t dir_mtime_ns, scanned_ms;
    int trusted;              /* the directory's state above can tell that nothing changed */
};

/* A file read before under another name: a generation a followed path
 * finished, or a checkpoint in the state directory. */
struct known {
    uint64_t dev, ino;
    char fp[33];
    uint32_t fp_len;
    int64_t end;
    char *ckpt_file;          /* the checkpoint it came from (its header block), or NULL */
    size_t src;               /* else the source that read it */
};

struct file_scan {
    struct pat *pat;
    size_t n;
    struct u64map said;       /* hashes of paths already reported as not followed */
    int failed;               /* --once: a path is not a regular file, or a glob matched nothing */
    /* the file sources of the pipeline: by name (grown as they are added),
     * by device and inode of the file each one reads or finished (rebuilt
     * once per scan, as files move on) */
    size_t named;
    struct u64map by_name, by_id;
    int ids_fresh;
    struct known *live;       /* finished generations, indexed by by_id (value LIVE | index) */
    size_t nlive, caplive;
    /* the checkpoints in the state directory, loaded once when a path with
     * no checkpoint of its own is first followed */
    struct known *disk;
    size_t ndisk;
    struct u64map disk_id;
    int disk_loaded;
};

struct file_scan *file_scan_new(void)
{
    struct file_scan *fs = xcalloc(1, sizeof *fs);
    u64map_init(&fs->said);
    u64map_init(&fs->by_name);
    u64map_init(&fs->by_id);
    u64map_init(&fs->disk_id);
    return fs;
}

void file_scan_free(struct file_scan *fs)
{
    if (!fs) return;
    for (size_t i = 0; i < fs->n; i++) free(fs->pat[i].dir);
    free(fs->pat);
    for (size_t i = 0; i < fs->ndisk; i++) free(fs->disk[i].ckpt_file);
    free(fs->disk);
    free(fs->live);
    u64map_free(&fs->said);
    u64map_free(&fs->by_name);
    u64map_free(&fs->by_id);
    u64map_free(&fs->disk_id);
    free(fs);
}

void file_scan_add(struct file_scan *fs, char *pattern, const char *format)
{
    fs->pat = xrealloc(fs->pat, (fs->n + 1) * sizeof *fs->pat);
    struct pat *p = &fs->pat[fs->n++];
    memset(p, 0, sizeof *p);
    p->pattern = pattern;
    p->format = format;
    const char *slash = strrchr(pattern, '/');
    if (strpbrk(pattern, "*?[") && !(slash && memchr(pattern, '*', (size_t)(slash - pattern))) &&
        !(slash && memchr(pattern, '?', (size_t)(slash - pattern))) && !(slash && memchr(pattern, '[', (size_t)(slash - pattern))))
        p->dir = slash ? (slash == pattern ? xstrdup("/") : xstrndup(pattern, (size_t)(slash - pattern))) : xstrdup(".");
}

size_t file_scan_count(const struct file_scan *fs) { return fs->n; }
int file_scan_failed(const struct file_scan *fs) { return fs->failed; }

static uint64_t name_hash(const char *s, size_t n) { return hash64(s, n, NAME_SEED); }
static uint64_t id_hash(uint64_t dev, uint64_t ino) { return hash64(&ino, sizeof ino, dev); }

/* Whether name was reported already (once per name: patterns are scanned
 * every second); remembers it. */
static int said_once(struct file_scan *fs, const char *name)
{
    uint64_t h = hash64(name, strlen(name), 0x736b6970ULL);
    size_t it = 0;
    uint32_t v;
    if (u64map_next(&fs->said, h, &it, &v)) return 1;
    u64map_add(&fs->said, h, 0);
    return 0;
}

static const char *file_type(mode_t m)
{
    return S_ISFIFO(m) ? "fifo" : S_ISDIR(m) ? "directory" : S_ISSOCK(m) ? "socket" :
           S_ISCHR(m) || S_ISBLK(m) ? "device" : "other";
}

/* Adds the file sources opened since the last call to the name index. */
static void index_names(struct file_scan *fs, struct pipeline *pl)
{
    size_t n = pipeline_nsources(pl);
    for (; fs->named < n; fs->named++) {
        struct source *s = pipeline_source(pl, fs->named);
        if (s->ops == &src_file) u64map_add(&fs->by_name, name_hash(s->name, strlen(s->name)), (uint32_t)fs->named);
    }
}

/* The file source following path, or NULL. */
static struct source *source_named(struct file_scan *fs, struct pipeline *pl, const char *path, size_t len)
{
    size_t it = 0;
    uint32_t i;
    while (u64map_next(&fs->by_name, name_hash(path, len), &it, &i)) {
        struct source *s = pipeline_source(pl, i);
        if (strlen(s->name) == len && !memcmp(s->name, path, len)) return s;
    }
    return NULL;
}

/* Indexes source i by the file it reads (value i) and the generations it
 * finished (value LIVE | k of fs->live[k]). */
static void index_ids_of(struct file_scan *fs, struct pipeline *pl, size_t i)
{
    struct source *s = pipeline_source(pl, i);
    if (s->ops != &src_file) return;
    struct tail *t = FILE_OF(s)->tail;
    uint64_t dev, ino;
    if (tail_file_id(t, &dev, &ino)) u64map_add(&fs->by_id, id_hash(dev, ino), (uint32_t)i);
    uint32_t nd;
    const struct gen_id *d = tail_done_list(t, &nd);
    for (uint32_t j = 0; j < nd; j++) {
        if (fs->nlive == fs->caplive) {
            fs->caplive = fs->caplive ? fs->caplive * 2 : 64;
            fs->live = xrealloc(fs->live, fs->caplive * sizeof *fs->live);
        }
        struct known *k = &fs->live[fs->nlive];
        *k = (struct known){ .dev = d[j].dev, .ino = d[j].ino, .fp_len = d[j].fp_len, .end = d[j].end, .src = i };
        memcpy(k->fp, d[j].fp, sizeof k->fp);
        u64map_add(&fs->by_id, id_hash(d[j].dev, d[j].ino), LIVE | (uint32_t)fs->nlive);
        fs->nlive++;
    }
}

/* The device-and-inode index, rebuilt once per scan (files move on). */
static void index_ids(struct file_scan *fs, struct pipeline *pl)
{
    if (fs->ids_fresh) return;
    u64map_clear(&fs->by_id);
    fs->nlive = 0;
    size_t n = pipeline_nsources(pl);
    for (size_t i = 0; i < n; i++) index_ids_of(fs, pl, i);
    fs->ids_fresh = 1;
}

/* The checkpoints of file sources in the state directory: what they read
 * (the file and the generations they finished), by device and inode. */
static void load_disk(struct file_scan *fs, const char *state_dir)
{
    fs->disk_loaded = 1;
    DIR *d = state_dir ? opendir(state_dir) : NULL;
    if (!d) return;
    struct dirent *de;
    struct ckpt *c = xmalloc(sizeof *c);
    size_t cap = 0;
    while ((de = readdir(d))) {
        size_t ln = strlen(de->d_name);
        if (strncmp(de->d_name, "ckpt-file-", 10) || (ln > 4 && !strcmp(de->d_name + ln - 4, ".tmp"))) continue;
        struct buf path;
        buf_init(&path);
        buf_printf(&path, "%s/%s", state_dir, de->d_name);
        char err[GL_ERRLEN];
        if (ckpt_load(path.p, c, err, sizeof err) != GL_OK || !c->ino) { buf_free(&path); continue; }
        for (uint32_t j = 0; j <= c->ndone && j <= CKPT_DONE_MAX; j++) {
            const struct gen_id *g = j < c->ndone ? &c->done[j] : NULL;
            if (fs->ndisk == cap) {
                cap = cap ? cap * 2 : 64;
                fs->disk = xrealloc(fs->disk, cap * sizeof *fs->disk);
            }
            struct known *k = &fs->disk[fs->ndisk];
            if (g) *k = (struct known){ .dev = g->dev, .ino = g->ino, .fp_len = g->fp_len, .end = g->end };
            else *k = (struct known){ .dev = c->dev, .ino = c->ino, .fp_len = c->fp_len, .end = c->offset };
            memcpy(k->fp, g ? g->fp : c->fp, sizeof k->fp);
            k->ckpt_file = xstrdup(path.p);
            u64map_add(&fs->disk_id, id_hash(k->dev, k->ino), (uint32_t)fs->ndisk);
            fs->ndisk++;
        }
        buf_free(&path);
    }
    free(c);
    closedir(d);
}

/* Does the file open on fd (size bytes) still hold what k read? */
static int known_matches(const struct known *k, int fd, int64_t size)
{
    if (size < k->end || k->end <= 0) return 0;
    char fp[33];
    uint32_t n;
    if (k->fp_len == 0) return 0;   /* nothing to check an inode's reuse against */
    return file_fingerprint(fd, k->fp_len, fp, &n) == GL_OK && !strcmp(fp, k->fp);
}

/* A file read before under another name: a generation a followed path
 * finished (a symlink repointed to a new file: the old target was read
 * through it), or a name no longer followed in the state directory's
 * checkpoints (a hard link deleted before a restart). The one read
 * furthest whose content is still what was read (its fingerprint), as a
 * checkpoint to resume from, with the name it was read as; NULL when none
 * (the caller frees). A path with a checkpoint of its own is not asked. */
static struct ckpt *seed_for(struct file_scan *fs, struct pipeline *pl, const char *path, const struct stat *st,
                             char *as, size_t aslen)
{
    const struct source_env *env = pipeline_env(pl);
    if (env->state_dir) {
        char *own = ckpt_path(env->state_dir, "file", path);
        int has = access(own, F_OK) == 0;
        free(own);
        if (has) return NULL;
        if (!fs->disk_loaded) load_disk(fs, env->state_dir);
    }
    int fd = -1;
    const struct known *best = NULL;
    uint64_t h = id_hash((uint64_t)st->st_dev, (uint64_t)st->st_ino);
    for (int pass = 0; pass < 2; pass++) {
        const struct u64map *m = pass ? &fs->disk_id : &fs->by_id;
        size_t it = 0;
        uint32_t v;
        while (u64map_next(m, h, &it, &v)) {
            const struct known *k;
            if (pass) k = &fs->disk[v];
            else if (v & LIVE) k = &fs->live[v & ~LIVE];
            else continue;   /* a file being read: not asked here */
            if (k->dev != (uint64_t)st->st_dev || k->ino != (uint64_t)st->st_ino || (best && k->end <= best->end)) continue;
            if (fd < 0 && (fd = tail_open_regular(path, NULL)) < 0) return NULL;
            if (known_matches(k, fd, (int64_t)st->st_size)) best = k;
        }
    }
    if (fd >= 0) close(fd);
    if (!best) return NULL;
    struct ckpt *c = xcalloc(1, sizeof *c);
    if (best->ckpt_file) {
        char err[GL_ERRLEN];
        if (ckpt_load(best->ckpt_file, c, err, sizeof err) != GL_OK) memset(c, 0, sizeof *c);
        snprintf(as, aslen, "%s", best->ckpt_file);
        memset(c->done, 0, sizeof c->done);
        memset(c->seen, 0, sizeof c->seen);
    } else {
        struct source *s = pipeline_source(pl, best->src);
        size_t n = s->hdr.len < sizeof c->hdr ? s->hdr.len : 0;
        memcpy(c->hdr, s->hdr.p ? s->hdr.p : "", n);
        c->hdr_len = (uint32_t)n;
        snprintf(as, aslen, "%s", s->name);
    }
    c->dev = best->dev;
    c->ino = best->ino;
    memcpy(c->fp, best->fp, sizeof c->fp);
    c->fp_len = best->fp_len;
    c->offset = best->end;
    c->size = best->end;
    c->gen = 0;
    c->ndone = c->nseen = 0;
    c->finished = 0;
    c->floor_ns = 0;
    return c;
}

/* Follows path unless it is followed already (by name, or by device and
 * inode: a symlink or hard link would send it twice, under other event
 * ids) or is not a regular file (a FIFO would block, and has no offsets). */
static void follow(struct file_scan *fs, struct pipeline *pl, const char *path, const char *format)
{
    index_names(fs, pl);
    if (source_named(fs, pl, path, strlen(path))) return;
    struct stat st;
    int exists = stat(path, &st) == 0;
    if (exists && !S_ISREG(st.st_mode)) {
        if (!said_once(fs, path))
            log_error("msg=\"not a regular file: not followed (pipe a stream to 'gpulog collect -' or --exec)\" path=\"%s\" type=%s",
                      path, file_type(st.st_mode));
        if (pipeline_env(pl)->once) fs->failed = 1;
        return;
    }
    struct ckpt *seed = NULL;
    char as[600] = "";
    if (exists) {
        index_ids(fs, pl);
        size_t it = 0;
        uint32_t i;
        while (u64map_next(&fs->by_id, id_hash((uint64_t)st.st_dev, (uint64_t)st.st_ino), &it, &i)) {
            if (i & LIVE) continue;
            struct source *s = pipeline_source(pl, i);
            if (s->ops != &src_file || !tail_reads(FILE_OF(s)->tail, (uint64_t)st.st_dev, (uint64_t)st.st_ino)) continue;
            if (!said_once(fs, path))
                log_info("msg=\"not followed: another name of a followed file\" path=\"%s\" followed=\"%s\"", path, s->name);
            return;
        }
        seed = seed_for(fs, pl, path, &st, as, sizeof as);
    }
    struct source *s = open_seeded(path, pipeline_env(pl), seed, as);
    free(seed);
    pipeline_add(pl, s, format);
    index_names(fs, pl);
    if (fs->ids_fresh) index_ids_of(fs, pl, pipeline_nsources(pl) - 1);
}

/* Is m a rotated name (NAME.1, NAME-20250101.gz: rotated_name_of) of a
 * path among the k matches of g, or of a followed path? Looked up by the
 * hash of each prefix of m that ends before a separator. */
static const char *rotated_of(struct file_scan *fs, struct pipeline *pl, const glob_t *g, const struct u64map *matches,
                              const char *m)
{
    const char *slash = strrchr(m, '/');
    const char *b = slash ? slash + 1 : m;
    for (const char *q = b + 1; *q; q++) {
        if (*q != '.' && *q != '-' && *q != '_') continue;
        size_t len = (size_t)(q - m);
        uint64_t h = name_hash(m, len);
        size_t it = 0;
        uint32_t k;
        while (u64map_next(matches, h, &it, &k)) {
            const char *o = g->gl_pathv[k];
            if (strlen(o) == len && !memcmp(o, m, len) && rotated_name_of(m, o, NULL)) return "rotated file of another match";
        }
        struct source *s = source_named(fs, pl, m, len);
        if (s && rotated_name_of(m, s->name, NULL)) return "rotated file of a followed file";
    }
    return NULL;
}

/* Why a glob match is not a source of its own, or NULL: a rotated file of
 * another match or of a followed file is read through that file's rotation,
 * and a compressed file is not text. Returns a static string. */
static const char *skip_reason(struct file_scan *fs, struct pipeline *pl, const glob_t *g,
                               const struct u64map *matches, const char *m)
{
    if (compressed_name(m)) return "compressed";
    return rotated_of(fs, pl, g, matches, m);
}

/* 1 when the glob of p need not run: its directory has not changed since
 * the last one (device, inode, time), that time lay more than 2 s in the
 * past when it ran (a change within the same clock tick cannot hide), and
 * it ran less than 30 s ago. Else records the directory for next time. */
static int dir_unchanged(struct pat *p, int64_t now)
{
    if (!p->dir) return 0;
    struct stat st;
    if (stat(p->dir, &st) != 0) { p->trusted = 0; return 0; }
    int64_t m = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    if (p->trusted && (uint64_t)st.st_dev == p->dir_dev && (uint64_t)st.st_ino == p->dir_ino && m == p->dir_mtime_ns &&
        now - p->scanned_ms < 30000)
        return 1;
    p->dir_dev = (uint64_t)st.st_dev;
    p->dir_ino = (uint64_t)st.st_ino;
    p->dir_mtime_ns = m;
    p->scanned_ms = now;
    p->trusted = m < (now - 2000) * 1000000;
    return 0;
}

/* Follows every path the patterns name now (at the start, every second,
 * on SIGHUP: force, every glob runs). */
static void scan(struct file_scan *fs, struct pipeline *pl, int force)
{
    int64_t now = gl_now_ms();
    int once = pipeline_env(pl)->once;
    fs->ids_fresh = 0;
    index_names(fs, pl);
    struct u64map matches;
    u64map_init(&matches);
    for (size_t i = 0; i < fs->n; i++) {
        struct pat *p = &fs->pat[i];
        if (!strpbrk(p->pattern, "*?[")) { follow(fs, pl, p->pattern, p->format); continue; }
        if (!force && dir_unchanged(p, now)) continue;
        if (force) p->trusted = 0;
        glob_t g;
        size_t regular = 0;
        if (glob(p->pattern, 0, NULL, &g) == 0) {
            u64map_clear(&matches);
            for (size_t k = 0; k < g.gl_pathc; k++)
                u64map_add(&matches, name_hash(g.gl_pathv[k], strlen(g.gl_pathv[k])), (uint32_t)k);
            for (size_t k = 0; k < g.gl_pathc; k++) {
                const char *m = g.gl_pathv[k];
                if (source_named(fs, pl, m, strlen(m))) { regular++; continue; }   /* followed: no stat */
                struct stat st;
                if (stat(m, &st) != 0 || !S_ISREG(st.st_mode)) continue;
                regular++;
                /* a file made within the last second waits for the next run:
                 * a symlink among the matches (cronolog's "current") is
                 * repointed to it right after it is made, and then reads it */
                int64_t made = (int64_t)st.st_ctim.tv_sec * 1000 + st.st_ctim.tv_nsec / 1000000;
                if (!once && made > now - 1000 && made <= now + 1000) { p->trusted = 0; continue; }
                const char *why = skip_reason(fs, pl, &g, &matches, m);
                if (!why) { follow(fs, pl, m, p->format); continue; }
                if (said_once(fs, m)) continue;
                log_info("msg=\"glob match not followed\" path=\"%s\" reason=\"%s\" pattern=\"%s\"", m, why, p->pattern);
            }
        }
        globfree(&g);
        if (once && !regular) {
            log_error("msg=\"--once: the pattern matches no file: nothing to read\" pattern=\"%s\"", p->pattern);
            fs->failed = 1;
        }
    }
    u64map_free(&matches);
}

void file_scan_run(struct file_scan *fs, struct pipeline *pl) { scan(fs, pl, 0); }
void file_scan_rescan(struct file_scan *fs, struct pipeline *pl) { scan(fs, pl, 1); }
