/* test_dcgmi.c - dcgmi dmon parser: entities, N/A and N/W, repeated headers, error lines. */
#include "test.h"
#include "../parsers/parser.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CORPUS "tests/corpus/dcgmi/"
#include "parse_harness.h"

static double D(const struct event *e, const char *key)
{
    double v = -424242;
    event_get_num(e, key, &v);
    return v;
}

/* ---- tests ---- */

TEST(dcgm_244_smact_na)
{
    struct coll c = { 0 };
    struct parser_stats st = run_file(&parser_auto, CORPUS "dcgm-244-smact-na-8gpu-4.2.3.txt", &c);
    CHECK_EQ_INT(c.n, 24);
    CHECK_EQ_INT(st.declined, 2);
    CHECK_EQ_INT(st.rejected, 0);
    for (int i = 0; i < c.n; i++) {
        const struct event *e = at(&c, i);
        CHECK_EQ_STR(e->kind, "metric");
        CHECK_EQ_STR(e->dataset, "gpu.dcgmi");
        CHECK_EQ_INT(I(e, "gpu.index"), i % 8);
        CHECK(!HAS(e, "gpu.dcgm.smact"));      /* N/A is absent */
        CHECK_EQ_STR(TS(e), "2025-06-01T00:00:00.000Z");   /* no time of its own */
    }
    coll_free(&c);
}

TEST(dcgm_3_old_header_and_watch_error)
{
    struct coll c = { 0 };
    struct parser *p = parser_new(&parser_auto, coll_emit, &c);
    struct line_src src = { .host = "n1", .source = "-", .now_ms = read_time };
    const char *l[] = {
        "# Entity  TENSO",
        "      Id",
        "Error setting watches. Result: The third-party Profiling module returned an unrecoverable error",
    };
    CHECK_EQ_INT(parser_feed(p, &src, l[0], strlen(l[0])), GL_DECLINED);
    CHECK_EQ_INT(parser_feed(p, &src, l[1], strlen(l[1])), GL_DECLINED);
    CHECK_EQ_INT(parser_feed(p, &src, l[2], strlen(l[2])), GL_ERROR);
    CHECK(strstr(p->err, "Error setting watches. Result: The third-party Profiling module") != NULL);
    /* the old header still parses rows */
    const char *row = "GPU 0     0.412";
    CHECK_EQ_INT(parser_feed(p, &src, row, strlen(row)), GL_OK);
    parser_free(p);
    CHECK_EQ_INT(c.n, 1);
    CHECK_NEAR(D(at(&c, 0), "gpu.dcgm.tenso"), 0.412, 1e-12);
    coll_free(&c);

    struct parser_stats st = run_file(&parser_auto, CORPUS "dcgm-3-old-header-watch-error-2.x.txt", &c);
    CHECK_EQ_INT(c.n, 0);
    CHECK_EQ_INT(st.rejected, 1);
    CHECK_EQ_INT(st.declined, 2);
}

