/* buf.c - allocation that aborts on failure, growable buffers and JSON string escaping (see common.h). */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

/* ---------------------------------------------------------------- memory */

static void oom(size_t n)
{
    fprintf(stderr, "gpulog: out of memory allocating %zu bytes\n", n);
    abort();
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) oom(n);
    return p;
}

void *xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz ? sz : 1);
    if (!p) oom(n * sz);
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) oom(n);
    return q;
}

char *xstrdup(const char *s)
{
    return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

/* ---------------------------------------------------------------- buffers */

void buf_init(struct buf *b)
{
    b->p = NULL;
    b->len = b->cap = 0;
}

void buf_free(struct buf *b)
{
    free(b->p);
    buf_init(b);
}

void buf_reset(struct buf *b)
{
    b->len = 0;
    if (b->p) b->p[0] = '\0';
}

void buf_grow(struct buf *b, size_t extra)
{
    size_t need = b->len + extra + 1;
    if (need <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need) cap *= 2;
    b->p = xrealloc(b->p, cap);
    b->cap = cap;
}

void buf_append(struct buf *b, const void *data, size_t n)
{
    buf_grow(b, n);
    memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void buf_puts(struct buf *b, const char *s)
{
    buf_append(b, s, strlen(s));
}

void buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char tmp[256];
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) { va_end(ap2); return; }
    if ((size_t)n < sizeof tmp) {
        buf_append(b, tmp, (size_t)n);
    } else {
        buf_grow(b, (size_t)n);
        vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap2);
        b->len += (size_t)n;
    }
    va_end(ap2);
}

void buf_put_i64(struct buf *b, int64_t v)
{
    char tmp[24];
    char *e = tmp + sizeof tmp, *q = e;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do { *--q = (char)('0' + u % 10); u /= 10; } while (u);
    if (v < 0) *--q = '-';
    buf_append(b, q, (size_t)(e - q));
}

void buf_put_double(struct buf *b, double v)
{
    if (!isfinite(v)) { buf_append(b, "null", 4); return; }
    if (fabs(v) < 1e15 && v == (double)(int64_t)v) {   /* range first: the cast is UB beyond int64 */
        buf_put_i64(b, (int64_t)v);
        return;
    }
    char tmp[40];
    int n = snprintf(tmp, sizeof tmp, "%.15g", v);
    if (strtod(tmp, NULL) != v) n = snprintf(tmp, sizeof tmp, "%.17g", v);
    buf_append(b, tmp, (size_t)n);
}

/* Length of the valid UTF-8 sequence starting at s (1..4), or 0 if invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        return (n >= 2 && (s[1] & 0xC0) == 0x80) ? 2 : 0;
    }
    if (c >= 0xE0 && c <= 0xEF) {
        if (n < 3 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80) return 0;
        if (c == 0xE0 && s[1] < 0xA0) return 0;          /* overlong */
        if (c == 0xED && s[1] >= 0xA0) return 0;         /* surrogates */
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (n < 4 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 ||
            (s[3] & 0xC0) != 0x80) return 0;
        if (c == 0xF0 && s[1] < 0x90) return 0;
        if (c == 0xF4 && s[1] >= 0x90) return 0;
        return 4;
    }
    return 0;
}

void buf_put_json_str(struct buf *b, const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    buf_grow(b, n + 2);
    b->p[b->len++] = '"';
    size_t i = 0, run = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') { i++; continue; }
        if (i > run) buf_append(b, s + run, i - run);
        if (c >= 0x80) {
            size_t k = utf8_seq(s + i, n - i);
            if (k) { buf_append(b, s + i, k); i += k; }
            else { buf_append(b, "\xEF\xBF\xBD", 3); i++; }
        } else if (c == '"') { buf_append(b, "\\\"", 2); i++; }
        else if (c == '\\') { buf_append(b, "\\\\", 2); i++; }
        else if (c == '\n') { buf_append(b, "\\n", 2); i++; }
        else if (c == '\t') { buf_append(b, "\\t", 2); i++; }
        else if (c == '\r') { buf_append(b, "\\r", 2); i++; }
        else if (c == 0) { buf_append(b, "\xEF\xBF\xBD", 3); i++; }
        else { buf_printf(b, "\\u%04x", c); i++; }
        run = i;
    }
    if (n > run) buf_append(b, s + run, n - run);
    buf_putc(b, '"');
}

/* The escape of one byte as \xNN. */
static void put_hex_escape(struct buf *b, unsigned char c)
{
    static const char hx[] = "0123456789abcdef";
    char e[4] = { '\\', 'x', hx[c >> 4], hx[c & 15] };
    buf_append(b, e, 4);
}

void buf_put_printable(struct buf *b, const char *str, size_t n, int quote)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0, run = 0;
    buf_grow(b, n);
    while (i < n) {
        unsigned char c = s[i];
        if (c >= 0x20 && c < 0x7f && !(quote && (c == '"' || c == '\\'))) { i++; continue; }
        size_t k = c >= 0x80 ? utf8_seq(s + i, n - i) : 0;
        if (k && !(k == 2 && c == 0xC2 && s[i + 1] < 0xA0)) { i += k; continue; }   /* printable UTF-8 */
        if (i > run) buf_append(b, s + run, i - run);
        if (c == '\n') buf_append(b, "\\n", 2);
        else if (quote && (c == '"' || c == '\\')) { buf_putc(b, '\\'); buf_putc(b, (char)c); }
        else if (k == 2) { put_hex_escape(b, c); put_hex_escape(b, s[i + 1]); i++; }   /* a C1 control */
        else put_hex_escape(b, c);
        i++;
        run = i;
    }
    if (n > run) buf_append(b, s + run, n - run);
}

void gl_printable(char *out, size_t cap, const char *s, size_t n)
{
    if (!cap) return;
    struct buf b, u;
    buf_init(&b);
    buf_init(&u);
    /* one input character (or byte) at a time: an escape or a UTF-8
     * sequence is never cut */
    for (size_t i = 0; i < n;) {
        size_t k = (unsigned char)s[i] >= 0x80 ? utf8_seq((const unsigned char *)s + i, n - i) : 1;
        if (!k) k = 1;
        buf_reset(&u);
        buf_put_printable(&u, s + i, k, 0);
        if (b.len + u.len > cap - 1) break;
        buf_append(&b, u.p, u.len);
        i += k;
    }
    memcpy(out, b.p ? b.p : "", b.len);
    out[b.len] = '\0';
    buf_free(&b);
    buf_free(&u);
}
