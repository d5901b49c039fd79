/*
 * test_dmon.c - edge cases of the nvidia-smi dmon parser (parsers/dmon.c),
 * fed line by line through parser_feed and whole streams through feed_fd:
 * columns by name in any -s order, -o D/T/DT, old and new widths, GPM
 * columns, missing values, headers repeated mid-stream, CRLF, blank lines,
 * no final newline, NUL bytes and invalid UTF-8, field-count mismatches,
 * tool error text, zones and event ids (--format csv and the line limit of
 * feed_fd: test_dmon_csv.c).
 * Every emitted event is checked to be valid JSON (jansson).
 */
#include "dmon_harness.h"

/* ------------------------------------------------------------ tests */

TEST(columns_by_name_any_order)
{
    struct run r;
    gl_tz_set("UTC");
    run_init(&r, &parser_dmon, NULL);
    /* -s mutc order (XueSongTap): fb bar1 ccpm | sm mem enc dec jpg ofa | rxpci txpci | mclk pclk */
    feed_text(&r,
        "# gpu     fb   bar1   ccpm     sm    mem    enc    dec    jpg    ofa  rxpci  txpci   mclk   pclk \n"
        "# Idx     MB     MB     MB      %      %      %      %      %      %   MB/s   MB/s    MHz    MHz \n"
        "    0    415      5      0     12      3      0      0      0      0     17      2   1215   1410 \n");
    CHECK_EQ_INT(r.g.n, 1);
    CHECK_EQ_INT(r.rejected, 0);
    CHECK_EQ_INT(r.declined, 2);
    CHECK(has_int(&r, 0, "gpu.index", 0));
    CHECK(has_int(&r, 0, "gpu.memory.framebuffer.used_size", 415));
    CHECK(has_int(&r, 0, "gpu.memory.bar1.used_size", 5));
    CHECK(has_int(&r, 0, "gpu.memory.protected.used_size", 0));
    CHECK(has_int(&r, 0, "gpu.utilization.gpu.pct", 12));
    CHECK(has_int(&r, 0, "gpu.utilization.memory_copy.pct", 3));
    CHECK(has_int(&r, 0, "gpu.pcie.rx.throughput", 17));
    CHECK(has_int(&r, 0, "gpu.pcie.tx.throughput", 2));
    CHECK(has_int(&r, 0, "gpu.clock.mem_frequency", 1215));
    CHECK(has_int(&r, 0, "gpu.clock.streaming_multiprocessor_frequency", 1410));
    CHECK(has_str(&r, 0, "event.dataset", "gpu.dmon"));
    CHECK(has_str(&r, 0, "event.kind", "metric"));
    CHECK(has_str(&r, 0, "host.name", "test-host"));
    /* no time column: @timestamp is the read time */
    CHECK(has_str(&r, 0, "@timestamp", "2025-06-15T15:06:40.000Z"));
    run_free(&r);

    /* gpu not first, pwr last */
    run_init(&r, &parser_dmon, NULL);
    feed_text(&r, "# sm gpu pwr\n# % Idx W\n 55 3 250\n");
    CHECK_EQ_INT(r.g.n, 1);
    CHECK(has_int(&r, 0, "gpu.index", 3));
    CHECK(has_int(&r, 0, "gpu.utilization.gpu.pct", 55));
    CHECK(has_int(&r, 0, "gpu.power.usage", 250));
    run_free(&r);
}

