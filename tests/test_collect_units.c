/* test_collect_units.c - unit tests of the collector's pieces (ingest/):
 * offset tracker, checkpoints, fingerprints, line splitter, tail rotation,
 * spool, command splitting and /dev/kmsg records. */
#include "test.h"
#include "../ingest/source.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <zlib.h>
#include <unistd.h>

static char tmpdir[256];

static char *tpath(const char *name)
{
    static char p[512];
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    return p;
}

static void write_file(const char *path, const char *s, int append)
{
    FILE *f = fopen(path, append ? "a" : "w");
    fputs(s, f);
    fclose(f);
}

TEST(track_commits_only_settled_prefix)
{
    struct track t;
    track_init(&t, 100);
    uint64_t a = track_push(&t, 110);   /* line 1: two events */
    track_hold(&t, a); track_hold(&t, a);
    track_settle(&t, a);                /* reader's hold */
    uint64_t b = track_push(&t, 120);   /* line 2: header, no events */
    track_settle(&t, b);
    uint64_t c = track_push(&t, 130);   /* line 3: one event */
    track_hold(&t, c);
    track_settle(&t, c);
    CHECK_EQ_INT(t.committed, 100);
    track_settle(&t, c);                /* line 3 acked before line 1 */
    CHECK_EQ_INT(t.committed, 100);
    track_settle(&t, a);
    CHECK_EQ_INT(t.committed, 100);
    track_settle(&t, a);                /* line 1 fully acked: 1..3 done */
    CHECK_EQ_INT(t.committed, 130);
    CHECK_EQ_INT(track_pending(&t), 0);
    track_settle(&t, a);                /* stale token: ignored */
    CHECK_EQ_INT(t.committed, 130);
    track_free(&t);
}

TEST(track_grows_and_wraps)
{
    struct track t;
    track_init(&t, 0);
    uint64_t first = 0;
    /* many lines outstanding at once (forces the ring to grow), settled in reverse */
    uint64_t seqs[5000];
    for (int i = 0; i < 5000; i++) {
        seqs[i] = track_push(&t, (i + 1) * 10);
        track_hold(&t, seqs[i]);
        track_settle(&t, seqs[i]);
        if (i == 0) first = seqs[i];
    }
    CHECK_EQ_INT(track_pending(&t), 5000);
    for (int i = 4999; i >= 1; i--) track_settle(&t, seqs[i]);
    CHECK_EQ_INT(t.committed, 0);
    track_settle(&t, first);
    CHECK_EQ_INT(t.committed, 50000);
    CHECK_EQ_INT(track_pending(&t), 0);
    track_free(&t);
}

TEST(checkpoint_roundtrip_atomic)
{
    char err[256];
    struct ckpt c = { .dev = 7, .ino = 123456789, .fp_len = 256, .offset = 98765, .gen = 3, .kmsg_seq = 42 };
    strcpy(c.fp, "0123456789abcdef0123456789abcdef");
    strcpy(c.boot_id, "b-1");
    char *p = ckpt_path(tmpdir, "file", "/var/log/gpu/dmon.log");
    CHECK(strstr(p, "/ckpt-file-") != NULL);
    CHECK_EQ_INT(ckpt_save(p, &c, err, sizeof err), GL_OK);
    struct ckpt d;
    CHECK_EQ_INT(ckpt_load(p, &d, err, sizeof err), GL_OK);
    CHECK_EQ_INT(d.dev, 7);
    CHECK_EQ_INT(d.ino, 123456789);
    CHECK_EQ_INT(d.offset, 98765);
    CHECK_EQ_INT(d.fp_len, 256);
    CHECK_EQ_INT(d.kmsg_seq, 42);
    CHECK_EQ_INT(d.gen, 3);
    CHECK_EQ_STR(d.fp, c.fp);
    CHECK_EQ_STR(d.boot_id, "b-1");
    /* no temp file left behind */
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", p);
    CHECK(access(tmp, F_OK) != 0);
    CHECK_EQ_INT(ckpt_load(tpath("nope"), &d, err, sizeof err), GL_DONE);
    write_file(tpath("garbage"), "hello\n", 0);
    CHECK_EQ_INT(ckpt_load(tpath("garbage"), &d, err, sizeof err), GL_ERROR);
    /* a checkpoint written before generations existed: generation 0 */
    write_file(tpath("old"), "version=1\ndev=1\nino=2\nfp=\nfp_len=0\noffset=10\nkmsg_seq=0\nboot_id=\nhdr=\n", 0);
    CHECK_EQ_INT(ckpt_load(tpath("old"), &d, err, sizeof err), GL_OK);
    CHECK_EQ_INT(d.gen, 0);
    CHECK_EQ_INT(d.offset, 10);
    free(p);
}

