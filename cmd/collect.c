/*
 * collect.c - `gpulog collect`: the node sidecar. Tails files, runs and
 * supervises GPU tools, reads stdin and /dev/kmsg, parses every line and
 * delivers the events to Kafka (or NDJSON), advancing per-source checkpoints
 * only from the sink's settle callbacks (see source.h for the model).
 */
#include "cli.h"
#include "../core/lineread.h"
#include "../parsers/parser.h"
#include "../sinks/sink.h"
#include "../ingest/parts.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include "../core/config.h"
#include "../core/metrics.h"
#include "../core/gpumetrics.h"
#include "../parsers/feed.h"
#include "../parsers/kmsg.h"
#include <glob.h>
#include <inttypes.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_PENDING_LINES 65536     /* per source: backpressure above this */
#define TOKEN_SEQ_BITS 40
#define TOKEN_SEQ_MASK ((UINT64_C(1) << TOKEN_SEQ_BITS) - 1)

enum src_kind { SRC_FILE, SRC_EXEC, SRC_STDIN, SRC_KMSG };
static const char *const kind_names[] = { "file", "exec", "stdin", "kmsg" };

struct source {
    int idx;                      /* 1-based; high bits of settle tokens */
    enum src_kind kind;
    char *name;                   /* path, command line, "-" or "kmsg" */
    char *ckpt_file;
    struct parser *parser;
    struct track tr;
    int64_t saved_offset;         /* offset in the last checkpoint written */
    int force_save;
    int ckpt_bad;                 /* the last checkpoint write failed */
    int at_end;                   /* the reader had nothing more last time */
    uint64_t cur_seq;             /* tracker entry of the line being parsed */
    uint64_t lines, events, rejected;
    struct buf hdr;               /* the last header block the parser declined */
    struct buf kcarry;            /* kmsg: partial record */
    int hdr_open;                 /* inside a run of header lines */
    uint64_t hdr_saved_hash;      /* of the header block in the last checkpoint */
    /* files */
    struct tail *tail;
    /* spooled sources (exec, stdin, kmsg) */
    struct spool *sp;
    struct producer *prod;
    struct collector *c;          /* for the producer's hooks */
};

struct collector {
    /* options */
    const char *format, *host, *state_dir, *output, *brokers;
    const char *topic[3];
    char **props;
    size_t nprops;
    int once, keep_original;
    size_t max_line;
    int64_t spool_max, shutdown_ms, stats_ms, stale_override_ms;
    struct tail_opts topts;       /* rotation chain bounds of file sources */
    char **patterns;              /* --file arguments */
    const char **pattern_fmt;     /* their formats */
    size_t npatterns;
    /* state */
    struct source **src;
    size_t nsrc, capsrc;
    struct sink *sink;
    struct buf json, key;
    struct sink_hold stash;       /* refused by a full producer queue, in order */
    int blocked;                  /* the sink said GL_AGAIN: stop reading */
    uint64_t *skipped;            /* hashes of glob matches already reported as skipped */
    size_t nskipped;
    int fatal;
    struct source *cur;
    int priming;                  /* feeding saved headers: events are dropped */
    int64_t fixed_now;
    uint64_t written, acked, deadletter, health_sent;
    uint64_t losses;              /* generations (or parts) of files never read */
    int spool_full;
    int source_failed;            /* --once: a command failed to start or failed */
    uint64_t ckpt_failures;       /* checkpoint writes that failed (--once then fails) */
    int running;                  /* between start and finish: /readyz may say ready */
    long peak_rss_kb;
    uint64_t reports;
};

static volatile sig_atomic_t stop_flag, hup_flag;

static void on_signal(int sig)
{
    if (sig == SIGHUP) hup_flag = 1;
    else stop_flag = 1;
}

static long rss_kb(void)
{
    int64_t b = gl_rss_bytes();
    return b > 0 ? (long)(b / 1024) : 0;
}

/* ---------------------------------------------------------------- delivery */

/* Writes what the full producer queue refused earlier, in order; returns 1
 * when nothing is held any more. */
static int stash_flush(struct collector *c)
{
    struct sink *failed;
    void *token;
    c->written += sink_hold_flush(&c->stash, &failed, &token);
    if (failed) {
        log_error("msg=\"sink failed\" error=\"%s\"", failed->errstr);
        c->fatal = 1;
    }
    return c->stash.n == 0;
}

static void deliver(struct collector *c, const struct event *ev, void *token, enum sink_stream stream)
{
    struct sink_doc d;
    sink_doc_of(&d, ev, stream, c->host, token, &c->json, &c->key);
    int r = sink_hold_write(&c->stash, c->sink, &d);   /* behind anything held: keeps the order */
    if (r == GL_OK) { c->written++; return; }
    if (r == GL_AGAIN) { c->blocked = 1; return; }
    log_error("msg=\"sink failed\" error=\"%s\"", c->sink->errstr);
    c->fatal = 1;
}

static void on_event(void *ctx, const struct event *ev)
{
    struct collector *c = ctx;
    if (c->priming) return;
    struct source *s = c->cur;
    track_hold(&s->tr, s->cur_seq);
    s->events++;
    uintptr_t token = ((uintptr_t)s->idx << TOKEN_SEQ_BITS) | (uintptr_t)(s->cur_seq & TOKEN_SEQ_MASK);
    deliver(c, ev, (void *)token, sink_stream_of(ev->dataset));
    gpumetrics_observe(ev);
}

static void on_settle(void *ctx, void *token, enum sink_outcome o)
{
    struct collector *c = ctx;
    if (o == SINK_DEADLETTER) { c->deadletter++; metrics_inc(M_DEADLETTERS); }
    else { c->acked++; metrics_inc(M_EVENTS_PRODUCED); }
    uintptr_t t = (uintptr_t)token;
    if (!t) return;   /* collector health event */
    size_t idx = (size_t)(t >> TOKEN_SEQ_BITS);
    if (idx < 1 || idx > c->nsrc) return;
    struct track *tr = &c->src[idx - 1]->tr;
    /* rebuild the full sequence number from its low bits */
    uint64_t seq = (tr->head_seq & ~TOKEN_SEQ_MASK) | (t & TOKEN_SEQ_MASK);
    if (seq < tr->head_seq) seq += UINT64_C(1) << TOKEN_SEQ_BITS;
    track_settle(tr, seq);
}

/* A collector health event (event.dataset gpulog.collector) to the events
 * stream. Not tied to a line: it is not replayed after a crash. file and
 * off (>= 0) name a place in a file the event is about (log.file.path,
 * log.offset); NULL / -1 otherwise. Borrows everything. */
