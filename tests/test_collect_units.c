/* test_collect_units.c - unit tests of the collector's pieces (ingest/):
 * offset tracker, checkpoints, fingerprints, line splitter, spool, command
 * splitting and /dev/kmsg records (the file tail: test_tail.c). */
#include "test.h"
#include "tmpfiles.h"
#include "../ingest/source.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
    if (tmpdir_make("collect-units") != 0) return 1;
    gl_log_level = getenv("TEST_LOG") ? GL_LOG_INFO : GL_LOG_ERROR;
    setvbuf(stdout, NULL, _IONBF, 0);
    RUN(track_commits_only_settled_prefix);
    RUN(track_grows_and_wraps);
    RUN(checkpoint_roundtrip_atomic);
    RUN(fingerprint_skips_headers);
    RUN(lbuf_keeps_partial_line);
    RUN(lbuf_cr_only_line_breaks);
    RUN(checkpoint_chain_roundtrip);
    RUN(spool_append_read_release_restart);
    RUN(argv_split_quotes);
    RUN(kmsg_record_conversion);
    tmpdir_remove();
    return TEST_REPORT();
}
