/* incident.h - a GPU's overlapping episodes grouped into one incident
 * (detect/incident.c); engine-internal. */
#ifndef GPULOG_INCIDENT_H
#define GPULOG_INCIDENT_H

#include "engine_int.h"

/* An episode of rule rc on GPU x started (start: its event.start; reason:
 * its first record's reason; act, act_why: its action and evidence),
 * changed or ended (type REC_*) at ts with risk and severity, after its
 * record went out: opens x's incident with the first episode and emits its
 * start record, or adds the episode to the incident already open (a change
 * record when the episode's action is more urgent than the incident's).
 * Nothing unless the profile groups incidents. */
void inc_note(struct engine *e, struct ent *x, int type, const struct rule_cfg *rc, int64_t start, const char *reason,
              double risk, int sev, int64_t ts, int act, const char *act_why);

/* x was judged at ts: ends x's incident (its end record) when its last
 * episode ended the hold time ago (10 sampling intervals, at least 120 s)
 * and none opened since. */
void inc_tick(struct engine *e, struct ent *x, int64_t ts);

#endif
