/* run.c - `gpulog run`: parse, detect and print in one process (the
 * embedded default: no Kafka or Elasticsearch needed). `gpulog report` is
 * the same command with another face (cmd/report.c).
 *
 * This file parses the flags, opens the input (a file, stdin or a
 * command's output) and builds the parts: parser, engine, outputs, live
 * view, report. cmd/run_loop.c joins them (line -> parser -> engine ->
 * outputs) and ends the run.
 */
#include "cli.h"
#include "run_loop.h"
#include "../parsers/parser.h"
#include "../sinks/es_cli.h"
#include "../detect/engine.h"
#include "../detect/live.h"
#include "../detect/report.h"
#include "../core/config.h"
#include "../core/metrics.h"
#include "../core/gpumetrics.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The keys of the configuration table run offers as flags (their flag,
 * text and default come from the key's row, core/config.c). */
static const char *const run_keys[] = {
    "detect.config", "detect.profile", "tz", "year", "host", "map", "labels", "metrics_addr", "shutdown_timeout", NULL,
};

enum { O_CONFIG = 0x100, O_COLUMNS, O_EXEC, O_LIVE, O_NO_LIVE, O_REPORT };

/* run's own flags: getopt's entries and their --help text. */
static const struct cli_flag run_own[] = {
    { "config", O_CONFIG, required_argument, 1, "    --config FILE",
      "gpulog configuration (YAML, see docs/configuration.md;\ndefault $GPULOG_CONFIG); flags override it" },
    { "format", 'f', required_argument, 1, "-f, --format F", "input format, as for gpulog parse (default auto)" },
    { "columns", O_COLUMNS, required_argument, 1, "    --columns LIST", "column names for header-less CSV" },
    { "output", 'o', required_argument, 1, "-o, --output FILE", "write the NDJSON records to FILE (also with the live view)" },
    { "exec", O_EXEC, required_argument, 1, "    --exec CMD", "run CMD (no shell) and read its standard output" },
    { "live", O_LIVE, no_argument, 1, "    --live", "force the live view; --no-live forces NDJSON on stdout" },
    { "no-live", O_NO_LIVE, no_argument, 1, NULL, NULL },
    { "report", O_REPORT, required_argument, 1, "    --report FILE",
      "also write the HTML report of the input to FILE (gpulog report)" },
    { "quiet", 'q', no_argument, 1, "-q, --quiet", "do not print rejected input lines" },
};

static void run_help(void)
{
    printf("usage: gpulog run [--config FILE] [--format F] [--detectors FILE] [--profile auto|gpu|generic]\n"
           "                  [--tz ZONE] [--year YYYY] [--host NAME] [--columns LIST] [--map COL=FIELD]... [--output FILE] [--live|--no-live]\n"
           "                  [--metrics-addr HOST:PORT] [--shutdown-timeout S] [FILE|-|--exec CMD]\n"
           "\n"
           "Parses FILE (or stdin, or the output of CMD, or the one file/exec source of\n"
           "the config file when none is given), runs the anomaly detectors over\n"
           "the events and writes anomaly records (event.dataset gpu.anomaly) as NDJSON.\n"
           "When stdout is a terminal it shows a live view instead: anomalies as they\n"
           "open and resolve, a status line per GPU and a summary at the end.\n"
           "\n"
           "options (the configuration key in brackets):\n");
    cli_flag_help(run_own, GL_ARRAY_LEN(run_own), 1);
    cli_key_help(run_keys);
    printf(ES_CLI_HELP
           "\n"
           "Signals: SIGTERM/SIGINT/SIGQUIT stop reading, write the records of what was read\n"
           "and exit; SIGHUP reloads the detector configuration (rules that did not\n"
           "change keep their state and open anomalies; changed or removed rules end\n"
           "their open anomalies with an \"end\" record and start over).\n"
           "Exit status: 0 when the input was read to its end or a signal stopped it\n"
           "and every record was written, 1 on an I/O error, when the shutdown\n"
           "deadline passed with records unwritten or when an output refused records\n"
           "for good (dead-lettered), 2 on a usage error.\n");
}

