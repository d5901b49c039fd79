/* test_pmon.c - nvidia-smi pmon parser: corpus, layouts, commands with spaces, placeholders. */
#include "test.h"
#include "../parsers/parser.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CORPUS "tests/corpus/pmon/"
#include "parse_harness.h"

/* ---- tests ---- */

TEST(sonar_s_mu_fb_value_by_value)
{
    struct coll c = { 0 };
    struct parser_stats st = run_file(&parser_auto, CORPUS "sonar-s-mu-fb-4gpu.txt", &c);
    CHECK_EQ_INT(c.n, 10);
    CHECK_EQ_INT(st.declined, 4);          /* two header pairs */
    CHECK_EQ_INT(st.rejected, 0);
    const struct event *e = at(&c, 0);
    CHECK_EQ_STR(e->kind, "metric");
    CHECK_EQ_STR(e->dataset, "gpu.pmon");
    CHECK_EQ_INT(e->ts_ms, read_time);
    CHECK_EQ_INT(I(e, "gpu.index"), 0);
    CHECK_EQ_INT(I(e, "process.pid"), 447153);
    CHECK_EQ_STR(S(e, "gpu.process.type"), "C");
    CHECK_EQ_INT(I(e, "gpu.process.memory.used_size"), 7669);
    CHECK(!HAS(e, "gpu.process.utilization.sm.pct"));
    CHECK(!HAS(e, "gpu.process.utilization.enc.pct"));
    CHECK_EQ_STR(S(e, "process.name"), "python3.9");
    CHECK(!HAS(e, "event.original"));
    e = at(&c, 3);
    CHECK_EQ_INT(I(e, "process.pid"), 1864615);
    CHECK_EQ_INT(I(e, "gpu.process.memory.used_size"), 1635);
    CHECK_EQ_INT(I(e, "gpu.process.utilization.sm.pct"), 40);
    CHECK_EQ_INT(I(e, "gpu.process.utilization.mem.pct"), 0);
    CHECK(!HAS(e, "gpu.process.utilization.dec.pct"));
    CHECK_EQ_STR(S(e, "process.name"), "python");
    e = at(&c, 9);
    CHECK_EQ_INT(I(e, "gpu.index"), 3);
    CHECK_EQ_INT(I(e, "process.pid"), 2233469);
    CHECK_EQ_INT(I(e, "gpu.process.memory.used_size"), 15771);
    CHECK_EQ_INT(I(e, "gpu.process.utilization.sm.pct"), 90);
    CHECK_EQ_INT(I(e, "gpu.process.utilization.mem.pct"), 23);
    CHECK_EQ_STR(S(e, "process.name"), "python3");
    coll_free(&c);
}

TEST(new_layout_c_plus_g_and_truncated_names)
{
    struct coll c = { 0 };
    struct parser_stats st = run_file(&parser_auto, CORPUS "ue-rtx4080s-load.txt", &c);
    CHECK_EQ_INT(c.n, 35);
    CHECK_EQ_INT(st.rejected, 0);
    const struct event *e = at(&c, 0);
    CHECK_EQ_STR(S(e, "gpu.process.type"), "C+G");
    CHECK_EQ_INT(I(e, "process.pid"), 2165);
    CHECK_EQ_INT(I(e, "gpu.process.utilization.dec.pct"), 0);
    CHECK(!HAS(e, "gpu.process.utilization.sm.pct"));
    CHECK(!HAS(e, "gpu.process.utilization.jpg.pct"));
    CHECK_EQ_STR(S(e, "process.name"), "kwin_wayland");
    CHECK_EQ_STR(S(at(&c, 1), "process.name"), "plasma-keyboard");
    CHECK_EQ_STR(S(at(&c, 4), "process.name"), "xwaylandvideobr");
    e = at(&c, 6);
    CHECK_EQ_INT(I(e, "process.pid"), 5022);
    CHECK_EQ_INT(I(e, "gpu.process.utilization.sm.pct"), 5);
    CHECK_EQ_INT(I(e, "gpu.process.utilization.mem.pct"), 1);
    CHECK_EQ_INT(I(e, "gpu.process.utilization.enc.pct"), 54);
    coll_free(&c);
}

TEST(idle_placeholders_emit_nothing)
{
    struct coll c = { 0 };
    struct parser_stats st = run_file(&parser_auto, CORPUS "ue-h100-idle.txt", &c);
    CHECK_EQ_INT(c.n, 0);
    CHECK_EQ_INT(st.rejected, 0);
    CHECK_EQ_INT(st.declined, 7);
    /* the format alone says the same */
    struct parser *p = parser_new(&parser_pmon, coll_emit, &c);
    struct line_src src = { .host = "n1", .source = "-", .now_ms = read_time };
    const char *h = "# gpu         pid   type     sm    mem    enc    dec    jpg    ofa    command ";
    const char *r = "    0          -     -      -      -      -      -      -      -    -              ";
    CHECK_EQ_INT(parser_feed(p, &src, h, strlen(h)), GL_DECLINED);
    CHECK_EQ_INT(parser_feed(p, &src, r, strlen(r)), GL_DECLINED);
    CHECK_EQ_INT(p->stats.rejected, 0);
    parser_free(p);
    CHECK_EQ_INT(c.n, 0);
}

