/*
 * collect_flags.c - the flags of `gpulog collect`: the keys of the
 * configuration table it offers as flags (their flag, text and default come
 * from the key's row, core/config.c), its own flags in one table (getopt's
 * entries and their --help text), and the help around them.
 */
#include "collect.h"
#include "../core/config.h"

#include <stdio.h>

#define SOURCES 1
#define OPTIONS 2
#define OUTPUT 3

const char *const collect_keys[] = {
    "host", "tz", "year", "state_dir", "kafka.brokers", "kafka.topics.metrics", "kafka.topics.events",
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
    struct buf keys;
    buf_init(&keys);
    config_flag_help(collect_keys, &keys);
    fputs(keys.p ? keys.p : "", stdout);
    buf_free(&keys);
    cli_flag_help(collect_flags, collect_nflags, OUTPUT);
    printf("\nDelivery: a source's checkpoint moves only past lines whose events the broker\n"
           "acknowledged; lines of commands, stdin and /dev/kmsg are spooled to disk first.\n"
           "After a crash only unacknowledged lines are sent again, with the same event.id.\n"
           "Signals: SIGTERM/SIGINT stop reading, deliver, checkpoint and exit within\n"
           "shutdown_timeout; SIGHUP re-scans the --file globs at once (collect has no\n"
           "detectors to reload; other settings need a restart).\n"
           "Data that was never read (a rotated file deleted or compressed before it was\n"
           "read, or beyond the bounds above) is logged with its byte range, counted in\n"
           "gpulog_files_lost_total{reason} and sent as a source-data-lost event.\n"
           "Exit status: 0 ok; 1 when something could not be delivered (dead letter,\n"
           "shutdown deadline, fatal producer error), on an I/O error, or with --once\n"
           "when a command could not start or failed or file data was lost; 2 usage error.\n");
}
