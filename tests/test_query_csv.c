/*
 * test_query_csv.c - unit tests of parsers/query_csv.c (nvidia-smi
 * --query-gpu / --query-compute-apps CSV) and parsers/throttle.c: the real
 * corpus through --format auto, values checked against the raw text, nounits,
 * noheader with --columns, missing spellings, timestamps, looped output,
 * throttle bitmasks, field-count mismatches, CRLF and header sniffing.
 */
#include "../parsers/throttle.h"
#include "csv_harness.h"

#include <dirent.h>

/* Parses text with a fresh parser of ops (columns may be NULL). */
static void run(const struct parser_ops *ops, const char *columns, const char *text, struct got *g)
{
    got_clear(g);
    struct parser *p = parser_new(ops, emit_cb, g);
    p->opt_columns = columns;
    feed_text(p, g, text);
    parser_flush(p);
    parser_free(p);
}

/* -1 absent, 0 false, 1 true. */
static int boolean(struct got *g, int i, const char *key)
{
    json_t *v = field(g, i, key);
    return v && json_is_boolean(v) ? json_is_true(v) : -1;
}

/* The real captures live in the repository (tests/corpus/, see its
 * PROVENANCE.tsv); the tests run from the repository root. */
static const char *corpus_dir(void)
{
    return "tests/corpus";
}

static char *corpus_file(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/query-csv/%s", corpus_dir(), name);
    char *t = slurp(path);
    if (!t) printf("  cannot read %s\n", path);
    return t;
}

static int count_data_lines(const char *t)
{
    int n = 0, nonblank = 0;
    for (const char *s = t; *s; s++) {
        if (*s == '\n') { n += nonblank; nonblank = 0; }
        else if (*s != '\r' && *s != ' ') nonblank = 1;
    }
    return n + nonblank;
}

static struct got G;

/* Every corpus file through --format auto: no rejected row, one event per
 * row, all gpu.query; header-less files are refused with the --columns hint. */
TEST(corpus_auto)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/query-csv", corpus_dir());
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    if (!d) return;
    int files = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char *t = corpus_file(de->d_name);
        CHECK(t != NULL);
        if (!t) continue;
        files++;
        run(&parser_auto, NULL, t, &G);
        int lines = count_data_lines(t);
        if (strstr(de->d_name, "noheader")) {
            CHECK_EQ_INT(G.rejected, lines);
            CHECK_EQ_INT(G.n, 0);
            CHECK(strstr(G.err, "--columns") != NULL);
        } else {
            if (G.rejected) printf("  %s: %s\n", de->d_name, G.err);
            CHECK_EQ_INT(G.rejected, 0);
            CHECK_EQ_INT(G.n, lines - 1);           /* one header line */
            for (int i = 0; i < G.n; i++) {
                CHECK_EQ_STR(str(&G, i, "event.dataset"), "gpu.query");
                CHECK_EQ_STR(str(&G, i, "event.kind"), "metric");
            }
            /* the same file with --format query-csv gives the same count */
            int n_auto = G.n;
            run(&parser_query_csv, NULL, t, &G);
            CHECK_EQ_INT(G.n, n_auto);
            CHECK_EQ_INT(G.rejected, 0);
        }
        free(t);
    }
    closedir(d);
    CHECK(files >= 9);
}

/* Header-less files parse with --format query-csv and --columns. */
TEST(corpus_noheader_with_columns)
{
    char *t = corpus_file("nvtop-64-noheader-single.txt");
    CHECK(t != NULL);
    if (t) {
        run(&parser_query_csv, NULL, t, &G);
        CHECK_EQ_INT(G.rejected, 1);
        CHECK(strstr(G.err, "--columns") != NULL);
        run(&parser_query_csv, "utilization.gpu", t, &G);
        CHECK_EQ_INT(G.rejected, 0);
        CHECK_EQ_INT(G.n, 1);
        CHECK(is_int(&G, 0, "gpu.utilization.gpu.pct"));
        CHECK_NEAR(num(&G, 0, "gpu.utilization.gpu.pct"), 1, 0);    /* "1 %" */
        CHECK_EQ_STR(str(&G, 0, "@timestamp"), "2023-11-14T22:13:20.000Z");   /* read time */
        free(t);
    }
    t = corpus_file("sonar-computeapps-noheader-nounits.txt");
    CHECK(t != NULL);
    if (t) {
        run(&parser_query_csv, "pid,used_memory", t, &G);
        CHECK_EQ_INT(G.rejected, 0);
        CHECK_EQ_INT(G.n, 3);
        static const int pid[] = { 2233095, 3079002, 1864615 }, mib[] = { 1190, 2350, 1426 };
        for (int i = 0; i < 3; i++) {
            CHECK_NEAR(num(&G, i, "process.pid"), pid[i], 0);
            CHECK_NEAR(num(&G, i, "gpu.process.memory.used_size"), mib[i], 0);
            CHECK(is_int(&G, i, "process.pid"));
        }
        /* the printed alias spelling works too */
        run(&parser_query_csv, "pid,used_gpu_memory", t, &G);
        CHECK_EQ_INT(G.n, 3);
        CHECK_NEAR(num(&G, 2, "gpu.process.memory.used_size"), 1426, 0);
        free(t);
    }
}

