/*
 * test_dmon_csv.c - the dmon parser's --format csv variants (with a header
 * and units, nounit, noheader with --columns) and whole streams through
 * feed_fd with the line limit (parsers/dmon.c, parsers/feed.c).
 */
#include "dmon_harness.h"

TEST(csv_with_header_and_units)
{
    struct run r;
    run_init(&r, &parser_dmon_csv, NULL);
    feed_text(&r,
        "#gpu, pwr, gtemp, mtemp, sm, mem, enc, dec, jpg, ofa, mclk, pclk\n"
        "#Idx, W, C, C, %, %, %, %, %, %, MHz, MHz\n"
        "   0,    83,     46,      -,      7,      2,     69,      0,      0,      0,  11251,   2805\n"
        "1, 84, 47, -, 8, 3, 70, 0, 0, 0, 11251, 2805\n");
    CHECK_EQ_INT(r.g.n, 2);
    CHECK_EQ_INT(r.rejected, 0);
    CHECK(has_int(&r, 0, "gpu.index", 0));
    CHECK(has_int(&r, 0, "gpu.power.usage", 83));
    CHECK(absent(&r, 0, "gpu.temperature.memory"));
    CHECK(has_int(&r, 0, "gpu.clock.streaming_multiprocessor_frequency", 2805));
    CHECK(has_int(&r, 1, "gpu.index", 1));
    CHECK(has_int(&r, 1, "gpu.utilization.encoder.pct", 70));
    run_free(&r);
    /* '# gpu, ...' with a space after '#' and via auto-detection */
    run_init(&r, &parser_auto, NULL);
    feed_text(&r, "# gpu, pwr, gtemp\n# Idx, W, C\n0, 50, 40\n");
    CHECK_EQ_INT(r.g.n, 1);
    CHECK(has_int(&r, 0, "gpu.temperature.gpu", 40));
    CHECK(has_str(&r, 0, "event.dataset", "gpu.dmon"));
    run_free(&r);
}

TEST(csv_nounit_and_noheader)
{
    struct run r;
    /* nounit: names line only */
    run_init(&r, &parser_dmon_csv, NULL);
    feed_text(&r, "#gpu, pwr, sm\n0, 50, 99\n0, 51, -\n");
    CHECK_EQ_INT(r.g.n, 2);
    CHECK(has_int(&r, 0, "gpu.utilization.gpu.pct", 99));
    CHECK(absent(&r, 1, "gpu.utilization.gpu.pct"));
    run_free(&r);
    /* noheader with --columns */
    run_init(&r, &parser_dmon_csv, "gpu,pwr,gtemp,mtemp");
    feed_text(&r, "0, 50, 40, 45\n1, 60, 41, -\n0, 50\n");
    CHECK_EQ_INT(r.g.n, 2);
    CHECK(has_int(&r, 0, "gpu.temperature.memory", 45));
    CHECK(has_int(&r, 1, "gpu.power.usage", 60));
    CHECK(absent(&r, 1, "gpu.temperature.memory"));
    CHECK_EQ_INT(r.rejected, 1);
    run_free(&r);
    /* noheader without --columns: rejected, the reason says what to do */
    run_init(&r, &parser_dmon_csv, NULL);
    feed_text(&r, "0, 50, 40, 45\n");
    CHECK_EQ_INT(r.g.n, 0);
    CHECK_EQ_INT(r.rejected, 1);
    CHECK(err_has(&r, "--columns"));
    run_free(&r);
}

TEST(line_limit_in_feed_fd)
{
    struct run r;
    run_init(&r, &parser_dmon, NULL);
    struct buf in;
    buf_init(&in);
    buf_puts(&in, "# gpu pwr\n# Idx W\n    0 100\n");
    for (int i = 0; i < 200; i++) buf_puts(&in, "    1 101");   /* 1800 bytes */
    buf_puts(&in, "\n    2 102\n");
    struct feed_stats st;
    CHECK_EQ_INT(feed_pipe(&r, in.p, in.len, 256, &st), GL_OK);
    CHECK_EQ_INT(st.toolong, 1);
    CHECK_EQ_INT(st.rejected, 1);
    CHECK_EQ_INT(st.events, 2);
    CHECK_EQ_INT(st.lines, 5);
    CHECK(has_int(&r, 0, "gpu.power.usage", 100));
    CHECK(has_int(&r, 1, "gpu.index", 2));
    CHECK(has_int(&r, 1, "gpu.power.usage", 102));
    buf_free(&in);
    run_free(&r);
}

int main(void)
{
    RUN(csv_with_header_and_units);
    RUN(csv_nounit_and_noheader);
    RUN(line_limit_in_feed_fd);
    return TEST_REPORT();
}
