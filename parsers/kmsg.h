/*
 * kmsg.h - helpers of the kernel-message parser (parsers/kmsg.c) that other
 * modules need: the collector reads boot-relative times to anchor them to
 * the wall clock.
 */
#ifndef GPULOG_KMSG_H
#define GPULOG_KMSG_H

#include <stddef.h>

/* If line (borrowed, len bytes) carries a boot-relative kernel time, either
 * as a dmesg "[ 1843.308145] " prefix (possibly after a syslog or facility
 * prefix) or as a /dev/kmsg record "6,1234,1843308145,-;...", stores it in
 * *secs (seconds since boot) and returns 1; else returns 0. */
int kmsg_prefix_uptime(const char *line, size_t len, double *secs);

/* 1 when line has the shape of a kernel log line: a time, facility, host
 * or /dev/kmsg prefix in front of its message, or blanks (the continuation
 * of the record before); 0 for text without any (free text in a file that
 * is a kernel log). */
int kmsg_line_prefixed(const char *line, size_t len);

/* The year of syslog times, which have none (process-wide; set before
 * parsing): year > 0 pins it (--year); else it is inferred against ref_ms
 * (the input file's modification time: a 2025 log read in 2026 keeps 2025)
 * or, when ref_ms is 0, the read time: the reference's year unless that puts
 * the line more than a day after the reference, then the year before. */
void kmsg_syslog_year(int year, long long ref_ms);

#endif