TEST(fingerprint_skips_headers)
{
    /* two dmon files with the same header and different data */
    const char *hdr = "# gpu   pwr\n# Idx     W\n";
    char a[512], b[512];
    snprintf(a, sizeof a, "%s    0   111\n", hdr);
    snprintf(b, sizeof b, "%s    0   222\n", hdr);
    write_file(tpath("fa"), a, 0);
    write_file(tpath("fb"), b, 0);
    int fa = open(tpath("fa"), O_RDONLY), fb = open(tpath("fb"), O_RDONLY);
    char pa[33], pb[33];
    uint32_t la, lb;
    CHECK_EQ_INT(file_fingerprint(fa, 0, pa, &la), GL_OK);
    CHECK_EQ_INT(file_fingerprint(fb, 0, pb, &lb), GL_OK);
    CHECK_EQ_INT(la, strlen("    0   111\n"));
    CHECK(strcmp(pa, pb) != 0);
    /* a prefix fingerprint of the grown file equals the old one */
    write_file(tpath("fa"), "    1   333\n", 1);
    char pc[33];
    uint32_t lc;
    CHECK_EQ_INT(file_fingerprint(fa, la, pc, &lc), GL_OK);
    CHECK_EQ_STR(pc, pa);
    CHECK_EQ_INT(file_fingerprint(fa, 4000, pc, &lc), GL_ERROR);
    close(fa); close(fb);
}

TEST(lbuf_keeps_partial_line)
{
    write_file(tpath("lb"), "one\ntwo\r\nthr", 0);
    int fd = open(tpath("lb"), O_RDONLY);
    struct lbuf b;
    lbuf_init(&b, 0, 64);
    struct rline l;
    CHECK_EQ_INT(lbuf_next(&b, fd, 0, &l), RL_LINE);
    CHECK(l.len == 3 && !memcmp(l.p, "one", 3));
    CHECK_EQ_INT(l.off, 0); CHECK_EQ_INT(l.end, 4);
    CHECK_EQ_INT(lbuf_next(&b, fd, 0, &l), RL_LINE);
    CHECK(l.len == 3 && !memcmp(l.p, "two", 3));
    CHECK_EQ_INT(l.end, 9);
    CHECK_EQ_INT(lbuf_next(&b, fd, 0, &l), RL_AGAIN);   /* "thr" is still being written */
    write_file(tpath("lb"), "ee\n", 1);
    CHECK_EQ_INT(lbuf_next(&b, fd, 0, &l), RL_LINE);
    CHECK(l.len == 5 && !memcmp(l.p, "three", 5));
    CHECK_EQ_INT(l.off, 9);
    write_file(tpath("lb"), "tail", 1);
    CHECK_EQ_INT(lbuf_next(&b, fd, 1, &l), RL_LINE);   /* final: partial line returned */
    CHECK(l.len == 4 && !memcmp(l.p, "tail", 4));
    /* an over-long line is skipped, the next one is intact */
    char big[300];
    memset(big, 'x', sizeof big - 2);
    big[sizeof big - 2] = '\n';
    big[sizeof big - 1] = '\0';
    write_file(tpath("lb"), "\n", 1);
    write_file(tpath("lb"), big, 1);
    write_file(tpath("lb"), "ok\n", 1);
    int r;
    while ((r = lbuf_next(&b, fd, 0, &l)) == RL_LINE && l.len == 0) {}
    CHECK_EQ_INT(r, RL_TOOLONG);
    CHECK_EQ_INT(lbuf_next(&b, fd, 0, &l), RL_LINE);
    CHECK(l.len == 2 && !memcmp(l.p, "ok", 2));
    lbuf_free(&b);
    close(fd);
}

/* reads every available line of t into out (joined by '|'); follows rotation */
static int drain_tail(struct tail *t, char *out, size_t cap, struct track *tr)
{
    struct rline l;
    int n = 0;
    for (int spins = 0; spins < 50; spins++) {
        int r = tail_next(t, 0, &l);
        if (r == RL_LINE) {
            strncat(out, l.p, l.len < cap - strlen(out) - 2 ? l.len : 0);
            strcat(out, "|");
            n++;
            spins = 0;
            continue;
        }
        int64_t ns;
        usleep(210000 / 10);
        if (spins % 10 == 9 && tail_check(t, 1, &ns)) { if (tr) track_reset(tr, ns); }
    }
    return n;
}

TEST(tail_rename_rotation)
{
    char *p = xstrdup(tpath("rot.log"));
    write_file(p, "a1\na2\n", 0);
    struct tail *t = tail_new(p, NULL, NULL);
    char out[512] = "";
    drain_tail(t, out, sizeof out, NULL);
    CHECK_EQ_STR(out, "a1|a2|");
    CHECK_EQ_INT(tail_gen(t), 0);
    /* the writer appends, then the file is renamed and a new one created */
    write_file(p, "a3\n", 1);
    char rotated[600];
    snprintf(rotated, sizeof rotated, "%s.1", p);
    rename(p, rotated);
    write_file(rotated, "a4", 1);   /* a late partial line in the old file */
    write_file(p, "b1\nb2\n", 0);
    out[0] = '\0';
    drain_tail(t, out, sizeof out, NULL);
    CHECK_EQ_STR(out, "a3|a4|b1|b2|");
    CHECK_EQ_INT(tail_offset(t), 6);
    CHECK_EQ_INT(tail_gen(t), 1);   /* b1 sits where a1 sat: the id must differ */
    tail_free(t);
    free(p);
}

