/* incident.h - a GPU's overlapping episodes grouped into one incident
 * (detect/incident.c); engine-internal. */
#ifndef GPULOG_INCIDENT_H
#define GPULOG_INCIDENT_H

#include "engine_int.h"

/* An episode of rule rc on GPU x started (start: its event.start; reason:
 * its first record's reason), changed or ended (type REC_*) at ts with
 * risk and severity, after its record went out: opens x's incident with the
 * first episode, emits its start record, and its end record when the last
 * open episode of x ends. Nothing unless the profile groups incidents. */
void inc_note(struct engine *e, struct ent *x, int type, const struct rule_cfg *rc, int64_t start, const char *reason,
              double risk, int sev, int64_t ts);

#endif
