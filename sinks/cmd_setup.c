/* cmd_setup.c - placeholder until `gpulog setup` is implemented. */
#include "../core/cli.h"

#include <stdio.h>

int cmd_setup(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "gpulog setup: not implemented yet\n");
    return EXIT_USAGE;
}
