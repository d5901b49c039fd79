/*
 * test_fieldname.c - unit tests of parsers/fieldname.c: column names people
 * write (their own CSV headers with units in the name, nvidia-smi's query
 * names, DCGM field names, dmon's columns, W&B keys) to schema fields, with
 * the unit's conversion; names that must stay unrecognised; --map keys.
 */
#include "../parsers/fieldname.h"
#include "test.h"

#include <math.h>
#include <string.h>

/* One name and what it must be: field key (NULL: a role), role, the
 * name's unit factor (0: none), the wide row's GPU (-1: none). */
struct want {
    const char *name, *key;
    enum fn_role role;
    double scale;
    int gpu;
};

static int check_one(const struct want *w)
{
    struct fn_result r;
    fn_recognise(w->name, strlen(w->name), &r);
    int ok = r.role == w->role && (w->key ? (r.key && !strcmp(r.key, w->key)) : 1) &&
             fabs(r.scale - w->scale) < 1e-12 && r.gpu == w->gpu;
    if (!ok)
        printf("  '%s': got role %d key %s scale %g gpu %d; want role %d key %s scale %g gpu %d\n", w->name, r.role,
               r.key ? r.key : "-", r.scale, r.gpu, w->role, w->key ? w->key : "-", w->scale, w->gpu);
    return ok;
}

#define T "gpu.temperature.gpu"
#define TM "gpu.temperature.memory"
#define P "gpu.power.usage"
#define PL "gpu.power.limit"
#define U "gpu.utilization.gpu.pct"
#define UM "gpu.utilization.memory_copy.pct"
#define MU "gpu.memory.framebuffer.used_size"
#define MT "gpu.memory.framebuffer.total_size"
#define MF "gpu.memory.framebuffer.free_size"
#define CSM "gpu.clock.streaming_multiprocessor_frequency"
#define CG "gpu.clock.graphics_frequency"
#define CM "gpu.clock.mem_frequency"

/* The spellings of the issue and of the wild: unit suffixes and brackets,
 * any case and separator, nvidia-smi's query names, DCGM's, dmon's, W&B's. */
