/* live.c - see live.h. */
#include "live.h"

#include <stdlib.h>
#include <string.h>

#define LIVE_RULES 64

struct live {
    FILE *out;
    int64_t last_draw;
    uint64_t ticks;
    uint64_t starts, ends;
    struct { char id[48]; uint64_t n; } per_rule[LIVE_RULES];
    size_t nrules;
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
    if (!s) return "";
    snprintf(buf, n, "%.*s", (int)len, s);
    return buf;
}

void live_record(struct live *l, const struct event *rec)
{
    char ty[16], rid[48], reason[320], ts[25];
    fstr(rec, "event.type", ty, sizeof ty);
    fstr(rec, "rule.id", rid, sizeof rid);
    fstr(rec, "event.reason", reason, sizeof reason);
    gl_fmt_ts(rec->ts_ms, ts);
    double risk = 0;
    event_get_num(rec, "event.risk_score", &risk);
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

static void gpu_line(void *ctx, const char *host, int gpu, int64_t last_ts, const double *v, const int *have)
{
    FILE *out = ctx;
    char ts[25];
    gl_fmt_ts(last_ts, ts);
    fprintf(out, "  %-14s GPU %-2d %.19s ", host, gpu, ts);
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
    draw_status(l, eng);
}

static void open_line(void *ctx, const char *host, int gpu, const char *rule, int64_t start, double risk)
{
    FILE *out = ctx;
    char ts[25];
    gl_fmt_ts(start, ts);
    fprintf(out, "  %-14s GPU %-2d %-20s since %.19s  peak risk %.0f\n", host, gpu, rule, ts, risk);
}

void live_summary(struct live *l, const struct engine *eng)
{
    draw_status(l, eng);
    const struct engine_stats *s = engine_get_stats(eng);
    fprintf(l->out, "\033[1m-- summary --\033[0m\n");
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
