/*
 * kmsg.c - kernel messages from the NVIDIA drivers: NVRM Xid (GPU), NVSwitch
 * SXid, NVLink5 Xid 144-150 and "fallen off the bus" without an Xid.
 *
 * Every prefix style of shared/docs/xid.md 3.3 is stripped first: dmesg
 * "[ 1843.308145] " (boot-relative: the event gets the read time), dmesg -T
 * "[Tue Mar  4 02:11:09 2025] " (local time in --tz), dmesg --decode
 * "kern  :warn  : " facility/level, ISO "2025-01-25T10:34:54,859532+00:00",
 * syslog "Mar  4 02:11:10 host kernel: " (no year: the read time's year, or
 * the year before if that would be more than a day ahead), "kernel: ",
 * /dev/kmsg "6,123,456789,-;" records, or nothing at all (read time).
 * Indented lines without a prefix continue the previous record and take its
 * time.
 *
 * Xid and SXid lines are matched with two PCRE2 patterns compiled once per
 * process (JIT when available); each parser owns one match_data it reuses.
 * Companion lines "NVRM: GPU at PCI:...: GPU-<uuid>" fill a small PCI->UUID
 * map used on later events of that device. The three-line probe message
 * "The NVIDIA GPU <bus>" / "(PCI ID: ...) installed in this system has" /
 * "fallen off the bus ..." is held in the parser until it completes and then
 * emitted as one critical Xid 79 event; an unfinished one is dropped at
 * flush (it was some other probe message). The single line "NVRM: GPU <bus>:
 * GPU has fallen off the bus." is a critical Xid 79 event too, unless an Xid
 * 79 of the same GPU came within the last KMSG_DUP79_LINES lines (then it is
 * the driver's echo of that Xid and is declined). Each SXid line (severity,
 * "Severity N Engine ..." and "Data {...}" kinds alike) is one event. Every
 * other line is declined.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "kmsg_int.h"
#include "kmsg.h"
#include "xid_catalog.h"

#include <pcre2.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define KMSG_UUID_SLOTS 64
#define KMSG_BUS_LEN 32
#define KMSG_UUID_LEN 48
#define KMSG_PENDING_PARTS 3    /* lines of the probe-time fallen-off message */
#define KMSG_DUP79_LINES 8      /* "GPU has fallen off the bus" this close to an Xid 79 is a duplicate */

/* ------------------------------------------------------------ patterns */

/* groups: 1 bus, 2 code, 3 pid, 4 name, 5 free text */
static const char kmsg_re_xid_src[] =
    "Xid \\((?:PCI:)?([0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+(?:\\.[0-9A-Fa-f]+)?)\\)[^:]*: (\\d{1,9})"
    "(?:,\\s*(?:pid=(?:'?<unknown>'?|(\\d{1,10})),\\s*name=(.*?)(?:,\\s+|$))?(.*))?$";
/* groups: 1 bus (with function), 2 code, 3 detail */
static const char kmsg_re_sxid_src[] =
    "SXid \\((?:PCI:)?([0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+(?:\\.[0-9A-Fa-f]+)?)\\)[^:]*: (\\d{1,9})"
    "(?:,\\s*(.*))?$";

static pthread_once_t kmsg_re_once = PTHREAD_ONCE_INIT;
static pcre2_code *kmsg_re_xid, *kmsg_re_sxid;

static pcre2_code *kmsg_re_compile(const char *src)
{
    int err;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)src, PCRE2_ZERO_TERMINATED, 0, &err, &off, NULL);
    if (!re) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(err, msg, sizeof msg);
        log_error("msg=\"kmsg: cannot compile pattern\" offset=%zu error=\"%s\"", (size_t)off, (char *)msg);
        return NULL;
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);   /* falls back to the interpreter if JIT is absent */
    return re;
}

static void kmsg_re_init(void)
{
    kmsg_re_xid = kmsg_re_compile(kmsg_re_xid_src);
    kmsg_re_sxid = kmsg_re_compile(kmsg_re_sxid_src);
}

/* ------------------------------------------------------------ state */

struct kmsg_uuid {
    char bus[KMSG_BUS_LEN];      /* normalised: lower case, no function */
    char uuid[KMSG_UUID_LEN];
};

