/*
 * config.h - the gpulog configuration: one YAML file, environment variables
 * and command-line flags, described by one table.
 *
 * Every key lives in one row of a table {path, type, default, offset, help}
 * (Fluent Bit's config_map idea): the parser, `gpulog config print`, the
 * environment mapping and docs/configuration.md all come from that table,
 * so they cannot disagree.
 *
 * Precedence, lowest first:
 *   1. built-in defaults (every key has one)        config_defaults()
 *   2. the YAML file (--config FILE or $GPULOG_CONFIG) config_load()
 *   3. environment variables GPULOG_<SECTION>_<KEY>  config_apply_env()
 *      (the key path upper-cased, '.' -> '_': kafka.brokers -> GPULOG_KAFKA_BROKERS)
 *   4. command-line flags, applied last by each command with config_set()
 * config_init() does 1-3 in one call.
 *
 * Typical command (flags applied in the getopt loop, after the file and env):
 *
 *     struct gpulog_config cfg;
 *     char err[4096];
 *     if (config_init(&cfg, config_path_from_argv(argc, argv, "--config"), err, sizeof err) != GL_OK)
 *         { fprintf(stderr, "%s\n", err); config_free(&cfg); return EXIT_USAGE; }
 *     while ((c = getopt_long(...)) != -1) switch (c) {
 *         case 'b': if (config_set(&cfg, "kafka.brokers", optarg, err, sizeof err)) ...; break;
 *         case 'X': if (config_set(&cfg, "kafka.properties", optarg, err, sizeof err)) ...; break;
 *         case OPT_METRICS_ADDR: config_set(&cfg, "metrics_addr", optarg, ...); break;
 *         case OPT_CONFIG: break;   (already read)
 *     }
 *     if (config_apply_process(&cfg, err, sizeof err) != GL_OK) ...
 *     if (metrics_serve(cfg.metrics_addr, err, sizeof err) != GL_OK) ...
 *
 * Ownership: a struct gpulog_config owns every string in it; config_free
 * releases them. Strings are never NULL after config_defaults (empty = unset).
 * Errors are written to a caller buffer; file errors read FILE:LINE:COL: msg,
 * one per line when there are several.
 */
#ifndef GPULOG_CONFIG_H
#define GPULOG_CONFIG_H

#include <stddef.h>
#include <stdint.h>

/* A string map kept as "key=value" strings (ready for librdkafka -X style). */
struct config_map {
    char **kv;
    size_t n;
};

enum config_source_type { CONFIG_SRC_EXEC, CONFIG_SRC_FILE, CONFIG_SRC_KMSG, CONFIG_SRC_STDIN };

/* One input of `gpulog collect` / `gpulog run`. */
struct config_source {
    char *type;        /* "exec", "file", "kmsg" or "stdin" */
    char *command;     /* exec: the command line */
    char *path;        /* file: path or glob; kmsg: device or file (default /dev/kmsg) */
    char *format;      /* a parser name, "auto" by default */
};

struct config_sources {
    struct config_source *v;
    size_t n;
};