/* bpytop issue #26: two GPUs, units in values, aliases in the header. */
TEST(bpytop_values)
{
    char *t = corpus_file("bpytop-26-2gpu-units.txt");
    CHECK(t != NULL);
    if (!t) return;
    run(&parser_auto, NULL, t, &G);
    CHECK_EQ_INT(G.n, 2);
    CHECK_EQ_STR(str(&G, 0, "gpu.name"), "GeForce GTX 1080 Ti");
    CHECK_NEAR(num(&G, 0, "gpu.fan.speed.pct"), 29, 0);
    CHECK_NEAR(num(&G, 0, "gpu.memory.framebuffer.total_size"), 11175, 0);
    CHECK_NEAR(num(&G, 0, "gpu.memory.framebuffer.used_size"), 2856, 0);
    CHECK_NEAR(num(&G, 0, "gpu.utilization.gpu.pct"), 36, 0);
    CHECK_NEAR(num(&G, 0, "gpu.temperature.gpu"), 60, 0);
    CHECK_NEAR(num(&G, 0, "gpu.power.usage"), 106.56, 1e-9);
    CHECK_NEAR(num(&G, 0, "gpu.clock.graphics_frequency"), 1936, 0);
    CHECK_NEAR(num(&G, 0, "gpu.clock.mem_frequency"), 5508, 0);
    CHECK(is_int(&G, 0, "gpu.memory.framebuffer.used_size"));
    CHECK(!is_int(&G, 0, "gpu.power.usage"));
    CHECK_EQ_STR(str(&G, 1, "gpu.name"), "GeForce GTX 1060 6GB");
    CHECK_NEAR(num(&G, 1, "gpu.memory.framebuffer.total_size"), 6078, 0);
    CHECK_NEAR(num(&G, 1, "gpu.memory.framebuffer.used_size"), 4, 0);
    CHECK_NEAR(num(&G, 1, "gpu.utilization.gpu.pct"), 0, 0);
    CHECK_NEAR(num(&G, 1, "gpu.temperature.gpu"), 49, 0);
    CHECK_NEAR(num(&G, 1, "gpu.power.usage"), 5.68, 1e-9);
    CHECK_NEAR(num(&G, 1, "gpu.clock.graphics_frequency"), 139, 0);
    CHECK_NEAR(num(&G, 1, "gpu.clock.mem_frequency"), 405, 0);
    /* nine columns, nine fields, and the GPU's index: no index column, no
     * time column, so the rows of the poll after the header are GPUs 0 and 1 */
    int extra = 0;
    const char *k;
    json_t *v;
    json_object_foreach(G.ev[0], k, v) if (!strncmp(k, "gpu.", 4)) extra++;
    CHECK_EQ_INT(extra, 10);
    CHECK_NEAR(num(&G, 0, "gpu.index"), 0, 0);
    CHECK_NEAR(num(&G, 1, "gpu.index"), 1, 0);
    CHECK_EQ_STR(str(&G, 0, "host.name"), "h1");
    free(t);
}

/* Every cell of the H100 capture checked against the raw row: mapped fields
 * and gpu.nvsmi.* equal the printed value with its unit removed, missing
 * spellings are absent. */
