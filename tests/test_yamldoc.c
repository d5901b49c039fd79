/* test_yamldoc.c - the bounded YAML loader (core/yamldoc.c) against size
 * bombs (issue 27, item 3): aliases are bounded by the bytes they expand
 * to, not only the nodes; a long file without aliases is refused as too
 * long, at the node past the bound, not as an alias problem; the walk
 * gives up when gl_interrupted() says a signal came (a SIGTERM during a
 * SIGHUP reload). */
#include "test.h"
#include "../core/yamldoc.h"
#include "../core/common.h"
#include "../detect/engine.h"

#include <stdlib.h>
#include <unistd.h>

/* ydoc_load of text; GL_OK or GL_ERROR with the message in err. */
static int load(const char *text, size_t len, char *err, size_t errlen)
{
    yaml_document_t doc;
    int rc = ydoc_load("t.yaml", text, len, &doc, err, errlen);
    if (rc == GL_OK) yaml_document_delete(&doc);
    return rc;
}

TEST(one_large_scalar_aliased_many_times_is_refused_by_its_bytes)
{
    /* 400 KB aliased 10,000 times: 11k nodes, under the node bound, 4 GB of text */
    struct buf b;
    buf_init(&b);
    buf_puts(&b, "a: &x \"");
    for (int i = 0; i < 400000; i++) buf_putc(&b, 'x');
    buf_puts(&b, "\"\nb: [");
    for (int i = 0; i < 10000; i++) buf_puts(&b, i ? ", *x" : "*x");
    buf_puts(&b, "]\n");
    char err[300] = "";
    CHECK(load(b.p, b.len, err, sizeof err) == GL_ERROR);
    CHECK_EQ_STR(err, "t.yaml:1:1: aliases expand to more than 4194304 bytes of text: refused");
    /* ten times is 4 MB: taken */
    b.len = 0;
    buf_puts(&b, "a: &x \"");
    for (int i = 0; i < 400000; i++) buf_putc(&b, 'x');
    buf_puts(&b, "\"\nb: [*x, *x, *x, *x, *x, *x, *x, *x, *x]\n");
    CHECK(load(b.p, b.len, err, sizeof err) == GL_OK);
    buf_free(&b);
}

TEST(a_long_file_without_aliases_is_too_long_not_an_alias_problem)
{
    struct buf b;
    buf_init(&b);
    buf_puts(&b, "rules:\n");
    for (int i = 0; i < 15000; i++) buf_printf(&b, "  - {id: r%d, detector: threshold, metric: m}\n", i);
    char err[300] = "";
    CHECK(load(b.p, b.len, err, sizeof err) == GL_ERROR);
    CHECK(strstr(err, "aliases") == NULL);
    /* at node 100,001 in document order: the root, "rules" and its list
     * are 3, each rule 7 (a mapping, 3 keys, 3 values): the id value of
     * rule 14,285 (counted from 0), on line 14,287 */
    CHECK_EQ_STR(err, "t.yaml:14287:10: more than 100000 nodes (keys, values and list items): refused");
    buf_free(&b);
}

static int always(void) { return 1; }

TEST(the_walk_gives_up_when_a_signal_asks_to_stop)
{
    const char *y = "a: &x [1, 2, 3]\nb: *x\n";
    char err[300] = "";
    gl_interrupted = always;
    CHECK(load(y, strlen(y), err, sizeof err) == GL_ERROR);
    CHECK_EQ_STR(err, "t.yaml:1:1: interrupted by a signal");
    char path[] = "/tmp/gpulog-test-ydoc-XXXXXX.yaml";
    int fd = mkstemps(path, 5);
    CHECK(fd >= 0);
    if (fd >= 0) {
        const char *d = "extends: gpu\n";
        CHECK(write(fd, d, strlen(d)) == (ssize_t)strlen(d));
        close(fd);
        struct profile *p = profile_load(path, NULL, err, sizeof err);
        CHECK(p == NULL && strstr(err, "interrupted by a signal"));
        profile_free(p);
        gl_interrupted = NULL;
        p = profile_load(path, NULL, err, sizeof err);
        CHECK(p != NULL);
        profile_free(p);
        unlink(path);
    }
    gl_interrupted = NULL;
}

int main(void)
{
    RUN(one_large_scalar_aliased_many_times_is_refused_by_its_bytes);
    RUN(a_long_file_without_aliases_is_too_long_not_an_alias_problem);
    RUN(the_walk_gives_up_when_a_signal_asks_to_stop);
    return TEST_REPORT();
}
