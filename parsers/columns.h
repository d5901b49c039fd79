/*
 * columns.h - the column machinery the tabular parsers share (dmon, pmon,
 * dcgmi, csv, query-csv, kmsg times): cutting a line into tokens, naming a
 * header column (a map of known names, else a sanitized dynamic key),
 * fractions of a second (digits are gl_parse_digits in core), the text of a
 * CSV line, and the YYYYMMDD / HH:MM:SS date and time columns of
 * nvidia-smi's -o D/T output.
 *
 * Everything borrows its input; only col_key_of allocates (the dynamic key,
 * which the caller owns).
 */
#ifndef GPULOG_COLUMNS_H
#define GPULOG_COLUMNS_H

#include "parser.h"
#include "fieldname.h"

#include <string.h>

/* Splits s (n bytes) on runs of blanks (space, tab) into at most max
 * tokens (borrowed). Returns the count, or max + 1 if there are more. */
int col_split_blanks(const char *s, size_t n, const char **tok, size_t *tl, int max);
/* The same, a byte at a time: what col_split_blanks does without SSE2, and
 * the reference the tests hold it to. */
int col_split_blanks_bytes(const char *s, size_t n, const char **tok, size_t *tl, int max);

/* 1 if token t (n bytes) is exactly lit. */
static inline int col_tok_is(const char *t, size_t n, const char *lit)
{
    size_t l = strlen(lit);
    return n == l && !memcmp(t, lit, l);
}

/* Drops a UTF-8 byte order mark at the start of *s (*n bytes). */
void col_skip_bom(const char **s, size_t *n);
/* The text of a CSV line: *len loses a trailing CR (the event keeps the
 * line without it); *s, *n: the line without a byte order mark and the
 * blanks around it. */
void col_csv_text(const char *line, size_t *len, const char **s, size_t *n);

/* One known header name: its field key and the parser's kind for it. */
struct col_map {
    const char *col, *key;
    int kind;
};
/* The field key of header token t (n bytes): the key of the map row named
 * t (its kind into *kind), else prefix + the sanitized name, allocated into
 * *dyn (the caller frees it; *kind is left as it was). *dyn is NULL for a
 * known name. */
const char *col_key_of(const struct col_map *map, size_t nmap, const char *prefix,
                       const char *t, size_t n, int *kind, char **dyn);

/* One named column of a whitespace-table parser (dmon, pmon): its field
 * key (static, or the dyn it owns) and the parser's kind for it. */
struct col_def {
    const char *key;
    uint32_t klen;        /* event_key_info(key), for event_add_*_k */
    int kind;
    char *dyn;
};
/* Names the k header tokens into cols: the key and kind of the token's map
 * row, else prefix + its sanitized name with kind dflt. A key an earlier
 * column took gets kind skip: one key once per event, the first wins. */
void col_name_all(struct col_def *cols, const char *const *tok, const size_t *tl, int k,
                  const struct col_map *map, size_t nmap, const char *prefix, int dflt, int skip);
/* Frees the keys n columns own. */
void col_free_all(struct col_def *cols, int n);

/* The fraction of a second in the digits at f (fl bytes, 1 to 9 digits)
 * as milliseconds (truncated); 0 if there are none, too many or a non-digit. */
int col_frac_ms(const char *f, size_t fl, int *ms);

/* The date and time columns of one row (nvidia-smi -o D, T or DT):
 * date YYYYMMDD, time HH:MM:SS, read in the --tz zone; a time without a
 * date is the time of day closest to the read time. */
struct col_when {
    int date;                 /* YYYYMMDD, -1 = no date column value */
    int y, mo, d;
    int hh, mi, ss;           /* hh -1 = no time column value */
};
void col_when_init(struct col_when *w);
/* Reads a date (t, l bytes) or a time token into w. GL_OK, or GL_ERROR
 * through parser_error (RJ_BAD_TIME, showing the token). */
