/*
 * snapshot.h - detector state snapshots of one input partition: what the
 * engine knows about the GPUs fed with one tag (engine_feed_tag), so that
 * the member that gets the partition next (a rebalance, a restart) goes on
 * warm instead of starting cold: windows, learned per-GPU references, rule
 * states, open episodes with their ids and start times, the host's sample
 * block, and the offset the snapshot covers (the next one to read).
 *
 * Format (version SNAP_FORMAT, little-endian, docs/operations.md): a 40-byte
 * header (magic "GLSN", format version, 2 bytes 0, the profile fingerprint,
 * the offset, the payload's raw and compressed sizes, a CRC-32 of the other
 * header bytes and the compressed payload, the GPU count), then the
 * zlib-compressed payload: the metric names, then per host its GPUs, per
 * GPU its rule states, its incident (format 2) and its series (window
 * samples as 8 bytes each, running moments, rule states as bytes). The raw
 * payload is bounded by SNAP_MAX_RAW.
 *
 * The fingerprint covers the profile (every rule's id, detector, metric,
 * settings and parameters, window shape) and the state layout (gpulog
 * version, episode and rule state sizes): a snapshot made under another
 * profile or build is refused with that reason, never misapplied.
 * Corrupted, truncated or inconsistent input is refused with a reason and
 * leaves the partition with no state (never a crash: tests/fuzz/fuzz_snapshot.c).
 *
 * Ownership: the caller owns the engine and the buffers; load copies what
 * it keeps.
 */
#ifndef GPULOG_SNAPSHOT_H
#define GPULOG_SNAPSHOT_H

#include "engine.h"

#define SNAP_FORMAT 3       /* 2: a GPU's incident after its rule states; 3: its action, the GPU's history */
#define SNAP_HEADER 40
#define SNAP_MAX_RAW (64u << 20)

enum snap_refusal { SNAP_OK = 0, SNAP_CORRUPT, SNAP_OTHER_FORMAT, SNAP_OTHER_PROFILE, SNAP_TOO_BIG };

/* The fingerprint of e's profile and of this build's state layout. */
uint64_t snapshot_fingerprint(const struct engine *e);
/* Appends the snapshot of every GPU of partition tag to out (covering
 * offsets before `offset`); returns GL_OK, or GL_ERROR with a reason in err
 * (the raw payload would pass SNAP_MAX_RAW, a rule state holds pointers). */
int snapshot_save(const struct engine *e, int tag, int64_t offset, struct buf *out, char *err, size_t errlen);
/* Wraps a raw payload (ngpus GPUs) into a snapshot of e's profile covering
 * offsets before `offset`, appended to out: the header, compression, CRC
 * (snapshot_save; tests and the fuzz target wrap payloads of their own).
 * GL_ERROR with a reason when raw passes SNAP_MAX_RAW. */
int snapshot_wrap(const struct engine *e, int64_t offset, uint32_t ngpus, const void *raw, size_t rawlen,
                  struct buf *out, char *err, size_t errlen);
/* Replaces the state of partition tag with the snapshot in p/len; *offset
 * gets the offset it covers. Returns SNAP_OK, or the refusal with a reason
 * in err (the partition then has no state: engine_drop_tag). */
enum snap_refusal snapshot_load(struct engine *e, int tag, const void *p, size_t len, int64_t *offset,
                                char *err, size_t errlen);

#endif