TEST(tail_copytruncate_reads_the_copy)
{
    char *p = xstrdup(tpath("ct.log"));
    write_file(p, "#hdr\nc1 some data to fingerprint\nc2\n", 0);
    struct tail *t = tail_new(p, NULL, NULL);
    char out[512] = "";
    drain_tail(t, out, sizeof out, NULL);
    CHECK_EQ_STR(out, "#hdr|c1 some data to fingerprint|c2|");
    /* lines written after our last read, then copied and truncated */
    write_file(p, "c3\nc4\n", 1);
    char copy[600];
    snprintf(copy, sizeof copy, "%s.1", p);
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", p, copy);
    CHECK_EQ_INT(system(cmd), 0);
    CHECK_EQ_INT(truncate(p, 0), 0);
    write_file(p, "d1\n", 1);
    out[0] = '\0';
    drain_tail(t, out, sizeof out, NULL);
    CHECK_EQ_STR(out, "c3|c4|d1|");
    CHECK_EQ_INT(tail_gen(t), 1);
    tail_free(t);
    free(p);
}

TEST(tail_resume_after_rotation_while_stopped)
{
    char *p = xstrdup(tpath("res.log"));
    write_file(p, "r1 first line of data\nr2\n", 0);
    struct tail *t = tail_new(p, NULL, NULL);
    char out[512] = "";
    struct rline l;
    CHECK_EQ_INT(tail_next(t, 0, &l), RL_LINE);   /* r1 read and "acked" */
    struct ckpt ck;
    memset(&ck, 0, sizeof ck);
    tail_identity(t, &ck);
    ck.offset = l.end;
    tail_free(t);
    /* while stopped: more lines, rotation by rename, a new file */
    write_file(p, "r3\n", 1);
    char rotated[600];
    snprintf(rotated, sizeof rotated, "%s-20250101", p);
    rename(p, rotated);
    write_file(p, "n1\n", 0);
    ck.gen = 4;   /* generations survive restarts: re-sent lines keep their ids */
    t = tail_new(p, &ck, NULL);
    CHECK_EQ_INT(tail_offset(t), ck.offset);
    CHECK_EQ_INT(tail_gen(t), 4);
    struct rline l2;
    CHECK_EQ_INT(tail_next(t, 0, &l2), RL_LINE);
    CHECK(l2.len == 2 && !memcmp(l2.p, "r2", 2));
    CHECK_EQ_INT(tail_gen(t), 4);   /* r2 is still a line of the checkpointed file */
    out[0] = '\0';
    drain_tail(t, out, sizeof out, NULL);
    CHECK_EQ_STR(out, "r3|n1|");
    CHECK_EQ_INT(tail_gen(t), 5);
    struct ckpt same;
    memset(&same, 0, sizeof same);
    tail_identity(t, &same);
    CHECK_EQ_INT(same.gen, 5);
    same.offset = tail_offset(t);
    tail_free(t);
    t = tail_new(p, &same, NULL);   /* restart on the same file: same generation */
    CHECK_EQ_INT(tail_gen(t), 5);
    tail_free(t);
    /* a checkpoint for a different file (same path) starts from 0, as the next generation */
    struct ckpt other = ck;
    other.ino += 999999;
    unlink(rotated);
    t = tail_new(p, &other, NULL);
    CHECK_EQ_INT(tail_offset(t), 0);
    CHECK_EQ_INT(tail_gen(t), 5);
    tail_free(t);
    free(p);
}

TEST(tail_missing_file_appears)
{
    char *p = xstrdup(tpath("later.log"));
    struct tail *t = tail_new(p, NULL, NULL);
    CHECK(!tail_is_open(t));
    char out[128] = "";
    drain_tail(t, out, sizeof out, NULL);
    CHECK_EQ_STR(out, "");
    write_file(p, "x1\n", 0);
    drain_tail(t, out, sizeof out, NULL);
    CHECK_EQ_STR(out, "x1|");
    CHECK_EQ_INT(tail_gen(t), 0);   /* the first file the path names */
    tail_free(t);
    free(p);
}


/* logrotate's numbered scheme: p.(k-1) -> p.k, ..., p -> p.1 */
static void rotate_numbered(const char *p, int k)
{
    char a[600], b[600];
    for (int i = k; i > 1; i--) {
        snprintf(a, sizeof a, "%s.%d", p, i - 1);
        snprintf(b, sizeof b, "%s.%d", p, i);
        rename(a, b);
    }
    snprintf(b, sizeof b, "%s.1", p);
    rename(p, b);
}

