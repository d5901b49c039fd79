/*
 * test_csv.c - unit tests of parsers/csv.c: compact GPU CSV with units stuck
 * to values, generic CSV time series (epoch and ISO times, host and gpu
 * columns, metrics.* / labels.*), unit conversion, quoting, rejected rows,
 * CRLF, comments and header sniffing against dmon-csv and query-csv.
 */
#include "csv_harness.h"
#include "../parsers/fieldname.h"


static struct got G;

/* "# gpu, power_draw, temp_gpu, ..." / "0, 230W, 78C, 92%": through auto. */
TEST(compact_units)
{
    char *t = slurp("tests/fixtures/csv/compact-units.csv");
    CHECK(t != NULL);
    if (!t) return;
    run_text(&parser_auto, t, &G);
    CHECK_EQ_INT(G.rejected, 0);
    CHECK_EQ_INT(G.n, 3);
    CHECK_EQ_STR(str(&G, 0, "event.dataset"), "csv.generic");
    CHECK_NEAR(num(&G, 0, "gpu.index"), 0, 0);
    CHECK_NEAR(num(&G, 0, "gpu.power.usage"), 230, 0);
    CHECK(is_int(&G, 0, "gpu.power.usage"));
    CHECK_NEAR(num(&G, 0, "gpu.temperature.gpu"), 78, 0);
    CHECK_NEAR(num(&G, 0, "gpu.temperature.memory"), 84, 0);
    CHECK_NEAR(num(&G, 0, "gpu.utilization.gpu.pct"), 92, 0);
    CHECK_NEAR(num(&G, 0, "gpu.utilization.memory_copy.pct"), 41, 0);
    CHECK_NEAR(num(&G, 0, "gpu.memory.framebuffer.used_size"), 61234, 0);
    CHECK_NEAR(num(&G, 0, "gpu.memory.framebuffer.total_size"), 81920, 0);
    CHECK_NEAR(num(&G, 0, "gpu.clock.streaming_multiprocessor_frequency"), 1410, 0);
    CHECK_NEAR(num(&G, 0, "gpu.clock.mem_frequency"), 1593, 0);
    CHECK_NEAR(num(&G, 0, "gpu.fan.speed.pct"), 65, 0);
    CHECK_NEAR(num(&G, 0, "gpu.power.limit"), 400, 0);
    /* GiB -> MiB and GHz -> MHz, integers where exact */
    CHECK_NEAR(num(&G, 1, "gpu.memory.framebuffer.used_size"), 40960, 0);
    CHECK(is_int(&G, 1, "gpu.memory.framebuffer.used_size"));
    CHECK_NEAR(num(&G, 1, "gpu.memory.framebuffer.total_size"), 81920, 0);
    CHECK_NEAR(num(&G, 1, "gpu.clock.streaming_multiprocessor_frequency"), 1410, 0);
    CHECK(is_int(&G, 1, "gpu.clock.streaming_multiprocessor_frequency"));
    CHECK(!has(&G, 2, "gpu.temperature.memory"));       /* "-" */
    CHECK_NEAR(num(&G, 2, "gpu.index"), 2, 0);
    int metrics = 0;
    const char *k;
    json_t *v;
    json_object_foreach(G.ev[0], k, v) if (!strncmp(k, "metrics.", 8) || !strncmp(k, "labels.", 7)) metrics++;
    CHECK_EQ_INT(metrics, 0);                           /* every column was an alias */
    free(t);
    /* the same through --format csv */
    run_text(&parser_csv, "# gpu, power_draw, temp_gpu, utilization_gpu\n0, 230W, 78C, 92%\n", &G);
    CHECK_EQ_INT(G.n, 1);
    CHECK_NEAR(num(&G, 0, "gpu.utilization.gpu.pct"), 92, 0);
    CHECK_EQ_INT(G.declined, 1);
}

