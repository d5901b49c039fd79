/* cli.c - helpers the subcommands share (see cli.h). */
#include "cli.h"
#include "../core/config.h"
#include "../parsers/fieldname.h"
#include "../parsers/parser.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void cli_catch_signals(void (*handler)(int))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    /* SIGQUIT stops too (no core dump): a shell starts background jobs
     * with it ignored, and that was inherited, so it did nothing */
    sigaction(SIGQUIT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

/* Overwrites the password of each URL in s (scheme://user:PASS@host). */
static void scrub_url_password(char *s)
{
    for (char *p = strstr(s, "://"); p; p = strstr(p, "://")) {
        char *host = p + 3;
        size_t auth = strcspn(host, "/?#");
        char *at = NULL;
        for (size_t i = 0; i < auth; i++) if (host[i] == '@') at = host + i;
        char *colon = at ? memchr(host, ':', (size_t)(at - host)) : NULL;
        if (colon) memset(colon + 1, '*', (size_t)(at - colon - 1));
        p = host;
    }
}

char **cli_scrub_argv(int argc, char **argv)
{
    static char **copy;   /* the process's argv from here on */
    copy = xcalloc((size_t)argc + 1, sizeof *copy);
    for (int i = 0; i < argc; i++) copy[i] = xstrdup(argv[i]);
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        scrub_url_password(a);
        char *k = a, *eq = strchr(a, '=');
        if (!strncmp(k, "-X", 2)) k += 2;
        while (*k == '-') k++;
        if (eq && eq > k && config_secret_key(k, (size_t)(eq - k))) memset(eq + 1, '*', strlen(eq + 1));
    }
    return copy;
}

int cli_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return 1;
    return 0;
}

int cli_apply_map(const struct gpulog_config *cfg, char *err, size_t errlen)
{
    const char *const *pairs = (const char *const *)cfg->map.kv;
    if (fn_map_set(pairs, cfg->map.n, err, errlen)) return GL_ERROR;
    return parser_labels_set((const char *const *)cfg->labels.kv, cfg->labels.n, err, errlen) ? GL_ERROR : GL_OK;
}

const char *cli_host(const char *given)
{
    static char name[256];
    if (given && *given) return given;
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
    char *m = NULL;
    if (vasprintf(&m, fmt, ap) < 0) m = NULL;
    va_end(ap);
    /* the message may quote an argument: through the logger's escaping */
    gl_say(GL_LOG_ERROR, "gpulog %s: %s\n(see 'gpulog %s --help')", cmd, m ? m : fmt, cmd);
    free(m);
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

/* Writes getopt_long entries of a command's own flags into opts (at most
 * max) and appends their letters to shortopts; aborts when they do not fit
 * (a program error). Returns the number of entries. */
size_t cli_options(const struct cli_flag *f, size_t n, struct option *opts, size_t max, char *shortopts, size_t shortlen)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        config_option_add(opts, &k, max, shortopts, shortlen, f[i].name, f[i].has_arg, f[i].val, f[i].val,
                          f[i].name ? f[i].name : "?");
    return k;
}

/* Prints the --help lines of the flags that have a text, in the layout of
 * the key flags (config_help_entry). */
void cli_flag_help(const struct cli_flag *f, size_t n, int section)
{
    struct buf b;
    buf_init(&b);
    for (size_t i = 0; i < n; i++)
        if (f[i].shown && f[i].section == section) config_help_entry(&b, f[i].shown, f[i].help);
    if (b.p) fputs(b.p, stdout);
    buf_free(&b);
}

void cli_option_table(const struct cli_flag *own, size_t nown, const char *const *keys, const struct option *extra,
                      size_t nextra, struct option *opts, size_t max, char *shortopts, size_t shortlen)
{
    if (max < nextra + 2) abort();
    size_t room = max - nextra - 2;
    size_t n = cli_options(own, nown, opts, room, shortopts, shortlen);
    n += config_flag_options(keys, opts + n, room - n, shortopts, shortlen);
    for (size_t i = 0; i < nextra; i++) opts[n++] = extra[i];
    opts[n] = (struct option){ "help", no_argument, NULL, 'h' };
    opts[n + 1] = (struct option){ NULL, 0, NULL, 0 };
}

void cli_key_help(const char *const *keys)
{
    struct buf b;
    buf_init(&b);
    config_flag_help(keys, &b);
    if (b.p) fputs(b.p, stdout);
    buf_free(&b);
}