struct gpulog_config {
    char *host;                 /* host.name; "" = this machine's host name */
    char *tz;                   /* zone of tool timestamps; "" = local zone */
    int64_t year;               /* year of syslog times; 0 = inferred (parsers/kmsg.h) */
    struct {
        char *level;            /* debug|info|warn|error */
        char *format;           /* logfmt|json */
    } log;
    struct config_sources sources;
    struct config_map map;      /* map: column name -> schema field (parsers/fieldname.h) */
    struct config_map labels;   /* labels: NAME=VALUE added to every event as labels.NAME */
    struct {
        char *brokers;
        char *topic_metrics, *topic_events, *topic_anomalies, *topic_deadletter;
        char *topic_state;               /* detect's snapshots; "" = none */
        char *topic_fleet;               /* fleet's records (with --fleet-topic) */
        char *group;
        struct config_map properties;
    } kafka;
    struct {
        char *profile;          /* auto|gpu|generic */
        char *config;           /* detector configuration file; "" = built-in profile */
    } detect;
    struct {
        char *group;            /* fleet's consumer group */
        char *group_by;         /* topology label names, comma-separated */
        int64_t window_ms, min_hosts, min_gpus, change_ms, hold_ms, expire_ms, max_keys, max_members;
    } fleet;
    struct {
        char *url;
        char *ns;               /* elasticsearch.namespace */
        int index_metrics;
        char *user;
        char *password;         /* secret */
        char *password_file;
        char *api_key;          /* secret */
        char *api_key_file;
        char *ca_file, *cert_file, *key_file;
        char *deadletter;       /* "kafka" or a file path; "" = the command's default */
        int64_t batch_bytes;
        int64_t batch_age_ms;
        int64_t max_pending_bytes;
    } es;
    char *state_dir;
    char *metrics_addr;         /* HOST:PORT; "" = no metrics server */
    char *gpu_metrics;          /* auto|on|off: the GPU table on /metrics (core/gpumetrics.h) */
    int64_t gpu_metrics_stale_periods;
    int64_t gpu_metrics_max_gpus;
    int64_t shutdown_timeout_ms;
    struct {
        int64_t spool_max;           /* bytes */
        int64_t stale_after_ms;      /* 0 = automatic */
        int64_t stats_interval_ms;   /* 0 = off */
        int64_t rotate_max_generations;
        int64_t rotate_max_age_ms;
    } collect;
};

/* The value types of the table. */
enum config_type {
    CONFIG_STR,       /* any scalar */
    CONFIG_INT,       /* integer */
    CONFIG_BOOL,      /* true/false (also yes/no, on/off) */
    CONFIG_DURATION,  /* 250ms, 10s, 5m, 1h; a bare number is seconds; stored in ms */
    CONFIG_SIZE,      /* bytes: 4096, 64KiB, 5MiB, 1GiB (K/M/G are 1024-based too) */
    CONFIG_ENUM,      /* one of the '|'-separated choices */
    CONFIG_ADDR,      /* HOST:PORT, [IPv6]:PORT or :PORT; "" = disabled */
    CONFIG_MAP,       /* mapping of scalars (nested keys joined with '.') */
    CONFIG_SOURCES,   /* list of source mappings */
};

#define CONFIG_F_URL 2u        /* an http:// or https:// URL, or "" (config_url_ok) */
#define CONFIG_F_NAMESPACE 4u  /* an Elasticsearch data stream namespace (config_namespace_ok) */

/* The command-line flag of a key: "-b, --brokers LIST" is { 'b',
 * "brokers", "LIST" }. No argument (arg NULL) is for boolean keys: the flag
 * sets true. All zero: the key has no flag of its own. */
struct config_flag {
    int letter;               /* short option letter, 0 = none */
    const char *name;         /* long option without "--", NULL = letter only */
    const char *arg;          /* the argument's name in --help, NULL = none */
};

/* One row of the table. off is the offset of the field in its struct
 * (struct gpulog_config, or struct config_source for the source-item table). */
struct config_key {
    const char *path;
    enum config_type type;
    const char *def;          /* default as text (parsed like a file value) */
    size_t off;
    const char *choices;      /* CONFIG_ENUM: "a|b|c" */
    unsigned flags;           /* CONFIG_F_URL, CONFIG_F_NAMESPACE: checked wherever the value comes from */
    struct config_flag flag;  /* the same setting on the command line */
    const char *help;
};

/* The key table (and the table of keys inside one sources[] item). */
const struct config_key *config_keys(size_t *n);
const struct config_key *config_source_keys(size_t *n);
/* Looks a key up by its dotted path; NULL if unknown. */
const struct config_key *config_key_find(const char *path);
/* The environment variable name of a key ("GPULOG_KAFKA_BROKERS"). */
void config_env_name(const char *path, char *out, size_t outlen);

/* Fills cfg with the defaults of every key. cfg is overwritten, not freed. */
void config_defaults(struct gpulog_config *cfg);
/* Frees everything cfg owns and zeroes it. */
void config_free(struct gpulog_config *cfg);

/* Reads a YAML file over cfg (which holds defaults or earlier values).
 * Unknown keys, wrong types and duplicate keys are errors. Returns GL_OK, or
 * GL_ERROR with "FILE:LINE:COL: message" lines in err (as many as fit);
 * cfg is then partially updated and should be freed. */
