/* collect.h - `gpulog collect`: its flags (collect_flags.c) and what they ask for (struct collector, collect.c). */
#ifndef GPULOG_CMD_COLLECT_H
#define GPULOG_CMD_COLLECT_H

#include "cli.h"
#include "../core/config.h"
#include "../ingest/pipeline.h"

/* codes of its own flags without a short letter */
enum { O_ONCE = 256, O_KEEP, O_MAXLINE, O_KMSG, O_CONFIG };

/* the configuration keys it offers as flags (NULL-terminated), its own flags */
extern const char *const collect_keys[];
extern const struct cli_flag collect_flags[];
extern const size_t collect_nflags;
void collect_help(void);

/* A source to open: its kind, argument and format. */
struct planned { const char *kind, *arg, *format; };

/* What the flags and the configuration ask for (strings borrowed from argv and cfg). */
struct collector {
    const char *format, *output, *brokers;
    const struct config_key *kafka_flag;   /* a Kafka-only flag given on the command line */
    int cleared;
    struct pipeline_opts po;
    struct planned *plan;                  /* sources to open: commands, stdin, kmsg */
    size_t nplan;
    struct file_scan *fs;                  /* the --file patterns */
    struct pipeline *pl;
    char *state_dir_own;          /* the state dir when it had to be cut out of a list */
    struct buf dl;                /* the dead-letter file */
};

/* Reads the flags into cfg and c (collect_flags.c). EXIT_OK or a usage error. */
int collect_read_flags(struct collector *c, struct gpulog_config *cfg, int argc, char **argv);

#endif