/* What the flags ask for (strings borrowed from argv and the config). */
struct run_req {
    const char *format, *columns, *exec_cmd, *file;
    const char *output, *report;        /* --output FILE, --report FILE (gpulog report: -o) */
    int live_mode, quiet;
    struct es_cli es;                   /* --es URL and its options */
};

/* What run_opt writes into: the mode (its name, report or run) and q. */
struct run_optctx {
    const struct run_mode *m;
    struct run_req *q;
};

/* One of run's own options (into the run_optctx ctx), else STAGE_OPT_PASS.
 * EXIT_OK or EXIT_USAGE (said). */
static int run_opt(void *ctx, int c, const char *arg)
{
    const struct run_mode *m = ((struct run_optctx *)ctx)->m;
    struct run_req *q = ((struct run_optctx *)ctx)->q;
    switch (c) {
    case O_CONFIG: return EXIT_OK;   /* read by config_init_command */
    case 'f': q->format = arg; return EXIT_OK;
    case O_COLUMNS: q->columns = arg; return EXIT_OK;
    case 'o': *(m->report_only ? &q->report : &q->output) = arg; return EXIT_OK;
    case O_REPORT: q->report = arg; return EXIT_OK;
    case O_EXEC: q->exec_cmd = arg; return EXIT_OK;
    case O_LIVE: q->live_mode = 1; return EXIT_OK;
    case O_NO_LIVE: q->live_mode = 0; return EXIT_OK;
    case 'q': q->quiet = 1; return EXIT_OK;
    }
    return STAGE_OPT_PASS;
}

/* No input on the command line: the config file's one source, if it is one
 * run can read. EXIT_OK or EXIT_USAGE (said). */
static int run_config_input(const struct run_mode *m, struct run_req *q, const struct gpulog_config *cfg)
{
    const struct config_source *cs = &cfg->sources.v[0];
    if (cfg->sources.n > 1)
        return cli_usage_error(m->name, "run reads one input, the config file lists %zu sources: give FILE or --exec",
                               cfg->sources.n);
    if (!strcmp(cs->type, "exec")) q->exec_cmd = cs->command;
    else if (!strcmp(cs->type, "file")) q->file = cs->path;
    else if (strcmp(cs->type, "stdin"))
        return cli_usage_error(m->name, "run cannot read a %s source (config file): use collect, or give FILE or --exec",
                               cs->type);
    if (*cs->format && strcmp(cs->format, "auto") && !strcmp(q->format, "auto")) q->format = cs->format;
    return EXIT_OK;
}

/* Parses argv over the configuration into q. EXIT_OK or EXIT_USAGE. */
static int run_flags(const struct run_mode *m, struct run_req *q, struct gpulog_config *cfg, int argc, char **argv)
{
    struct run_optctx oc = { m, q };
    const struct stage_flags f = { m->name, run_own, GL_ARRAY_LEN(run_own), run_keys, &q->es, run_opt, &oc };
    int rc = stage_flags(&f, cfg, argc, argv);
    if (rc != EXIT_OK) return rc;
    if (argc - optind > 1) return cli_usage_error(m->name, "at most one input file");
    if (q->exec_cmd && argc - optind == 1) return cli_usage_error(m->name, "give a FILE or --exec, not both");
    if (argc - optind == 1) q->file = argv[optind];
    else if (!q->exec_cmd && cfg->sources.n && (rc = run_config_input(m, q, cfg)) != EXIT_OK) return rc;
    if (!q->file) q->file = "-";
    return EXIT_OK;
}