TEST(mig_entities_twins_and_missing)
{
    struct coll c = { 0 };
    struct parser_stats st = run_str(&parser_auto,
            "#Entity   POWER     TMPTR     GPUTL     SMACT     FBUSD     MMCLK     \n"
            "ID        W         C         %                   MB        MHz       \n"
            "GPU 0     61.123    34        17        0.367     1024      1593      \n"
            "GPU-I 1   N/A       N/A       N/A       0.100     N/W       N/A       \n"
            "GPU-CI 2  N/A       N/A       N/A       0.050     N/A       N/A       \n"
            "GPU 1     58.000    33        0         0.000     0         1593      \n"
            "Switch 0  N/A       41        N/A       N/A       N/A       N/A       \n", &c);
    CHECK_EQ_INT(c.n, 5);
    CHECK_EQ_INT(st.rejected, 0);
    const struct event *e = at(&c, 0);
    CHECK_EQ_INT(I(e, "gpu.index"), 0);
    CHECK_NEAR(D(e, "gpu.power.usage"), 61.123, 1e-12);
    CHECK_NEAR(D(e, "gpu.dcgm.power"), 61.123, 1e-12);
    CHECK_EQ_INT(I(e, "gpu.temperature.gpu"), 34);
    CHECK_EQ_INT(I(e, "gpu.dcgm.tmptr"), 34);
    CHECK_EQ_INT(I(e, "gpu.utilization.gpu.pct"), 17);
    CHECK_NEAR(D(e, "gpu.dcgm.smact"), 0.367, 1e-12);
    CHECK_EQ_INT(I(e, "gpu.memory.framebuffer.used_size"), 1024);
    CHECK_EQ_INT(I(e, "gpu.clock.mem_frequency"), 1593);
    CHECK(!HAS(e, "gpu.mig.gpu_instance"));
    e = at(&c, 1);
    CHECK_EQ_INT(I(e, "gpu.mig.gpu_instance"), 1);
    CHECK_EQ_INT(I(e, "gpu.index"), 0);            /* parent from the GPU 0 row */
    CHECK(!HAS(e, "gpu.mig.compute_instance"));
    CHECK(!HAS(e, "gpu.power.usage"));
    CHECK(!HAS(e, "gpu.dcgm.power"));
    CHECK(!HAS(e, "gpu.dcgm.fbusd"));              /* N/W */
    CHECK_NEAR(D(e, "gpu.dcgm.smact"), 0.1, 1e-12);
    e = at(&c, 2);
    CHECK_EQ_INT(I(e, "gpu.mig.compute_instance"), 2);
    CHECK_EQ_INT(I(e, "gpu.index"), 0);
    CHECK_NEAR(D(e, "gpu.dcgm.smact"), 0.05, 1e-12);
    e = at(&c, 3);
    CHECK_EQ_INT(I(e, "gpu.index"), 1);
    CHECK_EQ_INT(I(e, "gpu.utilization.gpu.pct"), 0);  /* a real zero stays */
    e = at(&c, 4);
    CHECK(!HAS(e, "gpu.index"));
    CHECK_EQ_INT(I(e, "gpu.dcgm.switch"), 0);
    CHECK_EQ_INT(I(e, "gpu.dcgm.tmptr"), 41);
    coll_free(&c);
}

TEST(header_reprinted_every_14_samples)
{
    struct buf in;
    buf_init(&in);
    int rows = 0;
    for (int s = 0; s < 30; s++) {
        if (s % 14 == 0) buf_puts(&in, "#Entity   GPUTL     TMPTR     \nID        %         C         \n");
        for (int g = 0; g < 2; g++) {
            buf_printf(&in, "GPU %d     %d        %d        \n", g, s, 30 + g);
            rows++;
        }
    }
    struct coll c = { 0 };
    struct parser_stats st = run_text(&parser_auto, in.p, in.len, &c);
    CHECK_EQ_INT(c.n, rows);
    CHECK_EQ_INT(st.rejected, 0);
    CHECK_EQ_INT(st.declined, 6);
    CHECK_EQ_INT(I(at(&c, 59), "gpu.utilization.gpu.pct"), 29);
    CHECK_EQ_INT(I(at(&c, 59), "gpu.temperature.gpu"), 31);
    coll_free(&c);
    buf_free(&in);
}

TEST(new_header_rederives_columns)
{
    struct coll c = { 0 };
    run_str(&parser_dcgmi,
            "#Entity   POWER\n"
            "ID        W\n"
            "GPU 0     100.5\n"
            "#Entity   TMPTR     POWER\n"
            "ID        C         W\n"
            "GPU 0     40        90.25\n"
            "GPU 1     41        Unknown\n", &c);
    CHECK_EQ_INT(c.n, 3);
    /* a text value is kept under gpu.dcgm.* but never put in a numeric twin */
    CHECK_EQ_STR(S(at(&c, 2), "gpu.dcgm.power"), "Unknown");
    CHECK(!HAS(at(&c, 2), "gpu.power.usage"));
    CHECK(!HAS(at(&c, 1), "gpu.dcgm.smact"));
    CHECK_EQ_INT(I(at(&c, 1), "gpu.temperature.gpu"), 40);
    CHECK_NEAR(D(at(&c, 1), "gpu.power.usage"), 90.25, 1e-12);
    coll_free(&c);
}

