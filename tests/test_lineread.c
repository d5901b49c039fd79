/*
 * test_lineread.c - unit tests of core/lineread.c: LF and CRLF ends, empty
 * lines, a final line without newline, lines longer than the read buffer,
 * the exact line limit, over-limit lines (then a normal line), and a pipe
 * that delivers the bytes in tiny pieces.
 */
#include "../core/lineread.h"
#include "../core/common.h"
#include "test.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* A read-only fd positioned at 0 holding n bytes of data (memfd). */
static int mem_fd(const char *data, size_t n)
{
    int fd = memfd_create("lineread-test", 0);
    if (fd < 0) { perror("memfd_create"); exit(2); }
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(fd, data + off, n - off);
        if (w <= 0) { perror("write"); exit(2); }
        off += (size_t)w;
    }
    lseek(fd, 0, SEEK_SET);
    return fd;
}

/* A pipe whose writer (a child process) sends data in chunks of `chunk` bytes. */
static int pipe_fd(const char *data, size_t n, size_t chunk, pid_t *child)
{
    int p[2];
    if (pipe(p) < 0) { perror("pipe"); exit(2); }
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        for (size_t off = 0; off < n; off += chunk) {
            size_t k = n - off < chunk ? n - off : chunk;
            if (write(p[1], data + off, k) != (ssize_t)k) _exit(1);
        }
        _exit(0);
    }
    close(p[1]);
    *child = pid;
    return p[0];
}

struct got { enum lr_status st; char *line; size_t len; int64_t off; uint64_t lineno; };

/* Reads fd to EOF into out[] (at most max entries); returns the count. */
static int read_all(int fd, size_t max_line, struct got *out, int max)
{
    struct lineread lr;
    lineread_init(&lr, fd, max_line);
    int k = 0;
    for (;;) {
        const char *l = NULL;
        size_t n = 0;
        int64_t off = -1;
        enum lr_status st = lineread_next(&lr, &l, &n, &off);
        if (st == LR_EOF || st == LR_IOERR || st == LR_AGAIN) break;
        if (k < max) {
            out[k].st = st;
            out[k].line = st == LR_LINE ? xstrndup(l, n) : NULL;
            out[k].len = n;
            out[k].off = off;
            out[k].lineno = lr.lineno;
        }
        k++;
        if (k > 100000) break;
    }
    lineread_free(&lr);
    return k;
}

static void got_free(struct got *g, int n)
{
    for (int i = 0; i < n; i++) free(g[i].line);
}

TEST(lf_crlf_empty_and_last_line)
{
    const char in[] = "a\nbb\r\n\n\r\nmid\rcr\nlast\r";
    int fd = mem_fd(in, sizeof in - 1);
    struct got g[10];
    int n = read_all(fd, 0, g, 10);
    close(fd);
    CHECK_EQ_INT(n, 6);
    if (n == 6) {
        CHECK_EQ_STR(g[0].line, "a");     CHECK_EQ_INT(g[0].off, 0);  CHECK_EQ_INT(g[0].lineno, 1);
        CHECK_EQ_STR(g[1].line, "bb");    CHECK_EQ_INT(g[1].off, 2);  CHECK_EQ_INT(g[1].len, 2);
        CHECK_EQ_STR(g[2].line, "");      CHECK_EQ_INT(g[2].off, 6);
        CHECK_EQ_STR(g[3].line, "");      CHECK_EQ_INT(g[3].off, 7);  /* lone CRLF */
        CHECK_EQ_STR(g[4].line, "mid\rcr"); CHECK_EQ_INT(g[4].off, 9); /* inner CR kept */
        CHECK_EQ_STR(g[5].line, "last");  CHECK_EQ_INT(g[5].off, 16); CHECK_EQ_INT(g[5].lineno, 6);
        for (int i = 0; i < 6; i++) CHECK(g[i].st == LR_LINE);
    }
    got_free(g, n < 10 ? n : 10);
}

/* Old Mac files: CR-only line breaks are line breaks (they gave one line
 * before); once an LF is seen, a CR inside a line stays in it. */
