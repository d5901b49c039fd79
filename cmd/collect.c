/*
 * collect.c - `gpulog collect`: the node sidecar. Reads the flags and the
 * configuration, opens the sink (Kafka, or NDJSON) and the sources, and
 * runs them through the pipeline (ingest/pipeline.h), which delivers every
 * event and moves each source's checkpoint only on the sink's settles.
 */
#include "collect.h"
#include "../core/gpumetrics.h"
#include "../core/metrics.h"
#include "../parsers/feed.h"
#include "../parsers/kmsg.h"
#include "../parsers/parser.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

/* Sorts the configuration's sources by kind, each with its format. */
static int sort_sources(struct collector *c, const struct gpulog_config *cfg)
{
    if (!parser_find(c->format)) return cli_usage_error("collect", "unknown format '%s'", c->format);
    c->fs = file_scan_new();
    c->plan = xcalloc(cfg->sources.n + 1, sizeof *c->plan);
    const char *kmsg = NULL, *stdin_fmt = NULL;
    for (size_t i = 0; i < cfg->sources.n; i++) {
        const struct config_source *cs = &cfg->sources.v[i];
        const char *fmt = *cs->format && strcmp(cs->format, "auto") ? cs->format : c->format;
        char **words = !strcmp(cs->type, "exec") ? argv_split(cs->command) : NULL;
        if (!parser_find(fmt)) return cli_usage_error("collect", "unknown format '%s'", fmt);
        if (!strcmp(cs->type, "exec") && !words)
            return cli_usage_error("collect", "--exec: empty command or unbalanced quote: %s", cs->command);
        argv_free(words);
        if (words) c->plan[c->nplan++] = (struct planned){ "exec", cs->command, fmt };
        else if (!strcmp(cs->type, "file")) file_scan_add(c->fs, cs->path, fmt);
        else if (!strcmp(cs->type, "kmsg")) kmsg = *cs->path ? cs->path : "/dev/kmsg";
        else if (!strcmp(cs->type, "stdin")) stdin_fmt = c->format;
    }
    if (stdin_fmt) c->plan[c->nplan++] = (struct planned){ "stdin", NULL, stdin_fmt };
    if (kmsg) c->plan[c->nplan++] = (struct planned){ "kmsg", kmsg, c->format };
    if (!c->nplan && !file_scan_count(c->fs))
        return cli_usage_error("collect", "no source: give --exec, --file, --kmsg or - (or sources in the config file)");
    return EXIT_OK;
}

/* The state dir: systemd's StateDirectory= when the default is not
 * overridden, the first of a list. */
static void state_dir(struct collector *c, const struct gpulog_config *cfg)
{
    const char *d = cfg->state_dir;
    const struct config_key *k = config_key_find("state_dir");
    const char *sd = getenv("STATE_DIRECTORY");
    if (k && !strcmp(d, k->def) && sd && *sd) d = sd;
    if (!*d) d = "/var/lib/gpulog";
    if (strchr(d, ':')) d = c->state_dir_own = xstrndup(d, strcspn(d, ":"));
    c->po.state_dir = d;
}

