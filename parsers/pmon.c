/*
 * pmon.c - `nvidia-smi pmon`: one event per (GPU, process) line.
 *
 * Columns are learnt from every '#' line naming "gpu" and "pid", so -s u,
 * -s m, -s um, old (no jpg/ofa) and new layouts and -o D/T parse alike.
 * The command is the last column and may contain spaces: the first N-1
 * fields are split on blanks and the rest of the line, trimmed, is the
 * command. Placeholder lines of an idle GPU (pid "-") are declined.
 */
#include "parser.h"
#include "columns.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PMON_MAX_COLS 64

enum pcol_kind { PC_GPU, PC_INT, PC_PID, PC_TYPE, PC_CMD, PC_DATE, PC_TIME, PC_AUTO, PC_SKIP };

struct pmon {
    int ncols;
    struct col_def cols[PMON_MAX_COLS];   /* kind: enum pcol_kind */
    int cmd_last;          /* the last column is the command */
    int have_header;
    struct col_when_memo when_memo;   /* the last date and time tokens */
};

/* pmon column name -> schema field (shared/docs/event-fields.md). */
static const struct col_map pmon_map[] = {
    { "Date",    "date", PC_DATE },
    { "Time",    "time", PC_TIME },
    { "gpu",     "gpu.index", PC_GPU },
    { "pid",     "process.pid", PC_PID },
    { "type",    "gpu.process.type", PC_TYPE },
    { "command", "process.name", PC_CMD },
    { "sm",      "gpu.process.utilization.sm.pct", PC_INT },
    { "mem",     "gpu.process.utilization.mem.pct", PC_INT },
    { "enc",     "gpu.process.utilization.enc.pct", PC_INT },
    { "dec",     "gpu.process.utilization.dec.pct", PC_INT },
    { "jpg",     "gpu.process.utilization.jpg.pct", PC_INT },
    { "ofa",     "gpu.process.utilization.ofa.pct", PC_INT },
    { "fb",      "gpu.process.memory.used_size", PC_INT },
};

static void *pmon_create(struct parser *p) { (void)p; return xcalloc(1, sizeof(struct pmon)); }

static void pmon_cols_clear(struct pmon *m)
{
    col_free_all(m->cols, m->ncols);
    m->ncols = 0;
    m->have_header = 0;
    m->cmd_last = 0;
}

static void pmon_destroy(void *st)
{
    struct pmon *m = st;
    pmon_cols_clear(m);
    free(m);
}

/* Splits on runs of blanks into at most max tokens; *rest (if not NULL) gets
 * what follows the max-th token. Returns the token count. */
static int pmon_split(const char *s, size_t n, const char **tok, size_t *tl, int max,
                      const char **rest, size_t *restlen)
{
    int k = 0;
    size_t i = 0;
    for (;;) {
        while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
        if (i >= n || k == max) break;
        size_t a = i;
        while (i < n && s[i] != ' ' && s[i] != '\t') i++;
        tok[k] = s + a;
        tl[k] = i - a;
        k++;
    }
    if (rest) {
        *rest = s + i;
        *restlen = n - i;
        str_trim(rest, restlen);
    }
    return k;
}

/* 1 if the names tok[0..k) include gpu and pid: pmon's names line. */
static int names_gpu_and_pid(const char *const *tok, const size_t *tl, int k)
{
    int gpu = 0, pid = 0;
    for (int i = 0; i < k; i++) {
        if (col_tok_is(tok[i], tl[i], "gpu")) gpu = 1;
        else if (col_tok_is(tok[i], tl[i], "pid")) pid = 1;
    }
    return gpu && pid;
}

/* A '#' line: the names line (has gpu and pid) or anything else (units). */
static int pmon_header(struct parser *p, struct pmon *m, const char *s, size_t n)
{
    const char *tok[PMON_MAX_COLS + 1];
    size_t tl[PMON_MAX_COLS + 1];
    /* "#Date Time gpu ..." glues '#' to the first name */
    int k = pmon_split(s + 1, n - 1, tok, tl, PMON_MAX_COLS + 1, NULL, NULL);
    if (!names_gpu_and_pid(tok, tl, k)) return GL_DECLINED;       /* units line, comment */
    if (k > PMON_MAX_COLS) return parser_error(p, RJ_NO_HEADER, "pmon header has more than %d columns", PMON_MAX_COLS);
    pmon_cols_clear(m);
    /* a column named twice would put one key twice in the event: first wins */
    col_name_all(m->cols, tok, tl, k, pmon_map, GL_ARRAY_LEN(pmon_map), "gpu.pmon.", PC_AUTO, PC_SKIP);
    m->ncols = k;
    m->cmd_last = m->cols[k - 1].kind == PC_CMD;
    m->have_header = 1;
    return GL_DECLINED;
}


