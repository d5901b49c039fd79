/*
 * collect_flags.c - the flags of `gpulog collect`: the keys of the
 * configuration table it offers as flags (their flag, text and default come
 * from the key's row, core/config.c), its own flags in one table (getopt's
 * entries and their --help text), reading them into the configuration and
 * struct collector, and the help around them.
 */
#include "collect.h"
#include "../core/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SOURCES 1
#define OPTIONS 2
#define OUTPUT 3

const char *const collect_keys[] = {
    "host", "tz", "year", "map", "labels", "state_dir", "kafka.brokers", "kafka.topics.metrics", "kafka.topics.events",
    "kafka.properties", "collect.spool_max", "shutdown_timeout", "collect.stale_after", "collect.stats_interval",
    "metrics_addr", "collect.rotate_max_generations", "collect.rotate_max_age", NULL,
};

const struct cli_flag collect_flags[] = {
    { "exec", 'e', required_argument, SOURCES, "-e, --exec CMD",
      "run CMD (split into words without a shell; quotes group)\nand read its stdout; restarted with backoff 1 s .. 30 s\n"
      "when it exits; killed and restarted when it gives no\nusable line for max(3 sample periods, 10 s), with a\n"
      "gpulog.collector event (source-stale / source-restarted)" },
    { "file", 'f', required_argument, SOURCES, "-f, --file PATH",
      "follow a file like tail -F (rename and copytruncate\nrotation, files that appear later); behind or after a\n"
      "stop, every rotated generation not read yet is read,\noldest first; one gone before it was read is reported\n"
      "(source-data-lost); a glob is re-scanned\nevery second; of its matches, rotated files of another\n"
      "match or followed file (NAME.1, NAME-20250101.gz)\nand compressed files are skipped (read through the\n"
      "rotation; logged once); name a file to follow it anyway" },
    { "kmsg", O_KMSG, optional_argument, SOURCES, "    --kmsg[=PATH]",
      "kernel messages from /dev/kmsg (resumed by sequence\nnumber; boot-relative times become wall-clock)" },
    { NULL, 0, no_argument, SOURCES, "-", "standard input" },
    { "config", O_CONFIG, required_argument, OPTIONS, "    --config FILE",
      "gpulog configuration (YAML, docs/configuration.md;\ndefault $GPULOG_CONFIG); flags override it" },
    { "format", 'F', required_argument, OPTIONS, "-F, --format F", "format of sources whose format is auto (default auto)" },
    { "output", 'o', required_argument, OUTPUT, "-o, --output FILE",
      "NDJSON output when no brokers are set (default stdout);\nrefused together with brokers, as are -X and the\n"
      "topics without them" },
    { "once", O_ONCE, no_argument, OUTPUT, "    --once",
      "read what is there, deliver it, wait for every\nacknowledgement, checkpoint and exit" },
    { "keep-original", O_KEEP, no_argument, OUTPUT, "    --keep-original", "put the raw line in event.original on metric events" },
    { "max-line", O_MAXLINE, required_argument, OUTPUT, "    --max-line N", "longest accepted line in bytes (default 1048576)" },
};
const size_t collect_nflags = GL_ARRAY_LEN(collect_flags);

/* A source flag (--exec, --file, --kmsg, "-"): the first replaces the configuration's sources. */
static int source_flag(struct collector *c, struct gpulog_config *cfg, const char *type, const char *arg)
{
    char err[GL_ERRLEN * 4];
    if (!c->cleared) { config_clear_sources(cfg); c->cleared = 1; }
    struct buf v;
    buf_init(&v);
    buf_printf(&v, "%s%s%s", type, arg ? ":" : "", arg ? arg : "");
    int r = config_set(cfg, "sources", v.p, err, sizeof err);
    buf_free(&v);
    return r == GL_OK ? EXIT_OK : cli_usage_error("collect", "%s", err);
}

/* Remembers a Kafka-only flag (a topic, -X): refused without brokers. */
static void note_kafka_flag(struct collector *c, int ch)
{
    static const char *const kafka_only[] = { "kafka.topics.metrics", "kafka.topics.events", "kafka.properties" };
    for (size_t i = 0; i < GL_ARRAY_LEN(kafka_only); i++) {
        const struct config_key *k = config_key_find(kafka_only[i]);
        if (k && config_flag_val(k) == ch) c->kafka_flag = k;
    }
}

