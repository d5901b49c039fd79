/* log.c - logfmt/JSON log lines with repeat folding (see common.h). */
#include "common.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- logging */

enum gl_level gl_log_level = GL_LOG_INFO;
int gl_log_json = 0;

static const char *level_name[] = { "debug", "info", "warn", "error" };

/* Converts a logfmt body (k=v k="quoted v" ...) into JSON members appended
 * to b (each preceded by a comma). Values that look numeric stay numbers. */
static void logfmt_to_json(struct buf *b, const char *s)
{
    while (*s) {
        while (*s == ' ') s++;
        const char *k = s;
        while (*s && *s != '=' && *s != ' ') s++;
        size_t kl = (size_t)(s - k);
        if (!kl) { if (*s) s++; continue; }
        struct buf v;
        buf_init(&v);
        int quoted = 0;
        if (*s == '=') {
            s++;
            if (*s == '"') {
                quoted = 1;
                s++;
                while (*s && *s != '"') {
                    if (*s == '\\' && s[1]) s++;
                    buf_putc(&v, *s++);
                }
                if (*s == '"') s++;
            } else {
                while (*s && *s != ' ') buf_putc(&v, *s++);
            }
        }
        buf_putc(b, ',');
        buf_put_json_str(b, k, kl);
        buf_putc(b, ':');
        double d;
        if (!quoted && v.len && gl_parse_double(v.p, v.len, &d)) buf_append(b, v.p, v.len);
        else buf_put_json_str(b, v.p ? v.p : "", v.len);
        buf_free(&v);
    }
}

/* Appends s as a logfmt quoted value: quotes, backslashes and control
 * characters escaped so one message stays one line. */
static void logfmt_quote(struct buf *b, const char *s)
{
    buf_putc(b, '"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') { buf_putc(b, '\\'); buf_putc(b, (char)c); }
        else if (c == '\n') buf_append(b, "\\n", 2);
        else if (c < 0x20) buf_printf(b, "\\x%02x", c);
        else buf_putc(b, (char)c);
    }
    buf_putc(b, '"');
}

/* Callers either pass plain text (becomes msg="...") or a logfmt body that
 * starts with msg= (key=value pairs kept as fields). */
void gl_log(enum gl_level lvl, const char *fmt, ...)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static uint64_t last_hash;
    static time_t last_sec;
    static unsigned long suppressed;
    if (lvl < gl_log_level) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int is_logfmt = !strncmp(msg, "msg=", 4);
    uint64_t h = hash64(msg, strlen(msg), lvl);
    time_t now = time(NULL);
    pthread_mutex_lock(&mu);
    if (h == last_hash && now == last_sec) {
        suppressed++;
        pthread_mutex_unlock(&mu);
        return;
    }
    char ts[25];
    gl_fmt_ts(gl_now_ms(), ts);
    struct buf b;
    buf_init(&b);
    if (suppressed) {
        if (gl_log_json)
            buf_printf(&b, "{\"ts\":\"%s\",\"level\":\"info\",\"msg\":\"previous message repeated\",\"count\":%lu}\n", ts, suppressed);
        else
            buf_printf(&b, "ts=%s level=info msg=\"previous message repeated\" count=%lu\n", ts, suppressed);
        suppressed = 0;
    }
    last_hash = h;
    last_sec = now;
    if (gl_log_json) {
        buf_printf(&b, "{\"ts\":\"%s\",\"level\":\"%s\"", ts, level_name[lvl]);
        if (is_logfmt) logfmt_to_json(&b, msg);
        else { buf_append(&b, ",\"msg\":", 7); buf_put_json_str(&b, msg, strlen(msg)); }
        buf_append(&b, "}\n", 2);
    } else {
        buf_printf(&b, "ts=%s level=%s ", ts, level_name[lvl]);
        if (is_logfmt) buf_puts(&b, msg);
        else { buf_append(&b, "msg=", 4); logfmt_quote(&b, msg); }
        buf_putc(&b, '\n');
    }
    fputs(b.p, stderr);
    buf_free(&b);
    pthread_mutex_unlock(&mu);
}