/* Epoch seconds and milliseconds, a host column, metrics and labels. */
TEST(generic_epoch_host)
{
    char *t = slurp("tests/fixtures/csv/generic-epoch-host.csv");
    CHECK(t != NULL);
    if (!t) return;
    run_text(&parser_auto, t, &G);
    CHECK_EQ_INT(G.rejected, 0);
    CHECK_EQ_INT(G.n, 4);
    CHECK_EQ_STR(str(&G, 0, "@timestamp"), "2023-11-14T22:13:20.000Z");
    CHECK_EQ_STR(str(&G, 2, "@timestamp"), "2023-11-14T22:14:20.000Z");
    CHECK_EQ_STR(str(&G, 0, "host.name"), "node-a");
    CHECK_EQ_STR(str(&G, 1, "host.name"), "node-b");
    CHECK_EQ_STR(str(&G, 2, "host.name"), "node-a");
    CHECK_NEAR(num(&G, 0, "gpu.index"), 0, 0);
    CHECK_NEAR(num(&G, 3, "gpu.index"), 1, 0);
    CHECK_NEAR(num(&G, 0, "gpu.power.usage"), 250.5, 1e-9);
    CHECK_NEAR(num(&G, 0, "gpu.utilization.gpu.pct"), 97, 0);
    CHECK_EQ_STR(str(&G, 0, "labels.job"), "train-7");
    CHECK_NEAR(num(&G, 0, "metrics.queue_depth"), 3, 0);
    CHECK(is_int(&G, 0, "metrics.queue_depth"));
    CHECK_NEAR(num(&G, 0, "metrics.latency_ms"), 12.5, 1e-9);
    CHECK(!has(&G, 2, "gpu.power.usage"));              /* empty */
    CHECK(!has(&G, 2, "metrics.latency_ms"));
    CHECK_EQ_STR(str(&G, 3, "labels.job"), "eval, nightly");   /* quoted comma */
    CHECK_NEAR(num(&G, 3, "gpu.power.usage"), 180.25, 1e-9);
    /* the event id comes from the source position, not the row's host */
    CHECK(strcmp(str(&G, 0, "event.id"), str(&G, 1, "event.id")) != 0);
    free(t);
}

TEST(time_formats)
{
    gl_tz_set("UTC");
    run_text(&parser_csv,
        "time,value\n"
        "2024-01-16T14:44:16Z,1\n"
        "2024-01-16T16:44:16.5+02:00,2\n"
        "2024-01-16 14:44:16,3\n"
        "2024/01/16 14:44:16.977,4\n"
        "2024-01-16,5\n"
        "1705416256977,6\n"
        "1705416256.25,7\n"
        "1705416256977000,8\n", &G);
    CHECK_EQ_INT(G.rejected, 0);
    CHECK_EQ_INT(G.n, 8);
    static const char *const want[] = {
        "2024-01-16T14:44:16.000Z", "2024-01-16T14:44:16.500Z", "2024-01-16T14:44:16.000Z",
        "2024-01-16T14:44:16.977Z", "2024-01-16T00:00:00.000Z", "2024-01-16T14:44:16.977Z",
        "2024-01-16T14:44:16.250Z", "2024-01-16T14:44:16.977Z",
    };
    for (int i = 0; i < 8; i++) {
        CHECK_EQ_STR(str(&G, i, "@timestamp"), want[i]);
        CHECK_NEAR(num(&G, i, "metrics.value"), i + 1, 0);
    }
    /* zone-less times are read in the --tz zone */
    CHECK_EQ_INT(gl_tz_set("Europe/Berlin"), GL_OK);
    run_text(&parser_csv, "@timestamp,v\n2024-07-01 12:00:00,1\n2024-07-01T12:00:00Z,2\n", &G);
    CHECK_EQ_STR(str(&G, 0, "@timestamp"), "2024-07-01T10:00:00.000Z");
    CHECK_EQ_STR(str(&G, 1, "@timestamp"), "2024-07-01T12:00:00.000Z");
    gl_tz_set("UTC");
    /* a date and a time column together */
    run_text(&parser_csv, "date,time,gpu_temp\n2024-01-02,03:04:05.678,61\n", &G);
    CHECK_EQ_INT(G.n, 1);
    CHECK_EQ_STR(str(&G, 0, "@timestamp"), "2024-01-02T03:04:05.678Z");
    CHECK_NEAR(num(&G, 0, "gpu.temperature.gpu"), 61, 0);
    /* a table without a time column gets the read time */
    run_text(&parser_csv, "gpu,power_draw\n0,100W\n", &G);
    CHECK_EQ_STR(str(&G, 0, "@timestamp"), "2023-11-14T22:13:20.000Z");
}

