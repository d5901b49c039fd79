/*
 * parts.h - the parts the ingest sources are built from (ingest/):
 * checkpoints, the per-lane offset tracker, file tailing, the on-disk
 * spool, supervised children and /dev/kmsg records. The interface that
 * joins them to the pipeline is source.h; pipeline.h is the loop.
 *
 * Delivery model: every line has a byte offset in something that can be read
 * again after a crash: the tailed file itself, or, for sources that cannot be
 * re-read (--exec children, stdin, /dev/kmsg), an append-only spool file in
 * the state directory that every line is written to before it is parsed.
 * A source's checkpoint is the offset up to which every line's events were
 * settled by the sink (acknowledged by the broker); it never moves on a mere
 * enqueue. After a crash, reading resumes at the checkpoint, so only lines
 * that were sent but not acknowledged are sent again, with the same event.id.
 *
 * Ownership: each constructor returns an object the caller frees with the
 * matching _free; lines returned by readers are borrowed until the next call.
 */
#ifndef GPULOG_INGEST_PARTS_H
#define GPULOG_INGEST_PARTS_H

#include "../core/common.h"

#include <sys/types.h>

/* ------------------------------------------------------------ checkpoints */

/* The identity of one generation of a tailed path (a file the path named
 * once): device and inode, and the fingerprint of its first fp_len bytes
 * (copies made by copytruncate keep the fingerprint, not the inode). end:
 * for a finished generation, the offset up to which it was read. */
struct gen_id {
    uint64_t dev, ino;
    char fp[33];
    uint32_t fp_len;
    int64_t end;
    uint32_t flags;           /* GEN_TRUNCATED: it was truncated under us, so a rotated
                               * file with its fingerprint is a copy of it (copytruncate);
                               * otherwise only its inode names it (identical content in
                               * another file is another generation) */
};
#define GEN_TRUNCATED 1u
#define CKPT_DONE_MAX 4       /* finished generations remembered */
#define CKPT_SEEN_MAX 64      /* generations seen at the path, not yet read */

/* What is stored per source (text file, key=value lines). */
struct ckpt {
    uint64_t dev, ino;        /* file identity (files only) */
    char fp[33];              /* hash of the first fp_len bytes after '#' headers */
    uint32_t fp_len;          /* 0..256; 0 = no content yet */
    int64_t offset;           /* every line before this offset is settled */
    uint64_t gen;             /* files: the path's generation (tail_gen); in event.id */
    uint64_t kmsg_seq;        /* /dev/kmsg: last sequence number spooled (+1); 0 = none */
    char boot_id[40];         /* /dev/kmsg: boot the sequence belongs to */
    /* the last header block the parser saw (lines it declined, e.g. the two
     * "# gpu pwr ..." lines of dmon): fed to a new parser before resuming
     * mid-stream, so the columns are known */
    char hdr[4096];
    uint32_t hdr_len;
    /* files: the rotation chain (see tail_new) */
    int64_t floor_ns;         /* mtime of the generation being read: later ones are not older */
    int64_t size;             /* its size when last looked at (the extent of a loss) */
    int finished;             /* it was a rotated generation (no more lines will come) */
    uint32_t ndone, nseen;
    struct gen_id done[CKPT_DONE_MAX];   /* oldest first */
    struct gen_id seen[CKPT_SEEN_MAX];   /* oldest first */
};

/* Path of the checkpoint file of a source in dir: dir/ckpt-KIND-HASH (caller frees). */
char *ckpt_path(const char *dir, const char *kind, const char *source);
/* Loads a checkpoint. GL_OK, GL_DONE if the file does not exist, GL_ERROR
 * (unreadable or malformed; reason in err). */
int ckpt_load(const char *path, struct ckpt *c, char *err, size_t errlen);
/* Writes a checkpoint atomically: temp file, fsync, rename, fsync of the dir. */
int ckpt_save(const char *path, const struct ckpt *c, char *err, size_t errlen);
/* Writes len bytes to a new file atomically (same steps as ckpt_save). */
int atomic_write_file(const char *path, const char *data, size_t len, char *err, size_t errlen);

