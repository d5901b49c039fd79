/* timeutil.c - clocks, time zones, civil dates, ISO 8601 formatting and parsing (see common.h). */
#include "common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

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

int gl_parse_digits(const char *s, size_t n, int *out)
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
    if (!gl_parse_digits(s, 4, &y) || !gl_parse_digits(s + 5, 2, &mo) || !gl_parse_digits(s + 8, 2, &d) ||
        !gl_parse_digits(s + 11, 2, &h) || !gl_parse_digits(s + 14, 2, &mi) || !gl_parse_digits(s + 17, 2, &se))
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
        if (i + 2 > n || !gl_parse_digits(s + i, 2, &oh)) return GL_ERROR;
        i += 2;
        if (i < n && s[i] == ':') i++;
        if (i + 2 <= n && gl_parse_digits(s + i, 2, &om)) i += 2;
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

int gl_parse_ctime(const char *s, size_t n, int64_t *out)
{
    static const char mon[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    /* words: weekday, month, day, HH:MM:SS, [zone,] year */
    const char *w[6];
    size_t wl[6];
    int k = 0;
    for (size_t i = 0; i < n;) {
        while (i < n && s[i] == ' ') i++;
        if (i >= n) break;
        if (k == 6) return GL_ERROR;
        w[k] = s + i;
        while (i < n && s[i] != ' ') i++;
        wl[k] = (size_t)(s + i - w[k]);
        k++;
    }
    if (k != 5 && k != 6) return GL_ERROR;
    if (wl[0] != 3 || wl[1] != 3) return GL_ERROR;
    int mo = 0;
    for (int m = 0; m < 12; m++) if (!strncasecmp(w[1], mon + 3 * m, 3)) mo = m + 1;
    int d, hh, mi, ss, y;
    if (!mo || wl[2] < 1 || wl[2] > 2 || !gl_parse_digits(w[2], wl[2], &d)) return GL_ERROR;
    if (wl[3] != 8 || w[3][2] != ':' || w[3][5] != ':' || !gl_parse_digits(w[3], 2, &hh) ||
        !gl_parse_digits(w[3] + 3, 2, &mi) || !gl_parse_digits(w[3] + 6, 2, &ss))
        return GL_ERROR;
    if (wl[k - 1] != 4 || !gl_parse_digits(w[k - 1], 4, &y)) return GL_ERROR;
    if (d < 1 || d > 31 || hh > 23 || mi > 59 || ss > 60) return GL_ERROR;
    int utc = k == 6 && ((wl[4] == 3 && (!strncasecmp(w[4], "UTC", 3) || !strncasecmp(w[4], "GMT", 3))) ||
                         (wl[4] == 1 && (w[4][0] == 'Z' || w[4][0] == 'z')));
    if (utc) {
        *out = (gl_days_from_civil(y, mo, d) * 86400 + hh * 3600 + mi * 60 + ss) * 1000;
        return GL_OK;
    }
    return gl_local_to_epoch_ms(y, mo, d, hh, mi, ss, 0, out);
}
