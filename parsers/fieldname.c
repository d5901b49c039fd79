/* fieldname.c - see fieldname.h. */
#include "fieldname.h"
#include "parser.h"
#include "../core/common.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define FN_MAX_WORDS 16
#define FN_MAX_WORD 31

/* The words of a name, lower case, at most FN_MAX_WORDS of FN_MAX_WORD bytes. */
struct words {
    int n;
    char w[FN_MAX_WORDS][FN_MAX_WORD + 1];
};

/* ----------------------------------------------------------------- units */

/* Units after a number or in a header: family and factor to the family's
 * unit. Case-insensitive, except where case tells two units apart. */
static const struct { const char *u; enum dim dim; double f; int exact; } units[] = {
    { "%", D_PCT, 1, 0 }, { "pct", D_PCT, 1, 0 }, { "percent", D_PCT, 1, 0 }, { "percentage", D_PCT, 1, 0 },
    { "perc", D_PCT, 1, 0 }, { "frac", D_PCT, 100, 0 }, { "fraction", D_PCT, 100, 0 }, { "ratio", D_PCT, 100, 0 },
    { "W", D_W, 1, 0 }, { "watt", D_W, 1, 0 }, { "watts", D_W, 1, 0 }, { "mW", D_W, 0.001, 0 },
    { "milliwatts", D_W, 0.001, 0 }, { "kW", D_W, 1000, 0 },
    { "C", D_C, 1, 0 }, { "\xc2\xb0" "C", D_C, 1, 0 }, { "degC", D_C, 1, 0 }, { "deg", D_C, 1, 0 },
    { "celsius", D_C, 1, 0 }, { "degrees", D_C, 1, 0 },
    { "MiB", D_MIB, 1, 0 }, { "MB", D_MIB, 1, 0 }, { "M", D_MIB, 1, 1 },
    { "GiB", D_MIB, 1024, 0 }, { "GB", D_MIB, 1024, 0 }, { "G", D_MIB, 1024, 1 },
    { "KiB", D_MIB, 1.0 / 1024, 0 }, { "KB", D_MIB, 1.0 / 1024, 0 },
    { "TiB", D_MIB, 1048576, 0 }, { "TB", D_MIB, 1048576, 0 },
    { "B", D_MIB, 1.0 / 1048576, 0 }, { "bytes", D_MIB, 1.0 / 1048576, 0 }, { "byte", D_MIB, 1.0 / 1048576, 0 },
    { "MHz", D_MHZ, 1, 0 }, { "GHz", D_MHZ, 1000, 0 }, { "kHz", D_MHZ, 0.001, 0 }, { "Hz", D_MHZ, 1e-6, 0 },
};

const char *fn_unit_lookup(const char *u, size_t ul, enum dim *dim, double *f)
{
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        size_t l = strlen(units[i].u);
        if (l != ul) continue;
        if (units[i].exact ? memcmp(u, units[i].u, l) : strncasecmp(u, units[i].u, l)) continue;
        *dim = units[i].dim;
        *f = units[i].f;
        return units[i].u;
    }
    return NULL;
}

const char *fn_dim_unit(enum dim d)
{
    switch (d) {
    case D_PCT: return "%";
    case D_W: return "W";
    case D_C: return "\xc2\xb0" "C";
    case D_MIB: return "MiB";
    case D_MHZ: return "MHz";
    default: return "";
    }
}

/* -------------------------------------------------------------- concepts */

/* Word groups. */
#define TEMP "temp temperature tmp temps tmptr"
#define POWER "power pwr"
#define UTIL "util utilization utilisation utl utilized"
#define MEMW "mem memory fb framebuffer vram"
#define CLOCK "clock clk clocks freq frequency"
#define USED "used usage use allocated alloc occupied"
#define NOW "current cur now"

/* One meaning: a field (or a role) and the words that name it. Every word
 * group of req takes one word of the name; the other words must be in opt.
 * The first row that explains every word and whose unit family fits the
 * name's unit wins (so "mem" is dmon's memory utilisation, "mem_mib" the
 * memory used). */