int config_load(const char *path, struct gpulog_config *cfg, char *err, size_t errlen);
/* The same from a string; name is used in error messages. */
int config_load_string(const char *name, const char *yaml, size_t len,
                       struct gpulog_config *cfg, char *err, size_t errlen);

/* Applies every set GPULOG_<SECTION>_<KEY> variable (scalar keys only, plus
 * GPULOG_KAFKA_PROPERTIES as "k=v,k=v"). Returns
 * GL_OK or GL_ERROR with "GPULOG_X: message" in err. */
int config_apply_env(struct gpulog_config *cfg, char *err, size_t errlen);

/* Sets one key from a string, as a flag would. For a map key, value is
 * "k=v" (adds or replaces k), or the path names the entry directly
 * ("kafka.properties.sasl.username"). For "sources" the value is
 * "TYPE[:ARG]" (exec:CMD, file:PATH, kmsg[:PATH], stdin) and is appended;
 * call config_clear_sources first when flags replace the file's sources.
 * Returns GL_OK or GL_ERROR with the reason in err. */
int config_set(struct gpulog_config *cfg, const char *path, const char *value,
               char *err, size_t errlen);
void config_clear_sources(struct gpulog_config *cfg);

/* The FILE of "OPT FILE" or "OPT=FILE" in argv (opt is e.g. "--config";
 * the last one wins), scanning up to a "--"; NULL if absent. Lets a command
 * load the file before its getopt loop applies the other flags over it. */
const char *config_path_from_argv(int argc, char **argv, const char *opt);

/* defaults < file (path, or $GPULOG_CONFIG when path is NULL; no file when
 * both are unset) < environment. Commands call this, then config_set for
 * each flag given, then config_apply_log. */
int config_init(struct gpulog_config *cfg, const char *path, char *err, size_t errlen);
/* config_init for a subcommand: the file named by --config in argv (else
 * $GPULOG_CONFIG); on failure prints "gpulog CMD: reason", frees cfg and
 * returns GL_ERROR (the command exits with EXIT_USAGE). */
int config_init_command(struct gpulog_config *cfg, const char *cmd, int argc, char **argv);

/* Sets gl_log_level / gl_log_json from cfg->log. */
void config_apply_log(const struct gpulog_config *cfg);
/* config_apply_log plus the time zone (gl_tz_set(cfg->tz) when tz is set).
 * Returns GL_ERROR with the reason in err for an unknown zone or a year out
 * of 1970..9999 (the caller hands cfg->year to kmsg_syslog_year). */
int config_apply_process(const struct gpulog_config *cfg, char *err, size_t errlen);

/* Returns the secret from value if non-empty, else the first line of file
 * (trailing newline stripped), else "" (all heap; caller frees). GL_ERROR if
 * the file cannot be read. Use for elasticsearch.password / api_key. */
int config_secret(const char *value, const char *file, char **out, char *err, size_t errlen);

/* Splits "HOST:PORT", "[V6]:PORT" or ":PORT" (host "" = any). GL_OK or GL_ERROR. */
int config_split_addr(const char *addr, char *host, size_t hostlen, int *port);

/* Looks a map entry up ("sasl.username"); NULL if absent. Borrowed. */
const char *config_map_get(const struct config_map *m, const char *key);

struct buf;
/* The one rule of what is secret, for config print, logs, errors and the
 * scrubbed argv: 1 when a key, map key or librdkafka property of n bytes
 * names a credential (it contains password, passwd, secret, token,
 * credential, jaas, private, api_key, apikey, key.pem, oauthbearer.config
 * or oauthbearer.extensions, or its last component is "key" or ends in
 * "_key"), unless it names a path to one (ends in _file or .location). */
int config_secret_key(const char *key, size_t n);
/* Appends url to out with its user info (user:password@) as "***@"; other
 * strings unchanged. The caller owns out. */
void config_url_mask(const char *url, struct buf *out);
/* 1 when url is one gpulog can send to: http:// or https:// and a host.
 * The one check of an Elasticsearch URL, for config check, the file, the
 * environment and --es alike (config check took ftp:// that run refused). */
