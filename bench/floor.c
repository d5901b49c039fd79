/*
 * floor.c - the benchmark's baseline: the least work that still turns a dmon
 * capture into JSON text. Reads with fgets, takes the column names from the
 * first '#' header, splits each data line on blanks and prints it as
 * {"name":"value",...} with printf. No types, no timestamps, no validation:
 * a floor to compare `gpulog parse` against, not a parser.
 *   floor FILE > /dev/null
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXC 128

int main(int argc, char **argv)
{
    if (argc < 2) { fprintf(stderr, "usage: floor FILE\n"); return 2; }
    FILE *f = fopen(argv[1], "r");
    if (!f) { perror(argv[1]); return 1; }
    static char obuf[1 << 16];
    setvbuf(stdout, obuf, _IOFBF, sizeof obuf);
    char line[4096];
    char names[MAXC][32];
    int ncol = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') {
            if (ncol == 0) {
                for (char *tok = strtok(line + 1, " \t\r\n"); tok && ncol < MAXC; tok = strtok(NULL, " \t\r\n"))
                    snprintf(names[ncol++], sizeof names[0], "%s", tok);
            }
            continue;
        }
        int i = 0;
        putchar('{');
        for (char *tok = strtok(line, " \t\r\n"); tok && i < ncol; tok = strtok(NULL, " \t\r\n"), i++)
            printf("%s\"%s\":\"%s\"", i ? "," : "", names[i], tok);
        fputs("}\n", stdout);
    }
    fclose(f);
    return 0;
}
