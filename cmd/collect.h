/* collect.h - `gpulog collect`'s flags (collect_flags.c), shared with collect.c. */
#ifndef GPULOG_CMD_COLLECT_H
#define GPULOG_CMD_COLLECT_H

#include "cli.h"

/* codes of its own flags without a short letter */
enum { O_ONCE = 256, O_KEEP, O_MAXLINE, O_KMSG, O_CONFIG };

/* the configuration keys it offers as flags (NULL-terminated), its own flags */
extern const char *const collect_keys[];
extern const struct cli_flag collect_flags[];
extern const size_t collect_nflags;
void collect_help(void);

#endif
