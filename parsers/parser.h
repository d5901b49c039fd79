/*
 * parser.h - one interface for every input format.
 *
 * A parser turns lines into events. It is fed one line at a time with the
 * line's source position; for each event it completes it calls the emit
 * callback with a borrowed event (valid only during the call). Multi-line
 * formats (kernel messages) may emit on a later line or at parser_flush.
 *
 * Return codes of feed: GL_OK (line used), GL_DECLINED (header, blank,
 * comment: nothing to emit, not an error), GL_ERROR (line rejected; the reason
 * is in p->err). Rejected lines never stop the stream.
 *
 * Ownership: parser_new returns a parser the caller frees with parser_free;
 * lines are borrowed for the duration of parser_feed only.
 */
#ifndef GPULOG_PARSER_H
#define GPULOG_PARSER_H

#include "../core/common.h"
#include "../core/event.h"

/* Where a line came from; filled by the reader loop for every line. */
struct line_src {
    const char *host;      /* host.name */
    const char *path;      /* log.file.path, NULL for stdin/exec */
    const char *source;    /* identity used in event.id: path, "-", or the command */
    int64_t offset;        /* byte offset of the line in the source */
    uint64_t gen;          /* tailed files: which file of the path (0 = first) */
    uint64_t lineno;       /* 1-based line number */
    int64_t now_ms;        /* when the line was read (event.created) */
    int keep_original;     /* put event.original on metric events too */
};

typedef void (*emit_fn)(void *ctx, const struct event *ev);

struct parser;

struct parser_ops {
    const char *name;                       /* --format name */
    const char *help;                       /* one line for --help */
    void *(*create)(struct parser *p);
    void (*destroy)(void *st);
    /* How sure (0..100) we are that this line starts (or is a header of) this
     * format. Used by --format auto; lines are borrowed. */
    int (*sniff)(const char *line, size_t len);
    int (*feed)(struct parser *p, void *st, const struct line_src *src,
                const char *line, size_t len);
    /* End of input: emit anything pending. May be NULL. */
    void (*flush)(struct parser *p, void *st);
};

struct parser_stats {
    uint64_t lines;        /* lines fed */
    uint64_t events;       /* events emitted */
    uint64_t declined;     /* headers, blanks, comments */
    uint64_t rejected;     /* lines that could not be parsed */
};

struct parser {
    const struct parser_ops *ops;
    void *st;
    struct event ev;           /* reusable event the format fills */
    emit_fn emit;
    void *emit_ctx;
    char err[GL_ERRLEN];       /* reason of the last GL_ERROR */
    int err_reason;            /* its enum reject_reason */
    int ts_refused;            /* events of the current line refused at emission (@timestamp out of
                                * range, an identifier that is not a whole number) */
    struct parser_stats stats;
    const char *opt_columns;   /* --columns for header-less CSV (borrowed) */
};

/* Looks a format up by name ("auto", "dmon", ...); NULL if unknown. */
const struct parser_ops *parser_find(const char *name);
/* NULL-terminated list of every format (auto first). */
extern const struct parser_ops *const parser_formats[];
/* The same as names, NULL-terminated (static storage). */
const char *const *parser_format_names(void);

/* Creates a parser for ops that calls emit(ctx, ev) for each event. */
struct parser *parser_new(const struct parser_ops *ops, emit_fn emit, void *ctx);
void parser_free(struct parser *p);
/* Feeds one line (without terminator). Returns GL_OK, GL_DECLINED or GL_ERROR
 * (reason in p->err) and keeps p->stats. */
int parser_feed(struct parser *p, const struct line_src *src, const char *line, size_t len);
/* Signals end of input. */
void parser_flush(struct parser *p);

/* Helpers for format modules. */

/* Resets p->ev and fills the common header from src: kind, dataset, host,
 * path, offset, created time, id (from the raw line), original if asked or
 * always_original. ts defaults to src->now_ms. */
struct event *parser_begin(struct parser *p, const struct line_src *src,
                           const char *kind, const char *dataset,
                           const char *line, size_t len, int always_original);
/* parser_begin for the event number sub of a line that gives several (a
 * wide CSV row, a W&B record: one per GPU): sub 0 is parser_begin's id,
 * any other a different id from the same line. */
struct event *parser_begin_sub(struct parser *p, const struct line_src *src, const char *kind, const char *dataset,
                               const char *line, size_t len, int always_original, uint64_t sub);
/* Emits p->ev and counts it; an out-of-range field is dropped first, a
 * fraction in a count or size the schema types as an integer is rounded to
 * the nearest whole number, and an @timestamp outside 1970..2099 or a
 * fraction in an identifier (gpu.index, a MIG id, process.pid, an Xid
 * code, the throttle bitmask) refuses the event (the line is rejected, with
 * RJ_BAD_TIME or RJ_NOT_A_NUMBER, when it emitted nothing else). */
