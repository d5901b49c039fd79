/* log.c - logfmt/JSON log lines with repeat folding (see common.h). */
#include "common.h"

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- logging */

enum gl_level gl_log_level = GL_LOG_INFO;
int (*gl_interrupted)(void);   /* common.h */
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
                    if (*s == '\\' && s[1]) {
                        s++;
                        unsigned x;
                        if (*s == 'n') { buf_putc(&v, '\n'); s++; continue; }
                        if (*s == 'x' && sscanf(s + 1, "%2x", &x) == 1 && s[1] && s[2]) { buf_putc(&v, (char)x); s += 3; continue; }
                    }
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

/* Appends s as a logfmt quoted value: quotes, backslashes, control
 * characters and what is not printable UTF-8 escaped (buf_put_printable),
 * so one message stays one line and nothing reaches a terminal raw. */
static void logfmt_quote(struct buf *b, const char *s)
{
    buf_putc(b, '"');
    buf_put_printable(b, s, strlen(s), 1);
    buf_putc(b, '"');
}

/* Appends s escaped for a logfmt value: inside quotes (quoted) quotes,
 * backslashes and control characters are escaped; a bare value that needs
 * it (space, quote, control, empty) is quoted. */
static void logfmt_value(struct buf *b, const char *s, int quoted)
{
    int plain = quoted || *s;
    for (const char *p = s; *p && plain; p++)
        if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f || *p == '"' || *p == '\\' || *p == '=') plain = 0;
    if (quoted || !plain) {
        size_t at = b->len;
        logfmt_quote(b, s);
        if (quoted) {   /* drop the quotes logfmt_quote added: the format has them */
            memmove(b->p + at, b->p + at + 1, b->len - at - 2);
            b->len -= 2;
            b->p[b->len] = '\0';
        }
    } else {
        buf_puts(b, s);
    }
}

/* How logfmt_format writes a %s argument. */
enum fmt_mode {
    FMT_LOGFMT,               /* a logfmt value (logfmt_value): it can neither end its value nor add fields */
    FMT_PLAIN,                /* printable (buf_put_printable), no quotes: a command's report line */
    FMT_RAW,                  /* as it is (the caller JSON-encodes the whole) */
};

/* Formats a logfmt body (or, by mode, a plain line): every %s argument
 * (text that may come from outside: paths, server replies, librdkafka) is
 * escaped as mode says; the rest is vsnprintf's. */
