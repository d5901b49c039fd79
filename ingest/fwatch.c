/* fwatch.c - change notification for followed files through inotify
 * directory watches (fwatch.h). Keys (a directory's watch and a name) live
 * in one array; a removed key is marked dead and the array compacted, and
 * its map rebuilt, at the next drain, so that no operation walks every key
 * (thousands of followed files). */
#include "fwatch.h"
#include "../core/common.h"
#include "../core/u64map.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#define FW_MASK (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | \
                 IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)

struct fw_key {
    int wd;
    char *name;
    struct fw_client *c;      /* NULL: removed (dead until the next compaction) */
};

struct fwatch {
    int fd;
    int refs;
    struct fw_key *keys;
    size_t nkeys, capkeys, ndead;
    struct u64map map;        /* hash of (wd, name) -> key index (dead ones checked at lookup) */
    size_t nclients;
    int64_t drained_ms;
};

static struct fwatch *the;

static void wake(struct fw_client *c)
{
    if (c->woken) return;
    c->woken = 1;
    if (c->on_wake) c->on_wake(c);
}

void fwatch_turn(int64_t now_ms) { if (the) fwatch_drain(the, now_ms); }

static uint64_t key_hash(int wd, const char *name)
{
    return hash64(name, strlen(name), 0x6677617463680000ULL ^ (uint64_t)(unsigned)wd);
}

struct fwatch *fwatch_acquire(void)
{
    if (the) { the->refs++; return the; }
    static int said;
    int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd < 0) {
        if (!said++) log_info("msg=\"inotify not available: followed files are polled\" error=\"%s\"", strerror(errno));
        return NULL;
    }
    the = xcalloc(1, sizeof *the);
    the->fd = fd;
    the->refs = 1;
    the->drained_ms = -1;
    u64map_init(&the->map);
    return the;
}

void fwatch_release(struct fwatch *w)
{
    if (!w || --w->refs > 0) return;
    if (w == the) the = NULL;
    close(w->fd);
    for (size_t i = 0; i < w->nkeys; i++) free(w->keys[i].name);
    free(w->keys);
    u64map_free(&w->map);
    free(w);
}

size_t fwatch_clients(const struct fwatch *w) { return w ? w->nclients : 0; }

int fwatch_add(struct fwatch *w, const char *dir, const char *name, struct fw_client *c)
{
    int wd = c->nkeys < FW_NAMES ? inotify_add_watch(w->fd, dir, FW_MASK) : -1;
    if (wd < 0) {
        c->watched = 0;
        return 0;
    }
    for (unsigned j = 0; j < c->nkeys; j++)
        if (w->keys[c->key[j]].wd == wd && !strcmp(w->keys[c->key[j]].name, name)) return 1;
    if (!c->nkeys) {
        w->nclients++;
        c->watched = 1;
    }
    if (w->nkeys == w->capkeys) {
        w->capkeys = w->capkeys ? w->capkeys * 2 : 64;
        w->keys = xrealloc(w->keys, w->capkeys * sizeof *w->keys);
    }
    c->key[c->nkeys++] = (uint32_t)w->nkeys;
    w->keys[w->nkeys] = (struct fw_key){ .wd = wd, .name = xstrdup(name), .c = c };
    u64map_add(&w->map, key_hash(wd, name), (uint32_t)w->nkeys);
    w->nkeys++;
    return 1;
}

void fwatch_remove(struct fwatch *w, struct fw_client *c)
{
    if (!w) return;
    for (unsigned j = 0; j < c->nkeys; j++) {
        w->keys[c->key[j]].c = NULL;
        w->ndead++;
    }
    if (c->nkeys) w->nclients--;
    c->nkeys = 0;
    c->watched = 0;
}

/* Drops the dead keys (the live ones' clients learn their new places) and
 * rebuilds the map. */
static void compact(struct fwatch *w)
{
    size_t j = 0;
    for (size_t i = 0; i < w->nkeys; i++) {
        struct fw_key *k = &w->keys[i];
        if (!k->c) { free(k->name); continue; }
        for (unsigned m = 0; m < k->c->nkeys; m++)
            if (k->c->key[m] == i) k->c->key[m] = (uint32_t)j;
        w->keys[j++] = *k;
    }
    w->nkeys = j;
    w->ndead = 0;
    u64map_clear(&w->map);
    for (size_t i = 0; i < w->nkeys; i++) u64map_add(&w->map, key_hash(w->keys[i].wd, w->keys[i].name), (uint32_t)i);
}

/* Wakes the clients of directory wd (every one when wd < 0); gone: the
 * directory went away, they poll until they register again. */
static void wake_dir(struct fwatch *w, int wd, int gone)
{
    for (size_t i = 0; i < w->nkeys; i++) {
        struct fw_client *c = w->keys[i].c;
        if (!c || (wd >= 0 && w->keys[i].wd != wd)) continue;
        wake(c);
        if (gone) fwatch_remove(w, c);
    }
}

void fwatch_drain(struct fwatch *w, int64_t now_ms)
{
    if (!w || now_ms == w->drained_ms) return;
    w->drained_ms = now_ms;
    if (w->ndead) compact(w);
    char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
    for (;;) {
        ssize_t n = read(w->fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            p += sizeof *ev + ev->len;
            if (ev->mask & IN_Q_OVERFLOW) { wake_dir(w, -1, 0); continue; }
            if (ev->mask & IN_IGNORED) { wake_dir(w, ev->wd, 1); continue; }
            if (!ev->len || !ev->name[0]) { wake_dir(w, ev->wd, 0); continue; }   /* the directory itself */
            uint64_t h = key_hash(ev->wd, ev->name);
            size_t it = 0;
            uint32_t k;
            while (u64map_next(&w->map, h, &it, &k))
                if (k < w->nkeys && w->keys[k].c && w->keys[k].wd == ev->wd && !strcmp(w->keys[k].name, ev->name))
                    wake(w->keys[k].c);
        }
    }
}