TEST(h100_cell_by_cell)
{
    char *t = corpus_file("ue-h100-mig-load.txt");
    CHECK(t != NULL);
    if (!t) return;
    gl_tz_set("UTC");
    run(&parser_auto, NULL, t, &G);
    CHECK_EQ_INT(G.n, 1);
    CHECK_EQ_STR(str(&G, 0, "@timestamp"), "2026-07-14T09:00:44.579Z");
    CHECK_NEAR(num(&G, 0, "gpu.index"), 0, 0);
    CHECK_EQ_STR(str(&G, 0, "gpu.name"), "NVIDIA H100 80GB HBM3");
    CHECK_EQ_STR(str(&G, 0, "gpu.uuid"), "GPU-00000000-0000-0000-0000-000000000000");
    CHECK_EQ_STR(str(&G, 0, "gpu.pci.bus_id"), "0000:00:09.0");
    CHECK(!has(&G, 0, "gpu.utilization.gpu.pct"));         /* [N/A] on MIG */
    CHECK(!has(&G, 0, "gpu.fan.speed.pct"));               /* [N/A] */
    CHECK(!has(&G, 0, "gpu.nvsmi.display_mode"));          /* [Requested functionality has been deprecated] */
    CHECK(!has(&G, 0, "gpu.nvsmi.fabric_health_summary")); /* bare N/A */
    CHECK(!has(&G, 0, "gpu.nvsmi.platform_chassis_serial_number"));   /* empty */
    CHECK_NEAR(num(&G, 0, "gpu.temperature.memory"), 59, 0);
    CHECK_NEAR(num(&G, 0, "gpu.power.usage"), 433.78, 1e-9);
    CHECK_NEAR(num(&G, 0, "gpu.power.limit"), 700, 0);
    CHECK_NEAR(num(&G, 0, "gpu.memory.framebuffer.total_size"), 81559, 0);
    CHECK_NEAR(num(&G, 0, "gpu.memory.framebuffer.used_size"), 11125, 0);
    CHECK_NEAR(num(&G, 0, "gpu.clock.streaming_multiprocessor_frequency"), 1980, 0);
    CHECK_NEAR(num(&G, 0, "gpu.clock.mem_frequency"), 2619, 0);
    CHECK_EQ_STR(str(&G, 0, "gpu.pstate"), "P0");
    CHECK_NEAR(num(&G, 0, "gpu.throttling.reasons"), 0, 0);
    CHECK_EQ_INT(boolean(&G, 0, "gpu.throttling.reason.sw_power_cap"), 0);
    CHECK_EQ_INT(boolean(&G, 0, "gpu.throttling.reason.gpu_idle"), 0);
    CHECK_NEAR(num(&G, 0, "gpu.ecc.corrected.volatile.count"), 0, 0);
    CHECK_EQ_STR(str(&G, 0, "gpu.nvsmi.serial"), "0000000000000");
    CHECK_EQ_STR(str(&G, 0, "gpu.nvsmi.driver_version"), "590.48.01");
    CHECK_EQ_STR(str(&G, 0, "gpu.nvsmi.compute_cap"), "9.0");
    CHECK_EQ_STR(str(&G, 0, "gpu.nvsmi.pci_device_id"), "0x233010DE");
    CHECK_EQ_STR(str(&G, 0, "gpu.nvsmi.clocks_event_reasons_supported"), "0x00000000000001FF");
    CHECK_EQ_STR(str(&G, 0, "gpu.nvsmi.platform_peer_type"), "Direct Connected");
    CHECK_NEAR(num(&G, 0, "gpu.nvsmi.edpp_multiplier"), 100, 0);              /* "100.00 %" */
    CHECK_NEAR(num(&G, 0, "gpu.nvsmi.power_draw_instant"), 447.35, 1e-9);
    CHECK_NEAR(num(&G, 0, "gpu.nvsmi.clocks_event_reasons_counters_sw_power_cap"), 0, 0);   /* "0 us" */
    CHECK_NEAR(num(&G, 0, "gpu.nvsmi.remapped_rows_histogram_max"), 2560, 0);

    /* generic cross-check over all 212 cells of the raw text */
    const char *nl = strchr(t, '\n');
    CHECK(nl != NULL);
    if (!nl) { free(t); return; }
    char *hdr = xstrndup(t, (size_t)(nl - t));
    char *row = xstrdup(nl + 1);
    char *rn = strchr(row, '\n');
    if (rn) *rn = '\0';
    int cells = 0, checked = 0, absent = 0, bad = 0;
    char *hs = hdr, *rs = row;
    for (;;) {
        char *he = strstr(hs, ", "), *re = strstr(rs, ", ");
        if (he) *he = '\0';
        if (re) *re = '\0';
        cells++;
        char name[256];
        snprintf(name, sizeof name, "%s", hs);
        char *br = strstr(name, " [");
        if (br) *br = '\0';
        char *key = name_sanitize("gpu.nvsmi.", name, strlen(name));
        if (has(&G, 0, key)) {
            json_t *v = field(&G, 0, key);
            if (json_is_string(v)) { if (strcmp(json_string_value(v), rs)) bad++; }
            else { if (fabs(json_number_value(v) - strtod(rs, NULL)) > 1e-9) bad++; }
            checked++;
        } else if (rs[0] == '[' || !strcmp(rs, "N/A") || rs[0] == '\0') {
            absent++;
        }
        free(key);
        if (!he || !re) { CHECK(!he && !re); break; }
        hs = he + 2;
        rs = re + 2;
    }
    CHECK_EQ_INT(cells, 212);
    CHECK_EQ_INT(bad, 0);
    CHECK(checked > 90);
    CHECK(absent > 60);
    free(hdr);
    free(row);
    free(t);
}

