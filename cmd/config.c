/* config.c - `gpulog config check|print|docs`: validate a configuration
 * file, show the effective configuration (secrets masked), and generate
 * docs/configuration.md from the key table. */
#include "cli.h"
#include "../core/config.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void config_usage(FILE *f)
{
    fprintf(f,
        "usage: gpulog config check FILE...\n"
        "       gpulog config print [FILE]\n"
        "\n"
        "check  validate FILE: prints 'FILE: ok' and exits 0, or one\n"
        "       FILE:LINE:COLUMN: message per problem and exits 2. Unknown keys,\n"
        "       wrong types and duplicate keys are errors.\n"
        "print  the effective configuration as YAML: built-in defaults, then FILE\n"
        "       (or $GPULOG_CONFIG), then GPULOG_<SECTION>_<KEY> environment\n"
        "       variables. Passwords, API keys and other secrets print as ***.\n"
        "       Command-line flags of collect/detect/run apply after all of these.\n"
        "\n"
        "Every key, its type, default and environment variable: docs/configuration.md\n"
        "(also printed by 'gpulog config docs').\n");
}

static int write_all(const struct buf *b)
{
    size_t off = 0;
    while (off < b->len) {
        ssize_t n = write(1, b->p + off, b->len - off);
        if (n <= 0) return EXIT_IOERR;
        off += (size_t)n;
    }
    return EXIT_OK;
}

static int config_check(int argc, char **argv)
{
    if (argc < 1) return cli_usage_error("config", "check needs a FILE");
    int rc = EXIT_OK;
    for (int i = 0; i < argc; i++) {
        struct gpulog_config cfg;
        char err[8192];
        config_defaults(&cfg);
        if (config_load(argv[i], &cfg, err, sizeof err) != GL_OK) {
            fprintf(stderr, "%s\n", err);
            rc = EXIT_USAGE;
        } else {
            printf("%s: ok\n", argv[i]);
        }
        config_free(&cfg);
    }
    return rc;
}

static int config_print_cmd(int argc, char **argv)
{
    if (argc > 1) return cli_usage_error("config", "print takes at most one FILE");
    struct gpulog_config cfg;
    char err[8192];
    if (config_init(&cfg, argc ? argv[0] : NULL, err, sizeof err) != GL_OK) {
        fprintf(stderr, "%s\n", err);
        config_free(&cfg);
        return EXIT_USAGE;
    }
    struct buf b;
    buf_init(&b);
    config_print(&cfg, 1, &b);
    int rc = write_all(&b);
    buf_free(&b);
    config_free(&cfg);
    return rc;
}

int cmd_config(int argc, char **argv)
{
    if (argc < 2) {
        config_usage(stderr);
        return EXIT_USAGE;
    }
    const char *sub = argv[1];
    if (!strcmp(sub, "--help") || !strcmp(sub, "-h") || !strcmp(sub, "help")) {
        config_usage(stdout);
        return EXIT_OK;
    }
    if (!strcmp(sub, "check")) return config_check(argc - 2, argv + 2);
    if (!strcmp(sub, "print")) return config_print_cmd(argc - 2, argv + 2);
    if (!strcmp(sub, "docs")) {   /* hidden: regenerates docs/configuration.md */
        struct buf b;
        buf_init(&b);
        config_docs(&b);
        int rc = write_all(&b);
        buf_free(&b);
        return rc;
    }
    return cli_usage_error("config", "unknown subcommand '%s' (check, print)", sub);
}
