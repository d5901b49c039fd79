/*
 * live.h - the terminal view of `gpulog run`: incidents (gpu.incident
 * records) first and apart from the rules' anomalies, anomalies as they
 * open and resolve, the open incidents and a status line per GPU (redrawn
 * at most every 2 s of wall time), and a summary at the end (incidents
 * first). The caller owns the FILE.
 */
#ifndef GPULOG_LIVE_H
#define GPULOG_LIVE_H

#include <stdio.h>
#include "engine.h"

struct live;
struct live *live_new(FILE *out);
/* One anomaly or incident record (start/change/end). */
void live_record(struct live *l, const struct event *rec);
/* Called after each input event; redraws the status when due. */
void live_tick(struct live *l, const struct engine *eng);
/* The status table and the summary at the end of input. */
void live_summary(struct live *l, const struct engine *eng);
void live_free(struct live *l);

#endif
