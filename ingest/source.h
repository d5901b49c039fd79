/*
 * source.h - the source interface: where the lines (or records) of the
 * pipeline come from. One struct of callbacks per kind (file/tail, exec,
 * stdin, kmsg, the Kafka consumer, a plain fd for `parse`), found by name in
 * one table (source_find); the loop that drives them is pipeline.h.
 *
 * A source hands out records in order, each with its position: a lane (an
 * independently ordered stream inside the source: 0, or a Kafka partition's
 * slot) and the byte (or message) range [off, end) it came from. The loop
 * counts what each record became (events written to sinks), and when every
 * one of them was settled it advances the lane's committed position over
 * the contiguous settled prefix and calls checkpoint() with it: a position
 * is never saved on a mere enqueue, so after a crash a source resumes where
 * nothing unacknowledged lies before it (at-least-once, same event.id).
 *
 * Delivery model and the parts implementations are made of: parts.h.
 * Ownership: open() returns a source the loop owns and closes with
 * ops->close; records are borrowed until the next call of next().
 *
 * Adding a source: one file ingest/src_NAME.c with a `const struct
 * source_ops src_NAME` and one row in the table of source_find
 * (ingest/registry.c); see docs/architecture.md.
 */
#ifndef GPULOG_SOURCE_H
#define GPULOG_SOURCE_H

#include "../core/common.h"
#include "parts.h"

/* One line or record with its position (borrowed until the next call). */
struct src_rec {
    const char *p;
    size_t len;
    int64_t off, end;         /* its range in the lane's stream (Kafka: offset, offset + 1) */
    int64_t ms;               /* when it was read (epoch ms; 0 = now) */
    uint32_t lane;            /* 0, or the slot of a Kafka partition (< SRC_MAX_LANES) */
    uint64_t gen;             /* generation for event.id (files: tail_gen), else 0 */
};
#define SRC_MAX_LANES 4096

/* What next() says. */
enum src_status {
    SRC_REC = 0,              /* *r is a record */
    SRC_AGAIN,                /* nothing now: caught up (the loop may wait, --once may end) */
    SRC_BUSY,                 /* nothing now, but not at the end: e.g. a rotated file read to
                               * its end waits for its acknowledgements before the next one */
    SRC_TOOLONG,              /* a line over max_line was skipped: r->off, end, lane set */
    SRC_MOVED,                /* lane r->lane starts over at r->off (another file, a partition
                               * assigned again): the loop resets its tracker and saves soon */
};

struct source;
struct ksrc_source_opts;

/* What every source is opened with (borrowed for the source's life). */
struct source_env {
    const char *state_dir;    /* checkpoints and spools; NULL = nothing is saved (parse) */
    size_t max_line;
    int once;                 /* --once: read what is there, then the end */
    int64_t stale_ms;         /* exec: staleness limit override, 0 = from the command's period */
    const struct tail_opts *tail;   /* file: rotation chain bounds (NULL = defaults) */
    /* the loop's hooks: a health event (source-restarted, source-stale,
     * source-data-lost; file/off name a place in a file, or NULL/-1) and a
     * line rejected before parsing (a line over max_line in a spooled source) */
    void *ctx;
    void (*health)(void *ctx, struct source *s, const char *action, const char *file, int64_t off, const char *msg);
    void (*rejected)(void *ctx, struct source *s, int64_t off, const char *why);
    /* a lane is taken away (a Kafka partition revoked), from inside next():
     * drain settles what was written for up to timeout_ms (returns what is
     * still unsettled), so that the source can save the lane's position
     * (s->lanes[lane].tr.committed) before it lets go; revoked then tells
     * the stage to forget the lane's state. A lane given back later starts
     * with SRC_MOVED. */
    long (*drain)(void *ctx, int timeout_ms);
    void (*revoked)(void *ctx, struct source *s, uint32_t lane);
    const struct ksrc_source_opts *kafka;   /* the Kafka consumer's settings (kafka_src.h); NULL = none */
    int64_t now_ms;           /* the loop's clock of this turn (0: none, read the clock) */
    /* a source that set idle_until is read again (its next() called) now,
     * not at idle_until: something changed (may be NULL outside the loop) */
    void (*wake)(void *ctx, struct source *s);
};

/* The format of sources whose records are schema-v1 events as JSON (the
 * Kafka consumer): the loop decodes them (event_from_json), no parser. */
#define SRC_FORMAT_EVENTS "events"

struct source_ops {
    const char *name;         /* "file", "exec", "stdin", "kmsg", "fd", "kafka" */
    const char *format;       /* the parser this kind always uses ("kmsg"); NULL = the configured one */
    /* Opens what arg names (path, command line, device; may be NULL),
     * resuming from its checkpoint under env->state_dir. NULL with the
     * reason in err. */
    struct source *(*open)(const char *arg, const struct source_env *env, char *err, size_t errlen);
    /* The next record, waiting at most timeout_ms for one (0: do not wait). */
    int (*next)(struct source *s, int timeout_ms, struct src_rec *r);
    /* Saves position committed of lane (everything before it settled) with
     * s->hdr; changed: something moved since the last save (the source may
     * save anyway, e.g. a kernel sequence number). GL_OK (saved), GL_DONE
     * (nothing to save now, or a lane the source no longer owns) or
     * GL_ERROR (s->ckpt_bad set, said once per streak). NULL: positions
     * are not kept (the loop tracks nothing). */
    int (*checkpoint)(struct source *s, uint32_t lane, int64_t committed, int changed);
    /* No more input will come (end of stdin, --once and the command or the
     * file is done, nothing spooled left): with every source ended and every
     * record settled the loop stops. */
    int (*ended)(struct source *s);
    void (*close)(struct source *s);
    /* optional (NULL = nothing to do): */
    int (*pollfd)(struct source *s);                  /* an fd that is readable when input waits; -1 none */
    void (*pump)(struct source *s, int readable, int keeping_up);  /* each loop turn, also while the sinks are
                                                                    * full (keeping_up 0: next is not called;
                                                                    * a consumer pauses and keeps polling):
                                                                    * input into the spool, children supervised */
    void (*tick)(struct source *s);                   /* about once a second */
    void (*parsed)(struct source *s, int64_t ms);     /* a record gave events (staleness) */
    void (*stop)(struct source *s);                   /* shutdown: stop children, take no more input */
    void (*turn)(int64_t now_ms);                     /* per kind, once a loop turn while any source of the
                                                       * kind may be open (file: change reports) */
};

