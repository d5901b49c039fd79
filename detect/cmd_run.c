/* cmd_run.c - `gpulog run`: parse, detect and print in one process (the
 * embedded default: no Kafka or Elasticsearch needed). */
#include "../core/cli.h"
#include "../parsers/feed.h"
#include "../ingest/source.h"
#include "../sinks/sink.h"
#include "../sinks/es_cli.h"
#include "engine.h"
#include "live.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void run_help(void)
{
    printf(
        "usage: gpulog run [--format F] [--config FILE] [--profile gpu|generic] [--tz ZONE]\n"
        "                  [--host NAME] [--columns LIST] [--output FILE] [--live|--no-live]\n"
        "                  [FILE|-|--exec CMD]\n"
        "\n"
        "Parses FILE (or stdin, or the output of CMD), runs the anomaly detectors over\n"
        "the events and writes anomaly records (event.dataset gpu.anomaly) as NDJSON.\n"
        "When stdout is a terminal it shows a live view instead: anomalies as they\n"
        "open and resolve, a status line per GPU and a summary at the end.\n"
        "\n"
        "options:\n"
        "  -f, --format F      input format, as for gpulog parse (default auto)\n"
        "  -c, --config FILE   detector profile (JSON; see docs/detectors.md)\n"
        "  -p, --profile NAME  built-in profile when no --config: gpu (default) or generic\n"
        "      --tz ZONE       zone of tool timestamps (default: local zone)\n"
        "  -H, --host NAME     host.name of the events (default: this machine)\n"
        "      --columns LIST  column names for header-less CSV\n"
        "  -o, --output FILE   write the NDJSON records to FILE (also with the live view)\n"
        "      --exec CMD      run CMD (no shell) and read its standard output\n"
        "      --live          force the live view; --no-live forces NDJSON on stdout\n"
        "  -q, --quiet         do not print rejected input lines\n"
        ES_CLI_HELP
        "\n"
        "Exit status: 0 when the input was read to its end, 1 on an I/O error,\n"
        "2 on a usage error.\n");
}

struct run_opts {
    const char *output;
    int ndjson_stdout;
    struct es_cli es;                   /* --es URL and its options */
};

struct run_ctx {
    struct engine *eng;
    struct sink *sinks[4];
    size_t nsinks;
    struct live *live;
    struct buf json;
    uint64_t written, settled, failed_writes;
};

static void run_settle(void *ctx, void *token, enum sink_outcome outcome)
{
    (void)token; (void)outcome;
    struct run_ctx *r = ctx;
    r->settled++;
}

/* Builds the outputs of `run` from its options: an NDJSON file (--output)
 * and/or NDJSON on stdout. (The Elasticsearch sink joins here.) Returns the
 * number of sinks or -1 with a reason in err. */
static int run_build_sinks(const struct run_opts *o, struct run_ctx *r, char *err, size_t errlen)
{
    r->nsinks = 0;
    if (o->output) {
        struct sink *s = sink_file_new(o->output, run_settle, r, err, errlen);
        if (!s) return -1;
        r->sinks[r->nsinks++] = s;
    }
    if (o->ndjson_stdout) {
        struct sink *s = sink_file_new(NULL, run_settle, r, err, errlen);
        if (!s) return -1;
        r->sinks[r->nsinks++] = s;
    }
    if (o->es.conf.url) {
        struct sink *s = sink_es_new(&o->es.conf, run_settle, r, err, errlen);
        if (!s) return -1;
        r->sinks[r->nsinks++] = s;
    }
    return (int)r->nsinks;
}

static void run_emit_record(void *ctx, const struct event *rec)
{
    struct run_ctx *r = ctx;
    buf_reset(&r->json);
    event_to_json(rec, &r->json);
    char key[160];
    const struct ev_field *g = event_get(rec, "gpu.index");
    int kl = snprintf(key, sizeof key, "%s/%lld", rec->host ? rec->host : "-", g ? (long long)g->v.i : -1LL);
    struct sink_doc d = {
        .stream = STREAM_ANOMALIES, .key = key, .keylen = (size_t)kl, .id = rec->id,
        .json = r->json.p, .len = r->json.len, .token = NULL,
    };
    for (size_t i = 0; i < r->nsinks; i++) {
        int rc;
        while ((rc = sink_write(r->sinks[i], &d)) == GL_AGAIN) sink_poll(r->sinks[i], 100);
        if (rc == GL_ERROR) r->failed_writes++;
        else r->written++;
    }
    if (r->live) live_record(r->live, rec);
}

static void run_emit_event(void *ctx, const struct event *ev)
{
    struct run_ctx *r = ctx;
    engine_feed(r->eng, ev);
    if (r->live) live_tick(r->live, r->eng);
}