struct concept {
    const char *key;
    enum fn_role role;
    enum dim dim;
    const char *req[3];
    const char *opt;
};

static const struct concept concepts[] = {
    /* roles */
    { NULL, FN_HOST, D_NONE, { "host hostname node nodename machine server instance" }, "name id" },
    { NULL, FN_GPU, D_NONE, { "gpu device dev card gpuid" }, "index idx id num number no nr ordinal minor" },
    { NULL, FN_GPU, D_NONE, { "index idx" }, "" },
    /* "GPU%", "gpu [%]": a percentage named after the GPU is its utilisation */
    { "gpu.utilization.gpu.pct", FN_NUM, D_PCT, { "gpu" }, "" },
    /* strings */
    { "gpu.uuid", FN_STR, D_NONE, { "uuid guid" }, "gpu device" },
    { "gpu.pci.bus_id", FN_STR, D_NONE, { "bus busid" }, "pci pcie id gpu device location" },
    { "gpu.name", FN_STR, D_NONE, { "name model product" }, "gpu device card product brand" },
    { "gpu.pstate", FN_STR, D_NONE, { "pstate" }, "gpu current performance perf" },
    { "gpu.pstate", FN_STR, D_NONE, { "perf performance", "state" }, "gpu current" },
    { "process.name", FN_STR, D_NONE, { "process proc", "name" }, "gpu" },
    { "process.name", FN_STR, D_NONE, { "command cmd comm" }, "process proc name" },
    { "process.pid", FN_NUM, D_NONE, { "pid" }, "process proc gpu" },
    { "process.pid", FN_NUM, D_NONE, { "process proc", "id" }, "gpu" },
    { "gpu.throttling.reasons", FN_MASK, D_NONE, { "reasons reason", "throttle throttling event events" },
      "clocks clock active mask bitmask gpu current" },
    /* temperatures */
    { "gpu.temperature.memory", FN_NUM, D_C, { TEMP, "mem memory hbm vram" }, "gpu " NOW " value reading" },
    { "gpu.temperature.memory", FN_NUM, D_C, { "mtemp mmtmp memtemp" }, "gpu" },
    { "gpu.temperature.gpu", FN_NUM, D_C, { TEMP }, "gpu core die chip " NOW " value reading sensor bmc" },
    { "gpu.temperature.gpu", FN_NUM, D_C, { "gtemp gputemp" }, "gpu" },
    /* power */
    { "gpu.power.limit", FN_NUM, D_W, { POWER, "limit cap" }, "gpu enforced " NOW " mgmt management board" },
    { "gpu.power.usage", FN_NUM, D_W, { POWER },
      "draw usage use used consumption " NOW " instant instantaneous average avg gpu board total reading actual value" },
    { "gpu.power.usage", FN_NUM, D_W, { "watts wattage" }, "gpu" },
    { "gpu.throttling.power.pct", FN_NUM, D_PCT, { "pviol" }, "" },
    { "gpu.throttling.power.pct", FN_NUM, D_PCT, { POWER, "violation viol" }, "gpu" },
    /* utilisation */
    { "gpu.utilization.encoder.pct", FN_NUM, D_PCT, { "enc encoder nvenc" }, UTIL " usage gpu" },
    { "gpu.utilization.decoder.pct", FN_NUM, D_PCT, { "dec decoder nvdec" }, UTIL " usage gpu" },
    { "gpu.utilization.jpeg.pct", FN_NUM, D_PCT, { "jpg jpeg nvjpg" }, UTIL " usage gpu" },
    { "gpu.utilization.ofa.pct", FN_NUM, D_PCT, { "ofa" }, UTIL " usage gpu" },
    { "gpu.utilization.memory_copy.pct", FN_NUM, D_PCT, { UTIL " busy activity bandwidth bw", "mem memory" },
      "gpu copy controller ctrl io" },
    { "gpu.utilization.memory_copy.pct", FN_NUM, D_PCT, { "mcutl memutil mem" }, "" },
    { "gpu.utilization.gpu.pct", FN_NUM, D_PCT, { UTIL }, "gpu sm core graphics gr compute usage total" },
    { "gpu.utilization.gpu.pct", FN_NUM, D_PCT, { "usage load busy activity", "gpu sm" }, "core compute total" },
    { "gpu.utilization.gpu.pct", FN_NUM, D_PCT, { "sm gputl gpuutil" }, "" },
    /* memory */
    { "gpu.memory.framebuffer.used_size", FN_NUM, D_MIB, { MEMW, USED }, "gpu size" },
    { "gpu.memory.framebuffer.used_size", FN_NUM, D_MIB, { "fb fbusd vram mem memory" }, "gpu" },
    { "gpu.memory.framebuffer.total_size", FN_NUM, D_MIB, { MEMW, "total size capacity max" }, "gpu" },
    { "gpu.memory.framebuffer.total_size", FN_NUM, D_MIB, { "fbttl" }, "" },
    { "gpu.memory.framebuffer.free_size", FN_NUM, D_MIB, { MEMW, "free available avail" }, "gpu" },
    { "gpu.memory.framebuffer.free_size", FN_NUM, D_MIB, { "fbfre" }, "" },
    { "gpu.memory.bar1.used_size", FN_NUM, D_MIB, { "bar1" }, MEMW " " USED },
    /* clocks */
    { "gpu.clock.streaming_multiprocessor_frequency", FN_NUM, D_MHZ, { CLOCK, "sm" }, NOW " gpu" },
    { "gpu.clock.streaming_multiprocessor_frequency", FN_NUM, D_MHZ, { "pclk smclk" }, "" },
    { "gpu.clock.mem_frequency", FN_NUM, D_MHZ, { CLOCK, "mem memory" }, NOW " gpu" },
    { "gpu.clock.mem_frequency", FN_NUM, D_MHZ, { "mclk mmclk memclk" }, "" },
    { "gpu.clock.graphics_frequency", FN_NUM, D_MHZ, { CLOCK }, "gr graphics gfx gpu core shader " NOW },
    { "gpu.clock.graphics_frequency", FN_NUM, D_MHZ, { "gclk grclk" }, "" },
    /* fan */
    { "gpu.fan.speed.pct", FN_NUM, D_PCT, { "fan fans" }, "speed duty gpu" },
    /* errors and counters */
    { "gpu.ecc.corrected.volatile.count", FN_NUM, D_NONE, { "ecc", "corrected correctable" },
      "volatile vol total errors error count gpu" },
    { "gpu.ecc.corrected.volatile.count", FN_NUM, D_NONE, { "corrected correctable", "errors error" },
      "memory mem ecc volatile vol total count gpu" },
    { "gpu.ecc.uncorrected.volatile.count", FN_NUM, D_NONE, { "ecc", "uncorrected uncorrectable" },
      "volatile vol total errors error count gpu" },
    { "gpu.ecc.uncorrected.volatile.count", FN_NUM, D_NONE, { "uncorrected uncorrectable", "errors error" },
      "memory mem ecc volatile vol total count gpu" },
    { "gpu.ecc.single_bit.count", FN_NUM, D_NONE, { "ecc", "sbe single sb" }, "volatile vol total errors error count bit gpu" },
    { "gpu.ecc.single_bit.count", FN_NUM, D_NONE, { "sbecc" }, "" },
    { "gpu.ecc.double_bit.count", FN_NUM, D_NONE, { "ecc", "dbe double db" }, "volatile vol total errors error count bit gpu" },
    { "gpu.ecc.double_bit.count", FN_NUM, D_NONE, { "dbecc" }, "" },
    { "gpu.ecc.corrected.aggregate.count", FN_NUM, D_NONE, { "ecc", "corrected correctable", "aggregate agg" },
      "total errors error count gpu" },
    { "gpu.ecc.uncorrected.aggregate.count", FN_NUM, D_NONE, { "ecc", "uncorrected uncorrectable", "aggregate agg" },
      "total errors error count gpu" },
    /* memory health: dynamic page retirement, row remapping */
    { "gpu.retired_pages.single_bit.count", FN_NUM, D_NONE, { "retired retirement", "sbe single" }, "pages page bit ecc count total" },
    { "gpu.retired_pages.double_bit.count", FN_NUM, D_NONE, { "retired retirement", "dbe double" }, "pages page bit ecc count total" },
    { "gpu.retired_pages.pending", FN_BOOL, D_NONE, { "retired retirement", "pending" }, "pages page blacklist" },
    { "gpu.remapped_rows.correctable.count", FN_NUM, D_NONE, { "remapped remap", "correctable corrected" }, "rows row error errors count" },
    { "gpu.remapped_rows.uncorrectable.count", FN_NUM, D_NONE, { "remapped remap", "uncorrectable uncorrected" },
      "rows row error errors count" },
    { "gpu.remapped_rows.pending", FN_BOOL, D_NONE, { "remapped remap", "pending" }, "rows row" },
    { "gpu.remapped_rows.failure", FN_BOOL, D_NONE, { "remapped remap remapping", "failure failed" }, "rows row occurred" },
    { "gpu.pcie.replay", FN_NUM, D_NONE, { "pcie pci", "replay replays" }, "counter count errors error total gpu" },
    { "gpu.pcie.replay", FN_NUM, D_NONE, { "pci" }, "" },
    { "gpu.pcie.rx.throughput", FN_NUM, D_NONE, { "pcie pci", "rx" }, "throughput bytes bw gpu" },
    { "gpu.pcie.rx.throughput", FN_NUM, D_NONE, { "rxpci" }, "" },
    { "gpu.pcie.tx.throughput", FN_NUM, D_NONE, { "pcie pci", "tx" }, "throughput bytes bw gpu" },
    { "gpu.pcie.tx.throughput", FN_NUM, D_NONE, { "txpci" }, "" },
};

