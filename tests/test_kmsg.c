/* test_kmsg.c - kernel Xid/SXid parser, prefixes, fallen-off-the-bus and the catalog. */
#include "test.h"
#include "../parsers/parser.h"
#include "../parsers/kmsg.h"
#include "../parsers/xid_catalog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CORPUS "tests/corpus/xid/"
#define FIX "tests/fixtures/kmsg/"
#include "parse_harness.h"

/* ---- corpus ---- */

TEST(akash_244_value_by_value)
{
    struct coll c = { 0 };
    struct parser_stats st = run_file(&parser_auto, CORPUS "akash-244-xid43-31-94-dmesg-T.txt", &c);
    CHECK_EQ_INT(c.n, 4);
    CHECK_EQ_INT(st.rejected, 0);
    CHECK_EQ_INT(st.declined, 7);
    const struct event *e = at(&c, 0);
    CHECK_EQ_STR(e->kind, "event");
    CHECK_EQ_STR(e->dataset, "gpu.xid");
    CHECK_EQ_STR(TS(e), "2024-07-31T23:14:18.000Z");
    CHECK_EQ_INT(I(e, "gpu.xid.code"), 43);
    CHECK_EQ_STR(S(e, "gpu.xid.severity"), "info");
    CHECK_EQ_INT(I(e, "event.severity"), 1);
    CHECK_EQ_STR(S(e, "gpu.xid.class"), "application");
    CHECK(HAS(e, "gpu.xid.action"));
    CHECK(HAS(e, "gpu.xid.name"));
    CHECK_EQ_STR(S(e, "gpu.pci.bus_id"), "0000:00:05.0");
    CHECK_EQ_STR(S(e, "gpu.uuid"), "GPU-efbdfde9-5798-a6e7-4c46-12518fa15375");
    CHECK_EQ_INT(I(e, "process.pid"), 1045242);
    CHECK_EQ_STR(S(e, "process.name"), "pt_main_thread");
    CHECK_EQ_STR(S(e, "message"), "Ch 00000008");
    CHECK_EQ_STR(S(e, "event.original"),
                 "[Wed Jul 31 23:14:18 2024] NVRM: Xid (PCI:0000:00:05): 43, pid=1045242, name=pt_main_thread, Ch 00000008");
    CHECK_EQ_STR(e->host, "n1");

    e = at(&c, 1);
    CHECK_EQ_INT(I(e, "gpu.xid.code"), 43);
    CHECK_EQ_INT(I(e, "process.pid"), 1084984);
    CHECK_EQ_STR(TS(e), "2024-07-31T23:15:26.000Z");

    e = at(&c, 2);
    CHECK_EQ_INT(I(e, "gpu.xid.code"), 31);
    CHECK_EQ_STR(S(e, "gpu.xid.severity"), "warning");
    CHECK_EQ_INT(I(e, "event.severity"), 2);
    CHECK_EQ_STR(TS(e), "2024-08-05T03:54:13.000Z");
    CHECK_EQ_STR(S(e, "gpu.pci.bus_id"), "0000:00:07.0");
    CHECK_EQ_STR(S(e, "gpu.uuid"), "GPU-3b6ec030-5adc-1847-e155-79f635584b4e");
    CHECK_EQ_INT(I(e, "process.pid"), 2512125);
    CHECK_EQ_STR(S(e, "process.name"), "python3.10");
    CHECK_EQ_STR(S(e, "message"),
                 "Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_8 faulted @ 0x73ac_1c000000. "
                 "Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_WRITE");

    e = at(&c, 3);
    CHECK_EQ_INT(I(e, "gpu.xid.code"), 94);
    CHECK_EQ_STR(S(e, "gpu.xid.class"), "ecc");
    CHECK_EQ_STR(S(e, "gpu.pci.bus_id"), "0000:00:08.0");
    CHECK_EQ_STR(S(e, "gpu.uuid"), "GPU-c24840ec-8de1-83d5-b126-08000173ae32");
    CHECK(!HAS(e, "process.pid"));
    CHECK(!HAS(e, "process.name"));
    CHECK_EQ_STR(S(e, "message"), "Contained: SM (0x1). RST: No, D-RST: No");
    coll_free(&c);
}

