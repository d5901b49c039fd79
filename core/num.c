/* num.c - number parsing and process facts (see common.h). */
#include "common.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

size_t gl_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64) return 99;
    size_t prev[65], cur[65];
    for (size_t j = 0; j <= lb; j++) prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t c = prev[j - 1] + (a[i - 1] != b[j - 1]);
            if (prev[j] + 1 < c) c = prev[j] + 1;
            if (cur[j - 1] + 1 < c) c = cur[j - 1] + 1;
            cur[j] = c;
        }
        memcpy(prev, cur, (lb + 1) * sizeof *prev);
    }
    return prev[lb];
}