/* File fingerprint: skips complete leading lines that start with '#', then
 * hashes up to 256 bytes. Reads through fd with pread (fd borrowed). If
 * want_len > 0 hashes exactly that many bytes (fails if fewer exist).
 * Returns GL_OK, or GL_ERROR on a read error or too little data. */
int file_fingerprint(int fd, uint32_t want_len, char fp[33], uint32_t *fp_len);
/* The same over the first len bytes of a file in head (at most FP_HEAD_MAX
 * are looked at). Pure. */
#define FP_HEAD_MAX (4096 + 256)
int fingerprint_buf(const char *head, size_t len, uint32_t want_len, char fp[33], uint32_t *fp_len);

/* -------------------------------------------------------- offset tracker */

/*
 * Per-source ordered list of (line end offset, outstanding events). A line
 * is pushed before it is parsed with one hold; every event written for it
 * adds one; settle removes one. The committed offset advances over the
 * contiguous prefix of lines with nothing outstanding.
 */
struct track_ent { int64_t end; uint32_t out; };
struct track {
    struct track_ent *e;
    size_t cap, head, n;      /* ring: cap is a power of two */
    uint64_t head_seq;        /* sequence number of e[head] */
    int64_t committed;
};
void track_init(struct track *t, int64_t start);
void track_free(struct track *t);
/* Starts over at offset start; settles of entries pushed before are ignored. */
void track_reset(struct track *t, int64_t start);
/* Pushes a line ending at end with one hold; returns its sequence number. */
uint64_t track_push(struct track *t, int64_t end);
/* Adds one outstanding event to line seq. */
void track_hold(struct track *t, uint64_t seq);
/* Removes one outstanding event (or the reader's hold) from line seq and
 * advances the committed offset. Unknown sequence numbers are ignored. */
void track_settle(struct track *t, uint64_t seq);
static inline size_t track_pending(const struct track *t) { return t->n; }

/* ------------------------------------------------------------ line reader */

/* A line with its position. ms: when it was read (0 = now). */
struct rline {
    const char *p;
    size_t len;
    int64_t off, end;
    int64_t ms;
};

enum { RL_LINE = 0, RL_AGAIN, RL_TOOLONG, RL_EOF, RL_IOERR };

/* Splits a regular file into lines without consuming a trailing partial
 * line (the writer may still be writing it) unless asked to. Line breaks
 * are LF or CRLF; a file with CR-only line breaks (a CR followed by more
 * data and no LF seen so far) is split at its CRs. */
struct lbuf {
    char *buf;
    size_t cap, start, end;
    size_t max_line;
    int skipping;
    int seen_lf, cr_only;     /* line breaks of this file: LF (CRLF) or, while no LF was seen, lone CRs */
    int64_t pos;              /* file offset of buf[start] */
};
void lbuf_init(struct lbuf *b, int64_t pos, size_t max_line);
void lbuf_free(struct lbuf *b);
void lbuf_reset(struct lbuf *b, int64_t pos);
/* Gives the buffer back (an idle file without a descriptor): what was read
 * past pos is read again; the line-break kind seen so far is kept. Not
 * while an over-long line is being skipped. */
void lbuf_release(struct lbuf *b);
/* Next line from fd (read at the current position with pread). final = 1
 * returns a trailing partial line too. Returns RL_LINE, RL_TOOLONG (line
 * skipped; off/end set), RL_AGAIN (no complete line), RL_IOERR. */
int lbuf_next(struct lbuf *b, int fd, int final, struct rline *l);

/* ------------------------------------------------------------- file tail */

/* 1 if name is base, then '.', '-' or '_', then a rotation suffix: a number
 * or a date (logrotate's NAME.1, NAME-20250101, NAME.2025-01-01), optionally
 * followed by a compression extension (then *compressed is set when given).
 * These are the names tail.c reads as older generations of base, and the
 * names collect's --file globs skip. Pure. */
