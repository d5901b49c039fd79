/* track.c - per-source offset tracker: the committed offset advances only
 * over lines whose events were all settled (see source.h). */
#include "source.h"

#include <stdlib.h>
#include <string.h>

void track_init(struct track *t, int64_t start)
{
    memset(t, 0, sizeof *t);
    t->cap = 64;   /* grown by doubling: an idle file of thousands followed costs little */
    t->e = xmalloc(t->cap * sizeof *t->e);
    t->committed = start;
}

void track_free(struct track *t)
{
    free(t->e);
    t->e = NULL;
}

void track_reset(struct track *t, int64_t start)
{
    t->head_seq += t->n;   /* entries still out (a lane taken away) never match a new one */
    t->head = t->n = 0;
    t->committed = start;
}

static void advance(struct track *t)
{
    while (t->n && t->e[t->head].out == 0) {
        t->committed = t->e[t->head].end;
        t->head = (t->head + 1) & (t->cap - 1);
        t->head_seq++;
        t->n--;
    }
    if (t->n == 0) t->head = 0;
}

uint64_t track_push(struct track *t, int64_t end)
{
    if (t->n == t->cap) {
        size_t ncap = t->cap * 2;
        struct track_ent *ne = xmalloc(ncap * sizeof *ne);
        for (size_t i = 0; i < t->n; i++) ne[i] = t->e[(t->head + i) & (t->cap - 1)];
        free(t->e);
        t->e = ne;
        t->cap = ncap;
        t->head = 0;
    }
    size_t i = (t->head + t->n) & (t->cap - 1);
    t->e[i].end = end;
    t->e[i].out = 1;
    t->n++;
    return t->head_seq + t->n - 1;
}

static struct track_ent *find(struct track *t, uint64_t seq)
{
    if (seq < t->head_seq || seq - t->head_seq >= t->n) return NULL;
    return &t->e[(t->head + (size_t)(seq - t->head_seq)) & (t->cap - 1)];
}

void track_hold(struct track *t, uint64_t seq)
{
    struct track_ent *e = find(t, seq);
    if (e) e->out++;
}

void track_settle(struct track *t, uint64_t seq)
{
    struct track_ent *e = find(t, seq);
    if (!e || e->out == 0) return;
    e->out--;
    if (e->out == 0 && seq == t->head_seq) advance(t);
}
