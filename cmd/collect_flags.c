/*
 * collect_flags.c - the flags of `gpulog collect` in one table: getopt's
 * entries, the configuration key each sets and the --help text (both
 * generated from it, cli.h), and the help around them.
 */
#include "collect.h"

#include <stdio.h>

#define SOURCES 1
#define OPTIONS 2

const struct cli_flag collect_flags[] = {
    { "exec", 'e', required_argument, "@exec", SOURCES, "-e, --exec CMD",
      "run CMD (split into words without a shell; quotes group)\nand read its stdout; restarted with backoff 1 s .. 30 s\n"
      "when it exits; killed and restarted when it gives no\nusable line for max(3 sample periods, 10 s), with a\n"
      "gpulog.collector event (source-stale / source-restarted)" },
    { "file", 'f', required_argument, "@file", SOURCES, "-f, --file PATH",
      "follow a file like tail -F (rename and copytruncate\nrotation, files that appear later); behind or after a\n"
      "stop, every rotated generation not read yet is read,\noldest first; one gone before it was read is reported\n"
      "(source-data-lost); a glob is re-scanned\nevery second; of its matches, rotated files of another\n"
      "match or followed file (NAME.1, NAME-20250101.gz)\nand compressed files are skipped (read through the\n"
      "rotation; logged once); name a file to follow it anyway" },
    { "kmsg", O_KMSG, optional_argument, "@kmsg", SOURCES, "    --kmsg[=PATH]",
      "kernel messages from /dev/kmsg (resumed by sequence\nnumber; boot-relative times become wall-clock)" },
    { NULL, 0, no_argument, NULL, SOURCES, "-", "standard input" },
    { "config", O_CONFIG, required_argument, NULL, OPTIONS, "    --config FILE",
      "gpulog configuration (YAML, docs/configuration.md;\ndefault $GPULOG_CONFIG); flags override it" },
    { "format", 'F', required_argument, NULL, OPTIONS, "-F, --format F", "format of sources whose format is auto (default auto)" },
    { "host", 'H', required_argument, "host", OPTIONS, "-H, --host NAME",
      "host.name (default: this machine's name); keep it stable,\nevent ids are made from host, source, offset and line [host]" },
    { "tz", O_TZ, required_argument, "tz", OPTIONS, "    --tz ZONE", "zone of tool timestamps (default: local) [tz]" },
    { "year", O_YEAR, required_argument, "year", OPTIONS, "    --year YYYY",
      "year of syslog times, which have none (default: the\nread time's, or the year before if that puts a line\n"
      "more than a day ahead) [year]" },
    { "state-dir", 's', required_argument, "state_dir", OPTIONS, "-s, --state-dir DIR",
      "checkpoints, spool and dead letters (default\n$STATE_DIRECTORY or /var/lib/gpulog) [state_dir]" },
    { "brokers", 'b', required_argument, "kafka.brokers", OPTIONS, "-b, --brokers LIST",
      "Kafka bootstrap servers; without them NDJSON is written\n[kafka.brokers]" },
    { "topic", 't', required_argument, "kafka.topics.metrics", OPTIONS, "-t, --topic T",
      "topic of metric events (default gpu.metrics)\n[kafka.topics.metrics]" },
    { "events-topic", O_EVTOPIC, required_argument, "kafka.topics.events", OPTIONS, "    --events-topic T",
      "topic of kernel and collector events (default gpu.events)\n[kafka.topics.events]" },
    { NULL, 'X', required_argument, "kafka.properties", OPTIONS, "-X key=value",
      "librdkafka property, applied after gpulog's defaults\n(enable.idempotence=true acks=all compression.codec=lz4\n"
      "message.timeout.ms=0 queue.buffering.max.kbytes=8192\nlinger.ms=20); TLS and SASL work through these\n[kafka.properties]" },
    { "output", 'o', required_argument, NULL, OPTIONS, "-o, --output FILE",
      "NDJSON output when no brokers are set (default stdout);\nrefused together with brokers, as are -X and the\n"
      "topics without them" },
    { "once", O_ONCE, no_argument, NULL, OPTIONS, "    --once",
      "read what is there, deliver it, wait for every\nacknowledgement, checkpoint and exit" },
    { "spool-max", O_SPOOLMAX, required_argument, "collect.spool_max", OPTIONS, "    --spool-max N",
      "on-disk spool budget (default 256MiB) [collect.spool_max]" },
    { "shutdown-timeout", O_SHUTDOWN, required_argument, "shutdown_timeout", OPTIONS, "    --shutdown-timeout S",
      "time to deliver what was read after SIGTERM\n(default 10 s) [shutdown_timeout]" },
    { "stale-after", O_STALE, required_argument, "collect.stale_after", OPTIONS, "    --stale-after S",
      "override the staleness limit of --exec commands\n[collect.stale_after]" },
    { "stats-interval", O_STATS, required_argument, "collect.stats_interval", OPTIONS, "    --stats-interval S",
      "log a stats line every S seconds (default 60, 0 = off)\n[collect.stats_interval]" },
    { "metrics-addr", O_METRICS, required_argument, "metrics_addr", OPTIONS, "    --metrics-addr HOST:PORT",
      "serve /metrics, /healthz and /readyz [metrics_addr]" },
    { "rotate-max-generations", O_ROTGENS, required_argument, "collect.rotate_max_generations", OPTIONS,
      "    --rotate-max-generations N", "rotated generations read back after falling\nbehind (default 64) [collect.rotate_max_generations]" },
    { "rotate-max-age", O_ROTAGE, required_argument, "collect.rotate_max_age", OPTIONS, "    --rotate-max-age D",
      "rotated generations older than D are not read\n(default 7d) [collect.rotate_max_age]" },
    { "keep-original", O_KEEP, no_argument, NULL, OPTIONS, "    --keep-original", "put the raw line in event.original on metric events" },
    { "max-line", O_MAXLINE, required_argument, NULL, OPTIONS, "    --max-line N", "longest accepted line in bytes (default 1048576)" },
};
const size_t collect_nflags = GL_ARRAY_LEN(collect_flags);

/* `gpulog collect --help`: the usage, the two flag blocks, the model. */
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