TEST(gpud_readme_xid79_and_sxid20034)
{
    struct coll c = { 0 };
    struct parser_stats st = run_file(&parser_auto, CORPUS "gpud-readme-xid79-sxid20034.txt", &c);
    CHECK_EQ_INT(st.rejected, 0);
    CHECK_EQ_INT(c.n, 9);   /* one Xid 79 (the echo line is not a second one) + 8 SXid lines */
    const struct event *e = at(&c, 0);
    CHECK_EQ_STR(e->dataset, "gpu.xid");
    CHECK_EQ_INT(I(e, "gpu.xid.code"), 79);
    CHECK_EQ_STR(S(e, "gpu.xid.severity"), "critical");
    CHECK_EQ_INT(I(e, "event.severity"), 3);
    CHECK_EQ_STR(S(e, "gpu.xid.class"), "bus");
    CHECK_EQ_STR(S(e, "gpu.pci.bus_id"), "0000:91:00.0");
    CHECK_EQ_STR(S(e, "gpu.uuid"), "GPU-b6c3b2be-c55b-d076-fa0e-d464e4c7e08b");
    CHECK_EQ_STR(S(e, "message"), "GPU has fallen off the bus.");
    CHECK_EQ_INT(e->ts_ms, read_time);     /* boot-relative prefix: read time */
    int fatal = 0;
    for (int i = 1; i < c.n; i++) {
        e = at(&c, i);
        CHECK_EQ_STR(e->dataset, "gpu.sxid");
        CHECK_EQ_STR(e->kind, "event");
        CHECK_EQ_INT(I(e, "gpu.sxid.code"), 20034);
        CHECK(!HAS(e, "gpu.xid.code"));
        CHECK(!HAS(e, "gpu.xid.severity"));   /* switch errors have their own fields */
        CHECK_EQ_STR(S(e, "gpu.sxid.severity"), "critical");
        CHECK_EQ_INT(I(e, "event.severity"), 3);
        CHECK_EQ_STR(S(e, "gpu.sxid.class"), "nvlink");
        CHECK(HAS(e, "event.original"));
        const char *m = S(e, "message");
        if (m && !strncmp(m, "Fatal, Link", 11)) fatal++;
    }
    CHECK_EQ_INT(fatal, 4);
    e = at(&c, 1);
    CHECK_EQ_STR(S(e, "gpu.pci.bus_id"), "0000:06:00.0");
    CHECK_EQ_STR(S(e, "message"), "Fatal, Link 48 LTSSM Fault Up");
    e = at(&c, 3);
    CHECK_EQ_STR(S(e, "gpu.pci.bus_id"), "0000:07:00.0");
    CHECK_EQ_STR(S(e, "message"), "Severity 1 Engine instance 60 Sub-engine instance 00");
    coll_free(&c);
}

TEST(nvtrust_sxid22013_info)
{
    struct coll c = { 0 };
    struct parser_stats st = run_file(&parser_auto, CORPUS "nvtrust-124-sxid22013-h100-boot.txt", &c);
    CHECK_EQ_INT(st.rejected, 0);
    CHECK_EQ_INT(st.declined, 1);          /* the "loading NVIDIA UNIX" line */
    CHECK_EQ_INT(c.n, 8);
    for (int i = 0; i < c.n; i++) {
        const struct event *e = at(&c, i);
        CHECK_EQ_INT(I(e, "gpu.sxid.code"), 22013);
        CHECK_EQ_STR(S(e, "gpu.sxid.severity"), "info");   /* Non-fatal does not raise it */
        CHECK_EQ_INT(I(e, "event.severity"), 1);
        CHECK_EQ_STR(S(e, "gpu.pci.bus_id"), "0000:04:00.0");
    }
    CHECK_EQ_STR(S(at(&c, 1), "message"), "Non-fatal, Link 44 Minion Link DLREQ interrupt");
    coll_free(&c);
}

TEST(sxid12028_iso_decode_prefix)
{
    struct coll c = { 0 };
    run_file(&parser_auto, CORPUS "gpud-pr338-sxid12028-dmesg-decode-iso.txt", &c);
    CHECK_EQ_INT(c.n, 1);
    const struct event *e = at(&c, 0);
    CHECK_EQ_STR(TS(e), "2025-01-25T10:34:54.859Z");
    CHECK_EQ_INT(I(e, "gpu.sxid.code"), 12028);
    CHECK_EQ_STR(S(e, "gpu.sxid.severity"), "critical");
    CHECK_EQ_STR(S(e, "gpu.pci.bus_id"), "0000:84:00.0");
    const char *m = S(e, "message");
    CHECK(m && !strncmp(m, "Data {0x000001c0, ", 18));
    coll_free(&c);
}

TEST(every_corpus_file)
{
    static const struct { const char *file; int events; int rejected; } want[] = {
        { "akash-244-xid43-31-94-dmesg-T.txt", 4, 0 },
        { "bumblebee-608-xid44-31-legacy.txt", 2, 0 },
        { "bumblebee-677-xid32-31-legacy.txt", 3, 0 },
        { "gpud-pr338-sxid12028-dmesg-decode-iso.txt", 1, 0 },
        /* line 1 (nvidia-peermem) is no NVIDIA driver line, but its kernel time
         * prefix sends it to the kmsg parser, which skips it */
        { "gpud-pr46-xid13-109-dmesg-ctime.txt", 4, 0 },
        { "gpud-readme-xid79-sxid20034.txt", 9, 0 },
        { "gpud-testdata-xid119-gsp-dmesg-ctime.txt", 5, 0 },
        { "gpud-testdata-xid13-43-dmesg-iso.txt", 17, 0 },
        { "nvtrust-124-sxid22013-h100-boot.txt", 8, 0 },
        { "ogkm-363-xid31-gtx1660ti-no-timestamp.txt", 2, 0 },
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
            CHECK(HAS(e, "event.original"));
            CHECK(I(e, "gpu.xid.code") != NOINT ? HAS(e, "gpu.xid.severity") : HAS(e, "gpu.sxid.severity"));
            CHECK(I(e, "gpu.xid.code") != NOINT || I(e, "gpu.sxid.code") != NOINT);
        }
        coll_free(&c);
    }
}