/* Words of a time column; one of the first line must be there. */
static const char time_core[] = "timestamp time datetime date ts epoch unix stamp";
static const char time_extra[] =
    "utc local gmt iso at created logged recorded query s sec secs seconds ms msec millis milliseconds us usec micros ns nanos";
/* Words that place a quantity on another device than the GPU. */
static const char foreign[] =
    "cpu cpus disk disks net network nic swap ram host system io psu ambient room inlet outlet chassis battery "
    "package pkg socket dimm node";
/* Words that speak of a GPU quantity: a name with one (and no foreign word)
 * that is not recognised is listed as a GPU field gpulog could not place. */
static const char gpuish[] =
    TEMP " " POWER " " UTIL " " CLOCK " gpu fan ecc pcie vram fb framebuffer sm throttle throttling nvlink xid "
    "pviol tviol pwr gtemp mtemp";
/* Prefixes of other tools' field names, dropped at the start of a name;
 * the first line's say GPU. */
static const char gpu_prefixes[] = "dcgm nvidia nvml";
static const char prefixes[] = "dcgm fi dev prof nvidia smi nvml system";
/* Words that say GPU by themselves: a name with one is a GPU field in any
 * table (the others only in a table about GPUs). */
static const char gpu_words[] =
    "gpu gpus fb framebuffer vram sm nvlink pcie pci ecc sbe dbe nvenc nvdec hbm xid pstate bar1 cuda "
    "pwr gtemp mtemp mclk pclk sbecc dbecc rxpci txpci pviol tviol gputl gpuutil gputemp mcutl fbusd fbttl "
    "fbfre tmptr mmtmp smclk mmclk memtemp gpuid";

