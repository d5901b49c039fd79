/*
 * producer.c - sources whose lines cannot be read again: a supervised
 * command (--exec: restarts with backoff, staleness kills), standard input,
 * and the kernel log (/dev/kmsg records as dmesg-style lines). Every line
 * goes into the source's spool before anything parses it (see source.h).
 */
#include "source.h"
#include "../core/lineread.h"
#include "../core/metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct producer {
    enum producer_kind kind;
    char *name;
    struct spool *sp;             /* borrowed */
    struct producer_hooks h;
    size_t max_line;
    int once;
    int in_fd;                    /* pipe, stdin or /dev/kmsg; -1 = none */
    struct lineread lr;           /* exec and stdin */
    int lr_open;
    int done;                     /* no more input will come */
    int failed;                   /* --once: the command failed to start or failed */
    /* exec */
    char **argv;
    pid_t pid;
    int64_t started_ms, last_useful_ms, restart_at_ms, term_sent_ms, stale_ms;
    int backoff_ms, exits;
    /* kmsg */
    struct buf kcarry;            /* partial record */
    uint64_t kmsg_next_seq;
    char boot_id[40];
    int64_t boot_ms;
};

static void read_boot_id(char out[40])
{
    out[0] = '\0';
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
    if (!f) return;
    if (fgets(out, 40, f)) out[strcspn(out, "\n")] = '\0';
    fclose(f);
}

struct producer *producer_new(const struct producer_opts *o, struct spool *sp, const struct producer_hooks *h,
                              char *err, size_t errlen)
{
    struct producer *p = xcalloc(1, sizeof *p);
    p->kind = o->kind;
    p->name = xstrdup(o->name);
    p->sp = sp;
    if (h) p->h = *h;
    p->max_line = o->max_line;
    p->once = o->once;
    p->in_fd = -1;
    buf_init(&p->kcarry);
    switch (o->kind) {
    case PRODUCER_EXEC: {
        p->argv = o->argv;
        int64_t period = argv_period_ms(o->argv);
        p->stale_ms = o->stale_ms ? o->stale_ms : (3 * period > 10000 ? 3 * period : 10000);
        p->backoff_ms = 1000;
        break;
    }
    case PRODUCER_STDIN:
        p->in_fd = 0;
        fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
        lineread_init(&p->lr, 0, p->max_line);
        p->lr_open = 1;
        break;
    case PRODUCER_KMSG: {
        p->in_fd = open(o->kmsg_path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        if (p->in_fd < 0) {
            snprintf(err, errlen, "%s: %s", o->kmsg_path, strerror(errno));
            producer_free(p);
            return NULL;
        }
        read_boot_id(p->boot_id);
        p->boot_ms = kmsg_boot_ms();
        /* GPULOG_BOOT_TIME (ISO 8601) pins the boot time, for reproducible tests */
        const char *bt = getenv("GPULOG_BOOT_TIME");
        int64_t btm;
        if (bt && *bt && gl_parse_iso_ts(bt, strlen(bt), &btm) == GL_OK) p->boot_ms = btm;
        if (o->kmsg_seq && o->kmsg_boot_id && !strcmp(o->kmsg_boot_id, p->boot_id)) p->kmsg_next_seq = o->kmsg_seq;
        break;
    }
    }
    return p;
}

void producer_free(struct producer *p)
{
    if (!p) return;
    if (p->pid > 0) { kill(-p->pid, SIGKILL); waitpid(p->pid, NULL, 0); }
    if (p->in_fd > 0) close(p->in_fd);
    if (p->lr_open) lineread_free(&p->lr);
    argv_free(p->argv);
    buf_free(&p->kcarry);
    free(p->name);
    free(p);
}

int producer_fd(const struct producer *p) { return p->in_fd; }
int producer_failed(const struct producer *p) { return p->failed; }
int producer_done(const struct producer *p) { return p->done && p->pid <= 0 && p->in_fd < 0; }

void producer_useful(struct producer *p, int64_t ms)
{
    if (ms > p->last_useful_ms) p->last_useful_ms = ms;
}

uint64_t producer_kmsg_seq(const struct producer *p, char boot_id[40])
{
    memcpy(boot_id, p->boot_id, 40);
    return p->kmsg_next_seq;
}

static void close_input(struct producer *p)
{
    if (p->in_fd > 0) close(p->in_fd);
    p->in_fd = -1;
}

/* /dev/kmsg returns one record per read; a file of records (tests, saved
 * rings) returns many: split lines, skip " KEY=value" lines. */
static void kmsg_read(struct producer *p, int64_t now)
{
    char rec[8192];
    struct buf line;
    buf_init(&line);
    for (int k = 0; k < 4096; k++) {
        ssize_t n = read(p->in_fd, rec, sizeof rec);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EPIPE) { log_warn("msg=\"kernel messages were overwritten before they were read\""); continue; }
            if (errno != EAGAIN) log_error("msg=\"kmsg read error\" error=\"%s\"", strerror(errno));
            if (p->once) { p->done = 1; close_input(p); }
            break;
        }
        if (n == 0) {
            p->done = 1;
            close_input(p);
            buf_putc(&p->kcarry, '\n');
        } else {
            buf_append(&p->kcarry, rec, (size_t)n);
        }
        size_t pos = 0;
        for (;;) {
            char *nl = memchr(p->kcarry.p + pos, '\n', p->kcarry.len - pos);
            if (!nl) break;
            const char *r = p->kcarry.p + pos;
            size_t rl = (size_t)(nl - r);
            pos += rl + 1;
            uint64_t seq;
            if (!rl || r[0] == ' ' || !kmsg_record_to_line(r, rl, p->boot_ms, &line, &seq)) continue;
            if (seq < p->kmsg_next_seq) continue;   /* spooled before a restart */
            p->kmsg_next_seq = seq + 1;
            spool_append(p->sp, now, line.p, line.len);
        }
        memmove(p->kcarry.p, p->kcarry.p + pos, p->kcarry.len - pos);
        p->kcarry.len -= pos;
        if (p->kcarry.len > (1 << 20)) p->kcarry.len = 0;   /* not a record stream */
        if (p->in_fd < 0) break;
    }
    buf_free(&line);
}