TEST(l40s_and_compute_apps)
{
    gl_tz_set("UTC");
    char *t = corpus_file("ue-l40s-load.txt");
    CHECK(t != NULL);
    if (t) {
        run(&parser_auto, NULL, t, &G);
        CHECK_EQ_INT(G.n, 1);
        CHECK(!has(&G, 0, "gpu.temperature.memory"));     /* "N/A" without brackets */
        CHECK(has(&G, 0, "gpu.temperature.gpu"));
        free(t);
    }
    t = corpus_file("ue-h100-mig-load-computeapps.txt");
    CHECK(t != NULL);
    if (t) {
        run(&parser_auto, NULL, t, &G);
        CHECK_EQ_INT(G.n, 3);
        static const int pid[] = { 21180, 21181, 21198 }, mib[] = { 2296, 1272, 7484 };
        static const char *const pname[] = { "/root/tools/memhog", "/root/tools/memhog", "./gpu_burn" };
        for (int i = 0; i < 3 && i < G.n; i++) {
            CHECK_EQ_STR(str(&G, i, "event.dataset"), "gpu.query");
            CHECK_EQ_STR(str(&G, i, "@timestamp"), "2026-07-14T09:00:44.742Z");
            CHECK_NEAR(num(&G, i, "process.pid"), pid[i], 0);
            CHECK_EQ_STR(str(&G, i, "process.name"), pname[i]);
            CHECK_NEAR(num(&G, i, "gpu.process.memory.used_size"), mib[i], 0);
            CHECK_EQ_STR(str(&G, i, "gpu.name"), "NVIDIA H100 80GB HBM3");
            CHECK_EQ_STR(str(&G, i, "gpu.pci.bus_id"), "0000:00:09.0");
            CHECK_EQ_STR(str(&G, i, "gpu.uuid"), "GPU-00000000-0000-0000-0000-000000000000");
        }
        free(t);
    }
}

/* nounits: the header keeps "[MiB]", the values are bare. */
TEST(nounits)
{
    char *t = corpus_file("netdata-tesla-p100-nounits.txt");
    CHECK(t != NULL);
    if (!t) return;
    run(&parser_auto, NULL, t, &G);
    CHECK_EQ_INT(G.n, 1);
    CHECK_EQ_STR(str(&G, 0, "gpu.name"), "Tesla P100-PCIE-16GB");
    CHECK(!has(&G, 0, "gpu.fan.speed.pct"));
    CHECK_EQ_STR(str(&G, 0, "gpu.pstate"), "P0");
    CHECK_NEAR(num(&G, 0, "gpu.nvsmi.memory_reserved"), 103, 0);
    CHECK_NEAR(num(&G, 0, "gpu.memory.framebuffer.used_size"), 0, 0);
    CHECK_NEAR(num(&G, 0, "gpu.memory.framebuffer.free_size"), 16280, 0);   /* memory.free: the rule of every CSV */
    CHECK_NEAR(num(&G, 0, "gpu.temperature.gpu"), 37, 0);
    CHECK_NEAR(num(&G, 0, "gpu.power.usage"), 28.16, 1e-9);
    CHECK_NEAR(num(&G, 0, "gpu.clock.streaming_multiprocessor_frequency"), 405, 0);
    CHECK_NEAR(num(&G, 0, "gpu.clock.mem_frequency"), 715, 0);
    CHECK_NEAR(num(&G, 0, "gpu.nvsmi.clocks_current_video"), 835, 0);
    free(t);
    /* the same row with and without units gives the same fields */
    run(&parser_query_csv, NULL,
        "index, memory.used [MiB], power.draw [W]\n0, 2856 MiB, 106.56 W\n0, 2856, 106.56\n", &G);
    CHECK_EQ_INT(G.n, 2);
    CHECK_NEAR(num(&G, 0, "gpu.memory.framebuffer.used_size"), num(&G, 1, "gpu.memory.framebuffer.used_size"), 0);
    CHECK_NEAR(num(&G, 1, "gpu.memory.framebuffer.used_size"), 2856, 0);
    CHECK_NEAR(num(&G, 0, "gpu.power.usage"), 106.56, 1e-9);
    CHECK_NEAR(num(&G, 1, "gpu.power.usage"), 106.56, 1e-9);
}

