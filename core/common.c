/* common.c - see common.h. */
#include "common.h"

#include <errno.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

/* ---------------------------------------------------------------- hashing */

static inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static inline uint64_t fmix64(uint64_t k)
{
    k ^= k >> 33; k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33; k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return k;
}

void hash128_init(struct hash128 *h)
{
    h->a = 0x9E3779B97F4A7C15ULL;
    h->b = 0xC2B2AE3D27D4EB4FULL;
}

static inline void hash128_word(struct hash128 *h, uint64_t k)
{
    h->a ^= rotl64(k * 0x87c37b91114253d5ULL, 31) * 0x4cf5ad432745937fULL;
    h->a = rotl64(h->a, 27) + h->b;
    h->a = h->a * 5 + 0x52dce729;
    h->b ^= rotl64(k * 0x4cf5ad432745937fULL, 33) * 0x87c37b91114253d5ULL;
    h->b = rotl64(h->b, 31) + h->a;
    h->b = h->b * 5 + 0x38495ab5;
}

void hash128_feed(struct hash128 *h, const void *data, size_t n)
{
    const unsigned char *p = data;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t k;
        memcpy(&k, p + i, 8);
        hash128_word(h, k);
    }
    uint64_t k = 0;
    for (size_t j = 0; i + j < n; j++) k |= (uint64_t)p[i + j] << (8 * j);
    hash128_word(h, k ^ ((uint64_t)n << 56) ^ 0xA5);
}

void hash128_feed_u64(struct hash128 *h, uint64_t v)
{
    hash128_word(h, v);
}

void hash128_hex(const struct hash128 *h, char out[33])
{
    static const char hx[] = "0123456789abcdef";
    uint64_t a = fmix64(h->a + h->b), b = fmix64(h->b + 2 * h->a);
    for (int i = 0; i < 16; i++) {
        out[i] = hx[(a >> (60 - 4 * i)) & 15];
        out[16 + i] = hx[(b >> (60 - 4 * i)) & 15];
    }
    out[32] = '\0';
}

uint64_t hash64(const void *data, size_t n, uint64_t seed)
{
    struct hash128 h;
    hash128_init(&h);
    hash128_word(&h, seed);
    hash128_feed(&h, data, n);
    return fmix64(h.a ^ h.b);
}

/* ---------------------------------------------------------------- time */

int64_t gl_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int tz_is_utc = 0;
static int64_t tz_cache_hour = INT64_MIN;
static int64_t tz_cache_off;

int gl_tz_set(const char *zone)
{
    tz_cache_hour = INT64_MIN;
    if (!zone || !*zone) {
        tz_is_utc = 0;
        tzset();
        return GL_OK;
    }
    if (!strcmp(zone, "UTC") || !strcmp(zone, "Z") || !strcmp(zone, "GMT") ||
        !strcmp(zone, "Etc/UTC") || !strcmp(zone, "UTC0")) {
        tz_is_utc = 1;
        setenv("TZ", "UTC0", 1);   /* localtime_r users (dmon -o T read day) agree */
        tzset();
        return GL_OK;
    }
    char path[512];
    snprintf(path, sizeof path, "/usr/share/zoneinfo/%s", zone);
    if (zone[0] != '/' && strstr(zone, "..") == NULL && access(path, R_OK) == 0) {
        /* ok: an Olson name */
    } else if (zone[0] == '/' && access(zone, R_OK) == 0) {
        /* ok: a zoneinfo file */
    } else {
        return GL_ERROR;
    }
    setenv("TZ", zone, 1);
    tzset();
    tz_is_utc = 0;
    return GL_OK;
}

int64_t gl_days_from_civil(int y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t yy = yoe + era * 400;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = (int)(yy + (*m <= 2));
}

int gl_local_to_epoch_ms(int year, int mon, int day, int hour, int min, int sec,
                         int msec, int64_t *out)
{
    static const int mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    if (year < 1970 || year > 9999 || mon < 1 || mon > 12 || day < 1 ||
        day > mdays[mon - 1] || hour < 0 || hour > 23 || min < 0 || min > 59 ||
        sec < 0 || sec > 60 || msec < 0 || msec > 999)
        return GL_ERROR;
    if (mon == 2 && day == 29 && !((year % 4 == 0 && year % 100 != 0) || year % 400 == 0))
        return GL_ERROR;
    int64_t local = gl_days_from_civil(year, mon, day) * 86400 + hour * 3600 + min * 60 + sec;
    if (tz_is_utc) { *out = local * 1000 + msec; return GL_OK; }
    int64_t bucket = local / 3600;
    if (bucket != tz_cache_hour) {
        struct tm tm;
        memset(&tm, 0, sizeof tm);
        tm.tm_year = year - 1900;
        tm.tm_mon = mon - 1;
        tm.tm_mday = day;
        tm.tm_hour = hour;
        tm.tm_isdst = -1;
        time_t t = mktime(&tm);
        if (t == (time_t)-1 && errno) return GL_ERROR;
        tz_cache_off = (local - min * 60 - sec) - (int64_t)t;
        tz_cache_hour = bucket;
    }
    *out = (local - tz_cache_off) * 1000 + msec;
    return GL_OK;
}

int gl_time_of_day_near(int hour, int min, int sec, int64_t now_ms, int64_t *out)
{
    int found = 0;
    int64_t best = 0, bd = 0;
    for (int k = -1; k <= 1; k++) {
        time_t t = (time_t)(now_ms / 1000 + k * 86400);
        struct tm tm;
        gmtime_r(&t, &tm);
        int64_t v;
        if (gl_local_to_epoch_ms(tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, hour, min, sec, 0, &v) != GL_OK)
            continue;
        int64_t d = v > now_ms ? v - now_ms : now_ms - v;
        if (!found || d < bd) { best = v; bd = d; found = 1; }
    }
    if (found) *out = best;
    return found ? GL_OK : GL_ERROR;
}