TEST(date_time_prefix_dt_td)
{
    gl_tz_set("UTC");
    struct run r;
    run_init(&r, &parser_dmon, NULL);
    /* -o DT (and -o TD, which prints the same Date-then-Time order) */
    feed_text(&r,
        "#Date       Time        gpu     fb   bar1   ccpm \n"
        "#YYYYMMDD   HH:MM:SS    Idx     MB     MB     MB \n"
        " 20240104   13:54:35      0      4      1      0 \n"
        " 20240104   13:54:35      1      4      1      0 \n"
        " 20240104   23:59:59      0      4      1      0 \n"
        " 20240105   00:00:00      0      4      1      0 \n");
    CHECK_EQ_INT(r.g.n, 4);
    CHECK(has_str(&r, 0, "@timestamp", "2024-01-04T13:54:35.000Z"));
    CHECK(has_str(&r, 1, "@timestamp", "2024-01-04T13:54:35.000Z"));
    CHECK(has_int(&r, 1, "gpu.index", 1));
    CHECK(has_str(&r, 2, "@timestamp", "2024-01-04T23:59:59.000Z"));
    CHECK(has_str(&r, 3, "@timestamp", "2024-01-05T00:00:00.000Z"));
    CHECK(absent(&r, 0, "date") && absent(&r, 0, "time") && absent(&r, 0, "gpu.dmon.date"));
    CHECK(has_str(&r, 0, "event.created", "2025-06-15T15:06:40.000Z"));
    run_free(&r);
    /* a time column before the date column still reads both */
    run_init(&r, &parser_dmon, NULL);
    feed_text(&r, "#Time Date gpu pwr\n#HH:MM:SS YYYYMMDD Idx W\n 01:02:03 20231231 0 77\n");
    CHECK_EQ_INT(r.g.n, 1);
    CHECK(has_str(&r, 0, "@timestamp", "2023-12-31T01:02:03.000Z"));
    /* bad date and time values are rejected with a reason */
    feed_text(&r, " 1:02:03 20231231 0 77\n");
    CHECK_EQ_INT(r.rejected, 1);
    CHECK(err_has(&r, "bad time"));
    feed_text(&r, " 01:02:03 2023123 0 77\n");
    CHECK_EQ_INT(r.rejected, 2);
    CHECK(err_has(&r, "bad date"));
    feed_text(&r, " 01:02:03 20231301 0 77\n");   /* month 13 */
    CHECK_EQ_INT(r.rejected, 3);
    feed_text(&r, " 25:02:03 20231231 0 77\n");   /* hour 25 */
    CHECK_EQ_INT(r.rejected, 4);
    CHECK_EQ_INT(r.g.n, 1);
    run_free(&r);
}

TEST(time_only_uses_read_day)
{
    struct run r;
    /* -o T alone: the date is the day the line was read, in the --tz zone */
    gl_tz_set("UTC");
    run_init(&r, &parser_dmon, NULL);
    r.now_ms = 1750000000000LL;                  /* 2025-06-15T15:06:40Z */
    feed_text(&r, "#Time        gpu    pwr \n#HH:MM:SS    Idx      W \n 15:06:39      0     61 \n");
    CHECK_EQ_INT(r.g.n, 1);
    CHECK(has_str(&r, 0, "@timestamp", "2025-06-15T15:06:39.000Z"));
    run_free(&r);
    /* after another zone was selected, --tz UTC must still take the UTC day:
     * 2025-06-15T23:30Z is already the 16th in Berlin */
    gl_tz_set("Europe/Berlin");
    gl_tz_set("UTC");
    run_init(&r, &parser_dmon, NULL);
    r.now_ms = 1750030200000LL;                  /* 2025-06-15T23:30:00Z */
    feed_text(&r, "#Time gpu pwr\n#HH:MM:SS Idx W\n 23:29:59 0 61\n");
    CHECK_EQ_INT(r.g.n, 1);
    CHECK(has_str(&r, 0, "@timestamp", "2025-06-15T23:29:59.000Z"));
    run_free(&r);
    /* in Berlin the read day is the 16th (local), 01:30 local = 23:30Z on the 15th */
    gl_tz_set("Europe/Berlin");
    run_init(&r, &parser_dmon, NULL);
    r.now_ms = 1750030200000LL;
    feed_text(&r, "#Time gpu pwr\n#HH:MM:SS Idx W\n 01:29:59 0 61\n");
    CHECK_EQ_INT(r.g.n, 1);
    CHECK(has_str(&r, 0, "@timestamp", "2025-06-15T23:29:59.000Z"));
    run_free(&r);
    gl_tz_set("UTC");
}

TEST(date_only)
{
    gl_tz_set("UTC");
    struct run r;
    run_init(&r, &parser_dmon, NULL);
    feed_text(&r, "#Date       gpu    pwr \n#YYYYMMDD   Idx      W \n 20240104      0     61 \n");
    CHECK_EQ_INT(r.g.n, 1);
    CHECK(has_str(&r, 0, "@timestamp", "2024-01-04T00:00:00.000Z"));
    CHECK(has_int(&r, 0, "gpu.power.usage", 61));
    run_free(&r);
}