/* A value unit that is not the header's unit is refused, not stripped. */
TEST(unit_mismatch)
{
    run(&parser_query_csv, NULL, "index, memory.used [MiB]\n0, 2 GiB\n0, x MiB\n", &G);
    CHECK_EQ_INT(G.n, 0);
    CHECK_EQ_INT(G.rejected, 2);
    CHECK(strstr(G.err, "not a number") != NULL);
    run(&parser_query_csv, NULL, "index, memory.used [MiB]\n0, 2 GiB\n", &G);
    CHECK(strstr(G.err, "[MiB]") != NULL);
}

TEST(missing_spellings)
{
    run(&parser_query_csv, NULL,
        "index, utilization.gpu [%], temperature.memory, power.draw [W], fan.speed [%], clocks.current.sm [MHz], "
        "pcie.link.gen.max, display_mode\n"
        "1, [N/A], N/A, [Not Supported], [Function Not Found], [Requested functionality has been deprecated], , -\n",
        &G);
    CHECK_EQ_INT(G.rejected, 0);
    CHECK_EQ_INT(G.n, 1);
    CHECK_NEAR(num(&G, 0, "gpu.index"), 1, 0);
    CHECK(!has(&G, 0, "gpu.utilization.gpu.pct"));
    CHECK(!has(&G, 0, "gpu.temperature.memory"));
    CHECK(!has(&G, 0, "gpu.power.usage"));
    CHECK(!has(&G, 0, "gpu.fan.speed.pct"));
    CHECK(!has(&G, 0, "gpu.clock.streaming_multiprocessor_frequency"));
    CHECK(!has(&G, 0, "gpu.nvsmi.pcie_link_gen_max"));
    CHECK(!has(&G, 0, "gpu.nvsmi.display_mode"));
}

/* nvidia-smi timestamps are local time with milliseconds. */
TEST(timestamp_local_ms)
{
    const char *text = "timestamp, index, utilization.gpu [%]\n2024/01/16 14:44:16.977, 0, 5 %\n";
    CHECK_EQ_INT(gl_tz_set("UTC"), GL_OK);
    run(&parser_query_csv, NULL, text, &G);
    CHECK_EQ_STR(str(&G, 0, "@timestamp"), "2024-01-16T14:44:16.977Z");
    CHECK_EQ_STR(str(&G, 0, "event.created"), "2023-11-14T22:13:20.000Z");
    CHECK_EQ_INT(gl_tz_set("Europe/Berlin"), GL_OK);     /* UTC+1 in January */
    run(&parser_query_csv, NULL, text, &G);
    CHECK_EQ_STR(str(&G, 0, "@timestamp"), "2024-01-16T13:44:16.977Z");
    gl_tz_set("UTC");
    run(&parser_query_csv, NULL, "timestamp, index\n2024/01/16 14:44:16, 0\n2024/13/16 14:44:16.1, 0\n", &G);
    CHECK_EQ_INT(G.n, 1);
    CHECK_EQ_STR(str(&G, 0, "@timestamp"), "2024-01-16T14:44:16.000Z");
    CHECK_EQ_INT(G.rejected, 1);
    CHECK(strstr(G.err, "timestamp") != NULL);
    run(&parser_query_csv, NULL, "timestamp, index\nyesterday, 0\n", &G);
    CHECK_EQ_INT(G.rejected, 1);
    CHECK_EQ_INT(G.n, 0);
}