TEST(legacy_and_gsp_values)
{
    struct coll c = { 0 };
    run_file(&parser_auto, CORPUS "bumblebee-677-xid32-31-legacy.txt", &c);
    CHECK_EQ_INT(c.n, 3);
    const struct event *e = at(&c, 0);
    CHECK_EQ_INT(I(e, "gpu.xid.code"), 32);
    CHECK_EQ_STR(S(e, "message"), "Channel ID 00000000 intr 00004000");
    CHECK(!HAS(e, "process.pid"));
    coll_free(&c);

    run_file(&parser_auto, CORPUS "gpud-testdata-xid119-gsp-dmesg-ctime.txt", &c);
    CHECK_EQ_INT(c.n, 5);
    e = at(&c, 3);
    CHECK_EQ_INT(I(e, "gpu.xid.code"), 119);
    CHECK_EQ_STR(S(e, "gpu.xid.severity"), "critical");
    CHECK_EQ_STR(S(e, "process.name"), "cache_mgr_main");
    CHECK_EQ_INT(I(e, "process.pid"), 1263500);
    CHECK_EQ_STR(S(e, "gpu.uuid"), "GPU-509665ad-b600-ac93-3616-d754b23d636d");
    CHECK_EQ_STR(TS(e), "2025-02-23T16:27:12.000Z");
    coll_free(&c);

    /* a redacted UUID ("GPU-UID") is not taken as one */
    run_file(&parser_auto, CORPUS "ogkm-363-xid31-gtx1660ti-no-timestamp.txt", &c);
    CHECK_EQ_INT(c.n, 2);
    e = at(&c, 0);
    CHECK(!HAS(e, "gpu.uuid"));
    CHECK_EQ_STR(S(e, "process.name"), "chrome");
    CHECK_EQ_INT(e->ts_ms, read_time);
    coll_free(&c);
}

/* ---- fallen off the bus ---- */

TEST(fallen_off_bus_three_lines_dmesg)
{
    struct coll c = { 0 };
    struct parser_stats st = run_file(&parser_auto, FIX "fallen-off-bus-dmesg.txt", &c);
    CHECK_EQ_INT(c.n, 1);
    CHECK_EQ_INT(st.rejected, 0);
    const struct event *e = at(&c, 0);
    CHECK_EQ_STR(e->dataset, "gpu.xid");
    CHECK_EQ_INT(I(e, "gpu.xid.code"), 79);
    CHECK_EQ_STR(S(e, "gpu.xid.name"), "GPU fallen off the bus");
    CHECK_EQ_STR(S(e, "gpu.xid.severity"), "critical");
    CHECK_EQ_INT(I(e, "event.severity"), 3);
    CHECK_EQ_STR(S(e, "gpu.pci.bus_id"), "0000:b3:00.0");
    CHECK_EQ_STR(S(e, "message"),
                 "The NVIDIA GPU 0000:b3:00.0 (PCI ID: 10de:26b5) installed in this system has "
                 "fallen off the bus and is not responding to commands.");
    const char *o = S(e, "event.original");
    CHECK(o && !strncmp(o, "[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0\n", 48));
    CHECK(o && strstr(o, "\n               NVRM: fallen off the bus and is not responding to commands."));
    CHECK_EQ_INT(e->offset, 0);            /* the message starts at the first line */
    coll_free(&c);
}

TEST(fallen_off_bus_three_lines_syslog)
{
    struct coll c = { 0 };
    int64_t saved = read_time;
    read_time = iso("2025-11-01T00:00:00Z");
    run_file(&parser_kmsg, FIX "fallen-off-bus-syslog.txt", &c);
    read_time = saved;
    CHECK_EQ_INT(c.n, 1);
    const struct event *e = at(&c, 0);
    CHECK_EQ_INT(I(e, "gpu.xid.code"), 79);
    CHECK_EQ_STR(TS(e), "2025-10-25T10:12:03.000Z");
    CHECK_EQ_STR(S(e, "gpu.pci.bus_id"), "0000:b3:00.0");
    CHECK_EQ_STR(S(e, "gpu.uuid"), "GPU-0d4c7a4e-2f55-8c1b-95a1-3c0de0f1e2a7");
    CHECK_EQ_STR(e->host, "n1");           /* --host is kept, not the syslog host */
    coll_free(&c);
}

TEST(fallen_off_bus_single_line_and_echo)
{
    struct coll c = { 0 };
    run_str(&parser_kmsg, "[ 99.1] NVRM: GPU 0000:a1:00.0: GPU has fallen off the bus.\n", &c);
    CHECK_EQ_INT(c.n, 1);
    const struct event *e = at(&c, 0);
    CHECK_EQ_INT(I(e, "gpu.xid.code"), 79);
    CHECK_EQ_STR(S(e, "gpu.xid.severity"), "critical");
    CHECK_EQ_STR(S(e, "gpu.pci.bus_id"), "0000:a1:00.0");
    CHECK_EQ_STR(S(e, "message"), "GPU has fallen off the bus.");
    coll_free(&c);

    /* right after an Xid 79 of the same GPU it is the same failure; another GPU is not */
    run_str(&parser_kmsg,
            "NVRM: Xid (PCI:0000:a1:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"
            "NVRM: GPU 0000:a1:00.0: GPU has fallen off the bus.\n"
            "NVRM: GPU 0000:c1:00.0: GPU has fallen off the bus.\n", &c);
    CHECK_EQ_INT(c.n, 2);
    CHECK_EQ_STR(S(at(&c, 1), "gpu.pci.bus_id"), "0000:c1:00.0");
    coll_free(&c);
}