/* Loads the profile and builds the engine, outputs, live view and report. EXIT_OK or the exit code (said). */
static int run_setup(const struct run_mode *m, struct run_req *q, struct run_ctx *r, const struct parser_ops *ops,
                     const struct gpulog_config *cfg)
{
    char err[GL_ERRLEN * 4];
    if (run_profile(r, ops, *cfg->detect.config ? cfg->detect.config : NULL, cfg->detect.profile, err, sizeof err) != GL_OK)
        return cli_usage_error(m->name, "%s", err);
    if (q->live_mode < 0) q->live_mode = isatty(1) && !m->report_only ? 1 : 0;
    if (m->report_only && !q->report) q->report = "report.html";
    if (gpumetrics_setup(cfg, 1, err, sizeof err) != GL_OK || metrics_serve(cfg->metrics_addr, err, sizeof err) != GL_OK) {
        gl_say(GL_LOG_ERROR, "gpulog run: metrics: %s\n", err);
        return EXIT_IOERR;
    }
    if (run_outputs(r, q->output, !q->live_mode && !m->report_only, &q->es.conf, err, sizeof err) != GL_OK)
        return cli_usage_error(m->name, "%s", err);
    if (q->live_mode) r->live = live_new(stdout);
    r->eng = engine_new(r->prof, run_emit_record, r);
    if (q->report) r->report = report_new(r->prof);
    return EXIT_OK;
}

/* Reads the input to its end (or a signal) and ends the run: outputs
 * drained, report written, summary said. EXIT_OK or EXIT_IOERR. */
static int run_input(const struct run_mode *m, const struct run_req *q, struct run_ctx *r,
                     const struct gpulog_config *cfg, const struct run_input *in)
{
    struct run_read_opts ro = { .format = q->format, .columns = q->columns, .quiet = q->quiet,
                                .host = cli_host(cfg->host) };
    return run_stream(m, r, in, &ro, q->report, cfg->shutdown_timeout_ms);
}

int cmd_run(int argc, char **argv)
{
    static const struct run_mode plain = { "run", run_help, 0 };
    return run_main(&plain, argc, argv);
}

int run_main(const struct run_mode *m, int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) { m->help(); return EXIT_OK; }
    struct gpulog_config cfg;
    if (config_init_command(&cfg, "run", argc, argv) != GL_OK) return EXIT_USAGE;
    struct run_req q = { .format = "auto", .live_mode = -1 };
    es_cli_init(&q.es);
    struct run_ctx r;
    memset(&r, 0, sizeof r);
    buf_init(&r.json);
    buf_init(&r.key);
    struct run_input in = { .child = -1 };
    char err[GL_ERRLEN * 4];
    const struct parser_ops *ops = NULL;
    int rc = run_flags(m, &q, &cfg, argc, argv);
    if (rc == EXIT_OK && !(ops = parser_find(q.format))) rc = cli_usage_error(m->name, "unknown format '%s'", q.format);
    if (rc == EXIT_OK && config_apply_process(&cfg, err, sizeof err) != GL_OK) rc = cli_usage_error(m->name, "%s", err);
    if (rc == EXIT_OK && cli_apply_map(&cfg, err, sizeof err) != GL_OK) rc = cli_usage_error(m->name, "%s", err);
    if (rc == EXIT_OK) rc = run_setup(m, &q, &r, ops, &cfg);
    if (rc == EXIT_OK) {
        /* before the input is opened (a FIFO blocks until its writer comes) */
        log_info("msg=started input=\"%s\" host=\"%s\" detectors=\"%s\" profile=%s metrics_port=%d",
                 q.exec_cmd ? q.exec_cmd : q.file, cli_host(cfg.host),
                 r.detectors ? r.detectors : "", r.profile_name, metrics_port());
        in.exec_cmd = q.exec_cmd;
        in.file = q.file;
        rc = run_open(m, &in, (int)cfg.year);
    }
    if (rc == EXIT_OK) rc = run_input(m, &q, &r, &cfg, &in);
    run_close(&in);
    metrics_stop();
    run_ctx_free(&r);
    es_cli_free(&q.es);
    config_free(&cfg);
    return rc;
}
