/* registry.c - the source kinds by name (source.h): a new source is one
 * file with its source_ops and one row here. */
#include "source.h"

#include <string.h>

extern const struct source_ops src_file, src_exec, src_stdin, src_kmsg, src_fd, src_kafka;

static const struct source_ops *const kinds[] = {
    &src_file, &src_exec, &src_stdin, &src_kmsg, &src_fd, &src_kafka,
};

const struct source_ops *source_find(const char *name)
{
    for (size_t i = 0; i < GL_ARRAY_LEN(kinds); i++)
        if (!strcmp(kinds[i]->name, name)) return kinds[i];
    return NULL;
}

void source_kinds_turn(int64_t now_ms)
{
    for (size_t i = 0; i < GL_ARRAY_LEN(kinds); i++)
        if (kinds[i]->turn) kinds[i]->turn(now_ms);
}