static void health_event_at(struct collector *c, struct source *s, const char *action, const char *file, int64_t off,
                            const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static void health_event_at(struct collector *c, struct source *s, const char *action, const char *file, int64_t off,
                            const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log_warn("msg=\"%s\" action=%s source=\"%s\"", msg, action, s->name);
    struct event ev;
    event_init(&ev);
    int64_t now = gl_now_ms();
    ev.kind = "event";
    ev.dataset = "gpulog.collector";
    ev.host = c->host;
    ev.offset = -1;
    ev.ts_ms = now;
    ev.created_ms = now;
    char salt[64];
    int sl = snprintf(salt, sizeof salt, "%s %" PRId64, action, now);
    event_make_id(&ev, c->host, s->name, 0, now, salt, (size_t)sl);
    event_add_str(&ev, "event.action", action, strlen(action));
    event_add_str(&ev, "message", msg, strlen(msg));
    event_add_str(&ev, "process.command_line", s->name, strlen(s->name));
    if (file) event_add_str(&ev, "log.file.path", file, strlen(file));
    if (off >= 0) event_add_int(&ev, "log.offset", off);
    c->health_sent++;
    deliver(c, &ev, NULL, STREAM_EVENTS);
    event_free(&ev);
}

#define health_event(c, s, action, ...) health_event_at(c, s, action, NULL, -1, __VA_ARGS__)

/* Reports what the tail of a file source could not read (a rotated
 * generation gone before it was finished, or beyond the bounds): log,
 * /metrics, a source-data-lost event, and the exit status of --once. */
static void report_losses(struct collector *c, struct source *s)
{
    struct tail_loss l;
    while (s->tail && tail_take_loss(s->tail, &l)) {
        c->losses++;
        metrics_inc_label(M_FILES_LOST, l.reason);
        if (l.to > l.from) metrics_add_label(M_BYTES_LOST, l.reason, (uint64_t)(l.to - l.from));
        if (l.lines > 0) metrics_add_label(M_LINES_LOST, l.reason, (uint64_t)l.lines);
        char range[192], lines[48] = "";
        if (l.to >= 0) snprintf(range, sizeof range, "bytes %" PRId64 "-%" PRId64 " (%" PRId64 " bytes%s)", l.from, l.to, l.to - l.from,
                                l.more ? " or more: it may have grown after it was last seen" : "");
        else snprintf(range, sizeof range, "bytes from %" PRId64 " to its end (size unknown)", l.from);
        if (l.lines >= 0) snprintf(lines, sizeof lines, ", %" PRId64 " lines", l.lines);
        static const char *const why[][2] = {
            { "deleted", "was deleted before it was read" },
            { "compressed", "was compressed before it was read (compressed files are not read)" },
            { "truncated", "was truncated before it was read, and no copy of it was found" },
            { "too_old", "is older than collect.rotate_max_age" },
            { "too_many", "is beyond collect.rotate_max_generations" },
        };
        const char *text = l.reason;
        for (size_t i = 0; i < GL_ARRAY_LEN(why); i++) if (!strcmp(why[i][0], l.reason)) text = why[i][1];
        health_event_at(c, s, "source-data-lost", l.name, l.from,
                        "data lost: %s %s; never read: %s%s (device %" PRIu64 " inode %" PRIu64 " fingerprint %s, generation after %" PRIu64 ")",
                        l.name, text, range, lines, l.dev, l.ino, l.fp[0] ? l.fp : "-", l.gen);
    }
}

/* ---------------------------------------------------------------- sources */

static struct source *source_add(struct collector *c, enum src_kind kind, const char *name)
{
    if (c->nsrc == c->capsrc) {
        c->capsrc = c->capsrc ? c->capsrc * 2 : 8;
        c->src = xrealloc(c->src, c->capsrc * sizeof *c->src);
    }
    struct source *s = xcalloc(1, sizeof *s);
    s->idx = (int)c->nsrc + 1;
    s->kind = kind;
    s->name = xstrdup(name);
    s->c = c;
    buf_init(&s->hdr);
    s->ckpt_file = ckpt_path(c->state_dir, kind_names[kind], name);
    const struct parser_ops *ops = parser_find(kind == SRC_KMSG ? "kmsg" : c->format);
    s->parser = parser_new(ops, on_event, c);
    c->src[c->nsrc++] = s;
    return s;
}

static void source_free(struct source *s)
{
    producer_free(s->prod);
    parser_free(s->parser);
    track_free(&s->tr);
    tail_free(s->tail);
    spool_free(s->sp);
    buf_free(&s->hdr);
    free(s->ckpt_file);
    free(s->name);
    free(s);
}

static int load_ckpt(struct collector *c, struct source *s, struct ckpt *ck)
{
    char err[GL_ERRLEN];
    int r = ckpt_load(s->ckpt_file, ck, err, sizeof err);
    if (r == GL_ERROR) {
        log_warn("msg=\"ignoring an unreadable checkpoint\" error=\"%s\"", err);
        memset(ck, 0, sizeof *ck);
    }
    (void)c;
    return r == GL_OK;
}

/* Resuming mid-stream: feeds the header block saved with the checkpoint to
 * the new parser (events dropped), so it knows the columns again. */
static void prime_parser(struct collector *c, struct source *s, const struct ckpt *ck)
{
    if (!ck->hdr_len) return;
    buf_reset(&s->hdr);
    buf_append(&s->hdr, ck->hdr, ck->hdr_len);
    s->hdr_saved_hash = hash64(s->hdr.p, s->hdr.len, 1);
    c->priming = 1;
    const char *p = ck->hdr, *end = ck->hdr + ck->hdr_len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        struct line_src src = { .host = c->host, .path = s->kind == SRC_FILE ? s->name : NULL,
                                .source = s->name, .offset = 0, .lineno = 0, .now_ms = gl_now_ms() };
        parser_feed(s->parser, &src, p, n);
        p += n + 1;
    }
    c->priming = 0;
}

/* Whether name was reported already (once per name: patterns are scanned
 * every second); remembers it. The collector owns the list. */
static int said_once(struct collector *c, const char *name)
{
    uint64_t h = hash64(name, strlen(name), 0x736b6970ULL);
    for (size_t j = 0; j < c->nskipped; j++)
        if (c->skipped[j] == h) return 1;
    c->skipped = xrealloc(c->skipped, (c->nskipped + 1) * sizeof *c->skipped);
    c->skipped[c->nskipped++] = h;
    return 0;
}

static void open_file_source(struct collector *c, const char *path)
{
    for (size_t i = 0; i < c->nsrc; i++)
        if (c->src[i]->kind == SRC_FILE && !strcmp(c->src[i]->name, path)) return;
    /* a FIFO, socket or device is not followed: opening a FIFO would block
     * (and it has no offsets to checkpoint); --once fails, a daemon goes on */
    struct stat st;
    int exists = stat(path, &st) == 0;
    if (exists && !S_ISREG(st.st_mode)) {
        if (!said_once(c, path))
            log_error("msg=\"not a regular file: not followed (pipe a stream to 'gpulog collect -' or --exec)\" path=\"%s\" type=%s",
                      path, S_ISFIFO(st.st_mode) ? "fifo" : S_ISDIR(st.st_mode) ? "directory" :
                      S_ISSOCK(st.st_mode) ? "socket" : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "device" : "other");
        if (c->once) c->source_failed = 1;
        return;
    }
    /* a file is its device and inode, not its name: a symlink or hard link to
     * a followed file (a glob often matches both) would send it twice, under
     * other event ids */
    for (size_t i = 0; i < c->nsrc && exists; i++)
        if (c->src[i]->kind == SRC_FILE && tail_reads(c->src[i]->tail, (uint64_t)st.st_dev, (uint64_t)st.st_ino)) {
            if (!said_once(c, path))
                log_info("msg=\"not followed: another name of a followed file\" path=\"%s\" followed=\"%s\"",
                         path, c->src[i]->name);
            return;
        }
    struct source *s = source_add(c, SRC_FILE, path);
    struct ckpt ck;
    int have = load_ckpt(c, s, &ck);
    s->tail = tail_new(path, have ? &ck : NULL, &c->topts);
    report_losses(c, s);
    int64_t start = tail_offset(s->tail);
    track_init(&s->tr, start);
    if (start > 0) prime_parser(c, s, &ck);
    s->saved_offset = have ? ck.offset : -1;
    if (!tail_is_open(s->tail)) log_warn("msg=\"file not found (yet): waiting for it\" path=\"%s\"", path);
    else if (start > 0) log_info("msg=\"resuming\" path=\"%s\" offset=%" PRId64, path, start);
}

