/* action.h - what an operator should do about an episode (and so about the
 * incident it belongs to): the action table (detect/action.c). */
#ifndef GPULOG_ACTION_H
#define GPULOG_ACTION_H

#include "engine_int.h"
#include "../parsers/xid_catalog.h"

/* The action for the episode of rule rc on GPU x that starts at ts, whose
 * verdict o gave (its Xid code, or a detector's own choice in o->action):
 * the user's table (profile key "actions") when it names the rule or the
 * Xid, else the detector's choice, the Xid catalog's, or the rule's default
 * (action.c); raised when this GPU's history says so (a second Xid 79
 * within 7 days, the third single-bit ECC episode, an application error on
 * one GPU three times). The evidence in words into why (why_len bytes).
 * Records the episode in x's history. */
enum gl_action action_choose(struct engine *e, struct ent *x, const struct rule_cfg *rc, const struct det_out *o,
                             int64_t ts, char *why, size_t why_len);

#endif