TEST(other_probe_messages_are_not_fallen_off)
{
    struct coll c = { 0 };
    struct parser_stats st = run_str(&parser_kmsg,
            "[    5.1] NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:1f95)\n"
            "          NVRM: installed in this system is not supported by open\n"
            "          NVRM: nvidia.ko because it does not include the required GPU\n"
            "[    5.2] NVRM: The NVIDIA GPU 0000:02:00.0\n", &c);   /* unfinished at the end */
    CHECK_EQ_INT(c.n, 0);
    CHECK_EQ_INT(st.rejected, 0);
    CHECK_EQ_INT(st.declined, 4);
    coll_free(&c);
}

TEST(continuation_takes_first_line_time)
{
    struct coll c = { 0 };
    run_str(&parser_auto,
            "[Tue Mar  4 02:11:09 2025] NVRM: The NVIDIA GPU 0000:b3:00.0\n"
            "                           NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
            "                           NVRM: fallen off the bus and is not responding to commands.\n", &c);
    CHECK_EQ_INT(c.n, 1);
    CHECK_EQ_STR(TS(at(&c, 0)), "2025-03-04T02:11:09.000Z");
    coll_free(&c);
}

/* ---- prefixes and times ---- */

TEST(prefix_styles_utc)
{
    static const struct { const char *line; const char *ts; } cases[] = {
        { "[Tue Mar  4 02:11:09 2025] NVRM: Xid (PCI:0000:3b:00): 48, pid=1, name=a, DBE", "2025-03-04T02:11:09.000Z" },
        { "[Mon Apr 15 21:29:39 2024] NVRM: Xid (PCI:0000:3b:00): 48, pid=1, name=a, DBE", "2024-04-15T21:29:39.000Z" },
        { "Mar  4 02:11:10 node7 kernel: NVRM: Xid (PCI:0000:3b:00): 48, pid=1, name=a, DBE", "2025-03-04T02:11:10.000Z" },
        { "Mar 14 02:11:10.250123 node7 kernel: NVRM: Xid (PCI:0000:3b:00): 48, DBE", "2025-03-14T02:11:10.250Z" },
        { "kern  :warn  : 2025-01-25T10:34:54,859532+00:00 NVRM: Xid (PCI:0000:3b:00): 48, DBE", "2025-01-25T10:34:54.859Z" },
        { "kern  :warn  : 2025-01-25T10:34:54,859532+02:00 NVRM: Xid (PCI:0000:3b:00): 48, DBE", "2025-01-25T08:34:54.859Z" },
        { "2025-01-25T10:34:54+0000 node7 kernel: NVRM: Xid (PCI:0000:3b:00): 48, DBE", "2025-01-25T10:34:54.000Z" },
        { "Mar  4 02:11:10 node7 kernel: [ 1843.308145] NVRM: Xid (PCI:0000:3b:00): 48, DBE", "2025-03-04T02:11:10.000Z" },
        { "[ 1843.308145] NVRM: Xid (PCI:0000:3b:00): 48, DBE", "2025-06-01T12:00:00.000Z" },
        { "4,1234,1843308145,-;NVRM: Xid (PCI:0000:3b:00): 48, DBE", "2025-06-01T12:00:00.000Z" },
        { "kernel: NVRM: Xid (PCI:0000:3b:00): 48, DBE", "2025-06-01T12:00:00.000Z" },
        { "NVRM: Xid (PCI:0000:3b:00): 48, DBE", "2025-06-01T12:00:00.000Z" },
        { "<4>NVRM: Xid (PCI:0000:3b:00): 48, DBE", "2025-06-01T12:00:00.000Z" },
    };
    int64_t saved = read_time;
    read_time = iso("2025-06-01T12:00:00Z");
    for (size_t i = 0; i < GL_ARRAY_LEN(cases); i++) {
        struct coll c = { 0 };
        run_str(&parser_auto, cases[i].line, &c);
        CHECK_EQ_INT(c.n, 1);
        const struct event *e = at(&c, 0);
        if (strcmp(TS(e), cases[i].ts)) printf("  case %zu: %s\n", i, cases[i].line);
        CHECK_EQ_STR(TS(e), cases[i].ts);
        CHECK_EQ_INT(I(e, "gpu.xid.code"), 48);
        CHECK_EQ_STR(S(e, "gpu.xid.severity"), "critical");
        CHECK_EQ_STR(S(e, "gpu.pci.bus_id"), "0000:3b:00.0");
        CHECK_EQ_STR(S(e, "event.original"), cases[i].line);
        coll_free(&c);
    }
    read_time = saved;
}