static int open_spool(struct collector *c, struct source *s, struct ckpt *ck, int have)
{
    struct buf dir;
    buf_init(&dir);
    buf_printf(&dir, "%s/spool-%s-%016" PRIx64, c->state_dir, kind_names[s->kind],
               hash64(s->name, strlen(s->name), 0x67706c6f67ULL));
    char err[GL_ERRLEN];
    int64_t start = have ? ck->offset : 0;
    s->sp = spool_open(dir.p, start, c->max_line, err, sizeof err);
    buf_free(&dir);
    if (!s->sp) {
        log_error("msg=\"cannot open the spool\" error=\"%s\"", err);
        return GL_ERROR;
    }
    track_init(&s->tr, start);
    s->saved_offset = have ? ck->offset : -1;
    if (start > 0) prime_parser(c, s, ck);
    return GL_OK;
}

static void report_rejected(struct collector *c, struct source *s, int64_t off, enum reject_reason r, const char *why);

/* The producer hooks: health events and over-long lines of a spooled source. */
static void prod_health(void *ctx, const char *action, const char *msg)
{
    struct source *s = ctx;
    health_event(s->c, s, action, "%s", msg);
}

static void prod_too_long(void *ctx, int64_t off)
{
    struct source *s = ctx;
    report_rejected(s->c, s, off, RJ_TOO_LONG, "line too long, skipped");
}

/* A spooled source: its spool (from the checkpoint) and its producer. */
static int add_spooled(struct collector *c, enum src_kind kind, const char *name, struct producer_opts *po)
{
    struct source *s = source_add(c, kind, name);
    struct ckpt ck;
    int have = load_ckpt(c, s, &ck);
    if (open_spool(c, s, &ck, have) != GL_OK) { argv_free(po->argv); return EXIT_IOERR; }
    po->name = name;
    po->max_line = c->max_line;
    po->once = c->once;
    po->stale_ms = c->stale_override_ms;
    if (have) { po->kmsg_seq = ck.kmsg_seq; po->kmsg_boot_id = ck.boot_id; }
    struct producer_hooks h = { .ctx = s, .health = prod_health, .too_long = prod_too_long };
    char err[GL_ERRLEN];
    s->prod = producer_new(po, s->sp, &h, err, sizeof err);
    if (!s->prod) {
        fprintf(stderr, "gpulog collect: %s\n", err);
        return EXIT_IOERR;
    }
    return EXIT_OK;
}

static int add_exec(struct collector *c, const char *cmd)
{
    char **argv = argv_split(cmd);
    if (!argv) return cli_usage_error("collect", "--exec: empty command or unbalanced quote: %s", cmd);
    struct producer_opts po = { .kind = PRODUCER_EXEC, .argv = argv };
    return add_spooled(c, SRC_EXEC, cmd, &po);
}

static int add_stdin(struct collector *c)
{
    struct producer_opts po = { .kind = PRODUCER_STDIN };
    return add_spooled(c, SRC_STDIN, "-", &po);
}

static int add_kmsg(struct collector *c, const char *path)
{
    struct producer_opts po = { .kind = PRODUCER_KMSG, .kmsg_path = path };
    return add_spooled(c, SRC_KMSG, "kmsg", &po);
}

static int is_glob(const char *p) { return strpbrk(p, "*?[") != NULL; }

/* Why a glob match is not a source of its own, or NULL: a rotated file of
 * another match or of a followed file is read through that file's rotation
 * (as its own source it would be sent twice, under other event ids), and a
 * compressed file is not text. Borrows everything; returns a static string. */
static const char *glob_skip_reason(struct collector *c, const glob_t *g, const char *m)
{
    if (compressed_name(m)) return "compressed";
    for (size_t k = 0; k < g->gl_pathc; k++)
        if (rotated_name_of(m, g->gl_pathv[k], NULL)) return "rotated file of another match";
    for (size_t i = 0; i < c->nsrc; i++)
        if (c->src[i]->kind == SRC_FILE && rotated_name_of(m, c->src[i]->name, NULL)) return "rotated file of a followed file";
    return NULL;
}

static void scan_patterns(struct collector *c)
{
    const char *fmt = c->format;
    for (size_t i = 0; i < c->npatterns; i++) {
        const char *p = c->patterns[i];
        c->format = c->pattern_fmt[i];
        if (!is_glob(p)) { open_file_source(c, p); continue; }
        glob_t g;
        if (glob(p, 0, NULL, &g) == 0) {
            for (size_t k = 0; k < g.gl_pathc; k++) {
                struct stat st;
                const char *m = g.gl_pathv[k];
                if (stat(m, &st) != 0 || !S_ISREG(st.st_mode)) continue;
                const char *why = glob_skip_reason(c, &g, m);
                if (!why) { open_file_source(c, m); continue; }
                if (said_once(c, m)) continue;
                log_info("msg=\"glob match not followed\" path=\"%s\" reason=\"%s\" pattern=\"%s\"", m, why, p);
            }
        }
        globfree(&g);
    }
    c->format = fmt;
}

/* ---------------------------------------------------------------- reading */

static void report_rejected(struct collector *c, struct source *s, int64_t off, enum reject_reason r, const char *why)
{
    s->rejected++;
    metrics_inc_label(M_LINES_REJECTED, reject_reason_name(r));
    if (c->reports++ < 100)
        fprintf(stderr, "%s@%" PRId64 ": %s\n", s->name, off, why);
}

