/* run.c - `gpulog run`: parse, detect and print in one process (the
 * embedded default: no Kafka or Elasticsearch needed). */
#include "cli.h"
#include "../parsers/feed.h"
#include "../parsers/kmsg.h"
#include "../ingest/source.h"
#include "../sinks/sink.h"
#include "../sinks/es_cli.h"
#include "../detect/engine.h"
#include "../detect/live.h"
#include "../detect/report.h"
#include "../core/config.h"
#include "../core/metrics.h"
#include "../core/gpumetrics.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void run_help(void)
{
    printf(
        "usage: gpulog run [--config FILE] [--format F] [--detectors FILE] [--profile auto|gpu|generic]\n"
        "                  [--tz ZONE] [--year YYYY] [--host NAME] [--columns LIST] [--output FILE] [--live|--no-live]\n"
        "                  [--metrics-addr HOST:PORT] [--shutdown-timeout S] [FILE|-|--exec CMD]\n"
        "\n"
        "Parses FILE (or stdin, or the output of CMD, or the one file/exec source of\n"
        "the config file when none is given), runs the anomaly detectors over\n"
        "the events and writes anomaly records (event.dataset gpu.anomaly) as NDJSON.\n"
        "When stdout is a terminal it shows a live view instead: anomalies as they\n"
        "open and resolve, a status line per GPU and a summary at the end.\n"
        "\n"
        "options:\n"
        "      --config FILE   gpulog configuration (YAML, see docs/configuration.md;\n"
        "                      default $GPULOG_CONFIG); flags override it\n"
        "  -f, --format F      input format, as for gpulog parse (default auto)\n"
        "  -d, --detectors FILE  detector configuration (JSON or YAML; docs/detectors.md)\n"
        "                      (key detect.config); reloaded on SIGHUP\n"
        "  -p, --profile NAME  built-in profile when no --detectors: auto (default: generic\n"
        "                      when the input carries no GPU fields, else gpu), gpu or generic\n"
        "      --tz ZONE       zone of tool timestamps (default: local zone)\n"
        "      --year YYYY     year of syslog times, which have none (default: FILE's\n"
        "                      modification year, or the read time's; the year before\n"
        "                      if that puts a line more than a day ahead) (key year)\n"
        "  -H, --host NAME     host.name of the events (default: this machine)\n"
        "      --columns LIST  column names for header-less CSV\n"
        "  -o, --output FILE   write the NDJSON records to FILE (also with the live view)\n"
        "      --exec CMD      run CMD (no shell) and read its standard output\n"
        "      --live          force the live view; --no-live forces NDJSON on stdout\n"
        "      --report FILE   also write the HTML report of the input to FILE (gpulog report)\n"
        "  -q, --quiet         do not print rejected input lines\n"
        "      --metrics-addr HOST:PORT  serve /metrics, /healthz and /readyz\n"
        "      --shutdown-timeout S  after SIGTERM/SIGINT, time to write what was\n"
        "                      detected (default 10 s, key shutdown_timeout)\n"
        ES_CLI_HELP
        "\n"
        "Signals: SIGTERM/SIGINT stop reading, write the records of what was read\n"
        "and exit; SIGHUP reloads the detector configuration (rules that did not\n"
        "change keep their state and open anomalies; changed or removed rules end\n"
        "their open anomalies with an \"end\" record and start over).\n"
        "Exit status: 0 when the input was read to its end or a signal stopped it\n"
        "and every record was written, 1 on an I/O error or when the shutdown\n"
        "deadline passed with records unwritten, 2 on a usage error.\n");
}

struct run_opts {
    const char *output;
    const char *report;                 /* --report FILE (gpulog report: -o) */
    int ndjson_stdout;
    struct es_cli es;                   /* --es URL and its options */
};

struct run_ctx {
    struct engine *eng;
    struct sink *sinks[4];
    size_t nsinks;
    struct live *live;
    struct report *report;
    struct buf json, key;
    uint64_t written, settled, failed_writes;
    struct profile *prof;
    const char *detectors, *profile_name;   /* what SIGHUP reloads */
    int auto_pending;                       /* profile auto: chosen at the first metric event */
    int tracking_checked;                   /* said whether the profile tracks any series */
};

