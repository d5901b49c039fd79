/* fleet.c - `gpulog fleet`: fleet incidents. A member of a Kafka consumer
 * group that reads the records `detect` writes to its anomalies topic and
 * correlates the GPU incidents across hosts (detect/fleet.h): the same
 * rule or Xid code starting on many GPUs of many hosts within a short
 * time, grouped by a topology label, becomes one fleet incident, written
 * to a file, stdout, a topic or Elasticsearch next to the GPU incidents.
 *
 * This file parses the flags and makes the correlator the stage of
 * detect's loop (cmd/detect_loop.c: the consumer source, the outputs,
 * commits of the settled prefix, the state topic, shutdown).
 */
#include "cli.h"
#include "detect_loop.h"
#include "../detect/fleet.h"
#include "../sinks/es_cli.h"
#include "../core/config.h"
#include "../core/metrics.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The keys of the configuration table fleet offers as flags. */
static const char *const fleet_keys[] = {
    "kafka.brokers", "kafka.topics.anomalies", "kafka.topics.fleet", "kafka.topics.state", "kafka.properties",
    "fleet.window", "fleet.min_hosts", "fleet.min_gpus", "fleet.group_by", "fleet.hold", "metrics_addr",
    "shutdown_timeout", NULL,
};

static const struct cli_flag fleet_own[] = {
    CONSUMER_FLAGS,
    { "group", 'g', required_argument, 1, "-g, --group G",
      "consumer group (default gpulog-fleet) [fleet.group];\nrun one member: it correlates the partitions it reads" },
};

static void fleet_help(void)
{
    printf("usage: gpulog fleet [--config FILE] [--brokers LIST] [--group G] [--anomalies-topic T]\n"
           "                    [--output FILE | --fleet-topic T | --es URL] [-X key=value]... [--once]\n"
           "                    [--window D] [--min-hosts N] [--min-gpus N] [--group-by LABELS] [--hold D]\n"
           "                    [--state-topic T [--snapshot-interval S]] [--metrics-addr HOST:PORT]\n"
           "\n"
           "Reads the records `gpulog detect` writes to its anomalies topic (T, default\n"
           "gpu.anomalies) as a member of consumer group G and correlates the GPU\n"
           "incidents across hosts: the same rule, or the same Xid code, starting on at\n"
           "least --min-gpus GPUs of --min-hosts hosts within --window, grouped by the\n"
           "first topology label the incidents carry (--group-by: labels.rack, ...) or\n"
           "by time alone, is one fleet incident (event.dataset gpu.fleet_incident,\n"
           "rule.id gpu.fleet; start, change and end records naming its hosts and GPUs;\n"
           "docs/operations.md). Offsets are committed only after the records made\n"
           "from the messages up to them were written and acknowledged.\n"
           "\n"
           "options (the configuration key in brackets):\n");
    cli_flag_help(fleet_own, GL_ARRAY_LEN(fleet_own), 1);
    cli_key_help(fleet_keys);
    printf("With --es, the fleet incident records go to logs-gpu.anomaly-NS, next to the\n"
           "GPU incidents.\n"
           ES_CLI_HELP
           "\n"
           "Fleet incident ids are a hash of the signature, group and start, so a\n"
           "restart that reads records again writes the same ids (Elasticsearch keeps\n"
           "one document per id); with --state-topic the members of each partition are\n"
           "saved and restored, so a restart during a fault goes on with its fleet\n"
           "incident instead of starting over.\n"
           "Signals: SIGTERM/SIGINT/SIGQUIT stop consuming, settle the outputs, commit and\n"
           "exit within shutdown_timeout.\n"
           "Exit status: 0 on a clean stop or --once done, 1 on a Kafka or output error or\n"
           "records unsettled at the deadline, 2 on a usage error.\n");
}

struct fleet_opts {
    struct gpulog_config *cfg;
    struct consumer_opts c;
    struct ksrc_opts kafka;
    const char *fleet_topic;             /* --fleet-topic given: cfg's kafka.topics.fleet */
    struct fleet_conf conf;
    struct es_cli es;
};

/* One of fleet's own options (into o), else STAGE_OPT_PASS. EXIT_OK or
 * EXIT_USAGE (said). --group G is fleet.group (the key table gives -g to
 * kafka.group, detect's); --fleet-topic T also says that the records go
 * to the topic. */
static int fleet_opt(void *ctx, int c, const char *arg)
{
    struct fleet_opts *o = ctx;
    char err[GL_ERRLEN];
    if (c == 'g') {
        if (config_set(o->cfg, "fleet.group", arg, err, sizeof err) != GL_OK) return cli_usage_error("fleet", "%s", err);
        return EXIT_OK;
    }
    if (c == config_flag_val(config_key_find("kafka.topics.fleet"))) o->fleet_topic = arg;
    return consumer_opt("fleet", &o->c, c, arg);
}