struct kmsg_pending {
    int parts;                   /* 0 = nothing pending */
    struct buf raw;              /* raw lines joined with '\n' (event.original) */
    struct buf text;             /* message parts joined with ' ' */
    char bus[KMSG_BUS_LEN];      /* as printed */
    int has_ts;
    int64_t ts_ms;
    struct line_src src;         /* of the first line; strings owned below */
    char *host, *path, *source;
};

struct kmsg {
    pcre2_match_data *md;
    struct kmsg_uuid uuids[KMSG_UUID_SLOTS];
    int nuuid, uuid_next;
    int has_last_ts;             /* time of the last record, for continuations */
    int64_t last_ts;
    uint64_t seq;                /* lines fed */
    char last79_bus[KMSG_BUS_LEN];
    uint64_t last79_seq;
    struct kmsg_pending pend;
};

static void *kmsg_create(struct parser *p)
{
    (void)p;
    pthread_once(&kmsg_re_once, kmsg_re_init);
    struct kmsg *k = xcalloc(1, sizeof *k);
    k->md = pcre2_match_data_create(8, NULL);
    if (!k->md) { log_error("msg=\"kmsg: out of memory\""); abort(); }
    buf_init(&k->pend.raw);
    buf_init(&k->pend.text);
    return k;
}

static void pending_clear(struct kmsg_pending *pd)
{
    pd->parts = 0;
    buf_reset(&pd->raw);
    buf_reset(&pd->text);
    free(pd->host); free(pd->path); free(pd->source);
    pd->host = pd->path = pd->source = NULL;
}

static void kmsg_destroy(void *st)
{
    struct kmsg *k = st;
    pending_clear(&k->pend);
    buf_free(&k->pend.raw);
    buf_free(&k->pend.text);
    pcre2_match_data_free(k->md);
    free(k);
}

/* ------------------------------------------------------------ small scanners */

static const char *find(const char *s, size_t n, const char *lit)
{
    return memmem(s, n, lit, strlen(lit));
}

static int is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

/* Normalises a PCI address for lookups: lower case, without ".function". */
static void bus_norm(const char *s, size_t n, char out[KMSG_BUS_LEN])
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 1 < KMSG_BUS_LEN; i++) {
        char c = s[i];
        if (c == '.') break;
        out[o++] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
    }
    out[o] = '\0';
}

/* Length of a PCI address "dddd:bb:dd[.f]", or "bb:dd.f" without its
 * domain (domain 0000, as the other parsers take it), at s; else 0. */
static size_t bus_len(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && (is_hex(s[i]) || s[i] == ':' || s[i] == '.')) i++;
    while (i > 0 && (s[i - 1] == ':' || s[i - 1] == '.')) i--;   /* "...:00.0:" ends with ':' */
    int colons = 0, dot = 0;
    for (size_t j = 0; j < i; j++) {
        if (s[j] == ':') colons++;
        if (s[j] == '.') dot = 1;
    }
    return colons >= 2 || (colons == 1 && dot) ? i : 0;
}

/* ------------------------------------------------------------ events */

static const char *uuid_get(struct kmsg *k, const char *bus, size_t n)
{
    char key[KMSG_BUS_LEN];
    bus_norm(bus, n, key);
    for (int i = 0; i < k->nuuid; i++)
        if (!strcmp(k->uuids[i].bus, key)) return k->uuids[i].uuid;
    return NULL;
}

static void uuid_put(struct kmsg *k, const char *bus, size_t bn, const char *uuid, size_t un)
{
    char key[KMSG_BUS_LEN];
    bus_norm(bus, bn, key);
    struct kmsg_uuid *slot = NULL;
    for (int i = 0; i < k->nuuid; i++)
        if (!strcmp(k->uuids[i].bus, key)) { slot = &k->uuids[i]; break; }
    if (!slot) {
        if (k->nuuid < KMSG_UUID_SLOTS) slot = &k->uuids[k->nuuid++];
        else { slot = &k->uuids[k->uuid_next]; k->uuid_next = (k->uuid_next + 1) % KMSG_UUID_SLOTS; }
    }
    memcpy(slot->bus, key, sizeof key);
    if (un >= KMSG_UUID_LEN) un = KMSG_UUID_LEN - 1;
    memcpy(slot->uuid, uuid, un);
    slot->uuid[un] = '\0';
}