TEST(old_five_wide_single_temp)
{
    struct run r;
    run_init(&r, &parser_dmon, NULL);
    /* DeepSpeech #178 (2016): 'temp', pviol %, tviol bool, sbecc/dbecc '-', fb filling its slot */
    feed_text(&r,
        "# gpu   pwr  temp    sm   mem   enc   dec  mclk  pclk pviol tviol    fb  bar1 sbecc dbecc   pci rxpci txpci\n"
        "# Idx     W     C     %     %     %     %   MHz   MHz     %  bool    MB    MB  errs  errs  errs  MB/s  MB/s\n"
        "    0   111    83    25     7     0     0  4513  1683     0     0 11651     2     -     -     0    41     8\n"
        "    1   111    84    18     5     0     0  4513  1733     3     1 11653     2     -     -     0    25    14\n");
    CHECK_EQ_INT(r.g.n, 2);
    CHECK_EQ_INT(r.rejected, 0);
    CHECK(has_int(&r, 0, "gpu.temperature.gpu", 83));
    CHECK(absent(&r, 0, "gpu.temperature.memory"));
    CHECK(has_int(&r, 0, "gpu.memory.framebuffer.used_size", 11651));
    CHECK(has_int(&r, 0, "gpu.memory.bar1.used_size", 2));
    CHECK(absent(&r, 0, "gpu.ecc.single_bit.count"));
    CHECK(absent(&r, 0, "gpu.ecc.double_bit.count"));
    CHECK(has_int(&r, 0, "gpu.pcie.replay", 0));
    CHECK(json_is_false(fld(&r, 0, "gpu.throttling.thermal.active")));
    CHECK(json_is_true(fld(&r, 1, "gpu.throttling.thermal.active")));
    CHECK(has_int(&r, 1, "gpu.throttling.power.pct", 3));
    CHECK(has_int(&r, 1, "gpu.pcie.tx.throughput", 14));
    run_free(&r);
}

TEST(new_six_wide_trailing_spaces)
{
    struct run r;
    run_init(&r, &parser_dmon, NULL);
    feed_text(&r, NEW_HDR
        "    0    631     63     57    100     10      0      0      0      0   2619   1980 \n"
        "    0     83     46      -      7      2     69      0      0      0  11251   2805   \t\n"
        "    0     83     46      -      7      2     69      0      0      0  11251   2805");   /* no trailing space */
    CHECK_EQ_INT(r.g.n, 3);
    CHECK_EQ_INT(r.rejected, 0);
    CHECK(has_int(&r, 0, "gpu.power.usage", 631));
    CHECK(has_int(&r, 0, "gpu.temperature.memory", 57));
    CHECK(has_int(&r, 0, "gpu.utilization.jpeg.pct", 0));
    CHECK(has_int(&r, 0, "gpu.utilization.ofa.pct", 0));
    CHECK(has_int(&r, 0, "gpu.clock.streaming_multiprocessor_frequency", 1980));
    CHECK(has_int(&r, 1, "gpu.clock.mem_frequency", 11251));
    CHECK(has_int(&r, 1, "gpu.utilization.encoder.pct", 69));
    CHECK(absent(&r, 1, "gpu.temperature.memory"));
    CHECK(has_int(&r, 2, "gpu.clock.streaming_multiprocessor_frequency", 2805));
    run_free(&r);
}