static int fleet_flags(struct fleet_opts *o, struct gpulog_config *cfg, int argc, char **argv)
{
    const struct stage_flags f = { "fleet", fleet_own, GL_ARRAY_LEN(fleet_own), fleet_keys, &o->es, fleet_opt, o };
    o->cfg = cfg;
    int rc = stage_flags(&f, cfg, argc, argv);
    if (rc != EXIT_OK) return rc;
    char err[GL_ERRLEN * 4];
    if (optind < argc) return cli_usage_error("fleet", "unexpected argument '%s'", argv[optind]);
    if (config_apply_process(cfg, err, sizeof err) != GL_OK) return cli_usage_error("fleet", "%s", err);
    if ((rc = consumer_settings("fleet", cfg, cfg->fleet.group, &o->c, &o->kafka)) != EXIT_OK) return rc;
    if (o->fleet_topic) o->fleet_topic = cfg->kafka.topic_fleet;
    fleet_conf_defaults(&o->conf);
    o->conf.window_ms = cfg->fleet.window_ms;
    o->conf.min_hosts = cfg->fleet.min_hosts;
    o->conf.min_gpus = cfg->fleet.min_gpus;
    o->conf.group_by = cfg->fleet.group_by;
    o->conf.change_ms = cfg->fleet.change_ms;
    o->conf.hold_ms = cfg->fleet.hold_ms;
    o->conf.expire_ms = cfg->fleet.expire_ms;
    o->conf.max_keys = cfg->fleet.max_keys;
    o->conf.max_members = cfg->fleet.max_members;
    if (fleet_conf_check(&o->conf, err, sizeof err) != GL_OK) return cli_usage_error("fleet", "%s", err);
    return EXIT_OK;
}

/* ---- the correlator as the stage of detect's loop ----------------------- */

static void fl_emit(void *ctx, const struct event *rec) { detect_emit_record(ctx, rec); }

static void fl_feed(struct dctx *d, const struct event *ev, int tag) { fleet_feed(d->stage, ev, tag); }

static void fl_drop(struct dctx *d, int tag) { fleet_drop_tag(d->stage, tag); }

static void fl_end(struct dctx *d) { fleet_flush(d->stage); }

static void fl_tick(struct dctx *d, int final)
{
    if (!final) fleet_tick(d->stage, gl_now_ms());
}

static int fl_save(struct dctx *d, int tag, int64_t offset, struct buf *out, char *err, size_t errlen)
{
    return fleet_save(d->stage, tag, offset, out, err, errlen);
}

static int fl_restore(struct dctx *d, int tag, const void *snap, size_t len, int64_t *offset, char *err, size_t errlen)
{
    return fleet_load(d->stage, tag, snap, len, offset, err, errlen);
}

static void fl_summary(const struct dctx *d, FILE *f)
{
    const struct fleet_stats *st = fleet_get_stats(d->stage);
    fprintf(f, ", %llu GPU incidents; fleet incidents: %llu started, %llu changed, %llu ended (%llu open, %llu GPU "
               "incidents held, about %llu KiB); records: %llu",
            (unsigned long long)st->members, (unsigned long long)st->starts, (unsigned long long)st->changes,
            (unsigned long long)st->ends, (unsigned long long)st->open, (unsigned long long)st->tracked,
            (unsigned long long)(st->bytes >> 10), (unsigned long long)d->records);
}

static const struct dstage fleet_stage = {
    .name = "fleet", .feed = fl_feed, .drop = fl_drop, .flush = fl_end, .tick = fl_tick,
    .save = fl_save, .restore = fl_restore, .summary = fl_summary,
};

static int fleet_setup(struct dctx *d, struct fleet_opts *o, const struct gpulog_config *cfg)
{
    char err[GL_ERRLEN * 4];
    if (metrics_serve(cfg->metrics_addr, err, sizeof err) != GL_OK) {
        gl_say(GL_LOG_ERROR, "gpulog fleet: metrics: %s\n", err);
        return EXIT_IOERR;
    }
    d->ops = &fleet_stage;
    if (!(d->stage = fleet_new(&o->conf, fl_emit, d, err, sizeof err))) return cli_usage_error("fleet", "%s", err);
    int usage = 0;
    struct detect_parts parts = {
        .topics = cfg->kafka.topic_anomalies, .output = o->c.output, .anomalies_topic = o->fleet_topic,
        .es = &o->es.conf, .shutdown_ms = cfg->shutdown_timeout_ms, .usage = &usage, .kafka = o->kafka,
    };
    if (detect_build(d, &parts, err, sizeof err) == GL_OK) {
        log_info("msg=started brokers=\"%s\" group=\"%s\" topics=\"%s\" window_ms=%lld min_hosts=%lld min_gpus=%lld "
                 "group_by=\"%s\" metrics_port=%d",
                 o->kafka.brokers, o->kafka.group, cfg->kafka.topic_anomalies, (long long)o->conf.window_ms,
                 (long long)o->conf.min_hosts, (long long)o->conf.min_gpus, cfg->fleet.group_by, metrics_port());
        return EXIT_OK;
    }
    gl_say(GL_LOG_ERROR, "gpulog fleet: %s\n", err);
    return usage ? EXIT_USAGE : EXIT_IOERR;
}

int cmd_fleet(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) { fleet_help(); return EXIT_OK; }
    struct gpulog_config cfg;
    if (config_init_command(&cfg, "fleet", argc, argv) != GL_OK) return EXIT_USAGE;
    struct fleet_opts o;
    memset(&o, 0, sizeof o);
    es_cli_init(&o.es);
    struct dctx d;
    memset(&d, 0, sizeof d);
    int rc = fleet_flags(&o, &cfg, argc, argv);
    if (rc == EXIT_OK) rc = fleet_setup(&d, &o, &cfg);
    if (rc == EXIT_OK) rc = detect_run(&d);
    metrics_stop();
    detect_free(&d);
    fleet_free(d.stage);
    es_cli_free(&o.es);
    free(o.c.props);
    config_free(&cfg);
    return rc;
}