/* -lms: header once, rows for each GPU each round, each with its timestamp;
 * a repeated header (restarted tool) is taken as a header again. */
TEST(looped_output)
{
    gl_tz_set("UTC");
    char *t = slurp("tests/fixtures/csv/query-looped-2gpu.csv");
    CHECK(t != NULL);
    if (!t) return;
    run(&parser_auto, NULL, t, &G);
    CHECK_EQ_INT(G.rejected, 0);
    CHECK_EQ_INT(G.declined, 2);
    CHECK_EQ_INT(G.n, 8);
    CHECK_EQ_STR(str(&G, 0, "@timestamp"), "2024-01-16T14:44:16.977Z");
    CHECK_EQ_STR(str(&G, 7, "@timestamp"), "2024-01-16T14:44:17.022Z");
    for (int i = 0; i < G.n; i++) CHECK_NEAR(num(&G, i, "gpu.index"), i % 2, 0);
    for (int i = 1; i < G.n; i++) {
        const char *a = str(&G, i - 1, "@timestamp"), *b = str(&G, i, "@timestamp");
        CHECK(a && b && strcmp(a, b) <= 0);
    }
    /* ids differ per row */
    CHECK(strcmp(str(&G, 0, "event.id"), str(&G, 1, "event.id")) != 0);
    free(t);
}

TEST(throttle_bitmask)
{
    CHECK_EQ_INT(throttle_nreasons, 9);
    uint64_t m = 0;
    CHECK(throttle_parse_mask("0x0000000000000044", 18, &m));
    CHECK_EQ_INT(m, 0x44);
    CHECK(throttle_parse_mask("260", 3, &m));
    CHECK_EQ_INT(m, 260);
    CHECK(!throttle_parse_mask("0xZZ", 4, &m));
    CHECK(!throttle_parse_mask("Active", 6, &m));
    CHECK_EQ_STR(throttle_reason_key("hw_slowdown", 11), "gpu.throttling.reason.hw_slowdown");
    CHECK(throttle_reason_key("nonsense", 8) == NULL);

    run(&parser_query_csv, NULL,
        "index, clocks_throttle_reasons.active, clocks_throttle_reasons.gpu_idle\n"
        "0, 0x0000000000000044, Not Active\n"
        "1, 0x0000000000000101, Active\n"
        "2, 0x00000000000001FF, Active\n", &G);
    CHECK_EQ_INT(G.n, 3);
    CHECK_NEAR(num(&G, 0, "gpu.throttling.reasons"), 0x44, 0);
    CHECK(is_int(&G, 0, "gpu.throttling.reasons"));
    CHECK_EQ_INT(boolean(&G, 0, "gpu.throttling.reason.sw_power_cap"), 1);
    CHECK_EQ_INT(boolean(&G, 0, "gpu.throttling.reason.hw_thermal_slowdown"), 1);
    CHECK_EQ_INT(boolean(&G, 0, "gpu.throttling.reason.gpu_idle"), 0);
    CHECK_EQ_INT(boolean(&G, 0, "gpu.throttling.reason.hw_slowdown"), 0);
    CHECK_EQ_INT(boolean(&G, 0, "gpu.throttling.reason.display_clock_setting"), 0);
    CHECK_EQ_INT(boolean(&G, 1, "gpu.throttling.reason.gpu_idle"), 1);
    CHECK_EQ_INT(boolean(&G, 1, "gpu.throttling.reason.display_clock_setting"), 1);
    CHECK_EQ_INT(boolean(&G, 1, "gpu.throttling.reason.sync_boost"), 0);
    for (size_t r = 0; r < throttle_nreasons; r++)
        CHECK_EQ_INT(boolean(&G, 2, throttle_reasons[r].key), 1);
    /* the per-reason column repeats the mask: no second gpu_idle key */
    int idle = 0;
    const char *k;
    json_t *v;
    json_object_foreach(G.ev[0], k, v) if (strstr(k, "gpu_idle")) idle++;
    CHECK_EQ_INT(idle, 1);
    /* new spelling, and per-reason columns alone */
    run(&parser_query_csv, NULL, "clocks_event_reasons.active\n0x0000000000000008\n", &G);
    CHECK_EQ_INT(boolean(&G, 0, "gpu.throttling.reason.hw_slowdown"), 1);
    run(&parser_query_csv, NULL,
        "index, clocks_event_reasons.sw_power_cap, clocks_event_reasons.hw_slowdown\n0, Active, Not Active\n", &G);
    CHECK_EQ_INT(boolean(&G, 0, "gpu.throttling.reason.sw_power_cap"), 1);
    CHECK_EQ_INT(boolean(&G, 0, "gpu.throttling.reason.hw_slowdown"), 0);
    CHECK(!has(&G, 0, "gpu.throttling.reasons"));
    run(&parser_query_csv, NULL, "index, clocks_event_reasons.active\n0, 0xnothex\n", &G);
    CHECK_EQ_INT(G.rejected, 1);
    CHECK(strstr(G.err, "bitmask") != NULL);
}

