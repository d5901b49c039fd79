/* stage.c - the outputs, reload and ES settings `run` and `detect` share
 * (see stage.h). */
#include "stage.h"
#include "cli.h"
#include "../sinks/sink.h"
#include "../sinks/es_cli.h"
#include "../detect/engine.h"
#include "../core/config.h"
#include "../core/metrics.h"

#include <getopt.h>
#include <stdio.h>

void outputs_add(struct outputs *o, struct sink *s)
{
    if (o->n < sizeof o->v / sizeof o->v[0]) o->v[o->n++] = s;
    else sink_free(s);
}

void outputs_poll(const struct outputs *o, int timeout_ms)
{
    for (size_t i = 0; i < o->n; i++) sink_poll(o->v[i], timeout_ms);
}

long outputs_drain(const struct outputs *o, int64_t deadline_ms)
{
    long left = 0;
    for (size_t i = 0; i < o->n; i++) {
        int64_t ms = deadline_ms - gl_now_ms();
        left += sink_drain(o->v[i], ms > INT32_MAX ? INT32_MAX : ms > 0 ? (int)ms : 0);
    }
    return left;
}

int outputs_failed(const struct outputs *o, const char *cmd)
{
    int n = 0;
    for (size_t i = 0; i < o->n; i++)
        if (o->v[i]->errstr[0]) {
            gl_say(GL_LOG_ERROR, "gpulog %s: output failed: %s\n", cmd, o->v[i]->errstr);
            n++;
        }
    return n;
}

void outputs_free(struct outputs *o)
{
    for (size_t i = 0; i < o->n; i++) sink_free(o->v[i]);
    o->n = 0;
}

int stage_reload(struct engine *eng, struct profile **prof, const char *path, const char *builtin)
{
    char err[GL_ERRLEN];
    struct profile *np = profile_load(path, builtin, err, sizeof err);
    if (!np) {
        log_error("msg=\"reload refused: the running detector configuration stays\" file=\"%s\" error=\"%s\"",
                  path ? path : "", err);
        metrics_inc_label(M_CONFIG_RELOADS, "error");
        return GL_ERROR;
    }
    size_t changed = 0, kept = engine_reload(eng, np, &changed);
    profile_free(*prof);
    *prof = np;
    log_info("msg=reload file=\"%s\" rules=%zu kept=%zu changed=%zu", path ? path : "", np->nrules, kept, changed);
    metrics_inc_label(M_CONFIG_RELOADS, "ok");
    return GL_OK;
}

void stage_es_secrets(struct es_cli *es, const struct gpulog_config *cfg)
{
    if (!es->conf.password && *cfg->es.password && es->conf.user) es->conf.password = cfg->es.password;
    if (!es->conf.api_key && *cfg->es.api_key) es->conf.api_key = cfg->es.api_key;
}

/* One option of stage_flags: the command's, a configuration key or an
 * --es option. EXIT_OK or EXIT_USAGE (said). */
static int stage_opt(const struct stage_flags *f, struct gpulog_config *cfg, int c, const char *arg, const char *name)
{
    char err[GL_ERRLEN * 4];
    if (c == ':') return cli_usage_error(f->name, "option %s needs a value", name);
    int rc = f->opt(f->ctx, c, arg);
    if (rc != STAGE_OPT_PASS) return rc;
    int r = config_flag_apply(cfg, f->keys, c, arg, err, sizeof err);
    if (r < 0) return cli_usage_error(f->name, "%s", err);
    if (r > 0) return EXIT_OK;
    r = es_cli_opt(f->es, c, arg, err, sizeof err);
    if (r > 0) return EXIT_OK;
    if (r < 0) return cli_usage_error(f->name, "%s", err);
    return cli_usage_error(f->name, "unknown option %s", name);
}

int stage_flags(const struct stage_flags *f, struct gpulog_config *cfg, int argc, char **argv)
{
    static const struct option es_opts[] = { ES_CLI_LONGOPTS };
    struct option opts[48];
    char shortopts[48] = ":h";
    cli_option_table(f->own, f->nown, f->keys, es_opts, GL_ARRAY_LEN(es_opts), opts, GL_ARRAY_LEN(opts), shortopts,
                     sizeof shortopts);
    char err[GL_ERRLEN * 4];
    if (es_cli_from_config(f->es, cfg, err, sizeof err) != GL_OK) return cli_usage_error(f->name, "%s", err);
    optind = 1;
    opterr = 0;
    int c, rc;
    while ((c = getopt_long(argc, argv, shortopts, opts, NULL)) != -1)
        if ((rc = stage_opt(f, cfg, c, optarg, argv[optind - 1])) != EXIT_OK) return rc;
    if (es_cli_finish(f->es, err, sizeof err) != GL_OK) return cli_usage_error(f->name, "%s", err);
    stage_es_secrets(f->es, cfg);
    return EXIT_OK;
}