/* The loop's state of one lane: its tracker and the position last saved. */
struct src_lane {
    struct track tr;
    int64_t saved;
};

/* The part every implementation starts with (struct src_file { struct
 * source base; ... }). Fields marked "loop" belong to pipeline.c. */
struct source {
    const struct source_ops *ops;
    char *name;               /* path, command line, "-", "kmsg", topics (owned) */
    const char *path;         /* log.file.path of its events (files), else NULL */
    const struct source_env *env;
    int64_t start;            /* lane 0 starts here (from the checkpoint) */
    int64_t spool_bytes, spool_backlog;   /* spooled sources: kept current by next/pump */
    int failed;               /* --once: the command failed to start or failed */
    /* the saved state (ingest/src_ckpt.c) */
    char *ckpt_file;
    int64_t saved_offset;     /* in the last checkpoint written (-1 = none) */
    uint64_t hdr_saved_hash;  /* of the header block in it */
    int force_save;           /* save at the next chance (SRC_MOVED) */
    int ckpt_bad;             /* the last write failed */
    uint64_t ckpt_failures;
    struct buf hdr;           /* the last header block the parser declined (loop; loaded from the checkpoint) */
    const char *label;        /* name in messages when not name ("<stdin>"); NULL = name */
    uint64_t losses;          /* files: generations (or parts) never read */
    /* loop */
    int idx;                  /* 1-based: high bits of settle tokens */
    struct parser *parser;
    struct src_lane *lanes;   /* by lane, grown on demand */
    uint32_t nlanes;
    uint64_t cur_seq;
    uint32_t cur_lane;
    int at_end, hdr_open;
    uint64_t lines, events, rejected, declined;
    /* next() returning SRC_AGAIN may set this: nothing can be read before
     * that time (epoch ms) unless env->wake is called for the source, so
     * the loop does not call next() until then (reset to 0 before each
     * read) */
    int64_t idle_until;
};

/* The registry: the source kind called name, or NULL. */
const struct source_ops *source_find(const char *name);
/* Calls every kind's turn hook (once a loop turn). */
void source_kinds_turn(int64_t now_ms);
extern const struct source_ops src_file;

/* The --file patterns (src_file.c): which paths become file sources of a
 * pipeline. Patterns are borrowed; a glob is matched again at each run. */
struct pipeline;
struct file_scan;
struct file_scan *file_scan_new(void);
void file_scan_free(struct file_scan *fs);
void file_scan_add(struct file_scan *fs, char *pattern, const char *format);
size_t file_scan_count(const struct file_scan *fs);
/* Opens a file source for every path the patterns name now and not yet
 * followed (at the start and every second: a glob runs again only when
 * its directory changed, or every 30 s; file_scan_rescan runs every glob:
 * SIGHUP). */
void file_scan_run(struct file_scan *fs, struct pipeline *pl);
void file_scan_rescan(struct file_scan *fs, struct pipeline *pl);
/* --once: a named path was not a regular file, or a glob matched none. */
int file_scan_failed(const struct file_scan *fs);

/* Helpers for implementations (ingest/src_ckpt.c). Fills the common part
 * (name copied, ckpt_file from kind and name when env->state_dir is set). */
void source_init(struct source *s, const struct source_ops *ops, const char *name, const struct source_env *env);
/* Frees what source_init and the loop allocated in the common part. */
void source_fini(struct source *s);
/* Loads s's checkpoint into *ck (zeroed when there is none or it is
 * unreadable, which is logged); sets s->start, s->saved_offset and s->hdr.
 * Returns 1 when there was one. */
int source_ckpt_load(struct source *s, struct ckpt *ck);
/* Writes *ck (offset and header block filled here from committed and
 * s->hdr); keeps the streak state. GL_OK or GL_ERROR. */
int source_ckpt_save(struct source *s, struct ckpt *ck, int64_t committed);
/* A line of a part's reader (RL_LINE or RL_TOOLONG in st) as a record of
 * lane 0 (borrows l->p): returns SRC_REC or SRC_TOOLONG. */
static inline int source_rec(struct src_rec *r, const struct rline *l, int st, uint64_t gen)
{
    *r = (struct src_rec){ .p = l->p, .len = l->len, .off = l->off, .end = l->end, .ms = l->ms, .lane = 0, .gen = gen };
    return st == RL_LINE ? SRC_REC : SRC_TOOLONG;
}
/* The spool directory of s: STATE/spool-KIND-HASH (caller frees). */
char *source_spool_dir(const struct source *s);

#endif