TEST(cr_only_line_breaks)
{
    const char in[] = "h1,h2\r1,2\r\r3,4\r";
    int fd = mem_fd(in, sizeof in - 1);
    struct got g[10];
    int n = read_all(fd, 0, g, 10);
    close(fd);
    CHECK_EQ_INT(n, 4);
    if (n == 4) {
        CHECK_EQ_STR(g[0].line, "h1,h2"); CHECK_EQ_INT(g[0].off, 0);
        CHECK_EQ_STR(g[1].line, "1,2");   CHECK_EQ_INT(g[1].off, 6);
        CHECK_EQ_STR(g[2].line, "");      CHECK_EQ_INT(g[2].off, 10);
        CHECK_EQ_STR(g[3].line, "3,4");   CHECK_EQ_INT(g[3].off, 11); CHECK_EQ_INT(g[3].lineno, 4);
    }
    got_free(g, n < 10 ? n : 10);
}

TEST(final_line_without_newline)
{
    int fd = mem_fd("one\ntwo", 7);
    struct got g[4];
    int n = read_all(fd, 0, g, 4);
    close(fd);
    CHECK_EQ_INT(n, 2);
    if (n == 2) { CHECK_EQ_STR(g[1].line, "two"); CHECK_EQ_INT(g[1].off, 4); }
    got_free(g, n < 4 ? n : 4);
    fd = mem_fd("", 0);
    n = read_all(fd, 0, g, 4);
    close(fd);
    CHECK_EQ_INT(n, 0);
}

TEST(long_lines_across_buffer_boundaries)
{
    /* lines of 100000, 65535, 65536, 65537 and 200000 bytes around the
     * reader's 64 KiB initial buffer, each with distinct content */
    static const size_t lens[] = { 100000, 65535, 65536, 65537, 3, 200000, 1 };
    size_t total = 0;
    for (size_t i = 0; i < GL_ARRAY_LEN(lens); i++) total += lens[i] + 1;
    char *in = xmalloc(total);
    size_t o = 0;
    for (size_t i = 0; i < GL_ARRAY_LEN(lens); i++) {
        for (size_t j = 0; j < lens[i]; j++) in[o++] = (char)('A' + (i + j) % 26);
        in[o++] = '\n';
    }
    int fd = mem_fd(in, total);
    struct got g[10];
    int n = read_all(fd, 0, g, 10);
    close(fd);
    CHECK_EQ_INT(n, (int)GL_ARRAY_LEN(lens));
    o = 0;
    for (int i = 0; i < n && i < (int)GL_ARRAY_LEN(lens); i++) {
        CHECK(g[i].st == LR_LINE);
        CHECK_EQ_INT(g[i].len, lens[i]);
        CHECK_EQ_INT(g[i].off, o);
        CHECK(g[i].line && !memcmp(g[i].line, in + o, lens[i]));
        o += lens[i] + 1;
    }
    got_free(g, n < 10 ? n : 10);
    free(in);
}

TEST(exact_limit_and_over_limit)
{
    char in[400];
    size_t o = 0;
    memset(in + o, 'x', 100); o += 100; in[o++] = '\n';     /* exactly 100: kept */
    memset(in + o, 'y', 101); o += 101; in[o++] = '\n';     /* 101: too long */
    memcpy(in + o, "ok\n", 3); o += 3;                       /* next line parses */
    memset(in + o, 'z', 150); o += 150;                      /* too long, no newline */
    int fd = mem_fd(in, o);
    struct got g[8];
    int n = read_all(fd, 100, g, 8);
    close(fd);
    CHECK_EQ_INT(n, 4);
    if (n == 4) {
        CHECK(g[0].st == LR_LINE); CHECK_EQ_INT(g[0].len, 100); CHECK_EQ_INT(g[0].lineno, 1);
        CHECK(g[1].st == LR_TOOLONG); CHECK_EQ_INT(g[1].lineno, 2); CHECK_EQ_INT(g[1].off, 101);
        CHECK(g[2].st == LR_LINE); CHECK_EQ_STR(g[2].line, "ok");
        CHECK_EQ_INT(g[2].lineno, 3); CHECK_EQ_INT(g[2].off, 203);
        CHECK(g[3].st == LR_TOOLONG); CHECK_EQ_INT(g[3].lineno, 4); CHECK_EQ_INT(g[3].off, 206);
    }
    got_free(g, n < 8 ? n : 8);
}