TEST(every_corpus_file)
{
    static const struct { const char *file; int events, rejected; } want[] = {
        { "keylase-89-not-supported-gt640.txt", 0, 2 },   /* the tool's error text */
        { "sonar-s-mu-fb-4gpu.txt", 10, 0 },
        { "ue-h100-idle.txt", 0, 0 },
        { "ue-h100-mig-load.txt", 15, 0 },
        { "ue-rtx2080s-595-load.txt", 20, 0 },
        { "ue-rtx4080s-load.txt", 35, 0 },
    };
    for (size_t i = 0; i < GL_ARRAY_LEN(want); i++) {
        char path[256];
        snprintf(path, sizeof path, CORPUS "%s", want[i].file);
        struct coll c = { 0 };
        struct parser_stats st = run_file(&parser_auto, path, &c);
        if (c.n != want[i].events || (int)st.rejected != want[i].rejected)
            printf("  %s: %d events, %d rejected\n", want[i].file, c.n, (int)st.rejected);
        CHECK_EQ_INT(c.n, want[i].events);
        CHECK_EQ_INT(st.rejected, want[i].rejected);
        for (int j = 0; j < c.n; j++) {
            const struct event *e = at(&c, j);
            CHECK(I(e, "gpu.index") != NOINT);
            CHECK(I(e, "process.pid") != NOINT);
            CHECK(HAS(e, "process.name"));
            CHECK(HAS(e, "gpu.process.type"));
        }
        coll_free(&c);
    }
}

TEST(mig_all_utilisation_absent)
{
    struct coll c = { 0 };
    run_file(&parser_auto, CORPUS "ue-h100-mig-load.txt", &c);
    CHECK_EQ_INT(c.n, 15);
    for (int j = 0; j < c.n; j++) {
        const struct event *e = at(&c, j);
        CHECK(!HAS(e, "gpu.process.utilization.sm.pct"));
        CHECK(!HAS(e, "gpu.process.utilization.ofa.pct"));
    }
    CHECK_EQ_STR(S(at(&c, 2), "process.name"), "gpu_burn");
    coll_free(&c);
}

TEST(command_with_spaces)
{
    struct coll c = { 0 };
    run_str(&parser_auto,
            "# gpu         pid   type     sm    mem    enc    dec    jpg    ofa    command \n"
            "# Idx           #    C/G      %      %      %      %      %      %    name \n"
            "    0      10236   C+G      2      1      -      -      -      -    NVIDIA Overlay.\n"
            "    0      11016     G      -      -      -      -      -      -    C:\\Program Fil \n", &c);
    CHECK_EQ_INT(c.n, 2);
    CHECK_EQ_STR(S(at(&c, 0), "process.name"), "NVIDIA Overlay.");
    CHECK_EQ_INT(I(at(&c, 0), "gpu.process.utilization.sm.pct"), 2);
    CHECK_EQ_STR(S(at(&c, 1), "process.name"), "C:\\Program Fil");
    coll_free(&c);
}

TEST(date_time_columns)
{
    struct coll c = { 0 };
    run_str(&parser_pmon,
            "#Date       Time        gpu         pid   type     sm    mem    enc    dec    jpg    ofa    command\n"
            "#YYYYMMDD   HH:MM:SS    Idx           #    C/G      %      %      %      %      %      %    name\n"
            " 20240104   13:54:35      0       1234     C     10      5      -      -      -      -    python\n"
            " 20240104   13:54:36      1       4321     C      -      -      -      -      -      -    torchrun x\n", &c);
    CHECK_EQ_INT(c.n, 2);
    CHECK_EQ_STR(TS(at(&c, 0)), "2024-01-04T13:54:35.000Z");
    CHECK_EQ_INT(I(at(&c, 0), "gpu.process.utilization.sm.pct"), 10);
    CHECK(!HAS(at(&c, 0), "date"));
    CHECK_EQ_STR(TS(at(&c, 1)), "2024-01-04T13:54:36.000Z");
    CHECK_EQ_INT(I(at(&c, 1), "gpu.index"), 1);
    CHECK_EQ_STR(S(at(&c, 1), "process.name"), "torchrun x");
    coll_free(&c);
}

