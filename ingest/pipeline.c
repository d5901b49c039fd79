/*
 * pipeline.c - the one loop (pipeline.h): sources -> parser -> [stage] ->
 * sinks, with the hold queue, settle -> checkpoint, backpressure, signals,
 * housekeeping and shutdown.
 */
#include "pipeline.h"
#include "../parsers/parser.h"
#include "../core/lineread.h"
#include "../core/metrics.h"
#include "../core/gpumetrics.h"

#include <inttypes.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PENDING_LINES 65536     /* per lane: backpressure above this */
#define MAX_SINKS 8
/* settle tokens: source index (16 bits), lane (12), low bits of the sequence (36) */
#define TOKEN_SEQ_BITS 36
#define TOKEN_LANE_BITS 12
#define TOKEN_SEQ_MASK ((UINT64_C(1) << TOKEN_SEQ_BITS) - 1)
#define TOKEN_LANE_MASK ((UINT64_C(1) << TOKEN_LANE_BITS) - 1)

struct pipeline {
    struct pipeline_opts o;
    struct source_env env;
    struct source **src;
    size_t nsrc, capsrc;
    int64_t *wake;                /* by source: not read before this time (its idle_until) */
    size_t *pumped, npumped;      /* the sources with a pump or a pollfd (the few spooled or consumed) */
    struct sink *sinks[MAX_SINKS];
    unsigned any_streams;         /* the streams some sink takes (SINK_STREAM bits) */
    size_t nsinks;
    struct sink_hold stash;       /* refused by a full sink, in order */
    int blocked;                  /* a sink said GL_AGAIN: stop reading */
    struct buf json, key;
    struct source *cur;           /* the source whose record is being parsed */
    const struct src_rec *rec;    /* that record, while it is processed (else NULL) */
    struct event ev;              /* records that are events, decoded (reused) */
    int priming;                  /* feeding saved headers: events are dropped */
    int running;                  /* between start and finish: /readyz may say ready */
    int spool_full;
    uint64_t reports;
    struct pipeline_stats st;
    uint64_t acked_counted;       /* st.acked already in gpulog_events_produced_total (sinks_poll) */
    int64_t read_ms;              /* the clock for event.created (read_now) */
    unsigned read_uses;           /* lines that used it */
};

static volatile sig_atomic_t stop_flag, hup_flag;

void pipeline_on_signal(int sig)
{
    if (sig == SIGHUP) hup_flag = 1;
    else stop_flag = 1;
}

int pipeline_stopping(void) { return stop_flag != 0; }
void pipeline_stop(void) { stop_flag = 1; }

static long rss_kb(void)
{
    int64_t b = gl_rss_bytes();
    return b > 0 ? (long)(b / 1024) : 0;
}

/* ---------------------------------------------------------------- delivery */

static void sink_failed(struct pipeline *pl, const struct sink *s)
{
    log_error("msg=\"sink failed\" error=\"%s\"", s->errstr);
    pl->st.fatal = 1;
}

/* Writes what a full sink refused earlier, in order; 1 when nothing is held. */
static int stash_flush(struct pipeline *pl)
{
    struct sink *failed;
    void *token;
    pl->st.written += sink_hold_flush(&pl->stash, &failed, &token);
    if (failed) sink_failed(pl, failed);
    return pl->stash.n == 0;
}

/* The token of the record being parsed, holding it once per write (NULL
 * when positions are not kept, or outside a record). */
static void *hold_token(struct pipeline *pl)
{
    struct source *s = pl->cur;
    if (!s || !s->ops->checkpoint || s->cur_seq == UINT64_MAX) return NULL;
    track_hold(&s->lanes[s->cur_lane].tr, s->cur_seq);
    return (void *)(uintptr_t)(((uint64_t)s->idx << (TOKEN_SEQ_BITS + TOKEN_LANE_BITS)) |
                               ((uint64_t)s->cur_lane << TOKEN_SEQ_BITS) | (s->cur_seq & TOKEN_SEQ_MASK));
}

/* Writes d to every sink that takes stream, behind anything held (keeps
 * the order); held: each write holds the record being processed. */
