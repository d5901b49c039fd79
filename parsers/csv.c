/* csv.c - placeholder: this format is not implemented yet. */
#include "parser.h"

static int csv_feed(struct parser *p, void *st, const struct line_src *src,
                      const char *line, size_t len)
{
    (void)st; (void)src; (void)line; (void)len;
    return parser_error(p, "format csv is not implemented yet");
}

const struct parser_ops parser_csv = {
    .name = "csv",
    .help = "compact CSV with units in values, generic CSV time series with a header",
    .feed = csv_feed,
};
