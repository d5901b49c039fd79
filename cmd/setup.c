/*
 * setup.c - `gpulog setup`: parses the flags and runs sinks/es_setup.h, which
 * installs what the ES sink writes into (lifecycle policies, component and
 * index templates, data streams, Kibana saved objects; idempotent).
 */
#include "cli.h"
#include "../sinks/es_cli.h"
#include "../sinks/es_setup.h"

#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Writes setup's --help to stdout. */
static void setup_help(void)
{
    printf(
        "usage: gpulog setup --es URL [--kibana URL] [--namespace NS] [--schemas-dir DIR]\n"
        "                    [auth options]\n"
        "\n"
        "Installs into Elasticsearch or OpenSearch (detected with GET /, else with\n"
        "GET /_nodes/_local: Elasticsearch 9 answers 405 on GET /) what\n"
        "gpulog's ES sink writes into, and says for each object whether it was\n"
        "created, updated or unchanged (a second run changes nothing):\n"
        "  - lifecycle policies gpulog-logs (90 days) and gpulog-metrics (30 days):\n"
        "    ILM on Elasticsearch, else its data stream lifecycle (data_retention\n"
        "    in the index templates); ISM on OpenSearch when the plugin is installed\n"
        "    (otherwise retention is not managed, and setup says so)\n"
        "  - component templates gpulog-settings, gpulog-mappings and index templates\n"
        "    for the data streams logs-gpu.xid-*, logs-gpu.anomaly-*, metrics-gpu.dmon-*\n"
        "  - the data streams of namespace NS (default: default); where the cluster\n"
        "    has no data stream API, setup says so and the first write creates them\n"
        "  - with --kibana URL: the saved objects of schemas/kibana/*.ndjson (data\n"
        "    views and dashboards), imported with overwrite=true\n"
        "\n"
        "options:\n"
        "      --es URL           the cluster (http[s]://[user:pass@]host:port)\n"
        "      --kibana URL       Kibana to import the dashboards into\n"
        "      --namespace NS     data stream namespace (default: default)\n"
        "      --schemas-dir DIR  where es/ and kibana/ are (default: $GPULOG_SCHEMAS,\n"
        "                         else <binary>/../schemas, <binary>/../share/gpulog/schemas,\n"
        "                         /usr/share/gpulog/schemas, ./schemas: the first that has\n"
        "                         es/component_template.gpulog-mappings.json)\n"
        "      --es-user USER     basic auth user; password from GPULOG_ES_PASSWORD or\n"
        "                         --es-password-file FILE\n"
        "      --es-api-key-file FILE  API key (else GPULOG_ES_API_KEY)\n"
        "      --es-ca FILE, --es-cert FILE, --es-key FILE  TLS\n"
        "Time limits: each request to the cluster gives up after 60 s (10 s to\n"
        "connect), the Kibana import after 120 s; a request that runs out of time\n"
        "fails setup, naming it. Running setup again is safe (it changes nothing\n"
        "that is already as wanted).\n"
        "Exit status: 0 all installed that the cluster can hold (what it cannot is\n"
        "reported as NOT installed, with the reason), 1 a request failed or timed\n"
        "out, 2 usage error.\n");
}

/* `gpulog setup`: flags, the schemas directory, then es_setup. Returns the
 * exit status (EXIT_IOERR when the cluster is unreachable or a request failed). */
int cmd_setup(int argc, char **argv)
{
    static const struct option opts[] = {
        ES_CLI_LONGOPTS,
        { "kibana", required_argument, NULL, 'k' },
        { "schemas-dir", required_argument, NULL, 's' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    struct es_cli cli;
    es_cli_init(&cli);
    const char *schemas = NULL, *kibana = NULL;
    char schemas_buf[PATH_MAX], err[GL_ERRLEN];
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'k': kibana = optarg; break;
        case 's': schemas = optarg; break;
        case 'h': setup_help(); es_cli_free(&cli); return EXIT_OK;
        case ':': es_cli_free(&cli); return cli_usage_error("setup", "%s needs a value", argv[optind - 1]);
        case '?': es_cli_free(&cli); return cli_usage_error("setup", "unknown option %s", argv[optind - 1]);
        default: {
            int r = es_cli_opt(&cli, c, optarg, err, sizeof err);
            if (r <= 0) {
                es_cli_free(&cli);
                return cli_usage_error("setup", "%s", r < 0 ? err : "unknown option");
            }
        }
        }
    }
    if (optind < argc) { es_cli_free(&cli); return cli_usage_error("setup", "unexpected argument %s", argv[optind]); }
    if (!cli.conf.url) { es_cli_free(&cli); return cli_usage_error("setup", "--es URL is required"); }
    if (es_cli_finish(&cli, err, sizeof err) != GL_OK ||
        !(schemas = es_setup_schemas(schemas, schemas_buf, sizeof schemas_buf, err, sizeof err))) {
        es_cli_free(&cli);
        return cli_usage_error("setup", "%s", err);
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    struct es_setup *s = es_setup_new(&cli.conf, schemas, kibana);
    int rc = EXIT_OK;
    if (es_setup_identify(s, err, sizeof err) != GL_OK) {
        char masked[512];
        es_url_masked(cli.conf.url, masked, sizeof masked);
        gl_say(GL_LOG_ERROR, "gpulog setup: %s: %s\n", masked, err);
        rc = EXIT_IOERR;
    } else if (es_setup_install(s) != GL_OK) {
        rc = EXIT_IOERR;
    }
    es_setup_free(s);
    es_cli_free(&cli);
    return rc;
}