static void set_mtime_ago(const char *path, int64_t seconds)
{
    struct timespec ts[2];
    clock_gettime(CLOCK_REALTIME, &ts[0]);
    ts[0].tv_sec -= seconds;
    ts[1] = ts[0];
    utimensat(AT_FDCWD, path, ts, 0);
}

static char *sib(const char *p, const char *suffix)
{
    static char b[4][600];
    static int k;
    k = (k + 1) % 4;
    snprintf(b[k], sizeof b[k], "%s%s", p, suffix);
    return b[k];
}

/* A checkpoint as collect writes it after the first line of p was settled. */
static void ckpt_after_first_line(const char *p, struct ckpt *ck)
{
    struct tail *t = tail_new(p, NULL, NULL);
    struct rline l;
    CHECK_EQ_INT(tail_next(t, 0, &l), RL_LINE);
    memset(ck, 0, sizeof *ck);
    tail_identity(t, ck);
    ck->offset = l.end;
    tail_free(t);
}

/* the collector fell behind (acknowledgements pending) on generation 0
 * while the path was rotated three times: every generation is read, in order */
TEST(tail_chain_behind_three_rotations)
{
    char *p = xstrdup(tpath("chain.log"));
    write_file(sib(p, ".2"), "history line, older than anything read\n", 0);
    set_mtime_ago(sib(p, ".2"), 3600);
    write_file(p, "g1 first generation\n", 0);
    struct tail *t = tail_new(p, NULL, NULL);
    struct rline l;
    CHECK_EQ_INT(tail_next(t, 0, &l), RL_LINE);
    write_file(p, "g2\n", 1);
    usleep(5000);
    rotate_numbered(p, 3);                 /* history .2 -> .3, g -> .1 */
    write_file(p, "h1 second generation\nh2\n", 0);
    int64_t ns;
    usleep(210000);
    CHECK_EQ_INT(tail_check(t, 0, &ns), 0);   /* rotation seen, lines pending: stay */
    CHECK(tail_behind(t));
    tail_watch(t);                           /* h is noted as a generation to read */
    usleep(5000);
    rotate_numbered(p, 4);
    write_file(p, "i1 third generation\n", 0);
    usleep(510000);
    tail_watch(t);
    usleep(5000);
    rotate_numbered(p, 5);
    write_file(p, "j1 fourth generation\n", 0);
    char out[512] = "";
    drain_tail(t, out, sizeof out, NULL);
    CHECK_EQ_STR(out, "g2|h1 second generation|h2|i1 third generation|j1 fourth generation|");
    CHECK_EQ_INT(tail_gen(t), 3);
    CHECK(!tail_behind(t));
    struct tail_loss loss;
    CHECK_EQ_INT(tail_take_loss(t, &loss), 0);
    tail_free(t);
    free(p);
}

/* stopped across three rotations: resumes in the checkpointed file, then
 * reads the two generations in between, then the path; history is not read */
TEST(tail_chain_resume_after_three_rotations)
{
    char *p = xstrdup(tpath("stop.log"));
    write_file(sib(p, ".1"), "old history, read long ago\n", 0);
    set_mtime_ago(sib(p, ".1"), 7200);
    write_file(p, "s1 checkpointed generation\ns2\n", 0);
    struct ckpt ck;
    ckpt_after_first_line(p, &ck);
    struct tail *t;
    char err[256];
    CHECK_EQ_INT(ckpt_save(tpath("stop.ckpt"), &ck, err, sizeof err), GL_OK);
    CHECK_EQ_INT(ckpt_load(tpath("stop.ckpt"), &ck, err, sizeof err), GL_OK);
    usleep(5000);
    rotate_numbered(p, 4);
    write_file(p, "u1 second\n", 0);
    usleep(5000);
    rotate_numbered(p, 4);
    write_file(p, "v1 third\n", 0);
    usleep(5000);
    rotate_numbered(p, 4);
    write_file(p, "w1 live\n", 0);
    /* now: .4 = history, .3 = s, .2 = u, .1 = v, path = w */
    t = tail_new(p, &ck, NULL);
    char out[512] = "";
    drain_tail(t, out, sizeof out, NULL);
    CHECK_EQ_STR(out, "s2|u1 second|v1 third|w1 live|");
    CHECK_EQ_INT(tail_gen(t), 3);
    struct tail_loss loss;
    CHECK_EQ_INT(tail_take_loss(t, &loss), 0);
    tail_free(t);
    free(p);
}

/* a generation seen at the path while behind is deleted before it is read,
 * another one is compressed: both are reported, the rest is read */