/* One flag: a key of the configuration table, a source, or the command's own. */
static int one_flag(struct collector *c, struct gpulog_config *cfg, int ch, const char *arg, const char *given)
{
    char err[GL_ERRLEN * 4];
    double v;
    int r = config_flag_apply(cfg, collect_keys, ch, arg, err, sizeof err);
    if (r < 0) return cli_usage_error("collect", "%s", err);
    if (r > 0) { note_kafka_flag(c, ch); return EXIT_OK; }
    switch (ch) {
    case 'e': return source_flag(c, cfg, "exec", arg);
    case 'f': return source_flag(c, cfg, "file", arg);
    case O_KMSG: return source_flag(c, cfg, "kmsg", arg);
    case O_CONFIG: return EXIT_OK;   /* read before */
    case 'F': c->format = arg; return EXIT_OK;
    case 'o': c->output = arg; return EXIT_OK;
    case O_ONCE: c->po.once = 1; return EXIT_OK;
    case O_KEEP: c->po.keep_original = 1; return EXIT_OK;
    case O_MAXLINE:
        if (!gl_parse_double(arg, strlen(arg), &v) || v < 64 || v > 256.0 * 1024 * 1024)
            return cli_usage_error("collect", "--max-line wants a byte count from 64 to 268435456");
        c->po.max_line = (size_t)v;
        return EXIT_OK;
    }
    return cli_usage_error("collect", "unknown option %s", given);
}

/* Reads the flags into cfg and c. EXIT_OK or a usage error. */
int collect_read_flags(struct collector *c, struct gpulog_config *cfg, int argc, char **argv)
{
    struct option opts[48];
    char shortopts[64] = ":h";
    cli_option_table(collect_flags, collect_nflags, collect_keys, NULL, 0, opts, GL_ARRAY_LEN(opts), shortopts,
                     sizeof shortopts);
    int ch, rc = EXIT_OK;
    optind = 1;
    opterr = 0;
    while (rc == EXIT_OK && (ch = getopt_long(argc, argv, shortopts, opts, NULL)) != -1) {
        if (ch == ':') rc = cli_usage_error("collect", "option %s needs a value", argv[optind - 1]);
        else if (ch == 'b' && !*optarg)   /* an empty value would silently mean "no Kafka, NDJSON on stdout" */
            rc = cli_usage_error("collect", "--brokers is empty (leave it out for NDJSON output)");
        else if (ch == 'X' && !strchr(optarg, '=')) rc = cli_usage_error("collect", "-X wants key=value, got '%s'", optarg);
        else rc = one_flag(c, cfg, ch, optarg, argv[optind - 1]);
    }
    for (int i = optind; i < argc && rc == EXIT_OK; i++)
        rc = strcmp(argv[i], "-") ? cli_usage_error("collect", "unexpected argument '%s' (files go with --file)", argv[i])
                                  : source_flag(c, cfg, "stdin", NULL);
    return rc;
}

/* `gpulog collect --help`: the usage, the sources, the options, the model. */
void collect_help(void)
{
    printf("usage: gpulog collect [--config FILE] [--exec CMD]... [--file PATH_OR_GLOB]... [--kmsg] [-]\n"
           "                      [--format F] [--host NAME] [--tz ZONE] [--year YYYY] [--state-dir DIR]\n"
           "                      [--brokers LIST] [--topic T] [--events-topic T] [-X key=value]...\n"
           "                      [--output FILE] [--once] [--spool-max BYTES] [--shutdown-timeout S]\n"
           "                      [--metrics-addr HOST:PORT]\n\n"
           "The node sidecar: reads GPU telemetry sources, parses every line into events\n"
           "and delivers them to Kafka (or NDJSON on stdout / --output without brokers).\n\n"
           "sources (any number, each with its own parser; given here they replace the\n"
           "config file's sources list):\n");
    cli_flag_help(collect_flags, collect_nflags, SOURCES);
    printf("\noptions (the configuration key in brackets):\n");
    cli_flag_help(collect_flags, collect_nflags, OPTIONS);
    cli_key_help(collect_keys);
    cli_flag_help(collect_flags, collect_nflags, OUTPUT);
    printf("\nDelivery: a source's checkpoint moves only past lines whose events the broker\n"
           "acknowledged; lines of commands, stdin and /dev/kmsg are spooled to disk first.\n"
           "After a crash only unacknowledged lines are sent again, with the same event.id.\n"
           "Signals: SIGTERM/SIGINT/SIGQUIT stop reading, deliver, checkpoint and exit within\n"
           "shutdown_timeout; SIGHUP re-scans the --file globs at once (collect has no\n"
           "detectors to reload; other settings need a restart).\n"
           "Data that was never read (a rotated file deleted or compressed before it was\n"
           "read, or beyond the bounds above) is logged with its byte range, counted in\n"
           "gpulog_files_lost_total{reason} and sent as a source-data-lost event.\n"
           "Exit status: 0 ok; 1 when something could not be delivered (dead letter,\n"
           "shutdown deadline, fatal producer error), on an I/O error, or with --once\n"
           "when a command could not start or failed or file data was lost; 2 usage error.\n");
}