#define SHOW(l) (int)((l) > 40 ? 40 : (l))

static int pmon_feed(struct parser *p, void *st, const struct line_src *src,
                     const char *line, size_t len)
{
    struct pmon *m = st;
    const char *s = line;
    size_t n = len;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) n--;
    while (n && (*s == ' ' || *s == '\t')) { s++; n--; }
    if (n == 0) return GL_DECLINED;
    if (s[0] == '#') return pmon_header(p, m, s, n);
    if (!m->have_header)
        return parser_error(p, RJ_NO_HEADER, "not a pmon row (no '#' header line seen): %.*s", (int)(n > 60 ? 60 : n), s);

    const char *tok[PMON_MAX_COLS + 1];
    size_t tl[PMON_MAX_COLS + 1];
    const char *cmd = NULL;
    size_t cmdlen = 0;
    int want = m->cmd_last ? m->ncols - 1 : m->ncols;
    int k = pmon_split(s, n, tok, tl, want, &cmd, &cmdlen);
    if (k != want || (!m->cmd_last && cmdlen)) {
        if (s[0] < '0' || s[0] > '9')
            return parser_error(p, RJ_OTHER, "not a pmon row: %.*s", (int)(n > 60 ? 60 : n), s);
        return parser_error(p, RJ_FIELD_COUNT, "expected %d fields as in the pmon header, got %d", m->ncols,
                            k + (cmdlen ? 1 : 0));
    }
    if (m->cmd_last) {
        tok[k] = cmd;
        tl[k] = cmdlen;
        k++;
    }

    /* placeholder of a GPU without processes: pid "-" */
    for (int i = 0; i < k; i++)
        if (m->cols[i].kind == PC_PID && tl[i] == 1 && tok[i][0] == '-') return GL_DECLINED;

    struct event *ev = parser_begin(p, src, "metric", "gpu.pmon", line, len, 0);
    int have_gpu = 0, have_pid = 0;
    struct col_when when;
    col_when_init(&when);
    for (int i = 0; i < k; i++) {
        const char *t = tok[i];
        size_t l = tl[i];
        const struct col_def *c = &m->cols[i];
        int64_t v;
        if (value_is_missing(t, l)) continue;
        switch ((enum pcol_kind)c->kind) {
        case PC_GPU:
        case PC_INT:
        case PC_PID:
            if (!parse_int_fast(t, l, &v)) {
                double dv;
                if (c->kind != PC_INT || !gl_parse_double(t, l, &dv))
                    return parser_error(p, RJ_NOT_A_NUMBER, "column %d: not a number: '%.*s'", i + 1, SHOW(l), t);
                event_add_num_k(ev, c->key, c->klen, dv);
                break;
            }
            event_add_int_k(ev, c->key, c->klen, v);
            if (c->kind == PC_PID) have_pid = 1;
            else if (c->kind == PC_GPU) have_gpu = 1;
            break;
        case PC_TYPE:
        case PC_CMD:
            event_add_str(ev, c->key, t, l);
            break;
        case PC_DATE:
            if (col_when_date(p, &when, &m->when_memo, t, l) != GL_OK) return GL_ERROR;
            break;
        case PC_TIME:
            if (col_when_time(p, &when, &m->when_memo, t, l) != GL_OK) return GL_ERROR;
            break;
        case PC_AUTO:
            event_add_auto(ev, c->key, t, l, 1);
            break;
        case PC_SKIP:
            break;
        }
    }
    if (!have_gpu) return parser_error(p, RJ_FIELD_COUNT, "pmon row has no gpu index");
    if (!have_pid) return parser_error(p, RJ_FIELD_COUNT, "pmon row has no pid");
    if (col_when_stamp(p, &when, src->now_ms, &ev->ts_ms) != GL_OK) return GL_ERROR;
    parser_emit(p);
    return GL_OK;
}

/* A pmon header: a '#' line naming both gpu and pid. */
static int pmon_sniff(const char *line, size_t len)
{
    const char *s = line;
    size_t n = len;
    str_trim(&s, &n);
    if (n < 4 || s[0] != '#') return 0;
    const char *tok[PMON_MAX_COLS + 1];
    size_t tl[PMON_MAX_COLS + 1];
    int k = pmon_split(s + 1, n - 1, tok, tl, PMON_MAX_COLS + 1, NULL, NULL);
    return names_gpu_and_pid(tok, tl, k) ? 95 : 0;
}

const struct parser_ops parser_pmon = {
    .name = "pmon",
    .help = "nvidia-smi pmon (one event per GPU and process; -s u/m/um, -o D/T)",
    .create = pmon_create,
    .destroy = pmon_destroy,
    .sniff = pmon_sniff,
    .feed = pmon_feed,
    .flush = NULL,
};