TEST(tail_chain_lost_generations_reported)
{
    char *p = xstrdup(tpath("lost.log"));
    write_file(p, "a1 first\n", 0);
    struct tail *t = tail_new(p, NULL, NULL);
    struct rline l;
    CHECK_EQ_INT(tail_next(t, 0, &l), RL_LINE);
    rotate_numbered(p, 1);
    write_file(p, "b1 to be deleted\n", 0);
    int64_t ns;
    usleep(210000);
    CHECK_EQ_INT(tail_check(t, 0, &ns), 0);
    tail_watch(t);
    rotate_numbered(p, 2);
    write_file(p, "c1 to be compressed\n", 0);
    usleep(510000);
    tail_watch(t);
    rotate_numbered(p, 3);
    write_file(p, "d1 live\n", 0);
    /* logrotate's rotate count removes b (now .2); c (now .1) is gzipped */
    unlink(sib(p, ".2"));
    gzFile z = gzopen(sib(p, ".1.gz"), "wb");
    gzputs(z, "c1 to be compressed\n");
    gzclose(z);
    unlink(sib(p, ".1"));
    char out[512] = "";
    drain_tail(t, out, sizeof out, NULL);
    CHECK_EQ_STR(out, "d1 live|");
    struct tail_loss a, b;
    CHECK_EQ_INT(tail_take_loss(t, &a), 1);
    CHECK_EQ_INT(tail_take_loss(t, &b), 1);
    CHECK_EQ_STR(a.reason, "deleted");
    CHECK_EQ_STR(b.reason, "compressed");
    CHECK(a.ino != 0 && b.ino != 0 && a.ino != b.ino);
    CHECK_EQ_INT(a.to, -1);
    CHECK_EQ_INT(tail_take_loss(t, &a), 0);   /* each reported once, not again by the gap check */
    tail_free(t);
    free(p);
}

/* the bounds: more unread generations than allowed, and one too old */
TEST(tail_chain_bounds_reported)
{
    char *p = xstrdup(tpath("bound.log"));
    write_file(p, "k1 checkpointed\n", 0);
    struct ckpt ck;
    ckpt_after_first_line(p, &ck);
    struct tail *t;
    const char *gens[] = { "m1 one\nm2\n", "n1 two\nn2\nn3\n", "o1 three\n", "q1 four\n" };
    for (int i = 0; i < 4; i++) {
        usleep(5000);
        rotate_numbered(p, 5);
        write_file(p, gens[i], 0);
    }
    /* .4 = k (checkpointed), .3 = m, .2 = n, .1 = o, path = q: the
     * collector was stopped for long; k was last written 50 min ago, o 30 min
     * ago (too old for a 10 min bound), m and n just now */
    set_mtime_ago(sib(p, ".4"), 3000);
    ck.floor_ns = (gl_now_ms() - 3000 * 1000) * 1000000;
    set_mtime_ago(sib(p, ".1"), 1800);
    struct tail_opts o = { .max_gens = 1, .max_age_ms = 600 * 1000 };
    t = tail_new(p, &ck, &o);
    char out[512] = "";
    drain_tail(t, out, sizeof out, NULL);
    CHECK_EQ_STR(out, "n1 two|n2|n3|q1 four|");
    struct tail_loss a, b;
    CHECK_EQ_INT(tail_take_loss(t, &a), 1);
    CHECK_EQ_INT(tail_take_loss(t, &b), 1);
    CHECK_EQ_STR(a.reason, "too_old");
    CHECK_EQ_INT(a.lines, 1);
    CHECK_EQ_STR(b.reason, "too_many");
    CHECK_EQ_INT(b.lines, 2);
    CHECK_EQ_INT(b.to - b.from, 10);
    if (tail_take_loss(t, &a)) { printf("  extra loss: %s %s %lld-%lld\n", a.reason, a.name, (long long)a.from, (long long)a.to); CHECK(0); }
    tail_free(t);
    free(p);
}

/* restart: the checkpointed file was deleted (a loss with its byte range),
 * and in the numbered chain one generation is missing (a loss by name) */
TEST(tail_chain_restart_losses)
{
    char *p = xstrdup(tpath("gone.log"));
    write_file(p, "x1 checkpointed and deleted\nx2 never read\n", 0);
    struct ckpt ck;
    ckpt_after_first_line(p, &ck);
    struct tail *t;
    usleep(5000);
    rotate_numbered(p, 3);
    write_file(p, "y1 next\n", 0);
    usleep(5000);
    rotate_numbered(p, 3);
    write_file(p, "z1 live\n", 0);
    unlink(sib(p, ".2"));   /* x */
    t = tail_new(p, &ck, NULL);
    struct tail_loss a;
    CHECK_EQ_INT(tail_take_loss(t, &a), 1);
    CHECK_EQ_STR(a.reason, "deleted");
    CHECK_EQ_INT(a.from, ck.offset);
    CHECK_EQ_INT(a.to, ck.size);
    CHECK(ck.size > ck.offset);
    CHECK_EQ_INT(a.more, 1);   /* it was the live file: it may have grown */
    char out[512] = "";
    drain_tail(t, out, sizeof out, NULL);
    CHECK_EQ_STR(out, "y1 next|z1 live|");
    tail_free(t);
    /* numbered gap: resumes in .3, .2 is gone, .1 and the path are read */
    char *q = xstrdup(tpath("gap.log"));
    write_file(q, "e1 checkpointed\ne2\n", 0);
    ckpt_after_first_line(q, &ck);
    const char *gens[] = { "f1 lost\n", "g1 next\n", "h1 live\n" };
    for (int i = 0; i < 3; i++) { usleep(5000); rotate_numbered(q, 4); write_file(q, gens[i], 0); }
    unlink(sib(q, ".2"));   /* f */
    t = tail_new(q, &ck, NULL);
    out[0] = '\0';
    drain_tail(t, out, sizeof out, NULL);
    CHECK_EQ_STR(out, "e2|g1 next|h1 live|");
    CHECK_EQ_INT(tail_take_loss(t, &a), 1);
    CHECK_EQ_STR(a.reason, "deleted");
    CHECK_EQ_STR(a.name, sib(q, ".2"));
    CHECK_EQ_INT(tail_take_loss(t, &a), 0);
    tail_free(t);
    free(q);
    free(p);
}