static void run_settle(void *ctx, void *token, enum sink_outcome outcome)
{
    (void)token;
    struct run_ctx *r = ctx;
    r->settled++;
    if (outcome == SINK_DEADLETTER) metrics_inc(M_DEADLETTERS);
    else metrics_inc(M_EVENTS_PRODUCED);
}

/* Builds the outputs of `run` from its options: an NDJSON file (--output)
 * and/or NDJSON on stdout. (The Elasticsearch sink joins here.) Returns the
 * number of sinks or -1 with a reason in err. */
static int run_build_sinks(const struct run_opts *o, struct run_ctx *r, char *err, size_t errlen)
{
    r->nsinks = 0;
    if (o->output) {
        struct sink *s = sink_file_new(o->output, run_settle, r, err, errlen);
        if (!s) return -1;
        r->sinks[r->nsinks++] = s;
    }
    if (o->ndjson_stdout) {
        struct sink *s = sink_file_new(NULL, run_settle, r, err, errlen);
        if (!s) return -1;
        r->sinks[r->nsinks++] = s;
    }
    if (o->es.conf.url) {
        struct sink *s = sink_es_new(&o->es.conf, run_settle, r, err, errlen);
        if (!s) return -1;
        r->sinks[r->nsinks++] = s;
    }
    return (int)r->nsinks;
}

static void run_emit_record(void *ctx, const struct event *rec)
{
    struct run_ctx *r = ctx;
    struct sink_doc d;
    sink_doc_of(&d, rec, STREAM_ANOMALIES, NULL, NULL, &r->json, &r->key);
    for (size_t i = 0; i < r->nsinks; i++) {
        int rc;
        while ((rc = sink_write(r->sinks[i], &d)) == GL_AGAIN) sink_poll(r->sinks[i], 100);
        if (rc == GL_ERROR) r->failed_writes++;
        else r->written++;
    }
    if (r->live) live_record(r->live, rec);
    if (r->report) report_record(r->report, rec);
    gpumetrics_record(rec);
}

/* Profile auto: at the first metric event, keeps gpu when the event
 * carries GPU fields (gpu.*), else switches r's engine to the generic
 * profile (it has seen kernel events at most). Logs the choice and why. */
static void run_choose_profile(struct run_ctx *r, const struct event *ev)
{
    if (!ev->kind || strcmp(ev->kind, "metric")) return;
    r->auto_pending = 0;
    const char *gpu_field = NULL;
    for (size_t i = 0; i < ev->nf && !gpu_field; i++)
        if (!strncmp(ev->f[i].key, "gpu.", 4)) gpu_field = ev->f[i].key;
    if (gpu_field) {
        r->profile_name = "gpu";
        log_info("msg=profile profile=gpu reason=\"the input carries GPU fields (%s)\"", gpu_field);
        return;
    }
    char err[GL_ERRLEN];
    struct profile *np = profile_load(NULL, "generic", err, sizeof err);
    if (!np) {
        log_error("msg=\"profile generic failed to load, gpu stays\" error=\"%s\"", err);
        return;
    }
    engine_reload(r->eng, np, NULL);
    profile_free(r->prof);
    r->prof = np;
    r->profile_name = "generic";
    log_info("msg=profile profile=generic reason=\"the input carries no GPU fields (first metric event: %s, %zu fields)\"",
             ev->dataset ? ev->dataset : "-", ev->nf);
}

/* Says once on stderr when the profile tracks no series after the first
 * few hundred events although metric samples came: its rules name none of
 * the input's fields, so nothing is judged. */
static void run_check_tracking(struct run_ctx *r)
{
    const struct engine_stats *es = engine_get_stats(r->eng);
    if (r->tracking_checked || es->events < 300) return;
    r->tracking_checked = 1;
    if (es->series || !es->samples) return;
    fprintf(stderr, "gpulog run: profile %s tracks no series after %llu events (%llu metric samples): none of its rules "
            "names a field of this input; use --profile generic or a --detectors file\n",
            r->detectors ? r->detectors : r->profile_name, (unsigned long long)es->events,
            (unsigned long long)es->samples);
}

static void run_emit_event(void *ctx, const struct event *ev)
{
    struct run_ctx *r = ctx;
    if (r->auto_pending) run_choose_profile(r, ev);
    engine_feed(r->eng, ev);
    run_check_tracking(r);
    gpumetrics_observe(ev);
    if (r->report) report_event(r->report, ev);
    if (r->live) live_tick(r->live, r->eng);
}