TEST(syslog_year_rollover)
{
    struct coll c = { 0 };
    int64_t saved = read_time;
    /* read on Jan 2: a December line is from last year */
    read_time = iso("2025-01-02T00:00:00Z");
    run_str(&parser_kmsg, "Dec 31 23:59:59 h kernel: NVRM: Xid (PCI:0000:3b:00): 13, x", &c);
    CHECK_EQ_INT(c.n, 1);
    CHECK_EQ_STR(TS(at(&c, 0)), "2024-12-31T23:59:59.000Z");
    coll_free(&c);
    /* a few hours ahead of the read time (clock skew) stays in this year */
    read_time = iso("2025-03-04T00:00:00Z");
    run_str(&parser_kmsg, "Mar  4 02:11:10 h kernel: NVRM: Xid (PCI:0000:3b:00): 13, x", &c);
    CHECK_EQ_STR(TS(at(&c, 0)), "2025-03-04T02:11:10.000Z");
    coll_free(&c);
    /* read on Dec 31 late, local zone already in January (zone ahead of UTC) */
    read_time = iso("2025-12-31T23:30:00Z");
    run_str(&parser_kmsg, "Jan  1 00:10:00 h kernel: NVRM: Xid (PCI:0000:3b:00): 13, x", &c);
    CHECK_EQ_STR(TS(at(&c, 0)), "2026-01-01T00:10:00.000Z");
    coll_free(&c);
    read_time = saved;
}

TEST(dmesg_T_in_other_zone)
{
    struct coll c = { 0 };
    CHECK(gl_tz_set("Europe/Berlin") == GL_OK);
    run_str(&parser_kmsg, "[Tue Mar  4 02:11:09 2025] NVRM: Xid (PCI:0000:3b:00): 48, DBE", &c);
    CHECK_EQ_STR(TS(at(&c, 0)), "2025-03-04T01:11:09.000Z");
    coll_free(&c);
    run_str(&parser_kmsg, "kern  :warn  : 2025-01-25T10:34:54,859532+00:00 NVRM: Xid (PCI:0000:3b:00): 48, DBE", &c);
    CHECK_EQ_STR(TS(at(&c, 0)), "2025-01-25T10:34:54.859Z");   /* explicit offset wins */
    coll_free(&c);
    gl_tz_set("UTC");
}

TEST(uptime_helper)
{
    double s = -1;
    CHECK(kmsg_prefix_uptime("[ 1843.308145] NVRM: x", 21, &s));
    CHECK_NEAR(s, 1843.308145, 1e-9);
    const char *l = "6,991,6781741548768,-;NVRM: Xid";
    CHECK(kmsg_prefix_uptime(l, strlen(l), &s));
    CHECK_NEAR(s, 6781741.548768, 1e-6);
    l = "kern  :warn  : [   94.573839] NVRM: Xid";
    CHECK(kmsg_prefix_uptime(l, strlen(l), &s));
    CHECK_NEAR(s, 94.573839, 1e-9);
    l = "[Tue Mar  4 02:11:09 2025] NVRM: Xid";
    CHECK(!kmsg_prefix_uptime(l, strlen(l), &s));
    CHECK(!kmsg_prefix_uptime("NVRM: Xid", 9, &s));
    CHECK(!kmsg_prefix_uptime("[abc] x", 7, &s));
}

/* ---- Xid variants ---- */

TEST(nvlink5_fatal_nonfatal)
{
    struct coll c = { 0 };
    run_file(&parser_auto, FIX "nvlink5-dmesg-T.txt", &c);
    CHECK_EQ_INT(c.n, 3);
    const struct event *e = at(&c, 0);
    CHECK_EQ_INT(I(e, "gpu.xid.code"), 145);
    CHECK_EQ_STR(S(e, "gpu.xid.severity"), "warning");
    CHECK_EQ_INT(I(e, "event.severity"), 2);
    CHECK_EQ_STR(S(e, "gpu.xid.class"), "nvlink");
    CHECK_EQ_STR(S(e, "gpu.pci.bus_id"), "0018:01:00.0");
    CHECK(!HAS(e, "process.pid"));
    const char *m = S(e, "message");
    CHECK(m && !strncmp(m, "RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2", 46));
    e = at(&c, 1);
    CHECK_EQ_INT(I(e, "gpu.xid.code"), 149);
    CHECK_EQ_STR(S(e, "gpu.xid.severity"), "critical");
    CHECK_EQ_INT(I(e, "process.pid"), 88231);
    CHECK_EQ_STR(S(e, "process.name"), "python3");
    e = at(&c, 2);
    CHECK_EQ_INT(I(e, "gpu.xid.code"), 45);
    CHECK_EQ_STR(S(e, "gpu.xid.severity"), "info");
    CHECK_EQ_STR(S(e, "message"), "Ch 00000001 caused by previous Xid 149");
    CHECK_EQ_STR(TS(e), "2025-03-04T02:11:10.000Z");
    coll_free(&c);
}

