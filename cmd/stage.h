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

#endif
