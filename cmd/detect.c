/* detect.c - `gpulog detect`: the stream processor. A member of a Kafka
 * consumer group that runs the detectors over the events of its partitions
 * and writes anomaly records to a file, stdout or an anomalies topic.
 *
 * This file parses the flags; cmd/detect_loop.c builds the parts on the
 * one loop (ingest/pipeline.h): the Kafka consumer source (kind "kafka":
 * ingest/src_kafka.c over ingest/kafka_src.c, offsets, commits of the
 * settled prefix, the rebalance), the engine as the stage, the outputs.
 */
#include "cli.h"
#include "detect_loop.h"
#include "../ingest/kafka_src.h"
#include "../sinks/es_cli.h"
#include "../detect/engine.h"
#include "../core/config.h"
#include "../core/metrics.h"
#include "../core/gpumetrics.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The keys of the configuration table detect offers as flags (their
 * flag, text and default come from the key's row, core/config.c). */
static const char *const detect_keys[] = {
    "kafka.brokers", "kafka.group", "detect.config", "detect.profile", "kafka.topics.anomalies",
    "kafka.properties", "kafka.topics.state", "metrics_addr", "shutdown_timeout", NULL,
};

/* detect's own flags: getopt's entries and their --help text. */
static const struct cli_flag detect_own[] = {
    CONSUMER_FLAGS,
    { "topics", 't', required_argument, 1, "-t, --topics LIST",
      "topics to consume (default: kafka.topics.metrics and\nkafka.topics.events, gpu.metrics,gpu.events)" },
};

static void detect_help(void)
{
    printf("usage: gpulog detect [--config FILE] [--brokers LIST] [--group G] [--topics gpu.metrics,gpu.events]\n"
           "                     [--detectors FILE] [--profile gpu|generic]\n"
           "                     [--output FILE | --anomalies-topic T] [-X key=value]... [--once]\n"
           "                     [--metrics-addr HOST:PORT] [--shutdown-timeout S]\n"
           "                     [--state-topic T [--snapshot-interval S]]\n"
           "\n"
           "Consumes schema-v1 events from Kafka as a member of consumer group G, runs\n"
           "the anomaly detectors and writes anomaly records (NDJSON to FILE or stdout,\n"
           "or to topic T). Offsets are committed only after the records produced from\n"
           "the messages up to them were written and acknowledged.\n"
           "\n"
           "options (the configuration key in brackets; -X also applies to the anomalies\n"
           "topic's producer; the brokers default to $KAFKA_BROKERS):\n");
    cli_flag_help(detect_own, GL_ARRAY_LEN(detect_own), 1);
    cli_key_help(detect_keys);
    printf("With --es, anomaly records go to logs-gpu.anomaly-NS, the consumed Xid/SXid\n"
           "events to logs-gpu.xid-NS and, with --index-metrics, metric events to\n"
           "metrics-gpu.dmon-NS; offsets wait for those documents too.\n"
           ES_CLI_HELP
           "\n"
           "State is per GPU and belongs to the partition its events arrive on: on a\n"
           "rebalance (cooperative: only partitions that move) the state of revoked\n"
           "partitions is dropped and new partitions warm up (windows refill, peers and\n"
           "missing-data compare GPUs of one partition), unless --state-topic restores it.\n"
           "Signals: SIGTERM/SIGINT/SIGQUIT stop consuming, settle the outputs, commit and exit\n"
           "within shutdown_timeout; SIGHUP reloads the detector configuration (rules\n"
           "that did not change keep their state and open anomalies; changed or removed\n"
           "rules end their open anomalies with an \"end\" record and start over).\n"
           "Exit status: 0 on a clean stop (SIGINT/SIGTERM with every record settled, or\n"
           "--once done), 1 on a Kafka or output error or records unsettled at the\n"
           "deadline, 2 on a usage error.\n");
}

struct detect_opts {
    const char *topics, *anomalies_topic;
    struct consumer_opts c;              /* --output, --once, --snapshot-interval, -X */
    struct ksrc_opts kafka;
    struct es_cli es;                    /* --es URL and its options */
    char *tl_default;                    /* the default topic list, owned */
};

/* One of detect's own options (into o, the ctx of stage_flags), else
 * STAGE_OPT_PASS. EXIT_OK or EXIT_USAGE (said). */