TEST(gpm_columns)
{
    struct run r;
    run_init(&r, &parser_dmon, NULL);
    feed_text(&r,
        "# gpu    pwr      gract     smutil      smocc    intutil     mmaact       dram       fp64       fp32       fp16      pcitx      pcirx      nvltx      nvlrx \n"
        "# Idx      W      GPM:%      GPM:%      GPM:%      GPM:%      GPM:%      GPM:%      GPM:%      GPM:%      GPM:%  GPM:MiB/s  GPM:MiB/s  GPM:MiB/s  GPM:MiB/s \n"
        "    0    120          -          -          -          -          -          -          -          -          -          -          -          -          - \n"
        "    0    340         98         97         45          3         61         72          0         12          0       1520       3210          0          0 \n"
        "    0    341       98.5       97.1       45.0          3         61         72          0         12          0     1520.5       3210          0          0 \n");
    CHECK_EQ_INT(r.g.n, 3);
    CHECK_EQ_INT(r.rejected, 0);
    /* first sample: GPM needs two samples, every GPM column is '-' */
    CHECK(has_int(&r, 0, "gpu.power.usage", 120));
    static const char *const gpm[] = {
        "gpu.gpm.gract.pct", "gpu.gpm.smutil.pct", "gpu.gpm.smocc.pct", "gpu.gpm.intutil.pct",
        "gpu.gpm.mmaact.pct", "gpu.gpm.dram.pct", "gpu.gpm.fp64.pct", "gpu.gpm.fp32.pct",
        "gpu.gpm.fp16.pct", "gpu.gpm.pcitx.throughput", "gpu.gpm.pcirx.throughput",
        "gpu.gpm.nvltx.throughput", "gpu.gpm.nvlrx.throughput",
    };
    for (size_t i = 0; i < GL_ARRAY_LEN(gpm); i++) {
        CHECK(absent(&r, 0, gpm[i]));
        CHECK(fld(&r, 1, gpm[i]) && json_is_number(fld(&r, 1, gpm[i])));
        CHECK(fld(&r, 2, gpm[i]) && json_is_number(fld(&r, 2, gpm[i])));
    }
    CHECK(has_int(&r, 1, "gpu.gpm.gract.pct", 98));
    CHECK(has_int(&r, 1, "gpu.gpm.pcirx.throughput", 3210));
    CHECK(fld(&r, 2, "gpu.gpm.gract.pct") && json_real_value(fld(&r, 2, "gpu.gpm.gract.pct")) == 98.5);
    CHECK(fld(&r, 2, "gpu.gpm.pcitx.throughput") && json_real_value(fld(&r, 2, "gpu.gpm.pcitx.throughput")) == 1520.5);
    run_free(&r);
}

TEST(missing_values_absent)
{
    struct run r;
    run_init(&r, &parser_dmon, NULL);
    /* MIG: every utilisation column '-'; also an unknown column with '-' */
    feed_text(&r,
        "# gpu    pwr  gtemp  mtemp     sm    mem    enc    dec    jpg    ofa   mclk   pclk  newcol \n"
        "# Idx      W      C      C      %      %      %      %      %      %    MHz    MHz       x \n"
        "    0    438     55     61      -      -      -      -      -      -   2619   1980       - \n"
        "    1      -      -      -      -      -      -      -      -      -      -      -       - \n");
    CHECK_EQ_INT(r.g.n, 2);
    static const char *const gone[] = {
        "gpu.utilization.gpu.pct", "gpu.utilization.memory_copy.pct", "gpu.utilization.encoder.pct",
        "gpu.utilization.decoder.pct", "gpu.utilization.jpeg.pct", "gpu.utilization.ofa.pct",
        "gpu.dmon.newcol",
    };
    for (size_t i = 0; i < GL_ARRAY_LEN(gone); i++) CHECK(absent(&r, 0, gone[i]));
    CHECK(has_int(&r, 0, "gpu.temperature.memory", 61));
    CHECK(has_int(&r, 1, "gpu.index", 1));
    CHECK(absent(&r, 1, "gpu.power.usage"));
    CHECK(absent(&r, 1, "gpu.clock.mem_frequency"));
    /* nothing is ever null */
    for (int i = 0; i < r.g.n && i < MAXEV; i++) {
        const char *k;
        json_t *v;
        json_object_foreach(r.g.ev[i], k, v) if (json_is_null(v)) { printf("  null %s\n", k); CHECK(0); }
    }
    run_free(&r);
}

TEST(repeated_header_switches_columns)
{
    struct run r;
    run_init(&r, &parser_dmon, NULL);
    feed_text(&r,
        "# gpu    pwr  gtemp\n# Idx      W      C\n    0    100     50\n"
        "# gpu     sm    mem    enc    dec\n# Idx      %      %      %      %\n    0     10     20     30     40\n"
        "    0    100     50\n"                 /* old shape after the new header: rejected */
        "#Date Time gpu fb\n#YYYYMMDD HH:MM:SS Idx MB\n 20240104 13:54:35 2 9\n");
    CHECK_EQ_INT(r.g.n, 3);
    CHECK_EQ_INT(r.rejected, 1);
    CHECK(err_has(&r, "expected 5 fields"));
    CHECK(has_int(&r, 0, "gpu.power.usage", 100));
    CHECK(absent(&r, 0, "gpu.utilization.gpu.pct"));
    CHECK(has_int(&r, 1, "gpu.utilization.gpu.pct", 10));
    CHECK(has_int(&r, 1, "gpu.utilization.decoder.pct", 40));
    CHECK(absent(&r, 1, "gpu.power.usage"));
    CHECK(has_int(&r, 2, "gpu.index", 2));
    CHECK(has_int(&r, 2, "gpu.memory.framebuffer.used_size", 9));
    CHECK(has_str(&r, 2, "@timestamp", "2024-01-04T13:54:35.000Z"));
    /* a '#' comment that is not a header keeps the columns */
    feed_text(&r, "# some remark\n 20240104 13:54:36 3 10\n");
    CHECK_EQ_INT(r.g.n, 4);
    CHECK(has_int(&r, 3, "gpu.index", 3));
    run_free(&r);
}