static void write_doc(struct pipeline *pl, struct sink_doc *d, enum sink_stream stream, int held)
{
    for (size_t i = 0; i < pl->nsinks; i++) {
        if (!sink_takes(pl->sinks[i], stream)) continue;
        d->token = held ? hold_token(pl) : NULL;
        int r = sink_hold_write(&pl->stash, pl->sinks[i], d);
        if (r == GL_OK) pl->st.written++;
        else if (r == GL_AGAIN) pl->blocked = 1;
        else sink_failed(pl, pl->sinks[i]);
    }
}

/* Writes ev to every sink that takes stream (not encoded when none does). */
static void deliver(struct pipeline *pl, const struct event *ev, enum sink_stream stream, int held)
{
    if (!(pl->any_streams & SINK_STREAM(stream))) return;
    struct sink_doc d;
    sink_doc_of(&d, ev, stream, pl->o.host, NULL, &pl->json, &pl->key);
    write_doc(pl, &d, stream, held);
}

void pipeline_emit(struct pipeline *pl, const struct event *ev, enum sink_stream stream)
{
    deliver(pl, ev, stream, 1);
}

void pipeline_forward(struct pipeline *pl, const struct event *ev, enum sink_stream stream)
{
    const struct src_rec *r = pl->rec;
    if (!r || !(pl->any_streams & SINK_STREAM(stream))) return;
    struct sink_doc d = { .stream = stream, .id = ev->id, .json = r->p, .len = r->len };
    write_doc(pl, &d, stream, 1);
}

int64_t pipeline_lane(const struct pipeline *pl) { return pl->rec ? (int64_t)pl->rec->lane : -1; }

static void on_event(void *ctx, const struct event *ev)
{
    struct pipeline *pl = ctx;
    if (pl->priming) return;
    if (pl->cur) pl->cur->events++;
    if (pl->o.stage) { pl->o.stage(pl->o.ctx, ev); return; }
    deliver(pl, ev, sink_stream_of(ev->dataset), 1);
    gpumetrics_observe(ev);
}

void pipeline_settle(void *ctx, void *token, enum sink_outcome o)
{
    struct pipeline *pl = ctx;
    if (o == SINK_DEADLETTER) { pl->st.deadletter++; metrics_inc(M_DEADLETTERS); }
    else pl->st.acked++;          /* into the metric by sinks_poll, a poll's worth at a time */
    uint64_t t = (uintptr_t)token;
    if (!t) return;   /* not tied to a record (health events, records of a stage outside one) */
    size_t idx = (size_t)(t >> (TOKEN_SEQ_BITS + TOKEN_LANE_BITS));
    uint32_t lane = (uint32_t)((t >> TOKEN_SEQ_BITS) & TOKEN_LANE_MASK);
    if (idx < 1 || idx > pl->nsrc || lane >= pl->src[idx - 1]->nlanes) return;
    struct track *tr = &pl->src[idx - 1]->lanes[lane].tr;
    /* rebuild the full sequence number from its low bits */
    uint64_t seq = (tr->head_seq & ~TOKEN_SEQ_MASK) | (t & TOKEN_SEQ_MASK);
    if (seq < tr->head_seq) seq += UINT64_C(1) << TOKEN_SEQ_BITS;
    track_settle(tr, seq);
}

void pipeline_health(struct pipeline *pl, struct source *s, const char *action, const char *file, int64_t off,
                     const char *msg)
{
    log_warn("msg=\"%s\" action=%s source=\"%s\"", msg, action, s->name);
    struct event ev;
    event_init(&ev);
    int64_t now = gl_now_ms();
    ev.kind = "event";
    ev.dataset = "gpulog.collector";
    ev.host = pl->o.host;
    ev.offset = -1;
    ev.ts_ms = now;
    ev.created_ms = now;
    char salt[64];
    int sl = snprintf(salt, sizeof salt, "%s %" PRId64, action, now);
    event_make_id(&ev, pl->o.host, s->name, 0, now, salt, (size_t)sl);
    event_add_str(&ev, "event.action", action, strlen(action));
    event_add_str(&ev, "message", msg, strlen(msg));
    event_add_str(&ev, "process.command_line", s->name, strlen(s->name));
    if (file) event_add_str(&ev, "log.file.path", file, strlen(file));
    if (off >= 0) event_add_int(&ev, "log.offset", off);
    pl->st.health_sent++;
    deliver(pl, &ev, STREAM_EVENTS, 0);
    event_free(&ev);
}

