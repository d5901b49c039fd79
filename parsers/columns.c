/* columns.c - see columns.h. */
#include "columns.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* Shows at most 40 bytes of a bad token in a rejection. */
#define SHOW(l) (int)((l) > 40 ? 40 : (l))

int col_split_blanks_bytes(const char *s, size_t n, const char **tok, size_t *tl, int max)
{
    int k = 0;
    size_t i = 0;
    for (;;) {
        while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
        if (i >= n) break;
        size_t a = i;
        while (i < n && s[i] != ' ' && s[i] != '\t') i++;
        if (k == max) return max + 1;
        tok[k] = s + a;
        tl[k] = i - a;
        k++;
    }
    return k;
}

#ifdef __SSE2__
/* Bit i set when byte i of the 64 at p is a blank (space, tab). */
static inline uint64_t blank_mask64(const char *p)
{
    const __m128i sp = _mm_set1_epi8(' '), tab = _mm_set1_epi8('\t');
    uint64_t m = 0;
    for (int j = 0; j < 4; j++) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * j));
        __m128i b = _mm_or_si128(_mm_cmpeq_epi8(v, sp), _mm_cmpeq_epi8(v, tab));
        m |= (uint64_t)(uint16_t)_mm_movemask_epi8(b) << (16 * j);
    }
    return m;
}

/* The blanks of s are found 64 bytes at a time (a mask of them, SSE2); the
 * tokens are where the mask changes. A dmon row is runs of 1-6 blanks and
 * short numbers, whose ends a byte-at-a-time loop mispredicts. */
int col_split_blanks(const char *s, size_t n, const char **tok, size_t *tl, int max)
{
    int k = 0, in_tok = 0;
    size_t a = 0;
    uint64_t prev_blank = 1;                 /* before the first byte: a blank */
    for (size_t base = 0; base < n; base += 64) {
        uint64_t b;
        if (n - base >= 64) {
            b = blank_mask64(s + base);
        } else {
            char tmp[64];
            memset(tmp, ' ', sizeof tmp);    /* past the end: blanks */
            memcpy(tmp, s + base, n - base);
            b = blank_mask64(tmp);
        }
        uint64_t nb = ~b;
        uint64_t starts = nb & ((b << 1) | prev_blank);
        uint64_t ends = b & ((nb << 1) | (prev_blank ^ 1));
        prev_blank = b >> 63;
        for (uint64_t t = starts | ends; t; t &= t - 1) {
            size_t pos = base + (size_t)__builtin_ctzll(t);
            if (pos >= n) break;
            if (!in_tok) { a = pos; in_tok = 1; continue; }
            in_tok = 0;
            if (k == max) return max + 1;
            tok[k] = s + a;
            tl[k] = pos - a;
            k++;
        }
    }
    if (in_tok) {
        if (k == max) return max + 1;
        tok[k] = s + a;
        tl[k] = n - a;
        k++;
    }
    return k;
}
#else
int col_split_blanks(const char *s, size_t n, const char **tok, size_t *tl, int max)
{
    return col_split_blanks_bytes(s, n, tok, tl, max);
}
#endif

void col_skip_bom(const char **s, size_t *n)
{
    if (*n >= 3 && !memcmp(*s, "\xef\xbb\xbf", 3)) { *s += 3; *n -= 3; }
}

void col_csv_text(const char *line, size_t *len, const char **s, size_t *n)
{
    if (*len && line[*len - 1] == '\r') (*len)--;
    *s = line;
    *n = *len;
    col_skip_bom(s, n);
    str_trim(s, n);
}

const char *col_key_of(const struct col_map *map, size_t nmap, const char *prefix,
                       const char *t, size_t n, int *kind, char **dyn)
{
    *dyn = NULL;
    for (size_t j = 0; j < nmap; j++)
        if (col_tok_is(t, n, map[j].col)) {
            *kind = map[j].kind;
            return map[j].key;
        }
    *dyn = name_sanitize(prefix, t, n);
    return *dyn;
}

void col_name_all(struct col_def *cols, const char *const *tok, const size_t *tl, int k,
                  const struct col_map *map, size_t nmap, const char *prefix, int dflt, int skip)
{
    for (int i = 0; i < k; i++) {
        struct col_def *c = &cols[i];
        c->kind = dflt;
        c->key = col_key_of(map, nmap, prefix, tok[i], tl[i], &c->kind, &c->dyn);
        c->klen = event_key_info(c->key);
        for (int j = 0; j < i; j++)
            if (!strcmp(cols[j].key, c->key)) { c->kind = skip; break; }
    }
}

void col_free_all(struct col_def *cols, int n)
{
    for (int i = 0; i < n; i++) {
        free(cols[i].dyn);
        cols[i].dyn = NULL;
    }
}

int col_frac_ms(const char *f, size_t fl, int *ms)
{
    if (fl == 0 || fl > 9) return 0;
    int v = 0;
    size_t nd = 0;
    for (; nd < fl; nd++) {
        if (f[nd] < '0' || f[nd] > '9') return 0;
        if (nd < 3) v = v * 10 + (f[nd] - '0');
    }
    for (; nd < 3; nd++) v *= 10;
    *ms = v;
    return 1;
}