/* The last date and time tokens a parser read and their values: the rows
 * of one sample (a row per GPU) share them, so most rows compare 8 bytes
 * instead of parsing. Zeroed = empty; owned by the parser's state. */
struct col_when_memo {
    char date[8], time[8];
    int have_date, have_time;
    int date_v, y, mo, d;
    int hh, mi, ss;
};
/* memo may be NULL (no memo). */
int col_when_date(struct parser *p, struct col_when *w, struct col_when_memo *memo, const char *t, size_t l);
int col_when_time(struct parser *p, struct col_when *w, struct col_when_memo *memo, const char *t, size_t l);
/* The row's time into *ts when it had a date or a time (else *ts is left
 * as it is); now_ms places a time without a date. GL_OK, or GL_ERROR
 * through parser_error for an impossible date or time. */
int col_when_stamp(struct parser *p, const struct col_when *w, int64_t now_ms, int64_t *ts);

/* Names seen as data (a JSON key, the field column of a long table), each
 * recognised once (the user's --map, else fn_recognise) and kept with the
 * metrics.<name> / labels.<name> keys its values go to when they are no
 * schema field (a wide name's without its GPU part). At most
 * COL_KEYS_MAX names; the cache owns every string. */
#define COL_KEYS_MAX 384
struct col_key {
    char *name;               /* NULL: a free slot */
    struct fn_result r;
    char *metric, *label;
};
struct col_keys {
    struct col_key slot[512];
    size_t n;
};
/* The entry of name s (n bytes), recognised and made if new; NULL when the
 * cache is full (the caller says so). */
const struct col_key *col_key_get(struct col_keys *c, const char *s, size_t n);
/* Frees what c holds (c itself is the caller's). */
void col_keys_free(struct col_keys *c);

/* A boolean as tools print it: Yes/No, True/False, Active/Not Active,
 * Enabled/Disabled, On/Off, 1/0 (any case). 1 and *b on success. Pure. */
int col_parse_bool(const char *s, size_t n, int *b);

/* The GPUs of a table about GPUs with no GPU index column: named by UUID or
 * PCI bus id, numbered 0, 1, ... by first appearance (nvidia-smi lists them
 * by index; at most 4096); else with a time column one GPU (a single-GPU
 * log); else the rows since the header, in order (one poll a header). */
struct col_gpuids {
    char **id;
    size_t n;
    int col;    /* -1: the table has a GPU column (or is not about GPUs); the id column; or ncols */
    int one;    /* col == ncols with a time column: one GPU, index 0 */
    int row;    /* rows since the header */
};
/* Sets the id column (col, -1 or ncols as above) and whether the table has a
 * time column, and starts the row count. */
void col_gpuids_learn(struct col_gpuids *m, int col, int has_time);
/* The gpu.index of the next row, whose id column holds s (n bytes; s NULL
 * when the row has none); -1 past 4096 GPUs. Counts the row. */
int col_gpuids_row(struct col_gpuids *m, const char *s, size_t n);
/* Frees the ids m holds and empties it. */
void col_gpuids_free(struct col_gpuids *m);

/* The time values of CSV-like formats, pure apart from the --tz zone:
 * col_time_value reads epoch seconds / ms / us / ns as an integer (by
 * magnitude), epoch seconds with a fraction, ISO 8601 with or without a zone
 * ('T' or ' ', '-' or '/' in the date), a date alone, ctime ("Tue Nov  5
 * 10:00:00 2024") and dmon's "YYYYMMDD HH:MM:SS"; zone-less times are read
 * in the --tz zone. Epoch ms into *out; GL_OK or GL_ERROR.
 * col_parse_date: "YYYY-MM-DD" or "YYYY/MM/DD" (10 bytes); col_parse_tod:
 * "HH:MM:SS[.fff]" (',' also); 1 on success. */
int col_time_value(const char *s, size_t n, int64_t *out);
int col_parse_date(const char *s, size_t n, int *y, int *mo, int *d);
int col_parse_tod(const char *s, size_t n, int *h, int *mi, int *se, int *ms);

#endif