TEST(unknown_code_and_bare_bus)
{
    struct coll c = { 0 };
    run_str(&parser_kmsg,
            "NVRM: Xid (PCI:0000:3b:00): 999, pid=12, name=my app, something new\n"
            "NVRM: Xid (0000:03:00): 14, pid=7, name=test, fake\n"
            "NVRM: Xid (PCI:0000:3b:00): 62\n", &c);
    CHECK_EQ_INT(c.n, 3);
    const struct event *e = at(&c, 0);
    CHECK_EQ_INT(I(e, "gpu.xid.code"), 999);
    CHECK_EQ_STR(S(e, "gpu.xid.name"), "unknown");
    CHECK_EQ_STR(S(e, "gpu.xid.severity"), "warning");
    CHECK_EQ_INT(I(e, "event.severity"), 2);
    CHECK(!HAS(e, "gpu.xid.class"));
    CHECK_EQ_STR(S(e, "process.name"), "my app");
    CHECK_EQ_STR(S(e, "message"), "something new");
    e = at(&c, 1);
    CHECK_EQ_STR(S(e, "gpu.pci.bus_id"), "0000:03:00.0");
    CHECK_EQ_INT(I(e, "gpu.xid.code"), 14);
    CHECK_EQ_STR(S(e, "gpu.xid.severity"), "info");
    e = at(&c, 2);
    CHECK_EQ_INT(I(e, "gpu.xid.code"), 62);
    CHECK_EQ_STR(S(e, "gpu.xid.severity"), "critical");
    CHECK(!HAS(e, "message"));
    coll_free(&c);
}

TEST(non_kernel_lines_declined)
{
    struct coll c = { 0 };
    struct parser_stats st = run_str(&parser_kmsg,
            "[  12.345678] usb 1-1: new high-speed USB device number 2 using xhci_hcd\n"
            "# gpu   pwr gtemp\n"
            "    0    61    34\n"
            "Feb 14 05:03:41 host systemd[1]: Started foo.\n"
            "[Sun Feb 23 16:24:18 2025]  dump_stack+0x10/0x16\n"
            "[Sun Feb 23 16:24:18 2025] NVRM: GPU4 RPC history (CPU -> GSP):\n"
            "NVRM: Xid garbage without a code\n"
            "\n", &c);
    CHECK_EQ_INT(c.n, 0);
    CHECK_EQ_INT(st.declined, 7);
    CHECK_EQ_INT(st.rejected, 1);   /* the malformed Xid line is reported */
    coll_free(&c);
}

TEST(sniff_only_nvidia_kernel_lines)
{
    static const char *yes[] = {
        "[ 1.0] NVRM: Xid (PCI:0000:01:00): 31, x",
        "nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal",
        "Feb 14 05:03:41 h kernel: NVRM: loading NVIDIA UNIX",
        "kern  :err   : 2025-01-25T10:34:54,859532+00:00 nvidia-nvswitch1: probe",
    };
    static const char *no[] = {
        "# gpu   pwr gtemp mtemp    sm   mem",
        "    0     61    34     -     0     0",
        "# gpu         pid   type     sm    mem    enc    dec    jpg    ofa    command",
        "#Entity    SMACT",
        "GPU 0      N/A",
        "[Fri Aug 30 11:11:22 2024] nvidia-peermem nv_get_p2p_free_callback:127 ERROR",
        "[  12.3] usb 1-1: new device",
        "",
    };
    for (size_t i = 0; i < GL_ARRAY_LEN(yes); i++) CHECK(parser_kmsg.sniff(yes[i], strlen(yes[i])) > 0);
    for (size_t i = 0; i < GL_ARRAY_LEN(no); i++) CHECK_EQ_INT(parser_kmsg.sniff(no[i], strlen(no[i])), 0);
}

/* 1 when lit occurs in the n bytes at s (the reference of the sniffer). */
static int has_lit(const char *s, size_t n, const char *lit)
{
    size_t l = strlen(lit);
    for (size_t i = 0; i + l <= n; i++)
        if (!memcmp(s + i, lit, l)) return 1;
    return 0;
}

TEST(sniff_every_length_and_position)
{
    /* the sniffer looks for the marks' first letters 16 or 32 bytes at a
     * time, the last block overlapping: each mark, whole or cut short by the
     * line's end, at every position of lines 1..80 bytes long, among decoy
     * letters (N, n, S, s, M); the answer must be a plain search's */
    static const char *marks[] = { "NVRM:", "SXid", "nvidia-nvswitch", "NVRM", "SXi", "nvidia-nvswitc", "nVRM:", "sXid" };
    char line[96];
    int bad = 0, yes = 0;
    for (size_t n = 1; n <= 80; n++)
        for (size_t pos = 0; pos < n; pos++)
            for (size_t k = 0; k < GL_ARRAY_LEN(marks); k++) {
                for (size_t i = 0; i < n; i++) line[i] = "0 1N2n3S4s5M"[(i * 7 + n) % 12];
                size_t l = strlen(marks[k]);
                memcpy(line + pos, marks[k], pos + l <= n ? l : n - pos);
                int want = has_lit(line, n, "NVRM:") || has_lit(line, n, "SXid") || has_lit(line, n, "nvidia-nvswitch");
                int got = parser_kmsg.sniff(line, n) > 0;
                yes += want;
                if (got != want && bad++ < 3) printf("  n=%zu pos=%zu mark=%s: %d, expected %d\n", n, pos, marks[k], got, want);
            }
    CHECK_EQ_INT(bad, 0);
    CHECK(yes > 3000);
}

