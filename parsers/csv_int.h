/*
 * csv_int.h - the state of the CSV parser, shared by csv.c (rows) and
 * csv_header.c (header lines: names, aliases, units, the time columns).
 * Private to them; see csv.c for the format.
 */
#ifndef GPULOG_CSV_INT_H
#define GPULOG_CSV_INT_H

#include "parser.h"
#include "fieldname.h"
#include "columns.h"

#define CSV_MAX_COLS 1024
#define CSV_MAX_NAME 128

enum ckind {
    C_VALUE,    /* metrics.<name> if numeric, else labels.<name> */
    C_TIME,     /* full timestamp or epoch */
    C_DATE,     /* date part of a date + time pair */
    C_TOD,      /* time-of-day part of a date + time pair */
    C_GPU,      /* gpu.index (or gpu.uuid for "GPU-..." values) */
    C_HOST,     /* host.name */
    C_NUM,      /* alias with a numeric gpu.* field */
    C_STR,      /* alias with a string gpu.* field */
    C_MASK,     /* throttle reasons bitmask */
    C_BOOL,     /* a boolean gpu.* field (Yes/No, Active/Not Active, ...) */
    C_SKIP,     /* a second column for a field already taken */
    C_FIELD,    /* a long table's field-name column: its row's value column goes to that field */
    C_FVALUE,   /* a long table's value column (read with C_FIELD) */
};

struct ccol {
    enum ckind kind;
    const char *key;      /* gpu.* field for C_NUM / C_STR */
    enum dim dim;         /* unit family of the field (C_NUM) */
    double hscale;        /* factor from the unit the header names (fn_recognise's scale): 0 none */
    int gpu;              /* a wide row's GPU ("gpu3_temp"): its index, else -1 */
    char *metric;         /* owned "metrics.<name>" */
    char *label;          /* owned "labels.<name>" */
};

struct csvp {
    struct ccol *cols;
    int ncols, capcols;
    const char **tok;
    size_t *tl;
    size_t captok;
    struct buf unq;          /* unquoted values of the current row */
    int have_header;
    char *hdr;               /* text of the current header */
    size_t hdr_len;
    char *host;              /* host.name of the current row (valid during emit) */
    size_t hostcap;
    int *gpus;               /* a wide header's GPUs, ascending (ngpus of them; 0: not wide) */
    int ngpus;
    struct col_gpuids gpuids; /* a table about GPUs with no GPU column: which GPU a row is */
    int field_col, value_col;   /* a long table's field-name and value columns (-1: not long) */
    int long_gpu;               /* the long table has a GPU column */
    struct col_keys *keys;      /* the field names of a long table, recognised once (allocated when long) */
};

/* csv_header.c */
/* The next comma-separated field of s from *pos (trimmed, not unquoted);
 * *done after the last. 0 when there is none. */
int csv_next_field(const char *s, size_t n, size_t *pos, int *done, const char **t, size_t *l);
/* How much line looks like a CSV header (0 = not at all); *nfields names. */
int csv_header_score(const char *line, size_t len, int *nfields);
int csv_sniff(const char *line, size_t len);
/* Learns the columns from a header line (a leading '#' removed by caller),
 * the line at src; GL_DECLINED, or GL_ERROR with the reason. */
int csv_learn(struct parser *p, struct csvp *c, const struct line_src *src, const char *s, size_t n);

/* csv.c */
/* Frees the columns of c (the header is forgotten). */
void csv_cols_clear(struct csvp *c);
/* Splits a row into c->tok/c->tl, unquoting "..." fields into c->unq; the
 * field count, or -1 on an unterminated quote. */
int csv_split(struct csvp *c, const char *s, size_t n);

#endif
