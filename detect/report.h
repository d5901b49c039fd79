/*
 * report.h - `gpulog report`: one self-contained HTML page of what happened
 * on a node (header, incidents most severe first, per-GPU small multiples on
 * one time axis with episodes shaded, ECC/PCIe/Xid markers, a GPUs x time
 * heat strip). No network needed to open it: the charts are drawn by a small
 * inline script from data embedded in the page.
 *
 * Memory is bounded whatever the input's length: samples go into a shared
 * grid of at most REP_BUCKETS min/max/sum buckets per series; when the grid
 * is full its bucket width doubles and pairs of buckets merge, so the
 * envelope (and every spike) survives. The page holds REP_COLS columns per
 * chart, plus finer windows around the worst incidents for zooming.
 *
 * Many GPUs: every GPU keeps a coarse series (1/64 of the grid's buckets);
 * 64 keep full resolution, and a GPU with a fault takes the place of one
 * that matters less (its full series from then on). The page charts 64:
 * those with faults first, by severity, then the others by arrival. At
 * most REP_MAX_EPS episodes (and incidents, kernel events) are kept: the
 * most severe, a late critical one evicting a milder one.
 *
 * Everything taken from the input (host names, reasons, paths, Xid texts)
 * is escaped: HTML text is entity-escaped and the embedded JSON has no '<',
 * '>' or '&', so the page is safe to open whatever the log contains.
 */
#ifndef GPULOG_REPORT_H
#define GPULOG_REPORT_H

#include <stdio.h>
#include "engine.h"

#define REP_BUCKETS 8192      /* buckets per series held while reading */
#define REP_COLS 1000         /* columns per chart in the page */

struct report;
/* A report; prof (borrowed, may be NULL) gives the temperature limit line
 * (the threshold rule on gpu.temperature.gpu). */
struct report *report_new(const struct profile *prof);
/* One input event (metric samples, Xid/SXid events; others are counted). */
void report_event(struct report *r, const struct event *ev);
/* One anomaly record of the engine (start/change/end). */
void report_record(struct report *r, const struct event *rec);

struct report_info {
    const char *source;       /* input name shown in the header */
    const char *profile;      /* detector profile or file */
    uint64_t lines, rejected; /* read counts */
    int partial;              /* stopped before the end of the input (a signal): the page says so */
};
/* Writes the page. Returns GL_OK or GL_ERROR (write error, errno set). */
int report_write(struct report *r, const struct report_info *info, FILE *out);
void report_free(struct report *r);

/* ---- the mechanisms, exposed for tests ---- */

/* One bucket or column of a min/max envelope (n == 0: empty). */
struct rep_env {
    float lo, hi, sum;
    uint32_t n;
};
/* Folds the envelope in (nb buckets of width bw ms starting at origin) into
 * cols columns covering [t0, t1): each column is the merge of the buckets
 * starting in it, so its lo/hi are the true extremes of its samples. */
void rep_envelope(const struct rep_env *in, size_t nb, int64_t origin, int64_t bw, int64_t t0, int64_t t1,
                  struct rep_env *out, size_t cols);

/* A streaming series on the shared grid (what report keeps per metric). */
struct rep_grid {
    int64_t origin, bw;       /* time of bucket 0, bucket width (ms) */
    size_t nb;                /* buckets in use (<= REP_BUCKETS) */
};
/* Bucket of time t on g, doubling g->bw (and calling merge for every series
 * to halve them) until t fits; -1 when t is before the origin. */
long rep_grid_slot(struct rep_grid *g, int64_t t, void (*merge)(void *ctx, size_t nb_old), void *ctx);
/* Merges bucket pairs of one series array holding nb_old buckets (in place). */
void rep_env_halve(struct rep_env *v, size_t nb_old);
/* Adds value x to bucket e. */
void rep_env_add(struct rep_env *e, double x);

/* Appends s as HTML text (& < > " ' as entities; NUL and invalid UTF-8
 * become U+FFFD). */
void rep_html_escape(struct buf *out, const char *s, size_t n);
/* Appends JSON text json so that it is inert inside <script>: every '<',
 * '>' and '&' (they only occur inside JSON strings) becomes a \u escape. */
void rep_script_json(struct buf *out, const char *json, size_t n);

/* The static parts of the page (report_page.c): style and script. */
extern const char rep_page_css[];
extern const char rep_page_js[];

#endif