/* Feeds up to budget lines of s to its parser. Returns lines processed. */
static int source_read(struct collector *c, struct source *s, int budget)
{
    int done = 0;
    while (done < budget && !c->blocked && !c->fatal && track_pending(&s->tr) < MAX_PENDING_LINES) {
        struct rline l;
        int r = s->kind == SRC_FILE ? tail_next(s->tail, c->once, &l) : spool_next(s->sp, &l);
        if (r == RL_AGAIN) {
            if (s->kind == SRC_FILE) {
                int64_t ns;
                int sw = tail_check(s->tail, track_pending(&s->tr) == 0, &ns);
                report_losses(c, s);
                if (sw) {
                    track_reset(&s->tr, ns);
                    s->force_save = 1;
                    continue;
                }
                /* a rotated generation read to its end waits for its
                 * acknowledgements before the next one: not the end yet */
                if (tail_behind(s->tail)) { s->at_end = 0; break; }
            }
            s->at_end = 1;
            break;
        }
        s->at_end = 0;
        if (r == RL_IOERR) {
            log_error("msg=\"read error\" source=\"%s\" error=\"%s\"", s->name, strerror(errno));
            s->at_end = 1;
            break;
        }
        done++;
        s->lines++;
        metrics_inc(M_LINES_READ);
        uint64_t seq = track_push(&s->tr, l.end);
        if (r == RL_TOOLONG) {
            char why[96];
            snprintf(why, sizeof why, "line longer than %zu bytes, skipped", c->max_line);
            report_rejected(c, s, l.off, RJ_TOO_LONG, why);
            track_settle(&s->tr, seq);
            continue;
        }
        c->cur = s;
        s->cur_seq = seq;
        struct line_src src = {
            .host = c->host,
            .path = s->kind == SRC_FILE ? s->name : NULL,
            .source = s->name,
            .offset = l.off,
            .gen = s->kind == SRC_FILE ? tail_gen(s->tail) : 0,
            .lineno = s->lines,
            .now_ms = c->fixed_now ? c->fixed_now : (l.ms ? l.ms : gl_now_ms()),
            .keep_original = c->keep_original,
        };
        int pr = parser_feed(s->parser, &src, l.p, l.len);
        if (pr == GL_DECLINED) {
            /* remember the header block, for a restart in the middle */
            size_t k = 0;
            while (k < l.len && (l.p[k] == ' ' || l.p[k] == '\t')) k++;
            if (k < l.len) {
                if (!s->hdr_open) { buf_reset(&s->hdr); s->hdr_open = 1; }
                if (s->hdr.len + l.len + 1 <= sizeof ((struct ckpt *)0)->hdr) {
                    buf_append(&s->hdr, l.p, l.len);
                    buf_putc(&s->hdr, '\n');
                }
            }
        } else {
            s->hdr_open = 0;
        }
        if (pr == GL_ERROR) report_rejected(c, s, l.off, (enum reject_reason)s->parser->err_reason, s->parser->err);
        else if (pr == GL_OK && s->prod) producer_useful(s->prod, l.ms);
        track_settle(&s->tr, seq);
    }
    return done;
}

/* ------------------------------------------------------------ checkpoints */

static void save_ckpt(struct collector *c, struct source *s, int force)
{
    int hdr_changed = hash64(s->hdr.p ? s->hdr.p : "", s->hdr.len, 1) != s->hdr_saved_hash;
    if (!force && !s->force_save && !hdr_changed && s->tr.committed == s->saved_offset && s->kind != SRC_KMSG) return;
    struct ckpt ck;
    memset(&ck, 0, sizeof ck);
    if (s->kind == SRC_FILE) {
        if (!tail_is_open(s->tail)) return;
        tail_identity(s->tail, &ck);
    }
    if (s->kind == SRC_KMSG) {
        char boot_id[40];
        uint64_t seq = producer_kmsg_seq(s->prod, boot_id);
        if (!force && !s->force_save && s->tr.committed == s->saved_offset && seq == 0) return;
        /* the sequence number may only be recorded once its lines are on disk */
        spool_flush(s->sp);
        spool_sync(s->sp);
        ck.kmsg_seq = seq;
        memcpy(ck.boot_id, boot_id, sizeof ck.boot_id);
    }
    ck.offset = s->tr.committed;
    memcpy(ck.hdr, s->hdr.p ? s->hdr.p : "", s->hdr.len);
    ck.hdr_len = (uint32_t)s->hdr.len;
    char err[GL_ERRLEN];
    if (ckpt_save(s->ckpt_file, &ck, err, sizeof err) != GL_OK) {
        c->ckpt_failures++;
        if (!s->ckpt_bad)   /* once per failure streak: saves are retried every second */
            log_error("msg=\"cannot write a checkpoint: a restart would resend this source from its last checkpoint; "
                      "/readyz fails until it is written\" source=\"%s\" file=\"%s\" error=\"%s\"",
                      s->name, s->ckpt_file, err);
        s->ckpt_bad = 1;
        return;
    }
    if (s->ckpt_bad) log_info("msg=\"checkpoint written again\" source=\"%s\"", s->name);
    s->ckpt_bad = 0;
    s->saved_offset = ck.offset;
    s->hdr_saved_hash = hash64(ck.hdr, ck.hdr_len, 1);
    s->force_save = 0;
    if (s->sp) spool_release(s->sp, ck.offset);
}

static void save_all(struct collector *c, int force)
{
    for (size_t i = 0; i < c->nsrc; i++) {
        struct source *s = c->src[i];
        if (s->sp) { spool_flush(s->sp); spool_sync(s->sp); }
        save_ckpt(c, s, force);
    }
    /* ready only while every source's position is on disk */
    int bad = 0;
    for (size_t i = 0; i < c->nsrc; i++) bad |= c->src[i]->ckpt_bad;
    if (c->running) metrics_set_ready(!bad);
}

static void log_stats(struct collector *c, long inflight)
{
    int64_t spooled = 0, backlog = 0;
    uint64_t lines = 0, rejected = 0, events = 0;
    for (size_t i = 0; i < c->nsrc; i++) {
        struct source *s = c->src[i];
        lines += s->lines; rejected += s->rejected; events += s->events;
        if (s->sp) { spooled += spool_bytes(s->sp); backlog += spool_backlog(s->sp); }
    }
    long rss = rss_kb();
    if (rss > c->peak_rss_kb) c->peak_rss_kb = rss;
    log_info("msg=stats lines=%" PRIu64 " events=%" PRIu64 " rejected=%" PRIu64 " written=%" PRIu64
             " acked=%" PRIu64 " deadletter=%" PRIu64 " inflight=%ld stashed=%zu spool_bytes=%" PRId64
             " spool_backlog=%" PRId64 " rss_kb=%ld",
             lines, events, rejected, c->written, c->acked, c->deadletter, inflight, c->stash.n,
             spooled, backlog, rss);
}

/* -------------------------------------------------------------- main loop */

static int once_finished(struct collector *c)
{
    if (c->stash.n) return 0;
    for (size_t i = 0; i < c->nsrc; i++) {
        struct source *s = c->src[i];
        if (!s->at_end) return 0;
        if (s->kind != SRC_FILE) {
            if (!producer_done(s->prod)) return 0;
            if (spool_backlog(s->sp) > 0) return 0;
        }
    }
    return 1;
}

static int all_producers_done(struct collector *c)
{
    for (size_t i = 0; i < c->nsrc; i++) {
        struct source *s = c->src[i];
        if (s->kind == SRC_FILE) return 0;
        if (!producer_done(s->prod) || !s->at_end || spool_backlog(s->sp) > 0) return 0;
    }
    return c->stash.n == 0;
}

/* The spool budget: above it the producers are not read (backpressure);
 * SIGHUP re-scans the globs. Returns 1 when the spools are full. */
static int spool_budget(struct collector *c)
{
    int64_t spooled = 0;
    for (size_t i = 0; i < c->nsrc; i++)
        if (c->src[i]->sp) spooled += spool_bytes(c->src[i]->sp);
    int full = spooled >= c->spool_max;
    metrics_set(M_SPOOL_BYTES, spooled);
    if (full != c->spool_full) {
        c->spool_full = full;
        if (full) log_warn("msg=\"spool budget spent: not reading children/stdin until it drains\" spool_bytes=%" PRId64, spooled);
        else log_info("msg=\"spool below budget: reading again\"");
    }
    return full;
}