TEST(rejected_rows)
{
    run_text(&parser_csv,
        "ts,gpu,temp_gpu\n"
        "1700000000,0,50\n"
        "yesterday,0,50\n"          /* unparseable time */
        "1700000001,0\n"            /* too few fields */
        "1700000002,0,50,9\n"       /* too many */
        "1700000003,zero,50\n"      /* not a GPU index */
        "1700000004,0,hot\n"        /* alias must be numeric */
        "1700000005,0,50F\n"        /* unit of another kind */
        "2024-13-40 00:00:00,0,1\n" /* impossible date */
        "1700000006,1,51\n", &G);
    CHECK_EQ_INT(G.n, 2);
    CHECK_EQ_INT(G.rejected, 7);
    CHECK_NEAR(num(&G, 1, "gpu.index"), 1, 0);
    run_text(&parser_csv, "ts,gpu,temp_gpu\nyesterday,0,50\n", &G);
    CHECK(strstr(G.err, "time") != NULL);
    run_text(&parser_csv, "ts,gpu,temp_gpu\n1700000001,0\n", &G);
    CHECK(strstr(G.err, "expected 3 fields") != NULL);
    run_text(&parser_csv, "ts,gpu,temp_gpu\n1700000001,0,50F\n", &G);
    CHECK(strstr(G.err, "unit") != NULL);
    run_text(&parser_csv, "ts,gpu,temp_gpu\n1700000001,0,\"50\n", &G);
    CHECK(strstr(G.err, "quote") != NULL);
    run_text(&parser_csv, "1,2,3\n", &G);
    CHECK_EQ_INT(G.rejected, 1);
    CHECK(strstr(G.err, "header") != NULL);
}

/* Units in the header rather than in the values. */
TEST(units_in_header)
{
    run_text(&parser_csv, "timestamp,memory_used [GiB],power (W),clock_sm [GHz],disk [GB]\n"
                     "1700000000,1.5,300,1.98,12\n", &G);
    CHECK_EQ_INT(G.n, 1);
    CHECK_NEAR(num(&G, 0, "gpu.memory.framebuffer.used_size"), 1536, 0);
    CHECK_NEAR(num(&G, 0, "gpu.power.usage"), 300, 0);
    CHECK_NEAR(num(&G, 0, "gpu.clock.streaming_multiprocessor_frequency"), 1980, 1e-9);
    CHECK_NEAR(num(&G, 0, "metrics.disk_gb"), 12, 0);
    /* a header unit of the wrong kind leaves the column a plain metric */
    run_text(&parser_csv, "timestamp,power [F]\n1700000000,7\n", &G);
    CHECK(!has(&G, 0, "gpu.power.usage"));
    CHECK_NEAR(num(&G, 0, "metrics.power_f"), 7, 0);
}

TEST(gpu_and_host_columns)
{
    run_text(&parser_csv, "time,index,hostname,gpu_uuid,pstate,throttle_reasons\n"
                     "1700000000,GPU 3,n7,GPU-abc,P2,0x44\n", &G);
    CHECK_EQ_INT(G.n, 1);
    CHECK_NEAR(num(&G, 0, "gpu.index"), 3, 0);
    CHECK_EQ_STR(str(&G, 0, "host.name"), "n7");
    CHECK_EQ_STR(str(&G, 0, "gpu.uuid"), "GPU-abc");
    CHECK_EQ_STR(str(&G, 0, "gpu.pstate"), "P2");
    CHECK_NEAR(num(&G, 0, "gpu.throttling.reasons"), 0x44, 0);
    CHECK(json_is_true(field(&G, 0, "gpu.throttling.reason.sw_power_cap")));
    run_text(&parser_csv, "time,gpu,temp_gpu\n1700000000,GPU-1234-abcd,40\n", &G);
    CHECK_EQ_STR(str(&G, 0, "gpu.uuid"), "GPU-1234-abcd");
    CHECK(!has(&G, 0, "gpu.index"));
    /* without a host column the reader's host stays */
    CHECK_EQ_STR(str(&G, 0, "host.name"), "h1");
}

