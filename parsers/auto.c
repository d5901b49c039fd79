/*
 * auto.c - --format auto: recognises the format from header lines and
 * switches whenever a new header appears mid-stream. Kernel-log lines are
 * recognised on their own and routed to the kmsg parser without disturbing
 * the current tabular format (syslog files interleave them).
 */
#include "parser.h"
#include "kmsg.h"

#include <stdlib.h>
#include <string.h>

/* Formats that announce themselves with a header line, in sniff order. */
static const struct parser_ops *const header_formats[] = {
    &parser_dmon, &parser_dmon_csv, &parser_pmon, &parser_dcgmi,
    &parser_query_csv, &parser_csv, &parser_smiq,
};
#define NHDR GL_ARRAY_LEN(header_formats)

struct autop {
    struct parser *outer;
    struct parser *sub[NHDR];
    struct parser *kmsg;
    struct parser *jsonl;
    struct parser *cur;
    int kmsg_prefixed;        /* the kernel log was recognised by a line with a time/facility prefix */
};

static void forward(void *ctx, const struct event *ev)
{
    struct parser *outer = ctx;
    outer->stats.events++;
    if (outer->emit) outer->emit(outer->emit_ctx, ev);
}

static struct parser *sub_get(struct autop *a, struct parser **slot, const struct parser_ops *ops)
{
    if (!*slot) {
        *slot = parser_new(ops, forward, a->outer);
        (*slot)->opt_columns = a->outer->opt_columns;
    }
    return *slot;
}

static void *auto_create(struct parser *p)
{
    struct autop *a = xcalloc(1, sizeof *a);
    a->outer = p;
    return a;
}

static void auto_destroy(void *st)
{
    struct autop *a = st;
    for (size_t i = 0; i < NHDR; i++) parser_free(a->sub[i]);
    parser_free(a->kmsg);
    parser_free(a->jsonl);
    free(a);
}

static int contains(const char *s, size_t n, const char *lit)
{
    size_t l = strlen(lit);
    if (n < l) return 0;
    for (size_t i = 0; i + l <= n; i++)
        if (s[i] == lit[0] && !memcmp(s + i, lit, l)) return 1;
    return 0;
}

static int run_sub(struct parser *outer, struct parser *sub, const struct line_src *src,
                   const char *line, size_t len)
{
    int rc = parser_feed(sub, src, line, len);
    if (rc == GL_ERROR) {
        memcpy(outer->err, sub->err, sizeof outer->err);
        outer->err_reason = sub->err_reason;
    }
    return rc;
}

