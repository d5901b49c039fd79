/* engine_reload.c - engine_reload (SIGHUP): rules that did not change keep
 * their state and open episodes (see engine.h). */
#include "engine_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- reload ------------------------------------------------------------- */

static const char *slot_name(const struct profile *p, int s) { return s >= 0 ? p->slots.name[s] : ""; }

/* Same rule: id, detector, metric, every setting and parameter. */
static int rule_same(const struct profile *pa, const struct rule_cfg *a, const struct profile *pb,
                     const struct rule_cfg *b)
{
    if (strcmp(a->id, b->id) || strcmp(a->name, b->name) || a->ops != b->ops || strcmp(a->metric, b->metric))
        return 0;
    if (a->severity != b->severity || a->for_n != b->for_n || a->clear_n != b->clear_n ||
        a->cooldown_ms != b->cooldown_ms || a->change_ms != b->change_ms)
        return 0;
    for (int i = 0; i < DET_MAX_PARAMS; i++)
        if (memcmp(&a->p[i], &b->p[i], sizeof a->p[i])) return 0;
    for (int i = 0; i < 6; i++) {
        if ((a->aux[i] < 0) != (b->aux[i] < 0)) return 0;
        if (a->aux[i] >= 0 && strcmp(slot_name(pa, a->aux[i]), slot_name(pb, b->aux[i]))) return 0;
    }
    return 1;
}

/* Builds the state block of rule set nrs (new profile) from the block of ors
 * (old profile): identical rules are moved, others start fresh; old rules
 * not moved have open episodes ended and their state freed. */
static void *move_states(struct engine *e, const struct profile *op, const struct rule_set *ors, unsigned char *ob,
                         const struct rule_set *nrs, struct ent *x, const char *metric)
{
    unsigned char *nb = nrs->size ? xcalloc(1, nrs->size) : NULL;
    unsigned char moved[512];
    memset(moved, 0, sizeof moved);
    for (size_t k = 0; k < nrs->n; k++) {
        const struct rule_cfg *rc = &e->prof->rules[nrs->idx[k]];
        size_t j = 0;
        if (ob)
            for (; j < ors->n && j < sizeof moved; j++)
                if (!moved[j] && rule_same(op, &op->rules[ors->idx[j]], e->prof, rc)) break;
        if (ob && j < ors->n && j < sizeof moved) {
            memcpy(nb + nrs->off[k], ob + ors->off[j], EP_SIZE + ALIGN8(rc->ops->state_size));
            moved[j] = 1;
        } else if (rc->ops->init) {
            rc->ops->init(rc, nb + nrs->off[k] + EP_SIZE);
        }
    }
    if (ob) {
        for (size_t j = 0; j < ors->n; j++) {
            if (j < sizeof moved && moved[j]) continue;
            const struct rule_cfg *orc = &op->rules[ors->idx[j]];
            struct episode *ep = (struct episode *)(ob + ors->off[j]);
            if (ep->open) {
                struct det_out o;
                det_out_init(&o);
                ep->seq++;
                ep->open = 0;
                e->st.open--;
                const char *km = !strcmp(orc->metric, "*") ? metric : orc->metric;
                eng_emit_record(e, REC_END, orc, x, km, km, ep, &o, ep->last_sev, ep->last_risk, ep->last_anom);
            }
            if (orc->ops->free) orc->ops->free(ob + ors->off[j] + EP_SIZE);
        }
        free(ob);
    }
    return nb;
}

/* Counts the rules of np identical to one of op (returned) and the rules
 * added, changed or removed (*diff); reads both profiles only. */
static size_t count_changes(const struct profile *op, const struct profile *np, size_t *diff)
{
    size_t kept = 0;
    *diff = 0;
    for (size_t i = 0; i < np->nrules; i++) {
        size_t j = 0;
        while (j < op->nrules && !rule_same(op, &op->rules[j], np, &np->rules[i])) j++;
        if (j < op->nrules) kept++;
        else (*diff)++;
    }
    for (size_t j = 0; j < op->nrules; j++) {
        size_t i = 0;
        while (i < np->nrules && strcmp(op->rules[j].id, np->rules[i].id)) i++;
        if (i == np->nrules) (*diff)++;
    }
    return kept;
}

/* Windows of another size: every GPU starts over. Ends the open episodes of
 * every state block (old rule sets old_ent, old_slot of profile op) and frees
 * every ent of e with its series; the hosts stay. */
static void drop_all_ents(struct engine *e, const struct profile *op, const struct rule_set *old_ent,
                          const struct rule_set *old_slot)
{
    for (size_t b = 0; b < e->nhb; b++)
        for (struct host *h = e->hb[b]; h; h = h->next)
            for (struct ent *x = h->ents; x; x = x->next) {
                x->rstate = move_states(e, op, old_ent, x->rstate, &(struct rule_set){ 0 }, x, "");
                for (size_t i = 0; i < x->nser; i++) {
                    x->ser[i].rstate = move_states(e, op, &old_slot[x->ser[i].slot], x->ser[i].rstate,
                                                   &(struct rule_set){ 0 }, x, op->slots.name[x->ser[i].slot]);
                }
            }
    for (size_t b = 0; b < e->nhb; b++)
        for (struct host *h = e->hb[b]; h; h = h->next) {
            h->hint = NULL;
            while (h->ents) {       /* states are gone: free the rest */
                struct ent *x = h->ents;
                h->ents = x->next;
                h->nents--;
                eng_lru_unlink(e, x);
                if (x->gpu >= 0) e->st.gpus--;
                for (size_t i = 0; i < x->nser; i++) free(x->ser[i].w);
                e->st.series -= x->nser;
                free(x->ser);
                free(x->uuid);
                free(x->bus_id);
                free(x);
            }
            h->have_block = 0;
        }
    e->mem = sizeof *e + e->nhb * sizeof *e->hb;
}