TEST(crlf_blank_lines_and_no_final_newline)
{
    gl_tz_set("UTC");
    struct run r;
    run_init(&r, &parser_dmon, NULL);
    const char in[] =
        "# gpu    pwr  gtemp \r\n# Idx      W      C \r\n\r\n    0    100     50 \r\n"
        "\n   \n\t\n    1    101     51\r\n    2    102     52";
    struct feed_stats st;
    CHECK_EQ_INT(feed_pipe(&r, in, sizeof in - 1, 0, &st), GL_OK);
    CHECK_EQ_INT(st.lines, 9);
    CHECK_EQ_INT(st.events, 3);
    CHECK_EQ_INT(st.rejected, 0);
    CHECK_EQ_INT(st.declined, 6);
    CHECK_EQ_INT(r.g.n, 3);
    CHECK(has_int(&r, 0, "gpu.temperature.gpu", 50));
    CHECK(has_int(&r, 1, "gpu.temperature.gpu", 51));
    CHECK(has_int(&r, 2, "gpu.index", 2));
    CHECK(has_int(&r, 2, "gpu.temperature.gpu", 52));   /* the last line, without newline */
    /* stdin has no log.file.path/offset */
    CHECK(absent(&r, 0, "log.file.path") && absent(&r, 0, "log.offset"));
    run_free(&r);

    /* same bytes from a file-like fd with a path: offsets count the CRLF bytes */
    run_init(&r, &parser_dmon, NULL);
    int fd = mem_fd(in, sizeof in - 1);
    struct feed_opts o = { .name = "f", .path = "/t/f", .source = "/t/f", .host = "h", .quiet = 1 };
    memset(&st, 0, sizeof st);
    CHECK_EQ_INT(feed_fd(r.p, fd, &o, &st), GL_OK);
    close(fd);
    CHECK_EQ_INT(r.g.n, 3);
    CHECK(has_int(&r, 0, "log.offset", 46));   /* 22 + 22 + 2 bytes before it */
    CHECK(has_int(&r, 2, "log.offset", (long long)(sizeof in - 1) - 19));
    CHECK(has_str(&r, 0, "log.file.path", "/t/f"));
    run_free(&r);
}

TEST(nul_byte_in_line)
{
    struct run r;
    run_init(&r, &parser_dmon, NULL);
    feed_text(&r, "# gpu pwr other\n# Idx W x\n");
    /* NUL inside a number: rejected or parsed, never a crash, JSON stays valid */
    static const char l1[] = "    0  1\0002   abc";
    feed_n(&r, l1, sizeof l1 - 1);
    /* NUL inside an unknown (string) column */
    static const char l2[] = "    0  12   a\0b";
    feed_n(&r, l2, sizeof l2 - 1);
    /* NUL as the whole line */
    feed_n(&r, "\0", 1);
    CHECK_EQ_INT(r.g.bad_json, 0);
    CHECK_EQ_INT(r.ok + r.rejected + r.declined, 5);
    /* the string column keeps its other bytes, NUL as U+FFFD */
    int found = 0;
    for (int i = 0; i < r.g.n && i < MAXEV; i++) {
        json_t *v = fld(&r, i, "gpu.dmon.other");
        if (v && json_is_string(v) && json_string_length(v) == 5 &&
            !memcmp(json_string_value(v), "a\xef\xbf\xbd" "b", 5)) found = 1;
    }
    CHECK(found);
    /* through feed_fd as well */
    struct feed_stats st;
    static const char whole[] = "# gpu pwr\n    0 \0\0\0\n\0\n    1 5\n";
    got_clear(&r.g);
    CHECK_EQ_INT(feed_pipe(&r, whole, sizeof whole - 1, 0, &st), GL_OK);
    CHECK_EQ_INT(st.lines, 4);
    CHECK_EQ_INT(r.g.bad_json, 0);
    CHECK(r.g.n >= 1 && has_int(&r, r.g.n - 1, "gpu.power.usage", 5));
    run_free(&r);
}

