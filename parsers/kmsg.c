/* kmsg.c - placeholder: this format is not implemented yet. */
#include "parser.h"

static int kmsg_feed(struct parser *p, void *st, const struct line_src *src,
                      const char *line, size_t len)
{
    (void)st; (void)src; (void)line; (void)len;
    return parser_error(p, "format kmsg is not implemented yet");
}

const struct parser_ops parser_kmsg = {
    .name = "kmsg",
    .help = "kernel messages: NVRM Xid, NVSwitch SXid, NVLink5, fallen off the bus",
    .feed = kmsg_feed,
};