int rotated_name_of(const char *name, const char *base, int *compressed);
/* 1 if name ends in a compression extension (.gz .xz .zst .bz2 .lz4 .zip). */
int compressed_name(const char *name);

/* How far back the rotation chain is followed. */
struct tail_opts {
    size_t max_line;          /* 0 = 1 MiB */
    int max_gens;             /* rotated generations read after the current one; 0 = 64 */
    int64_t max_age_ms;       /* rotated generations older than this are not read; 0 = 7 days */
};

/* A generation that was not (wholly) read: the byte range [from, to) of the
 * file with that identity never reached the sink. to = -1: the end is not
 * known (the file is gone); more: at least that range (the file may have
 * grown after it was last looked at). reason: a static string, one of "deleted",
 * "compressed", "truncated", "too_old", "too_many". lines: lines in the
 * range when they could still be counted, else -1. */
struct tail_loss {
    const char *reason;
    char name[512];           /* where the data was last seen */
    uint64_t dev, ino, gen;
    char fp[33];
    int64_t from, to, lines;
    int more;                 /* the file may have grown past to before it went */
};

struct tail;
/* Follows path (tail -F) through its whole rotation chain. Without resume
 * reading starts at the start of the file at path. With resume (a
 * checkpoint), reading starts at resume->offset of the checkpointed file,
 * wherever it is now: at path, or renamed to a rotated name (path.N,
 * path-DATE, ...), or a copytruncate copy (same fingerprint). When a
 * generation is finished (it was rotated away or truncated, read to its
 * end, and everything read was settled, see tail_check), reading goes on
 * with the oldest generation not read yet: rotated files not older than
 * the one just finished (by mtime) that are not a finished one (identity,
 * fingerprint), or that were seen at the path while we were behind, oldest
 * first, each to its end, then the file at path. Generations gone before
 * they were finished are reported through tail_take_loss. o may be NULL. */
struct tail *tail_new(const char *path, const struct ckpt *resume, const struct tail_opts *o);
void tail_free(struct tail *t);
/* Next line; final = 1 at the end of --once (returns a partial last line). */
int tail_next(struct tail *t, int final, struct rline *l);
/* Called when tail_next said RL_AGAIN: checks the path for rotation,
 * truncation or appearance. pending_zero: the tracker has nothing pending
 * (a switch to another file happens only then). Returns 1 when reading
 * switched to another file starting at *new_start (the caller resets its
 * tracker), else 0. */
int tail_check(struct tail *t, int pending_zero, int64_t *new_start);
/* Called about once a second whatever the reader is doing: notes the file
 * at path when it is not the one being read (a generation to read later),
 * so that its loss is seen if it disappears before we get to it. */
void tail_watch(struct tail *t);
/* 1 while reading is behind the file at path (a rotated or truncated
 * generation is being finished, or the tail waits for a descriptor):
 * --once must not stop here. */
int tail_behind(const struct tail *t);
/* Pops one loss record into *out; 1 if there was one. */
int tail_take_loss(struct tail *t, struct tail_loss *out);
/* Fills the identity and chain fields of c (dev, ino, fp, gen, floor_ns,
 * size, done, seen) for the file being read. */
void tail_identity(struct tail *t, struct ckpt *c);
/* 1 while a file is open (or parked: known, its descriptor given back). */
int tail_is_open(const struct tail *t);
/* 1 when the file being read is (dev, ino): two names of one file (a symlink,
 * a hard link) are one source. */
int tail_reads(const struct tail *t, uint64_t dev, uint64_t ino);
/* Generation of the file being read: 0 for the first file the path named
 * (or resume->gen), +1 each time reading moves on to another file (after a
 * rotation, a truncation, a file that replaced the checkpointed one). Lines
 * of a rotated copy keep the generation of the file they were read from. */
uint64_t tail_gen(const struct tail *t);
/* Offset of the next line to be returned (where a tracker starts). */
int64_t tail_offset(const struct tail *t);
const char *tail_path(const struct tail *t);
/* Opens path for reading if it is a regular file (O_NONBLOCK: a FIFO never
 * blocks), else -1 (errno EINVAL for another kind). The caller owns the
 * fd; st (may be NULL) gets its fstat. */