/* Producers' fds to poll (pfd/pfs grown as needed, owned by the caller). */
static size_t producer_pollset(struct collector *c, struct pollfd **pfd, struct source ***pfs, size_t *cap)
{
    if (*cap < c->nsrc) {
        *cap = c->nsrc;
        *pfd = xrealloc(*pfd, *cap * sizeof **pfd);
        *pfs = xrealloc(*pfs, *cap * sizeof **pfs);
    }
    size_t np = 0;
    for (size_t i = 0; i < c->nsrc; i++)
        if (c->src[i]->prod && producer_fd(c->src[i]->prod) >= 0) {
            (*pfd)[np].fd = producer_fd(c->src[i]->prod);
            (*pfd)[np].events = POLLIN;
            (*pfd)[np].revents = 0;
            (*pfs)[np++] = c->src[i];
        }
    return np;
}

/* Once a second: notes the files at the followed paths, checkpoints,
 * re-scans the globs, hands freed buffers back after a burst. */
static void tick(struct collector *c, long inflight, unsigned *ticks)
{
    for (size_t i = 0; i < c->nsrc; i++)
        if (c->src[i]->kind == SRC_FILE) { tail_watch(c->src[i]->tail); report_losses(c, c->src[i]); }
    save_all(c, 0);
    if (!c->once) scan_patterns(c);
    long rss = rss_kb();
    if (rss > c->peak_rss_kb) c->peak_rss_kb = rss;
    /* a sidecar's steady-state footprint should not keep its peak */
    if (++*ticks % 10 == 0 && inflight < 1000) malloc_trim(0);
}

/* The main loop: producers into spools, sources through the parsers into
 * the sink, housekeeping; until a signal, a fatal sink error, or the end. */
static int run(struct collector *c)
{
    int64_t last_tick = 0, last_stats = gl_now_ms();
    unsigned ticks = 0;
    int progress = 1;
    long inflight = 0;
    struct pollfd *pfd = NULL;
    struct source **pfs = NULL;
    size_t cappfd = 0;
    while (!stop_flag && !c->fatal) {
        int64_t now = gl_now_ms();
        if (hup_flag) {
            hup_flag = 0;
            scan_patterns(c);
            log_info("msg=reload what=\"file sources re-scanned (collect has no detectors; other settings need a restart)\" files=%zu",
                     c->nsrc);
        }
        size_t np = spool_budget(c) ? 0 : producer_pollset(c, &pfd, &pfs, &cappfd);
        int timeout = progress ? 0 : 50;
        if (np) {
            if (poll(pfd, np, timeout) > 0)
                for (size_t i = 0; i < np; i++)
                    if (pfd[i].revents) producer_read(pfs[i]->prod);
            inflight = sink_poll(c->sink, 0);
        } else {
            int64_t t0 = gl_now_ms();
            inflight = sink_poll(c->sink, timeout);
            /* the file sink returns at once: idle tailing must still sleep.
             * Not when blocked on a full producer queue: Kafka's poll returned
             * early because acknowledgements freed room, so read on at once
             * (sleeping out the 50 ms here stalled backfills ~40% of the time) */
            int64_t spent = gl_now_ms() - t0;
            if (timeout > 0 && spent < timeout && !c->blocked) poll(NULL, 0, (int)(timeout - spent));
        }
        for (size_t i = 0; i < c->nsrc; i++) {
            struct source *s = c->src[i];
            if (s->sp) spool_flush(s->sp);
            if (s->prod) producer_supervise(s->prod, !c->spool_full && !c->blocked);
        }
        /* parse and deliver */
        progress = 0;
        if (stash_flush(c)) c->blocked = 0;
        if (!c->blocked)
            for (size_t i = 0; i < c->nsrc; i++) progress += source_read(c, c->src[i], 4096);
        inflight = sink_poll(c->sink, 0);
        if (c->sink->errstr[0] && !c->fatal) {
            log_error("msg=\"sink failed\" error=\"%s\"", c->sink->errstr);
            c->fatal = 1;
        }
        if (c->blocked) progress = 0;
        if (now - last_tick >= 1000) { last_tick = now; tick(c, inflight, &ticks); }
        if (c->stats_ms && now - last_stats >= c->stats_ms) {
            last_stats = now;
            log_stats(c, inflight);
        }
        if (c->once ? once_finished(c) : (c->nsrc && all_producers_done(c))) break;
    }
    free(pfd);
    free(pfs);
    return GL_OK;
}

/* Stops children, delivers what was read (within the deadline), checkpoints. */
static long finish(struct collector *c)
{
    c->running = 0;
    metrics_set_ready(0);
    for (size_t i = 0; i < c->nsrc; i++) {
        if (c->src[i]->prod) producer_stop(c->src[i]->prod);
    }
    for (size_t i = 0; i < c->nsrc; i++) {
        /* pending multi-line events; their lines are already settled, so a
         * crash right here could lose them (documented limit) */
        c->cur = c->src[i];
        c->cur->cur_seq = UINT64_MAX;
        parser_flush(c->src[i]->parser);
    }
    int unlimited = c->once && !stop_flag;
    int64_t deadline = gl_now_ms() + c->shutdown_ms;
    long left = 0;
    int64_t last_tick = gl_now_ms();
    for (;;) {
        if (!c->fatal && stash_flush(c)) c->blocked = 0;
        left = sink_poll(c->sink, 100) + (long)c->stash.n;
        if (c->sink->errstr[0] && !c->fatal) {
            log_error("msg=\"sink failed\" error=\"%s\"", c->sink->errstr);
            c->fatal = 1;
        }
        if (left == 0 || c->fatal) break;
        if (stop_flag && unlimited) { unlimited = 0; deadline = gl_now_ms() + c->shutdown_ms; }
        if (!unlimited && gl_now_ms() >= deadline) break;
        if (gl_now_ms() - last_tick >= 1000) { last_tick = gl_now_ms(); save_all(c, 0); }
        if (c->stats_ms && gl_now_ms() % c->stats_ms < 100) log_stats(c, left);
    }
    save_all(c, 1);
    if (left) log_warn("msg=\"stopping with unacknowledged messages: they are re-read from the checkpoint on the next start\" unacked=%ld", left);
    return left;
}

/* ------------------------------------------------------------------- CLI */