static void env_health(void *ctx, struct source *s, const char *action, const char *file, int64_t off, const char *msg)
{
    pipeline_health(ctx, s, action, file, off, msg);
}

/* A sleeping source has something to read: the next turn reads it. */
static void env_wake(void *ctx, struct source *s)
{
    struct pipeline *pl = ctx;
    if (s->idx >= 1 && (size_t)s->idx <= pl->nsrc) pl->wake[s->idx - 1] = 0;
}

/* A rejected record: counted, and said on stderr as NAME:LINE or NAME@OFFSET. */
static void rejected(struct pipeline *pl, struct source *s, int64_t off, enum reject_reason r, const char *why)
{
    s->rejected++;
    if (pl->o.metrics) metrics_inc_label(M_LINES_REJECTED, reject_reason_name(r));
    if (pl->o.quiet || (pl->o.max_reports && pl->reports >= pl->o.max_reports)) return;
    pl->reports++;
    if (pl->o.by_lineno) gl_say(GL_LOG_WARN, "%s:%" PRIu64 ": %s\n", s->label ? s->label : s->name, s->lines, why);
    else gl_say(GL_LOG_WARN, "%s@%" PRId64 ": %s\n", s->name, off, why);
}

static void env_rejected(void *ctx, struct source *s, int64_t off, const char *why)
{
    rejected(ctx, s, off, RJ_TOO_LONG, why);
}

static long env_drain(void *ctx, int timeout_ms) { return pipeline_drain(ctx, timeout_ms); }

static void env_revoked(void *ctx, struct source *s, uint32_t lane)
{
    struct pipeline *pl = ctx;
    if (pl->o.revoked) pl->o.revoked(pl->o.ctx, s, lane);
}

/* ---------------------------------------------------------------- sources */

struct pipeline *pipeline_new(const struct pipeline_opts *o)
{
    struct pipeline *pl = xcalloc(1, sizeof *pl);
    gl_interrupted = pipeline_stopping;   /* loaders (a SIGHUP reload) give up on a stop signal */
    pl->o = *o;
    if (!pl->o.max_line) pl->o.max_line = LR_DEFAULT_MAX_LINE;
    pl->o.tail.max_line = pl->o.max_line;
    pl->env = (struct source_env){
        .state_dir = o->state_dir, .max_line = pl->o.max_line, .once = o->once, .stale_ms = o->stale_ms,
        .tail = &pl->o.tail, .ctx = pl, .health = env_health, .rejected = env_rejected,
        .drain = env_drain, .revoked = env_revoked, .kafka = o->kafka, .wake = env_wake,
    };
    buf_init(&pl->json);
    buf_init(&pl->key);
    event_init(&pl->ev);
    return pl;
}

void pipeline_free(struct pipeline *pl)
{
    if (!pl) return;
    for (size_t i = 0; i < pl->nsinks; i++) sink_free(pl->sinks[i]);
    for (size_t i = 0; i < pl->nsrc; i++) pl->src[i]->ops->close(pl->src[i]);
    sink_hold_free(&pl->stash);
    free(pl->src);
    free(pl->wake);
    free(pl->pumped);
    buf_free(&pl->json);
    buf_free(&pl->key);
    event_free(&pl->ev);
    free(pl);
}

void pipeline_add_sink_for(struct pipeline *pl, struct sink *s, unsigned streams)
{
    if (pl->nsinks == MAX_SINKS) {
        log_error("msg=\"too many outputs\" max=%d", MAX_SINKS);
        sink_free(s);
        return;
    }
    s->streams = streams;
    pl->any_streams |= streams ? streams : SINK_ALL_STREAMS;
    pl->sinks[pl->nsinks++] = s;
}

void pipeline_add_sink(struct pipeline *pl, struct sink *s) { pipeline_add_sink_for(pl, s, SINK_ALL_STREAMS); }