int cmd_run(int argc, char **argv)
{
    static const struct option opts[] = {
        { "format", required_argument, NULL, 'f' },
        { "config", required_argument, NULL, 'c' },
        { "profile", required_argument, NULL, 'p' },
        { "tz", required_argument, NULL, 'z' },
        { "host", required_argument, NULL, 'H' },
        { "columns", required_argument, NULL, 'C' },
        { "output", required_argument, NULL, 'o' },
        { "exec", required_argument, NULL, 'x' },
        { "live", no_argument, NULL, 'L' },
        { "no-live", no_argument, NULL, 'N' },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        ES_CLI_LONGOPTS,
        { NULL, 0, NULL, 0 },
    };
    const char *format = "auto", *config = NULL, *profile = "gpu", *tz = NULL, *host = NULL;
    const char *columns = NULL, *exec_cmd = NULL;
    struct run_opts ro = { 0 };
    es_cli_init(&ro.es);
    int live_mode = -1, quiet = 0, c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":f:c:p:H:o:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'f': format = optarg; break;
        case 'c': config = optarg; break;
        case 'p': profile = optarg; break;
        case 'z': tz = optarg; break;
        case 'H': host = optarg; break;
        case 'C': columns = optarg; break;
        case 'o': ro.output = optarg; break;
        case 'x': exec_cmd = optarg; break;
        case 'L': live_mode = 1; break;
        case 'N': live_mode = 0; break;
        case 'q': quiet = 1; break;
        case 'h': run_help(); return EXIT_OK;
        case ':': return cli_usage_error("run", "option %s needs a value", argv[optind - 1]);
        default: {
            char eserr[GL_ERRLEN];
            int er = es_cli_opt(&ro.es, c, optarg, eserr, sizeof eserr);
            if (er > 0) break;
            if (er < 0) return cli_usage_error("run", "%s", eserr);
            return cli_usage_error("run", "unknown option %s", argv[optind - 1]);
        }
        }
    }
    {
        char eserr[GL_ERRLEN];
        if (es_cli_finish(&ro.es, eserr, sizeof eserr) != GL_OK) return cli_usage_error("run", "%s", eserr);
    }
    if (argc - optind > 1) return cli_usage_error("run", "at most one input file");
    if (exec_cmd && argc - optind == 1) return cli_usage_error("run", "give a FILE or --exec, not both");
    const struct parser_ops *ops = parser_find(format);
    if (!ops) return cli_usage_error("run", "unknown format '%s'", format);
    if (gl_tz_set(tz) != GL_OK) return cli_usage_error("run", "unknown time zone '%s'", tz);
    char err[GL_ERRLEN];
    struct profile *prof = profile_load(config, profile, err, sizeof err);
    if (!prof) return cli_usage_error("run", "%s", err);
    if (live_mode < 0) live_mode = isatty(1) ? 1 : 0;
    ro.ndjson_stdout = !live_mode;

    struct run_ctx r;
    memset(&r, 0, sizeof r);
    buf_init(&r.json);
    if (run_build_sinks(&ro, &r, err, sizeof err) < 0) {
        profile_free(prof);
        return cli_usage_error("run", "%s", err);
    }
    if (live_mode) r.live = live_new(stdout);
    r.eng = engine_new(prof, run_emit_record, &r);

    const char *file = optind < argc ? argv[optind] : "-";
    int fd = 0, is_stdin = !exec_cmd && !strcmp(file, "-");
    pid_t child = -1;
    char **cargv = NULL;
    if (exec_cmd) {
        cargv = argv_split(exec_cmd);
        if (!cargv || !cargv[0]) {
            argv_free(cargv);
            return cli_usage_error("run", "cannot split --exec command");
        }
        child = exec_spawn(cargv, &fd, err, sizeof err);
        if (child < 0) {
            fprintf(stderr, "gpulog run: %s\n", err);
            argv_free(cargv);
            return EXIT_IOERR;
        }
        /* feed_fd reads blocking */
        int fl = fcntl(fd, F_GETFL);
        if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    } else if (!is_stdin) {
        fd = open(file, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            fprintf(stderr, "gpulog run: %s: %s\n", file, strerror(errno));
            return EXIT_IOERR;
        }
    }
    struct parser *p = parser_new(ops, run_emit_event, &r);
    p->opt_columns = columns;
    struct feed_opts fo = {
        .name = exec_cmd ? exec_cmd : is_stdin ? "<stdin>" : file,
        .path = exec_cmd || is_stdin ? NULL : file,
        .source = exec_cmd ? exec_cmd : is_stdin ? "-" : file,
        .host = host ? host : cli_hostname(),
        .quiet = quiet,
        .max_reports = 20,
    };
    struct feed_stats st = { 0 };
    int rc = feed_fd(p, fd, &fo, &st);
    engine_flush(r.eng);
    for (size_t i = 0; i < r.nsinks; i++) {
        if (sink_drain(r.sinks[i], 10000) > 0) rc = GL_ERROR;
    }
    const struct engine_stats *es = engine_get_stats(r.eng);
    if (r.live) live_summary(r.live, r.eng);
    fprintf(stderr,
            "gpulog run: %s: %llu lines, %llu events, %llu rejected; %llu samples, %llu GPUs, %llu series, "
            "%llu out-of-order dropped, %llu duplicates, %llu gaps; anomalies: %llu started, %llu changed, "
            "%llu ended, %llu still open\n",
            fo.name, (unsigned long long)st.lines, (unsigned long long)st.events,
            (unsigned long long)st.rejected, (unsigned long long)es->samples, (unsigned long long)es->gpus,
            (unsigned long long)es->series, (unsigned long long)es->out_of_order,
            (unsigned long long)es->duplicates, (unsigned long long)es->gaps, (unsigned long long)es->starts,
            (unsigned long long)es->changes, (unsigned long long)es->ends, (unsigned long long)es->open);
    if (r.failed_writes) {
        fprintf(stderr, "gpulog run: %llu records could not be written\n", (unsigned long long)r.failed_writes);
        rc = GL_ERROR;
    }
    parser_free(p);
    if (child > 0) {
        kill(-child, SIGTERM);
        int wst;
        waitpid(child, &wst, 0);
        argv_free(cargv);
    }
    if (!is_stdin) close(fd);
    for (size_t i = 0; i < r.nsinks; i++) sink_free(r.sinks[i]);
    engine_free(r.eng);
    live_free(r.live);
    profile_free(prof);
    buf_free(&r.json);
    es_cli_free(&ro.es);
    return rc == GL_OK ? EXIT_OK : EXIT_IOERR;
}
