/* pmon.c - placeholder: this format is not implemented yet. */
#include "parser.h"

static int pmon_feed(struct parser *p, void *st, const struct line_src *src,
                      const char *line, size_t len)
{
    (void)st; (void)src; (void)line; (void)len;
    return parser_error(p, "format pmon is not implemented yet");
}

const struct parser_ops parser_pmon = {
    .name = "pmon",
    .help = "nvidia-smi pmon (one event per GPU and process)",
    .feed = pmon_feed,
};