static void logfmt_format(struct buf *b, const char *fmt, va_list ap, enum fmt_mode mode)
{
    while (*fmt) {
        if (*fmt != '%') { buf_putc(b, *fmt++); continue; }
        if (fmt[1] == '%') { buf_putc(b, '%'); fmt += 2; continue; }
        int quoted = b->len && b->p[b->len - 1] == '"';
        char spec[32];
        size_t n = 0;
        spec[n++] = *fmt++;
        int stars[2], nstar = 0;
        while (*fmt && strchr("-+ #0123456789.*", *fmt) && n < sizeof spec - 8) {
            if (*fmt == '*' && nstar < 2) stars[nstar++] = va_arg(ap, int);
            spec[n++] = *fmt++;
        }
        char len[3] = "";
        size_t ln = 0;
        while (*fmt && strchr("hljztL", *fmt) && ln < 2) { len[ln++] = *fmt; spec[n++] = *fmt++; }
        len[ln] = '\0';
        char conv = *fmt ? *fmt++ : 's';
        spec[n++] = conv;
        spec[n] = '\0';
        char tmp[512];
#define LOG_FMT1(v) (nstar == 2 ? snprintf(tmp, sizeof tmp, spec, stars[0], stars[1], v) : \
                     nstar == 1 ? snprintf(tmp, sizeof tmp, spec, stars[0], v) : snprintf(tmp, sizeof tmp, spec, v))
        switch (conv) {
        case 's': {
            const char *s = va_arg(ap, const char *);
            if (!s) s = "(null)";
            if (strchr(spec, '.')) { LOG_FMT1(s); s = tmp; }   /* a precision cuts it */
            if (mode == FMT_LOGFMT) logfmt_value(b, s, quoted);
            else if (mode == FMT_PLAIN) buf_put_printable(b, s, strlen(s), 0);
            else buf_puts(b, s);
            continue;
        }
        case 'd': case 'i':
            if (!strcmp(len, "ll")) LOG_FMT1(va_arg(ap, long long));
            else if (!strcmp(len, "l")) LOG_FMT1(va_arg(ap, long));
            else if (!strcmp(len, "j")) LOG_FMT1(va_arg(ap, intmax_t));
            else if (!strcmp(len, "z") || !strcmp(len, "t")) LOG_FMT1(va_arg(ap, ptrdiff_t));
            else LOG_FMT1(va_arg(ap, int));
            break;
        case 'u': case 'x': case 'X': case 'o':
            if (!strcmp(len, "ll")) LOG_FMT1(va_arg(ap, unsigned long long));
            else if (!strcmp(len, "l")) LOG_FMT1(va_arg(ap, unsigned long));
            else if (!strcmp(len, "j")) LOG_FMT1(va_arg(ap, uintmax_t));
            else if (!strcmp(len, "z") || !strcmp(len, "t")) LOG_FMT1(va_arg(ap, size_t));
            else LOG_FMT1(va_arg(ap, unsigned));
            break;
        case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': case 'a': case 'A':
            if (!strcmp(len, "L")) LOG_FMT1(va_arg(ap, long double));
            else LOG_FMT1(va_arg(ap, double));
            break;
        case 'c': LOG_FMT1(va_arg(ap, int)); break;
        case 'p': LOG_FMT1(va_arg(ap, void *)); break;
        default: snprintf(tmp, sizeof tmp, "%%%c", conv); break;   /* unknown: shown, no argument taken */
        }
#undef LOG_FMT1
        buf_puts(b, tmp);
    }
}

/* Callers either pass plain text (becomes msg="...") or a logfmt body that
 * starts with msg= (key=value pairs kept as fields). */
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;

void gl_log(enum gl_level lvl, const char *fmt, ...)
{
    static uint64_t last_hash;
    static time_t last_sec;
    static unsigned long suppressed;
    if (lvl < gl_log_level) return;
    char msg[2048];
    int is_logfmt = !strncmp(fmt, "msg=", 4);
    va_list ap;
    va_start(ap, fmt);
    if (is_logfmt) {
        struct buf f;
        buf_init(&f);
        logfmt_format(&f, fmt, ap, FMT_LOGFMT);
        snprintf(msg, sizeof msg, "%s", f.p ? f.p : "");
        buf_free(&f);
    } else {
        vsnprintf(msg, sizeof msg, fmt, ap);
    }
    va_end(ap);
    uint64_t h = hash64(msg, strlen(msg), lvl);
    time_t now = time(NULL);
    pthread_mutex_lock(&log_mu);
    if (h == last_hash && now == last_sec) {
        suppressed++;
        pthread_mutex_unlock(&log_mu);
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
    pthread_mutex_unlock(&log_mu);
}

void gl_say(enum gl_level lvl, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    struct buf m, b;
    buf_init(&m);
    buf_init(&b);
    logfmt_format(&m, fmt, ap, gl_log_json ? FMT_RAW : FMT_PLAIN);
    va_end(ap);
    while (m.len && m.p[m.len - 1] == '\n') m.p[--m.len] = '\0';
    if (gl_log_json) {
        char ts[25];
        gl_fmt_ts(gl_now_ms(), ts);
        buf_printf(&b, "{\"ts\":\"%s\",\"level\":\"%s\",\"msg\":", ts, level_name[lvl]);
        buf_put_json_str(&b, m.p ? m.p : "", m.len);
        buf_append(&b, "}\n", 2);
    } else {
        buf_append(&b, m.p ? m.p : "", m.len);
        buf_putc(&b, '\n');
    }
    pthread_mutex_lock(&log_mu);
    fputs(b.p, stderr);
    pthread_mutex_unlock(&log_mu);
    buf_free(&m);
    buf_free(&b);
}