static int auto_feed(struct parser *p, void *st, const struct line_src *src,
                     const char *line, size_t len)
{
    struct autop *a = st;
    const char *s = line;
    size_t n = len;
    str_trim(&s, &n);
    if (n == 0) return GL_DECLINED;

    /* kernel messages are self-identifying */
    if (parser_kmsg.sniff && parser_kmsg.sniff(line, len) > 0) {
        struct parser *k = sub_get(a, &a->kmsg, &parser_kmsg);
        if (!a->cur) {
            a->cur = k;
            a->kmsg_prefixed = kmsg_line_prefixed(line, len);
        }
        return run_sub(p, k, src, line, len);
    }

    /* JSON lines (W&B, other loggers, gpulog's events) are self-identifying too */
    if (s[0] == '{' && parser_jsonl.sniff(line, len) > 0) {
        struct parser *j = sub_get(a, &a->jsonl, &parser_jsonl);
        if (!a->cur) a->cur = j;
        return run_sub(p, j, src, line, len);
    }

    /* data rows of the current format start with a digit (index, date,
     * value): no header starts with one, so skip the header sniffers */
    if (a->cur && s[0] >= '0' && s[0] <= '9') {
        int rc = run_sub(p, a->cur, src, line, len);
        /* in a kernel log, a row that is no log line (no "prog: ") is data
         * whose header never came: rejected with that reason, not skipped */
        if (rc == GL_DECLINED && a->cur == a->kmsg && !contains(s, n, ": "))
            return parser_error(p, RJ_NO_HEADER, "a data row in a kernel log, but no header seen yet, cannot tell "
                                "its format (use --format, and --columns for header-less CSV)");
        return rc;
    }

    /* a header of some tabular format? */
    int best = 0;
    size_t bi = 0;
    for (size_t i = 0; i < NHDR; i++) {
        if (!header_formats[i]->sniff) continue;
        int sc = header_formats[i]->sniff(line, len);
        if (sc > best) { best = sc; bi = i; }
    }
    if (best >= 50) {
        a->cur = sub_get(a, &a->sub[bi], header_formats[bi]);
        return run_sub(p, a->cur, src, line, len);
    }
    /* in a kernel log whose lines carry a time or facility prefix, text
     * without one is none of its lines: unrecognised, not a skipped header */
    if (a->cur && a->cur == a->kmsg && a->kmsg_prefixed && s[0] != '#' && !kmsg_line_prefixed(line, len))
        return parser_error(p, RJ_NO_HEADER, "not a kernel log line (no time, facility or host prefix like the log's "
                            "other lines) and no header of another format: unrecognised");
    if (a->cur) return run_sub(p, a->cur, src, line, len);

    /* header-less CSV with --columns: let the sniffers judge the column list */
    if (p->opt_columns && *p->opt_columns) {
        struct buf h;
        buf_init(&h);
        buf_putc(&h, '#');
        for (const char *c = p->opt_columns; *c; c++) {
            if (*c == ',') buf_append(&h, ", ", 2);
            else buf_putc(&h, *c);
        }
        best = 0;
        for (size_t i = 0; i < NHDR; i++) {
            if (!header_formats[i]->sniff) continue;
            int sc = header_formats[i]->sniff(h.p, h.len);
            int sc2 = header_formats[i]->sniff(h.p + 1, h.len - 1);
            if (sc2 > sc) sc = sc2;
            if (sc > best) { best = sc; bi = i; }
        }
        buf_free(&h);
        if (best >= 50 && header_formats[bi] == &parser_dmon_csv && !memchr(line, ',', len))
            bi = 0;   /* whitespace rows: plain dmon with the given columns */
        if (best >= 50) {
            a->cur = sub_get(a, &a->sub[bi], header_formats[bi]);
            return run_sub(p, a->cur, src, line, len);
        }
    }

    /* a kernel log (dmesg, journal) before any NVIDIA line: the kmsg parser
     * skips the lines it does not care about */
    if ((s[0] == '[' && memchr(s, ']', n < 48 ? n : 48)) || contains(s, n < 80 ? n : 80, " kernel: ") ||
        (n > 6 && !memcmp(s, "kern ", 5))) {
        a->cur = sub_get(a, &a->kmsg, &parser_kmsg);
        a->kmsg_prefixed = kmsg_line_prefixed(line, len);
        return run_sub(p, a->cur, src, line, len);
    }
    if (contains(s, n, "Not supported on the device") || contains(s, n, "Failed to process command line") ||
        contains(s, n, "NVIDIA-SMI has failed") || contains(s, n, "Error setting watches") ||
        contains(s, n, "No devices were found") || contains(s, n, "couldn't communicate with the NVIDIA driver"))
        return parser_error(p, RJ_TOOL_ERROR, "the tool reported an error instead of data: %.*s", (int)(n > 120 ? 120 : n), s);
    if (s[0] == '#') return GL_DECLINED;   /* a comment we do not know */
    return parser_error(p, RJ_NO_HEADER, "no header seen yet, cannot tell the format (use --format, and --columns for header-less CSV)");
}

static void auto_flush(struct parser *p, void *st)
{
    (void)p;
    struct autop *a = st;
    for (size_t i = 0; i < NHDR; i++) if (a->sub[i]) parser_flush(a->sub[i]);
    if (a->kmsg) parser_flush(a->kmsg);
    if (a->jsonl) parser_flush(a->jsonl);
}

const struct parser_ops parser_auto = {
    .name = "auto",
    .help = "recognise the format from header lines; switch when a new header appears (default)",
    .create = auto_create,
    .destroy = auto_destroy,
    .sniff = NULL,
    .feed = auto_feed,
    .flush = auto_flush,
};