const struct source_env *pipeline_env(struct pipeline *pl) { return &pl->env; }
size_t pipeline_nsources(const struct pipeline *pl) { return pl->nsrc; }
struct source *pipeline_source(const struct pipeline *pl, size_t i) { return pl->src[i]; }
const struct pipeline_stats *pipeline_stats(struct pipeline *pl) { return &pl->st; }

/* Lane n of s, created at start when new. */
static inline struct src_lane *lane_of(struct source *s, uint32_t n, int64_t start)
{
    if (__builtin_expect(n >= s->nlanes, 0)) {
        uint32_t nn = n + 1;
        s->lanes = xrealloc(s->lanes, nn * sizeof *s->lanes);
        for (uint32_t i = s->nlanes; i < nn; i++) {
            track_init(&s->lanes[i].tr, start);
            s->lanes[i].saved = -1;
        }
        s->nlanes = nn;
    }
    return &s->lanes[n];
}

/* Resuming mid-stream: feeds the saved header block to the new parser
 * (events dropped), so it knows the columns again. */
static void prime_parser(struct pipeline *pl, struct source *s)
{
    pl->priming = 1;
    const char *p = s->hdr.p, *end = s->hdr.p + s->hdr.len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        struct line_src src = { .host = pl->o.host, .path = s->path, .source = s->name, .now_ms = gl_now_ms() };
        parser_feed(s->parser, &src, p, n);
        p += n + 1;
    }
    pl->priming = 0;
}

void pipeline_add(struct pipeline *pl, struct source *s, const char *format)
{
    if (pl->nsrc == pl->capsrc) {
        pl->capsrc = pl->capsrc ? pl->capsrc * 2 : 8;
        pl->src = xrealloc(pl->src, pl->capsrc * sizeof *pl->src);
        pl->wake = xrealloc(pl->wake, pl->capsrc * sizeof *pl->wake);
        pl->pumped = xrealloc(pl->pumped, pl->capsrc * sizeof *pl->pumped);
    }
    s->idx = (int)pl->nsrc + 1;
    pl->wake[pl->nsrc] = 0;
    if (s->ops->pump || s->ops->pollfd) pl->pumped[pl->npumped++] = pl->nsrc;
    pl->src[pl->nsrc++] = s;
    const char *f = s->ops->format ? s->ops->format : format;
    if (strcmp(f, SRC_FORMAT_EVENTS)) s->parser = parser_new(parser_find(f), on_event, pl);
    lane_of(s, 0, s->start)->saved = s->saved_offset;
    if (s->start > 0 && s->hdr.len) {
        prime_parser(pl, s);
    } else if (s->start <= 0) {   /* from the start: the saved header block is not this stream's */
        buf_reset(&s->hdr);
        s->hdr_saved_hash = 0;
    }
}

struct source *pipeline_open(struct pipeline *pl, const char *kind, const char *arg, const char *format,
                             char *err, size_t errlen)
{
    const struct source_ops *ops = source_find(kind);
    if (!ops) { snprintf(err, errlen, "unknown source kind '%s'", kind); return NULL; }
    struct source *s = ops->open(arg, &pl->env, err, errlen);
    if (s) pipeline_add(pl, s, format);
    return s;
}

/* ---------------------------------------------------------------- reading */

/* Remembers the header block the parser declined (for a restart in the middle). */
static void note_header(struct source *s, const struct src_rec *r)
{
    size_t k = 0;
    while (k < r->len && (r->p[k] == ' ' || r->p[k] == '\t')) k++;
    if (k >= r->len) return;
    if (!s->hdr_open) { buf_reset(&s->hdr); s->hdr_open = 1; }
    if (s->hdr.len + r->len + 1 <= sizeof ((struct ckpt *)0)->hdr) {
        buf_append(&s->hdr, r->p, r->len);
        buf_putc(&s->hdr, '\n');
    }
}

