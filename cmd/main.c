/* main.c - the gpulog binary: dispatches to subcommands. */
#include "cli.h"
#include "../core/config.h"
#include "../core/dynlib.h"
#include "../parsers/parser.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

static const struct command commands[] = {
    { "parse",   "parse any supported input into NDJSON events on stdout", cmd_parse },
    { "collect", "node sidecar: tail/spawn GPU sources, deliver events to Kafka", cmd_collect },
    { "detect",  "stream processor: consume events from Kafka, detect anomalies", cmd_detect },
    { "fleet",   "correlate GPU incidents across hosts into fleet incidents (Kafka)", cmd_fleet },
    { "run",     "all in one process: parse, detect, print (no Kafka or Elasticsearch)", cmd_run },
    { "report",  "one self-contained HTML page of what happened on a node", cmd_report },
    { "setup",   "install Elasticsearch/OpenSearch templates and Kibana objects", cmd_setup },
    { "config",  "check a configuration file, print the effective configuration", cmd_config },
};

static void usage(FILE *f)
{
    fprintf(f,
        "gpulog %s - GPU log analysis and anomaly detection\n"
        "\n"
        "usage: gpulog COMMAND [OPTIONS] [ARGS]\n"
        "       gpulog COMMAND --help\n"
        "       gpulog --version\n"
        "\n"
        "commands:\n", GPULOG_VERSION);
    for (size_t i = 0; i < GL_ARRAY_LEN(commands); i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(f,
        "\n"
        "Quick start on one machine, no Kafka needed:\n"
        "  nvidia-smi dmon -o DT -s pucvmet | gpulog run -\n"
        "  gpulog parse /var/log/gpu/dmon.log > events.ndjson\n"
        "\n"
        "Exit status: 0 ok (input read to its end, even with rejected lines),\n"
        "1 I/O error, 2 usage error.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    argv = cli_scrub_argv(argc, argv);   /* no secret stays in /proc/PID/cmdline */
    config_set_formats(parser_format_names());
    const char *c = argv[1];
    if (!strcmp(c, "--help") || !strcmp(c, "-h") || !strcmp(c, "help")) {
        usage(stdout);
        return EXIT_OK;
    }
    if (!strcmp(c, "--version") || !strcmp(c, "-V") || !strcmp(c, "version")) {
        /* the first line alone is gpulog's; the second the librdkafka it
         * loads (a SCRAM login to Kafka 4.x needs 2.6.1 or later) */
        char ver[64], path[512];
        printf("gpulog %s\n", GPULOG_VERSION);
        if (dynlib_kafka_info(ver, sizeof ver, path, sizeof path) == 0) printf("librdkafka %s (%s)\n", ver, path);
        else printf("librdkafka: not loadable (%s): collect and detect need it\n", path);
        return EXIT_OK;
    }
    for (size_t i = 0; i < GL_ARRAY_LEN(commands); i++)
        if (!strcmp(c, commands[i].name)) return commands[i].main(argc - 1, argv + 1);
    gl_say(GL_LOG_ERROR, "gpulog: unknown command '%s'", c);
    fputc('\n', stderr);
    usage(stderr);
    return EXIT_USAGE;
}
