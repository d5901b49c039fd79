/*
 * dynlib_int.h - what the files of the dlopen() loader share: dynlib.c
 * (the loader, libcurl, libmicrohttpd) and dynlib_kafka.c (librdkafka).
 * Private to them; see dynlib.c for why.
 */
#ifndef GPULOG_DYNLIB_INT_H
#define GPULOG_DYNLIB_INT_H

#include <pthread.h>
#include <stddef.h>

/* One library loaded on first use: its sonames (tried in order), the
 * Debian package that has it, and the handle once open (under mu). */
struct dlib {
    const char *const names[3];
    const char *package;
    void *h;
    pthread_mutex_t mu;
};

/* The address of symbol name in l, opening l first; a library or symbol
 * that is missing ends the process with the package to install. */
void *dynlib_sym(struct dlib *l, const char *name);

/* l's handle, opening it first; NULL when none of its names loads (then
 * why, dlerror()'s text, is written to err; nothing ends). */
void *dynlib_open(struct dlib *l, char *err, size_t errlen);

/* Resolves the real function F once, typed like our own definition of it
 * (SYM names the symbol when it differs, e.g. MHD_start_daemon_va). */
#define RESOLVE_AS(lib, T, SYM) \
    static T real_; \
    if (!real_) *(void **)&real_ = dynlib_sym(&lib##_lib, SYM)

#endif