TEST(crlf_comments_quotes)
{
    run_text(&parser_csv, "# exported by a tool\r\n# gpu, temp_gpu\r\n# Idx, C\r\n0, 50C\r\n\r\n# another remark\r\n1, 51C\r\n", &G);
    CHECK_EQ_INT(G.rejected, 0);
    CHECK_EQ_INT(G.n, 2);
    CHECK_NEAR(num(&G, 0, "gpu.temperature.gpu"), 50, 0);
    CHECK_NEAR(num(&G, 1, "gpu.temperature.gpu"), 51, 0);
    run_text(&parser_csv, "\"timestamp\",\"host\",\"note\"\n\"1700000000\",\"n1\",\"say \"\"hi\"\", ok\"\n", &G);
    CHECK_EQ_INT(G.n, 1);
    CHECK_EQ_STR(str(&G, 0, "labels.note"), "say \"hi\", ok");
    CHECK_EQ_STR(str(&G, 0, "host.name"), "n1");
    /* null/NaN spellings are absent, never a string or a number */
    run_text(&parser_csv, "ts,a,b,c\n1700000000,NaN,null,N/A\n", &G);
    CHECK(!has(&G, 0, "metrics.a") && !has(&G, 0, "labels.a"));
    CHECK(!has(&G, 0, "metrics.b") && !has(&G, 0, "labels.b"));
    CHECK(!has(&G, 0, "metrics.c") && !has(&G, 0, "labels.c"));
    /* a byte order mark before the header (spreadsheet export) */
    run_text(&parser_auto, "\xef\xbb\xbftimestamp,temp_gpu\n1700000000,40\n", &G);
    CHECK_EQ_INT(G.rejected, 0);
    CHECK_NEAR(num(&G, 0, "gpu.temperature.gpu"), 40, 0);
    /* a repeated header (concatenated files) is a header again */
    run_text(&parser_csv, "ts,gpu,temp_gpu\n1700000000,0,50\nts,gpu,temp_gpu\n1700000001,0,51\n", &G);
    CHECK_EQ_INT(G.n, 2);
    CHECK_EQ_INT(G.declined, 2);
}

/* Header scores: csv 60 on its own headers, 0 on data; dmon-csv and
 * query-csv keep their own headers. */
TEST(sniff)
{
    static const char *const own[] = {
        "# gpu, power_draw, temp_gpu, utilization_gpu",
        "timestamp,host,gpu,power_draw",
        "time,value",
        "@timestamp,metric_a,metric_b",
        "date,time,gpu_temp",
    };
    for (size_t i = 0; i < GL_ARRAY_LEN(own); i++) {
        int sc = parser_csv.sniff(own[i], strlen(own[i]));
        if (sc != 60) printf("  header %zu scored %d\n", i, sc);
        CHECK_EQ_INT(sc, 60);
    }
    static const char *const data[] = {
        "0, 230W, 78C, 92%", "1700000000,node-a,0,250.5", "2024-01-16T14:44:16Z,1",
        "node-a,idle", "# exported by a tool", "a,b", "", "# gpu   pwr gtemp",
    };
    for (size_t i = 0; i < GL_ARRAY_LEN(data); i++) {
        int sc = parser_csv.sniff(data[i], strlen(data[i]));
        if (sc) printf("  data %zu scored %d\n", i, sc);
        CHECK_EQ_INT(sc, 0);
    }
    const char *dm = "# gpu, pwr, gtemp, mtemp, sm, mem, enc, dec, mclk, pclk";
    CHECK(parser_csv.sniff(dm, strlen(dm)) < 90);
    CHECK_EQ_INT(parser_dmon_csv.sniff(dm, strlen(dm)), 90);
    const char *q = "timestamp, index, name, utilization.gpu [%], memory.used [MiB]";
    CHECK(parser_csv.sniff(q, strlen(q)) < parser_query_csv.sniff(q, strlen(q)));
    /* and through auto, a dmon CSV header still goes to dmon-csv */
    run_text(&parser_auto, "# gpu, pwr, gtemp, sm\n0, 100, 40, 5\n", &G);
    CHECK_EQ_INT(G.n, 1);
    CHECK_EQ_STR(str(&G, 0, "event.dataset"), "gpu.dmon");
}

/* Headers people write (issue 25): unit suffixes and brackets, their own
 * names; every temperature, power, utilisation and memory column in its
 * gpu.* field, converted by the unit its name gives. */
