/*
 * dcgmi.c - `dcgmi dmon`: one event per entity row.
 *
 * The '#Entity' (or '# Entity') line lists the fields' short names; the
 * following "ID"/"Id" units line is ignored. Both are re-printed every 14
 * samples, and every header re-derives the columns. A row is a two-token
 * entity label ("GPU 0", "GPU-I 1", "GPU-CI 2", "Switch 0", "vGPU 3") and one
 * value per field; N/A and N/W are absent. Every field is kept as
 * gpu.dcgm.<short name in lower case>, and fields with an obvious schema twin
 * are mapped onto it as well. Text lines from dcgmi (watch errors, the
 * Ctrl-C notice) are rejected with their text.
 */
#include "parser.h"
#include "columns.h"

#include <stdlib.h>
#include <string.h>

#define DCGMI_MAX_COLS 128

struct dcgmi_col {
    char *dyn;             /* owned gpu.dcgm.<name> */
    const char *twin;      /* schema field with the same meaning, or NULL */
    size_t start;          /* column of the name in the header line */
    int dup;               /* same name as an earlier column: skipped */
};

struct dcgmi {
    int ncols;
    struct dcgmi_col cols[DCGMI_MAX_COLS];
    int have_header;
    int64_t last_gpu;      /* index of the last "GPU n" row, -1 if none */
};

/* dcgmi short name -> schema field with the same meaning. */
static const struct { const char *name, *key; } dcgmi_twins[] = {
    { "POWER", "gpu.power.usage" },
    { "TMPTR", "gpu.temperature.gpu" },
    { "MMTMP", "gpu.temperature.memory" },
    { "GPUTL", "gpu.utilization.gpu.pct" },
    { "MCUTL", "gpu.utilization.memory_copy.pct" },
    { "SMCLK", "gpu.clock.streaming_multiprocessor_frequency" },
    { "MMCLK", "gpu.clock.mem_frequency" },
    { "FBUSD", "gpu.memory.framebuffer.used_size" },
    { "FBFRE", "gpu.memory.framebuffer.free_size" },
    { "FBTTL", "gpu.memory.framebuffer.total_size" },
};

/* Entity label -> field holding its id. GPU rows also set last_gpu. */
enum ent_kind { ENT_GPU, ENT_GI, ENT_CI, ENT_OTHER };
static const struct { const char *label; enum ent_kind kind; const char *key; } dcgmi_ents[] = {
    { "GPU",    ENT_GPU,   "gpu.index" },
    { "GPU-I",  ENT_GI,    "gpu.mig.gpu_instance" },
    { "GPU-CI", ENT_CI,    "gpu.mig.compute_instance" },
    { "Switch", ENT_OTHER, "gpu.dcgm.switch" },
    { "vGPU",   ENT_OTHER, "gpu.dcgm.vgpu" },
};

static void *dcgmi_create(struct parser *p)
{
    (void)p;
    struct dcgmi *d = xcalloc(1, sizeof *d);
    d->last_gpu = -1;
    return d;
}

static void dcgmi_cols_clear(struct dcgmi *d)
{
    for (int i = 0; i < d->ncols; i++) free(d->cols[i].dyn);
    d->ncols = 0;
    d->have_header = 0;
}

static void dcgmi_destroy(void *st)
{
    struct dcgmi *d = st;
    dcgmi_cols_clear(d);
    free(d);
}

/* Returns the length of the "#Entity" / "# Entity" opening of s, or 0. */
static size_t entity_head(const char *s, size_t n)
{
    if (n >= 7 && !memcmp(s, "#Entity", 7)) return 7;
    if (n >= 8 && !memcmp(s, "# Entity", 8)) return 8;
    return 0;
}

static int dcgmi_header(struct parser *p, struct dcgmi *d, const char *s, size_t n, size_t skip)
{
    const char *tok[DCGMI_MAX_COLS + 1];
    size_t tl[DCGMI_MAX_COLS + 1];
    int k = col_split_blanks(s + skip, n - skip, tok, tl, DCGMI_MAX_COLS);
    if (k > DCGMI_MAX_COLS) return parser_error(p, RJ_NO_HEADER, "dcgmi header has more than %d fields", DCGMI_MAX_COLS);
    if (k == 0) return parser_error(p, RJ_NO_HEADER, "dcgmi header without field names");
    dcgmi_cols_clear(d);
    for (int i = 0; i < k; i++) {
        struct dcgmi_col *c = &d->cols[i];
        c->dyn = name_sanitize("gpu.dcgm.", tok[i], tl[i]);
        c->twin = NULL;
        c->start = (size_t)(tok[i] - s);
        for (size_t j = 0; j < GL_ARRAY_LEN(dcgmi_twins); j++)
            if (col_tok_is(tok[i], tl[i], dcgmi_twins[j].name)) { c->twin = dcgmi_twins[j].key; break; }
        /* a field printed twice would put its keys twice in the event */
        c->dup = 0;
        for (int j = 0; j < i; j++)
            if (!strcmp(d->cols[j].dyn, c->dyn)) { c->dup = 1; break; }
        for (size_t j = 0; j < GL_ARRAY_LEN(dcgmi_ents); j++)      /* "SWITCH" vs a Switch row */
            if (!strcmp(dcgmi_ents[j].key, c->dyn)) { c->dup = 1; break; }
    }
    d->ncols = k;
    d->have_header = 1;
    return GL_DECLINED;
}

