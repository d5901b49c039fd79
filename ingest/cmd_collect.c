/* cmd_collect.c - placeholder until `gpulog collect` is implemented. */
#include "../core/cli.h"

#include <stdio.h>

int cmd_collect(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "gpulog collect: not implemented yet\n");
    return EXIT_USAGE;
}
