/*
 * fieldname.h - what a column is, from its name: the one rule every
 * CSV-like format (csv, query-csv's unknown names, JSON lines, W&B) uses
 * to find the schema field, the GPU index, the host or the time in a column
 * name, whatever its spelling.
 *
 * The rule: a name is cut into words (separators . _ - / space, camelCase,
 * "GPUTemp"), lower-cased; a unit at the end ("[MiB]", "(W)", "_c", "_w",
 * "_pct", "%", "Watts", "_mib", "_ghz", "_bytes") is taken off and becomes a
 * conversion to the field's unit; the prefixes of DCGM ("DCGM_FI_DEV_",
 * "dcgm_"), NVML and W&B ("system.") are dropped; "gpu3" / "gpu.3" / "gpu_3"
 * names the GPU of a wide row. The words left must all be explained by one
 * concept of the table in fieldname.c: each of its required word groups
 * takes one word (any synonym: temp/temperature/tmp, util/utilization/...),
 * and every other word must be one the concept allows (gpu, current, draw,
 * ...). So "temperature_gpu_c", "GPU Temp (C)", "gpu.temperature",
 * "DCGM_FI_DEV_GPU_TEMP", "dcgm_gpu_temp" and dmon's "gtemp" are all
 * gpu.temperature.gpu, while "cpu_temp", "temp_limit" or "max_temp" are not
 * (a word no concept allows). A unit of another family than the field's
 * ("power_pct") matches nothing, and says so.
 *
 * Everything is pure; results point into static tables.
 */
#ifndef GPULOG_FIELDNAME_H
#define GPULOG_FIELDNAME_H

#include <stddef.h>

/* The unit family of a field (the field's own unit: %, W, °C, MiB, MHz). */
enum dim { D_NONE, D_PCT, D_W, D_C, D_MIB, D_MHZ };

/* What a column is. */
enum fn_role {
    FN_OTHER,   /* none of the below: metrics.<name> / labels.<name> */
    FN_TIME,    /* a full timestamp or epoch time */
    FN_DATE,    /* a date column (a pair with a time-of-day column) */
    FN_TOD,     /* a time column: a time of day when a date column is there */
    FN_GPU,     /* gpu.index (or a UUID) */
    FN_HOST,    /* host.name */
    FN_NUM,     /* a numeric schema field (key, dim) */
    FN_STR,     /* a string schema field */
    FN_MASK,    /* the throttle-reasons bitmask */
    FN_BOOL,    /* a boolean schema field (Yes/No, Active/Not Active, true/false, 1/0) */
};

struct fn_result {
    enum fn_role role;
    const char *key;     /* FN_NUM, FN_STR, FN_MASK: the schema field */
    enum dim dim;        /* FN_NUM: the field's unit family */
    double scale;        /* from the unit the name gives to the field's unit; 0: the name gives none */
    int time_rank;       /* FN_TIME/FN_DATE/FN_TOD: precedence, lower wins */
    int gpu;             /* the GPU a wide row's column belongs to ("gpu3_temp"): its index, else -1 */
    int strong;          /* the name itself says GPU ("gpu_temp", "DCGM_FI_DEV_POWER_USAGE", dmon's
                          * "pwr", a wide row's "gpu3_"): else a generic word ("temp", "power",
                          * "memory_used") that is a GPU field only in a table about GPUs */
    int gpu_like;        /* FN_OTHER: the name speaks of a GPU quantity (a temperature, power, ...) */
    const char *why;     /* FN_OTHER with gpu_like: why it was not taken (static text) */
    int mapped;          /* from the user's --map */
    int skip;            /* a copy of another column's values (W&B's system.gpu.process.N.*): left out */
    char base[64];       /* a wide row's column: its name without the GPU part ("gpu3_fan_rpm": fan_rpm),
                          * for the metric it stays when it is no schema field; "" otherwise */
};

/* 1 when r names a schema field of the GPU (a number, text, bitmask or boolean). */
static inline int fn_is_field(const struct fn_result *r)
{
    return r->role == FN_NUM || r->role == FN_STR || r->role == FN_MASK || r->role == FN_BOOL;
}

/* Recognises the column named s (n bytes; no NUL needed). Pure. */
void fn_recognise(const char *s, size_t n, struct fn_result *r);

/* The unit u (ul bytes: "MiB", "W", "%", "GHz", "°C", ...) if known: its
 * family in *dim and its factor to the family's unit in *f. Returns the
 * table's spelling, or NULL. Case matters for the one-letter units only
 * ("M" MiB, "G" GiB); the others are matched in any case. */
const char *fn_unit_lookup(const char *u, size_t ul, enum dim *dim, double *f);

/* The field key that names a field the schema has (gpu.*, process.*, host.name,
 * @timestamp, metrics.<name>, labels.<name>): for --map. Fills r as
 * fn_recognise would for a column of that field (role, key, dim; scale 0).
 * Returns 0 when key is no such field. */
int fn_field_by_key(const char *key, struct fn_result *r);

/* The schema field closest to a misspelled key (for "did you mean"), or NULL. */
const char *fn_suggest_key(const char *key);

/* The unit a column name carries at its end ("_mib", " [W]", "Watts"):
 * 1 with its family and factor, else 0. */
int fn_name_unit(const char *s, size_t n, enum dim *dim, double *f);

/* The user's column map (--map COL=FIELD, configuration key `map`),
 * process-wide like the time zone: fn_map_set replaces it with n
 * "COL=FIELD" texts (copied; COL compared in normal form: case, separators
 * and brackets do not matter). A FIELD that names no schema field is
 * refused, with a suggestion, in err: 0, or -1. */
int fn_map_set(const char *const *pairs, size_t n, char *err, size_t errlen);
/* 1 and the mapped meaning of column s (n bytes) in r when the map names
 * it (the unit in its name still converts); else 0. */
int fn_map_lookup(const char *s, size_t n, struct fn_result *r);
/* How many columns the map names. */
size_t fn_map_count(void);

/* The name of unit family d ("%", "W", "°C", "MiB", "MHz", "" for none). */
const char *fn_dim_unit(enum dim d);

#endif
