/* throttle.c - decoding of the NVML clock event (throttle) reason bitmask. */
#include "throttle.h"

#include <string.h>

/* nvmlClocksEventReason* bits (nvml.h). */
const struct throttle_reason throttle_reasons[] = {
    { 0x1,   "gpu_idle",                    "gpu.throttling.reason.gpu_idle" },
    { 0x2,   "applications_clocks_setting", "gpu.throttling.reason.applications_clocks_setting" },
    { 0x4,   "sw_power_cap",                "gpu.throttling.reason.sw_power_cap" },
    { 0x8,   "hw_slowdown",                 "gpu.throttling.reason.hw_slowdown" },
    { 0x10,  "sync_boost",                  "gpu.throttling.reason.sync_boost" },
    { 0x20,  "sw_thermal_slowdown",         "gpu.throttling.reason.sw_thermal_slowdown" },
    { 0x40,  "hw_thermal_slowdown",         "gpu.throttling.reason.hw_thermal_slowdown" },
    { 0x80,  "hw_power_brake_slowdown",     "gpu.throttling.reason.hw_power_brake_slowdown" },
    { 0x100, "display_clock_setting",       "gpu.throttling.reason.display_clock_setting" },
};
const size_t throttle_nreasons = sizeof throttle_reasons / sizeof throttle_reasons[0];

int throttle_parse_mask(const char *s, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        if (n - 2 > 16) return 0;
        for (size_t i = 2; i < n; i++) {
            char c = s[i];
            unsigned d;
            if (c >= '0' && c <= '9') d = (unsigned)(c - '0');
            else if (c >= 'a' && c <= 'f') d = (unsigned)(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') d = (unsigned)(c - 'A' + 10);
            else return 0;
            v = v << 4 | d;
        }
        *out = v;
        return 1;
    }
    if (n == 0 || n > 19) return 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return 0;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = v;
    return 1;
}

void throttle_add_fields(struct event *ev, uint64_t mask)
{
    /* the defined bits fit easily; an absurd mask is clipped to int64 */
    event_add_int(ev, "gpu.throttling.reasons", (int64_t)(mask & 0x7fffffffffffffffULL));
    for (size_t i = 0; i < throttle_nreasons; i++)
        event_add_bool(ev, throttle_reasons[i].key, (mask & throttle_reasons[i].bit) != 0);
}

const char *throttle_reason_key(const char *name, size_t n)
{
    for (size_t i = 0; i < throttle_nreasons; i++)
        if (strlen(throttle_reasons[i].name) == n && !memcmp(throttle_reasons[i].name, name, n))
            return throttle_reasons[i].key;
    return NULL;
}