/* Adds name, severity, class and action of a catalog entry (or "unknown")
 * under gpu.xid.* (GPU Xid) or gpu.sxid.* (NVSwitch SXid, sx = 1). */
static void add_catalog(struct event *ev, const struct xid_info *xi, enum xid_sev sev, int sx)
{
    static const char *const keys[2][4] = {
        { "gpu.xid.name", "gpu.xid.severity", "gpu.xid.class", "gpu.xid.action" },
        { "gpu.sxid.name", "gpu.sxid.severity", "gpu.sxid.class", "gpu.sxid.action" },
    };
    const char *const *k = keys[sx ? 1 : 0];
    event_add_str(ev, k[0], xi ? xi->name : "unknown", strlen(xi ? xi->name : "unknown"));
    const char *sn = xid_sev_name(sev);
    event_add_str(ev, k[1], sn, strlen(sn));
    event_add_int(ev, "event.severity", (int64_t)sev);
    if (xi) {
        event_add_str(ev, k[2], xi->cls, strlen(xi->cls));
        event_add_str(ev, k[3], xi->action, strlen(xi->action));
    }
}

/* 1 if the word (Fatal, Nonfatal, ...) occurs in s delimited by non-letters. */
static int has_word(const char *s, size_t n, const char *w)
{
    size_t l = strlen(w);
    for (const char *p = s; (p = memmem(p, n - (size_t)(p - s), w, l)) != NULL; p++) {
        int before = p == s || !((p[-1] >= 'a' && p[-1] <= 'z') || (p[-1] >= 'A' && p[-1] <= 'Z') || p[-1] == '-');
        const char *e = p + l;
        int after = e == s + n || !((*e >= 'a' && *e <= 'z') || (*e >= 'A' && *e <= 'Z') || *e == '-');
        if (before && after) return 1;
        if ((size_t)(p - s) + l >= n) break;
    }
    return 0;
}

static void set_time(struct event *ev, const struct kprefix *px, const struct kmsg *k)
{
    if (px->has_ts) ev->ts_ms = px->ts_ms;
    else if (px->indented && !px->prefixed && k->has_last_ts) ev->ts_ms = k->last_ts;
}

#define GRP(i) (ov[2 * (i)] == PCRE2_UNSET ? NULL : body + ov[2 * (i)])
#define GLEN(i) (ov[2 * (i)] == PCRE2_UNSET ? 0 : (size_t)(ov[2 * (i) + 1] - ov[2 * (i)]))

static int kmsg_xid(struct parser *p, struct kmsg *k, const struct line_src *src,
                    const char *line, size_t len, const struct kprefix *px,
                    const char *body, size_t blen)
{
    if (!kmsg_re_xid) return parser_error(p, RJ_OTHER, "kmsg: Xid pattern unavailable");
    int rc = pcre2_match(kmsg_re_xid, (PCRE2_SPTR)body, blen, 0, 0, k->md, NULL);
    if (rc < 0) return parser_error(p, RJ_OTHER, "kmsg: unrecognised Xid line: %.*s", (int)(blen > 80 ? 80 : blen), body);
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(k->md);
    int64_t code;
    if (!gl_parse_i64(GRP(2), GLEN(2), &code)) return parser_error(p, RJ_OTHER, "kmsg: bad Xid code");
    const char *msg = GRP(5);
    size_t mlen = GLEN(5);
    str_trim(&msg, &mlen);

    const struct xid_info *xi = xid_lookup((int)code);
    enum xid_sev sev = xi ? xi->sev : XID_SEV_WARNING;
    if (code >= 144 && code <= 150 && msg) {
        if (has_word(msg, mlen, "Fatal")) sev = XID_SEV_CRITICAL;
        else if (has_word(msg, mlen, "Nonfatal") || has_word(msg, mlen, "Non-fatal")) sev = XID_SEV_WARNING;
    }

    struct event *ev = parser_begin(p, src, "event", "gpu.xid", line, len, 1);
    set_time(ev, px, k);
    event_add_int(ev, "gpu.xid.code", code);
    add_catalog(ev, xi, sev, 0);
    event_add_bus_id_said(ev, GRP(1), GLEN(1));
    const char *uuid = uuid_get(k, GRP(1), GLEN(1));
    if (uuid) event_add_str(ev, "gpu.uuid", uuid, strlen(uuid));
    int64_t pid;
    if (GRP(3) && gl_parse_i64(GRP(3), GLEN(3), &pid)) event_add_int(ev, "process.pid", pid);
    const char *name = GRP(4);
    size_t nlen = GLEN(4);
    if (name) {
        str_trim(&name, &nlen);
        if (nlen >= 2 && name[0] == '\'' && name[nlen - 1] == '\'') { name++; nlen -= 2; }
        if (nlen && !(nlen == 9 && !memcmp(name, "<unknown>", 9)))
            event_add_str(ev, "process.name", name, nlen);
    }
    if (mlen) event_add_str(ev, "message", msg, mlen);
    if (code == 79) {
        bus_norm(GRP(1), GLEN(1), k->last79_bus);
        k->last79_seq = k->seq;
    }
    parser_emit(p);
    return GL_OK;
}

