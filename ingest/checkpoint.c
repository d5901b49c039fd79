/* checkpoint.c - atomic checkpoint files and file fingerprints (see source.h). */
#include "source.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *ckpt_path(const char *dir, const char *kind, const char *source)
{
    struct buf b;
    buf_init(&b);
    buf_printf(&b, "%s/ckpt-%s-%016" PRIx64, dir, kind, hash64(source, strlen(source), 0x67706c6f67ULL));
    return b.p;
}

int atomic_write_file(const char *path, const char *data, size_t len, char *err, size_t errlen)
{
    struct buf tmp;
    buf_init(&tmp);
    buf_printf(&tmp, "%s.tmp", path);
    int fd = open(tmp.p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) goto fail;
    size_t off = 0;
    while (off < len) {
        ssize_t n = write(fd, data + off, len - off);
        if (n < 0) {
            if (errno == EINTR) continue;
            close(fd);
            goto fail;
        }
        off += (size_t)n;
    }
    if (fsync(fd) != 0) { close(fd); goto fail; }
    if (close(fd) != 0) goto fail;
    if (rename(tmp.p, path) != 0) goto fail;
    /* make the rename itself durable */
    char *dir = xstrdup(path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0'; else strcpy(dir, ".");
    int dfd = open(slash && dir[0] ? dir : (slash ? "/" : "."), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) { fsync(dfd); close(dfd); }
    free(dir);
    buf_free(&tmp);
    return GL_OK;
fail:
    snprintf(err, errlen, "%s: %s", tmp.p, strerror(errno));
    unlink(tmp.p);
    buf_free(&tmp);
    return GL_ERROR;
}

int ckpt_save(const char *path, const struct ckpt *c, char *err, size_t errlen)
{
    struct buf b;
    buf_init(&b);
    buf_printf(&b, "version=1\ndev=%" PRIu64 "\nino=%" PRIu64 "\nfp=%s\nfp_len=%u\n"
               "offset=%" PRId64 "\ngen=%" PRIu64 "\nkmsg_seq=%" PRIu64 "\nboot_id=%s\nhdr=",
               c->dev, c->ino, c->fp, c->fp_len, c->offset, c->gen, c->kmsg_seq, c->boot_id);
    static const char hex[] = "0123456789abcdef";
    for (uint32_t i = 0; i < c->hdr_len && i < sizeof c->hdr; i++) {
        buf_putc(&b, hex[(unsigned char)c->hdr[i] >> 4]);
        buf_putc(&b, hex[(unsigned char)c->hdr[i] & 15]);
    }
    buf_putc(&b, '\n');
    int r = atomic_write_file(path, b.p, b.len, err, errlen);
    buf_free(&b);
    return r;
}

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    return -1;
}

int ckpt_load(const char *path, struct ckpt *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    FILE *f = fopen(path, "re");
    if (!f) {
        if (errno == ENOENT) return GL_DONE;
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return GL_ERROR;
    }
    char *line = NULL;
    size_t cap = 0;
    int have_offset = 0, version = 0, bad = 0;
    while (getline(&line, &cap, f) > 0) {
        line[strcspn(line, "\n")] = '\0';
        char *eq = strchr(line, '=');
        if (!eq) continue;
        *eq = '\0';
        const char *k = line, *v = eq + 1;
        if (!strcmp(k, "version")) version = atoi(v);
        else if (!strcmp(k, "dev")) c->dev = strtoull(v, NULL, 10);
        else if (!strcmp(k, "ino")) c->ino = strtoull(v, NULL, 10);
        else if (!strcmp(k, "fp")) snprintf(c->fp, sizeof c->fp, "%s", v);
        else if (!strcmp(k, "fp_len")) c->fp_len = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(k, "offset")) { c->offset = strtoll(v, NULL, 10); have_offset = 1; }
        else if (!strcmp(k, "gen")) c->gen = strtoull(v, NULL, 10);   /* absent before: 0 */
        else if (!strcmp(k, "kmsg_seq")) c->kmsg_seq = strtoull(v, NULL, 10);
        else if (!strcmp(k, "boot_id")) snprintf(c->boot_id, sizeof c->boot_id, "%s", v);
        else if (!strcmp(k, "hdr")) {
            size_t n = strlen(v);
            if (n % 2 || n / 2 > sizeof c->hdr) { bad = 1; continue; }
            for (size_t i = 0; i < n / 2; i++) {
                int hi = hexval(v[2 * i]), lo = hexval(v[2 * i + 1]);
                if (hi < 0 || lo < 0) { bad = 1; break; }
                c->hdr[i] = (char)(hi << 4 | lo);
            }
            c->hdr_len = bad ? 0 : (uint32_t)(n / 2);
        }
    }
    free(line);
    fclose(f);
    if (version != 1 || !have_offset || c->offset < 0 || c->fp_len > 256 || bad) {
        snprintf(err, errlen, "%s: not a gpulog checkpoint (version 1)", path);
        return GL_ERROR;
    }
    return GL_OK;
}

int file_fingerprint(int fd, uint32_t want_len, char fp[33], uint32_t *fp_len)
{
    char head[4096 + 256];
    ssize_t n;
    do n = pread(fd, head, sizeof head, 0); while (n < 0 && errno == EINTR);
    if (n < 0) return GL_ERROR;
    size_t len = (size_t)n, pos = 0;
    /* skip complete header lines ("# gpu pwr ...", "#Date ...") */
    while (pos < len && head[pos] == '#') {
        char *nl = memchr(head + pos, '\n', len - pos);
        if (!nl) break;
        pos = (size_t)(nl - head) + 1;
    }
    size_t take = len - pos;
    if (take > 256) take = 256;
    if (want_len) {
        if (take < want_len) return GL_ERROR;
        take = want_len;
    }
    struct hash128 h;
    hash128_init(&h);
    hash128_feed(&h, head + pos, take);
    hash128_hex(&h, fp);
    *fp_len = (uint32_t)take;
    return GL_OK;
}
