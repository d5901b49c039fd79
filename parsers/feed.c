/* feed.c - see feed.h. */
#include "feed.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void feed_report(const char *name, uint64_t lineno, const char *reason)
{
    fprintf(stderr, "%s:%llu: %s\n", name, (unsigned long long)lineno, reason);
}

/* GPULOG_READ_TIME (ISO 8601) pins the read time, for reproducible output
 * of inputs without timestamps (golden tests, replays). */
static int64_t read_time_override(void)
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

int feed_fd(struct parser *p, int fd, const struct feed_opts *o, struct feed_stats *st)
{
    int64_t fixed_now = read_time_override();
    struct lineread lr;
    lineread_init(&lr, fd, o->max_line);
    struct line_src src = {
        .host = o->host, .path = o->path, .source = o->source ? o->source : "-",
        .keep_original = o->keep_original,
    };
    uint64_t reported = 0;
    int rc = GL_OK;
    for (;;) {
        const char *line;
        size_t len;
        int64_t off;
        uint64_t ev_before = p->stats.events;
        enum lr_status s = lineread_next(&lr, &line, &len, &off);
        if (s == LR_EOF) break;
        if (s == LR_IOERR) {
            fprintf(stderr, "%s: read error: %s\n", o->name, strerror(lr.err));
            rc = GL_ERROR;
            break;
        }
        if (s == LR_AGAIN) continue;   /* only for non-blocking fds: not used here */
        st->lines++;
        if (s == LR_TOOLONG) {
            st->toolong++;
            st->rejected++;
            if (!o->quiet && (!o->max_reports || reported++ < o->max_reports)) {
                char why[128];
                snprintf(why, sizeof why, "line longer than %zu bytes, skipped", lr.max_line);
                feed_report(o->name, lr.lineno, why);
            }
            continue;
        }
        src.offset = off;
        src.lineno = lr.lineno;
        src.now_ms = fixed_now ? fixed_now : gl_now_ms();
        int r = parser_feed(p, &src, line, len);
        if (r == GL_ERROR) {
            st->rejected++;
            if (!o->quiet && (!o->max_reports || reported++ < o->max_reports))
                feed_report(o->name, lr.lineno, p->err);
        } else if (r == GL_DECLINED) {
            st->declined++;
        }
        st->events += p->stats.events - ev_before;
    }
    uint64_t ev_before = p->stats.events;
    parser_flush(p);
    st->events += p->stats.events - ev_before;
    lineread_free(&lr);
    return rc;
}

const char *feed_reject_reason(const char *err)
{
    if (!err) return "other";
    if (!strncmp(err, "expected ", 9) || strstr(err, " row has ") || strstr(err, " fields")) return "field_count";
    if (strstr(err, ": not a ") || strstr(err, "want Active")) return "not_a_number";
    if (strstr(err, "header")) return "no_header";
    if (strstr(err, "time") || strstr(err, "date")) return "bad_time";
    if (strstr(err, "unit")) return "bad_unit";
    if (strstr(err, "tool reported")) return "tool_error";
    return "other";
}