/* A record that is an event already (SRC_FORMAT_EVENTS): decoded, not parsed. */
static void decode_event(struct pipeline *pl, struct source *s, const struct src_rec *r)
{
    char err[GL_ERRLEN];
    if (event_from_json(&pl->ev, r->p, r->len, err, sizeof err) == GL_OK) {
        pl->rec = r;
        on_event(pl, &pl->ev);
        pl->rec = NULL;
        if (s->ops->parsed) s->ops->parsed(s, r->ms);
    } else {
        rejected(pl, s, r->off, RJ_NOT_JSON, err);
    }
}

/* When a line was read (event.created): the clock is read for the first
 * line of each batch (source_read) and again every 64 lines, which a
 * collector parses and produces in well under a millisecond; a clock read
 * per line was 3 % of the collector's main thread. */
static int64_t read_now(struct pipeline *pl)
{
    if (pl->read_uses++ % 64 == 0) pl->read_ms = gl_now_ms();
    return pl->read_ms;
}

/* Parses one record of s held by lane entry seq. */
static void parse_record(struct pipeline *pl, struct source *s, const struct src_rec *r)
{
    struct line_src src = {
        .host = pl->o.host,
        .path = s->path,
        .source = s->name,
        .offset = r->off,
        .gen = r->gen,
        .lineno = s->lines,
        .now_ms = pl->o.fixed_now ? pl->o.fixed_now : (r->ms ? r->ms : read_now(pl)),
        .keep_original = pl->o.keep_original,
    };
    pl->cur = s;
    if (!s->parser) { decode_event(pl, s, r); return; }
    int pr = parser_feed(s->parser, &src, r->p, r->len);
    if (pr == GL_DECLINED) {
        s->declined++;
        note_header(s, r);
    } else {
        s->hdr_open = 0;
    }
    if (pr == GL_ERROR) rejected(pl, s, r->off, (enum reject_reason)s->parser->err_reason, s->parser->err);
    else if (pr == GL_OK && s->ops->parsed) s->ops->parsed(s, r->ms);
}

/* Feeds up to budget records of s to its parser. Returns records processed. */
static int source_read(struct pipeline *pl, struct source *s, int budget)
{
    int done = 0, tracked = s->ops->checkpoint != NULL;
    s->cur_seq = UINT64_MAX;
    pl->read_uses = 0;            /* a new batch: a fresh clock */
    while (done < budget && !pl->blocked && !pl->st.fatal &&
           (!tracked || track_pending(&s->lanes[s->cur_lane].tr) < MAX_PENDING_LINES)) {
        struct src_rec r;
        int st = s->ops->next(s, 0, &r);
        if (st == SRC_AGAIN || st == SRC_BUSY) { s->at_end = st == SRC_AGAIN; break; }
        if (st == SRC_MOVED) {
            track_reset(&lane_of(s, r.lane, r.off)->tr, r.off);
            s->force_save = 1;
            continue;
        }
        s->at_end = 0;
        done++;
        s->lines++;
        uint64_t seq = UINT64_MAX;
        if (tracked) {
            s->cur_lane = r.lane < SRC_MAX_LANES ? r.lane : 0;
            seq = track_push(&lane_of(s, s->cur_lane, r.off)->tr, r.end);
        }
        s->cur_seq = seq;
        if (st == SRC_TOOLONG) {
            char why[96];
            snprintf(why, sizeof why, "line longer than %zu bytes, skipped", pl->o.max_line);
            rejected(pl, s, r.off, RJ_TOO_LONG, why);
        } else {
            parse_record(pl, s, &r);
        }
        if (tracked) track_settle(&s->lanes[s->cur_lane].tr, seq);
        s->cur_seq = UINT64_MAX;
    }
    if (pl->o.metrics && done) metrics_add(M_LINES_READ, (uint64_t)done);   /* a batch at a time */
    return done;
}

/* ------------------------------------------------------------ checkpoints */

static void save_source(struct source *s, int force)
{
    int hdr_changed = hash64(s->hdr.p ? s->hdr.p : "", s->hdr.len, 1) != s->hdr_saved_hash;
    for (uint32_t i = 0; i < s->nlanes; i++) {
        struct src_lane *ln = &s->lanes[i];
        int changed = force || s->force_save || hdr_changed || ln->tr.committed != ln->saved;
        if (s->ops->checkpoint(s, i, ln->tr.committed, changed) == GL_OK) ln->saved = ln->tr.committed;
    }
}