TEST(string_values_with_blanks)
{
    /* dcgmi pads every value to its name's column; strings are printed raw */
    struct coll c = { 0 };
    struct parser_stats st = run_str(&parser_dcgmi,
            "#Entity   DVNAM                   POWER     \n"
            "ID                                W         \n"
            "GPU 0     NVIDIA H100 80GB HBM3   61.500    \n"
            "GPU 1     NVIDIA H100 80GB ...    N/A       \n"
            "GPU 2     A100                    40.000    \n", &c);
    CHECK_EQ_INT(st.rejected, 0);
    CHECK_EQ_INT(c.n, 3);
    CHECK_EQ_STR(S(at(&c, 0), "gpu.dcgm.dvnam"), "NVIDIA H100 80GB HBM3");
    CHECK_NEAR(D(at(&c, 0), "gpu.power.usage"), 61.5, 1e-12);
    CHECK_EQ_STR(S(at(&c, 1), "gpu.dcgm.dvnam"), "NVIDIA H100 80GB ...");
    CHECK(!HAS(at(&c, 1), "gpu.power.usage"));
    CHECK_EQ_STR(S(at(&c, 2), "gpu.dcgm.dvnam"), "A100");
    coll_free(&c);
    /* a row that does not line up is still rejected */
    st = run_str(&parser_dcgmi,
            "#Entity   DVNAM                   POWER     \n"
            "GPU 0     NVIDIA H100 80GB HBM3 61.500 7\n", &c);
    CHECK_EQ_INT(st.rejected, 1);
    CHECK_EQ_INT(c.n, 0);
}

TEST(errors_rejected_never_crash)
{
    struct coll c = { 0 };
    struct parser *p = parser_new(&parser_dcgmi, coll_emit, &c);
    struct line_src src = { .host = "n1", .source = "-", .now_ms = read_time };
    const char *l = "GPU 0     1";
    CHECK_EQ_INT(parser_feed(p, &src, l, strlen(l)), GL_ERROR);   /* before any header */
    l = "#Entity   POWER     TMPTR";
    CHECK_EQ_INT(parser_feed(p, &src, l, strlen(l)), GL_DECLINED);
    l = "GPU 0     1";                                            /* one value short */
    CHECK_EQ_INT(parser_feed(p, &src, l, strlen(l)), GL_ERROR);
    l = "GPU 0     1  2  3";
    CHECK_EQ_INT(parser_feed(p, &src, l, strlen(l)), GL_ERROR);
    l = "Blob 0     1  2";
    CHECK_EQ_INT(parser_feed(p, &src, l, strlen(l)), GL_ERROR);
    l = "GPU x     1  2";
    CHECK_EQ_INT(parser_feed(p, &src, l, strlen(l)), GL_ERROR);
    l = "dmon was stopped do to receiving a signal";
    CHECK_EQ_INT(parser_feed(p, &src, l, strlen(l)), GL_ERROR);
    CHECK(strstr(p->err, "dmon was stopped do to receiving a signal") != NULL);
    l = "";
    CHECK_EQ_INT(parser_feed(p, &src, l, 0), GL_DECLINED);
    l = "vGPU 3    12.5  40";
    CHECK_EQ_INT(parser_feed(p, &src, l, strlen(l)), GL_OK);
    CHECK_EQ_INT(p->stats.rejected, 6);
    parser_free(p);
    CHECK_EQ_INT(c.n, 1);
    CHECK_EQ_INT(I(at(&c, 0), "gpu.dcgm.vgpu"), 3);
    CHECK(!HAS(at(&c, 0), "gpu.index"));
    coll_free(&c);
}

TEST(sniff)
{
    const char *h = "#Entity    SMACT";
    CHECK_EQ_INT(parser_dcgmi.sniff(h, strlen(h)), 95);
    h = "# Entity  TENSO";
    CHECK_EQ_INT(parser_dcgmi.sniff(h, strlen(h)), 95);
    h = "# gpu   pwr gtemp";
    CHECK_EQ_INT(parser_dcgmi.sniff(h, strlen(h)), 0);
    h = "GPU 0      N/A";
    CHECK_EQ_INT(parser_dcgmi.sniff(h, strlen(h)), 0);
    h = "ID";
    CHECK_EQ_INT(parser_dcgmi.sniff(h, strlen(h)), 0);
}

int main(void)
{
    gl_tz_set("UTC");
    read_time = iso("2025-06-01T00:00:00Z");
    RUN(dcgm_244_smact_na);
    RUN(dcgm_3_old_header_and_watch_error);
    RUN(mig_entities_twins_and_missing);
    RUN(header_reprinted_every_14_samples);
    RUN(new_header_rederives_columns);
    RUN(string_values_with_blanks);
    RUN(errors_rejected_never_crash);
    RUN(sniff);
    event_free(&g_ev);
    return TEST_REPORT();
}
