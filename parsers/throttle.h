/*
 * throttle.h - NVML clock event ("throttle") reasons: the bitmask printed by
 * nvidia-smi as clocks_event_reasons.active (older: clocks_throttle_reasons)
 * and its decoding into gpu.throttling.* fields.
 */
#ifndef GPULOG_THROTTLE_H
#define GPULOG_THROTTLE_H

#include "../core/event.h"

struct throttle_reason {
    uint64_t bit;           /* NVML bit */
    const char *name;       /* nvidia-smi / NVML name, e.g. "sw_power_cap" */
    const char *key;        /* event field, e.g. "gpu.throttling.reason.sw_power_cap" */
};

extern const struct throttle_reason throttle_reasons[];
extern const size_t throttle_nreasons;

/* Parses a bitmask written as hex ("0x0000000000000004") or decimal.
 * Returns 1 and sets *out on success, 0 otherwise. */
int throttle_parse_mask(const char *s, size_t n, uint64_t *out);

/* Adds gpu.throttling.reasons (the mask as an integer) and one boolean per
 * known reason to ev (keys are static). */
void throttle_add_fields(struct event *ev, uint64_t mask);

/* The event key of a reason given by name (n bytes), or NULL if unknown. */
const char *throttle_reason_key(const char *name, size_t n);

#endif
