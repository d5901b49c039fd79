/*
 * cli.h - the subcommands of the one gpulog binary and helpers they share.
 */
#ifndef GPULOG_CLI_H
#define GPULOG_CLI_H

#include "../core/common.h"

struct gpulog_config;

#include <getopt.h>

/* Exit codes used by every subcommand. */
#define EXIT_OK     0
#define EXIT_IOERR  1
#define EXIT_USAGE  2

struct command {
    const char *name;
    const char *summary;
    int (*main)(int argc, char **argv);
};

int cmd_parse(int argc, char **argv);
int cmd_collect(int argc, char **argv);
int cmd_detect(int argc, char **argv);
int cmd_fleet(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_setup(int argc, char **argv);
int cmd_config(int argc, char **argv);
int cmd_report(int argc, char **argv);

/* `run` and the commands that are run with another face (report): the
 * name in messages, the help, and whether only the HTML report is written
 * (-o names it; no NDJSON, no live view). */
struct run_mode {
    const char *name;
    void (*help)(void);
    int report_only;
};
int run_main(const struct run_mode *m, int argc, char **argv);

/* Returns a copy of argv (argc strings and a NULL; kept for the life of the
 * process) for the program to parse, and overwrites with '*' the secrets in
 * the original strings, which /proc/PID/cmdline and ps show: the password of
 * a URL (--es http://user:PASS@host) and the value of a KEY=VALUE whose key
 * names a credential (-X sasl.password=VALUE). */
char **cli_scrub_argv(int argc, char **argv);
/* 1 if -h or --help appears among the options (before a "--"): commands
 * answer it before loading any configuration. */
int cli_wants_help(int argc, char **argv);
/* Sets the parsers' column map (parsers/fieldname.h) from the `map` key of
 * cfg (--map COL=FIELD), and the node's labels from `labels` (--label
 * NAME=VALUE). GL_OK, or GL_ERROR with the reason in err. */
int cli_apply_map(const struct gpulog_config *cfg, char *err, size_t errlen);
/* host.name of the events every command writes: given (--host, key host)
 * when it is not empty, else this machine's host name (static storage):
 * one rule for parse, collect and run (an empty host.name breaks the
 * schema's minLength 1). */
const char *cli_host(const char *given);
/* Installs handler for SIGTERM, SIGINT, SIGQUIT and SIGHUP (the
 * long-running commands stop on the first three and reload on the last). */
void cli_catch_signals(void (*handler)(int));
/* Prints "gpulog CMD: msg" and returns EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One flag of a command's own (the flags that set a configuration key come
 * from the key table: config_flag_options in core/config.h): its getopt
 * entry and its --help text. */
struct cli_flag {
    const char *name;        /* long name; NULL = a short letter only */
    int val;                 /* short letter, or a code >= 256 */
    int has_arg;             /* no_argument, required_argument, optional_argument */
    int section;             /* which block of --help it is listed in */
    const char *shown;       /* --help's flag column ("-e, --exec CMD"); NULL = not listed */
    const char *help;        /* its text, lines separated by '\n' */
};
/* Writes getopt_long entries for flags into opts (at most max, no
 * terminator) and appends their letters to the NUL-terminated shortopts.
 * Returns the number of entries. */
size_t cli_options(const struct cli_flag *f, size_t n, struct option *opts, size_t max, char *shortopts, size_t shortlen);
/* Prints the --help lines of the flags of one section, in table order. */
void cli_flag_help(const struct cli_flag *f, size_t n, int section);
/* A command's getopt_long table in opts (room for max entries): its own
 * flags, the flags of the configuration keys (config_flag_options), the
 * extra entries (e.g. ES_CLI_LONGOPTS), --help and the terminator; their
 * letters appended to shortopts (which starts as ":h"). */
void cli_option_table(const struct cli_flag *own, size_t nown, const char *const *keys, const struct option *extra,
                      size_t nextra, struct option *opts, size_t max, char *shortopts, size_t shortlen);
/* Prints the --help lines of the flags of the configuration keys (config_flag_help). */
void cli_key_help(const char *const *keys);

/* Buffered output to an fd; out_flush returns GL_ERROR on a write error. */
struct out {
    int fd;
    struct buf b;
    int failed;
};
void out_init(struct out *o, int fd);
int out_flush(struct out *o);
static inline int out_maybe_flush(struct out *o)
{
    return o->b.len >= 65536 ? out_flush(o) : GL_OK;
}
void out_free(struct out *o);

#endif