TEST(people_headers)
{
    run_text(&parser_auto, "timestamp,gpu_id,name,utilization_gpu_pct,utilization_mem_pct,memory_used_mib,memory_total_mib,"
                      "temperature_gpu_c,power_draw_w\n"
                      "2025-03-01 08:00:00,1,NVIDIA GeForce RTX 4080,91,45,8000,16376,78,247.50\n", &G);
    CHECK_EQ_INT(G.rejected, 0);
    CHECK_EQ_INT(G.n, 1);
    CHECK_NEAR(num(&G, 0, "gpu.index"), 1, 0);
    CHECK_EQ_STR(str(&G, 0, "gpu.name"), "NVIDIA GeForce RTX 4080");
    CHECK_NEAR(num(&G, 0, "gpu.utilization.gpu.pct"), 91, 0);
    CHECK_NEAR(num(&G, 0, "gpu.utilization.memory_copy.pct"), 45, 0);
    CHECK_NEAR(num(&G, 0, "gpu.memory.framebuffer.used_size"), 8000, 0);
    CHECK_NEAR(num(&G, 0, "gpu.memory.framebuffer.total_size"), 16376, 0);
    CHECK_NEAR(num(&G, 0, "gpu.temperature.gpu"), 78, 0);
    CHECK_NEAR(num(&G, 0, "gpu.power.usage"), 247.5, 1e-9);
    run_text(&parser_auto, "timestamp,gpu_index,temperature_C,utilization_gpu_percent,power_W\n"
                      "2023-11-14T22:13:20.250,5,82,100,331.2\n", &G);
    CHECK_EQ_INT(G.n, 1);
    CHECK_NEAR(num(&G, 0, "gpu.temperature.gpu"), 82, 0);
    CHECK_NEAR(num(&G, 0, "gpu.utilization.gpu.pct"), 100, 0);
    CHECK_NEAR(num(&G, 0, "gpu.power.usage"), 331.2, 1e-9);
    /* units in the name convert: GiB, mW, GHz, a fraction; bracketed units */
    run_text(&parser_csv, "time,gpu,Memory Used (GiB),power_mw,sm_clock_ghz,gpu_util_frac,Temp [\xc2\xb0" "C]\n"
                     "1700000000,0,1.5,250000,1.41,0.5,61\n", &G);
    CHECK_EQ_INT(G.rejected, 0);
    CHECK_NEAR(num(&G, 0, "gpu.memory.framebuffer.used_size"), 1536, 0);
    CHECK_NEAR(num(&G, 0, "gpu.power.usage"), 250, 1e-9);
    CHECK_NEAR(num(&G, 0, "gpu.clock.streaming_multiprocessor_frequency"), 1410, 1e-9);
    CHECK_NEAR(num(&G, 0, "gpu.utilization.gpu.pct"), 50, 1e-9);
    CHECK_NEAR(num(&G, 0, "gpu.temperature.gpu"), 61, 0);
    /* a value's unit must fit the field: 230C in a power column is refused */
    run_text(&parser_csv, "time,gpu,power_w\n1700000000,0,230C\n", &G);
    CHECK_EQ_INT(G.rejected, 1);
    CHECK(strstr(G.err, "does not fit gpu.power.usage") != NULL);
    /* DCGM's names */
    run_text(&parser_csv, "timestamp,gpu,DCGM_FI_DEV_GPU_TEMP,DCGM_FI_DEV_POWER_USAGE,DCGM_FI_DEV_FB_USED\n"
                     "1700000000,2,55,120.5,30000\n", &G);
    CHECK_NEAR(num(&G, 0, "gpu.temperature.gpu"), 55, 0);
    CHECK_NEAR(num(&G, 0, "gpu.power.usage"), 120.5, 1e-9);
    CHECK_NEAR(num(&G, 0, "gpu.memory.framebuffer.used_size"), 30000, 0);
}

/* A generic word is a GPU field only in a table about GPUs: weather data's
 * "temp" stays a metric; three GPU quantities, or one name that says GPU,
 * make the table a GPU table. */
TEST(weak_names)
{
    run_text(&parser_csv, "time,temp,humidity\n1700000000,21.5,40\n", &G);
    CHECK(!has(&G, 0, "gpu.temperature.gpu"));
    CHECK_NEAR(num(&G, 0, "metrics.temp"), 21.5, 1e-9);
    run_text(&parser_csv, "time,temp,power,util\n1700000000,61,250,99\n", &G);
    CHECK_NEAR(num(&G, 0, "gpu.temperature.gpu"), 61, 0);
    CHECK_NEAR(num(&G, 0, "gpu.power.usage"), 250, 0);
    CHECK_NEAR(num(&G, 0, "gpu.utilization.gpu.pct"), 99, 0);
    run_text(&parser_csv, "time,gpu_temp,power\n1700000000,61,250\n", &G);
    CHECK_NEAR(num(&G, 0, "gpu.power.usage"), 250, 0);
    /* a device column of IoT data is no GPU index there */
    run_text(&parser_csv, "time,device,temperature\n1700000000,sensor-a,21\n", &G);
    CHECK_EQ_INT(G.rejected, 0);
    CHECK_EQ_STR(str(&G, 0, "labels.device"), "sensor-a");
    CHECK(!has(&G, 0, "gpu.temperature.gpu"));
}

