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
    struct tail *t = tail_new(p, NULL, 0);
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
    struct tail *t = tail_new(p, NULL, 0);
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
    struct tail *t = tail_new(p, NULL, 0);
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
    t = tail_new(p, &ck, 0);
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
    t = tail_new(p, &same, 0);   /* restart on the same file: same generation */
    CHECK_EQ_INT(tail_gen(t), 5);
    tail_free(t);
    /* a checkpoint for a different file (same path) starts from 0, as the next generation */
    struct ckpt other = ck;
    other.ino += 999999;
    unlink(rotated);
    t = tail_new(p, &other, 0);
    CHECK_EQ_INT(tail_offset(t), 0);
    CHECK_EQ_INT(tail_gen(t), 5);
    tail_free(t);
    free(p);
}

TEST(tail_missing_file_appears)
{
    char *p = xstrdup(tpath("later.log"));
    struct tail *t = tail_new(p, NULL, 0);
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
    gl_log_level = GL_LOG_ERROR;   /* rotation notices are expected here */
    RUN(track_commits_only_settled_prefix);
    RUN(track_grows_and_wraps);
    RUN(checkpoint_roundtrip_atomic);
    RUN(fingerprint_skips_headers);
    RUN(lbuf_keeps_partial_line);
    RUN(tail_rename_rotation);
    RUN(tail_copytruncate_reads_the_copy);
    RUN(tail_resume_after_rotation_while_stopped);
    RUN(tail_missing_file_appears);
    RUN(spool_append_read_release_restart);
    RUN(argv_split_quotes);
    RUN(kmsg_record_conversion);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) printf("warning: could not remove %s\n", tmpdir);
    return TEST_REPORT();
}
