/*
 * fwatch.h - change notification for followed files: one inotify instance
 * per process watching the directories of the followed paths, so that a
 * file at its end costs nothing until its directory reports a change
 * under its name (written, truncated, created, renamed, deleted). Where
 * inotify is not available (no instance, a watch refused, a directory that
 * does not exist yet) the caller polls instead; a change inotify cannot
 * see (a write through a hard link in another directory, another machine
 * writing on NFS) is noticed by that slower poll too.
 *
 * A client (one followed file) registers the names it cares about (its
 * path, and the name of the file it reads when that differs: a symlink's
 * target); a reported change sets client->woken. An overflow of the event
 * queue wakes every client; a directory that goes away unwatches its
 * clients (they register again when they poll).
 *
 * Ownership: fwatch_acquire returns the process's watcher (reference
 * counted; NULL when inotify cannot be used); fwatch_release gives the
 * reference back. Clients are borrowed: remove them before freeing.
 */
#ifndef GPULOG_FWATCH_H
#define GPULOG_FWATCH_H

#include <stddef.h>
#include <stdint.h>

#define FW_NAMES 2            /* names per client: its path and the file it reads */
struct fw_client {
    unsigned char woken;      /* set by fwatch_drain: something changed under a name of this client */
    unsigned char watched;    /* every name of the client is watched (else: poll) */
    unsigned char nkeys;      /* fwatch's: its names */
    uint32_t key[FW_NAMES];
    void (*on_wake)(struct fw_client *c);   /* called when woken goes from 0 to 1 (may be NULL) */
};

struct fwatch;
struct fwatch *fwatch_acquire(void);
void fwatch_release(struct fwatch *w);
/* Watches name in dir for c (at most FW_NAMES names); 1 when watched, 0
 * when the directory could not be (c->watched cleared: poll). */
int fwatch_add(struct fwatch *w, const char *dir, const char *name, struct fw_client *c);
/* Forgets every name of c. */
void fwatch_remove(struct fwatch *w, struct fw_client *c);
/* Reads what the kernel reported and wakes the clients concerned; at most
 * once per distinct now_ms (call it freely). */
void fwatch_drain(struct fwatch *w, int64_t now_ms);
/* fwatch_drain of the process's watcher, if there is one. */
void fwatch_turn(int64_t now_ms);
/* Clients registered (tests, the poll interval). */
size_t fwatch_clients(const struct fwatch *w);

#endif