static int kmsg_sxid(struct parser *p, struct kmsg *k, const struct line_src *src,
                     const char *line, size_t len, const struct kprefix *px,
                     const char *body, size_t blen)
{
    if (!kmsg_re_sxid) return parser_error(p, RJ_OTHER, "kmsg: SXid pattern unavailable");
    int rc = pcre2_match(kmsg_re_sxid, (PCRE2_SPTR)body, blen, 0, 0, k->md, NULL);
    if (rc < 0) return GL_DECLINED;       /* "SXid" in some other text */
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(k->md);
    int64_t code;
    if (!gl_parse_i64(GRP(2), GLEN(2), &code)) return parser_error(p, RJ_OTHER, "kmsg: bad SXid code");
    const char *msg = GRP(3);
    size_t mlen = GLEN(3);
    str_trim(&msg, &mlen);

    const struct xid_info *xi = sxid_lookup((int)code);
    enum xid_sev sev = xi ? xi->sev : XID_SEV_WARNING;
    /* the severity word leads the detail: Fatal raises, Non-fatal caps */
    if (msg && starts(msg, mlen, "Fatal")) sev = XID_SEV_CRITICAL;
    else if (msg && (starts(msg, mlen, "Non-fatal") || starts(msg, mlen, "Nonfatal")) && sev > XID_SEV_WARNING)
        sev = XID_SEV_WARNING;

    struct event *ev = parser_begin(p, src, "event", "gpu.sxid", line, len, 1);
    set_time(ev, px, k);
    event_add_int(ev, "gpu.sxid.code", code);
    add_catalog(ev, xi, sev, 1);
    event_add_bus_id_said(ev, GRP(1), GLEN(1));
    if (mlen) event_add_str(ev, "message", msg, mlen);
    parser_emit(p);
    return GL_OK;
}

/* One critical Xid-79-like event for a fallen-off-the-bus message. */
static void emit_fallen(struct parser *p, struct kmsg *k, const struct line_src *src,
                        const char *raw, size_t rawlen, int has_ts, int64_t ts,
                        const char *bus, size_t buslen, const char *msg, size_t mlen)
{
    const struct xid_info *xi = xid_lookup(79);
    struct event *ev = parser_begin(p, src, "event", "gpu.xid", raw, rawlen, 1);
    if (has_ts) ev->ts_ms = ts;
    event_add_int(ev, "gpu.xid.code", 79);
    add_catalog(ev, xi, XID_SEV_CRITICAL, 0);
    if (buslen) {
        event_add_bus_id_said(ev, bus, buslen);
        const char *uuid = uuid_get(k, bus, buslen);
        if (uuid) event_add_str(ev, "gpu.uuid", uuid, strlen(uuid));
        bus_norm(bus, buslen, k->last79_bus);
        k->last79_seq = k->seq;
    }
    if (mlen) event_add_str(ev, "message", msg, mlen);
    parser_emit(p);
}

static int recent_79(const struct kmsg *k, const char *bus, size_t buslen)
{
    char key[KMSG_BUS_LEN];
    bus_norm(bus, buslen, key);
    return k->last79_bus[0] && !strcmp(key, k->last79_bus) && k->seq - k->last79_seq <= KMSG_DUP79_LINES;
}