int config_url_ok(const char *url);
/* 1 when ns is a data stream namespace Elasticsearch takes: [a-z0-9_], not
 * starting with _, 1..100 bytes (the one check, as for the URL). */
int config_namespace_ok(const char *ns);
/* Appends the configuration as YAML; secrets (keys and map entries
 * config_secret_key names) are "***" and passwords in URLs "***@" when
 * mask is set. */
void config_print(const struct gpulog_config *cfg, int mask, struct buf *out);
/* Appends docs/configuration.md (Markdown generated from the table). */
void config_docs(struct buf *out);

/* Flags from the table (config_flags.c): a command lists the keys it offers
 * as flags (a NULL-terminated list of key paths, each with a flag in its
 * row) and gets getopt_long's entries, the settings and the --help lines
 * from the rows, so a setting's flag, key, default and text are written
 * once. A command's own flags (sources, --once, --output) stay its own.
 *
 *     static const char *const keyflags[] = { "host", "kafka.brokers", "metrics_addr", NULL };
 *     struct option opts[32] = { { "once", no_argument, NULL, O_ONCE } };
 *     char shortopts[32] = ":h";
 *     config_flag_options(keyflags, opts + 1, GL_ARRAY_LEN(opts) - 2, shortopts, sizeof shortopts);
 *     while ((c = getopt_long(argc, argv, shortopts, opts, NULL)) != -1) {
 *         int r = config_flag_apply(&cfg, keyflags, c, optarg, err, sizeof err);
 *         if (r < 0) return cli_usage_error(...);   (r > 0: set; r == 0: the command's own)
 *     }
 *     config_flag_help(keyflags, &help);             (one entry per flag, wrapped) */
struct option;
/* getopt value of a long-only key flag: CONFIG_OPT_BASE + the key's row. */
#define CONFIG_OPT_BASE 0x4300
/* The getopt_long value of key k's flag: its letter, else CONFIG_OPT_BASE + row. */
int config_flag_val(const struct config_key *k);
/* "-b, --brokers LIST" for k's flag ("" when k has none), as --help shows it. */
void config_flag_spelling(const struct config_key *k, char *out, size_t outlen);
/* Writes getopt_long entries for the flags of paths into opts (at most max,
 * no terminator) and appends their short letters ("b:") to the
 * NUL-terminated shortopts. Returns the number of entries. A path that is
 * unknown or has no flag, or a full array, is a program error: it aborts. */
size_t config_flag_options(const char *const *paths, struct option *opts, size_t max,
                           char *shortopts, size_t shortlen);
/* Adds one flag to a getopt_long table: the entry {name, has_arg, val} when
 * name is set (opts[*n], at most max) and, when letter is a short option
 * (1..127), the letter (and ':' for an argument) to the NUL-terminated
 * shortopts. A full array is a program error: it aborts, naming what. */
void config_option_add(struct option *opts, size_t *n, size_t max, char *shortopts, size_t shortlen,
                       const char *name, int has_arg, int val, int letter, const char *what);
/* If opt is the flag of one of paths, sets that key from arg (as
 * config_set; a flag without argument sets true): 1, or -1 with the reason
 * in err; 0 when opt is none of them. */
int config_flag_apply(struct gpulog_config *cfg, const char *const *paths, int opt, const char *arg,
                      char *err, size_t errlen);
/* Appends the --help entries of the flags of paths: the spelling, then the
 * key's help wrapped at 79 columns, its default and [key]. */
void config_flag_help(const char *const *paths, struct buf *out);
/* Appends one --help entry in the same layout: "  " and spelling (the flag
 * column), then text (words split at blanks and newlines) from column 26,
 * wrapped at 79; a longer spelling puts the text two spaces after it. For
 * a command's own flags. */
void config_help_entry(struct buf *out, const char *spelling, const char *text);

/* The format names sources may use (NULL-terminated, borrowed for the
 * life of the process), set once by the program from the parser registry
 * (core knows no parser); until then any format name is accepted. */
void config_set_formats(const char *const *names);

#endif