/* Saves every source's positions; ready only while all of them are on disk. */
static void save_all(struct pipeline *pl, int force)
{
    int bad = 0;
    for (size_t i = 0; i < pl->nsrc; i++) {
        struct source *s = pl->src[i];
        if (!s->ops->checkpoint) continue;
        save_source(s, force);
        bad |= s->ckpt_bad;
    }
    if (pl->running && pl->o.state_dir) metrics_set_ready(!bad);
}

void pipeline_log_stats(struct pipeline *pl, long inflight)
{
    int64_t spooled = 0, backlog = 0;
    uint64_t lines = 0, rejected_n = 0, events = 0;
    for (size_t i = 0; i < pl->nsrc; i++) {
        struct source *s = pl->src[i];
        lines += s->lines; rejected_n += s->rejected; events += s->events;
        spooled += s->spool_bytes; backlog += s->spool_backlog;
    }
    long rss = rss_kb();
    if (rss > pl->st.peak_rss_kb) pl->st.peak_rss_kb = rss;
    log_info("msg=stats lines=%" PRIu64 " events=%" PRIu64 " rejected=%" PRIu64 " written=%" PRIu64
             " acked=%" PRIu64 " deadletter=%" PRIu64 " inflight=%ld stashed=%zu spool_bytes=%" PRId64
             " spool_backlog=%" PRId64 " rss_kb=%ld",
             lines, events, rejected_n, pl->st.written, pl->st.acked, pl->st.deadletter, inflight, pl->stash.n,
             spooled, backlog, rss);
}

/* -------------------------------------------------------------- main loop */

/* The end: every source read to its end and ended, nothing held; with no
 * source (a glob that matches nothing yet) only for --once. */
static int finished(struct pipeline *pl)
{
    if (pl->stash.n) return 0;
    if (!pl->nsrc) return pl->o.once;
    for (size_t i = 0; i < pl->nsrc; i++)
        if (!pl->src[i]->at_end || !pl->src[i]->ops->ended(pl->src[i])) return 0;
    return 1;
}

/* The spool budget: above it no input is pumped (backpressure). Returns 1
 * when the spools are full. */
static int spool_budget(struct pipeline *pl)
{
    if (!pl->o.spool_max) return 0;
    int64_t spooled = 0;
    for (size_t i = 0; i < pl->npumped; i++) spooled += pl->src[pl->pumped[i]]->spool_bytes;
    int full = spooled >= pl->o.spool_max;
    metrics_set(M_SPOOL_BYTES, spooled);
    if (full != pl->spool_full) {
        pl->spool_full = full;
        if (full) log_warn("msg=\"spool budget spent: not reading children/stdin until it drains\" spool_bytes=%" PRId64, spooled);
        else log_info("msg=\"spool below budget: reading again\"");
    }
    return full;
}

/* The fds of the sources to poll (none while the spools are full). */
struct pollset {
    struct pollfd *pfd;
    size_t *idx;                  /* source of each pfd */
    unsigned char *ready;         /* by source: its fd was readable */
    size_t cap;
};

static size_t pollset(struct pipeline *pl, struct pollset *ps)
{
    if (ps->cap < pl->nsrc) {
        ps->cap = pl->nsrc;
        ps->pfd = xrealloc(ps->pfd, ps->cap * sizeof *ps->pfd);
        ps->idx = xrealloc(ps->idx, ps->cap * sizeof *ps->idx);
        ps->ready = xrealloc(ps->ready, ps->cap);
    }
    if (pl->nsrc) memset(ps->ready, 0, pl->nsrc);
    if (spool_budget(pl)) return 0;
    size_t np = 0;
    for (size_t k = 0; k < pl->npumped; k++) {
        size_t i = pl->pumped[k];
        int fd = pl->src[i]->ops->pollfd ? pl->src[i]->ops->pollfd(pl->src[i]) : -1;
        if (fd < 0) continue;
        ps->pfd[np] = (struct pollfd){ .fd = fd, .events = POLLIN };
        ps->idx[np++] = i;
    }
    return np;
}