static void pending_start(struct kmsg *k, const struct line_src *src, const struct kprefix *px,
                          const char *line, size_t len, const char *bus, size_t buslen)
{
    struct kmsg_pending *pd = &k->pend;
    pending_clear(pd);
    pd->parts = 1;
    buf_append(&pd->raw, line, len);
    if (buslen >= KMSG_BUS_LEN) buslen = KMSG_BUS_LEN - 1;
    memcpy(pd->bus, bus, buslen);
    pd->bus[buslen] = '\0';
    pd->has_ts = px->has_ts || (px->indented && !px->prefixed && k->has_last_ts);
    pd->ts_ms = px->has_ts ? px->ts_ms : k->last_ts;
    pd->src = *src;
    pd->host = src->host ? xstrdup(src->host) : NULL;
    pd->path = src->path ? xstrdup(src->path) : NULL;
    pd->source = src->source ? xstrdup(src->source) : NULL;
    pd->src.host = pd->host;
    pd->src.path = pd->path;
    pd->src.source = pd->source;
}

/* Text after "NVRM:" of one line; handles the fallen-off-the-bus forms and
 * the companion lines. Returns GL_OK, GL_DECLINED or GL_ERROR. */
static int kmsg_nvrm(struct parser *p, struct kmsg *k, const struct line_src *src,
                     const char *line, size_t len, const struct kprefix *px,
                     const char *m, size_t mn)
{
    struct kmsg_pending *pd = &k->pend;
    if (starts(m, mn, "GPU at PCI:")) {
        const char *b = m + 11;
        size_t bl = bus_len(b, mn - 11);
        const char *u = bl ? find(b + bl, mn - 11 - bl, "GPU-") : NULL;
        if (u) {
            size_t ul = 4, hexn = 0;
            while (u + ul < m + mn && (is_hex(u[ul]) || u[ul] == '-')) { if (u[ul] != '-') hexn++; ul++; }
            if (hexn >= 8 && (u + ul == m + mn || u[ul] == ' ')) uuid_put(k, b, bl, u, ul);
        }
        return GL_DECLINED;
    }
    if (starts(m, mn, "The NVIDIA GPU ")) {
        const char *b = m + 15;
        size_t bl = bus_len(b, mn - 15);
        if (!bl) return GL_DECLINED;
        pending_start(k, src, px, line, len, b, bl);
        buf_append(&pd->text, m, mn);
        if (!find(m, mn, "fallen off the bus")) return GL_DECLINED;
        /* the whole message on one line */
    } else if (pd->parts) {
        pd->parts++;
        buf_putc(&pd->raw, '\n');
        buf_append(&pd->raw, line, len);
        buf_putc(&pd->text, ' ');
        buf_append(&pd->text, m, mn);
        if (!find(m, mn, "fallen off the bus")) {
            if (pd->parts >= KMSG_PENDING_PARTS) pending_clear(pd);   /* some other probe message */
            return GL_DECLINED;
        }
    } else if (starts(m, mn, "GPU ") && find(m, mn, "fallen off the bus")) {
        /* "GPU 0000:a1:00.0: GPU has fallen off the bus." */
        const char *b = m + 4;
        size_t bl = bus_len(b, mn - 4);
        if (bl && recent_79(k, b, bl)) return GL_DECLINED;   /* echo of the Xid 79 just seen */
        const char *msg = b + bl;
        size_t ml = mn - 4 - bl;
        if (ml && *msg == ':') { msg++; ml--; }
        str_trim(&msg, &ml);
        emit_fallen(p, k, src, line, len, px->has_ts || (px->indented && !px->prefixed && k->has_last_ts),
                    px->has_ts ? px->ts_ms : k->last_ts, b, bl, msg, ml);
        return GL_OK;
    } else {
        return GL_DECLINED;
    }
    /* the pending message is complete */
    if (recent_79(k, pd->bus, strlen(pd->bus))) {
        pending_clear(pd);
        return GL_DECLINED;
    }
    emit_fallen(p, k, &pd->src, pd->raw.p, pd->raw.len, pd->has_ts, pd->ts_ms,
                pd->bus, strlen(pd->bus), pd->text.p, pd->text.len);
    pending_clear(pd);
    return GL_OK;
}