/* 1 when word w is one of the space-separated words of list. */
static int in_words(const char *list, const char *w)
{
    size_t wl = strlen(w);
    for (const char *p = list; *p;) {
        while (*p == ' ') p++;
        const char *e = p;
        while (*e && *e != ' ') e++;
        if ((size_t)(e - p) == wl && wl && !memcmp(p, w, wl)) return 1;
        p = e;
    }
    return 0;
}

/* ------------------------------------------------------------ the words */

static void push_word(struct words *ws, const char *s, size_t n)
{
    if (n == 0 || ws->n >= FN_MAX_WORDS) return;
    if (n > FN_MAX_WORD) n = FN_MAX_WORD;
    for (size_t i = 0; i < n; i++) ws->w[ws->n][i] = (char)tolower((unsigned char)s[i]);
    ws->w[ws->n][n] = '\0';
    ws->n++;
}

/* Cuts s into words: at every byte that is not a letter or digit, before
 * an upper-case letter that follows a lower-case one ("powerWatts"), and
 * before the last capital of a run followed by a lower-case letter
 * ("GPUTemp"); '%' is a word of its own. */
static void split_words(const char *s, size_t n, struct words *ws)
{
    size_t a = 0;
    for (size_t i = 0; i <= n; i++) {
        unsigned char c = i < n ? (unsigned char)s[i] : 0;
        int alnum = i < n && isalnum(c);
        if (alnum && i > a) {
            unsigned char p = (unsigned char)s[i - 1];
            int up = isupper(c), pl = islower(p), pu = isupper(p);
            int nl = i + 1 < n && islower((unsigned char)s[i + 1]);
            if (up && (pl || (pu && nl))) { push_word(ws, s + a, i - a); a = i; }
        }
        if (alnum) continue;
        push_word(ws, s + a, i - a);
        if (c == '%') push_word(ws, "%", 1);
        a = i + 1;
    }
}

