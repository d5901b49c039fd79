/* test_tail.c - unit tests of the file tail (ingest/tail.c, tail_chain.c):
 * rename and copytruncate rotation, resuming after rotations while
 * stopped, files that appear later, and the rotation chain (generations read
 * in order after falling behind, every one that is gone reported as lost,
 * the bounds). */
#include "test.h"
#include "tmpfiles.h"
#include "../ingest/source.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <zlib.h>
#include <unistd.h>

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

int main(void)
{
    if (tmpdir_make("tail-units") != 0) return 1;
    gl_log_level = getenv("TEST_LOG") ? GL_LOG_INFO : GL_LOG_ERROR;   /* rotation notices are expected here */
    setvbuf(stdout, NULL, _IONBF, 0);
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
    tmpdir_remove();
    return TEST_REPORT();
}