TEST(over_limit_larger_than_buffer)
{
    /* a 3 MB line with the default 1 MiB limit, then two normal lines */
    size_t big = 3 * 1000 * 1000;
    size_t total = big + 1 + 6;
    char *in = xmalloc(total);
    memset(in, 'q', big);
    in[big] = '\n';
    memcpy(in + big + 1, "a\nbcd\n", 6);
    int fd = mem_fd(in, total);
    struct got g[6];
    int n = read_all(fd, 0, g, 6);
    close(fd);
    CHECK_EQ_INT(n, 3);
    if (n == 3) {
        CHECK(g[0].st == LR_TOOLONG);
        CHECK_EQ_INT(g[0].lineno, 1);
        CHECK(g[1].st == LR_LINE); CHECK_EQ_STR(g[1].line, "a");
        CHECK_EQ_INT(g[1].off, (int64_t)big + 1); CHECK_EQ_INT(g[1].lineno, 2);
        CHECK(g[2].st == LR_LINE); CHECK_EQ_STR(g[2].line, "bcd");
        CHECK_EQ_INT(g[2].off, (int64_t)big + 3);
    }
    got_free(g, n < 6 ? n : 6);
    free(in);
}

TEST(crlf_line_at_the_limit)
{
    /* The limit is on the line without its terminator: 100 bytes + CRLF is
     * a 100-byte line, as with LF. */
    char in[300];
    size_t o = 0;
    memset(in, 'c', 100); o = 100;
    in[o++] = '\r'; in[o++] = '\n';
    memcpy(in + o, "next\r\n", 6); o += 6;
    int fd = mem_fd(in, o);
    struct got g[4];
    int n = read_all(fd, 100, g, 4);
    close(fd);
    CHECK_EQ_INT(n, 2);
    if (n == 2) {
        CHECK(g[0].st == LR_LINE); CHECK_EQ_INT(g[0].len, 100);
        CHECK_EQ_STR(g[1].line, "next"); CHECK_EQ_INT(g[1].off, 102);
    }
    got_free(g, n < 4 ? n : 4);
    /* the same through a pipe, one byte at a time: the CR arrives before the LF */
    pid_t child;
    fd = pipe_fd(in, o, 1, &child);
    n = read_all(fd, 100, g, 4);
    close(fd);
    waitpid(child, NULL, 0);
    CHECK_EQ_INT(n, 2);
    if (n == 2) { CHECK(g[0].st == LR_LINE); CHECK_EQ_INT(g[0].len, 100); CHECK_EQ_STR(g[1].line, "next"); }
    got_free(g, n < 4 ? n : 4);
}

TEST(pipe_in_tiny_chunks)
{
    /* the same text through a pipe 1, 3 and 7 bytes at a time gives the same lines */
    struct buf in;
    buf_init(&in);
    for (int i = 0; i < 300; i++) buf_printf(&in, "%d line %s\r\n", i, i % 7 ? "x" : "");
    buf_puts(&in, "tail-without-newline");
    static const size_t chunks[] = { 1, 3, 7, 4096 };
    for (size_t c = 0; c < GL_ARRAY_LEN(chunks); c++) {
        pid_t child;
        int fd = pipe_fd(in.p, in.len, chunks[c], &child);
        struct got g[400];
        int n = read_all(fd, 64, g, 400);
        close(fd);
        int status = 0;
        waitpid(child, &status, 0);
        CHECK_EQ_INT(n, 301);
        if (n == 301) {
            char want[64];
            snprintf(want, sizeof want, "%d line %s", 123, 123 % 7 ? "x" : "");
            CHECK_EQ_STR(g[123].line, want);
            CHECK_EQ_STR(g[300].line, "tail-without-newline");
            CHECK_EQ_INT(g[300].lineno, 301);
            CHECK_EQ_INT(g[300].off, (int64_t)in.len - 20);
        }
        got_free(g, n < 400 ? n : 400);
    }
    buf_free(&in);
}

int main(void)
{
    RUN(lf_crlf_empty_and_last_line);
    RUN(cr_only_line_breaks);
    RUN(final_line_without_newline);
    RUN(long_lines_across_buffer_boundaries);
    RUN(exact_limit_and_over_limit);
    RUN(over_limit_larger_than_buffer);
    RUN(crlf_line_at_the_limit);
    RUN(pipe_in_tiny_chunks);
    return TEST_REPORT();
}
