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
    if (c->floor_ns || c->size || c->finished || c->ndone || c->nseen)
        buf_printf(&b, "floor_ns=%" PRId64 "\nsize=%" PRId64 "\nfinished=%d\n", c->floor_ns, c->size, c->finished);
    for (uint32_t i = 0; i < c->ndone && i < CKPT_DONE_MAX; i++)
        buf_printf(&b, "done=%" PRIu64 ":%" PRIu64 ":%s:%u:%" PRId64 ":%u\n", c->done[i].dev, c->done[i].ino,
                   c->done[i].fp, c->done[i].fp_len, c->done[i].end, c->done[i].flags);
    for (uint32_t i = 0; i < c->nseen && i < CKPT_SEEN_MAX; i++)
        buf_printf(&b, "seen=%" PRIu64 ":%" PRIu64 ":%s:%u:%" PRId64 "\n", c->seen[i].dev, c->seen[i].ino,
                   c->seen[i].fp, c->seen[i].fp_len, c->seen[i].end);
    int r = atomic_write_file(path, b.p, b.len, err, errlen);
    buf_free(&b);
    return r;
}

/* ":FLAGS" at the end of a gen_id (absent in older checkpoints: 0). */
static int gen_flags(const char *rest, unsigned *flags)
{
    *flags = 0;
    if (!*rest) return 1;
    int n = 0;
    return sscanf(rest, ":%u%n", flags, &n) == 1 && !rest[n] && *flags <= GEN_TRUNCATED;
}

/* "DEV:INO:FP:FP_LEN:END[:FLAGS]" -> *g; 0 if malformed. */
static int parse_gen_id(const char *v, struct gen_id *g)
{
    char fp[40];
    unsigned long long dev, ino;
    unsigned fl, flags;
    long long end;
    int n = 0;
    if (sscanf(v, "%llu:%llu:%39[0-9a-f]:%u:%lld%n", &dev, &ino, fp, &fl, &end, &n) != 5 || !gen_flags(v + n, &flags) ||
        strlen(fp) != 32 || fl > 256 || end < 0) {
        /* an empty fingerprint is allowed: "DEV:INO::0:END" */
        n = 0;
        if (sscanf(v, "%llu:%llu::%u:%lld%n", &dev, &ino, &fl, &end, &n) != 4 || !gen_flags(v + n, &flags) || fl != 0 ||
            end < 0)
            return 0;
        fp[0] = '\0';
    }
    memset(g, 0, sizeof *g);
    g->dev = dev;
    g->ino = ino;
    memcpy(g->fp, fp, strlen(fp) + 1);   /* 32 hex digits or empty: checked above */
    g->fp_len = fl;
    g->end = end;
    g->flags = flags;
    return 1;
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
        else if (!strcmp(k, "floor_ns")) c->floor_ns = strtoll(v, NULL, 10);
        else if (!strcmp(k, "size")) c->size = strtoll(v, NULL, 10);
        else if (!strcmp(k, "finished")) c->finished = atoi(v) == 1;
        else if (!strcmp(k, "done") || !strcmp(k, "seen")) {
            int done = k[0] == 'd';
            uint32_t *n = done ? &c->ndone : &c->nseen;
            uint32_t max = done ? CKPT_DONE_MAX : CKPT_SEEN_MAX;
            struct gen_id g;
            if (!parse_gen_id(v, &g)) { bad = 1; continue; }
            if (*n < max) (done ? c->done : c->seen)[(*n)++] = g;
        }
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
    char head[FP_HEAD_MAX];
    ssize_t n;
    do n = pread(fd, head, sizeof head, 0); while (n < 0 && errno == EINTR);
    if (n < 0) return GL_ERROR;
    return fingerprint_buf(head, (size_t)n, want_len, fp, fp_len);
}

int fingerprint_buf(const char *head, size_t len, uint32_t want_len, char fp[33], uint32_t *fp_len)
{
    size_t pos = 0;
    if (len > FP_HEAD_MAX) len = FP_HEAD_MAX;
    /* skip complete header lines ("# gpu pwr ...", "#Date ...") */
    while (pos < len && head[pos] == '#') {
        const char *nl = memchr(head + pos, '\n', len - pos);
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
