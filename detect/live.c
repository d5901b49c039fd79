/* live.c - see live.h. */
#include "live.h"

#include <stdlib.h>
#include <string.h>

#define LIVE_RULES 64
#define LIVE_INCIDENTS 32    /* incidents the summary lists (the latest) */

/* One incident as its records told it (rule.id gpu.incident). */
struct live_inc {
    char id[33], host[64], start[25], rules[256], reason[320], act[24];
    int gpu, open;
    double peak, dur;
};

struct live {
    FILE *out;
    int64_t last_draw;
    uint64_t ticks;
    uint64_t starts, ends;
    struct { char id[48]; uint64_t n; } per_rule[LIVE_RULES];
    size_t nrules;
    struct live_inc inc[LIVE_INCIDENTS];   /* a ring: the latest LIVE_INCIDENTS */
    uint64_t ninc, inc_open;
};

struct live *live_new(FILE *out)
{
    struct live *l = xcalloc(1, sizeof *l);
    l->out = out;
    l->last_draw = gl_now_ms();
    return l;
}

void live_free(struct live *l) { free(l); }

static const char *fstr(const struct event *ev, const char *k, char *buf, size_t n)
{
    size_t len;
    const char *s = event_get_str(ev, k, &len);
    if (!s) { if (n) buf[0] = 0; return buf; }
    gl_printable(buf, n, s, len);   /* from the input: no escape sequence reaches the terminal */
    return buf;
}

/* An incident's start (mode 1), change (2: its action raised) or end (0)
 * record: kept in l's ring (a change or an end finds its start by incident
 * id; one whose start went by is added as it is). */
static void note_incident(struct live *l, const struct event *rec, int mode)
{
    int start = mode == 1;
    char id[33];
    fstr(rec, "anomaly.incident_id", id, sizeof id);
    struct live_inc *in = NULL;
    uint64_t n = l->ninc < LIVE_INCIDENTS ? l->ninc : LIVE_INCIDENTS;
    for (uint64_t i = 0; i < n && !start; i++)
        if (!strcmp(l->inc[i].id, id)) in = &l->inc[i];
    if (!in) {
        in = &l->inc[l->ninc++ % LIVE_INCIDENTS];
        if (in->open && l->inc_open) l->inc_open--;
        memset(in, 0, sizeof *in);
        snprintf(in->id, sizeof in->id, "%s", id);
        fstr(rec, "event.reason", in->reason, sizeof in->reason);
        in->open = start || mode == 2;
        l->inc_open += (uint64_t)in->open;
    } else if (in->open && mode == 0) {
        in->open = 0;
        if (l->inc_open) l->inc_open--;
    }
    char act[24];
    if (*fstr(rec, "anomaly.action", act, sizeof act)) memcpy(in->act, act, sizeof act);
    gl_printable(in->host, sizeof in->host, rec->host ? rec->host : "", rec->host ? strlen(rec->host) : 0);   /* a header field */
    fstr(rec, "event.start", in->start, sizeof in->start);
    fstr(rec, "anomaly.rules", in->rules, sizeof in->rules);
    double g = -1;
    event_get_num(rec, "gpu.index", &g);
    in->gpu = (int)g;
    event_get_num(rec, "anomaly.peak_risk_score", &in->peak);
    event_get_num(rec, "anomaly.duration_s", &in->dur);
}

void live_record(struct live *l, const struct event *rec)
{
    char ty[16], rid[48], reason[480], ts[25];
    fstr(rec, "event.type", ty, sizeof ty);
    fstr(rec, "rule.id", rid, sizeof rid);
    fstr(rec, "event.reason", reason, sizeof reason);
    gl_fmt_ts(rec->ts_ms, ts);
    double risk = 0;
    event_get_num(rec, "event.risk_score", &risk);
    if (rec->dataset && !strcmp(rec->dataset, "gpu.incident")) {
        /* incidents apart from the rules' anomalies, and louder */
        int st = !strcmp(ty, "start"), ch = !strcmp(ty, "change");
        char act[64] = "", actwhy[120] = "";
        fstr(rec, "anomaly.action", act, sizeof act);
        fstr(rec, "anomaly.action_reason", actwhy, sizeof actwhy);
        if (ch) {
            fprintf(l->out, "%.19s  %s risk %3.0f  %s\n", ts, "\033[1;31mINCIDENT MORE\033[0m     ", risk, reason);
        } else {
            fprintf(l->out, "%.19s  %s risk %3.0f  %s\n", ts,
                    st ? "\033[1;7;31mINCIDENT\033[0m          " : "\033[1;32mINCIDENT OVER\033[0m     ", risk, reason);
            if (st && act[0]) fprintf(l->out, "%19s  %-18s -> %s (%s)\n", "", "", act, actwhy);
        }
        note_incident(l, rec, st ? 1 : ch ? 2 : 0);
        fflush(l->out);
        return;
    }
    const char *mark = !strcmp(ty, "start") ? "\033[1;31mOPEN \033[0m" : !strcmp(ty, "end") ? "\033[32mCLEAR\033[0m"
                                                                                         : "\033[33mMORE \033[0m";
    fprintf(l->out, "%.19s  %s %-18s risk %3.0f  %s\n", ts, mark, rid, risk, reason);
    if (!strcmp(ty, "start")) {
        l->starts++;
        size_t i = 0;
        while (i < l->nrules && strcmp(l->per_rule[i].id, rid)) i++;
        if (i == l->nrules && l->nrules < LIVE_RULES) snprintf(l->per_rule[l->nrules++].id, 48, "%s", rid);
        if (i < LIVE_RULES) l->per_rule[i].n++;
    } else if (!strcmp(ty, "end")) {
        l->ends++;
    }
    fflush(l->out);
}