TEST(ids_are_deterministic)
{
    struct coll a = { 0 }, b = { 0 };
    run_file(&parser_auto, CORPUS "akash-244-xid43-31-94-dmesg-T.txt", &a);
    run_file(&parser_auto, CORPUS "akash-244-xid43-31-94-dmesg-T.txt", &b);
    CHECK_EQ_INT(a.n, b.n);
    for (int i = 0; i < a.n && i < b.n; i++) CHECK_EQ_STR(a.json[i], b.json[i]);
    /* the two Xid 43 lines differ, so must their ids */
    char id0[33], id1[33];
    snprintf(id0, sizeof id0, "%s", at(&a, 0)->id);
    snprintf(id1, sizeof id1, "%s", at(&a, 1)->id);
    CHECK(strlen(id0) == 32 && strcmp(id0, id1) != 0);
    coll_free(&a);
    coll_free(&b);
}

/* ---- catalog ---- */

TEST(catalog_values)
{
    const struct xid_info *x = xid_lookup(79);
    CHECK(x && x->sev == XID_SEV_CRITICAL && !strcmp(x->cls, "bus"));
    x = xid_lookup(43);
    CHECK(x && x->sev == XID_SEV_INFO);
    x = xid_lookup(13);
    CHECK(x && x->sev == XID_SEV_WARNING && !strcmp(x->cls, "application"));
    x = xid_lookup(48);
    CHECK(x && x->sev == XID_SEV_CRITICAL && !strcmp(x->cls, "ecc"));
    CHECK(xid_lookup(40) && xid_lookup(75) && xid_lookup(130));
    CHECK(xid_lookup(40) && !strcmp(xid_lookup(40)->name, xid_lookup(130)->name));
    CHECK(xid_lookup(100) && !strcmp(xid_lookup(100)->name, "JPEG engine error"));
    CHECK(xid_lookup(163) && xid_lookup(163)->sev == XID_SEV_INFO);
    CHECK(xid_lookup(165) && xid_lookup(165)->sev == XID_SEV_CRITICAL);
    CHECK(xid_lookup(1) == NULL);
    CHECK(xid_lookup(42) == NULL);
    CHECK(xid_lookup(173) == NULL);
    CHECK(xid_lookup(-1) == NULL);
    x = sxid_lookup(20034);
    CHECK(x && x->sev == XID_SEV_CRITICAL);
    CHECK(sxid_lookup(22013) && sxid_lookup(22013)->sev == XID_SEV_INFO);
    CHECK(sxid_lookup(11022) && sxid_lookup(11022)->sev == XID_SEV_INFO);
    CHECK(sxid_lookup(23005) && sxid_lookup(23005)->sev == XID_SEV_CRITICAL);
    CHECK(sxid_lookup(20012) && sxid_lookup(20012)->sev == XID_SEV_WARNING);
    CHECK(sxid_lookup(99999) == NULL);
    CHECK_EQ_STR(xid_sev_name(XID_SEV_WARNING), "warning");
}

TEST(catalog_invariants)
{
    static const char *classes[] = { "application", "driver", "hardware", "ecc", "nvlink",
                                     "bus", "power", "thermal", "firmware" };
    int known = 0;
    for (int code = 0; code < 30000; code++) {
        const struct xid_info *t[2] = { code < 1000 ? xid_lookup(code) : NULL, sxid_lookup(code) };
        for (int j = 0; j < 2; j++) {
            const struct xid_info *x = t[j];
            if (!x) continue;
            known++;
            CHECK(x->lo <= code && code <= x->hi);
            CHECK(x->sev >= XID_SEV_INFO && x->sev <= XID_SEV_CRITICAL);
            CHECK(x->name && *x->name && x->action && *x->action);
            int ok = 0;
            for (size_t k = 0; k < GL_ARRAY_LEN(classes); k++) if (!strcmp(x->cls, classes[k])) ok = 1;
            if (!ok) printf("  code %d: class %s\n", code, x->cls);
            CHECK(ok);
        }
    }
    CHECK(known > 120);
}

/* every spelling nvidia-smi and the kernel use becomes dddd:bb:dd.f */
TEST(bus_id_one_spelling)
{
    static const char *const cases[][2] = {
        { "0000:3b:00", "0000:3b:00.0" },          /* Xid */
        { "PCI:0000:3B:00", "0000:3b:00.0" },
        { "00000000:3B:00.0", "0000:3b:00.0" },    /* query CSV */
        { "0000:b3:00.0", "0000:b3:00.0" },        /* fallen off the bus */
        { "18:00.0", "0000:18:00.0" },             /* no domain */
        { " 0018:01:00.1 ", "0018:01:00.1" },
        { "10000:01:00.0", "10000:01:00.0" },      /* 32-bit domains stay whole */
    };
    char out[BUS_ID_LEN];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK(bus_id_canon(cases[i][0], strlen(cases[i][0]), out) > 0);
        CHECK_EQ_STR(out, cases[i][1]);
    }
    static const char *const bad[] = { "", "N/A", "3b", "0000:3b:00.8", "0000:3b:20.0", "0000:100:00.0",
                                       "000000000:3b:00.0", "0000:3b:00.0x", "a:b:c:d", "GPU-1234" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (bus_id_canon(bad[i], strlen(bad[i]), out) != 0) printf("  accepted '%s' as '%s'\n", bad[i], out);
        CHECK(bus_id_canon(bad[i], strlen(bad[i]), out) == 0 && !out[0]);
    }
}