static void drop_word(struct words *ws, int i)
{
    for (int j = i; j + 1 < ws->n; j++) memcpy(ws->w[j], ws->w[j + 1], sizeof ws->w[j]);
    ws->n--;
}

/* A number word (all digits, at most 6): its value, else -1. */
static int number_word(const char *w)
{
    size_t l = strlen(w);
    if (l == 0 || l > 6) return -1;
    int v = 0;
    for (size_t i = 0; i < l; i++) {
        if (!isdigit((unsigned char)w[i])) return -1;
        v = v * 10 + (w[i] - '0');
    }
    return v;
}

/* Takes the GPU of a wide row's column out of the words: "gpu3", "cuda0",
 * or "gpu"/"cuda"/"device" followed by a number word. Its index, else -1. */
static int take_gpu_number(struct words *ws)
{
    for (int i = 0; i < ws->n; i++) {
        const char *w = ws->w[i];
        static const char *const pre[] = { "gpu", "cuda", "device" };
        for (size_t k = 0; k < 3; k++) {
            size_t pl = strlen(pre[k]);
            if (strncmp(w, pre[k], pl)) continue;
            int v = -1;
            if (w[pl]) v = number_word(w + pl);
            else if (i + 1 < ws->n && (v = number_word(ws->w[i + 1])) >= 0) drop_word(ws, i + 1);
            if (v < 0) continue;
            drop_word(ws, i);
            return v;
        }
    }
    return -1;
}

/* 1 when every word of ws (less those marked in used) is explained by
 * concept c: each group of req takes one unused word, the rest are in opt. */
static int concept_fits(const struct concept *c, const struct words *ws)
{
    int used[FN_MAX_WORDS] = { 0 };
    for (int g = 0; g < 3 && c->req[g]; g++) {
        int found = 0;
        for (int i = 0; i < ws->n && !found; i++)
            if (!used[i] && in_words(c->req[g], ws->w[i])) used[i] = found = 1;
        if (!found) return 0;
    }
    for (int i = 0; i < ws->n; i++)
        if (!used[i] && !in_words(c->opt, ws->w[i])) return 0;
    return 1;
}

/* A time column: every word a time word, one of them a core one. Its rank
 * (0 best) and role into r. */