/* Polls every sink; the first one with documents out may wait up to
 * timeout ms (a file sink in front of Elasticsearch must not take the wait:
 * the loop would spin while Elasticsearch holds documents). Returns the
 * documents still unsettled. */
static long sinks_poll(struct pipeline *pl, int timeout)
{
    long n = 0;
    int waited = timeout <= 0;
    for (size_t i = 0; i < pl->nsinks; i++) {
        long u = sink_poll(pl->sinks[i], 0);
        if (u && !waited) {
            u = sink_poll(pl->sinks[i], timeout);
            waited = 1;
        }
        n += u;
    }
    /* the acknowledgements the polls settled, added at once (an atomic
     * add per event was 3 % of the collector's main thread) */
    if (pl->st.acked != pl->acked_counted) {
        metrics_add(M_EVENTS_PRODUCED, pl->st.acked - pl->acked_counted);
        pl->acked_counted = pl->st.acked;
    }
    return n;
}

static void sinks_check(struct pipeline *pl)
{
    for (size_t i = 0; i < pl->nsinks && !pl->st.fatal; i++)
        if (pl->sinks[i]->errstr[0]) sink_failed(pl, pl->sinks[i]);
}

/* Waits for input (up to timeout ms when idle) and pumps every source. */
static long wait_and_pump(struct pipeline *pl, int timeout, struct pollset *ps)
{
    size_t np = pollset(pl, ps);
    long inflight;
    if (np) {
        if (poll(ps->pfd, np, timeout) > 0)
            for (size_t i = 0; i < np; i++)
                if (ps->pfd[i].revents) ps->ready[ps->idx[i]] = 1;
        inflight = sinks_poll(pl, 0);
    } else {
        int64_t t0 = gl_now_ms();
        inflight = sinks_poll(pl, timeout);
        /* a file sink returns at once: idle tailing must still sleep. Not
         * when blocked on a full producer queue: Kafka's poll returned early
         * because acknowledgements freed room, so read on at once */
        int64_t spent = gl_now_ms() - t0;
        if (timeout > 0 && spent < timeout && !pl->blocked) poll(NULL, 0, (int)(timeout - spent));
    }
    for (size_t k = 0; k < pl->npumped; k++) {
        size_t i = pl->pumped[k];
        if (pl->src[i]->ops->pump) pl->src[i]->ops->pump(pl->src[i], ps->ready[i], !pl->spool_full && !pl->blocked);
    }
    return inflight;
}

/* Once a second: sources' housekeeping, checkpoints, the owner's tick,
 * freed buffers handed back after a burst. */
static void tick(struct pipeline *pl, long inflight, unsigned *ticks)
{
    for (size_t i = 0; i < pl->nsrc; i++)
        if (pl->src[i]->ops->tick) pl->src[i]->ops->tick(pl->src[i]);
    save_all(pl, 0);
    if (pl->o.tick) pl->o.tick(pl->o.ctx);
    long rss = rss_kb();
    if (rss > pl->st.peak_rss_kb) pl->st.peak_rss_kb = rss;
    /* a sidecar's steady-state footprint should not keep its peak */
    if (++*ticks % 10 == 0 && inflight < 1000) malloc_trim(0);
}

void pipeline_run(struct pipeline *pl)
{
    int64_t last_tick = 0, last_stats = gl_now_ms();
    unsigned ticks = 0;
    int progress = 1;
    long inflight = 0;
    struct pollset ps = { 0 };
    pl->running = 1;
    if (pl->o.state_dir) metrics_set_ready(1);
    while (!stop_flag && !pl->st.fatal) {
        int64_t now = gl_now_ms();
        if (hup_flag) {
            hup_flag = 0;
            if (pl->o.reload) pl->o.reload(pl->o.ctx);
        }
        inflight = wait_and_pump(pl, progress ? 0 : 50, &ps);
        pl->env.now_ms = gl_now_ms();   /* one clock read per turn, not one per idle source */
        source_kinds_turn(pl->env.now_ms);   /* change reports wake sleeping sources (env_wake) */
        progress = 0;
        if (stash_flush(pl)) pl->blocked = 0;
        if (!pl->blocked)
            for (size_t i = 0; i < pl->nsrc; i++) {
                /* a source asleep at its end is not touched (thousands of idle files) */
                if (pl->wake[i] > pl->env.now_ms) continue;
                struct source *s = pl->src[i];
                s->idle_until = 0;
                progress += source_read(pl, s, 4096);
                pl->wake[i] = s->idle_until;
            }
        inflight = sinks_poll(pl, 0);
        sinks_check(pl);
        if (pl->blocked) progress = 0;
        if (now - last_tick >= 1000) { last_tick = now; tick(pl, inflight, &ticks); }
        if (pl->o.stats_ms && now - last_stats >= pl->o.stats_ms) {
            last_stats = now;
            pipeline_log_stats(pl, inflight);
        }
        if (finished(pl)) break;
    }
    free(ps.pfd);
    free(ps.idx);
    free(ps.ready);
}

