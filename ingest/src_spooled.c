/*
 * src_spooled.c - the sources whose lines cannot be read again: a
 * supervised command (exec), standard input (stdin) and the kernel log
 * (kmsg). Each is a producer (parts.h) that writes every line into the
 * source's spool before anything parses it; the lines the loop gets come
 * out of the spool, so a position is a spool offset that survives a crash.
 */
#include "source.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct src_spooled {
    struct source base;
    struct spool *sp;
    struct producer *prod;
};

#define SPOOLED(s) ((struct src_spooled *)(s))

extern const struct source_ops src_exec, src_stdin, src_kmsg;

/* The producer's hooks: health events and over-long lines, to the loop. */
static void prod_health(void *ctx, const char *action, const char *msg)
{
    struct source *s = ctx;
    s->env->health(s->env->ctx, s, action, NULL, -1, msg);
}

static void prod_too_long(void *ctx, int64_t off)
{
    struct source *s = ctx;
    s->env->rejected(s->env->ctx, s, off, "line too long, skipped");
}

static void spooled_close(struct source *s)
{
    producer_free(SPOOLED(s)->prod);
    spool_free(SPOOLED(s)->sp);
    source_fini(s);
    free(s);
}

/* Opens the spool at the checkpoint and the producer po describes (po->argv
 * is owned by the producer from here on, also on failure). */
static struct source *spooled_open(const struct source_ops *ops, const char *name, struct producer_opts *po,
                                   const struct source_env *env, char *err, size_t errlen)
{
    struct src_spooled *sc = xcalloc(1, sizeof *sc);
    struct source *s = &sc->base;
    source_init(s, ops, name, env);
    struct ckpt ck;
    int have = source_ckpt_load(s, &ck);
    char *dir = source_spool_dir(s);
    char serr[GL_ERRLEN];
    sc->sp = spool_open(dir, s->start, env->max_line, serr, sizeof serr);
    free(dir);
    if (!sc->sp) {
        log_error("msg=\"cannot open the spool\" error=\"%s\"", serr);
        snprintf(err, errlen, "cannot open the spool: %s", serr);
        argv_free(po->argv);
        spooled_close(s);
        return NULL;
    }
    po->name = name;
    po->max_line = env->max_line;
    po->once = env->once;
    po->stale_ms = env->stale_ms;
    if (have) { po->kmsg_seq = ck.kmsg_seq; po->kmsg_boot_id = ck.boot_id; }
    struct producer_hooks h = { .ctx = s, .health = prod_health, .too_long = prod_too_long };
    sc->prod = producer_new(po, sc->sp, &h, err, errlen);
    if (!sc->prod) { spooled_close(s); return NULL; }
    return s;
}

static struct source *exec_open(const char *cmd, const struct source_env *env, char *err, size_t errlen)
{
    char **argv = argv_split(cmd);
    if (!argv) { snprintf(err, errlen, "--exec: empty command or unbalanced quote: %s", cmd); return NULL; }
    struct producer_opts po = { .kind = PRODUCER_EXEC, .argv = argv };
    return spooled_open(&src_exec, cmd, &po, env, err, errlen);
}

static struct source *stdin_open(const char *arg, const struct source_env *env, char *err, size_t errlen)
{
    struct producer_opts po = { .kind = PRODUCER_STDIN };
    return spooled_open(&src_stdin, "-", &po, env, err, errlen);
}

static struct source *kmsg_open(const char *path, const struct source_env *env, char *err, size_t errlen)
{
    struct producer_opts po = { .kind = PRODUCER_KMSG, .kmsg_path = path && *path ? path : "/dev/kmsg" };
    return spooled_open(&src_kmsg, "kmsg", &po, env, err, errlen);
}

/* Keeps the spool figures of the common part current. */
static void spool_figures(struct src_spooled *sc)
{
    sc->base.spool_bytes = spool_bytes(sc->sp);
    sc->base.spool_backlog = spool_backlog(sc->sp);
    sc->base.failed = producer_failed(sc->prod);
}

static int spooled_next(struct source *s, int timeout_ms, struct src_rec *r)
{
    struct rline l;
    int st = spool_next(SPOOLED(s)->sp, &l);
    if (st == RL_LINE || st == RL_TOOLONG) return source_rec(r, &l, st, 0);
    if (st == RL_IOERR) log_error("msg=\"read error\" source=\"%s\" error=\"%s\"", s->name, strerror(errno));
    spool_figures(SPOOLED(s));
    return SRC_AGAIN;
}

static int spooled_pollfd(struct source *s) { return producer_fd(SPOOLED(s)->prod); }

/* Reads what the input has into the spool, supervises a command. */
static void spooled_pump(struct source *s, int readable, int keeping_up)
{
    struct src_spooled *sc = SPOOLED(s);
    if (readable) producer_read(sc->prod);
    spool_flush(sc->sp);
    producer_supervise(sc->prod, keeping_up);
    spool_figures(sc);
}

/* Saves the spool offset (and for kmsg the next sequence number, which may
 * only be recorded once its lines are on disk); frees spooled segments
 * that lie before it. */
static int spooled_checkpoint(struct source *s, uint32_t lane, int64_t committed, int changed)
{
    struct src_spooled *sc = SPOOLED(s);
    spool_flush(sc->sp);
    spool_sync(sc->sp);
    struct ckpt ck;
    memset(&ck, 0, sizeof ck);
    if (s->ops == &src_kmsg) {
        char boot_id[40];
        uint64_t seq = producer_kmsg_seq(sc->prod, boot_id);
        if (!changed && seq == 0) return GL_DONE;
        spool_flush(sc->sp);
        spool_sync(sc->sp);
        ck.kmsg_seq = seq;
        memcpy(ck.boot_id, boot_id, sizeof ck.boot_id);
    } else if (!changed) {
        return GL_DONE;
    }
    int rc = source_ckpt_save(s, &ck, committed);
    if (rc == GL_OK) spool_release(sc->sp, committed);
    spool_figures(sc);
    return rc;
}

static void spooled_parsed(struct source *s, int64_t ms) { producer_useful(SPOOLED(s)->prod, ms); }

/* Ended: no more input will come and the spool is read to its end. */
static int spooled_ended(struct source *s)
{
    struct src_spooled *sc = SPOOLED(s);
    return producer_done(sc->prod) && spool_backlog(sc->sp) <= 0;
}

static void spooled_stop(struct source *s)
{
    producer_stop(SPOOLED(s)->prod);
    spool_figures(SPOOLED(s));
}

#define SPOOLED_OPS(kind, fmt, open_fn) { \
    .name = kind, .format = fmt, .open = open_fn, .next = spooled_next, .checkpoint = spooled_checkpoint, \
    .ended = spooled_ended, .close = spooled_close, .pollfd = spooled_pollfd, .pump = spooled_pump, \
    .parsed = spooled_parsed, .stop = spooled_stop }

const struct source_ops src_exec = SPOOLED_OPS("exec", NULL, exec_open);
const struct source_ops src_stdin = SPOOLED_OPS("stdin", NULL, stdin_open);
const struct source_ops src_kmsg = SPOOLED_OPS("kmsg", "kmsg", kmsg_open);
