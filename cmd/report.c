/* report.c - `gpulog report`: `run`'s reading and detectors, with the HTML
 * page of detect/report.h as the only output. */
#include "cli.h"

#include <stdio.h>

static void report_help(void)
{
    printf(
        "usage: gpulog report [--format F] [--tz ZONE] [--detectors FILE|--profile gpu|generic]\n"
        "                     [--host NAME] [--columns LIST] [-o report.html] [FILE|-|--exec CMD]\n"
        "\n"
        "Reads FILE (or stdin), runs the anomaly detectors over it as gpulog run\n"
        "does and writes one self-contained HTML page (no network needed to open\n"
        "it): the node, time range and GPUs; the incidents found, most severe\n"
        "first; per GPU, temperature (with the limit), power, SM clock,\n"
        "utilisation and framebuffer charts on one time axis with the episodes\n"
        "shaded and ECC/PCIe/Xid markers; a GPUs x time heat strip. Long inputs\n"
        "are reduced to a min/max envelope per column, so spikes stay visible.\n"
        "`gpulog run --report FILE` writes the same page next to its usual output.\n"
        "\n"
        "options:\n"
        "  -o, --output FILE   the page (default report.html; - for stdout)\n"
        "  -f, --format F      input format, as for gpulog parse (default auto)\n"
        "      --tz ZONE       zone of tool timestamps (default: local zone); the\n"
        "                      page shows UTC\n"
        "  -d, --detectors FILE  detector configuration (docs/detectors.md)\n"
        "  -p, --profile NAME  built-in profile when no --detectors: gpu (default) or generic\n"
        "  -H, --host NAME     host.name of the events (default: this machine)\n"
        "      --columns LIST  column names for header-less CSV\n"
        "      --exec CMD      run CMD (no shell) and read its standard output\n"
        "  -q, --quiet         do not print rejected input lines\n"
        "      --config FILE   gpulog configuration, as for gpulog run\n"
        "\n"
        "The page is written to a temporary file beside FILE and renamed over it.\n"
        "Stopped by SIGTERM or SIGINT, it writes a page marked partial and exits 1.\n"
        "\n"
        "Exit status: 0 when the page of the whole input was written, 1 on an I/O\n"
        "error or a partial page, 2 on a usage error.\n");
}

int cmd_report(int argc, char **argv)
{
    static const struct run_mode mode = { "report", report_help, 1 };
    return run_main(&mode, argc, argv);
}