struct stat;
int tail_open_regular(const char *path, struct stat *st);
/* The file being read (or parked): 1 with its device and inode, else 0. */
int tail_file_id(const struct tail *t, uint64_t *dev, uint64_t *ino);
/* The generations read to their end, oldest first (*n of them; borrowed
 * until the next call on t). */
const struct gen_id *tail_done_list(const struct tail *t, uint32_t *n);
/* 1 while t wants a file descriptor and none is free (see below). */
int tail_waiting(const struct tail *t);
/* 1 when nothing changed since the last tail_check found nothing to do
 * (or since the tail was parked): the path names the same file, of the
 * same size and modification time. A fstat and a stat, nothing read. */
int tail_unchanged(const struct tail *t);
/* A quiet tail gives its read buffer back (a file asleep at its end). */
void tail_trim(struct tail *t);
/* The next tail_check looks at the path at once (a change was reported). */
void tail_poke(struct tail *t);
/* The path of the file being read as the kernel names it (a symlink's
 * target, a rotated name) into out; 0 when no file is open or unknown. */
int tail_real_path(const struct tail *t, char *out, size_t cap);

/* The descriptor budget of every tail of the process: at most this many
 * followed files hold a descriptor (RLIMIT_NOFILE less a reserve: 256, or
 * half of a limit under 512). A file read to its end with nothing changed
 * since gives its descriptor back when another file needs one (the least
 * recently active first): its identity and offset are kept, and it is
 * opened again when its path shows a change (size, time, another file);
 * rotated while closed, it is found where it went like a checkpoint is.
 * A file that finds no descriptor free waits (tail_behind: --once does not
 * end) and is counted (gpulog_files_waiting_descriptor, gpulog_descriptor_
 * waits_total) and said as an error; it is never skipped. */
size_t tail_fd_budget(void);
void tail_set_fd_budget(size_t n);   /* 0: from RLIMIT_NOFILE again (tests) */
size_t tail_fds_open(void);
/* Parks the least recently active idle tail (out of descriptors
 * elsewhere: EMFILE); 1 if one gave its descriptor back. */
int tail_release_one(void);
size_t tail_fds_waiting(void);

/* ------------------------------------------------------------------ spool */

/*
 * Append-only spool of one source: segment files DIR/NNNNNNNNNNNNNNNNNNNN.seg
 * named by the logical offset of their first byte. Records are
 * "MS<space>LINE\n" (MS = read time, epoch ms). Offsets are logical and
 * never reused, so event ids stay unique across restarts.
 */
struct spool;
/* Opens (creating) the spool in dir; reading starts at logical offset start. */
struct spool *spool_open(const char *dir, int64_t start, size_t max_line, char *err, size_t errlen);
void spool_free(struct spool *s);
/* Buffers one record; spool_flush writes buffered records (called often). */
void spool_append(struct spool *s, int64_t ms, const char *line, size_t len);
int spool_flush(struct spool *s);
/* fsyncs the active segment if written since the last sync. */
int spool_sync(struct spool *s);
/* Next record (l->ms set, l->p is the line without its time). */
int spool_next(struct spool *s, struct rline *l);
/* Deletes segments that lie entirely before the committed offset. */
void spool_release(struct spool *s, int64_t committed);
/* Bytes in this spool's segment files, and not yet read. */
int64_t spool_bytes(const struct spool *s);
int64_t spool_backlog(const struct spool *s);

/* -------------------------------------------------------------- producers */

/*
 * A producer feeds a spool with lines that cannot be read again: a
 * supervised command (--exec), standard input, or the kernel log. The owner
 * polls producer_fd(), calls producer_read when it is readable and
 * producer_supervise every loop turn; the lines then come out of the spool
 * (spool_next) to be parsed, like a file's.
 */
enum producer_kind { PRODUCER_EXEC, PRODUCER_STDIN, PRODUCER_KMSG };