static int time_fits(const struct words *ws, struct fn_result *r)
{
    int core = 0, has_time = 0, has_date = 0, has_stamp = 0, has_other = 0;
    for (int i = 0; i < ws->n; i++) {
        const char *w = ws->w[i];
        if (in_words(time_core, w)) {
            core = 1;
            if (!strcmp(w, "time")) has_time = 1;
            else if (!strcmp(w, "date")) has_date = 1;
            else if (!strcmp(w, "stamp")) has_stamp = 1;
            else has_other = 1;
        } else if (!in_words(time_extra, w)) {
            return 0;
        }
    }
    if (!core) return 0;
    if (has_other || (has_time && (has_date || has_stamp)) || has_stamp) {
        r->role = FN_TIME;
        r->time_rank = (has_time && has_date) ? 1 : 0;
    } else if (has_time) {
        r->role = FN_TOD;
        r->time_rank = 4;
    } else {
        r->role = FN_DATE;
        r->time_rank = 5;
    }
    return 1;
}

/* W&B's own GPU keys that the general rule would read otherwise: "gpu" is
 * the utilisation, "memory" the memory controller's, "memoryAllocated"
 * (a percentage of the framebuffer) and "powerPercent" (of the limit) have
 * no schema field and stay metrics without a warning. 1 when ws (the words
 * after "system.gpu.N.") is one of them, with r filled. */
static int wandb_key(const struct words *ws, enum dim udim, double uf, struct fn_result *r)
{
    if (ws->n == 1 && !uf && !strcmp(ws->w[0], "gpu")) {
        r->role = FN_NUM; r->key = "gpu.utilization.gpu.pct"; r->dim = D_PCT;
        return 1;
    }
    if (ws->n == 1 && !uf && !strcmp(ws->w[0], "memory")) {
        r->role = FN_NUM; r->key = "gpu.utilization.memory_copy.pct"; r->dim = D_PCT;
        return 1;
    }
    if ((ws->n == 2 && !uf && !strcmp(ws->w[0], "memory") && !strcmp(ws->w[1], "allocated")) ||
        (ws->n == 1 && uf && udim == D_PCT && !strcmp(ws->w[0], "power"))) {
        r->role = FN_OTHER;
        return 1;
    }
    return 0;
}

/* 1 when the words speak of a GPU quantity (and of no other device). */
static int gpu_like(const struct words *ws)
{
    int g = 0;
    for (int i = 0; i < ws->n; i++) {
        if (in_words(foreign, ws->w[i])) return 0;
        if (in_words(gpuish, ws->w[i])) g = 1;
    }
    return g;
}

/* The words of name s (n bytes) into ws, a unit at its end taken off into
 * *udim / *uf (*uf 0: none), and whether a word or prefix says GPU. */
static void name_words(const char *s, size_t n, struct words *ws, enum dim *udim, double *uf, int *strong,
                       int *wandb, char unit_word[FN_MAX_WORD + 1])
{
    if (unit_word) unit_word[0] = '\0';
    if (wandb) *wandb = 0;
    *udim = D_NONE;
    *uf = 0;
    *strong = 0;
    memset(ws, 0, sizeof *ws);
    size_t nl = n;
    while (nl && (s[nl - 1] == ' ' || s[nl - 1] == '\t')) nl--;
    /* a unit in brackets at the end: "memory.used [MiB]", "Power (W)" */
    if (nl >= 3 && (s[nl - 1] == ']' || s[nl - 1] == ')')) {
        char open = s[nl - 1] == ']' ? '[' : '(';
        size_t i = nl - 1;
        while (i > 0 && s[i - 1] != open) i--;
        if (i > 1) {
            const char *u = s + i;
            size_t ul = nl - 1 - i;
            while (ul && *u == ' ') { u++; ul--; }
            while (ul && u[ul - 1] == ' ') ul--;
            if (fn_unit_lookup(u, ul, udim, uf)) nl = i - 1;
            /* else: words in brackets ("Time (UTC)"), read as words */
        }
    }
    split_words(s, nl, ws);
    for (int i = 0; i < ws->n; i++) if (in_words(gpu_words, ws->w[i])) *strong = 1;
    /* W&B's system metrics: "system.gpu.N.<key>" (and its copies under
     * "system.gpu.process.N.") */
    int w_b = ws->n >= 3 && !strcmp(ws->w[0], "system") && !strcmp(ws->w[1], "gpu");
    if (wandb) *wandb = w_b;
    /* W&B's other system metrics ("system.memory", "system.cpu") are the host's */
    while (ws->n > 1 && in_words(prefixes, ws->w[0]) && (strcmp(ws->w[0], "system") || w_b)) {
        if (in_words(gpu_prefixes, ws->w[0])) *strong = 1;
        drop_word(ws, 0);
    }
    /* a unit word at the end: "temp_c", "power_W", "util_percent", "%" */
    if (!*uf && ws->n >= 2) {
        const char *last = ws->w[ws->n - 1];
        if (fn_unit_lookup(last, strlen(last), udim, uf)) {
            if (unit_word) memcpy(unit_word, last, strlen(last) + 1);
            drop_word(ws, ws->n - 1);
        }
    }
}