/* behind on a renamed generation while the next one is copytruncated twice:
 * the copies are read in order, then the live content */
TEST(tail_chain_copytruncate_mix)
{
    char *p = xstrdup(tpath("mix.log"));
    write_file(p, "r1 renamed generation\n", 0);
    struct tail *t = tail_new(p, NULL, NULL);
    struct rline l;
    CHECK_EQ_INT(tail_next(t, 0, &l), RL_LINE);
    write_file(p, "r2\n", 1);
    rotate_numbered(p, 1);
    write_file(p, "c1 copied once\n", 0);
    int64_t ns;
    usleep(210000);
    CHECK_EQ_INT(tail_check(t, 0, &ns), 0);
    tail_watch(t);
    /* copytruncate: .1 -> .2, copy of the path -> .1, truncate, write */
    char cmd[1400];
    usleep(5000);
    rename(sib(p, ".1"), sib(p, ".2"));
    snprintf(cmd, sizeof cmd, "cp '%s' '%s.1'", p, p);
    CHECK_EQ_INT(system(cmd), 0);
    CHECK_EQ_INT(truncate(p, 0), 0);
    write_file(p, "c2 copied twice\n", 1);
    usleep(510000);
    tail_watch(t);
    usleep(5000);
    rename(sib(p, ".2"), sib(p, ".3"));
    rename(sib(p, ".1"), sib(p, ".2"));
    snprintf(cmd, sizeof cmd, "cp '%s' '%s.1'", p, p);
    CHECK_EQ_INT(system(cmd), 0);
    CHECK_EQ_INT(truncate(p, 0), 0);
    write_file(p, "c3 live\n", 1);
    char out[512] = "";
    drain_tail(t, out, sizeof out, NULL);
    CHECK_EQ_STR(out, "r2|c1 copied once|c2 copied twice|c3 live|");
    struct tail_loss a;
    CHECK_EQ_INT(tail_take_loss(t, &a), 0);
    tail_free(t);
    free(p);
}

/* rename rotation to a file with identical content (idle dmon rows without
 * -o DT): the new file is a new generation, not a copy of the old one */
TEST(tail_chain_identical_content_is_a_new_generation)
{
    char *p = xstrdup(tpath("same.log"));
    const char *rows = "    0     60     34\n    1     60     34\n";
    write_file(p, rows, 0);
    struct tail *t = tail_new(p, NULL, NULL);
    char out[512] = "";
    drain_tail(t, out, sizeof out, NULL);
    CHECK_EQ_STR(out, "    0     60     34|    1     60     34|");
    rotate_numbered(p, 1);
    write_file(p, rows, 0);
    out[0] = '\0';
    drain_tail(t, out, sizeof out, NULL);
    CHECK_EQ_STR(out, "    0     60     34|    1     60     34|");
    CHECK_EQ_INT(tail_gen(t), 1);
    tail_free(t);
    free(p);
}

/* a file with CR-only line breaks (old Mac tools) is split at its CRs; a
 * CR at the end of what is there waits for the next byte (CRLF) */
