/* det_common.c - the detector registry and helpers shared by detectors. */
#include "detector.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const struct det_ops *const det_registry[] = {
    &det_threshold, &det_zscore, &det_robust_z, &det_ewma, &det_cusum, &det_counter,
    &det_flatline, &det_missing, &det_thermal, &det_power_cap, &det_idle_power,
    &det_mem_leak, &det_mem_pressure, &det_hang, &det_clock_drop, &det_peer, &det_xid,
    &det_trend, &det_likelihood, &det_creep, &det_seasonal, &det_thermal_model, &det_health, NULL,
};

const struct det_ops *det_find(const char *name)
{
    for (size_t i = 0; det_registry[i]; i++)
        if (!strcmp(det_registry[i]->name, name)) return det_registry[i];
    return NULL;
}

int det_param_ok(const struct det_param *p, double v)
{
    if (!isfinite(v) || v < p->lo || v > p->hi) return 0;
    if ((p->flags & DP_LO_OPEN) && v == p->lo) return 0;
    if ((p->flags & DP_HI_OPEN) && v == p->hi) return 0;
    return !(p->flags & DP_WHOLE) || v == floor(v);
}

void det_param_range(const struct det_param *p, char *buf, size_t n)
{
    if (p->flags & DP_WHOLE) snprintf(buf, n, "a whole number from %.15g to %.15g", p->lo, p->hi);
    else snprintf(buf, n, "a number in %c%.15g, %.15g%c", p->flags & DP_LO_OPEN ? '(' : '[', p->lo, p->hi,
                  p->flags & DP_HI_OPEN ? ')' : ']');
}

int det_out_finite(const struct det_out *o)
{
    if (!isfinite(o->value) || !isfinite(o->score) || !isfinite(o->excess) || !isfinite(o->peer_median)) return 0;
    for (int i = 0; i < 6; i++)
        if (!isfinite(o->a[i])) return 0;
    return 1;
}

double det_clamp01(double x)
{
    if (!(x > 0)) return 0;
    return x > 1 ? 1 : x;
}

int profile_slot(struct profile_slots *ps, const char *name, int need_win)
{
    for (size_t i = 0; i < ps->n; i++)
        if (!strcmp(ps->name[i], name)) {
            if (need_win) ps->need_win[i] = 1;
            return (int)i;
        }
    if (ps->n >= ENG_MAX_SLOTS) return -1;
    ps->name[ps->n] = xstrdup(name);
    ps->need_win[ps->n] = need_win ? 1 : 0;
    return (int)ps->n++;
}

static const struct { const char *field, *label, *unit; } labels[] = {
    { "gpu.temperature.gpu", "temperature", " \xc2\xb0" "C" },
    { "gpu.temperature.memory", "memory temperature", " \xc2\xb0" "C" },
    { "gpu.power.usage", "power draw", " W" },
    { "gpu.utilization.gpu.pct", "SM utilisation", " %" },
    { "gpu.utilization.memory_copy.pct", "memory utilisation", " %" },
    { "gpu.clock.streaming_multiprocessor_frequency", "SM clock", " MHz" },
    { "gpu.clock.graphics_frequency", "graphics clock", " MHz" },
    { "gpu.clock.mem_frequency", "memory clock", " MHz" },
    { "gpu.throttling.power.pct", "power-cap throttling", " %" },
    { "gpu.throttling.thermal.active", "thermal throttling", "" },
    { "gpu.memory.framebuffer.used_size", "framebuffer use", " MiB" },
    { "gpu.ecc.single_bit.count", "single-bit ECC errors", "" },
    { "gpu.ecc.double_bit.count", "double-bit ECC errors", "" },
    { "gpu.pcie.replay", "PCIe replays", "" },
    { "gpu.pcie.rx.throughput", "PCIe receive rate", " MB/s" },
    { "gpu.pcie.tx.throughput", "PCIe transmit rate", " MB/s" },
};

void metric_label(const char *field, const char **label, const char **unit)
{
    for (size_t i = 0; i < GL_ARRAY_LEN(labels); i++)
        if (!strcmp(labels[i].field, field)) {
            *label = labels[i].label;
            *unit = labels[i].unit;
            return;
        }
    *label = field;
    *unit = "";
}

void det_who(const struct det_ctx *cx, char *out, size_t n)
{
    const char *h = cx->h && cx->h->name ? cx->h->name : "-";
    if (cx->e && cx->e->gpu >= 0) snprintf(out, n, "GPU %d on %s", cx->e->gpu, h);
    else snprintf(out, n, "%s", h);
}

void det_reason(const struct det_out *o, struct ent *x, const char *fallback, char *buf, size_t n)
{
    if (!o->why) { snprintf(buf, n, "%s", fallback); return; }
    char who[96];
    struct det_ctx cx = { .e = x, .h = x->host };
    det_who(&cx, who, sizeof who);
    o->why(o, who, buf, n < DET_REASON_MAX ? n : DET_REASON_MAX);
}

int det_direction_ok(double dev, double dir)
{
    if (dir > 0) return dev > 0;
    if (dir < 0) return dev < 0;
    return 1;
}

int det_load_steady(const struct ent *e, int util_slot, double util_range, int power_slot, double power_frac,
                    unsigned min_n)
{
    if (util_slot >= 0) {
        const struct win *g = ent_win(e, util_slot);
        if (!g || win_count(g) < min_n || win_max(g) - win_min(g) > util_range) return 0;
    }
    if (power_slot >= 0) {
        const struct win *p = ent_win(e, power_slot);
        if (!p || win_count(p) < min_n || win_max(p) - win_min(p) > power_frac * win_median(p)) return 0;
    }
    return 1;
}