static int kmsg_feed(struct parser *p, void *st, const struct line_src *src,
                     const char *line, size_t len)
{
    struct kmsg *k = st;
    k->seq++;
    struct kprefix px;
    kmsg_prefix(line, len, src->now_ms, &px);
    if (px.blen == 0) return GL_DECLINED;
    const char *body = px.body;
    size_t blen = px.blen;
    int rc = GL_DECLINED;

    const char *nv = starts(body, blen, "NVRM:") ? body : find(body, blen, "NVRM:");
    if (nv) {
        const char *m = nv + 5;
        size_t mn = blen - (size_t)(m - body);
        while (mn && (*m == ' ' || *m == '\t')) { m++; mn--; }
        if (starts(m, mn, "Xid "))
            rc = kmsg_xid(p, k, src, line, len, &px, nv, blen - (size_t)(nv - body));
        else
            rc = kmsg_nvrm(p, k, src, line, len, &px, m, mn);
    } else if (find(body, blen, "SXid")) {
        rc = kmsg_sxid(p, k, src, line, len, &px, body, blen);
    }
    if (px.has_ts) { k->has_last_ts = 1; k->last_ts = px.ts_ms; }
    else if (px.prefixed) k->has_last_ts = 0;     /* a record without wall clock */
    return rc;
}

static void kmsg_flush(struct parser *p, void *st)
{
    (void)p;
    struct kmsg *k = st;
    /* an unfinished probe message never said "fallen off the bus": drop it */
    pending_clear(&k->pend);
}

/* 1 when one of the kernel NVIDIA marks starts at s[i]. */
static int sniff_at(const char *s, size_t n, size_t i)
{
    return (s[i] == 'N' && n - i >= 5 && !memcmp(s + i, "NVRM:", 5)) ||
           (s[i] == 'S' && n - i >= 4 && !memcmp(s + i, "SXid", 4)) ||
           (s[i] == 'n' && n - i >= 15 && !memcmp(s + i, "nvidia-nvswitch", 15));
}

/* Kernel NVIDIA lines only: auto routes every line scoring > 0 here, so this
 * runs on every line of every input and must stay cheap: one pass for the
 * first letters of the marks, 16 bytes at a time where SSE2 is there (three
 * memchr passes were 3 % of collect's parse on metric rows, which have
 * none of them). */
#ifdef __SSE2__
/* Bit j set when byte j of the 16 at p is 'N', 'n' or 'S' (the first
 * letters of the marks; 'N' and 'n' differ only in bit 0x20). */
static inline unsigned sniff_marks16(const char *p)
{
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
    return (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(_mm_or_si128(v, _mm_set1_epi8(0x20)), _mm_set1_epi8('n')),
                                                    _mm_cmpeq_epi8(v, _mm_set1_epi8('S'))));
}
#endif

static int kmsg_sniff(const char *line, size_t len)
{
    size_t i = 0;
#ifdef __SSE2__
    if (len >= 16) {
        for (; i + 32 <= len; i += 32)
            for (unsigned m = sniff_marks16(line + i) | sniff_marks16(line + i + 16) << 16; m; m &= m - 1)
                if (sniff_at(line, len, i + (size_t)__builtin_ctz(m))) return 90;
        if (i + 16 <= len) {
            for (unsigned m = sniff_marks16(line + i); m; m &= m - 1)
                if (sniff_at(line, len, i + (size_t)__builtin_ctz(m))) return 90;
            i += 16;
        }
        if (i < len)   /* the last bytes: a block that overlaps, less the bytes seen */
            for (unsigned m = sniff_marks16(line + len - 16) & ~0u << (i - (len - 16)); m; m &= m - 1)
                if (sniff_at(line, len, len - 16 + (size_t)__builtin_ctz(m))) return 90;
        return 0;
    }
#endif
    for (; i < len; i++)
        if (sniff_at(line, len, i)) return 90;
    return 0;
}

const struct parser_ops parser_kmsg = {
    .name = "kmsg",
    .help = "kernel messages: NVRM Xid, NVSwitch SXid, NVLink5, fallen off the bus",
    .create = kmsg_create,
    .destroy = kmsg_destroy,
    .sniff = kmsg_sniff,
    .feed = kmsg_feed,
    .flush = kmsg_flush,
};

