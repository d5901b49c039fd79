/* exec.c - command lines split without a shell, and children started with
 * stdout on a non-blocking pipe (supervision lives in cmd/collect.c). */
#include "source.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

char **argv_split(const char *cmd)
{
    size_t cap = 8, n = 0;
    char **v = xmalloc(cap * sizeof *v);
    struct buf w;
    buf_init(&w);
    const char *s = cmd;
    for (;;) {
        while (*s == ' ' || *s == '\t' || *s == '\n') s++;
        if (!*s) break;
        buf_reset(&w);
        buf_puts(&w, "");
        char q = 0;
        while (*s && (q || (*s != ' ' && *s != '\t' && *s != '\n'))) {
            if (q) {
                if (*s == q) { q = 0; s++; continue; }
                if (q == '"' && *s == '\\' && s[1] && strchr("\"\\$`", s[1])) s++;
                buf_putc(&w, *s++);
            } else if (*s == '\'' || *s == '"') {
                q = *s++;
            } else if (*s == '\\' && s[1]) {
                s++;
                buf_putc(&w, *s++);
            } else {
                buf_putc(&w, *s++);
            }
        }
        if (q) {
            buf_free(&w);
            v[n] = NULL;
            argv_free(v);
            return NULL;
        }
        if (n + 2 > cap) { cap *= 2; v = xrealloc(v, cap * sizeof *v); }
        v[n++] = xstrndup(w.p, w.len);
    }
    buf_free(&w);
    v[n] = NULL;
    if (n == 0) { argv_free(v); return NULL; }
    return v;
}

void argv_free(char **argv)
{
    if (!argv) return;
    for (char **p = argv; *p; p++) free(*p);
    free(argv);
}

int64_t argv_period_ms(char *const *argv)
{
    int dcgmi = argv[0] && strstr(argv[0], "dcgmi") != NULL;
    for (size_t i = 1; argv[i]; i++) {
        const char *a = argv[i], *v = argv[i + 1];
        double x;
        if (!strncmp(a, "--loop-ms=", 10) && gl_parse_double(a + 10, strlen(a + 10), &x)) return (int64_t)x;
        if (!strncmp(a, "--loop=", 7) && gl_parse_double(a + 7, strlen(a + 7), &x)) return (int64_t)(x * 1000);
        if (!v) break;
        if ((!strcmp(a, "-lms") || !strcmp(a, "--loop-ms")) && gl_parse_double(v, strlen(v), &x)) return (int64_t)x;
        /* dcgmi dmon -d is in milliseconds; nvidia-smi dmon/pmon -d and -l in seconds */
        if (!strcmp(a, "-d") && gl_parse_double(v, strlen(v), &x)) return dcgmi ? (int64_t)x : (int64_t)(x * 1000);
        if ((!strcmp(a, "-l") || !strcmp(a, "--loop")) && gl_parse_double(v, strlen(v), &x)) return (int64_t)(x * 1000);
    }
    return 1000;
}

pid_t exec_spawn(char *const *argv, int *fd, char *err, size_t errlen)
{
    int p[2], e[2];
    if (pipe2(p, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        return -1;
    }
    /* exec failure report channel: closed by a successful exec */
    if (pipe2(e, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        close(p[0]); close(p[1]);
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        close(p[0]); close(p[1]); close(e[0]); close(e[1]);
        return -1;
    }
    if (pid == 0) {
        setpgid(0, 0);
        /* a collector that dies (even by SIGKILL) must not leave its tools
         * running: the restarted collector starts new ones */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() == 1) _exit(127);
        signal(SIGPIPE, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0) { dup2(nul, 0); if (nul > 2) close(nul); }
        dup2(p[1], 1);
        execvp(argv[0], argv);
        int code = errno;
        ssize_t w = write(e[1], &code, sizeof code);
        (void)w;
        _exit(127);
    }
    close(p[1]);
    close(e[1]);
    int code = 0;
    ssize_t n;
    do n = read(e[0], &code, sizeof code); while (n < 0 && errno == EINTR);
    close(e[0]);
    if (n == (ssize_t)sizeof code) {
        snprintf(err, errlen, "%s: %s", argv[0], strerror(code));
        close(p[0]);
        int st;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
        return -1;
    }
    fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_NONBLOCK);
    *fd = p[0];
    return pid;
}