static void collect_help(void)
{
    printf(
        "usage: gpulog collect [--config FILE] [--exec CMD]... [--file PATH_OR_GLOB]... [--kmsg] [-]\n"
        "                      [--format F] [--host NAME] [--tz ZONE] [--year YYYY] [--state-dir DIR]\n"
        "                      [--brokers LIST] [--topic T] [--events-topic T] [-X key=value]...\n"
        "                      [--output FILE] [--once] [--spool-max BYTES] [--shutdown-timeout S]\n"
        "                      [--metrics-addr HOST:PORT]\n"
        "\n"
        "The node sidecar: reads GPU telemetry sources, parses every line into events\n"
        "and delivers them to Kafka (or NDJSON on stdout / --output without brokers).\n"
        "\n"
        "sources (any number, each with its own parser; given here they replace the\n"
        "config file's sources list):\n"
        "  -e, --exec CMD        run CMD (split into words without a shell; quotes group)\n"
        "                        and read its stdout; restarted with backoff 1 s .. 30 s\n"
        "                        when it exits; killed and restarted when it gives no\n"
        "                        usable line for max(3 sample periods, 10 s), with a\n"
        "                        gpulog.collector event (source-stale / source-restarted)\n"
        "  -f, --file PATH       follow a file like tail -F (rename and copytruncate\n"
        "                        rotation, files that appear later); behind or after a\n"
        "                        stop, every rotated generation not read yet is read,\n"
        "                        oldest first; one gone before it was read is reported\n"
        "                        (source-data-lost); a glob is re-scanned\n"
        "                        every second; of its matches, rotated files of another\n"
        "                        match or followed file (NAME.1, NAME-20250101.gz)\n"
        "                        and compressed files are skipped (read through the\n"
        "                        rotation; logged once); name a file to follow it anyway\n"
        "      --kmsg[=PATH]     kernel messages from /dev/kmsg (resumed by sequence\n"
        "                        number; boot-relative times become wall-clock)\n"
        "  -                     standard input\n"
        "\n"
        "options (the configuration key in brackets):\n"
        "      --config FILE     gpulog configuration (YAML, docs/configuration.md;\n"
        "                        default $GPULOG_CONFIG); flags override it\n"
        "  -F, --format F        format of sources whose format is auto (default auto)\n"
        "  -H, --host NAME       host.name (default: this machine's name); keep it stable,\n"
        "                        event ids are made from host, source, offset and line [host]\n"
        "      --tz ZONE         zone of tool timestamps (default: local) [tz]\n"
        "      --year YYYY       year of syslog times, which have none (default: the\n"
        "                        read time's, or the year before if that puts a line\n"
        "                        more than a day ahead) [year]\n"
        "  -s, --state-dir DIR   checkpoints, spool and dead letters (default\n"
        "                        $STATE_DIRECTORY or /var/lib/gpulog) [state_dir]\n"
        "  -b, --brokers LIST    Kafka bootstrap servers; without them NDJSON is written\n"
        "                        [kafka.brokers]\n"
        "  -t, --topic T         topic of metric events (default gpu.metrics)\n"
        "                        [kafka.topics.metrics]\n"
        "      --events-topic T  topic of kernel and collector events (default gpu.events)\n"
        "                        [kafka.topics.events]\n"
        "  -X key=value          librdkafka property, applied after gpulog's defaults\n"
        "                        (enable.idempotence=true acks=all compression.codec=lz4\n"
        "                        message.timeout.ms=0 queue.buffering.max.kbytes=8192\n"
        "                        linger.ms=20); TLS and SASL work through these\n"
        "                        [kafka.properties]\n"
        "  -o, --output FILE     NDJSON output when no brokers are set (default stdout);\n"
        "                        refused together with brokers, as are -X and the\n"
        "                        topics without them\n"
        "      --once            read what is there, deliver it, wait for every\n"
        "                        acknowledgement, checkpoint and exit\n"
        "      --spool-max N     on-disk spool budget (default 256MiB) [collect.spool_max]\n"
        "      --shutdown-timeout S  time to deliver what was read after SIGTERM\n"
        "                        (default 10 s) [shutdown_timeout]\n"
        "      --stale-after S   override the staleness limit of --exec commands\n"
        "                        [collect.stale_after]\n"
        "      --stats-interval S  log a stats line every S seconds (default 60, 0 = off)\n"
        "                        [collect.stats_interval]\n"
        "      --metrics-addr HOST:PORT  serve /metrics, /healthz and /readyz [metrics_addr]\n"
        "      --rotate-max-generations N  rotated generations read back after falling\n"
        "                        behind (default 64) [collect.rotate_max_generations]\n"
        "      --rotate-max-age D  rotated generations older than D are not read\n"
        "                        (default 7d) [collect.rotate_max_age]\n"
        "      --keep-original   put the raw line in event.original on metric events\n"
        "      --max-line N      longest accepted line in bytes (default %d)\n"
        "\n"
        "Delivery: a source's checkpoint moves only past lines whose events the broker\n"
        "acknowledged; lines of commands, stdin and /dev/kmsg are spooled to disk first.\n"
        "After a crash only unacknowledged lines are sent again, with the same event.id.\n"
        "Signals: SIGTERM/SIGINT stop reading, deliver, checkpoint and exit within\n"
        "shutdown_timeout; SIGHUP re-scans the --file globs at once (collect has no\n"
        "detectors to reload; other settings need a restart).\n"
        "Data that was never read (a rotated file deleted or compressed before it was\n"
        "read, or beyond the bounds above) is logged with its byte range, counted in\n"
        "gpulog_files_lost_total{reason} and sent as a source-data-lost event.\n"
        "Exit status: 0 ok; 1 when something could not be delivered (dead letter,\n"
        "shutdown deadline, fatal producer error), on an I/O error, or with --once\n"
        "when a command could not start or failed or file data was lost; 2 usage error.\n",
        LR_DEFAULT_MAX_LINE);
}