long pipeline_drain(struct pipeline *pl, int timeout_ms)
{
    int64_t deadline = gl_now_ms() + timeout_ms;
    long left;
    for (;;) {
        if (!pl->st.fatal && stash_flush(pl)) pl->blocked = 0;
        left = (pl->nsinks ? sinks_poll(pl, 20) : 0) + (long)pl->stash.n;
        sinks_check(pl);
        if (left == 0 || pl->st.fatal || gl_now_ms() >= deadline) return left;
    }
}

/* The stats of the sources summed into pl->st. */
static void sum_sources(struct pipeline *pl)
{
    pl->st.lines = pl->st.events = pl->st.rejected = pl->st.declined = pl->st.losses = pl->st.ckpt_failures = 0;
    for (size_t i = 0; i < pl->nsrc; i++) {
        struct source *s = pl->src[i];
        pl->st.lines += s->lines;
        pl->st.events += s->events;
        pl->st.rejected += s->rejected;
        pl->st.declined += s->declined;
        pl->st.losses += s->losses;
        pl->st.ckpt_failures += s->ckpt_failures;
        if (s->failed) pl->st.source_failed = 1;
    }
}

long pipeline_finish(struct pipeline *pl)
{
    pl->running = 0;
    if (pl->o.state_dir) metrics_set_ready(0);
    for (size_t i = 0; i < pl->nsrc; i++)
        if (pl->src[i]->ops->stop) pl->src[i]->ops->stop(pl->src[i]);
    for (size_t i = 0; i < pl->nsrc; i++) {
        /* pending multi-line events; their lines are already settled, so a
         * crash right here could lose them (documented limit) */
        pl->cur = pl->src[i];
        pl->cur->cur_seq = UINT64_MAX;
        if (pl->src[i]->parser) parser_flush(pl->src[i]->parser);
    }
    pl->cur = NULL;
    if (pl->o.flush) pl->o.flush(pl->o.ctx);
    int unlimited = pl->o.once && !stop_flag && !pl->o.once_ms;
    int64_t deadline = gl_now_ms() + (pl->o.once && !stop_flag && pl->o.once_ms ? pl->o.once_ms : pl->o.shutdown_ms);
    long left = 0;
    int64_t last_tick = gl_now_ms();
    for (;;) {
        if (!pl->st.fatal && stash_flush(pl)) pl->blocked = 0;
        left = (pl->nsinks ? sinks_poll(pl, 100) : 0) + (long)pl->stash.n;
        sinks_check(pl);
        if (left == 0 || pl->st.fatal) break;
        if (stop_flag && unlimited) { unlimited = 0; deadline = gl_now_ms() + pl->o.shutdown_ms; }
        if (!unlimited && gl_now_ms() >= deadline) break;
        if (gl_now_ms() - last_tick >= 1000) { last_tick = gl_now_ms(); save_all(pl, 0); }
        if (pl->o.stats_ms && gl_now_ms() % pl->o.stats_ms < 100) pipeline_log_stats(pl, left);
    }
    save_all(pl, 1);
    sum_sources(pl);
    if (left) log_warn("msg=\"stopping with unacknowledged messages: they are re-read from the checkpoint on the next start\" unacked=%ld", left);
    return left;
}