/* Makes np e's profile with empty rule sets, then the entity-scope rules of
 * np; the caller keeps the old sets (e's copies are overwritten, not freed). */
static void new_rule_sets(struct engine *e, struct profile *np)
{
    e->prof = np;
    memset(&e->ent_rules, 0, sizeof e->ent_rules);
    memset(e->slot_rules, 0, sizeof e->slot_rules);
    memset(e->slot_ready, 0, sizeof e->slot_ready);
    memset(e->slot_star, 0, sizeof e->slot_star);
    memset(e->kc, 0, sizeof e->kc);
    for (size_t i = 0; i < np->nrules; i++)
        if (np->rules[i].ops->scope != DS_SERIES) eng_add_rule(&e->ent_rules, (int)i, np->rules[i].ops->state_size);
}

/* Fills map: old slot of op -> new slot of np, -1 where the metric is no
 * longer tracked ("*" slots, old_star, are carried over when np has "*"
 * rules, and marked in e->slot_star). */
static void map_slots(struct engine *e, const struct profile *op, struct profile *np,
                      const unsigned char *old_star, int *map)
{
    for (size_t s = 0; s < op->slots.n; s++) {
        map[s] = -1;
        for (size_t t = 0; t < np->slots.n; t++)
            if (!strcmp(np->slots.name[t], op->slots.name[s])) { map[s] = (int)t; break; }
        if (map[s] < 0 && old_star[s] && np->star) {
            map[s] = profile_slot(&np->slots, op->slots.name[s], 1);
            if (map[s] >= 0) e->slot_star[map[s]] = 1;
        }
    }
}

/* Moves one ent x to e's new profile np: its entity states, then each series
 * to its new slot (map) with its states moved, or, for a metric no longer
 * tracked, its states ended and its window freed; values follow their slot. */
static void move_ent(struct engine *e, const struct profile *op, struct profile *np, struct ent *x,
                     const struct rule_set *old_ent, const struct rule_set *old_slot, const int *map)
{
    e->mem += e->ent_rules.size - old_ent->size;
    x->rstate = move_states(e, op, old_ent, x->rstate, &e->ent_rules, x, "");
    double val[ENG_MAX_SLOTS];
    memset(val, 0, sizeof val);
    uint64_t present = 0;
    size_t n = 0;
    memset(x->sidx, 0, sizeof x->sidx);
    for (size_t i = 0; i < x->nser; i++) {
        struct series *s = &x->ser[i];
        int os = s->slot, ns = map[os];
        if (ns >= 0 && (x->present & (1ULL << os))) { val[ns] = x->val[os]; present |= 1ULL << ns; }
        if (ns < 0) {
            /* metric no longer tracked */
            s->rstate = move_states(e, op, &old_slot[os], s->rstate, &(struct rule_set){ 0 }, x,
                                    op->slots.name[os]);
            e->mem -= (s->w ? sizeof *s->w : 0) + old_slot[os].size;
            free(s->w);
            e->st.series--;
            continue;
        }
        eng_slot_prepare(e, ns);
        const struct rule_set *nrs = &e->slot_rules[ns];
        e->mem += nrs->size - old_slot[os].size;
        s->rstate = move_states(e, op, &old_slot[os], s->rstate, nrs, x, op->slots.name[os]);
        if (!s->w && eng_slot_needs_window(np, nrs, ns)) {
            s->w = xmalloc(sizeof *s->w);
            win_init(s->w, np->win_cap, np->win_span_ms);
            e->mem += sizeof *s->w;
        }
        s->slot = (uint16_t)ns;
        x->ser[n] = *s;
        x->sidx[ns] = (unsigned char)(++n);
    }
    x->nser = n;
    memcpy(x->val, val, sizeof val);
    x->present = present;
}

size_t engine_reload(struct engine *e, struct profile *np, size_t *changed)
{
    struct profile *op = e->prof;
    size_t diff;
    size_t kept = count_changes(op, np, &diff);
    if (changed) *changed = diff;
    int same_win = op->win_cap == np->win_cap && op->win_span_ms == np->win_span_ms;
    /* old rule sets, kept until every block moved */
    struct rule_set old_ent = e->ent_rules, old_slot[ENG_MAX_SLOTS];
    memcpy(old_slot, e->slot_rules, sizeof old_slot);
    unsigned char old_star[ENG_MAX_SLOTS];
    memcpy(old_star, e->slot_star, sizeof old_star);
    e->reloading = 1;
    if (!same_win) drop_all_ents(e, op, &old_ent, old_slot);
    new_rule_sets(e, np);
    int map[ENG_MAX_SLOTS];
    map_slots(e, op, np, old_star, map);
    for (size_t b = 0; b < e->nhb; b++)
        for (struct host *h = e->hb[b]; h; h = h->next)
            for (struct ent *x = h->ents; x; x = x->next) move_ent(e, op, np, x, &old_ent, old_slot, map);
    e->reloading = 0;
    free(old_ent.idx);
    free(old_ent.off);
    for (size_t s = 0; s < ENG_MAX_SLOTS; s++) { free(old_slot[s].idx); free(old_slot[s].off); }
    return kept;
}
