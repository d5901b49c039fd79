/* feed.c - see feed.h. */
#include "feed.h"
#include "../core/metrics.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where feed_fd is in its input: what its events say they come from, the
 * read time, the rejections printed so far. */
struct feed_cursor {
    struct line_src src;
    int64_t fixed_now;       /* GPULOG_READ_TIME, 0 = the clock */
    uint64_t reported;
};

/* Reports one rejected line on stderr as "name:line: reason". */
static void feed_report(const char *name, uint64_t lineno, const char *reason)
{
    gl_say(GL_LOG_WARN, "%s:%llu: %s\n", name, (unsigned long long)lineno, reason);
}

/* GPULOG_READ_TIME (ISO 8601) pins the read time, for reproducible output
 * of inputs without timestamps (golden tests, replays). */
int64_t feed_read_time(void)
{
    static int done;
    static int64_t v;
    if (!done) {
        const char *e = getenv("GPULOG_READ_TIME");
        if (e && *e && gl_parse_iso_ts(e, strlen(e), &v) != GL_OK) v = 0;
        done = 1;
    }
    return v;
}

/* Starts reading the input o describes (o is borrowed while c is used). */
static void feed_cursor_init(struct feed_cursor *c, const struct feed_opts *o)
{
    memset(c, 0, sizeof *c);
    c->src.host = o->host;
    c->src.path = o->path;
    c->src.source = o->source ? o->source : "-";
    c->src.keep_original = o->keep_original;
    c->fixed_now = feed_read_time();
}

/* One line lineread returned (s is LR_LINE or LR_TOOLONG; line is
 * borrowed): counts it into st, reports a rejection, feeds the parser. */
static void feed_line(struct parser *p, struct feed_cursor *c, const struct feed_opts *o, const struct lineread *lr,
                      enum lr_status s, const char *line, size_t len, int64_t off, struct feed_stats *st)
{
    int report = !o->quiet && (!o->max_reports || c->reported < o->max_reports);
    st->lines++;
    if (o->metrics) metrics_inc(M_LINES_READ);
    if (s == LR_TOOLONG) {
        st->toolong++;
        st->rejected++;
        if (o->metrics) metrics_inc_label(M_LINES_REJECTED, reject_reason_name(RJ_TOO_LONG));
        if (report) {
            char why[128];
            snprintf(why, sizeof why, "line longer than %zu bytes, skipped", lr->max_line);
            feed_report(o->name, lr->lineno, why);
            c->reported++;
        }
        return;
    }
    uint64_t ev_before = p->stats.events;
    c->src.offset = off;
    c->src.lineno = lr->lineno;
    c->src.now_ms = c->fixed_now ? c->fixed_now : gl_now_ms();
    int r = parser_feed(p, &c->src, line, len);
    if (r == GL_ERROR) {
        st->rejected++;
        if (o->metrics) metrics_inc_label(M_LINES_REJECTED, reject_reason_name((enum reject_reason)p->err_reason));
        if (report) {
            feed_report(o->name, lr->lineno, p->err);
            c->reported++;
        }
    } else if (r == GL_DECLINED) {
        st->declined++;
    }
    st->events += p->stats.events - ev_before;
}

/* End of input: flushes the parser, counting what it emits into st. */
static void feed_end(struct parser *p, struct feed_stats *st)
{
    uint64_t ev_before = p->stats.events;
    parser_flush(p);
    st->events += p->stats.events - ev_before;
}

int feed_fd(struct parser *p, int fd, const struct feed_opts *o, struct feed_stats *st)
{
    struct lineread lr;
    lineread_init(&lr, fd, o->max_line);
    struct feed_cursor c;
    feed_cursor_init(&c, o);
    int rc = GL_OK;
    for (;;) {
        const char *line;
        size_t len;
        int64_t off;
        enum lr_status s = lineread_next(&lr, &line, &len, &off);
        if (s == LR_EOF) break;
        if (s == LR_IOERR) {
            gl_say(GL_LOG_ERROR, "%s: read error: %s\n", o->name, strerror(lr.err));
            rc = GL_ERROR;
            break;
        }
        if (s == LR_AGAIN) continue;   /* only for non-blocking fds: not used here */
        feed_line(p, &c, o, &lr, s, line, len, off, st);
    }
    feed_end(p, st);
    lineread_free(&lr);
    return rc;
}