/* The incidents l keeps, open ones first (only open ones: open_only). */
static void draw_incidents(struct live *l, int open_only)
{
    uint64_t n = l->ninc < LIVE_INCIDENTS ? l->ninc : LIVE_INCIDENTS;
    if (open_only && !l->inc_open) return;
    fprintf(l->out, "\033[1m-- incidents --\033[0m %llu, %llu open\n", (unsigned long long)l->ninc,
            (unsigned long long)l->inc_open);
    for (int pass = 1; pass >= (open_only ? 1 : 0); pass--)
        for (uint64_t k = 0; k < n; k++) {
            /* oldest first within each group */
            const struct live_inc *in = &l->inc[(l->ninc - n + k) % LIVE_INCIDENTS];
            if (in->open != pass) continue;
            char what[32];
            if (in->open) snprintf(what, sizeof what, "OPEN");
            else snprintf(what, sizeof what, "over after %.0f s", in->dur);
            fprintf(l->out, "  %-14s GPU %-2d since %.19s  %-18s peak risk %3.0f  %s%s%s\n", in->host, in->gpu, in->start,
                    what, in->peak, in->rules[0] ? in->rules : in->reason, in->act[0] ? "  -> " : "", in->act);
        }
    if (l->ninc > n) fprintf(l->out, "  (%llu earlier incidents not listed)\n", (unsigned long long)(l->ninc - n));
}

static void gpu_line(void *ctx, const char *host, int gpu, int64_t last_ts, const double *v, const int *have)
{
    FILE *out = ctx;
    char ts[25], h[128];
    gl_fmt_ts(last_ts, ts);
    gl_printable(h, sizeof h, host, strlen(host));
    fprintf(out, "  %-14s GPU %-2d %.19s ", h, gpu, ts);
    static const char *const fmt[] = { " %3.0f C", " %4.0f W", " util %3.0f%%", " %5.0f MHz", " fb %6.0f MiB" };
    for (int i = 0; i < 5; i++) {
        if (have[i]) fprintf(out, fmt[i], v[i]);
        else fprintf(out, "  -");
    }
    fputc('\n', out);
}

static void draw_status(struct live *l, const struct engine *eng)
{
    fprintf(l->out, "\033[1m-- GPUs --\033[0m\n");
    engine_foreach_gpu(eng, gpu_line, l->out);
    fflush(l->out);
}

void live_tick(struct live *l, const struct engine *eng)
{
    if (++l->ticks % 64) return;
    int64_t now = gl_now_ms();
    if (now - l->last_draw < 2000) return;
    l->last_draw = now;
    draw_incidents(l, 1);
    draw_status(l, eng);
}

static void open_line(void *ctx, const char *host, int gpu, const char *rule, int64_t start, double risk)
{
    FILE *out = ctx;
    char ts[25], h[128], r[128];
    gl_fmt_ts(start, ts);
    gl_printable(h, sizeof h, host, strlen(host));
    gl_printable(r, sizeof r, rule, strlen(rule));
    fprintf(out, "  %-14s GPU %-2d %-20s since %.19s  peak risk %.0f\n", h, gpu, r, ts, risk);
}

void live_summary(struct live *l, const struct engine *eng)
{
    if (l->ninc) draw_incidents(l, 0);
    draw_status(l, eng);
    const struct engine_stats *s = engine_get_stats(eng);
    fprintf(l->out, "\033[1m-- summary --\033[0m\n");
    if (l->ninc)
        fprintf(l->out, "  %llu incidents (%llu still open) grouping the anomalies below\n",
                (unsigned long long)l->ninc, (unsigned long long)l->inc_open);
    fprintf(l->out, "  %llu samples from %llu GPUs on %llu hosts; %llu anomalies opened, %llu resolved, %llu still open\n",
            (unsigned long long)s->samples, (unsigned long long)s->gpus, (unsigned long long)s->hosts,
            (unsigned long long)l->starts, (unsigned long long)l->ends, (unsigned long long)s->open);
    for (size_t i = 0; i < l->nrules; i++)
        fprintf(l->out, "  %-22s %llu\n", l->per_rule[i].id, (unsigned long long)l->per_rule[i].n);
    if (s->open) {
        fprintf(l->out, "  open now:\n");
        engine_foreach_open(eng, open_line, l->out);
    }
    fflush(l->out);
}
