/* cmd_detect.c - placeholder until `gpulog detect` is implemented. */
#include "../core/cli.h"

#include <stdio.h>

int cmd_detect(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "gpulog detect: not implemented yet\n");
    return EXIT_USAGE;
}