/* Cuts row s (n bytes) into values at the columns where the header printed
 * each name (dcgmi pads values to the name's column); labelend is where the
 * entity label ends. Fills tok/tl from index 2. Returns 0 if the row does not
 * line up with the header (a cut not on a blank). */
static int dcgmi_cut(const struct dcgmi *d, const char *s, size_t n, size_t labelend,
                     const char **tok, size_t *tl)
{
    for (int i = 0; i < d->ncols; i++) {
        size_t a = d->cols[i].start;
        size_t b = i + 1 < d->ncols ? d->cols[i + 1].start : n;
        if (a <= labelend || a >= n || s[a - 1] != ' ') return 0;
        if (b > n) b = n;
        if (b < n && s[b - 1] != ' ') return 0;
        const char *t = s + a;
        size_t l = b - a;
        str_trim(&t, &l);
        tok[i + 2] = t;
        tl[i + 2] = l;
    }
    return 1;
}

static int dcgmi_feed(struct parser *p, void *st, const struct line_src *src,
                      const char *line, size_t len)
{
    struct dcgmi *d = st;
    const char *s = line;
    size_t n = len;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) n--;
    while (n && (*s == ' ' || *s == '\t')) { s++; n--; }
    if (n == 0) return GL_DECLINED;
    size_t eh = entity_head(s, n);
    if (eh) return dcgmi_header(p, d, s, n, eh);
    if (s[0] == '#') return GL_DECLINED;

    const char *tok[DCGMI_MAX_COLS + 3];
    size_t tl[DCGMI_MAX_COLS + 3];
    int k = col_split_blanks(s, n, tok, tl, DCGMI_MAX_COLS + 2);
    /* the units line: "ID" or "Id" then units */
    if (k >= 1 && (col_tok_is(tok[0], tl[0], "ID") || col_tok_is(tok[0], tl[0], "Id"))) return GL_DECLINED;

    int ent = -1;
    if (k >= 2) {
        for (size_t j = 0; j < GL_ARRAY_LEN(dcgmi_ents); j++)
            if (col_tok_is(tok[0], tl[0], dcgmi_ents[j].label)) { ent = (int)j; break; }
    }
    int64_t id;
    if (ent < 0 || !gl_parse_i64(tok[1], tl[1], &id) || id < 0)
        return parser_error(p, RJ_OTHER, "dcgmi: %.*s", (int)(n > 200 ? 200 : n), s);
    if (!d->have_header) return parser_error(p, RJ_NO_HEADER, "dcgmi row before any '#Entity' header line");
    if (k - 2 != d->ncols) {
        /* string values may hold blanks: cut at the header's columns */
        if (k - 2 < d->ncols || !dcgmi_cut(d, s, n, tl[0] + 1 + tl[1], tok, tl))
            return parser_error(p, RJ_FIELD_COUNT, "dcgmi row has %d values, the header names %d fields", k - 2, d->ncols);
    }

    struct event *ev = parser_begin(p, src, "metric", "gpu.dcgmi", line, len, 0);
    switch (dcgmi_ents[ent].kind) {
    case ENT_GPU:
        d->last_gpu = id;
        event_add_int(ev, "gpu.index", id);
        break;
    case ENT_GI:
    case ENT_CI:
        if (d->last_gpu >= 0) event_add_int(ev, "gpu.index", d->last_gpu);
        event_add_int(ev, dcgmi_ents[ent].key, id);
        break;
    case ENT_OTHER:
        event_add_int(ev, dcgmi_ents[ent].key, id);
        break;
    }
    for (int i = 0; i < d->ncols; i++) {
        const char *t = tok[i + 2];
        size_t l = tl[i + 2];
        const struct dcgmi_col *c = &d->cols[i];
        if (c->dup || value_is_missing(t, l)) continue;
        event_add_auto(ev, c->dyn, t, l, 1);
        if (c->twin) event_add_auto(ev, c->twin, t, l, 0);
    }
    parser_emit(p);
    return GL_OK;
}

/* A dcgmi dmon header starts with "#Entity" or "# Entity". */
static int dcgmi_sniff(const char *line, size_t len)
{
    const char *s = line;
    size_t n = len;
    str_trim(&s, &n);
    return entity_head(s, n) ? 95 : 0;
}

const struct parser_ops parser_dcgmi = {
    .name = "dcgmi",
    .help = "dcgmi dmon (GPU, GPU-I, GPU-CI, Switch, vGPU rows; N/A, N/W absent)",
    .create = dcgmi_create,
    .destroy = dcgmi_destroy,
    .sniff = dcgmi_sniff,
    .feed = dcgmi_feed,
    .flush = NULL,
};