void gl_fmt_ts(int64_t ms, char out[25])
{
    /* two cached days: events alternate between sample time and read time */
    static _Thread_local int64_t cache_day[2] = { INT64_MIN, INT64_MIN };
    static _Thread_local char cache_date[2][10];
    static _Thread_local int cache_next;
    int64_t secs = ms >= 0 ? ms / 1000 : (ms - 999) / 1000;
    int msec = (int)(ms - secs * 1000);
    int64_t day = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400;
    int64_t sod = secs - day * 86400;
    int slot = cache_day[0] == day ? 0 : cache_day[1] == day ? 1 : -1;
    if (slot < 0) {
        int y, m, d;
        civil_from_days(day, &y, &m, &d);
        y = (y % 10000 + 10000) % 10000;
        slot = cache_next;
        cache_next ^= 1;
        char *c = cache_date[slot];
        c[0] = (char)('0' + y / 1000); c[1] = (char)('0' + y / 100 % 10);
        c[2] = (char)('0' + y / 10 % 10); c[3] = (char)('0' + y % 10); c[4] = '-';
        c[5] = (char)('0' + m / 10); c[6] = (char)('0' + m % 10); c[7] = '-';
        c[8] = (char)('0' + d / 10); c[9] = (char)('0' + d % 10);
        cache_day[slot] = day;
    }
    memcpy(out, cache_date[slot], 10);
    int h = (int)(sod / 3600), mi = (int)(sod / 60 % 60), s = (int)(sod % 60);
    out[10] = 'T';
    out[11] = (char)('0' + h / 10); out[12] = (char)('0' + h % 10); out[13] = ':';
    out[14] = (char)('0' + mi / 10); out[15] = (char)('0' + mi % 10); out[16] = ':';
    out[17] = (char)('0' + s / 10); out[18] = (char)('0' + s % 10); out[19] = '.';
    out[20] = (char)('0' + msec / 100); out[21] = (char)('0' + msec / 10 % 10);
    out[22] = (char)('0' + msec % 10); out[23] = 'Z'; out[24] = '\0';
}

static int digits(const char *s, size_t n, int *out)
{
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return 0;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 1;
}

int gl_parse_iso_ts(const char *s, size_t n, int64_t *out)
{
    int y, mo, d, h, mi, se, ms = 0;
    if (n < 19 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != ' ') ||
        s[13] != ':' || s[16] != ':')
        return GL_ERROR;
    if (!digits(s, 4, &y) || !digits(s + 5, 2, &mo) || !digits(s + 8, 2, &d) ||
        !digits(s + 11, 2, &h) || !digits(s + 14, 2, &mi) || !digits(s + 17, 2, &se))
        return GL_ERROR;
    size_t i = 19;
    if (i < n && (s[i] == '.' || s[i] == ',')) {
        i++;
        int nd = 0, frac = 0;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            if (nd < 3) frac = frac * 10 + (s[i] - '0');
            nd++; i++;
        }
        if (nd == 0) return GL_ERROR;
        while (nd < 3) { frac *= 10; nd++; }
        ms = frac;
    }
    int64_t off = 0;
    int have_zone = 0;
    if (i < n && (s[i] == 'Z' || s[i] == 'z')) { i++; have_zone = 1; }
    else if (i < n && (s[i] == '+' || s[i] == '-')) {
        int sign = s[i] == '-' ? -1 : 1, oh, om = 0;
        i++;
        if (i + 2 > n || !digits(s + i, 2, &oh)) return GL_ERROR;
        i += 2;
        if (i < n && s[i] == ':') i++;
        if (i + 2 <= n && digits(s + i, 2, &om)) i += 2;
        off = sign * (oh * 3600 + om * 60);
        have_zone = 1;
    }
    if (i != n) return GL_ERROR;
    if (!have_zone) return gl_local_to_epoch_ms(y, mo, d, h, mi, se, ms, out);
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60) return GL_ERROR;
    int64_t t = gl_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - off;
    *out = t * 1000 + ms;
    return GL_OK;
}

/* ---------------------------------------------------------------- numbers */

int gl_parse_i64(const char *s, size_t n, int64_t *out)
{
    size_t i = 0;
    int neg = 0;
    if (n == 0) return 0;
    if (s[0] == '-' || s[0] == '+') { neg = s[0] == '-'; i = 1; }
    if (i == n || n - i > 18) return 0;
    int64_t v = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return 0;
        v = v * 10 + (s[i] - '0');
    }
    *out = neg ? -v : v;
    return 1;
}

int gl_parse_double(const char *s, size_t n, double *out)
{
    char tmp[64];
    if (n == 0 || n >= sizeof tmp) return 0;
    /* only plain decimal notation: digits, one dot, optional sign/exponent */
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E'))
            return 0;
    }
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    char *end;
    errno = 0;
    double v = strtod(tmp, &end);
    if (end != tmp + n || errno == ERANGE || !isfinite(v)) return 0;
    *out = v;
    return 1;
}

int64_t gl_rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "re");
    if (!f) return -1;
    long size, res;
    int ok = fscanf(f, "%ld %ld", &size, &res) == 2;
    fclose(f);
    return ok ? (int64_t)res * sysconf(_SC_PAGESIZE) : -1;
}