static int parse_num(const char *s, double lo, double hi, double *out)
{
    double v;
    if (!gl_parse_double(s, strlen(s), &v) || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}

/* A source flag: the first one replaces the configuration's sources. */
static int collect_source_flag(struct gpulog_config *cfg, int *cleared, const char *type, const char *arg,
                               char *err, size_t errlen)
{
    if (!*cleared) { config_clear_sources(cfg); *cleared = 1; }
    struct buf v;
    buf_init(&v);
    buf_puts(&v, type);
    if (arg) { buf_putc(&v, ':'); buf_puts(&v, arg); }
    int r = config_set(cfg, "sources", v.p, err, errlen);
    buf_free(&v);
    return r;
}

/* What the command line and the configuration ask for besides the collector's own fields. */
struct collect_req {
    const char *kmsg_path;
    char **execs;                 /* borrowed from the configuration */
    const char **exec_fmt;
    size_t nexecs;
    int use_stdin;
    const char *kafka_flag;       /* a Kafka-only flag given on the command line */
    char *state_dir_own;          /* c->state_dir when it had to be cut out of a list */
    struct buf dl;                /* the dead-letter file */
};

/* Reads the flags into cfg (and c's flag-only fields). EXIT_OK or a usage error. */
static int collect_flags(struct collector *c, struct gpulog_config *cfg, struct collect_req *rq, int argc, char **argv)
{
    enum { O_TZ = 256, O_EVTOPIC, O_ONCE, O_SPOOLMAX, O_SHUTDOWN, O_STALE, O_STATS, O_KEEP, O_MAXLINE, O_KMSG,
           O_CONFIG, O_METRICS, O_ROTGENS, O_ROTAGE, O_YEAR };
    static const struct option opts[] = {
        { "config", required_argument, NULL, O_CONFIG },
        { "exec", required_argument, NULL, 'e' },
        { "file", required_argument, NULL, 'f' },
        { "kmsg", optional_argument, NULL, O_KMSG },
        { "format", required_argument, NULL, 'F' },
        { "host", required_argument, NULL, 'H' },
        { "tz", required_argument, NULL, O_TZ },
        { "year", required_argument, NULL, O_YEAR },
        { "state-dir", required_argument, NULL, 's' },
        { "brokers", required_argument, NULL, 'b' },
        { "topic", required_argument, NULL, 't' },
        { "events-topic", required_argument, NULL, O_EVTOPIC },
        { "output", required_argument, NULL, 'o' },
        { "once", no_argument, NULL, O_ONCE },
        { "spool-max", required_argument, NULL, O_SPOOLMAX },
        { "shutdown-timeout", required_argument, NULL, O_SHUTDOWN },
        { "stale-after", required_argument, NULL, O_STALE },
        { "stats-interval", required_argument, NULL, O_STATS },
        { "keep-original", no_argument, NULL, O_KEEP },
        { "max-line", required_argument, NULL, O_MAXLINE },
        { "metrics-addr", required_argument, NULL, O_METRICS },
        { "rotate-max-generations", required_argument, NULL, O_ROTGENS },
        { "rotate-max-age", required_argument, NULL, O_ROTAGE },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    static const struct { int opt; const char *key, *kafka_flag; } keys[] = {
        { 'H', "host", NULL }, { O_TZ, "tz", NULL }, { O_YEAR, "year", NULL }, { 's', "state_dir", NULL },
        { 'b', "kafka.brokers", NULL }, { 't', "kafka.topics.metrics", "--topic" },
        { O_EVTOPIC, "kafka.topics.events", "--events-topic" }, { 'X', "kafka.properties", "-X" },
        { O_SPOOLMAX, "collect.spool_max", NULL }, { O_SHUTDOWN, "shutdown_timeout", NULL },
        { O_STALE, "collect.stale_after", NULL }, { O_STATS, "collect.stats_interval", NULL },
        { O_METRICS, "metrics_addr", NULL }, { O_ROTGENS, "collect.rotate_max_generations", NULL },
        { O_ROTAGE, "collect.rotate_max_age", NULL },
    };
    static const struct { int opt; const char *type; } sources[] = { { 'e', "exec" }, { 'f', "file" }, { O_KMSG, "kmsg" } };
    char cerr[GL_ERRLEN * 4];
    int cleared = 0, ch;
    double v;
    optind = 1;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":e:f:F:H:s:b:t:o:X:h", opts, NULL)) != -1) {
        if (ch == ':') return cli_usage_error("collect", "option %s needs a value", argv[optind - 1]);
        if (ch == 'b' && !*optarg)   /* an empty value would silently mean "no Kafka, NDJSON on stdout" */
            return cli_usage_error("collect", "--brokers is empty (leave it out for NDJSON output)");
        if (ch == 'X' && !strchr(optarg, '=')) return cli_usage_error("collect", "-X wants key=value, got '%s'", optarg);
        int known = 1;
        size_t i;
        for (i = 0; i < GL_ARRAY_LEN(keys) && keys[i].opt != ch; i++) {}
        if (i < GL_ARRAY_LEN(keys)) {
            if (keys[i].kafka_flag) rq->kafka_flag = keys[i].kafka_flag;
            if (config_set(cfg, keys[i].key, optarg, cerr, sizeof cerr) != GL_OK) return cli_usage_error("collect", "%s", cerr);
            continue;
        }
        for (i = 0; i < GL_ARRAY_LEN(sources) && sources[i].opt != ch; i++) {}
        if (i < GL_ARRAY_LEN(sources)) {
            if (collect_source_flag(cfg, &cleared, sources[i].type, optarg, cerr, sizeof cerr) != GL_OK)
                return cli_usage_error("collect", "%s", cerr);
            continue;
        }
        switch (ch) {
        case O_CONFIG: break;   /* read before */
        case 'F': c->format = optarg; break;
        case 'o': c->output = optarg; break;
        case O_ONCE: c->once = 1; break;
        case O_KEEP: c->keep_original = 1; break;
        case O_MAXLINE:
            if (!parse_num(optarg, 64, 256.0 * 1024 * 1024, &v))
                return cli_usage_error("collect", "--max-line wants a byte count from 64 to 268435456");
            c->max_line = (size_t)v;
            break;
        default: known = 0;
        }
        if (!known) return cli_usage_error("collect", "unknown option %s", argv[optind - 1]);
    }
    for (int i = optind; i < argc; i++) {
        if (strcmp(argv[i], "-")) return cli_usage_error("collect", "unexpected argument '%s' (files go with --file)", argv[i]);
        if (collect_source_flag(cfg, &cleared, "stdin", NULL, cerr, sizeof cerr) != GL_OK)
            return cli_usage_error("collect", "%s", cerr);
    }
    return EXIT_OK;
}

/* Sorts the configuration's sources into the request (and c's file patterns),
 * each with its format. EXIT_OK or a usage error. */
static int collect_sources(struct collector *c, const struct gpulog_config *cfg, struct collect_req *rq)
{
    if (!parser_find(c->format)) return cli_usage_error("collect", "unknown format '%s'", c->format);
    for (size_t i = 0; i < cfg->sources.n; i++) {
        const struct config_source *cs = &cfg->sources.v[i];
        const char *fmt = *cs->format && strcmp(cs->format, "auto") ? cs->format : c->format;
        if (!parser_find(fmt)) return cli_usage_error("collect", "unknown format '%s'", fmt);
        if (!strcmp(cs->type, "exec")) {
            rq->execs = xrealloc(rq->execs, (rq->nexecs + 1) * sizeof *rq->execs);
            rq->exec_fmt = xrealloc(rq->exec_fmt, (rq->nexecs + 1) * sizeof *rq->exec_fmt);
            rq->execs[rq->nexecs] = cs->command;
            rq->exec_fmt[rq->nexecs++] = fmt;
        } else if (!strcmp(cs->type, "file")) {
            c->patterns = xrealloc(c->patterns, (c->npatterns + 1) * sizeof *c->patterns);
            c->pattern_fmt = xrealloc(c->pattern_fmt, (c->npatterns + 1) * sizeof *c->pattern_fmt);
            c->patterns[c->npatterns] = cs->path;
            c->pattern_fmt[c->npatterns++] = fmt;
        } else if (!strcmp(cs->type, "kmsg")) {
            rq->kmsg_path = *cs->path ? cs->path : "/dev/kmsg";
        } else if (!strcmp(cs->type, "stdin")) {
            rq->use_stdin = 1;
        }
    }
    if (!rq->nexecs && !c->npatterns && !rq->kmsg_path && !rq->use_stdin)
        return cli_usage_error("collect", "no source: give --exec, --file, --kmsg or - (or sources in the config file)");
    return EXIT_OK;
}

/* Checks the settings and copies them into c (borrowing cfg's strings).
 * EXIT_OK or a usage error. */
static int collect_settings(struct collector *c, struct gpulog_config *cfg, struct collect_req *rq)
{
    char cerr[GL_ERRLEN * 4];
    if (config_apply_process(cfg, cerr, sizeof cerr) != GL_OK) return cli_usage_error("collect", "%s", cerr);
    kmsg_syslog_year((int)cfg->year, 0);   /* live sources: inferred against the read time */
    if (cfg->collect.spool_max < (1 << 20)) return cli_usage_error("collect", "--spool-max wants bytes (at least 1048576)");
    if (cfg->collect.rotate_max_generations < 1 || cfg->collect.rotate_max_generations > 100000)
        return cli_usage_error("collect", "collect.rotate_max_generations wants 1 to 100000, got %lld",
                               (long long)cfg->collect.rotate_max_generations);
    if (cfg->collect.rotate_max_age_ms < 1000) return cli_usage_error("collect", "collect.rotate_max_age wants at least 1s");
    c->spool_max = cfg->collect.spool_max;
    c->shutdown_ms = cfg->shutdown_timeout_ms;
    c->stale_override_ms = cfg->collect.stale_after_ms;
    c->topts.max_gens = (int)cfg->collect.rotate_max_generations;
    c->topts.max_age_ms = cfg->collect.rotate_max_age_ms;
    c->stats_ms = cfg->collect.stats_interval_ms;
    c->host = *cfg->host ? cfg->host : cli_hostname();
    c->brokers = *cfg->kafka.brokers ? cfg->kafka.brokers : NULL;
    /* flags that would be ignored: say so instead of doing something else */
    if (!c->brokers && rq->kafka_flag)
        return cli_usage_error("collect", "%s applies to Kafka, but no brokers are set (--brokers, kafka.brokers, GPULOG_KAFKA_BROKERS)",
                               rq->kafka_flag);
    if (c->brokers && c->output)
        return cli_usage_error("collect", "--output writes NDJSON instead of Kafka; with brokers set (%s) it would be ignored", c->brokers);
    c->topic[STREAM_METRICS] = cfg->kafka.topic_metrics;
    c->topic[STREAM_EVENTS] = cfg->kafka.topic_events;
    c->props = cfg->kafka.properties.kv;
    c->nprops = cfg->kafka.properties.n;
    c->state_dir = cfg->state_dir;
    const struct config_key *k = config_key_find("state_dir");
    const char *sd = getenv("STATE_DIRECTORY");
    if (k && !strcmp(c->state_dir, k->def) && sd && *sd) c->state_dir = sd;   /* systemd StateDirectory= */
    if (!*c->state_dir) c->state_dir = "/var/lib/gpulog";
    if (strchr(c->state_dir, ':'))   /* systemd lists */
        c->state_dir = rq->state_dir_own = xstrndup(c->state_dir, strcspn(c->state_dir, ":"));
    c->max_line = c->max_line ? c->max_line : LR_DEFAULT_MAX_LINE;
    c->topts.max_line = c->max_line;
    c->fixed_now = feed_read_time();
    return EXIT_OK;
}

