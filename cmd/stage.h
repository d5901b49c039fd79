/*
 * stage.h - what `run` and `detect` share after the parser: the set of
 * outputs an engine's records go to (run's; detect's are the pipeline's
 * sinks), the SIGHUP reload of the detector configuration, and the
 * Elasticsearch settings taken from the config file.
 */
#ifndef GPULOG_STAGE_H
#define GPULOG_STAGE_H

#include "../core/common.h"

struct sink;
struct engine;
struct profile;
struct es_cli;
struct gpulog_config;
struct cli_flag;

/* The outputs of a command (each one owned by the set, freed by outputs_free). */
struct outputs {
    struct sink *v[4];
    size_t n;
};
/* Adds s (taken over) when there is room. */
void outputs_add(struct outputs *o, struct sink *s);
/* Makes progress on every output for up to timeout_ms each. */
void outputs_poll(const struct outputs *o, int timeout_ms);
/* Settles what every output has until the wall-clock deadline (epoch ms);
 * returns the documents still unsettled. */
long outputs_drain(const struct outputs *o, int64_t deadline_ms);
/* Says "gpulog CMD: output failed: ..." for each output that failed for
 * good; returns how many did. */
int outputs_failed(const struct outputs *o, const char *cmd);
void outputs_free(struct outputs *o);

/* SIGHUP: loads the detector configuration again (path, else the built-in
 * profile) and hands it to eng, which keeps the state of unchanged rules;
 * *prof is replaced. A bad file is refused (logged, counted): the running
 * configuration stays. Returns GL_OK when reloaded. */
int stage_reload(struct engine *eng, struct profile **prof, const char *path, const char *builtin);

/* After es_cli_finish: the password and API key of the configuration file
 * (elasticsearch.*) where the flags gave none. es borrows cfg's strings. */
void stage_es_secrets(struct es_cli *es, const struct gpulog_config *cfg);

/* What a command's option callback returns for an option that is not its
 * own: stage_flags goes on with the configuration keys and --es options. */
#define STAGE_OPT_PASS (-1)

/* The flags of a command with an --es output (run, detect). */
struct stage_flags {
    const char *name;                    /* "detect", "run", "report": for errors */
    const struct cli_flag *own;          /* the command's own flags */
    size_t nown;
    const char *const *keys;             /* its configuration keys (config_flags.h) */
    struct es_cli *es;                   /* filled from cfg, then from --es flags */
    /* one option: the command's own (EXIT_OK or EXIT_USAGE, said) or
     * STAGE_OPT_PASS; ctx is the caller's */
    int (*opt)(void *ctx, int c, const char *arg);
    void *ctx;
};
/* Parses argv (from optind 1; optind is left after the options) over the
 * configuration: each option goes to f->opt first, then to cfg's keys,
 * then to the --es options; a missing value or an unknown option is a
 * usage error. Ends with es_cli_finish and stage_es_secrets. f, cfg and
 * argv stay the caller's. EXIT_OK or EXIT_USAGE (said). */
int stage_flags(const struct stage_flags *f, struct gpulog_config *cfg, int argc, char **argv);

#endif