static volatile sig_atomic_t run_stop, run_hup;
static void run_on_signal(int sig)
{
    if (sig == SIGHUP) run_hup = 1;
    else run_stop = 1;
}

/* SIGHUP: loads the detector configuration again and hands it to the
 * engine, which keeps the state of unchanged rules. A bad file is refused:
 * the running configuration stays. */
static void run_reload(struct run_ctx *r)
{
    char err[GL_ERRLEN];
    struct profile *np = profile_load(r->detectors, r->profile_name, err, sizeof err);
    if (!np) {
        log_error("msg=\"reload refused: the running detector configuration stays\" file=\"%s\" error=\"%s\"",
                  r->detectors ? r->detectors : "", err);
        metrics_inc_label(M_CONFIG_RELOADS, "error");
        return;
    }
    size_t changed = 0, kept = engine_reload(r->eng, np, &changed);
    profile_free(r->prof);
    r->prof = np;
    log_info("msg=reload file=\"%s\" rules=%zu kept=%zu changed=%zu", r->detectors ? r->detectors : "",
             np->nrules, kept, changed);
    metrics_inc_label(M_CONFIG_RELOADS, "ok");
    metrics_set(M_ANOMALIES_OPEN, (int64_t)engine_get_stats(r->eng)->open);
}

/* The read loop of `run` (feed_fd with signals): reads fd until its end or
 * SIGTERM/SIGINT, reloads on SIGHUP between lines, counts into st and the
 * metrics. Returns GL_OK or GL_ERROR on a read error. */
static int run_read(struct run_ctx *r, struct parser *p, int fd, const struct feed_opts *o, struct feed_stats *st)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0 && !(fl & O_NONBLOCK)) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    struct lineread lr;
    lineread_init(&lr, fd, o->max_line);
    struct feed_cursor c;
    feed_cursor_init(&c, o);
    int rc = GL_OK;
    while (!run_stop) {
        if (run_hup) {
            run_hup = 0;
            run_reload(r);
        }
        const char *line;
        size_t len;
        int64_t off;
        enum lr_status s = lineread_next(&lr, &line, &len, &off);
        if (s == LR_EOF) break;
        if (s == LR_AGAIN) {
            struct pollfd pf = { .fd = fd, .events = POLLIN };
            poll(&pf, 1, 200);
            for (size_t i = 0; i < r->nsinks; i++) sink_poll(r->sinks[i], 0);
            continue;
        }
        if (s == LR_IOERR) {
            fprintf(stderr, "%s: read error: %s\n", o->name, strerror(lr.err));
            rc = GL_ERROR;
            break;
        }
        feed_line(p, &c, o, &lr, s, line, len, off, st);
        metrics_set(M_ANOMALIES_OPEN, (int64_t)engine_get_stats(r->eng)->open);
        if (r->failed_writes) {   /* an output failed for good (said after the drain): reading on would only lose more */
            rc = GL_ERROR;
            break;
        }
    }
    feed_end(p, st);
    lineread_free(&lr);
    if (fl >= 0 && !(fl & O_NONBLOCK)) fcntl(fd, F_SETFL, fl);
    return rc;
}

/* Seeds the ES options from the configuration (elasticsearch.*); the --es
 * flags parsed afterwards override them. */

/* Writes r's report to path ("-": stdout) after the input ended; the
 * caller keeps r. Returns GL_OK or GL_ERROR (reported on stderr). */
static int run_write_report(const struct run_mode *m, struct run_ctx *r, const char *path, const struct report_info *ri)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;
    int rc = f ? report_write(r->report, ri, f) : GL_ERROR;
    if (f && f != stdout && fclose(f) != 0) rc = GL_ERROR;
    if (rc != GL_OK) fprintf(stderr, "gpulog %s: %s: %s\n", m->name, path, strerror(errno));
    else if (f != stdout) fprintf(stderr, "gpulog %s: report written to %s\n", m->name, path);
    return rc;
}

int cmd_run(int argc, char **argv)
{
    static const struct run_mode plain = { "run", run_help, 0 };
    return run_main(&plain, argc, argv);
}

