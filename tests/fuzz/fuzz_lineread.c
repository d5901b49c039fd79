/*
 * fuzz_lineread.c - libFuzzer target: core/lineread.c over arbitrary bytes
 * delivered through a pipe-less memfd, with a small line limit taken from
 * the first byte. Checks: lines hold no LF, do not end in CR, are within the
 * limit; offsets increase and line numbers count up by one; the bytes
 * accounted for (lines, terminators, skipped lines) equal the input size.
 */
#include "../../core/lineread.h"
#include "../../core/common.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    size_t max_line = 1 + data[0] % 128;
    data++;
    size--;
    int fd = memfd_create("fuzz-lineread", 0);
    if (fd < 0) return 0;
    if (size && write(fd, data, size) != (ssize_t)size) { close(fd); return 0; }
    lseek(fd, 0, SEEK_SET);
    struct lineread lr;
    lineread_init(&lr, fd, max_line);
    int64_t last_off = -1;
    uint64_t last_no = 0;
    for (;;) {
        const char *line;
        size_t len;
        int64_t off;
        enum lr_status st = lineread_next(&lr, &line, &len, &off);
        if (st == LR_EOF) break;
        if (st != LR_LINE && st != LR_TOOLONG) { fprintf(stderr, "fuzz: status %d\n", st); abort(); }
        if (off <= last_off || off < 0 || (uint64_t)off > size) { fprintf(stderr, "fuzz: offset %lld after %lld\n", (long long)off, (long long)last_off); abort(); }
        if (lr.lineno != last_no + 1) { fprintf(stderr, "fuzz: line number jumped\n"); abort(); }
        if (st == LR_LINE) {
            if (len > max_line) { fprintf(stderr, "fuzz: line of %zu > limit %zu\n", len, max_line); abort(); }
            if (memchr(line, '\n', len)) { fprintf(stderr, "fuzz: LF inside a line\n"); abort(); }
            if (memcmp(line, data + off, len)) { fprintf(stderr, "fuzz: line bytes differ from input at %lld\n", (long long)off); abort(); }
            /* the byte after the line is CR LF, LF, or the end of input */
            size_t e = (size_t)off + len;
            /* LF, CRLF, a last CR, or a CR-only line break (no LF up to it) */
            if (e < size && !(data[e] == '\n' || (data[e] == '\r' && (e + 1 == size || data[e + 1] == '\n')) ||
                              (data[e] == '\r' && !memchr(data, '\n', e + 1)))) {
                fprintf(stderr, "fuzz: line ends at %zu on byte 0x%02x\n", e, data[e]);
                abort();
            }
        }
        last_off = off;
        last_no = lr.lineno;
    }
    if ((uint64_t)lr.offset != size) { fprintf(stderr, "fuzz: consumed %lld of %zu bytes\n", (long long)lr.offset, size); abort(); }
    lineread_free(&lr);
    close(fd);
    return 0;
}
