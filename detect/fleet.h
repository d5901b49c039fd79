/*
 * fleet.h - fleet incidents: the same fault starting on many GPUs of many
 * hosts within a short time, correlated across hosts from the incident
 * records `detect` writes (`gpulog fleet`, cmd/fleet.c; docs/operations.md).
 *
 * In: records of the anomalies topic. A GPU incident start (event.dataset
 * gpu.incident, event.type start) is a member of the key (signature,
 * group): the signature is the incident's first rule (anomaly.rules), or
 * "xid:CODE" / "sxid:CODE" when that rule's episode record on the GPU
 * carried gpu.xid.code / gpu.sxid.code (or the incident record does); the
 * group is the value of the first topology label present (labels.rack,
 * labels.switch, ... as configured), else none (time alone). A GPU counts
 * once per key. When the members of a key that started within `window` of
 * its newest start span at least min_hosts hosts and min_gpus GPUs, they
 * become one fleet incident (event.dataset gpu.fleet_incident, rule.id
 * gpu.fleet, event.type start), which every later member of the key
 * joins that starts within `window` of its starts (change records, at
 * most one per change_interval of event time, and one once the growth
 * pauses); it ends (event.type end) `hold` after the last of its members'
 * incidents ended (gpu.incident end), or after `expire` without news of
 * any member; a start later than that is the beginning of another. Other records are ignored (gpu.anomaly
 * records only teach Xid codes).
 *
 * Ids: a fleet incident's id is a hash of its signature, group, the time
 * bucket (window-long) of its first start and its number within that
 * bucket, so a replay of the same records (a restart) gives the same ids
 * and Elasticsearch's _id keeps one document per record. State can also be
 * saved per input partition (fleet_save / fleet_load: the members that
 * came from it, the fleet incidents they are in) for the consumer's
 * --state-topic.
 *
 * Time is event time (the records' @timestamp), advanced by wall time only
 * while no record comes (fleet_tick), for holds and expiry.
 *
 * Bounds: at most max_keys keys (a new one evicts the least recently used,
 * ending its fleet incident), max_members members in all (a new one evicts
 * the oldest member not in a fleet incident; with none, it is dropped and
 * counted), 256 GPUs per host and key; per record O(1) apart from a fleet
 * incident opening (its members) and the lists of hosts and GPUs written
 * into its records.
 *
 * Ownership: fleet_new copies the configuration; records passed to emit
 * are borrowed for the duration of the call; fleet_free releases all.
 */
#ifndef GPULOG_FLEET_H
#define GPULOG_FLEET_H

#include "../core/event.h"

struct fleet_conf {
    int64_t window_ms;          /* starts within this span correlate (600000) */
    int64_t min_hosts, min_gpus; /* thresholds of a fleet incident (3, 8) */
    const char *group_by;       /* label names, comma-separated: the first present groups
                                 * ("rack,switch,cluster,slurm_cluster"); "" = time alone */
    int64_t change_ms;          /* a change record at most this often (60000) */
    int64_t hold_ms;            /* ends this long after its last member ended (120000) */
    int64_t expire_ms;          /* or after this long without news of a member (21600000) */
    int64_t max_keys;           /* (signature, group) keys tracked (1024) */
    int64_t max_members;        /* members tracked in all (65536) */
};
/* The documented defaults. */
void fleet_conf_defaults(struct fleet_conf *c);
/* GL_OK, or GL_ERROR with the setting that is out of range in err. */
int fleet_conf_check(const struct fleet_conf *c, char *err, size_t errlen);

struct fleet_stats {
    uint64_t records, members, ignored, bad;       /* records read; GPU incident starts taken; ignored; refused */
    uint64_t starts, changes, ends;                /* fleet incident records written */
    uint64_t evicted_keys, evicted_members, dropped;
    uint64_t keys, tracked, open;                  /* now: keys, members, open fleet incidents */
    uint64_t bytes;                                /* now: memory held by the state, about */
};

typedef void (*fleet_emit_fn)(void *ctx, const struct event *rec);

struct fleet;
/* NULL with the reason in err when the configuration is refused. */
struct fleet *fleet_new(const struct fleet_conf *c, fleet_emit_fn emit, void *ctx, char *err, size_t errlen);
void fleet_free(struct fleet *f);
/* One record of the anomalies topic, read from the input partition with
 * this tag (any int; 0 without partitions). */
void fleet_feed(struct fleet *f, const struct event *ev, int tag);
/* Now and then (once a second), with the wall clock in ms: pending change
 * records, ends after the hold or expiry, members out of every window. */
void fleet_tick(struct fleet *f, int64_t wall_ms);
/* End of input (--once): the fleet incidents whose hold is over in event
 * time end, the others write their pending change records. */
void fleet_flush(struct fleet *f);
/* Forgets the members read from the partition with this tag (revoked) and
 * the fleet incidents left without members, without records. */
void fleet_drop_tag(struct fleet *f, int tag);
/* Appends the state of partition tag (its members, their keys and fleet
 * incidents, and the keys' id counters) covering offsets before offset to
 * out (JSON, docs/operations.md). GL_OK. */
int fleet_save(const struct fleet *f, int tag, int64_t offset, struct buf *out, char *err, size_t errlen);
/* Adds the state in p/len to partition tag (members already known are
 * kept as they are); *offset gets the offset it covers. GL_OK, or GL_ERROR
 * with the reason in err and nothing added. */
int fleet_load(struct fleet *f, int tag, const void *p, size_t len, int64_t *offset, char *err, size_t errlen);
const struct fleet_stats *fleet_get_stats(struct fleet *f);

#endif