TEST(field_count_mismatch)
{
    run(&parser_query_csv, NULL,
        "index, name, temperature.gpu\n0, A100, 40\n1, A100\n2, A100, 41, 7\n3, A100, 42\n", &G);
    CHECK_EQ_INT(G.n, 2);
    CHECK_EQ_INT(G.rejected, 2);
    CHECK(strstr(G.err, "expected 3 fields") != NULL);
    CHECK(strstr(G.err, "got 4") != NULL);
    CHECK_NEAR(num(&G, 1, "gpu.index"), 3, 0);
    /* a name with a comma but no space still splits on ", " */
    run(&parser_query_csv, NULL, "pid, process_name, used_memory [MiB]\n7, python3 a.py --x=1,2, 10 MiB\n", &G);
    CHECK_EQ_INT(G.n, 1);
    CHECK_EQ_STR(str(&G, 0, "process.name"), "python3 a.py --x=1,2");
    /* fields written with bare commas still parse */
    run(&parser_query_csv, NULL, "index, temperature.gpu\n0,40\n", &G);
    CHECK_EQ_INT(G.n, 1);
    CHECK_NEAR(num(&G, 0, "gpu.temperature.gpu"), 40, 0);
    /* a mapped numeric field with text is refused */
    run(&parser_query_csv, NULL, "index, temperature.gpu\n0, hot\n", &G);
    CHECK_EQ_INT(G.rejected, 1);
    CHECK(strstr(G.err, "not a number") != NULL);
}

TEST(crlf)
{
    run(&parser_auto, NULL, "name, temperature.gpu, power.draw [W]\r\nTesla T4, 40, 27.50 W\r\n", &G);
    CHECK_EQ_INT(G.rejected, 0);
    CHECK_EQ_INT(G.n, 1);
    CHECK_EQ_STR(str(&G, 0, "gpu.name"), "Tesla T4");
    CHECK_NEAR(num(&G, 0, "gpu.power.usage"), 27.5, 1e-9);
    /* Windows tools may save a byte order mark before the header */
    run(&parser_auto, NULL, "\xef\xbb\xbfname, temperature.gpu\r\nTesla T4, 41\r\n", &G);
    CHECK_EQ_INT(G.rejected, 0);
    CHECK_NEAR(num(&G, 0, "gpu.temperature.gpu"), 41, 0);
}

TEST(aliases_and_duplicates)
{
    run(&parser_query_csv, NULL,
        "gpu_name, gpu_bus_id, clocks.gr [MHz], clocks.sm [MHz], clocks.mem [MHz], clocks.video [MHz], name\n"
        "A10, 00000000:3B:00.0, 1695 MHz, 1695 MHz, 6251 MHz, 1500 MHz, A10\n", &G);
    CHECK_EQ_INT(G.n, 1);
    CHECK_EQ_STR(str(&G, 0, "gpu.name"), "A10");
    CHECK_EQ_STR(str(&G, 0, "gpu.pci.bus_id"), "0000:3b:00.0");
    CHECK_NEAR(num(&G, 0, "gpu.clock.graphics_frequency"), 1695, 0);
    CHECK_NEAR(num(&G, 0, "gpu.clock.streaming_multiprocessor_frequency"), 1695, 0);
    CHECK_NEAR(num(&G, 0, "gpu.clock.mem_frequency"), 6251, 0);
    CHECK_NEAR(num(&G, 0, "gpu.nvsmi.clocks_current_video"), 1500, 0);
    int names = 0;
    const char *k;
    json_t *v;
    json_object_foreach(G.ev[0], k, v) if (!strcmp(k, "gpu.name")) names++;
    CHECK_EQ_INT(names, 1);
}