TEST(time_column_alone)
{
    struct coll c = { 0 };
    int64_t saved = read_time;
    read_time = iso("2025-03-05T00:00:30Z");      /* just after midnight */
    run_str(&parser_pmon,
            "#Time        gpu         pid   type     sm    mem    enc    dec    jpg    ofa    command\n"
            "#HH:MM:SS    Idx           #    C/G      %      %      %      %      %      %    name\n"
            " 23:59:58      0       1234     C     10      5      -      -      -      -    python\n"
            " 00:00:29      0       1234     C     10      5      -      -      -      -    python\n", &c);
    read_time = saved;
    CHECK_EQ_INT(c.n, 2);
    CHECK_EQ_STR(TS(at(&c, 0)), "2025-03-04T23:59:58.000Z");   /* the sample from before midnight */
    CHECK_EQ_STR(TS(at(&c, 1)), "2025-03-05T00:00:29.000Z");
    coll_free(&c);
}

TEST(s_m_only_and_header_switch)
{
    struct coll c = { 0 };
    run_str(&parser_auto,
            "# gpu        pid  type    fb   command\n"
            "# Idx          #   C/G    MB   name\n"
            "    0     447153     C  7669   python3.9      \n"
            "# gpu        pid  type    sm   mem   enc   dec   command\n"
            "# Idx          #   C/G     %     %     %     %   name\n"
            "    1     447153     C    12     3     -     -   python3.9      \n", &c);
    CHECK_EQ_INT(c.n, 2);
    CHECK_EQ_INT(I(at(&c, 0), "gpu.process.memory.used_size"), 7669);
    CHECK(!HAS(at(&c, 0), "gpu.process.utilization.sm.pct"));
    CHECK(!HAS(at(&c, 1), "gpu.process.memory.used_size"));
    CHECK_EQ_INT(I(at(&c, 1), "gpu.process.utilization.sm.pct"), 12);
    coll_free(&c);
}

TEST(errors_are_rejected)
{
    struct coll c = { 0 };
    struct parser *p = parser_new(&parser_pmon, coll_emit, &c);
    struct line_src src = { .host = "n1", .source = "-", .now_ms = read_time };
    const char *l = "Not supported on the device(s)";
    CHECK_EQ_INT(parser_feed(p, &src, l, strlen(l)), GL_ERROR);
    CHECK(strstr(p->err, "Not supported") != NULL);
    l = "    0     447153     C    python";
    CHECK_EQ_INT(parser_feed(p, &src, l, strlen(l)), GL_ERROR);
    l = "# gpu        pid  type    sm   mem   enc   dec   command";
    CHECK_EQ_INT(parser_feed(p, &src, l, strlen(l)), GL_DECLINED);
    l = "    0     447153     C    12";            /* too few fields */
    CHECK_EQ_INT(parser_feed(p, &src, l, strlen(l)), GL_ERROR);
    l = "    x     447153     C    12     3     -     -   python";
    CHECK_EQ_INT(parser_feed(p, &src, l, strlen(l)), GL_ERROR);
    l = "    0     44x153     C    12     3     -     -   python";
    CHECK_EQ_INT(parser_feed(p, &src, l, strlen(l)), GL_ERROR);
    l = "    0     447153     C    12     3     -     -   python";
    CHECK_EQ_INT(parser_feed(p, &src, l, strlen(l)), GL_OK);
    CHECK_EQ_INT(p->stats.rejected, 5);
    parser_free(p);
    CHECK_EQ_INT(c.n, 1);
    coll_free(&c);
}

TEST(sniff)
{
    const char *h = "# gpu         pid   type     sm    mem    enc    dec    jpg    ofa    command ";
    CHECK_EQ_INT(parser_pmon.sniff(h, strlen(h)), 95);
    CHECK_EQ_INT(parser_dmon.sniff(h, strlen(h)), 0);
    h = "#Date       Time        gpu         pid   type     sm    mem    command";
    CHECK_EQ_INT(parser_pmon.sniff(h, strlen(h)), 95);
    h = "# Idx           #    C/G      %      %      %      %      %      %    name ";
    CHECK_EQ_INT(parser_pmon.sniff(h, strlen(h)), 0);
    h = "# gpu   pwr gtemp mtemp    sm   mem   enc   dec";
    CHECK_EQ_INT(parser_pmon.sniff(h, strlen(h)), 0);
    h = "    0      21180     C      -      -      -      -      -      -    memhog         ";
    CHECK_EQ_INT(parser_pmon.sniff(h, strlen(h)), 0);
}

int main(void)
{
    gl_tz_set("UTC");
    read_time = iso("2025-06-01T00:00:00Z");
    RUN(sonar_s_mu_fb_value_by_value);
    RUN(new_layout_c_plus_g_and_truncated_names);
    RUN(idle_placeholders_emit_nothing);
    RUN(every_corpus_file);
    RUN(mig_all_utilisation_absent);
    RUN(command_with_spaces);
    RUN(date_time_columns);
    RUN(time_column_alone);
    RUN(s_m_only_and_header_switch);
    RUN(errors_are_rejected);
    RUN(sniff);
    event_free(&g_ev);
    return TEST_REPORT();
}