TEST(people_spellings)
{
    static const struct want w[] = {
        /* a workstation script's own header (issue 25) */
        { "timestamp", NULL, FN_TIME, 0, -1 }, { "gpu_id", NULL, FN_GPU, 0, -1 }, { "name", "gpu.name", FN_STR, 0, -1 },
        { "utilization_gpu_pct", U, FN_NUM, 1, -1 }, { "utilization_mem_pct", UM, FN_NUM, 1, -1 },
        { "memory_used_mib", MU, FN_NUM, 1, -1 }, { "memory_total_mib", MT, FN_NUM, 1, -1 },
        { "temperature_gpu_c", T, FN_NUM, 1, -1 }, { "power_draw_w", P, FN_NUM, 1, -1 },
        /* an 8-GPU training run's */
        { "gpu_index", NULL, FN_GPU, 0, -1 }, { "temperature_C", T, FN_NUM, 1, -1 },
        { "utilization_gpu_percent", U, FN_NUM, 1, -1 }, { "power_W", P, FN_NUM, 1, -1 },
        /* the list */
        { "temperature.gpu [C]", T, FN_NUM, 1, -1 }, { "temp_c", T, FN_NUM, 1, -1 }, { "util_percent", U, FN_NUM, 1, -1 },
        { "mem_used_mib", MU, FN_NUM, 1, -1 }, { "memory.used [MiB]", MU, FN_NUM, 1, -1 },
        { "GPU Temp (C)", T, FN_NUM, 1, -1 }, { "Power Draw (W)", P, FN_NUM, 1, -1 }, { "GPU Util %", U, FN_NUM, 1, -1 },
        { "gpu-temp", T, FN_NUM, 0, -1 }, { "GPUTemp", T, FN_NUM, 0, -1 }, { "gpuTemperature", T, FN_NUM, 0, -1 },
        { "Memory Used (GiB)", MU, FN_NUM, 1024, -1 }, { "mem_used_bytes", MU, FN_NUM, 1.0 / 1048576, -1 },
        { "power_mw", P, FN_NUM, 0.001, -1 }, { "sm_clock_ghz", CSM, FN_NUM, 1000, -1 },
        { "gpu_util_frac", U, FN_NUM, 100, -1 }, { "fan_speed_pct", "gpu.fan.speed.pct", FN_NUM, 1, -1 },
        /* nvidia-smi --query-gpu names */
        { "index", NULL, FN_GPU, 0, -1 }, { "uuid", "gpu.uuid", FN_STR, 0, -1 },
        { "pci.bus_id", "gpu.pci.bus_id", FN_STR, 0, -1 }, { "utilization.gpu [%]", U, FN_NUM, 1, -1 },
        { "utilization.memory", UM, FN_NUM, 0, -1 }, { "temperature.memory", TM, FN_NUM, 0, -1 },
        { "power.draw", P, FN_NUM, 0, -1 }, { "power.draw.average [W]", P, FN_NUM, 1, -1 },
        { "power.limit [W]", PL, FN_NUM, 1, -1 }, { "enforced.power.limit", PL, FN_NUM, 0, -1 },
        { "memory.total [MiB]", MT, FN_NUM, 1, -1 }, { "memory.free", MF, FN_NUM, 0, -1 },
        { "clocks.current.sm [MHz]", CSM, FN_NUM, 1, -1 }, { "clocks.sm", CSM, FN_NUM, 0, -1 },
        { "clocks.gr", CG, FN_NUM, 0, -1 }, { "clocks.current.graphics", CG, FN_NUM, 0, -1 },
        { "clocks.mem [MHz]", CM, FN_NUM, 1, -1 }, { "fan.speed [%]", "gpu.fan.speed.pct", FN_NUM, 1, -1 },
        { "pstate", "gpu.pstate", FN_STR, 0, -1 },
        { "ecc.errors.corrected.volatile.total", "gpu.ecc.corrected.volatile.count", FN_NUM, 0, -1 },
        { "ecc.errors.uncorrected.volatile.total", "gpu.ecc.uncorrected.volatile.count", FN_NUM, 0, -1 },
        { "clocks_throttle_reasons.active", "gpu.throttling.reasons", FN_MASK, 0, -1 },
        { "clocks_event_reasons.active", "gpu.throttling.reasons", FN_MASK, 0, -1 },
        /* DCGM field names, as dcgm-exporter and dcgmi print them */
        { "DCGM_FI_DEV_GPU_TEMP", T, FN_NUM, 0, -1 }, { "dcgm_gpu_temp", T, FN_NUM, 0, -1 },
        { "DCGM_FI_DEV_POWER_USAGE", P, FN_NUM, 0, -1 }, { "DCGM_FI_DEV_GPU_UTIL", U, FN_NUM, 0, -1 },
        { "DCGM_FI_DEV_MEM_COPY_UTIL", UM, FN_NUM, 0, -1 }, { "DCGM_FI_DEV_FB_USED", MU, FN_NUM, 0, -1 },
        { "DCGM_FI_DEV_FB_FREE", MF, FN_NUM, 0, -1 }, { "DCGM_FI_DEV_SM_CLOCK", CSM, FN_NUM, 0, -1 },
        { "DCGM_FI_DEV_MEM_CLOCK", CM, FN_NUM, 0, -1 }, { "DCGM_FI_DEV_MEMORY_TEMP", TM, FN_NUM, 0, -1 },
        { "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "gpu.pcie.replay", FN_NUM, 0, -1 },
        { "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "gpu.ecc.single_bit.count", FN_NUM, 0, -1 },
        { "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "gpu.ecc.double_bit.count", FN_NUM, 0, -1 },
        { "DCGM_FI_DEV_POWER_MGMT_LIMIT", PL, FN_NUM, 0, -1 }, { "dcgm_power_usage", P, FN_NUM, 0, -1 },
        /* dmon's columns */
        { "pwr", P, FN_NUM, 0, -1 }, { "gtemp", T, FN_NUM, 0, -1 }, { "mtemp", TM, FN_NUM, 0, -1 },
        { "sm", U, FN_NUM, 0, -1 }, { "mem", UM, FN_NUM, 0, -1 }, { "enc", "gpu.utilization.encoder.pct", FN_NUM, 0, -1 },
        { "dec", "gpu.utilization.decoder.pct", FN_NUM, 0, -1 }, { "mclk", CM, FN_NUM, 0, -1 }, { "pclk", CSM, FN_NUM, 0, -1 },
        { "fb", MU, FN_NUM, 0, -1 }, { "bar1", "gpu.memory.bar1.used_size", FN_NUM, 0, -1 },
        { "sbecc", "gpu.ecc.single_bit.count", FN_NUM, 0, -1 }, { "pviol", "gpu.throttling.power.pct", FN_NUM, 0, -1 },
        /* W&B system metrics and wide rows */
        { "system.gpu.0.temp", T, FN_NUM, 0, 0 }, { "system.gpu.3.powerWatts", P, FN_NUM, 1, 3 },
        { "system.gpu.1.memoryAllocatedBytes", MU, FN_NUM, 1.0 / 1048576, 1 }, { "system.gpu.0.smClock", CSM, FN_NUM, 0, 0 },
        { "system.gpu.2.enforcedPowerLimitWatts", PL, FN_NUM, 1, 2 },
        { "system.gpu.0.correctedMemoryErrors", "gpu.ecc.corrected.volatile.count", FN_NUM, 0, 0 },
        { "gpu0_temp", T, FN_NUM, 0, 0 }, { "GPU1 Power (W)", P, FN_NUM, 1, 1 }, { "gpu_2_util", U, FN_NUM, 0, 2 },
        { "cuda0_mem_used_mib", MU, FN_NUM, 1, 0 }, { "system.gpu.0.gpu", U, FN_NUM, 0, 0 },
        { "system.gpu.1.memory", UM, FN_NUM, 0, 1 }, { "gpu3_bmc_temp_c", T, FN_NUM, 1, 3 },
        /* JSON keys and headers of other loggers */
        { "gpu_memory_used_MB", MU, FN_NUM, 1, -1 }, { "gpu_temp_celsius", T, FN_NUM, 1, -1 },
        { "gpu_power_limit_watts", PL, FN_NUM, 1, -1 }, { "gpu_sm_util_percent", U, FN_NUM, 1, -1 },
        { "gpu_mem_util_percent", UM, FN_NUM, 1, -1 }, { "gpu_enc_util_percent", "gpu.utilization.encoder.pct", FN_NUM, 1, -1 },
        { "temperature[\xc2\xb0" "C]", T, FN_NUM, 1, -1 }, { "gpu_utilization[%]", U, FN_NUM, 1, -1 },
        { "Power Used", P, FN_NUM, 0, -1 }, { "Memory Max", MT, FN_NUM, 0, -1 }, { "GPU%", U, FN_NUM, 1, -1 },
        { "Timestamp (ns)", NULL, FN_TIME, 0, -1 }, { "TimeStampUs", NULL, FN_TIME, 0, -1 }, { "GPUId", NULL, FN_GPU, 0, -1 },
        { "graphics_clock_mhz", CG, FN_NUM, 1, -1 }, { "fan_percent", "gpu.fan.speed.pct", FN_NUM, 1, -1 },
        { "current_clock_throttle_reasons", "gpu.throttling.reasons", FN_MASK, 0, -1 },
        { "power_usage_instant", P, FN_NUM, 0, -1 },
        /* memory health, as --query-gpu names it */
        { "ecc.errors.corrected.aggregate.total", "gpu.ecc.corrected.aggregate.count", FN_NUM, 0, -1 },
        { "remapped_rows.pending", "gpu.remapped_rows.pending", FN_BOOL, 0, -1 },
        { "remapped_rows.failure", "gpu.remapped_rows.failure", FN_BOOL, 0, -1 },
        { "remapped_rows.uncorrectable", "gpu.remapped_rows.uncorrectable.count", FN_NUM, 0, -1 },
        { "retired_pages.sbe", "gpu.retired_pages.single_bit.count", FN_NUM, 0, -1 },
        { "retired_pages.double_bit.count", "gpu.retired_pages.double_bit.count", FN_NUM, 0, -1 },
        { "retired_pages.pending", "gpu.retired_pages.pending", FN_BOOL, 0, -1 },
        /* the other roles */
        { "hostname", NULL, FN_HOST, 0, -1 }, { "node_name", NULL, FN_HOST, 0, -1 }, { "_timestamp", NULL, FN_TIME, 0, -1 },
        { "@timestamp", NULL, FN_TIME, 0, -1 }, { "unix_time", NULL, FN_TIME, 0, -1 }, { "epoch_ms", NULL, FN_TIME, 0, -1 },
        { "Time (UTC)", NULL, FN_TOD, 0, -1 }, { "date", NULL, FN_DATE, 0, -1 }, { "Date Time", NULL, FN_TIME, 0, -1 },
        { "gpu_uuid", "gpu.uuid", FN_STR, 0, -1 }, { "gpu_bus_id", "gpu.pci.bus_id", FN_STR, 0, -1 },
        { "pid", "process.pid", FN_NUM, 0, -1 }, { "process_name", "process.name", FN_STR, 0, -1 },
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) bad += !check_one(&w[i]);
    CHECK_EQ_INT(bad, 0);
}

/* Names that are not a GPU field: another device's, a limit, a maximum, a
 * unit of another family (said why), an aggregate counter, plain words. */
TEST(not_gpu_fields)
{
    static const char *const other[] = {
        "cpu_temp", "temp_limit", "max_temp", "temperature.gpu.tlimit", "power.max_limit", "clocks.max.sm",
        "disk_util", "load", "usage", "latency_ms", "value", "rps",
        "power_pct", "temperature_gpu_w", "system.cpu", "system.memory", "fan_rpm", "id", "gpu_time", "target_c",
        "temp_avg_3s", "power_max", "system.gpu.0.memoryAllocated", "system.gpu.0.powerPercent",
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
        struct fn_result r;
        fn_recognise(other[i], strlen(other[i]), &r);
        if (r.role != FN_OTHER) { printf("  '%s': role %d key %s\n", other[i], r.role, r.key ? r.key : "-"); bad++; }
    }
    CHECK_EQ_INT(bad, 0);
    struct fn_result r;
    fn_recognise("power_pct", 9, &r);
    CHECK(r.gpu_like);
    CHECK(r.why && strstr(r.why, "unit"));
    fn_recognise("cpu_temp", 8, &r);
    CHECK(!r.gpu_like);
    fn_recognise("temperature.gpu.tlimit", 22, &r);
    CHECK(r.gpu_like);
}

/* "temp" or "memory_used" alone are GPU fields only in a table about GPUs:
 * weak; a name that says GPU by itself is strong. */
TEST(strong_and_weak)
{
    struct fn_result r;
    fn_recognise("temp", 4, &r);
    CHECK_EQ_INT(r.role, FN_NUM);
    CHECK(!r.strong);
    fn_recognise("memory_used", 11, &r);
    CHECK(!r.strong);
    fn_recognise("gpu_temp", 8, &r);
    CHECK(r.strong);
    fn_recognise("DCGM_FI_DEV_POWER_USAGE", 23, &r);
    CHECK(r.strong);
    fn_recognise("pwr", 3, &r);
    CHECK(r.strong);
    fn_recognise("gpu3_power", 10, &r);
    CHECK(r.strong);
    fn_recognise("index", 5, &r);
    CHECK(r.role == FN_GPU && r.strong);
    fn_recognise("device", 6, &r);
    CHECK(r.role == FN_GPU && !r.strong);
}

TEST(units)
{
    enum dim d;
    double f;
    CHECK(fn_unit_lookup("MiB", 3, &d, &f) && d == D_MIB && f == 1);
    CHECK(fn_unit_lookup("gib", 3, &d, &f) && d == D_MIB && f == 1024);
    CHECK(fn_unit_lookup("M", 1, &d, &f) && d == D_MIB);
    CHECK(!fn_unit_lookup("m", 1, &d, &f));
    CHECK(fn_unit_lookup("\xc2\xb0" "C", 3, &d, &f) && d == D_C);
    CHECK(fn_unit_lookup("mW", 2, &d, &f) && d == D_W && f == 0.001);
    CHECK(fn_unit_lookup("W", 1, &d, &f) && d == D_W && f == 1);
    CHECK(!fn_unit_lookup("rpm", 3, &d, &f));
}

TEST(map_keys)
{
    struct fn_result r;
    CHECK(fn_field_by_key("gpu.temperature.gpu", &r) && r.role == FN_NUM && r.dim == D_C);
    CHECK(fn_field_by_key("gpu.index", &r) && r.role == FN_GPU);
    CHECK(fn_field_by_key("@timestamp", &r) && r.role == FN_TIME);
    CHECK(fn_field_by_key("host.name", &r) && r.role == FN_HOST);
    CHECK(fn_field_by_key("gpu.name", &r) && r.role == FN_STR);
    CHECK(fn_field_by_key("metrics.job_step", &r) && r.role == FN_OTHER);
    CHECK(!fn_field_by_key("metrics.", &r));
    CHECK(!fn_field_by_key("metrics.Bad-Name", &r));
    CHECK(!fn_field_by_key("gpu.temprature.gpu", &r));
    CHECK_EQ_STR(fn_suggest_key("gpu.temprature.gpu"), "gpu.temperature.gpu");
    CHECK_EQ_STR(fn_suggest_key("gpu_temp"), "gpu.temperature.gpu");
}

int main(void)
{
    RUN(people_spellings);
    RUN(not_gpu_fields);
    RUN(strong_and_weak);
    RUN(units);
    RUN(map_keys);
    return TEST_REPORT();
}
