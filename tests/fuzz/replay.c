/*
 * replay.c - a main() for the fuzz targets without libFuzzer: runs every file
 * of the directories (or files) given through LLVMFuzzerTestOneInput. Used by
 * scripts/test.sh on tests/fuzz/corpus/<target>/ so every saved input keeps
 * passing; a crash or abort() fails the run. Ends with "N passed, 0 failed";
 * a missing or empty corpus counts as one failure.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); return -1; }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    size_t k;
    while (buf && (k = fread(buf + n, 1, cap - n, f)) > 0) {
        n += k;
        if (n == cap) buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    if (!buf) return -1;
    /* an exact-size copy so ASan sees reads past the end */
    uint8_t *exact = malloc(n ? n : 1);
    memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 0;
}

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    int passed = 0, failed = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) { printf("FAIL %s: missing\n", argv[i]); failed++; continue; }
        if (!S_ISDIR(st.st_mode)) {
            if (run_file(argv[i]) == 0) passed++; else failed++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (!d) { perror(argv[i]); failed++; continue; }
        char **names = NULL;
        size_t nn = 0, cap = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.') continue;
            if (nn == cap) names = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof *names);
            names[nn++] = strdup(e->d_name);
        }
        closedir(d);
        qsort(names, nn, sizeof *names, cmp);
        if (nn == 0) { printf("FAIL %s: empty corpus\n", argv[i]); failed++; }
        for (size_t j = 0; j < nn; j++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], names[j]);
            printf("run  %s\n", path);
            fflush(stdout);
            if (run_file(path) == 0) passed++; else failed++;
            free(names[j]);
        }
        free(names);
    }
    if (argc < 2) { printf("usage: replay DIR|FILE...\n"); failed++; }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
