/*
 * kmsg_prefix.c - the prefixes in front of a kernel message (see kmsg.c):
 * dmesg boot-relative and -T times, --decode facility/level, ISO and
 * syslog times (the year of syslog times: kmsg_syslog_year), "host
 * kernel: " and /dev/kmsg records; kmsg_prefix_uptime for the collector.
 */
#include "kmsg_int.h"
#include "kmsg.h"
#include "columns.h"

#include <time.h>

static int is_lower(char c) { return c >= 'a' && c <= 'z'; }

static int month_num(const char *s)
{
    static const char names[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    for (int i = 0; i < 12; i++)
        if (!memcmp(s, names + 3 * i, 3)) return i + 1;
    return 0;
}

/* "HH:MM:SS" at s (8 bytes available). */
static int hms(const char *s, int *h, int *m, int *sec)
{
    return s[2] == ':' && s[5] == ':' && gl_parse_digits(s, 2, h) && gl_parse_digits(s + 3, 2, m) && gl_parse_digits(s + 6, 2, sec);
}

/* ------------------------------------------------------------ prefixes */

/* "kern  :warn  : " (dmesg --decode): returns the bytes to skip or 0. */
static size_t px_facility(const char *s, size_t n)
{
    size_t i = 0;
    if (i >= n || !is_lower(s[i])) return 0;
    while (i < n && is_lower(s[i])) i++;
    while (i < n && s[i] == ' ') i++;
    if (i >= n || s[i] != ':') return 0;
    i++;
    if (i >= n || !is_lower(s[i])) return 0;
    while (i < n && is_lower(s[i])) i++;
    while (i < n && s[i] == ' ') i++;
    if (i >= n || s[i] != ':') return 0;
    i++;
    if (i < n && s[i] != ' ') return 0;
    return i;
}

/* "[ 1843.308145]" -> seconds; returns the bytes or 0. */
static size_t px_uptime(const char *s, size_t n, double *up)
{
    size_t i = 1;
    if (n < 4 || s[0] != '[') return 0;
    while (i < n && s[i] == ' ') i++;
    size_t a = i;
    while (i < n && is_digit(s[i])) i++;
    if (i == a || i >= n || s[i] != '.') return 0;
    i++;
    size_t b = i;
    while (i < n && is_digit(s[i])) i++;
    if (i == b || i >= n || s[i] != ']') return 0;
    if (!gl_parse_double(s + a, i - a, up)) return 0;
    return i + 1;
}

/* "[Tue Mar  4 02:11:09 2025]" -> epoch ms in --tz; returns the bytes or 0. */
static size_t px_ctime(const char *s, size_t n, int64_t *ts)
{
    /* [Www Mmm dd HH:MM:SS YYYY] with dd space-padded or not */
    if (n < 25 || s[0] != '[' || s[4] != ' ' || s[8] != ' ') return 0;
    int mo = month_num(s + 5);
    if (!mo) return 0;
    size_t i = 9;
    while (i < n && s[i] == ' ') i++;
    size_t a = i;
    while (i < n && is_digit(s[i])) i++;
    int d;
    if (i - a < 1 || i - a > 2 || !gl_parse_digits(s + a, i - a, &d)) return 0;
    if (i + 15 > n || s[i] != ' ') return 0;
    i++;
    int h, mi, se, y;
    if (!hms(s + i, &h, &mi, &se) || s[i + 8] != ' ' || !gl_parse_digits(s + i + 9, 4, &y) || s[i + 13] != ']')
        return 0;
    if (gl_local_to_epoch_ms(y, mo, d, h, mi, se, 0, ts) != GL_OK) return 0;
    return i + 14;
}

/* ISO 8601 token "2025-01-25T10:34:54,859532+00:00" -> epoch ms. */
static size_t px_iso(const char *s, size_t n, int64_t *ts)
{
    if (n < 19 || !is_digit(s[0]) || s[4] != '-' || s[7] != '-' || s[10] != 'T') return 0;
    size_t i = 0;
    while (i < n && s[i] != ' ') i++;
    if (gl_parse_iso_ts(s, i, ts) != GL_OK) return 0;
    return i;
}

/* Picks the year for a syslog time (which has none): the read time's year,
 * the one after or the one before, whichever is latest without being more
 * than a day after the read time. */
static int pinned_year;       /* kmsg_syslog_year: 0 = inferred */
static int64_t year_ref_ms;   /* reference time of the inference; 0 = read time */

void kmsg_syslog_year(int year, long long ref_ms)
{
    pinned_year = year;
    year_ref_ms = ref_ms;
}

static int syslog_epoch(int mo, int d, int h, int mi, int se, int ms, int64_t now_ms, int64_t *ts)
{
    if (pinned_year) return gl_local_to_epoch_ms(pinned_year, mo, d, h, mi, se, ms, ts) == GL_OK;
    if (year_ref_ms) now_ms = year_ref_ms;
    time_t now = (time_t)(now_ms / 1000);
    struct tm tm;
    gmtime_r(&now, &tm);
    int y0 = tm.tm_year + 1900;
    for (int y = y0 + 1; y >= y0 - 1; y--) {
        int64_t t;
        if (gl_local_to_epoch_ms(y, mo, d, h, mi, se, ms, &t) != GL_OK) continue;
        if (t <= now_ms + 86400000LL) { *ts = t; return 1; }
    }
    return 0;
}

/* "Mar  4 02:11:10[.123456] " -> epoch ms; returns the bytes or 0. */
static size_t px_syslog(const char *s, size_t n, int64_t now_ms, int64_t *ts)
{
    if (n < 16 || s[3] != ' ') return 0;
    int mo = month_num(s);
    if (!mo) return 0;
    size_t i = 4;
    while (i < n && s[i] == ' ') i++;
    size_t a = i;
    while (i < n && is_digit(s[i])) i++;
    int d;
    if (i - a < 1 || i - a > 2 || !gl_parse_digits(s + a, i - a, &d)) return 0;
    if (i + 9 > n || s[i] != ' ') return 0;
    i++;
    int h, mi, se, ms = 0;
    if (!hms(s + i, &h, &mi, &se)) return 0;
    i += 8;
    if (i < n && s[i] == '.') {
        i++;
        int nd = 0;
        while (i < n && is_digit(s[i])) { if (nd < 3) ms = ms * 10 + (s[i] - '0'); nd++; i++; }
        if (!nd) return 0;
        while (nd < 3) { ms *= 10; nd++; }
    }
    if (i < n && s[i] != ' ') return 0;
    if (!syslog_epoch(mo, d, h, mi, se, ms, now_ms, ts)) return 0;
    return i;
}

/* After a syslog/journal time: "host kernel: " or "kernel: ". */
static size_t px_host_kernel(const char *s, size_t n)
{
    if (starts(s, n, "kernel: ") || (n == 7 && starts(s, n, "kernel:"))) return 7;
    size_t i = 0;
    while (i < n && s[i] != ' ') i++;
    if (i == 0 || i >= n) return 0;
    size_t j = i;
    while (j < n && s[j] == ' ') j++;
    if (starts(s + j, n - j, "kernel:")) return j + 7;
    return 0;
}

/* "6,1234,1843308145,-;" (/dev/kmsg): priority, sequence, microseconds since
 * boot, flags. Returns the bytes or 0. */
static size_t px_devkmsg(const char *s, size_t n, double *up)
{
    size_t i = 0;
    int field = 0;
    size_t ua = 0, ue = 0;
    while (field < 3) {
        size_t a = i;
        while (i < n && is_digit(s[i])) i++;
        if (i == a || i >= n || s[i] != ',') return 0;
        if (field == 2) { ua = a; ue = i; }
        i++;
        field++;
    }
    while (i < n && s[i] != ';' && s[i] != ' ') i++;
    if (i >= n || s[i] != ';') return 0;
    int64_t us;
    if (!gl_parse_i64(s + ua, ue - ua, &us)) return 0;
    *up = (double)us / 1e6;
    return i + 1;
}

/* Strips every known prefix of a kernel line. */
void kmsg_prefix(const char *line, size_t len, int64_t now_ms, struct kprefix *px)
{
    const char *s = line;
    size_t n = len;
    memset(px, 0, sizeof *px);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) n--;
    if (n && (*s == ' ' || *s == '\t')) px->indented = 1;
    while (n && (*s == ' ' || *s == '\t')) { s++; n--; }
    size_t k;
    if ((k = px_devkmsg(s, n, &px->up))) { px->has_up = 1; px->prefixed = 1; s += k; n -= k; }
    for (int round = 0; round < 6 && n; round++) {
        k = 0;
        if (s[0] == '<' && n > 3 && is_digit(s[1])) {            /* printk level "<4>" */
            size_t i = 1;
            while (i < n && is_digit(s[i])) i++;
            if (i < n && s[i] == '>') k = i + 1;
        }
        if (!k && s[0] == '[') {
            if ((k = px_uptime(s, n, &px->up))) px->has_up = 1;
            else if ((k = px_ctime(s, n, &px->ts_ms))) px->has_ts = 1;
        }
        if (!k && is_digit(s[0]) && (k = px_iso(s, n, &px->ts_ms))) {
            px->has_ts = 1;
            size_t j = k;
            while (j < n && s[j] == ' ') j++;
            size_t h = px_host_kernel(s + j, n - j);
            if (h) k = j + h;
        }
        if (!k && s[0] >= 'A' && s[0] <= 'S' && (k = px_syslog(s, n, now_ms, &px->ts_ms))) {
            px->has_ts = 1;
            size_t j = k;
            while (j < n && s[j] == ' ') j++;
            size_t h = px_host_kernel(s + j, n - j);
            if (h) k = j + h;
        }
        if (!k && is_lower(s[0])) {
            if (starts(s, n, "kernel:")) k = 7;
            else k = px_facility(s, n);
        }
        if (!k) break;
        px->prefixed = 1;
        s += k;
        n -= k;
        while (n && (*s == ' ' || *s == '\t')) { s++; n--; }
    }
    px->body = s;
    px->blen = n;
}

int kmsg_prefix_uptime(const char *line, size_t len, double *secs)
{
    struct kprefix px;
    kmsg_prefix(line, len, gl_now_ms(), &px);
    if (!px.has_up) return 0;
    *secs = px.up;
    return 1;
}

int kmsg_line_prefixed(const char *line, size_t len)
{
    struct kprefix px;
    kmsg_prefix(line, len, gl_now_ms(), &px);
    return px.prefixed || px.indented;
}
