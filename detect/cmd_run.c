/* cmd_run.c - placeholder until `gpulog run` is implemented. */
#include "../core/cli.h"

#include <stdio.h>

int cmd_run(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "gpulog run: not implemented yet\n");
    return EXIT_USAGE;
}