void parser_emit(struct parser *p);
/* Events refused at emission (process-wide). */
uint64_t parser_ts_refused(void);
/* The node's static labels (config key `labels`, --label NAME=VALUE):
 * process-wide like the time zone; parser_emit adds each as labels.NAME to
 * every event that does not set it itself. n "NAME=VALUE" texts (copied);
 * a NAME that is not lower case letters, digits and '_' is refused in err.
 * 0, or -1. */
int parser_labels_set(const char *const *kv, size_t n, char *err, size_t errlen);
/* Fractions rounded to a whole number at emission (process-wide). */
uint64_t parser_fields_rounded(void);
/* Why a line was rejected: the label of gpulog_lines_rejected_total. */
enum reject_reason {
    RJ_OTHER, RJ_FIELD_COUNT, RJ_NOT_A_NUMBER, RJ_NO_HEADER, RJ_BAD_TIME, RJ_BAD_UNIT, RJ_TOOL_ERROR, RJ_TOO_LONG,
    RJ_NOT_JSON,              /* a record of events (detect's consumer) that does not decode */
    RJ__COUNT
};
/* "field_count", "not_a_number", ... (static strings). */
const char *reject_reason_name(enum reject_reason r);
/* Fields dropped at emission by every parser of the process so far: their
 * values were out of the schema's range (parser_emit). */
uint64_t parser_fields_dropped(void);
/* Sets p->err (the text, with the location) and p->err_reason, and returns
 * GL_ERROR. */
int parser_error(struct parser *p, enum reject_reason r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Utilities shared by formats. */
/* Trims ASCII spaces/tabs at both ends. */
void str_trim(const char **s, size_t *n);
/* 1 if the n bytes at s are all decimal digits (no sign: "-1:00:00" and
 * "-2025110" are no time or date). */
int str_all_digits(const char *s, size_t n);
/* 1 if the value is one of the "missing" spellings: "", "-", "N/A", "N/W",
 * or anything in brackets ("[N/A]", "[Not Supported]", ...). */
int value_is_missing(const char *s, size_t n);
/* Adds a value parsed from text: integer if it is one, else a double, else
 * (if allow_str) a string. Returns 1 if added. */
int event_add_auto(struct event *ev, const char *key, const char *s, size_t n, int allow_str);

/* One spelling per PCI address: "0000:3b:00", "PCI:0000:3B:00.0",
 * "00000000:3B:00.0" and "3b:00.0" all become "0000:3b:00.0" (lowercase
 * dddd:bb:dd.f, domain 0 and function 0 when absent, an 8-digit domain
 * shortened when it fits in 4). Writes it NUL-terminated into out and
 * returns its length, or 0 (out = "") when s is not a PCI address. Pure. */
#define BUS_ID_LEN 24
size_t bus_id_canon(const char *s, size_t n, char out[BUS_ID_LEN]);
/* Adds gpu.pci.bus_id in that spelling; returns 0 (and adds nothing) when
 * s is not a PCI address. */
int event_add_bus_id(struct event *ev, const char *s, size_t n);
/* The same for an address a kernel line printed: its device number may be
 * past 0x1f (kept as written, in that spelling: it still names the
 * device); one that cannot be read at all is left out, counted in
 * parser_fields_dropped and parser_bus_ids_unread, and said (the first 20). */
int event_add_bus_id_said(struct event *ev, const char *s, size_t n);
uint64_t parser_bus_ids_unread(void);
/* The normal form of a name: lower case, runs of other bytes as one '_',
 * none at the ends; at most cap - 1 bytes and a NUL into out. Its length
 * (0 for a name without a letter or digit). Pure. */
size_t name_norm(const char *s, size_t n, char *out, size_t cap);
/* prefix + name_norm of s (n bytes), "_" for an empty one (for metric
 * names). Returns a new string. */
char *name_sanitize(const char *prefix, const char *s, size_t n);

/* Parses a decimal integer (optional leading '-', at most 18 digits, nothing
 * else) quickly: the hot path of the table formats. Returns 1 on success. */
static inline int parse_int_fast(const char *s, size_t n, int64_t *out)
{
    if (n == 0 || n > 18) return 0;
    size_t i = 0;
    int neg = 0;
    if (s[0] == '-') { if (n == 1) return 0; neg = 1; i = 1; }
    int64_t v = 0;
    for (; i < n; i++) {
        unsigned c = (unsigned)(s[i] - '0');
        if (c > 9) return 0;
        v = v * 10 + c;
    }
    *out = neg ? -v : v;
    return 1;
}

/* The format modules. */
extern const struct parser_ops parser_auto;
extern const struct parser_ops parser_dmon;
extern const struct parser_ops parser_dmon_csv;
extern const struct parser_ops parser_query_csv;
extern const struct parser_ops parser_csv;
extern const struct parser_ops parser_pmon;
extern const struct parser_ops parser_dcgmi;
extern const struct parser_ops parser_kmsg;
extern const struct parser_ops parser_jsonl;
extern const struct parser_ops parser_smiq;

#endif