TEST(invalid_utf8_in_unknown_column)
{
    struct run r;
    run_init(&r, &parser_dmon, NULL);
    feed_text(&r, "# gpu   label\n# Idx   x\n    0   caf\xc3\xa9\xff\xfe\xe2\x82\n");
    CHECK_EQ_INT(r.g.n, 1);
    CHECK_EQ_INT(r.g.bad_json, 0);       /* jansson refuses invalid UTF-8: it decoded */
    json_t *v = fld(&r, 0, "gpu.dmon.label");
    CHECK(v && json_is_string(v));
    if (v && json_is_string(v))
        CHECK(!strncmp(json_string_value(v), "caf\xc3\xa9\xef\xbf\xbd", 8));
    /* invalid UTF-8 in a header name becomes a sanitized key */
    feed_text(&r, "# gpu   \xff\xfeweird\n    1   x\n");
    CHECK_EQ_INT(r.g.bad_json, 0);
    CHECK_EQ_INT(r.g.n, 2);
    run_free(&r);
}

TEST(field_count_mismatch)
{
    struct run r;
    run_init(&r, &parser_dmon, NULL);
    feed_text(&r, "# gpu pwr gtemp\n# Idx W C\n 0 1\n 0 1 2 3\n 0 1 2\n");
    CHECK_EQ_INT(r.g.n, 1);
    CHECK_EQ_INT(r.rejected, 2);
    CHECK(err_has(&r, "expected 3 fields"));
    CHECK(err_has(&r, "got 4"));
    /* a text line where a row should be */
    feed_text(&r, "Failed to process command line\n");
    CHECK_EQ_INT(r.rejected, 3);
    CHECK(err_has(&r, "not a dmon row"));
    /* the reason quotes only the line itself, never the bytes after it */
    static const char two[] = "garbage\nNEXTLINE";
    feed_n(&r, two, 7);
    CHECK(err_has(&r, "garbage"));
    CHECK(strstr(r.last_err, "NEXTLINE") == NULL);
    r.rejected--;
    /* non-numeric value in a numeric column */
    feed_text(&r, " 0 abc 2\n");
    CHECK_EQ_INT(r.rejected, 4);
    CHECK(err_has(&r, "not a number"));
    feed_text(&r, " x 1 2\n");   /* gpu index not a number */
    CHECK_EQ_INT(r.rejected, 5);
    CHECK_EQ_INT(r.g.n, 1);
    run_free(&r);
    /* a row before any header */
    run_init(&r, &parser_dmon, NULL);
    feed_text(&r, "    0    100     50\n");
    CHECK_EQ_INT(r.rejected, 1);
    CHECK(err_has(&r, "header"));
    run_free(&r);
    /* a header without a gpu column is not a header: rows stay rejected */
    run_init(&r, &parser_dmon, NULL);
    feed_text(&r, "# pwr gtemp\n 1 2\n");
    CHECK_EQ_INT(r.g.n, 0);
    CHECK_EQ_INT(r.rejected, 1);
    run_free(&r);
}

TEST(not_supported_via_auto)
{
    struct run r;
    run_init(&r, &parser_auto, NULL);
    feed_text(&r, "Not supported on the device(s)\nFailed to process command line\n");
    CHECK_EQ_INT(r.g.n, 0);
    CHECK_EQ_INT(r.rejected, 2);
    CHECK(err_has(&r, "error instead of data"));
    CHECK(err_has(&r, "Failed to process command line"));
    run_free(&r);
    run_init(&r, &parser_auto, NULL);
    feed_n(&r, "Not supported on the device(s)", 30);
    CHECK(err_has(&r, "Not supported on the device(s)"));
    /* auto then finds the dmon header and parses */
    feed_text(&r, NEW_HDR "    0    631     63     57    100     10      0      0      0      0   2619   1980 \n");
    CHECK_EQ_INT(r.g.n, 1);
    CHECK(has_str(&r, 0, "event.dataset", "gpu.dmon"));
    CHECK(has_int(&r, 0, "gpu.power.usage", 631));
    run_free(&r);
}

