/* parse.c - `gpulog parse`: any supported input to NDJSON events. */
#include "cli.h"
#include "../core/config.h"
#include "../parsers/feed.h"
#include "../parsers/kmsg.h"
#include "../parsers/parser.h"
#include "../parsers/fieldname.h"
#include "../ingest/pipeline.h"

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
        "                    [--columns LIST] [--map COL=FIELD]... [--max-line BYTES]\n"
        "                    [--year YYYY] [--quiet]\n"
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
        "      --map COL=FIELD  name column COL as schema field FIELD, for what no rule\n"
        "                       can guess (repeatable): temp_f=gpu.temperature.gpu,\n"
        "                       job=labels.job; COL compared without case, separators\n"
        "                       or brackets; a unit in COL's name still converts.\n"
        "                       Columns are otherwise recognised by meaning: any case\n"
        "                       and separator, unit suffixes ([MiB], _w, _c, _pct),\n"
        "                       nvidia-smi query names, DCGM and dmon names, W&B keys;\n"
        "                       what stays unrecognised is listed on stderr\n"
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

/* What the flags ask for. */
struct parse_req {
    const char *format, *host, *tz, *columns, *file;
    const char *map[256];       /* --map COL=FIELD, in order */
    size_t nmap;
    int keep, quiet, year;
    long max_line;
};

/* Reads the flags into rq. EXIT_OK, or -1 after --help, or a usage error. */
static int parse_flags(struct parse_req *rq, int argc, char **argv)
{
    static const struct option opts[] = {
        { "format", required_argument, NULL, 'f' }, { "host", required_argument, NULL, 'H' },
        { "tz", required_argument, NULL, 'z' }, { "keep-original", no_argument, NULL, 'k' },
        { "columns", required_argument, NULL, 'c' }, { "max-line", required_argument, NULL, 'm' },
        { "map", required_argument, NULL, 'M' },
        { "quiet", no_argument, NULL, 'q' }, { "year", required_argument, NULL, 'y' },
        { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
    };
    int c;
    char *end;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":f:H:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'f': rq->format = optarg; break;
        case 'H': rq->host = optarg; break;
        case 'z': rq->tz = optarg; break;
        case 'k': rq->keep = 1; break;
        case 'c': rq->columns = optarg; break;
        case 'M':
            if (rq->nmap == GL_ARRAY_LEN(rq->map)) return cli_usage_error("parse", "at most %zu --map", GL_ARRAY_LEN(rq->map));
            rq->map[rq->nmap++] = optarg;
            break;
        case 'q': rq->quiet = 1; break;
        case 'm':
            rq->max_line = strtol(optarg, &end, 10);
            if (*end || rq->max_line < 64 || rq->max_line > 256L * 1024 * 1024)
                return cli_usage_error("parse", "--max-line wants a byte count from 64 to 268435456");
            break;
        case 'y':
            rq->year = (int)strtol(optarg, &end, 10);
            if (*end || rq->year < 1970 || rq->year > 9999) return cli_usage_error("parse", "--year wants a year from 1970 to 9999");
            break;
        case 'h': parse_help(); return -1;
        case ':': return cli_usage_error("parse", "option %s needs a value", argv[optind - 1]);
        default: return cli_usage_error("parse", "unknown option %s", argv[optind - 1]);
        }
    }
    if (argc - optind > 1) return cli_usage_error("parse", "at most one input file");
    if (!parser_find(rq->format)) return cli_usage_error("parse", "unknown format '%s'", rq->format);
    if (gl_tz_set(rq->tz) != GL_OK) return cli_usage_error("parse", "unknown time zone '%s'", rq->tz);
    char err[GL_ERRLEN];
    if (fn_map_set(rq->map, rq->nmap, err, sizeof err)) return cli_usage_error("parse", "%s", err);
    rq->file = optind < argc ? argv[optind] : "-";
    return EXIT_OK;
}

/* The pipeline's stage: every event as one JSON line on stdout. */
static void emit_json(void *ctx, const struct event *ev)
{
    struct out *o = ctx;
    event_to_json(ev, &o->b);
    buf_putc(&o->b, '\n');
    out_maybe_flush(o);
}

/* The year of syslog times: --year, else from FILE's modification time
 * (a pinned read time, in tests, stays the reference). */
static void syslog_year(const struct parse_req *rq)
{
    struct stat st;
    int64_t ref = strcmp(rq->file, "-") && stat(rq->file, &st) == 0 && S_ISREG(st.st_mode)
                  ? (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000 : 0;
    kmsg_syslog_year(rq->year, feed_read_time() ? 0 : ref);
}

/* The summary on stderr: counts of the one source. */
static void summary(const struct source *s)
{
    const char *name = s->label ? s->label : s->name;
    gl_say(GL_LOG_INFO, "gpulog parse: %s: %llu lines, %llu events, %llu rejected, %llu skipped (headers, blanks)\n",
            name, (unsigned long long)s->lines, (unsigned long long)s->events,
            (unsigned long long)s->rejected, (unsigned long long)s->declined);
    if (parser_fields_dropped())
        gl_say(GL_LOG_WARN, "gpulog parse: %s: %llu fields dropped: out of the schema's range (the rest of their events kept)\n",
                name, (unsigned long long)parser_fields_dropped());
    if (parser_fields_rounded())
        fprintf(stderr, "gpulog parse: %s: %llu fractions rounded to whole numbers (counts and sizes the schema types as integers)\n",
                name, (unsigned long long)parser_fields_rounded());
}

/* parse reads no configuration file, but the log settings of the
 * environment (GPULOG_LOG_FORMAT=json, GPULOG_LOG_LEVEL) apply to its
 * reports as to every command's. */
static void log_from_env(void)
{
    struct gpulog_config cfg;
    char err[GL_ERRLEN];
    config_defaults(&cfg);
    if (config_apply_env(&cfg, err, sizeof err) == GL_OK) config_apply_log(&cfg);
    config_free(&cfg);
}

int cmd_parse(int argc, char **argv)
{
    struct parse_req rq = { .format = "auto" };
    log_from_env();
    int rc = parse_flags(&rq, argc, argv);
    if (rc) return rc < 0 ? EXIT_OK : rc;
    syslog_year(&rq);
    struct out out;
    out_init(&out, 1);
    struct pipeline_opts po = {
        .host = cli_host(rq.host), .once = 1, .keep_original = rq.keep,
        .max_line = (size_t)rq.max_line, .fixed_now = feed_read_time(), .by_lineno = 1, .quiet = rq.quiet,
        .stage = emit_json, .ctx = &out,
    };
    struct pipeline *pl = pipeline_new(&po);
    char err[GL_ERRLEN];
    struct source *s = pipeline_open(pl, "fd", rq.file, rq.format, err, sizeof err);
    if (!s) {
        gl_say(GL_LOG_ERROR, "gpulog parse: %s\n", err);
        rc = EXIT_IOERR;
    } else {
        s->parser->opt_columns = rq.columns;
        pipeline_run(pl);
        pipeline_finish(pl);
        if (out_flush(&out) != GL_OK) gl_say(GL_LOG_ERROR, "gpulog parse: write error: %s\n", strerror(out.failed));
        summary(s);
        rc = s->failed || out.failed ? EXIT_IOERR : EXIT_OK;
    }
    pipeline_free(pl);
    out_free(&out);
    return rc;
}