int fn_name_unit(const char *s, size_t n, enum dim *dim, double *f)
{
    struct words ws;
    int strong;
    name_words(s, n, &ws, dim, f, &strong, NULL, NULL);
    return *f != 0;
}

void fn_recognise(const char *s, size_t n, struct fn_result *r)
{
    memset(r, 0, sizeof *r);
    r->gpu = -1;
    r->role = FN_OTHER;
    enum dim udim;
    double uf;
    struct words ws;
    int wandb;
    char uw[FN_MAX_WORD + 1];
    name_words(s, n, &ws, &udim, &uf, &r->strong, &wandb, uw);
    if (wandb && ws.n >= 2 && !strcmp(ws.w[1], "process")) { r->skip = 1; return; }
    r->gpu = take_gpu_number(&ws);
    if (r->gpu >= 0) {        /* the name without its GPU part, for a metric of its own */
        size_t o = 0;
        for (int i = 0; i <= ws.n; i++) {
            const char *w = i < ws.n ? ws.w[i] : uw;     /* the unit word last ("power_percent") */
            size_t l = strlen(w);
            if (!l || o + l + 2 >= sizeof r->base) continue;
            if (o) r->base[o++] = '_';
            memcpy(r->base + o, w, l);
            o += l;
        }
        r->base[o] = '\0';
    }
    if (wandb && r->gpu >= 0 && wandb_key(&ws, udim, uf, r)) return;
    if (r->gpu >= 0) r->strong = 1;
    if (ws.n == 0) return;
    if (r->gpu < 0 && time_fits(&ws, r)) return;
    const struct concept *conflict = NULL;
    for (size_t i = 0; i < sizeof concepts / sizeof concepts[0]; i++) {
        const struct concept *c = &concepts[i];
        if (!concept_fits(c, &ws)) continue;
        if (uf && c->dim != udim) {            /* a unit of another family: "power_pct" */
            if (!conflict) conflict = c;
            continue;
        }
        if (uf && c->role != FN_NUM) continue; /* a unit on a name, an id: no */
        if (r->gpu >= 0 && (c->role == FN_GPU || c->role == FN_HOST)) continue;
        r->role = c->role;
        r->key = c->key;
        r->dim = c->dim;
        r->scale = uf;
        /* nvidia-smi's and pandas' "index" is the GPU's, as it always was here */
        if (c->role == FN_GPU && (in_words("index idx", ws.w[0]) || r->strong)) r->strong = 1;
        return;
    }
    r->gpu_like = gpu_like(&ws) || conflict;
    if (conflict) r->why = "its unit does not fit the field its name gives";
    else if (r->gpu_like) r->why = "no GPU field of that meaning";
}

/* ------------------------------------------------------- keys for --map */

int fn_field_by_key(const char *key, struct fn_result *r)
{
    memset(r, 0, sizeof *r);
    r->gpu = -1;
    if (!strcmp(key, "@timestamp") || !strcmp(key, "timestamp")) { r->role = FN_TIME; return 1; }
    if (!strcmp(key, "gpu.index")) { r->role = FN_GPU; return 1; }
    if (!strcmp(key, "host.name")) { r->role = FN_HOST; return 1; }
    if (!strncmp(key, "metrics.", 8) || !strncmp(key, "labels.", 7)) {
        const char *nm = strchr(key, '.') + 1;
        if (!*nm) return 0;
        for (const char *p = nm; *p; p++)
            if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '_')) return 0;
        r->role = FN_OTHER;
        r->key = key;
        return 1;
    }
    for (size_t i = 0; i < sizeof concepts / sizeof concepts[0]; i++)
        if (concepts[i].key && !strcmp(concepts[i].key, key)) {
            r->role = concepts[i].role;
            r->key = concepts[i].key;
            r->dim = concepts[i].dim;
            return 1;
        }
    return 0;
}

