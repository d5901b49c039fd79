/* action.c - the action table: what an operator does about each rule's
 * episode, and how a GPU's history raises it. See action.h.
 *
 * The defaults (docs/detectors.md, "Actions"), by rule:
 *   gpu.xid               the Xid catalog's action for the code (xid_catalog.c)
 *   gpu.health            the snapshot's finding (det_health.c)
 *   temperature rules     check_cooling (gpu.temp.*, gpu.thermal, gpu.peer.temp)
 *   power and clocks      check_power (gpu.power.cap, gpu.clock.drop, gpu.peer.power, gpu.peer.clock)
 *   gpu.hang, gpu.mem.leak            restart_app
 *   gpu.ecc.dbe, gpu.power.stuck      reset_gpu
 *   everything else       watch
 * Raised by the GPU's history (7 days, its last ENT_HIST episodes): a
 * second Xid 79 (off the bus), 48, 64, 74, 95 or 140 -> drain_repair; a
 * third single-bit ECC episode -> drain_repair; a third restart_app on the
 * same GPU -> reset_gpu (the application is not the cause). The user's
 * table (profile key "actions": {"gpu.temp.high": "watch", "xid:13":
 * "reset_gpu"}) replaces all of it for what it names. */
#include "action.h"

#include <stdio.h>
#include <string.h>

#define WEEK_MS (7LL * 86400 * 1000)

/* A rule's default when no detector or catalog chooses. */
static enum gl_action rule_default(const char *id)
{
    static const struct { const char *id; enum gl_action act; } tab[] = {
        { "gpu.temp.high", ACT_CHECK_COOLING }, { "gpu.temp.rise", ACT_CHECK_COOLING },
        { "gpu.temp.creep", ACT_CHECK_COOLING }, { "gpu.temp.excess", ACT_CHECK_COOLING },
        { "gpu.thermal", ACT_CHECK_COOLING }, { "gpu.peer.temp", ACT_CHECK_COOLING },
        { "gpu.power.cap", ACT_CHECK_POWER }, { "gpu.clock.drop", ACT_CHECK_POWER },
        { "gpu.peer.power", ACT_CHECK_POWER }, { "gpu.peer.clock", ACT_CHECK_POWER },
        { "gpu.hang", ACT_RESTART_APP }, { "gpu.mem.leak", ACT_RESTART_APP },
        { "gpu.ecc.dbe", ACT_RESET_GPU }, { "gpu.power.stuck", ACT_RESET_GPU },
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (!strcmp(tab[i].id, id)) return tab[i].act;
    return ACT_WATCH;
}

/* Episodes of key on x within the 7 days before ts (x's history). */
static int seen_before(const struct ent *x, uint32_t key, int64_t ts)
{
    int n = 0;
    for (unsigned i = 0; i < x->nhist; i++)
        if (x->hist[i].key == key && x->hist[i].ts < ts && ts - x->hist[i].ts <= WEEK_MS) n++;
    return n;
}

static void remember(struct ent *x, uint32_t key, int64_t ts)
{
    x->hist[x->hist_pos].key = key;
    x->hist[x->hist_pos].ts = ts;
    x->hist_pos = (uint8_t)((x->hist_pos + 1) % ENT_HIST);
    if (x->nhist < ENT_HIST) x->nhist++;
}

/* The user's action for key ("rule.id" or "xid:N"), or -1. */
static int user_action(const struct profile *p, const char *key)
{
    for (size_t i = 0; i < p->nactions; i++)
        if (!strcmp(p->actions[i].key, key)) return p->actions[i].act;
    return -1;
}

enum gl_action action_choose(struct engine *e, struct ent *x, const struct rule_cfg *rc, const struct det_out *o,
                             int64_t ts, char *why, size_t why_len)
{
    int code = o->xid_code;
    int sxid = code >= 0 && o->xid_key && o->xid_key[4] == 's';
    char xkey[24] = "";
    if (code >= 0) snprintf(xkey, sizeof xkey, "%s:%d", sxid ? "sxid" : "xid", code);
    uint32_t hk = eng_name_hash(code >= 0 ? xkey : rc->id);
    int before = seen_before(x, hk, ts);
    remember(x, hk, ts);
    int u = code >= 0 ? user_action(e->prof, xkey) : -1;
    if (u < 0) u = user_action(e->prof, rc->id);
    if (u >= 0) {
        snprintf(why, why_len, "the configured action for %s", code >= 0 && user_action(e->prof, xkey) >= 0 ? xkey : rc->id);
        return (enum gl_action)u;
    }
    enum gl_action a;
    const struct xid_info *xi = code >= 0 ? (sxid ? sxid_lookup(code) : xid_lookup(code)) : NULL;
    if (o->action >= 0 && o->action < ACT__N) {
        a = (enum gl_action)o->action;
        snprintf(why, why_len, "%s: %s", rc->id, "its finding");
    } else if (xi) {
        a = xi->act;
        snprintf(why, why_len, "%s %d (%s): %s", sxid ? "SXid" : "Xid", code, xi->name, xi->action);
    } else {
        a = rule_default(rc->id);
        snprintf(why, why_len, "%s: the rule's default", rc->id);
    }
    /* the GPU's history */
    if (!sxid && (code == 79 || code == 48 || code == 64 || code == 74 || code == 95 || code == 140) && before >= 1) {
        snprintf(why, why_len, "a second Xid %d on this GPU within 7 days (%d before): send it for repair", code, before);
        return ACT_DRAIN_REPAIR;
    }
    if (!strcmp(rc->id, "gpu.ecc.sbe") && before >= 2) {
        snprintf(why, why_len, "single-bit ECC errors keep growing: episode %d on this GPU within 7 days", before + 1);
        return ACT_DRAIN_REPAIR;
    }
    if (a == ACT_RESTART_APP && before >= 2) {
        snprintf(why, why_len, "%s the %d. time on this GPU within 7 days: the application is not the cause",
                 code >= 0 ? xkey : rc->id, before + 1);
        return ACT_RESET_GPU;
    }
    return a;
}