TEST(sniff)
{
    const char *h = "# gpu    pwr  gtemp  mtemp     sm ";
    CHECK(parser_dmon.sniff(h, strlen(h)) >= 50);
    CHECK_EQ_INT(parser_dmon_csv.sniff(h, strlen(h)), 0);
    h = "#Date       Time        gpu     fb   bar1   ccpm ";
    CHECK(parser_dmon.sniff(h, strlen(h)) >= 50);
    h = "# gpu         pid   type     sm    mem    enc    dec    jpg    ofa    command ";   /* pmon */
    CHECK_EQ_INT(parser_dmon.sniff(h, strlen(h)), 0);
    h = "# Idx      W      C      C      %";
    CHECK_EQ_INT(parser_dmon.sniff(h, strlen(h)), 0);
    h = "#gpu, pwr, gtemp, mtemp, sm";
    CHECK(parser_dmon_csv.sniff(h, strlen(h)) >= 50);
    CHECK_EQ_INT(parser_dmon.sniff(h, strlen(h)), 0);
    h = "    0    631     63";
    CHECK_EQ_INT(parser_dmon.sniff(h, strlen(h)), 0);
    CHECK_EQ_INT(parser_dmon.sniff("", 0), 0);
    CHECK_EQ_INT(parser_dmon.sniff("#", 1), 0);
}

TEST(zones_for_date_time)
{
    struct run r;
    const char *hdr = "#Date       Time        gpu    pwr \n#YYYYMMDD   HH:MM:SS    Idx      W \n";
    gl_tz_set("Europe/Berlin");
    run_init(&r, &parser_dmon, NULL);
    feed_text(&r, hdr);
    feed_text(&r, " 20240701   12:00:00      0     50 \n");   /* CEST, UTC+2 */
    feed_text(&r, " 20240115   12:00:00      0     50 \n");   /* CET, UTC+1 */
    feed_text(&r, " 20240331   01:59:59      0     50 \n");   /* just before spring-forward */
    feed_text(&r, " 20240331   03:00:00      0     50 \n");   /* just after */
    CHECK_EQ_INT(r.g.n, 4);
    CHECK(has_str(&r, 0, "@timestamp", "2024-07-01T10:00:00.000Z"));
    CHECK(has_str(&r, 1, "@timestamp", "2024-01-15T11:00:00.000Z"));
    CHECK(has_str(&r, 2, "@timestamp", "2024-03-31T00:59:59.000Z"));
    CHECK(has_str(&r, 3, "@timestamp", "2024-03-31T01:00:00.000Z"));
    run_free(&r);
    gl_tz_set("UTC");
    run_init(&r, &parser_dmon, NULL);
    feed_text(&r, hdr);
    feed_text(&r, " 20240701   12:00:00      0     50 \n");
    CHECK(has_str(&r, 0, "@timestamp", "2024-07-01T12:00:00.000Z"));
    run_free(&r);
}

TEST(duplicate_columns)
{
    /* a name twice, or temp with gtemp: the first column wins, no key twice */
    struct run r;
    run_init(&r, &parser_dmon, NULL);
    feed_text(&r, "# gpu gpu pwr temp gtemp foo foo\n 0 1 2 3 4 5 6\n");
    CHECK_EQ_INT(r.g.n, 1);
    CHECK_EQ_INT(r.g.bad_json, 0);
    CHECK(has_int(&r, 0, "gpu.index", 0));
    CHECK(has_int(&r, 0, "gpu.temperature.gpu", 3));
    CHECK(has_int(&r, 0, "gpu.dmon.foo", 5));
    run_free(&r);
}

TEST(schema_ranges_on_known_key_lengths)
{
    /* dmon's fields carry their key length from the header table: the
     * schema check at emission reads the .pct / .throughput suffixes from
     * it. A percentage over 100 and a negative power are dropped (the rest
     * kept); large counters, clocks and sizes stay; a GPM column (text-kind,
     * no known length) is judged the same way */
    struct run r;
    run_init(&r, &parser_dmon, NULL);
    uint64_t before = parser_fields_dropped();
    feed_text(&r,
        "# gpu    pwr     sm    mem   mclk     fb  rxpci  smutil\n"
        "# Idx      W      %      %    MHz     MB   MB/s       %\n"
        "    0     -5    150    100   2619  80000 123456     101\n"
        "    1    300      0     99   1980    512      0     100\n");
    CHECK_EQ_INT(r.g.n, 2);
    CHECK_EQ_INT(parser_fields_dropped() - before, 3);
    CHECK(absent(&r, 0, "gpu.power.usage"));
    CHECK(absent(&r, 0, "gpu.utilization.gpu.pct"));
    CHECK(absent(&r, 0, "gpu.gpm.smutil.pct"));
    CHECK(has_int(&r, 0, "gpu.utilization.memory_copy.pct", 100));
    CHECK(has_int(&r, 0, "gpu.clock.mem_frequency", 2619));
    CHECK(has_int(&r, 0, "gpu.memory.framebuffer.used_size", 80000));
    CHECK(has_int(&r, 0, "gpu.pcie.rx.throughput", 123456));
    CHECK(has_int(&r, 1, "gpu.power.usage", 300));
    CHECK(has_int(&r, 1, "gpu.utilization.gpu.pct", 0));
    CHECK(has_int(&r, 1, "gpu.gpm.smutil.pct", 100));
    run_free(&r);
}