/* Creates the state dir, the metrics endpoint and the sink. EXIT_OK or EXIT_IOERR. */
static int collect_open(struct collector *c, const struct gpulog_config *cfg, struct collect_req *rq)
{
    char err[GL_ERRLEN * 4] = "";
    if (mkdir(c->state_dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "gpulog collect: state dir %s: %s\n", c->state_dir, strerror(errno));
        return EXIT_IOERR;
    }
    if (gpumetrics_setup(cfg, 1, err, sizeof err) != GL_OK || metrics_serve(cfg->metrics_addr, err, sizeof err) != GL_OK) {
        fprintf(stderr, "gpulog collect: metrics: %s\n", err);
        return EXIT_IOERR;
    }
    buf_printf(&rq->dl, "%s/deadletter.ndjson", c->state_dir);
    if (c->brokers) {
        struct kafka_conf kc = {
            .brokers = c->brokers,
            .topic = { c->topic[0] ? c->topic[0] : "gpu.metrics", c->topic[1] ? c->topic[1] : "gpu.events",
                       "gpu.anomalies" },
            .props = (const char *const *)c->props,
            .nprops = c->nprops,
            .deadletter_path = rq->dl.p,
        };
        c->sink = sink_kafka_new(&kc, on_settle, c, err, sizeof err);
    } else {
        c->sink = sink_file_new(c->output, on_settle, c, err, sizeof err);
    }
    if (!c->sink) {
        fprintf(stderr, "gpulog collect: %s\n", err);
        return EXIT_IOERR;
    }
    return EXIT_OK;
}

/* Opens every source (commands with their own formats, stdin, kmsg, files). */
static int collect_add_sources(struct collector *c, const struct collect_req *rq)
{
    int rc = EXIT_OK;
    const char *gfmt = c->format;
    for (size_t i = 0; i < rq->nexecs && rc == EXIT_OK; i++) {
        c->format = rq->exec_fmt[i];
        rc = add_exec(c, rq->execs[i]);
    }
    c->format = gfmt;
    if (rc == EXIT_OK && rq->use_stdin) rc = add_stdin(c);
    if (rc == EXIT_OK && rq->kmsg_path) rc = add_kmsg(c, rq->kmsg_path);
    if (rc == EXIT_OK) scan_patterns(c);
    return rc;
}

/* Runs until the end (--once) or a signal, delivers, checkpoints; the exit status. */
static int collect_run(struct collector *c, const struct collect_req *rq)
{
    int rc = EXIT_OK;
    if (c->once)
        for (size_t i = 0; i < c->nsrc; i++)
            if (c->src[i]->kind == SRC_FILE && !tail_is_open(c->src[i]->tail))
                log_warn("msg=\"--once: file not found\" path=\"%s\"", c->src[i]->name);
    log_info("msg=started host=\"%s\" output=\"%s\" brokers=\"%s\" sources=%zu state_dir=\"%s\" "
             "shutdown_timeout_ms=%" PRId64 " metrics_port=%d",
             c->host, c->brokers ? "kafka" : c->output ? c->output : "stdout", c->brokers ? c->brokers : "",
             c->nsrc, c->state_dir, c->shutdown_ms, metrics_port());
    c->running = 1;
    metrics_set_ready(1);
    run(c);
    long left = finish(c);
    if (c->stats_ms) log_stats(c, left);
    for (size_t i = 0; i < c->nsrc; i++)
        if (c->src[i]->prod && producer_failed(c->src[i]->prod)) c->source_failed = 1;
    if (left) log_error("msg=\"shutdown deadline passed with unacknowledged events\" unacked=%ld deadline_ms=%" PRId64,
                        left, c->shutdown_ms);
    if (left || c->fatal || (c->once && (c->deadletter || c->source_failed || c->losses))) rc = EXIT_IOERR;
    if (c->once && c->ckpt_failures) {
        log_error("msg=\"--once: checkpoints could not be written; the next run resends from the last one\" "
                  "failures=%" PRIu64 " state_dir=\"%s\"", c->ckpt_failures, c->state_dir);
        rc = EXIT_IOERR;
    }
    if (c->deadletter) log_error("msg=\"documents were dead-lettered\" count=%" PRIu64 " file=\"%s\"", c->deadletter, rq->dl.p);
    return rc;
}

int cmd_collect(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) { collect_help(); return EXIT_OK; }
    struct gpulog_config cfg;
    if (config_init_command(&cfg, "collect", argc, argv) != GL_OK) return EXIT_USAGE;
    struct collector C, *c = &C;
    memset(c, 0, sizeof *c);
    c->format = "auto";
    buf_init(&c->json);
    buf_init(&c->key);
    struct collect_req rq;
    memset(&rq, 0, sizeof rq);
    buf_init(&rq.dl);
    int rc = collect_flags(c, &cfg, &rq, argc, argv);
    if (rc == EXIT_OK) rc = collect_sources(c, &cfg, &rq);
    if (rc == EXIT_OK) rc = collect_settings(c, &cfg, &rq);
    if (rc == EXIT_OK) {
        cli_catch_signals(on_signal);
        signal(SIGPIPE, SIG_IGN);
        rc = collect_open(c, &cfg, &rq);
    }
    if (rc == EXIT_OK) rc = collect_add_sources(c, &rq);
    if (rc == EXIT_OK) rc = collect_run(c, &rq);
    if (c->sink) sink_free(c->sink);
    for (size_t i = 0; i < c->nsrc; i++) source_free(c->src[i]);
    sink_hold_free(&c->stash);
    metrics_stop();
    free(c->skipped);
    free(c->src);
    free(c->patterns);
    free(c->pattern_fmt);
    buf_free(&c->json);
    buf_free(&c->key);
    buf_free(&rq.dl);
    free(rq.state_dir_own);
    free(rq.execs);
    free(rq.exec_fmt);
    config_free(&cfg);
    return rc;
}