void col_when_init(struct col_when *w)
{
    w->date = -1;
    w->y = w->mo = w->d = 0;
    w->hh = -1;
    w->mi = w->ss = 0;
}

int col_when_date(struct parser *p, struct col_when *w, struct col_when_memo *memo, const char *t, size_t l)
{
    if (memo && memo->have_date && l == 8 && !memcmp(t, memo->date, 8)) {
        w->date = memo->date_v;
        w->y = memo->y;
        w->mo = memo->mo;
        w->d = memo->d;
        return GL_OK;
    }
    if (l != 8 || !gl_parse_digits(t, 8, &w->date))
        return parser_error(p, RJ_BAD_TIME, "bad date '%.*s' (want YYYYMMDD)", SHOW(l), t);
    w->y = w->date / 10000;
    w->mo = w->date / 100 % 100;
    w->d = w->date % 100;
    if (memo) {
        memcpy(memo->date, t, 8);
        memo->have_date = 1;
        memo->date_v = w->date;
        memo->y = w->y;
        memo->mo = w->mo;
        memo->d = w->d;
    }
    return GL_OK;
}

int col_when_time(struct parser *p, struct col_when *w, struct col_when_memo *memo, const char *t, size_t l)
{
    if (memo && memo->have_time && l == 8 && !memcmp(t, memo->time, 8)) {
        w->hh = memo->hh;
        w->mi = memo->mi;
        w->ss = memo->ss;
        return GL_OK;
    }
    if (l != 8 || t[2] != ':' || t[5] != ':' || !gl_parse_digits(t, 2, &w->hh) || !gl_parse_digits(t + 3, 2, &w->mi) ||
        !gl_parse_digits(t + 6, 2, &w->ss)) {
        w->hh = -1;
        return parser_error(p, RJ_BAD_TIME, "bad time '%.*s' (want HH:MM:SS)", SHOW(l), t);
    }
    if (memo) {
        memcpy(memo->time, t, 8);
        memo->have_time = 1;
        memo->hh = w->hh;
        memo->mi = w->mi;
        memo->ss = w->ss;
    }
    return GL_OK;
}

int col_when_stamp(struct parser *p, const struct col_when *w, int64_t now_ms, int64_t *ts)
{
    if (w->hh >= 0) {
        if (w->date < 0) {
            if (gl_time_of_day_near(w->hh, w->mi, w->ss, now_ms, ts) != GL_OK)
                return parser_error(p, RJ_BAD_TIME, "bad time %02d:%02d:%02d", w->hh, w->mi, w->ss);
        } else if (gl_local_to_epoch_ms(w->y, w->mo, w->d, w->hh, w->mi, w->ss, 0, ts) != GL_OK) {
            return parser_error(p, RJ_BAD_TIME, "bad date/time %08d %02d:%02d:%02d", w->date, w->hh, w->mi, w->ss);
        }
    } else if (w->date >= 0) {
        if (gl_local_to_epoch_ms(w->y, w->mo, w->d, 0, 0, 0, 0, ts) != GL_OK)
            return parser_error(p, RJ_BAD_TIME, "bad date %08d", w->date);
    }
    return GL_OK;
}

int col_parse_date(const char *s, size_t n, int *y, int *mo, int *d)
{
    return n == 10 && (s[4] == '-' || s[4] == '/') && s[7] == s[4] &&
           gl_parse_digits(s, 4, y) && gl_parse_digits(s + 5, 2, mo) && gl_parse_digits(s + 8, 2, d);
}

/* "HH:MM:SS[.fff]" -> fields. */
int col_parse_tod(const char *s, size_t n, int *h, int *mi, int *se, int *ms)
{
    if (n < 8 || s[2] != ':' || s[5] != ':' || !gl_parse_digits(s, 2, h) || !gl_parse_digits(s + 3, 2, mi) ||
        !gl_parse_digits(s + 6, 2, se))
        return 0;
    *ms = 0;
    if (n == 8) return 1;
    return (s[8] == '.' || s[8] == ',') && col_frac_ms(s + 9, n - 9, ms);
}

/* A time value: epoch seconds / ms / us / ns as an integer (by magnitude),
 * epoch seconds with a fraction, ISO 8601 with or without zone ('T' or ' ',
 * '-' or '/' in the date), or a date alone. Zone-less times are read in the
 * --tz zone. Returns GL_OK or GL_ERROR. */