/* What a producer tells its owner (callbacks borrowed for the producer's life). */
struct producer_hooks {
    void *ctx;
    /* a health event: action "source-restarted" or "source-stale", msg in words */
    void (*health)(void *ctx, const char *action, const char *msg);
    /* a line longer than max_line was skipped (off: its offset in the stream) */
    void (*too_long)(void *ctx, int64_t off);
};

struct producer_opts {
    enum producer_kind kind;
    const char *name;            /* the command line, "-" or "kmsg" (copied) */
    char **argv;                 /* exec: the command, owned by the producer from now on */
    const char *kmsg_path;       /* kmsg: the device, or a file of records */
    uint64_t kmsg_seq;           /* kmsg: resume after this sequence number ... */
    const char *kmsg_boot_id;    /* ... if the checkpoint was written in this boot */
    size_t max_line;
    int once;                    /* --once: a command runs once, end of input is the end */
    int64_t stale_ms;            /* exec: restart after this long without a usable line; 0 = auto */
};

struct producer;
/* Starts nothing yet (a command starts at the first producer_supervise);
 * opens stdin or the kernel log. sp is borrowed and must outlive the
 * producer. Returns NULL with the reason in err (kernel log not readable).
 * The caller frees the producer with producer_free (which kills a child). */
struct producer *producer_new(const struct producer_opts *o, struct spool *sp, const struct producer_hooks *h,
                              char *err, size_t errlen);
void producer_free(struct producer *p);
/* The fd to poll for input; -1 when none is open. */
int producer_fd(const struct producer *p);
/* Moves what the input has into the spool (buffered: spool_flush). */
void producer_read(struct producer *p);
/* exec: reaps an ended child and restarts it with backoff (1 s .. 30 s),
 * kills one that gave no usable line for stale_ms while keeping_up (the
 * pipeline is not blocked and the spool is read). No-op for other kinds. */
void producer_supervise(struct producer *p, int keeping_up);
/* A line of this producer was parsed into events at ms (for staleness). */
void producer_useful(struct producer *p, int64_t ms);
/* No more input will come: end of stdin or of a file of kernel records,
 * or --once and the command ended; nothing is open or running. */
int producer_done(const struct producer *p);
/* --once: the command could not start, or ended with a failure. */
int producer_failed(const struct producer *p);
/* Stops a running command: SIGTERM to its process group, SIGKILL after 2 s. */
void producer_stop(struct producer *p);
/* kmsg: the next sequence number to spool and the boot it belongs to. */
uint64_t producer_kmsg_seq(const struct producer *p, char boot_id[40]);

/* -------------------------------------------------------- exec and kmsg */

/* Splits a command line into argv without a shell: whitespace separates,
 * single and double quotes group, backslash escapes. Returns a NULL-terminated
 * array (free with argv_free), or NULL on an unbalanced quote. */
char **argv_split(const char *cmd);
void argv_free(char **argv);
/* The sample period in ms a command asks for (-d N, -l N, --loop=N,
 * -lms N, --loop-ms=N, -i for dcgmi dmon -d MS); 1000 if none. */
int64_t argv_period_ms(char *const *argv);

/* Starts argv with stdout on a non-blocking pipe (stdin /dev/null, stderr
 * inherited), in its own process group. Returns the pid (-1 on error) and
 * the read end in *fd. */
pid_t exec_spawn(char *const *argv, int *fd, char *err, size_t errlen);

/* Converts one /dev/kmsg record ("PRI,SEQ,USEC,FLAGS;TEXT\n KEY=V...") into
 * a dmesg --time-format=iso -x style line ("kern  :warn  : ISO TEXT") in
 * out, with the wall clock boot_ms + USEC/1000. Returns 1 with *seq set, or
 * 0 for a malformed record. */
int kmsg_record_to_line(const char *rec, size_t len, int64_t boot_ms,
                        struct buf *out, uint64_t *seq);
/* Wall-clock epoch ms of boot (realtime minus monotonic clock). */
int64_t kmsg_boot_ms(void);

#endif