TEST(lbuf_cr_only_line_breaks)
{
    char *p = xstrdup(tpath("cr.log"));
    write_file(p, "a1\rb22\rc3", 0);
    int fd = open(p, O_RDONLY);
    struct lbuf b;
    lbuf_init(&b, 0, 64);
    struct rline l;
    CHECK_EQ_INT(lbuf_next(&b, fd, 0, &l), RL_LINE);
    CHECK(l.len == 2 && !memcmp(l.p, "a1", 2) && l.off == 0 && l.end == 3);
    CHECK_EQ_INT(lbuf_next(&b, fd, 0, &l), RL_LINE);
    CHECK(l.len == 3 && !memcmp(l.p, "b22", 3) && l.off == 3 && l.end == 7);
    CHECK_EQ_INT(lbuf_next(&b, fd, 0, &l), RL_AGAIN);   /* c3 may still be written */
    write_file(p, "\r", 1);
    CHECK_EQ_INT(lbuf_next(&b, fd, 0, &l), RL_AGAIN);   /* a last CR: an LF may follow */
    CHECK_EQ_INT(lbuf_next(&b, fd, 1, &l), RL_LINE);
    CHECK(l.len == 2 && !memcmp(l.p, "c3", 2) && l.end == 10);
    lbuf_free(&b);
    close(fd);
    /* CRLF files are unchanged: the CR before the LF is not a break */
    write_file(p, "x1\r\ny2\r\n", 0);
    fd = open(p, O_RDONLY);
    lbuf_init(&b, 0, 64);
    CHECK_EQ_INT(lbuf_next(&b, fd, 0, &l), RL_LINE);
    CHECK(l.len == 2 && !memcmp(l.p, "x1", 2) && l.end == 4);
    CHECK_EQ_INT(lbuf_next(&b, fd, 0, &l), RL_LINE);
    CHECK(l.len == 2 && !memcmp(l.p, "y2", 2) && l.end == 8);
    lbuf_free(&b);
    close(fd);
    free(p);
}

TEST(checkpoint_chain_roundtrip)
{
    char err[256];
    struct ckpt c;
    memset(&c, 0, sizeof c);
    c.dev = 1; c.ino = 2; c.offset = 3;
    c.floor_ns = INT64_C(1764560000123456789);
    c.size = 4096;
    c.ndone = 2;
    c.done[0] = (struct gen_id){ .dev = 8, .ino = 9, .fp_len = 256, .end = 777, .flags = GEN_TRUNCATED };
    strcpy(c.done[0].fp, "00112233445566778899aabbccddeeff");
    c.done[1] = (struct gen_id){ .dev = 8, .ino = 10, .fp_len = 0, .end = 0 };
    c.nseen = 1;
    c.seen[0] = (struct gen_id){ .dev = 8, .ino = 11, .fp_len = 12 };
    strcpy(c.seen[0].fp, "ffeeddccbbaa99887766554433221100");
    char *p = ckpt_path(tmpdir, "file", "/chain");
    CHECK_EQ_INT(ckpt_save(p, &c, err, sizeof err), GL_OK);
    struct ckpt d;
    CHECK_EQ_INT(ckpt_load(p, &d, err, sizeof err), GL_OK);
    CHECK_EQ_INT(d.floor_ns, c.floor_ns);
    CHECK_EQ_INT(d.size, 4096);
    CHECK_EQ_INT(d.ndone, 2);
    CHECK_EQ_INT(d.done[0].ino, 9);
    CHECK_EQ_INT(d.done[0].end, 777);
    CHECK_EQ_INT(d.done[0].flags, GEN_TRUNCATED);
    CHECK_EQ_STR(d.done[0].fp, c.done[0].fp);
    CHECK_EQ_INT(d.done[1].ino, 10);
    CHECK_EQ_STR(d.done[1].fp, "");
    CHECK_EQ_INT(d.nseen, 1);
    CHECK_EQ_INT(d.seen[0].fp_len, 12);
    CHECK_EQ_STR(d.seen[0].fp, c.seen[0].fp);
    write_file(tpath("badchain"), "version=1\noffset=1\ndone=1:2:zz:3:4\n", 0);
    CHECK_EQ_INT(ckpt_load(tpath("badchain"), &d, err, sizeof err), GL_ERROR);
    free(p);
}

TEST(spool_append_read_release_restart)
{
    char err[256];
    char *dir = xstrdup(tpath("spool"));
    struct spool *s = spool_open(dir, 0, 1024, err, sizeof err);
    CHECK(s != NULL);
    if (!s) return;
    spool_append(s, 1000, "alpha", 5);
    spool_append(s, 2000, "beta gamma", 10);
    CHECK_EQ_INT(spool_flush(s), GL_OK);
    struct rline l;
    CHECK_EQ_INT(spool_next(s, &l), RL_LINE);
    CHECK(l.len == 5 && !memcmp(l.p, "alpha", 5));
    CHECK_EQ_INT(l.ms, 1000);
    CHECK_EQ_INT(l.off, 0);
    int64_t end1 = l.end;
    CHECK_EQ_INT(spool_next(s, &l), RL_LINE);
    CHECK(l.len == 10 && !memcmp(l.p, "beta gamma", 10));
    CHECK_EQ_INT(l.ms, 2000);
    CHECK_EQ_INT(l.off, end1);
    int64_t end2 = l.end;
    CHECK_EQ_INT(spool_next(s, &l), RL_AGAIN);
    CHECK_EQ_INT(spool_backlog(s), 0);
    spool_free(s);
    /* restart with only the first record committed: the second comes again
     * with the same offset; new records get offsets after everything */
    s = spool_open(dir, end1, 1024, err, sizeof err);
    CHECK(s != NULL);
    if (!s) return;
    CHECK_EQ_INT(spool_next(s, &l), RL_LINE);
    CHECK(l.len == 10 && !memcmp(l.p, "beta gamma", 10));
    CHECK_EQ_INT(l.off, end1);
    spool_append(s, 3000, "delta", 5);
    spool_flush(s);
    CHECK_EQ_INT(spool_next(s, &l), RL_LINE);
    CHECK(l.len == 5 && !memcmp(l.p, "delta", 5));
    CHECK(l.off >= end2);
    int64_t end3 = l.end;
    CHECK(spool_bytes(s) > 0);
    spool_release(s, end3);   /* the old segment goes, the active one stays */
    CHECK_EQ_INT(spool_bytes(s), end3 - end2);
    spool_free(s);
    free(dir);
}