/* a kernel line keeps the address it names: without a domain (0000, as
 * the other parsers take it), with a device number past 0x1f (as written);
 * one that cannot be read is left out and counted */
TEST(kernel_lines_keep_their_bus_id)
{
    struct coll c = { 0 };
    uint64_t unread = parser_bus_ids_unread(), dropped = parser_fields_dropped();
    run_str(&parser_kmsg,
            "NVRM: GPU 18:00.0: GPU has fallen off the bus.\n"
            "[    5.000000] NVRM: Xid (PCI:0000:3b:40): 79, pid=1, GPU has fallen off the bus.\n"
            "[    6.000000] NVRM: Xid (PCI:0000:3B:00): 13, pid=1, Graphics Exception\n"
            "[    7.000000] NVRM: Xid (PCI:0000:3b:400): 13, pid=1, Graphics Exception\n", &c);
    CHECK_EQ_INT(c.n, 4);
    CHECK_EQ_STR(S(at(&c, 0), "gpu.pci.bus_id"), "0000:18:00.0");
    CHECK_EQ_STR(S(at(&c, 1), "gpu.pci.bus_id"), "0000:3b:40.0");
    CHECK_EQ_STR(S(at(&c, 2), "gpu.pci.bus_id"), "0000:3b:00.0");
    CHECK(!HAS(at(&c, 3), "gpu.pci.bus_id"));
    CHECK_EQ_INT(I(at(&c, 3), "gpu.xid.code"), 13);          /* the rest of the event kept */
    CHECK_EQ_INT(parser_bus_ids_unread() - unread, 1);
    CHECK_EQ_INT(parser_fields_dropped() - dropped, 1);
    coll_free(&c);
}

/* --format auto: in a kernel log with prefixed lines, free text is
 * rejected as unrecognised (it was counted as skipped headers); a kernel
 * log of bare messages (journalctl -o cat) still skips its other lines */
TEST(auto_free_text_in_a_kernel_log_is_rejected)
{
    struct coll c = { 0 };
    struct parser_stats st = run_str(&parser_auto,
        "[    1.000000] Linux version 6.1.0\n"
        "[    2.000000] usb 1-1: new high-speed USB device\n"
        "qwe rty: uiop\n"
        "lorem ipsum dolor\n"
        "    continued detail of the record above\n"
        "[    5.000000] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n", &c);
    CHECK_EQ_INT(st.events, 1);
    CHECK_EQ_INT(st.rejected, 2);
    CHECK_EQ_INT(st.declined, 3);
    coll_free(&c);
    st = run_str(&parser_auto,
        "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n"
        "usb 1-1: new high-speed USB device\n"
        "some other kernel message\n", &c);
    CHECK_EQ_INT(st.events, 1);
    CHECK_EQ_INT(st.rejected, 0);
    coll_free(&c);
}

/* --format auto hands the reason of the format it chose on with the error
 * (the label of gpulog_lines_rejected_total) */
TEST(auto_keeps_the_rejection_reason)
{
    struct coll c = { 0 };
    struct parser *p = parser_new(&parser_auto, coll_emit, &c);
    struct line_src src = { .host = "h", .source = "-", .now_ms = read_time };
    const char *lines[] = { "# gpu   pwr  temp", "# Idx     W     C", "    0   100    50" };
    for (size_t i = 0; i < 3; i++) parser_feed(p, &src, lines[i], strlen(lines[i]));
    CHECK_EQ_INT(parser_feed(p, &src, "garbage here", 12), GL_ERROR);
    CHECK_EQ_STR(reject_reason_name((enum reject_reason)p->err_reason), "field_count");
    parser_free(p);
    coll_free(&c);
}

int main(void)
{
    RUN(bus_id_one_spelling);
    RUN(auto_keeps_the_rejection_reason);
    RUN(kernel_lines_keep_their_bus_id);
    RUN(auto_free_text_in_a_kernel_log_is_rejected);
    gl_tz_set("UTC");
    read_time = iso("2025-06-01T00:00:00Z");
    RUN(akash_244_value_by_value);
    RUN(gpud_readme_xid79_and_sxid20034);
    RUN(nvtrust_sxid22013_info);
    RUN(sxid12028_iso_decode_prefix);
    RUN(every_corpus_file);
    RUN(legacy_and_gsp_values);
    RUN(fallen_off_bus_three_lines_dmesg);
    RUN(fallen_off_bus_three_lines_syslog);
    RUN(fallen_off_bus_single_line_and_echo);
    RUN(other_probe_messages_are_not_fallen_off);
    RUN(continuation_takes_first_line_time);
    RUN(prefix_styles_utc);
    RUN(syslog_year_rollover);
    RUN(dmesg_T_in_other_zone);
    RUN(uptime_helper);
    RUN(nvlink5_fatal_nonfatal);
    RUN(unknown_code_and_bare_bus);
    RUN(non_kernel_lines_declined);
    RUN(sniff_only_nvidia_kernel_lines);
    RUN(sniff_every_length_and_position);
    RUN(ids_are_deterministic);
    RUN(catalog_values);
    RUN(catalog_invariants);
    event_free(&g_ev);
    return TEST_REPORT();
}