int run_main(const struct run_mode *m, int argc, char **argv)
{
    enum { O_CONFIG = 0x100, O_METRICS, O_SHUTDOWN, O_REPORT, O_YEAR };
    static const struct option opts[] = {
        { "config", required_argument, NULL, O_CONFIG },
        { "format", required_argument, NULL, 'f' },
        { "detectors", required_argument, NULL, 'd' },
        { "profile", required_argument, NULL, 'p' },
        { "tz", required_argument, NULL, 'z' },
        { "year", required_argument, NULL, O_YEAR },
        { "host", required_argument, NULL, 'H' },
        { "columns", required_argument, NULL, 'C' },
        { "output", required_argument, NULL, 'o' },
        { "exec", required_argument, NULL, 'x' },
        { "live", no_argument, NULL, 'L' },
        { "no-live", no_argument, NULL, 'N' },
        { "report", required_argument, NULL, O_REPORT },
        { "quiet", no_argument, NULL, 'q' },
        { "metrics-addr", required_argument, NULL, O_METRICS },
        { "shutdown-timeout", required_argument, NULL, O_SHUTDOWN },
        { "help", no_argument, NULL, 'h' },
        ES_CLI_LONGOPTS,
        { NULL, 0, NULL, 0 },
    };
    if (cli_wants_help(argc, argv)) { m->help(); return EXIT_OK; }
    char err[GL_ERRLEN * 4];
    struct gpulog_config cfg;
    if (config_init_command(&cfg, "run", argc, argv) != GL_OK) return EXIT_USAGE;
    const char *format = "auto", *columns = NULL, *exec_cmd = NULL;
    struct run_opts ro = { 0 };
    es_cli_init(&ro.es);
    int live_mode = -1, quiet = 0, c, rc = GL_OK, exit_rc = EXIT_OK;
    struct profile *prof = NULL;
    struct parser *p = NULL;
    struct run_ctx r;
    memset(&r, 0, sizeof r);
    buf_init(&r.json);
    buf_init(&r.key);
    if (es_cli_from_config(&ro.es, &cfg, err, sizeof err) != GL_OK) {
        exit_rc = cli_usage_error(m->name, "%s", err);
        goto out;
    }
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":f:d:p:H:o:qh", opts, NULL)) != -1) {
        const char *key = NULL;
        switch (c) {
        case O_CONFIG: break;   /* read above */
        case 'f': format = optarg; break;
        case 'd': key = "detect.config"; break;
        case 'p': key = "detect.profile"; break;
        case 'z': key = "tz"; break;
        case O_YEAR: key = "year"; break;
        case 'H': key = "host"; break;
        case O_METRICS: key = "metrics_addr"; break;
        case O_SHUTDOWN: key = "shutdown_timeout"; break;
        case 'C': columns = optarg; break;
        case 'o': *(m->report_only ? &ro.report : &ro.output) = optarg; break;
        case O_REPORT: ro.report = optarg; break;
        case 'x': exec_cmd = optarg; break;
        case 'L': live_mode = 1; break;
        case 'N': live_mode = 0; break;
        case 'q': quiet = 1; break;
        case ':': exit_rc = cli_usage_error(m->name, "option %s needs a value", argv[optind - 1]); goto out;
        default: {
            int er = es_cli_opt(&ro.es, c, optarg, err, sizeof err);
            if (er > 0) break;
            if (er < 0) exit_rc = cli_usage_error(m->name, "%s", err);
            else exit_rc = cli_usage_error(m->name, "unknown option %s", argv[optind - 1]);
            goto out;
        }
        }
        if (key && config_set(&cfg, key, optarg, err, sizeof err) != GL_OK) {
            exit_rc = cli_usage_error(m->name, "%s", err);
            goto out;
        }
    }
    if (es_cli_finish(&ro.es, err, sizeof err) != GL_OK) { exit_rc = cli_usage_error(m->name, "%s", err); goto out; }
    if (!ro.es.conf.password && *cfg.es.password && ro.es.conf.user) ro.es.conf.password = cfg.es.password;
    if (!ro.es.conf.api_key && *cfg.es.api_key) ro.es.conf.api_key = cfg.es.api_key;
    if (argc - optind > 1) { exit_rc = cli_usage_error(m->name, "at most one input file"); goto out; }
    if (exec_cmd && argc - optind == 1) { exit_rc = cli_usage_error(m->name, "give a FILE or --exec, not both"); goto out; }
    const char *cfg_file = NULL;   /* the input named by the config file's sources */
    if (!exec_cmd && argc - optind == 0 && cfg.sources.n) {
        /* no input on the command line: the config's one source, if it is one run can read */
        const struct config_source *cs = &cfg.sources.v[0];
        if (cfg.sources.n > 1) {
            exit_rc = cli_usage_error(m->name, "run reads one input, the config file lists %zu sources: give FILE or --exec",
                                      cfg.sources.n);
            goto out;
        }
        if (!strcmp(cs->type, "exec")) exec_cmd = cs->command;
        else if (!strcmp(cs->type, "file")) cfg_file = cs->path;
        else if (strcmp(cs->type, "stdin")) {
            exit_rc = cli_usage_error(m->name, "run cannot read a %s source (config file): use collect, or give FILE or --exec",
                                      cs->type);
            goto out;
        }
        if (*cs->format && strcmp(cs->format, "auto") && !strcmp(format, "auto")) format = cs->format;
    }
    const struct parser_ops *ops = parser_find(format);
    if (!ops) { exit_rc = cli_usage_error(m->name, "unknown format '%s'", format); goto out; }
    if (config_apply_process(&cfg, err, sizeof err) != GL_OK) { exit_rc = cli_usage_error(m->name, "%s", err); goto out; }
    r.detectors = *cfg.detect.config ? cfg.detect.config : NULL;
    r.profile_name = cfg.detect.profile;
    r.auto_pending = !r.detectors && !strcmp(r.profile_name, "auto");
    if (r.auto_pending && strcmp(ops->name, "auto")) {
        /* the format says it: generic CSV carries no GPU fields, the others do */
        r.auto_pending = 0;
        r.profile_name = strcmp(ops->name, "csv") ? "gpu" : "generic";
        log_info("msg=profile profile=%s reason=\"--format %s\"", r.profile_name, ops->name);
    }
    prof = profile_load(r.detectors, r.profile_name, err, sizeof err);
    if (!prof) { exit_rc = cli_usage_error(m->name, "%s", err); goto out; }
    r.prof = prof;
    if (live_mode < 0) live_mode = isatty(1) && !m->report_only ? 1 : 0;
    ro.ndjson_stdout = !live_mode && !m->report_only;
    if (m->report_only && !ro.report) ro.report = "report.html";
    if (gpumetrics_setup(&cfg, 1, err, sizeof err) != GL_OK || metrics_serve(cfg.metrics_addr, err, sizeof err) != GL_OK) {
        fprintf(stderr, "gpulog run: metrics: %s\n", err);
        exit_rc = EXIT_IOERR;
        goto out;
    }
    if (run_build_sinks(&ro, &r, err, sizeof err) < 0) { exit_rc = cli_usage_error(m->name, "%s", err); goto out; }
    if (live_mode) r.live = live_new(stdout);
    r.eng = engine_new(prof, run_emit_record, &r);
    if (ro.report) r.report = report_new(prof);

    const char *file = optind < argc ? argv[optind] : cfg_file ? cfg_file : "-";
    int fd = 0, is_stdin = !exec_cmd && !strcmp(file, "-");
    /* before the input is opened (a FIFO blocks until its writer comes) */
    log_info("msg=started input=\"%s\" host=\"%s\" detectors=\"%s\" profile=%s metrics_port=%d",
             exec_cmd ? exec_cmd : file, *cfg.host ? cfg.host : cli_hostname(), r.detectors ? r.detectors : "",
             r.profile_name, metrics_port());
    pid_t child = -1;
    char **cargv = NULL;
    if (exec_cmd) {
        cargv = argv_split(exec_cmd);
        if (!cargv || !cargv[0]) {
            argv_free(cargv);
            exit_rc = cli_usage_error(m->name, "cannot split --exec command");
            goto out;
        }
        child = exec_spawn(cargv, &fd, err, sizeof err);
        if (child < 0) {
            fprintf(stderr, "gpulog run: %s\n", err);
            argv_free(cargv);
            exit_rc = EXIT_IOERR;
            goto out;
        }
    } else if (!is_stdin) {
        fd = open(file, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            fprintf(stderr, "gpulog %s: %s: %s\n", m->name, file, strerror(errno));
            exit_rc = EXIT_IOERR;
            goto out;
        }
    }
    struct stat fst;   /* a file's syslog times take its modification year, as in parse */
    int64_t ref = !exec_cmd && !is_stdin && fstat(fd, &fst) == 0 && S_ISREG(fst.st_mode)
                  ? (int64_t)fst.st_mtim.tv_sec * 1000 + fst.st_mtim.tv_nsec / 1000000 : 0;
    kmsg_syslog_year((int)cfg.year, feed_read_time() ? 0 : ref);
    cli_catch_signals(run_on_signal);
    p = parser_new(ops, run_emit_event, &r);
    p->opt_columns = columns;
    struct feed_opts fo = {
        .name = exec_cmd ? exec_cmd : is_stdin ? "<stdin>" : file,
        .path = exec_cmd || is_stdin ? NULL : file,
        .source = exec_cmd ? exec_cmd : is_stdin ? "-" : file,
        .host = *cfg.host ? cfg.host : cli_hostname(),
        .quiet = quiet,
        .max_reports = 20,
        .metrics = 1,
    };
    metrics_set_ready(1);
    struct feed_stats st = { 0 };
    rc = run_read(&r, p, fd, &fo, &st);
    int stopped = run_stop != 0;
    metrics_set_ready(0);
    engine_flush(r.eng);
    metrics_set(M_ANOMALIES_OPEN, (int64_t)engine_get_stats(r.eng)->open);
    int64_t deadline = gl_now_ms() + cfg.shutdown_timeout_ms;
    long left = 0;
    for (size_t i = 0; i < r.nsinks; i++) {
        int64_t ms = deadline - gl_now_ms();
        left += sink_drain(r.sinks[i], ms > 0 ? (int)ms : 0);
    }
    int out_failed = 0;
    for (size_t i = 0; i < r.nsinks; i++)
        if (r.sinks[i]->errstr[0]) {
            fprintf(stderr, "gpulog run: output failed: %s\n", r.sinks[i]->errstr);
            out_failed = 1;
        }
    if (left > 0) {
        if (out_failed) fprintf(stderr, "gpulog run: %ld records not written\n", left);
        else fprintf(stderr, "gpulog run: %ld records not written within the shutdown deadline (%lld ms)\n", left,
                     (long long)cfg.shutdown_timeout_ms);
        rc = GL_ERROR;
    }
    if (out_failed) rc = GL_ERROR;
    const struct engine_stats *es = engine_get_stats(r.eng);
    if (r.live) live_summary(r.live, r.eng);
    struct report_info ri = { fo.name, r.detectors ? r.detectors : r.profile_name, st.lines, st.rejected };
    if (r.report && run_write_report(m, &r, ro.report, &ri) != GL_OK) rc = GL_ERROR;
    fprintf(stderr,
            "gpulog %s: %s: %llu lines, %llu events, %llu rejected; %llu samples, %llu GPUs, %llu series, "
            "%llu out-of-order dropped, %llu duplicates, %llu gaps; anomalies: %llu started, %llu changed, "
            "%llu ended, %llu still open%s\n",
            m->name, fo.name, (unsigned long long)st.lines, (unsigned long long)st.events,
            (unsigned long long)st.rejected, (unsigned long long)es->samples, (unsigned long long)es->gpus,
            (unsigned long long)es->series, (unsigned long long)es->out_of_order,
            (unsigned long long)es->duplicates, (unsigned long long)es->gaps, (unsigned long long)es->starts,
            (unsigned long long)es->changes, (unsigned long long)es->ends, (unsigned long long)es->open,
            stopped ? " (stopped by a signal)" : "");
    if (r.failed_writes) {
        fprintf(stderr, "gpulog run: %llu records could not be written\n", (unsigned long long)r.failed_writes);
        rc = GL_ERROR;
    }
    if (child > 0) {
        kill(-child, SIGTERM);
        int wst;
        waitpid(child, &wst, 0);
        argv_free(cargv);
    }
    if (!is_stdin) close(fd);
    exit_rc = rc == GL_OK ? EXIT_OK : EXIT_IOERR;
out:
    metrics_stop();
    parser_free(p);
    for (size_t i = 0; i < r.nsinks; i++) sink_free(r.sinks[i]);
    engine_free(r.eng);
    live_free(r.live);
    report_free(r.report);
    profile_free(r.prof ? r.prof : prof);
    buf_free(&r.json);
    buf_free(&r.key);
    es_cli_free(&ro.es);
    config_free(&cfg);
    return exit_rc;
}