/* Checks the settings and copies them into the pipeline's options. EXIT_OK or a usage error. */
static int settings(struct collector *c, struct gpulog_config *cfg)
{
    char err[GL_ERRLEN * 4];
    const __typeof__(cfg->collect) *cs = &cfg->collect;
    if (config_apply_process(cfg, err, sizeof err) != GL_OK) return cli_usage_error("collect", "%s", err);
    if (cli_apply_map(cfg, err, sizeof err) != GL_OK) return cli_usage_error("collect", "%s", err);
    kmsg_syslog_year((int)cfg->year, 0);   /* live sources: inferred against the read time */
    if (cs->spool_max < (1 << 20)) return cli_usage_error("collect", "--spool-max wants bytes (at least 1048576)");
    if (cs->rotate_max_generations < 1 || cs->rotate_max_generations > 100000)
        return cli_usage_error("collect", "collect.rotate_max_generations wants 1 to 100000, got %lld",
                               (long long)cs->rotate_max_generations);
    if (cs->rotate_max_age_ms < 1000) return cli_usage_error("collect", "collect.rotate_max_age wants at least 1s");
    c->po.spool_max = cs->spool_max;
    c->po.shutdown_ms = cfg->shutdown_timeout_ms;
    c->po.stale_ms = cs->stale_after_ms;
    c->po.tail.max_gens = (int)cs->rotate_max_generations;
    c->po.tail.max_age_ms = cs->rotate_max_age_ms;
    c->po.stats_ms = cs->stats_interval_ms;
    c->po.host = cli_host(cfg->host);
    c->po.fixed_now = feed_read_time();
    c->po.max_reports = 100;
    c->po.metrics = 1;
    c->brokers = *cfg->kafka.brokers ? cfg->kafka.brokers : NULL;
    /* flags that would be ignored: say so instead of doing something else */
    if (!c->brokers && c->kafka_flag)
        return cli_usage_error("collect", "%s%s applies to Kafka, but no brokers are set (--brokers, kafka.brokers, GPULOG_KAFKA_BROKERS)",
                               c->kafka_flag->flag.name ? "--" : "-X", c->kafka_flag->flag.name ? c->kafka_flag->flag.name : "");
    if (c->brokers && c->output)
        return cli_usage_error("collect", "--output writes NDJSON instead of Kafka; with brokers set (%s) it would be ignored", c->brokers);
    state_dir(c, cfg);
    return EXIT_OK;
}

/* Creates the state dir, the metrics endpoint, the pipeline and its sink. EXIT_OK or EXIT_IOERR. */
static int open_outputs(struct collector *c, const struct gpulog_config *cfg)
{
    char err[GL_ERRLEN * 4] = "";
    if (mkdir(c->po.state_dir, 0755) != 0 && errno != EEXIST) {
        gl_say(GL_LOG_ERROR, "gpulog collect: state dir %s: %s\n", c->po.state_dir, strerror(errno));
        return EXIT_IOERR;
    }
    if (gpumetrics_setup(cfg, 1, err, sizeof err) != GL_OK || metrics_serve(cfg->metrics_addr, err, sizeof err) != GL_OK) {
        gl_say(GL_LOG_ERROR, "gpulog collect: metrics: %s\n", err);
        return EXIT_IOERR;
    }
    c->pl = pipeline_new(&c->po);
    buf_printf(&c->dl, "%s/deadletter.ndjson", c->po.state_dir);
    struct sink *sk;
    if (c->brokers) {
        const char *t0 = cfg->kafka.topic_metrics, *t1 = cfg->kafka.topic_events;
        struct kafka_conf kc = {
            .brokers = c->brokers, .topic = { t0 ? t0 : "gpu.metrics", t1 ? t1 : "gpu.events", "gpu.anomalies" },
            .props = (const char *const *)cfg->kafka.properties.kv, .nprops = cfg->kafka.properties.n,
            .deadletter_path = c->dl.p, .give_up = c->po.once,
        };
        sk = sink_kafka_new(&kc, pipeline_settle, c->pl, err, sizeof err);
    } else {
        sk = sink_file_new(c->output, pipeline_settle, c->pl, err, sizeof err);
    }
    if (!sk) {
        gl_say(GL_LOG_ERROR, "gpulog collect: %s\n", err);
        return EXIT_IOERR;
    }
    pipeline_add_sink(c->pl, sk);
    return EXIT_OK;
}

/* The soft descriptor limit raised to the hard one (systemd's default soft
 * limit is 1024): thousands of followed files each want one while read. */
static void raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
    rlim_t was = rl.rlim_cur;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) rl.rlim_cur = was;
    }
    tail_set_fd_budget(0);
    log_info("msg=\"file descriptors\" rlimit_nofile=%llu raised_from=%llu followed_files_budget=%zu",
             (unsigned long long)rl.rlim_cur, (unsigned long long)was, tail_fd_budget());
}