/* One row, several GPUs: one event per GPU (ids apart), host-level values
 * in an event of their own. */
TEST(wide_rows)
{
    run_text(&parser_csv, "timestamp,gpu0_temp,gpu0_power_w,GPU1 Temp,GPU1 Power (W),cpu_util\n"
                     "1700000000,50,100,71,230,12\n", &G);
    CHECK_EQ_INT(G.rejected, 0);
    CHECK_EQ_INT(G.n, 3);
    /* the GPUs first (a reader that picks a profile by the first event sees one), the host's values last */
    CHECK(!has(&G, 2, "gpu.index"));
    CHECK_NEAR(num(&G, 2, "metrics.cpu_util"), 12, 0);
    CHECK_NEAR(num(&G, 0, "gpu.index"), 0, 0);
    CHECK_NEAR(num(&G, 0, "gpu.temperature.gpu"), 50, 0);
    CHECK_NEAR(num(&G, 0, "gpu.power.usage"), 100, 0);
    CHECK_NEAR(num(&G, 1, "gpu.index"), 1, 0);
    CHECK_NEAR(num(&G, 1, "gpu.temperature.gpu"), 71, 0);
    CHECK_NEAR(num(&G, 1, "gpu.power.usage"), 230, 0);
    CHECK(!has(&G, 0, "metrics.cpu_util"));
    CHECK(strcmp(str(&G, 1, "event.id"), str(&G, 2, "event.id")) != 0);
    CHECK(strcmp(str(&G, 0, "event.id"), str(&G, 1, "event.id")) != 0);
}

/* Two columns of one field: the second keeps its values as a metric. */
TEST(second_spelling_kept)
{
    run_text(&parser_csv, "time,gpu,power.draw,power.draw.instant\n1700000000,0,250,262\n", &G);
    CHECK_NEAR(num(&G, 0, "gpu.power.usage"), 250, 0);
    CHECK_NEAR(num(&G, 0, "metrics.power_draw_instant"), 262, 0);
}

/* --map COL=FIELD: what no rule can guess; the unit in the name converts;
 * labels stay text; a field no schema has is refused with a suggestion. */
TEST(user_map)
{
    char err[256];
    const char *m[] = { "Temp (F)=gpu.temperature.gpu", "job=labels.job", "mem_gib=gpu.memory.framebuffer.used_size" };
    CHECK_EQ_INT(fn_map_set(m, 3, err, sizeof err), 0);
    run_text(&parser_csv, "time,gpu,TEMP (F),job,mem_gib\n1700000000,0,60,17,2\n", &G);
    CHECK_NEAR(num(&G, 0, "gpu.temperature.gpu"), 60, 0);
    CHECK_EQ_STR(str(&G, 0, "labels.job"), "17");
    CHECK_NEAR(num(&G, 0, "gpu.memory.framebuffer.used_size"), 2048, 0);
    const char *bad[] = { "x=gpu.temprature.gpu" };
    CHECK_EQ_INT(fn_map_set(bad, 1, err, sizeof err), -1);
    CHECK(strstr(err, "did you mean gpu.temperature.gpu") != NULL);
    const char *bad2[] = { "nofield" };
    CHECK_EQ_INT(fn_map_set(bad2, 1, err, sizeof err), -1);
    CHECK_EQ_INT(fn_map_set(NULL, 0, err, sizeof err), 0);
    CHECK_EQ_INT((int)fn_map_count(), 0);
}

/* Times people log: ctime (date(1), nvidia-smi -q), dmon's YYYYMMDD HH:MM:SS. */
TEST(more_time_formats)
{
    run_text(&parser_csv, "timestamp,gpu,temp_gpu\nTue Nov  5 10:00:00 2024,0,50\n", &G);
    CHECK_EQ_STR(str(&G, 0, "@timestamp"), "2024-11-05T10:00:00.000Z");
    run_text(&parser_csv, "timestamp,gpu,temp_gpu\nTue Nov 05 10:00:00 UTC 2024,0,50\n", &G);
    CHECK_EQ_STR(str(&G, 0, "@timestamp"), "2024-11-05T10:00:00.000Z");
    run_text(&parser_csv, "timestamp,gpu,temp_gpu\n20241105 10:00:01,0,50\n", &G);
    CHECK_EQ_STR(str(&G, 0, "@timestamp"), "2024-11-05T10:00:01.000Z");
    run_text(&parser_csv, "timestamp,gpu,temp_gpu\nNov 5 2024,0,50\n", &G);
    CHECK_EQ_INT(G.rejected, 1);
}