void producer_read(struct producer *p)
{
    int64_t now = gl_now_ms();
    if (p->in_fd < 0) return;
    if (p->kind == PRODUCER_KMSG) { kmsg_read(p, now); return; }
    for (int k = 0; k < 65536; k++) {
        const char *line;
        size_t len;
        int64_t off;
        enum lr_status st = lineread_next(&p->lr, &line, &len, &off);
        if (st == LR_AGAIN) break;
        if (st == LR_EOF || st == LR_IOERR) {
            if (st == LR_IOERR) log_error("msg=\"read error\" source=\"%s\" error=\"%s\"", p->name, strerror(p->lr.err));
            close_input(p);
            if (p->kind == PRODUCER_STDIN) p->done = 1;
            break;
        }
        if (st == LR_TOOLONG) {
            if (p->h.too_long) p->h.too_long(p->h.ctx, off);
            continue;
        }
        spool_append(p->sp, now, line, len);
    }
}

static void health(struct producer *p, const char *action, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void health(struct producer *p, const char *action, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (p->h.health) p->h.health(p->h.ctx, action, msg);
    else log_warn("msg=\"%s\" action=%s source=\"%s\"", msg, action, p->name);
}

static void exec_start(struct producer *p)
{
    char err[GL_ERRLEN];
    int fd;
    int64_t now = gl_now_ms();
    pid_t pid = exec_spawn(p->argv, &fd, err, sizeof err);
    if (pid < 0) {
        log_error("msg=\"cannot start the command\" source=\"%s\" error=\"%s\" retry_in_ms=%d", p->name, err, p->backoff_ms);
        if (p->once) { p->done = 1; p->failed = 1; return; }
        p->restart_at_ms = now + p->backoff_ms;
        p->backoff_ms = p->backoff_ms * 2 > 30000 ? 30000 : p->backoff_ms * 2;
        return;
    }
    p->pid = pid;
    p->in_fd = fd;
    if (p->lr_open) lineread_free(&p->lr);
    lineread_init(&p->lr, fd, p->max_line);
    p->lr_open = 1;
    p->started_ms = now;
    p->term_sent_ms = 0;
    if (p->exits) health(p, "source-restarted", "restarted '%s' (restart %d)", p->name, p->exits);
    else log_info("msg=\"started\" source=\"%s\" pid=%d stale_after_ms=%" PRId64, p->name, (int)pid, p->stale_ms);
}

void producer_supervise(struct producer *p, int keeping_up)
{
    if (p->kind != PRODUCER_EXEC) return;
    int64_t now = gl_now_ms();
    if (p->pid > 0) {
        int st;
        pid_t w = waitpid(p->pid, &st, WNOHANG);
        if (w == p->pid) {
            if (p->in_fd >= 0) {
                /* a dead child's pipe may still hold lines, or a grandchild
                 * may keep it open: take what is there and close it */
                producer_read(p);
                close_input(p);
            }
            p->pid = 0;
            p->exits++;
            char how[64];
            if (WIFEXITED(st)) snprintf(how, sizeof how, "exit status %d", WEXITSTATUS(st));
            else snprintf(how, sizeof how, "signal %d", WTERMSIG(st));
            if (p->once) {
                int failed = !WIFEXITED(st) || WEXITSTATUS(st) != 0;
                if (failed) p->failed = 1;
                gl_log(failed ? GL_LOG_ERROR : GL_LOG_INFO, "msg=\"command finished\" source=\"%s\" how=\"%s\"", p->name, how);
                p->done = 1;
                return;
            }
            if (now - p->started_ms > 60000) p->backoff_ms = 1000;
            metrics_inc(M_CHILD_RESTARTS);
            log_warn("msg=\"command ended: restarting\" source=\"%s\" how=\"%s\" in_ms=%d", p->name, how, p->backoff_ms);
            p->restart_at_ms = now + p->backoff_ms;
            p->backoff_ms = p->backoff_ms * 2 > 30000 ? 30000 : p->backoff_ms * 2;
            return;
        }
        if (p->term_sent_ms) {
            if (now - p->term_sent_ms > 2000) kill(-p->pid, SIGKILL);
            return;
        }
        /* stale: no parsable line for stale_ms while we were keeping up */
        int64_t ref = p->last_useful_ms > p->started_ms ? p->last_useful_ms : p->started_ms;
        if (keeping_up && spool_backlog(p->sp) == 0 && now - ref > p->stale_ms) {
            health(p, "source-stale", "no usable output from '%s' for %" PRId64 " s: killing and restarting it",
                   p->name, (now - ref) / 1000);
            kill(-p->pid, SIGTERM);
            p->term_sent_ms = now;
        }
        return;
    }
    if (!p->done && now >= p->restart_at_ms) exec_start(p);
}

void producer_stop(struct producer *p)
{
    if (p->pid <= 0) return;
    kill(-p->pid, SIGTERM);
    int64_t t0 = gl_now_ms();
    while (waitpid(p->pid, NULL, WNOHANG) == 0 && gl_now_ms() - t0 < 2000) usleep(20000);
    if (waitpid(p->pid, NULL, WNOHANG) == 0) { kill(-p->pid, SIGKILL); waitpid(p->pid, NULL, 0); }
    p->pid = 0;
}
