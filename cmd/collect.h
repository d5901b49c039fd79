/* collect.h - `gpulog collect`'s flag table (collect_flags.c), shared with collect.c. */
#ifndef GPULOG_CMD_COLLECT_H
#define GPULOG_CMD_COLLECT_H

#include "cli.h"

/* codes of the flags without a short letter */
enum { O_TZ = 256, O_EVTOPIC, O_ONCE, O_SPOOLMAX, O_SHUTDOWN, O_STALE, O_STATS, O_KEEP, O_MAXLINE, O_KMSG,
       O_CONFIG, O_METRICS, O_ROTGENS, O_ROTAGE, O_YEAR };

extern const struct cli_flag collect_flags[];
extern const size_t collect_nflags;
void collect_help(void);

#endif