/* Numbers stay numbers, identifiers and words stay strings. */
TEST(value_types)
{
    run(&parser_query_csv, NULL,
        "index, driver_version, persistence_mode, pstate, accounting.buffer_size, inforom.oem, serial, gom.current\n"
        "0, 570.86, Enabled, P8, 4000, 2.1, 0320218011234, 12.5\n", &G);
    CHECK_EQ_INT(G.n, 1);
    CHECK_EQ_STR(str(&G, 0, "gpu.nvsmi.driver_version"), "570.86");
    CHECK_EQ_STR(str(&G, 0, "gpu.nvsmi.persistence_mode"), "Enabled");
    CHECK_EQ_STR(str(&G, 0, "gpu.pstate"), "P8");
    CHECK(is_int(&G, 0, "gpu.nvsmi.accounting_buffer_size"));
    CHECK_EQ_STR(str(&G, 0, "gpu.nvsmi.inforom_oem"), "2.1");
    CHECK_EQ_STR(str(&G, 0, "gpu.nvsmi.serial"), "0320218011234");
    CHECK_NEAR(num(&G, 0, "gpu.nvsmi.gom_current"), 12.5, 1e-12);
}

TEST(sniff)
{
    const struct parser_ops *q = &parser_query_csv;
    static const char *const headers[] = {
        "name, fan.speed [%], memory.total [MiB], memory.used [MiB], utilization.gpu [%], temperature.gpu",
        "pstate",
        "utilization.gpu [%]",
        "timestamp, gpu_name, gpu_bus_id, gpu_serial, gpu_uuid, pid, process_name, used_gpu_memory [MiB]",
        "index,name,temperature.gpu",
    };
    for (size_t i = 0; i < GL_ARRAY_LEN(headers); i++) {
        int sc = q->sniff(headers[i], strlen(headers[i]));
        if (sc != 90) printf("  header %zu scored %d\n", i, sc);
        CHECK_EQ_INT(sc, 90);
    }
    static const char *const data[] = {
        "GeForce GTX 1080 Ti, 29 %, 11175 MiB, 2856 MiB, 36 %, 60, 106.56 W, 1936 MHz, 5508 MHz",
        "P8", "1 %", "2233095, 1190",
        "2026/07/14 09:00:44.742, NVIDIA H100 80GB HBM3, 00000000:00:09.0, 0000000000000, GPU-0, 21180, /root/tools/memhog, 2296 MiB",
        "Tesla P100-PCIE-16GB, GPU-ef1b2c9b-38d8-2090-2bd1-f567a3eb42a6, [N/A], P0, 103",
        "# gpu, power_draw, temp_gpu, utilization_gpu",
        "# gpu   pwr gtemp mtemp    sm   mem",
        "", "No devices were found",
    };
    for (size_t i = 0; i < GL_ARRAY_LEN(data); i++) {
        int sc = q->sniff(data[i], strlen(data[i]));
        if (sc) printf("  data %zu scored %d\n", i, sc);
        CHECK_EQ_INT(sc, 0);
    }
    /* a generic time series header mentions timestamp but is not nvidia-smi's:
     * csv (60) must win over query-csv */
    const char *gen = "timestamp,gpu,power_draw,host";
    CHECK(q->sniff(gen, strlen(gen)) < parser_csv.sniff(gen, strlen(gen)));
    const char *qh = "timestamp, index, utilization.gpu [%]";
    CHECK(q->sniff(qh, strlen(qh)) > parser_csv.sniff(qh, strlen(qh)));
}

int main(void)
{
    gl_tz_set("UTC");
    RUN(corpus_auto);
    RUN(corpus_noheader_with_columns);
    RUN(bpytop_values);
    RUN(h100_cell_by_cell);
    RUN(l40s_and_compute_apps);
    RUN(nounits);
    RUN(unit_mismatch);
    RUN(missing_spellings);
    RUN(timestamp_local_ms);
    RUN(looped_output);
    RUN(throttle_bitmask);
    RUN(field_count_mismatch);
    RUN(crlf);
    RUN(aliases_and_duplicates);
    RUN(value_types);
    RUN(sniff);
    got_clear(&G);
    return TEST_REPORT();
}
