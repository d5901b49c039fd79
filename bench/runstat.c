/*
 * runstat.c - runs a command with stdout sent to /dev/null and prints its
 * wall time, CPU time (user+sys), peak resident set size (ru_maxrss: every
 * page, shared-library pages included) and the peak of its anonymous
 * (private heap/stack) RSS, sampled from /proc/PID/status every 5 ms:
 *   "wall_s=1.234 cpu_s=1.200 maxrss_kb=9400 anon_kb=420 status=0"
 * The child is started with vfork, so the only memory counted besides the
 * command's own is this small program's (run it on /bin/true to see that
 * floor).   runstat CMD [ARGS...]
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* RssAnon of pid in KiB, or -1. */
static long rss_anon_kb(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    long v = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "RssAnon:", 8)) { v = atol(line + 8); break; }
    fclose(f);
    return v;
}

int main(int argc, char **argv)
{
    if (argc < 2) { fprintf(stderr, "usage: runstat CMD [ARGS...]\n"); return 2; }
    int devnull = open("/dev/null", O_WRONLY);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    pid_t pid = vfork();
    if (pid == 0) {
        dup2(devnull, 1);
        execvp(argv[1], argv + 1);
        _exit(127);
    }
    if (pid < 0) { perror("vfork"); return 1; }
    int status = 0;
    struct rusage ru;
    long anon = 0;
    for (;;) {
        pid_t r = wait4(pid, &status, WNOHANG, &ru);
        if (r == pid) break;
        if (r < 0) { perror("wait4"); return 1; }
        long v = rss_anon_kb(pid);
        if (v > anon) anon = v;
        struct timespec ts = { 0, 5 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    double wall = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    double cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                 (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
    printf("wall_s=%.3f cpu_s=%.3f maxrss_kb=%ld anon_kb=%ld status=%d\n", wall, cpu, ru.ru_maxrss, anon,
           WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    return 0;
}
