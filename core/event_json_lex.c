/*
 * event_json_lex.c - the tokens of the flat schema-v1 JSON decoder
 * (event_json.c) with jansson's grammar: UTF-8 sequences, the hex
 * digits of \u escapes, numbers (Clinger's fast path, else strtod), literals.
 */
#include "event_json_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at p (first byte >= 0x80), or 0:
 * RFC 3629 as jansson's utf8_check_full (no overlongs, no surrogates,
 * nothing above U+10FFFF). */
size_t ej_utf8_len(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0];
    size_t n;
    uint32_t v;
    if (c >= 0xC2 && c <= 0xDF) { n = 2; v = c & 0x1F; }
    else if (c >= 0xE0 && c <= 0xEF) { n = 3; v = c & 0x0F; }
    else if (c >= 0xF0 && c <= 0xF4) { n = 4; v = c & 0x07; }
    else return 0;
    if ((size_t)(end - p) < n) return 0;
    for (size_t i = 1; i < n; i++) {
        if (p[i] < 0x80 || p[i] > 0xBF) return 0;
        v = (v << 6) | (p[i] & 0x3F);
    }
    if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    if ((n == 3 && v < 0x800) || (n == 4 && v < 0x10000)) return 0;
    return n;
}

static inline int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

int ej_hex4(const char *p, const char *end)
{
    if (end - p < 4) return -1;
    int v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval((unsigned char)p[i]);
        if (h < 0) return -1;
        v = v << 4 | h;
    }
    return v;
}

static const double pow10_exact[] = { 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                                      1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22 };

/* Scans the number at j->p with jansson's grammar and classification: no
 * fraction and no exponent is an integer (int64_t, else refused), otherwise
 * a real (strtod's correctly rounded value; overflow refused). Returns
 * EV_INT or EV_NUM, or -1 with j->why. */
int ej_jnum(struct jp *j, int64_t *iv, double *dv)
{
    const char *p = j->p, *end = j->end, *s = p;
    int neg = 0;
    if (p < end && *p == '-') { neg = 1; p++; }
    const char *ds0 = p;
    if (p < end && *p == '0') p++;
    else if (p < end && *p >= '1' && *p <= '9') while (p < end && *p >= '0' && *p <= '9') p++;
    else { j->why = "invalid number"; return -1; }
    const char *de = p;
    if (p < end && *p >= '0' && *p <= '9') { j->why = "invalid number (leading zero)"; return -1; }
    int real = 0;
    const char *fs = NULL, *fe = NULL;
    if (p < end && *p == '.') {
        p++;
        fs = p;
        if (p >= end || *p < '0' || *p > '9') { j->why = "invalid number"; return -1; }
        while (p < end && *p >= '0' && *p <= '9') p++;
        fe = p;
        real = 1;
    }
    int eneg = 0;
    const char *es = NULL, *ee = NULL;
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-')) eneg = *p++ == '-';
        es = p;
        if (p >= end || *p < '0' || *p > '9') { j->why = "invalid number"; return -1; }
        while (p < end && *p >= '0' && *p <= '9') p++;
        ee = p;
        real = 1;
    }
    /* a valid message goes on after a number: strtod below never reads past the input */
    if (p >= end) { j->why = "premature end of input"; return -1; }
    j->p = p;
    if (!real) {
        uint64_t u = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
        if (de - ds0 <= 18) {   /* below 10^18: cannot pass the limit (no leading zeros) */
            for (const char *q = ds0; q < de; q++) u = u * 10 + (uint64_t)(*q - '0');
        } else {
            for (const char *q = ds0; q < de; q++) {
                unsigned d = (unsigned)(*q - '0');
                if (u > (lim - d) / 10) { j->why = neg ? "too big negative integer" : "too big integer"; return -1; }
                u = u * 10 + d;
            }
        }
        *iv = neg ? (int64_t)(0 - u) : (int64_t)u;
        return EV_INT;
    }
    /* Clinger's fast path: a mantissa below 2^53 and a power of ten up to
     * 1e22 are exact doubles, so one IEEE operation rounds correctly, as
     * strtod does. Anything else goes to strtod. */
    uint64_t m = 0;
    int nd = 0, scale = 0;
    for (const char *q = ds0; q < de; q++) {
        if (m || *q != '0') nd++;
        m = m * 10 + (uint64_t)(*q - '0');
        if (nd > 15) goto slow;
    }
    for (const char *q = fs; q && q < fe; q++) {
        if (m || *q != '0') nd++;
        m = m * 10 + (uint64_t)(*q - '0');
        scale--;
        if (nd > 15) goto slow;
    }
    if (es) {
        int e = 0;
        for (const char *q = es; q < ee; q++) {
            e = e * 10 + (*q - '0');
            if (e > 400) goto slow;
        }
        scale += eneg ? -e : e;
    }
    if (scale < -22 || scale > 22) goto slow;
    double d = (double)m;
    d = scale < 0 ? d / pow10_exact[-scale] : d * pow10_exact[scale];
    *dv = neg ? -d : d;
    return EV_NUM;
slow:
    errno = 0;
    char *e;
    double v = strtod(s, &e);
    if (e != p) { j->why = "invalid number"; return -1; }
    if ((v == HUGE_VAL || v == -HUGE_VAL) && errno == ERANGE) { j->why = "real number overflow"; return -1; }
    *dv = v;
    return EV_NUM;
}

/* true, false or null at j->p: 1, 0 or 2, or -1. */
int ej_jlit(struct jp *j)
{
    size_t left = (size_t)(j->end - j->p);
    int r = -1;
    if (left >= 4 && !memcmp(j->p, "true", 4)) { j->p += 4; r = 1; }
    else if (left >= 5 && !memcmp(j->p, "false", 5)) { j->p += 5; r = 0; }
    else if (left >= 4 && !memcmp(j->p, "null", 4)) { j->p += 4; r = 2; }
    else { j->why = "invalid token"; return -1; }
    jafter_token(j);
    return r;
}
