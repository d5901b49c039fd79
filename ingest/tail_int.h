/*
 * tail_int.h - the state of a followed path, shared by tail.c (the file
 * being read, identities, losses, the API) and tail_chain.c (the search of
 * the rotation chain). Private to them; see parts.h for the interface.
 */
#ifndef GPULOG_TAIL_INT_H
#define GPULOG_TAIL_INT_H

#include "source.h"

struct stat;

struct tail {
    char *path;
    char *dir;                /* directory of path */
    const char *base;         /* file name part of path */
    int fd;                   /* -1: not open */
    uint64_t dev, ino;
    char fp[33];
    uint32_t fp_len;
    struct lbuf lb;
    int reading_copy;         /* fd is a finished generation (rotated away or a copy): read it to its end */
    int truncated;            /* truncation seen: read nothing until handled */
    int64_t last_check_ms, last_watch_ms;
    uint64_t gen;             /* see tail_gen */
    int had_file;             /* a file was read (or checkpointed) under this path */
    /* the rotation chain */
    struct tail_opts o;
    int64_t floor_ns;         /* generations older than this were read before (or are history) */
    int64_t size;             /* largest size seen of the current file with its content */
    struct gen_id done[CKPT_DONE_MAX];
    uint32_t ndone;
    struct gen_id seen[CKPT_SEEN_MAX];
    uint32_t nseen;
    uint32_t cur_flags;       /* gen_id flags of the file being read (GEN_TRUNCATED) */
    uint64_t fresh_dev, fresh_ino;   /* truncated under us: its new content is a new generation */
    int fresh;
    struct tail_loss *loss;
    size_t nloss, caploss;
    /* the descriptor budget (tail.c): open tails in a list, most recently
     * active first; a quiet one may be parked (its descriptor closed, its
     * identity and offset kept) to make room for another */
    struct tail *lru_prev, *lru_next;
    int in_lru;
    int quiet;                /* at the end of its file, nothing changed at the last check */
    int parked;               /* no descriptor: dev, ino, fp, lb.pos, size describe the file */
    int park_stale;           /* parked before it was ever looked at (a checkpoint to resume) */
    int park_finished;        /* ... and that checkpoint was of a finished rotated file */
    int64_t quiet_size, quiet_mtime_ns; /* the file when it went quiet (or was parked): unchanged = nothing to do */
    int waiting;              /* wants a descriptor and none is free */
    int scan_short;           /* chain_scan could not open a candidate (descriptor limit) */
};

/* A file that may be a generation of the path: the path itself or a
 * rotated name of it. */
struct cand {
    char name[512];           /* dir/name */
    const char *suffix;       /* after base and its separator; NULL for the path (set again after qsort) */
    int fd;                   /* plain files: open; -1 otherwise */
    int compressed;
    uint64_t dev, ino;
    int64_t size, mtime_ns;
    int64_t start;            /* where reading would start */
    int eligible;
    int reported;             /* compressed: already reported as a lost generation */
    char *head;               /* plain files: the first FP_HEAD_MAX bytes (fingerprints) */
    size_t headlen;
};

/* tail.c */
/* Modification time of st in ns. */
int64_t tail_mtime_ns(const struct stat *st);
/* Reading moves on to another file of the path: a new generation, unless
 * this is the first file the path ever named. */
void tail_next_file(struct tail *t);
/* Extends the fingerprint of the file being read over the same content. */
void tail_update_fp(struct tail *t);
/* Does the file open on fd match the identity (fingerprint over fp_len)? */
int tail_fp_matches(int fd, const char *fp, uint32_t fp_len);
/* Makes fd (owned from now on) the file being read, from pos. */
void tail_adopt_fd(struct tail *t, int fd, int64_t pos);
/* tail_open_regular, parking an idle tail (not self) and trying again
 * when the process is out of descriptors (EMFILE, ENFILE). */
int tail_open_file(struct tail *self, const char *path, struct stat *st);
/* The file at fd (owned from now on) becomes the file being read,
 * counted against the descriptor budget. */
void tail_set_fd(struct tail *t, int fd);
/* Closes the file being read (if any). */
void tail_close_fd(struct tail *t);
/* The identity of the file being read, up to where it was read. */
void tail_cur_id(const struct tail *t, struct gen_id *g);
/* Records a loss: [from, to) of name (g: its identity, may be NULL). */
void tail_add_loss(struct tail *t, const char *reason, const char *name, const struct gen_id *g,
                   int64_t from, int64_t to, int64_t lines);
/* Adds g to the generations read to their end (the oldest is dropped when full). */
void tail_done_push(struct tail *t, const struct gen_id *g);
/* Removes seen[i]. */
void tail_seen_remove(struct tail *t, uint32_t i);

/* tail_chain.c */
/* Lists the path and its rotated names, opening the plain ones; free with chain_free. */
struct cand *chain_scan(struct tail *t, size_t *np);
void chain_free(struct cand *c, size_t n);
/* c is the file g names (device and inode). */
int chain_cand_is(const struct cand *c, const struct gen_id *g);
/* Content of c starts like g (a copy or the file itself). */
int chain_cand_content(const struct cand *c, const struct gen_id *g);
/* Why a generation we know of is not among the plain candidates
 * ("compressed" or "deleted"); marks the compressed file that holds it. */
const char *chain_gone_reason(struct cand *c, size_t n, const struct gen_id *g);
/* After the current generation is finished (or gone): opens the oldest
 * generation not read yet, reporting what is gone. 1 when a file was opened. */
int chain_pick_next(struct tail *t);
void chain_resume(struct tail *t, const struct ckpt *resume);
int chain_after_truncation(struct tail *t, int64_t *new_start);

#endif