int col_time_value(const char *s, size_t n, int64_t *out)
{
    if (n == 0) return GL_ERROR;
    size_t i = 0, dot = 0;
    while (i < n && ((s[i] >= '0' && s[i] <= '9') || (s[i] == '.' && !dot))) { if (s[i] == '.') dot = i + 1; i++; }
    if (i == n) {
        size_t intlen = dot ? dot - 1 : n;
        if (intlen == 0 || intlen > 19) return GL_ERROR;
        uint64_t v = 0;
        for (size_t j = 0; j < intlen; j++) v = v * 10 + (uint64_t)(s[j] - '0');
        if (dot) {
            if (v >= 100000000000ULL) return GL_ERROR;   /* fractions only on seconds */
            double d;
            if (!gl_parse_double(s, n, &d)) return GL_ERROR;
            *out = (int64_t)llround(d * 1000.0);
            return GL_OK;
        }
        if (v < 100000000000ULL) *out = (int64_t)v * 1000;            /* seconds */
        else if (v < 100000000000000ULL) *out = (int64_t)v;           /* ms */
        else if (v < 100000000000000000ULL) *out = (int64_t)(v / 1000);  /* us */
        else *out = (int64_t)(v / 1000000);                          /* ns */
        return GL_OK;
    }
    int y, mo, d, hh, mi, se, ms;
    if (n == 10 && col_parse_date(s, n, &y, &mo, &d)) return gl_local_to_epoch_ms(y, mo, d, 0, 0, 0, 0, out);
    if (isalpha((unsigned char)s[0])) return gl_parse_ctime(s, n, out);      /* "Tue Nov  5 10:00:00 2024" */
    /* dmon's -o DT "YYYYMMDD HH:MM:SS" */
    if (n >= 17 && (s[8] == ' ' || s[8] == '-' || s[8] == 'T') && gl_parse_digits(s, 4, &y) &&
        gl_parse_digits(s + 4, 2, &mo) && gl_parse_digits(s + 6, 2, &d) && col_parse_tod(s + 9, n - 9, &hh, &mi, &se, &ms))
        return gl_local_to_epoch_ms(y, mo, d, hh, mi, se, ms, out);
    char tmp[64];
    if (n >= sizeof tmp || n < 19) return GL_ERROR;
    memcpy(tmp, s, n);
    if (tmp[4] == '/' && tmp[7] == '/') tmp[4] = tmp[7] = '-';
    return gl_parse_iso_ts(tmp, n, out);
}


void col_gpuids_learn(struct col_gpuids *m, int col, int has_time)
{
    m->col = col;
    m->one = has_time;
    m->row = 0;
}

/* The index of GPU id s (n bytes), numbered if new; -1 past 4096 GPUs. */
static int gpu_index_of(struct col_gpuids *m, const char *s, size_t n)
{
    for (size_t i = 0; i < m->n; i++)
        if (strlen(m->id[i]) == n && !memcmp(m->id[i], s, n)) return (int)i;
    if (m->n >= 4096) return -1;
    m->id = xrealloc(m->id, (m->n + 1) * sizeof *m->id);
    m->id[m->n] = xstrndup(s, n);
    return (int)m->n++;
}

int col_gpuids_row(struct col_gpuids *m, const char *s, size_t n)
{
    int g = m->one ? 0 : m->row;
    if (s) g = gpu_index_of(m, s, n);
    m->row++;
    return g;
}

void col_gpuids_free(struct col_gpuids *m)
{
    for (size_t i = 0; i < m->n; i++) free(m->id[i]);
    free(m->id);
    m->id = NULL;
    m->n = 0;
}

const struct col_key *col_key_get(struct col_keys *c, const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    size_t cap = sizeof c->slot / sizeof c->slot[0];
    for (size_t probe = 0; probe < cap; probe++) {
        struct col_key *k = &c->slot[(h + probe) & (cap - 1)];
        if (k->name) {
            if (strlen(k->name) == n && !memcmp(k->name, s, n)) return k;
            continue;
        }
        if (c->n >= COL_KEYS_MAX) return NULL;
        c->n++;
        k->name = xstrndup(s, n);
        if (!fn_map_lookup(s, n, &k->r)) fn_recognise(s, n, &k->r);
        /* a wide name's value of no schema field: named without its GPU part,
         * so every GPU's series has one name ("system.gpu.3.powerPercent":
         * metrics.power_percent) */
        const char *nm = k->r.gpu >= 0 && k->r.base[0] ? k->r.base : s;
        size_t nml = nm == s ? n : strlen(nm);
        k->metric = name_sanitize("metrics.", nm, nml);
        k->label = name_sanitize("labels.", nm, nml);
        return k;
    }
    return NULL;
}

void col_keys_free(struct col_keys *c)
{
    size_t cap = sizeof c->slot / sizeof c->slot[0];
    for (size_t i = 0; i < cap; i++) {
        free(c->slot[i].name);
        free(c->slot[i].metric);
        free(c->slot[i].label);
        c->slot[i].name = NULL;
    }
    c->n = 0;
}

int col_parse_bool(const char *s, size_t n, int *b)
{
    static const char *const yes[] = { "yes", "true", "active", "enabled", "on", "1" };
    static const char *const no[] = { "no", "false", "not active", "disabled", "off", "0" };
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        if (strlen(yes[i]) == n && !strncasecmp(s, yes[i], n)) { *b = 1; return 1; }
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        if (strlen(no[i]) == n && !strncasecmp(s, no[i], n)) { *b = 0; return 1; }
    return 0;
}
