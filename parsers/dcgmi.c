/* dcgmi.c - placeholder: this format is not implemented yet. */
#include "parser.h"

static int dcgmi_feed(struct parser *p, void *st, const struct line_src *src,
                      const char *line, size_t len)
{
    (void)st; (void)src; (void)line; (void)len;
    return parser_error(p, "format dcgmi is not implemented yet");
}

const struct parser_ops parser_dcgmi = {
    .name = "dcgmi",
    .help = "dcgmi dmon (GPU, GPU-I, GPU-CI rows; N/A, N/W)",
    .feed = dcgmi_feed,
};