TEST(event_ids)
{
    struct run r;
    run_init(&r, &parser_dmon, NULL);
    /* two identical rows at different offsets: different ids; the same
     * input again: the same ids */
    const char *in = "# gpu pwr\n 0 1\n 0 1\n";
    feed_text(&r, in);
    CHECK_EQ_INT(r.g.n, 2);
    const char *a = json_string_value(fld(&r, 0, "event.id"));
    const char *b = json_string_value(fld(&r, 1, "event.id"));
    CHECK(a && b && strcmp(a, b) != 0 && strlen(a) == 32);
    struct run r2;
    run_init(&r2, &parser_dmon, NULL);
    feed_text(&r2, in);
    CHECK(r2.g.n == 2 && a && !strcmp(a, json_string_value(fld(&r2, 0, "event.id"))));
    run_free(&r2);
    run_free(&r);
}

/* a header of more than 128 columns in auto mode: known as dmon's wherever
 * its gpu column sits (CSV too), said once, its units line no second error,
 * and every row under it rejected with that reason */
TEST(too_wide_header_said_once)
{
    for (int csv = 0; csv < 2; csv++)
        for (int late = 0; late < 2; late++) {
            struct buf h, u, row;
            buf_init(&h);
            buf_init(&u);
            buf_init(&row);
            const char *sep = csv ? ", " : " ";
            buf_puts(&h, "#");
            buf_puts(&u, "#");
            if (!late) buf_printf(&h, "gpu%spwr%s", sep, sep);
            for (int i = 0; i < 150; i++) {
                buf_printf(&h, "%sx%d", i ? sep : "", i);
                buf_printf(&u, "%s-", i ? sep : "");
                buf_printf(&row, "%s1", i ? sep : "");
            }
            if (late) buf_printf(&h, "%sgpu%spwr", sep, sep);
            buf_printf(&row, "%s0%s100", sep, sep);
            struct run r;
            run_init(&r, &parser_auto, NULL);
            feed_n(&r, h.p, h.len);
            CHECK(strstr(r.last_err, "header has more than 128 columns") != NULL);
            feed_n(&r, u.p, u.len);
            CHECK_EQ_INT(r.rejected, 1);
            for (int i = 0; i < 3; i++) feed_n(&r, row.p, row.len);
            CHECK_EQ_INT(r.rejected, 4);
            if (!strstr(r.last_err, "after a header line that was refused")) printf("  csv %d late %d: %s\n", csv, late, r.last_err);
            CHECK(strstr(r.last_err, "after a header line that was refused") != NULL);
            run_free(&r);
            buf_free(&h);
            buf_free(&u);
            buf_free(&row);
        }
}

int main(void)
{
    RUN(too_wide_header_said_once);
    RUN(columns_by_name_any_order);
    RUN(date_time_prefix_dt_td);
    RUN(time_only_uses_read_day);
    RUN(date_only);
    RUN(old_five_wide_single_temp);
    RUN(new_six_wide_trailing_spaces);
    RUN(gpm_columns);
    RUN(missing_values_absent);
    RUN(repeated_header_switches_columns);
    RUN(crlf_blank_lines_and_no_final_newline);
    RUN(nul_byte_in_line);
    RUN(invalid_utf8_in_unknown_column);
    RUN(field_count_mismatch);
    RUN(not_supported_via_auto);
    RUN(sniff);
    RUN(zones_for_date_time);
    RUN(duplicate_columns);
    RUN(schema_ranges_on_known_key_lengths);
    RUN(event_ids);
    return TEST_REPORT();
}