TEST(argv_split_quotes)
{
    char **v = argv_split("nvidia-smi dmon -o DT  -s 'pucvmet' \"a b\" c\\ d");
    CHECK(v != NULL);
    if (!v) return;
    CHECK_EQ_STR(v[0], "nvidia-smi");
    CHECK_EQ_STR(v[3], "DT");
    CHECK_EQ_STR(v[5], "pucvmet");
    CHECK_EQ_STR(v[6], "a b");
    CHECK_EQ_STR(v[7], "c d");
    CHECK(v[8] == NULL);
    CHECK_EQ_INT(argv_period_ms(v), 1000);
    argv_free(v);
    CHECK(argv_split("sh -c 'unbalanced") == NULL);
    CHECK(argv_split("   ") == NULL);
    v = argv_split("nvidia-smi dmon -d 5");
    CHECK_EQ_INT(argv_period_ms(v), 5000);
    argv_free(v);
    v = argv_split("nvidia-smi --query-gpu=index --format=csv --loop-ms=200");
    CHECK_EQ_INT(argv_period_ms(v), 200);
    argv_free(v);
    v = argv_split("dcgmi dmon -e 155 -d 2000");
    CHECK_EQ_INT(argv_period_ms(v), 2000);
    argv_free(v);
}

TEST(kmsg_record_conversion)
{
    struct buf out;
    buf_init(&out);
    uint64_t seq = 0;
    const char *rec = "4,1234,5000123,-;NVRM: Xid (PCI:0000:38:00): 79, pid=1, GPU has fallen off the bus.\n"
                      " SUBSYSTEM=pci\n DEVICE=+pci:0000:38:00.0\n";
    /* boot at 2025-01-21T04:41:00.000Z */
    int64_t boot = 1737434460000LL;
    CHECK_EQ_INT(kmsg_record_to_line(rec, strlen(rec), boot, &out, &seq), 1);
    CHECK_EQ_INT(seq, 1234);
    CHECK_EQ_STR(out.p, "kern  :warn  : 2025-01-21T04:41:05,000123+00:00 "
                        "NVRM: Xid (PCI:0000:38:00): 79, pid=1, GPU has fallen off the bus.");
    CHECK_EQ_INT(kmsg_record_to_line("3,7,1,-;", 8, boot, &out, &seq), 1);
    CHECK_EQ_STR(out.p, "kern  :err   : 2025-01-21T04:41:00,000001+00:00 ");
    CHECK_EQ_INT(kmsg_record_to_line("garbage", 7, boot, &out, &seq), 0);
    CHECK_EQ_INT(kmsg_record_to_line("6,x,1,-;a", 9, boot, &out, &seq), 0);
    int64_t b = kmsg_boot_ms();
    CHECK(b > 1500000000000LL && b <= gl_now_ms());
    buf_free(&out);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "%s/collect-units.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmpdir)) { perror("mkdtemp"); return 1; }
    gl_log_level = getenv("TEST_LOG") ? GL_LOG_INFO : GL_LOG_ERROR;   /* rotation notices are expected here */
    setvbuf(stdout, NULL, _IONBF, 0);
    RUN(track_commits_only_settled_prefix);
    RUN(track_grows_and_wraps);
    RUN(checkpoint_roundtrip_atomic);
    RUN(fingerprint_skips_headers);
    RUN(lbuf_keeps_partial_line);
    RUN(tail_rename_rotation);
    RUN(tail_copytruncate_reads_the_copy);
    RUN(tail_resume_after_rotation_while_stopped);
    RUN(tail_missing_file_appears);
    RUN(tail_chain_behind_three_rotations);
    RUN(tail_chain_resume_after_three_rotations);
    RUN(tail_chain_lost_generations_reported);
    RUN(tail_chain_bounds_reported);
    RUN(tail_chain_restart_losses);
    RUN(tail_chain_copytruncate_mix);
    RUN(tail_chain_identical_content_is_a_new_generation);
    RUN(lbuf_cr_only_line_breaks);
    RUN(checkpoint_chain_roundtrip);
    RUN(spool_append_read_release_restart);
    RUN(argv_split_quotes);
    RUN(kmsg_record_conversion);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) printf("warning: could not remove %s\n", tmpdir);
    return TEST_REPORT();
}