static int detect_opt(void *ctx, int c, const char *arg)
{
    struct detect_opts *o = ctx;
    switch (c) {
    case 'a': o->anomalies_topic = arg; return STAGE_OPT_PASS;   /* records go to a topic only when asked for here */
    case 't': o->topics = arg; return EXIT_OK;
    }
    return consumer_opt("detect", &o->c, c, arg);
}

/* Parses argv over the configuration; fills o. EXIT_OK or EXIT_USAGE. */
static int detect_flags(struct detect_opts *o, struct gpulog_config *cfg, int argc, char **argv)
{
    const struct stage_flags f = { "detect", detect_own, GL_ARRAY_LEN(detect_own), detect_keys, &o->es, detect_opt, o };
    int rc = stage_flags(&f, cfg, argc, argv);
    if (rc != EXIT_OK) return rc;
    char err[GL_ERRLEN * 4];
    if (optind < argc) return cli_usage_error("detect", "unexpected argument '%s'", argv[optind]);
    if (config_apply_process(cfg, err, sizeof err) != GL_OK) return cli_usage_error("detect", "%s", err);
    if ((rc = consumer_settings("detect", cfg, cfg->kafka.group, &o->c, &o->kafka)) != EXIT_OK) return rc;
    if (o->anomalies_topic) o->anomalies_topic = cfg->kafka.topic_anomalies;
    if (!o->topics) {
        size_t n = strlen(cfg->kafka.topic_metrics) + strlen(cfg->kafka.topic_events) + 2;
        o->tl_default = xmalloc(n);
        snprintf(o->tl_default, n, "%s,%s", cfg->kafka.topic_metrics, cfg->kafka.topic_events);
        o->topics = o->tl_default;
    }
    return EXIT_OK;
}

/* Builds the parts: profile, metrics endpoint, then the pipeline with its
 * outputs, engine and consumer source. EXIT_OK, or the exit code (said). */
static int detect_setup(struct dctx *d, const struct detect_opts *o, const struct gpulog_config *cfg)
{
    char err[GL_ERRLEN * 4];
    d->detectors = *cfg->detect.config ? cfg->detect.config : NULL;
    d->profile_name = cfg->detect.profile;
    d->prof = profile_load(d->detectors, d->profile_name, err, sizeof err);
    if (!d->prof) return cli_usage_error("detect", "%s", err);
    if (gpumetrics_setup(cfg, 0, err, sizeof err) != GL_OK || metrics_serve(cfg->metrics_addr, err, sizeof err) != GL_OK) {
        gl_say(GL_LOG_ERROR, "gpulog detect: metrics: %s\n", err);
        return EXIT_IOERR;
    }
    detect_engine_new(d);
    int usage = 0;
    struct detect_parts parts = {
        .topics = o->topics, .output = o->c.output, .anomalies_topic = o->anomalies_topic, .es = &o->es.conf,
        .shutdown_ms = cfg->shutdown_timeout_ms, .usage = &usage, .kafka = o->kafka,
    };
    if (detect_build(d, &parts, err, sizeof err) == GL_OK) {
        log_info("msg=started brokers=\"%s\" group=\"%s\" topics=\"%s\" detectors=\"%s\" profile=%s metrics_port=%d",
                 o->kafka.brokers, o->kafka.group, o->topics, d->detectors ? d->detectors : "", d->profile_name,
                 metrics_port());
        return EXIT_OK;
    }
    gl_say(GL_LOG_ERROR, "gpulog detect: %s\n", err);
    return usage ? EXIT_USAGE : EXIT_IOERR;
}

int cmd_detect(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) { detect_help(); return EXIT_OK; }
    struct gpulog_config cfg;
    if (config_init_command(&cfg, "detect", argc, argv) != GL_OK) return EXIT_USAGE;
    struct detect_opts o = { 0 };
    es_cli_init(&o.es);
    struct dctx d;
    memset(&d, 0, sizeof d);
    int rc = detect_flags(&o, &cfg, argc, argv);
    if (rc == EXIT_OK) rc = detect_setup(&d, &o, &cfg);
    if (rc == EXIT_OK) rc = detect_run(&d);
    metrics_stop();
    detect_free(&d);
    es_cli_free(&o.es);
    free(o.c.props);
    free(o.tl_default);
    config_free(&cfg);
    return rc;
}
