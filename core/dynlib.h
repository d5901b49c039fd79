/*
 * dynlib.h - what the rest of gpulog may ask of the dlopen() loader
 * (core/dynlib.c, core/dynlib_kafka.c) besides the libraries' own entry
 * points: which librdkafka it loads.
 */
#ifndef GPULOG_DYNLIB_H
#define GPULOG_DYNLIB_H

#include <stddef.h>

/* The librdkafka gpulog loads (opening it now if it is not open yet): its
 * version (rd_kafka_version_str) into ver and the file it was loaded from
 * into path, return 0; -1 when it cannot be loaded, with why in path
 * (nothing ends: `gpulog --version` says so). Both buffers are the
 * caller's. */
int dynlib_kafka_info(char *ver, size_t vn, char *path, size_t pn);

#endif
