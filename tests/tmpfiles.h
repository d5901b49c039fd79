/*
 * tmpfiles.h - a private temporary directory for a unit-test binary of
 * ingest/ (test_collect_units, test_tail) and small file helpers.
 */
#ifndef GPULOG_TEST_TMPFILES_H
#define GPULOG_TEST_TMPFILES_H

#include <stdio.h>
#include <stdlib.h>

static char tmpdir[256];

/* The path of name in tmpdir (static storage: the next call overwrites it). */
static inline char *tpath(const char *name)
{
    static char p[512];
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    return p;
}

/* Writes s to path (appends when append is set). */
static inline void write_file(const char *path, const char *s, int append)
{
    FILE *f = fopen(path, append ? "a" : "w");
    fputs(s, f);
    fclose(f);
}

/* Makes tmpdir under $TMPDIR (or /tmp) named after tag. 0, or -1 with a message. */
static inline int tmpdir_make(const char *tag)
{
    snprintf(tmpdir, sizeof tmpdir, "%s/%s.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", tag);
    if (!mkdtemp(tmpdir)) { perror("mkdtemp"); return -1; }
    return 0;
}

/* Removes tmpdir and everything in it. */
static inline void tmpdir_remove(void)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) printf("warning: could not remove %s\n", tmpdir);
}

#endif
