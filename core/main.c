/* main.c - the gpulog binary: dispatches to subcommands. */
#include "cli.h"

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
    { "run",     "all in one process: parse, detect, print (no Kafka or Elasticsearch)", cmd_run },
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

void cli_catch_signals(void (*handler)(int))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

int cli_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return 1;
    return 0;
}

const char *cli_hostname(void)
{
    static char name[256];
    if (!name[0]) {
        if (gethostname(name, sizeof name - 1) != 0 || !name[0]) strcpy(name, "localhost");
        name[sizeof name - 1] = '\0';
    }
    return name;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "gpulog %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(see 'gpulog %s --help')\n", cmd);
    va_end(ap);
    return EXIT_USAGE;
}

void out_init(struct out *o, int fd)
{
    o->fd = fd;
    o->failed = 0;
    buf_init(&o->b);
}

int out_flush(struct out *o)
{
    size_t off = 0;
    while (off < o->b.len && !o->failed) {
        ssize_t n = write(o->fd, o->b.p + off, o->b.len - off);
        if (n < 0) {
            if (errno == EINTR) continue;
            o->failed = errno;
            break;
        }
        off += (size_t)n;
    }
    buf_reset(&o->b);
    return o->failed ? GL_ERROR : GL_OK;
}

void out_free(struct out *o)
{
    buf_free(&o->b);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *c = argv[1];
    if (!strcmp(c, "--help") || !strcmp(c, "-h") || !strcmp(c, "help")) {
        usage(stdout);
        return EXIT_OK;
    }
    if (!strcmp(c, "--version") || !strcmp(c, "-V") || !strcmp(c, "version")) {
        printf("gpulog %s\n", GPULOG_VERSION);
        return EXIT_OK;
    }
    for (size_t i = 0; i < GL_ARRAY_LEN(commands); i++)
        if (!strcmp(c, commands[i].name)) return commands[i].main(argc - 1, argv + 1);
    fprintf(stderr, "gpulog: unknown command '%s'\n\n", c);
    usage(stderr);
    return EXIT_USAGE;
}
