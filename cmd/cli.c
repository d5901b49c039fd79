/* cli.c - helpers the subcommands share (see cli.h). */
#include "cli.h"

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
