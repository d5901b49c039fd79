/* fleet_int.h - the state of the fleet correlator (detect/fleet.h), shared
 * by fleet.c (records in and out) and fleet_snap.c (per-partition state);
 * private to those two files. */
#ifndef GPULOG_FLEET_INT_H
#define GPULOG_FLEET_INT_H

#include "fleet.h"

#define FL_MAX_LABELS 8
#define FL_TEXT_MAX 255        /* signature, group and host names: longer ones are cut */
#define FL_HOST_GPUS 256       /* members of one host in one key */
#define FL_XID_CACHE 4096      /* GPUs whose last Xid code is remembered (direct-mapped) */
#define FL_SETTLE_TICKS 2      /* a pending change is written once growth paused this many ticks */
/* Decisions in event time that a lagging partition could still change
 * (an end, forgetting a member) also wait this long in wall time since
 * the news they rest on: partitions read at different speeds (a replay
 * after a restart reads them one after the other) all come in first. */
#define FL_SETTLE_WALL_MS 5000
#define FL_PRUNE_WALL_MS 60000

/* The actions of an incident (anomaly.action), least to most severe; 0 = none given. */
extern const char *const fl_actions[];
extern const size_t fl_nactions;
uint8_t fl_action_of(const char *s, size_t n);

struct fl_key;

/* One GPU's incident in a key. */
struct fl_member {
    struct fl_key *k;
    struct fl_host *kh;
    struct fl_member *prev, *next;     /* in k's window list (by start) or its fleet list */
    struct fl_member *gprev, *gnext;   /* window members of all keys, oldest arrival first */
    struct fl_member *inext;           /* incident-id hash chain */
    uint64_t ih;                       /* hash of incid */
    int64_t start, end;                /* the incident's start; its end (valid when !open) */
    int64_t arrived;                   /* wall time (the last tick's) when it came; 0 before the first tick */
    int32_t gpu;                       /* -1: host level */
    int tag;                           /* the input partition it came from */
    float risk;
    int8_t sev;
    uint8_t in_fleet, open, action;
    char incid[33];
};

/* The members of one host in one key. */
struct fl_host {
    struct fl_host *hnext;             /* hash chain of (key, host) */
    struct fl_key *k;
    struct fl_member **mv;             /* its members, and their GPUs side by side (a lookup */
    int32_t *gv;                       /* reads one array, not each member) */
    uint32_t cap;
    uint64_t h;
    uint32_t n, nwin, nfl;             /* members; in the window; in the fleet incident */
    uint32_t gen, scan;                /* key_window's count of its members in a span (valid when gen is f's) */
    char name[];
};

/* A key's fleet incident (open or not). */
struct fl_inc {
    int open, pending, quiet_ticks;
    char id[33];
    int64_t first, last;               /* first and last member start */
    int64_t last_end, news;            /* latest member end; event time of the last member start or end */
    int64_t news_wall;                 /* wall time (the last tick's) of that news; -1: unknown (restored) */
    int64_t at;                        /* event time of the last record written */
    uint32_t eg, eh, seq;              /* GPUs and hosts in the last record; change records written */
    int8_t sev;
    uint8_t action;
    float risk;
    struct fl_key *oprev, *onext;      /* the open ones */
};

/* (signature, group): its members and fleet incident. */
struct fl_key {
    struct fl_key *hnext;
    struct fl_key *lprev, *lnext;      /* least recently used first */
    uint64_t h;
    struct fl_member *win_head, *win_tail;   /* not in the fleet incident, by start */
    struct fl_member *fl_head, *fl_tail;     /* in it, by joining */
    uint32_t win_gpus, win_hosts, fl_gpus, fl_hosts, fl_open;
    int64_t max_start;                 /* the newest member start */
    int64_t id_bucket;                 /* fleet incidents are numbered within a window-long bucket */
    uint32_t id_n;
    int id_set;
    int lab;                           /* the group's label (index in f->labs), -1: time alone */
    struct fl_inc inc;
    const char *sig, *grp;             /* in text */
    char text[];
};

struct fl_label { char name[65]; char key[72]; };

struct fl_xid { uint64_t hh; uint32_t rule; int32_t code; int64_t ts; uint8_t sx, set; };

struct fleet {
    struct fleet_conf c;
    struct fl_label labs[FL_MAX_LABELS];
    size_t nlabs;
    fleet_emit_fn emit;
    void *ctx;
    struct fl_key **kb;                /* key buckets */
    size_t nkb;
    struct fl_host **hb;               /* (key, host) buckets */
    size_t nhb;
    struct fl_member **ib;             /* incident-id buckets */
    size_t nib;
    struct fl_key *lru_head, *lru_tail;
    struct fl_member *w_head, *w_tail; /* window members, oldest arrival first */
    struct fl_key *open_head;
    struct fl_xid xid[FL_XID_CACHE];
    int64_t clock;                     /* event time: the newest record */
    int64_t tick_clock, tick_wall;     /* the clock at the tick that saw it move, and that tick's wall time */
    int64_t wall, wall_first;          /* the last tick's and the first tick's wall time; 0 before */
    uint32_t gen;                      /* key_window's scans */
    struct fleet_stats st;
    struct event rec;
    struct buf lb, lb2;                /* the lists of a record */
};

uint64_t fl_hash_str(const char *s, size_t n, uint64_t seed);
/* The key of (sig, label index, group), made when absent (evicting the
 * least recently used one past max_keys). */
struct fl_key *fl_key_get(struct fleet *f, const char *sig, size_t sn, int lab, const char *grp, size_t gn);
/* The member of incident id, or NULL. */
struct fl_member *fl_member_by_id(const struct fleet *f, const char *id);
/* A member of k for (host, gpu) with these values, into k's fleet
 * incident (in_fleet) or its window; NULL when dropped (no room). */
struct fl_member *fl_member_add(struct fleet *f, struct fl_key *k, const char *host, size_t hn, int gpu,
                                const char *incid, int64_t start, int in_fleet, int tag);
/* Moves window member m of k into k's open fleet incident. */
void fl_join(struct fleet *f, struct fl_key *k, struct fl_member *m);
/* k's open list membership after its incident opened or closed. */
void fl_open_link(struct fleet *f, struct fl_key *k);

#endif