/* Opens every source (commands with their own formats, stdin, kmsg, files). */
static int open_sources(struct collector *c)
{
    char err[GL_ERRLEN];
    if (file_scan_count(c->fs)) raise_nofile();
    for (size_t i = 0; i < c->nplan; i++)
        if (!pipeline_open(c->pl, c->plan[i].kind, c->plan[i].arg, c->plan[i].format, err, sizeof err)) {
            gl_say(GL_LOG_ERROR, "gpulog collect: %s\n", err);
            return EXIT_IOERR;
        }
    file_scan_run(c->fs, c->pl);
    return EXIT_OK;
}

/* The pipeline's hooks: globs re-scanned every second (not --once) and on SIGHUP. */
static void on_tick(void *ctx)
{
    struct collector *c = ctx;
    if (!c->po.once) file_scan_run(c->fs, c->pl);
}

static void on_reload(void *ctx)
{
    struct collector *c = ctx;
    file_scan_rescan(c->fs, c->pl);
    log_info("msg=reload what=\"file sources re-scanned (collect has no detectors; other settings need a restart)\" files=%zu",
             pipeline_nsources(c->pl));
}

/* Runs until the end (--once) or a signal, delivers, checkpoints; the exit status. */
static int run(struct collector *c)
{
    log_info("msg=started host=\"%s\" output=\"%s\" brokers=\"%s\" sources=%zu state_dir=\"%s\" "
             "shutdown_timeout_ms=%" PRId64 " metrics_port=%d",
             c->po.host, c->brokers ? "kafka" : c->output ? c->output : "stdout", c->brokers ? c->brokers : "",
             pipeline_nsources(c->pl), c->po.state_dir, c->po.shutdown_ms, metrics_port());
    pipeline_run(c->pl);
    long left = pipeline_finish(c->pl);
    if (c->po.stats_ms) pipeline_log_stats(c->pl, left);
    const struct pipeline_stats *st = pipeline_stats(c->pl);
    int failed = st->source_failed || file_scan_failed(c->fs), rc = EXIT_OK;
    if (left) log_error("msg=\"shutdown deadline passed with unacknowledged events\" unacked=%ld deadline_ms=%" PRId64,
                        left, c->po.shutdown_ms);
    if (left || st->fatal || (c->po.once && (st->deadletter || failed || st->losses))) rc = EXIT_IOERR;
    if (c->po.once && st->ckpt_failures) {
        log_error("msg=\"--once: checkpoints could not be written; the next run resends from the last one\" "
                  "failures=%" PRIu64 " state_dir=\"%s\"", st->ckpt_failures, c->po.state_dir);
        rc = EXIT_IOERR;
    }
    if (st->deadletter) log_error("msg=\"documents were dead-lettered\" count=%" PRIu64 " file=\"%s\"", st->deadletter, c->dl.p);
    return rc;
}

int cmd_collect(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) { collect_help(); return EXIT_OK; }
    struct gpulog_config cfg;
    if (config_init_command(&cfg, "collect", argc, argv) != GL_OK) return EXIT_USAGE;
    struct collector C = { .format = "auto" }, *c = &C;
    c->po.ctx = c;
    c->po.tick = on_tick;
    c->po.reload = on_reload;
    buf_init(&c->dl);
    int rc = collect_read_flags(c, &cfg, argc, argv);
    if (rc == EXIT_OK) rc = sort_sources(c, &cfg);
    if (rc == EXIT_OK) rc = settings(c, &cfg);
    if (rc == EXIT_OK) {
        cli_catch_signals(pipeline_on_signal);
        signal(SIGPIPE, SIG_IGN);
        rc = open_outputs(c, &cfg);
    }
    if (rc == EXIT_OK) rc = open_sources(c);
    if (rc == EXIT_OK) rc = run(c);
    pipeline_free(c->pl);
    metrics_stop();
    file_scan_free(c->fs);
    buf_free(&c->dl);
    free(c->state_dir_own);
    free(c->plan);
    config_free(&cfg);
    return rc;
}
