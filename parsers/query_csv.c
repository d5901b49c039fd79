/* query_csv.c - placeholder: this format is not implemented yet. */
#include "parser.h"

static int query_csv_feed(struct parser *p, void *st, const struct line_src *src,
                      const char *line, size_t len)
{
    (void)st; (void)src; (void)line; (void)len;
    return parser_error(p, "format query-csv is not implemented yet");
}

const struct parser_ops parser_query_csv = {
    .name = "query-csv",
    .help = "nvidia-smi --query-gpu/--query-compute-apps --format=csv[,noheader][,nounits]",
    .feed = query_csv_feed,
};