const char *fn_suggest_key(const char *key)
{
    const char *best = NULL;
    size_t bd = 99;
    for (size_t i = 0; i < sizeof concepts / sizeof concepts[0]; i++) {
        if (!concepts[i].key) continue;
        size_t d = gl_edit_distance(key, concepts[i].key);
        if (d < bd) { bd = d; best = concepts[i].key; }
    }
    /* a name that means the field ("gpu_temp"): its field */
    struct fn_result r;
    fn_recognise(key, strlen(key), &r);
    if (r.key && fn_is_field(&r)) return r.key;
    return bd <= 6 ? best : NULL;
}

/* ------------------------------------------------------------ --map COL=FIELD */

#define FN_MAP_MAX 256
#define FN_MAP_COL 128

/* The user's column map: each column's name in normal form and its field. */
static struct { char col[FN_MAP_COL + 1]; char key[FN_MAP_COL + 1]; } fn_map[FN_MAP_MAX];
static size_t fn_nmap;

int fn_map_set(const char *const *pairs, size_t n, char *err, size_t errlen)
{
    fn_nmap = 0;
    for (size_t i = 0; i < n; i++) {
        const char *eq = strrchr(pairs[i], '=');
        if (!eq || eq == pairs[i] || !eq[1]) {
            snprintf(err, errlen, "--map '%.60s': want COL=FIELD, e.g. temp_f=gpu.temperature.gpu", pairs[i]);
            return -1;
        }
        if (n > FN_MAP_MAX) {
            snprintf(err, errlen, "--map: at most %d columns", FN_MAP_MAX);
            return -1;
        }
        const char *key = eq + 1;
        struct fn_result r;
        if (strlen(key) > FN_MAP_COL || !fn_field_by_key(key, &r)) {
            const char *sug = fn_suggest_key(key);
            snprintf(err, errlen, "--map '%.60s': unknown field '%.60s'%s%s%s (a gpu.* field of the schema, "
                     "gpu.index, host.name, @timestamp, metrics.NAME or labels.NAME)", pairs[i], key,
                     sug ? " (did you mean " : "", sug ? sug : "", sug ? "?)" : "");
            return -1;
        }
        if (!name_norm(pairs[i], (size_t)(eq - pairs[i]), fn_map[fn_nmap].col, sizeof fn_map[fn_nmap].col)) {
            snprintf(err, errlen, "--map '%.60s': the column has no letter or digit", pairs[i]);
            return -1;
        }
        snprintf(fn_map[fn_nmap].key, sizeof fn_map[fn_nmap].key, "%s", key);
        fn_nmap++;
    }
    return 0;
}

int fn_map_lookup(const char *s, size_t n, struct fn_result *r)
{
    if (!fn_nmap) return 0;
    char nm[FN_MAP_COL + 1];
    if (n > 4 * FN_MAP_COL || !name_norm(s, n, nm, sizeof nm)) return 0;
    for (size_t i = 0; i < fn_nmap; i++)
        if (!strcmp(fn_map[i].col, nm)) {
            if (!fn_field_by_key(fn_map[i].key, r)) return 0;
            /* the unit the name gives still converts, when it is the field's */
            enum dim d;
            double f;
            if (r->role == FN_NUM && fn_name_unit(s, n, &d, &f) && (d == r->dim || r->dim == D_NONE)) r->scale = f;
            r->strong = 1;
            r->mapped = 1;
            return 1;
        }
    return 0;
}

size_t fn_map_count(void) { return fn_nmap; }