/* A long table (one field a row: dcgm dumps): each value in the field its
 * field cell names; the GPU's rows of one stamp fold in the engine. */
TEST(long_table)
{
    run_text(&parser_auto, "GPUId,TimeStampUs,Field,Values\n0,1700000000000000,power_usage_instant,250.5\n"
                      "0,1700000000000000,current_clock_throttle_reasons,4\n1,1700000000000000,gpu_temp,61\n"
                      "0,1700000000000000,sm_active,0.9\n", &G);
    CHECK_EQ_INT(G.rejected, 0);
    CHECK_EQ_INT(G.n, 4);
    CHECK_NEAR(num(&G, 0, "gpu.power.usage"), 250.5, 1e-9);
    CHECK_EQ_STR(str(&G, 0, "@timestamp"), "2023-11-14T22:13:20.000Z");
    CHECK(json_is_true(field(&G, 1, "gpu.throttling.reason.sw_power_cap")));
    CHECK_NEAR(num(&G, 2, "gpu.index"), 1, 0);
    CHECK_NEAR(num(&G, 2, "gpu.temperature.gpu"), 61, 0);
    CHECK_NEAR(num(&G, 3, "metrics.sm_active"), 0.9, 1e-9);
    CHECK(!has(&G, 0, "labels.field"));
}

/* A table about GPUs with no GPU column: one GPU (index 0) with a time
 * column; the GPUs its uuid tells apart; without a time column the rows of
 * the poll after each header, in order. Header-less CSV takes --columns. */
TEST(tables_without_a_gpu_column)
{
    run_text(&parser_csv, "timestamp,temperature.gpu,power.draw [W],utilization.gpu [%]\n2024-01-01 00:00:00,50,100,90\n"
                     "2024-01-01 00:00:01,51,101,91\n", &G);
    CHECK_NEAR(num(&G, 0, "gpu.index"), 0, 0);
    CHECK_NEAR(num(&G, 1, "gpu.index"), 0, 0);
    run_text(&parser_csv, "time,uuid,gpu_temp\n1700000000,GPU-b,50\n1700000000,GPU-a,51\n1700000001,GPU-b,52\n", &G);
    CHECK_NEAR(num(&G, 0, "gpu.index"), 0, 0);
    CHECK_NEAR(num(&G, 1, "gpu.index"), 1, 0);
    CHECK_NEAR(num(&G, 2, "gpu.index"), 0, 0);
    run_text(&parser_csv, "name,gpu_temp\nA100,50\nA100,51\nname,gpu_temp\nA100,52\n", &G);
    CHECK_NEAR(num(&G, 0, "gpu.index"), 0, 0);
    CHECK_NEAR(num(&G, 1, "gpu.index"), 1, 0);
    CHECK_NEAR(num(&G, 2, "gpu.index"), 0, 0);
    /* --columns for a header-less CSV */
    struct parser *p = parser_new(&parser_csv, emit_cb, &G);
    got_clear(&G);
    p->opt_columns = "epoch,util,power,mem_used,mem_total";
    feed_text(p, &G, "1700000000,50,100,1000,16000\n");
    parser_free(p);
    CHECK_EQ_INT(G.n, 1);
    CHECK_NEAR(num(&G, 0, "gpu.utilization.gpu.pct"), 50, 0);
    CHECK_NEAR(num(&G, 0, "gpu.memory.framebuffer.total_size"), 16000, 0);
}

int main(void)
{
    gl_tz_set("UTC");
    RUN(compact_units);
    RUN(generic_epoch_host);
    RUN(time_formats);
    RUN(rejected_rows);
    RUN(units_in_header);
    RUN(gpu_and_host_columns);
    RUN(crlf_comments_quotes);
    RUN(sniff);
    RUN(people_headers);
    RUN(weak_names);
    RUN(wide_rows);
    RUN(second_spelling_kept);
    RUN(user_map);
    RUN(more_time_formats);
    RUN(long_table);
    RUN(tables_without_a_gpu_column);
    got_clear(&G);
    return TEST_REPORT();
}
