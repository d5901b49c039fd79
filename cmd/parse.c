/* parse.c - `gpulog parse`: any supported input to NDJSON events. */
#include "cli.h"
#include "../parsers/feed.h"
#include "../parsers/kmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void parse_help(void)
{
    printf(
        "usage: gpulog parse [--format F] [--host NAME] [--tz ZONE] [--keep-original]\n"
        "                    [--columns LIST] [--max-line BYTES] [--year YYYY] [--quiet]\n"
        "                    [FILE|-]\n"
        "\n"
        "Reads FILE (or stdin) to its end and writes one JSON event per line on\n"
        "stdout, with the field names of schema v1 (schemas/event.schema.json).\n"
        "\n"
        "options:\n"
        "  -f, --format F       input format (default auto):\n");
    for (size_t i = 0; parser_formats[i]; i++)
        printf("                         %-10s %s\n", parser_formats[i]->name, parser_formats[i]->help);
    printf(
        "  -H, --host NAME      host.name of the events (default: this machine's name)\n"
        "      --tz ZONE        zone of tool timestamps, e.g. UTC or Europe/Berlin\n"
        "                       (default: the local zone; TZ is honoured)\n"
        "      --keep-original  put the raw line in event.original on metric events\n"
        "                       (kernel events always carry it)\n"
        "      --columns LIST   column names for header-less CSV, comma separated\n"
        "                       (dmon --format csv,noheader or --query-gpu ...,noheader)\n"
        "      --max-line N     longest accepted line in bytes (default %d); longer\n"
        "                       lines are rejected, never buffered\n"
        "      --year YYYY      year of syslog times (\"Mar  4 02:11:10\", which have\n"
        "                       none); default: FILE's modification year, or the\n"
        "                       year before if that puts a line more than a day\n"
        "                       after the file was last written (stdin: the read time)\n"
        "  -q, --quiet          do not print rejected lines (the summary still counts them)\n"
        "\n"
        "Rejected lines are reported on stderr as FILE:LINE: reason and skipped; a\n"
        "summary line on stderr gives the counts at the end.\n"
        "Timestamps: tool times have no zone and are read in --tz; lines without a\n"
        "time of their own get the time they were read. Output times are UTC.\n"
        "Exit status: 0 when the input was read to its end (even with rejected\n"
        "lines), 1 on an I/O error, 2 on a usage error.\n",
        LR_DEFAULT_MAX_LINE);
}

struct emit_ctx {
    struct out out;
};

static void emit_json(void *ctx, const struct event *ev)
{
    struct emit_ctx *e = ctx;
    event_to_json(ev, &e->out.b);
    buf_putc(&e->out.b, '\n');
    out_maybe_flush(&e->out);
}

int cmd_parse(int argc, char **argv)
{
    static const struct option opts[] = {
        { "format", required_argument, NULL, 'f' },
        { "host", required_argument, NULL, 'H' },
        { "tz", required_argument, NULL, 'z' },
        { "keep-original", no_argument, NULL, 'k' },
        { "columns", required_argument, NULL, 'c' },
        { "max-line", required_argument, NULL, 'm' },
        { "quiet", no_argument, NULL, 'q' },
        { "year", required_argument, NULL, 'y' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *format = "auto", *host = NULL, *tz = NULL, *columns = NULL;
    int keep = 0, quiet = 0;
    long max_line = 0;
    int c, year = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":f:H:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'f': format = optarg; break;
        case 'H': host = optarg; break;
        case 'z': tz = optarg; break;
        case 'k': keep = 1; break;
        case 'c': columns = optarg; break;
        case 'q': quiet = 1; break;
        case 'm': {
            char *end;
            max_line = strtol(optarg, &end, 10);
            if (*end || max_line < 64 || max_line > 256L * 1024 * 1024)
                return cli_usage_error("parse", "--max-line wants a byte count from 64 to 268435456");
            break;
        }
        case 'y': {
            char *end;
            long y = strtol(optarg, &end, 10);
            if (*end || y < 1970 || y > 9999) return cli_usage_error("parse", "--year wants a year from 1970 to 9999");
            year = (int)y;
            break;
        }
        case 'h': parse_help(); return EXIT_OK;
        case ':': return cli_usage_error("parse", "option %s needs a value", argv[optind - 1]);
        default: return cli_usage_error("parse", "unknown option %s", argv[optind - 1]);
        }
    }
    if (argc - optind > 1) return cli_usage_error("parse", "at most one input file");
    const struct parser_ops *ops = parser_find(format);
    if (!ops) return cli_usage_error("parse", "unknown format '%s'", format);
    if (gl_tz_set(tz) != GL_OK) return cli_usage_error("parse", "unknown time zone '%s'", tz);
    const char *file = optind < argc ? argv[optind] : "-";
    int fd = 0;
    int is_stdin = !strcmp(file, "-");
    if (!is_stdin) {
        fd = open(file, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            fprintf(stderr, "gpulog parse: %s: %s\n", file, strerror(errno));
            return EXIT_IOERR;
        }
    }
    struct stat fst;
    int64_t ref = !is_stdin && fstat(fd, &fst) == 0 && S_ISREG(fst.st_mode)
                  ? (int64_t)fst.st_mtim.tv_sec * 1000 + fst.st_mtim.tv_nsec / 1000000 : 0;
    kmsg_syslog_year(year, feed_read_time() ? 0 : ref);   /* a pinned read time (tests) stays the reference */
    struct emit_ctx e;
    out_init(&e.out, 1);
    struct parser *p = parser_new(ops, emit_json, &e);
    p->opt_columns = columns;
    struct feed_opts fo = {
        .name = is_stdin ? "<stdin>" : file,
        .path = is_stdin ? NULL : file,
        .source = is_stdin ? "-" : file,
        .host = host ? host : cli_hostname(),
        .keep_original = keep,
        .max_line = (size_t)max_line,
        .quiet = quiet,
    };
    struct feed_stats st = { 0 };
    int rc = feed_fd(p, fd, &fo, &st);
    if (out_flush(&e.out) != GL_OK) {
        fprintf(stderr, "gpulog parse: write error: %s\n", strerror(e.out.failed));
        rc = GL_ERROR;
    }
    fprintf(stderr, "gpulog parse: %s: %llu lines, %llu events, %llu rejected, %llu skipped (headers, blanks)\n",
            fo.name, (unsigned long long)st.lines, (unsigned long long)st.events,
            (unsigned long long)st.rejected, (unsigned long long)st.declined);
    if (parser_fields_dropped())
        fprintf(stderr, "gpulog parse: %s: %llu fields dropped: out of the schema's range (the rest of their events kept)\n",
                fo.name, (unsigned long long)parser_fields_dropped());
    parser_free(p);
    out_free(&e.out);
    if (!is_stdin) close(fd);
    return rc == GL_OK ? EXIT_OK : EXIT_IOERR;
}
