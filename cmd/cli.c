/* cli.c - helpers the subcommands share (see cli.h). */
#include "cli.h"
#include "../core/config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdarg.h>
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

/* Builds getopt_long's table and short-option string from a flag table;
 * the caller frees both. A short letter takes a value when has_arg says so. */
struct option *cli_options(const struct cli_flag *f, size_t n, char **shortopts)
{
    struct option *o = xcalloc(n + 2, sizeof *o);
    struct buf s;
    buf_init(&s);
    buf_puts(&s, ":h");
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (f[i].name) o[k++] = (struct option){ f[i].name, f[i].has_arg, NULL, f[i].val };
        if (f[i].val > 0 && f[i].val < 128) {
            buf_putc(&s, (char)f[i].val);
            if (f[i].has_arg == required_argument) buf_putc(&s, ':');
        }
    }
    o[k] = (struct option){ "help", no_argument, NULL, 'h' };
    *shortopts = s.p;
    return o;
}

/* Prints the --help lines of the flags that have a text: the flag column,
 * then the text, its later lines indented to the text's column. */
void cli_flag_help(const struct cli_flag *f, size_t n, int section)
{
    for (size_t i = 0; i < n; i++) {
        if (!f[i].shown || f[i].section != section) continue;
        const char *t = f[i].help;
        size_t w = strlen(f[i].shown);
        size_t len = strcspn(t, "\n");
        if (w <= 20) printf("  %-22s%.*s\n", f[i].shown, (int)len, t);
        else printf("  %s  %.*s\n", f[i].shown, (int)len, t);
        for (t += len; *t; t += len) {
            t++;
            len = strcspn(t, "\n");
            printf("%24s%.*s\n", "", (int)len, t);
        }
    }
}
