/* run_loop.c - the stream of `gpulog run` (see run_loop.h). */
#include "run_loop.h"
#include "cli.h"
#include "../parsers/kmsg.h"
#include "../ingest/parts.h"
#include "../ingest/pipeline.h"
#include "../parsers/parser.h"
#include "../detect/engine.h"
#include "../detect/live.h"
#include "../detect/report.h"
#include "../core/metrics.h"
#include "../core/gpumetrics.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

void run_settle(void *ctx, void *token, enum sink_outcome outcome)
{
    (void)token;
    struct run_ctx *r = ctx;
    r->settled++;
    if (outcome == SINK_DEADLETTER) { r->deadlettered++; metrics_inc(M_DEADLETTERS); }
    else metrics_inc(M_EVENTS_PRODUCED);
}

int run_profile(struct run_ctx *r, const struct parser_ops *ops, const char *detectors, const char *profile,
                char *err, size_t errlen)
{
    r->detectors = detectors;
    r->profile_name = profile;
    r->auto_pending = !r->detectors && !strcmp(r->profile_name, "auto");
    if (r->auto_pending && strcmp(ops->name, "auto")) {
        /* the format says it: generic CSV carries no GPU fields, the others do */
        r->auto_pending = 0;
        r->profile_name = strcmp(ops->name, "csv") ? "gpu" : "generic";
        log_info("msg=profile profile=%s reason=\"--format %s\"", r->profile_name, ops->name);
    }
    r->prof = profile_load(r->detectors, r->profile_name, err, errlen);
    return r->prof ? GL_OK : GL_ERROR;
}

int run_outputs(struct run_ctx *r, const char *output, int ndjson_stdout, const struct es_conf *es,
                char *err, size_t errlen)
{
    struct sink *s;
    if (output) {
        if (!(s = sink_file_new(output, run_settle, r, err, errlen))) return GL_ERROR;
        s->streams = SINK_STREAM(STREAM_ANOMALIES);
        outputs_add(&r->out, s);
    }
    if (ndjson_stdout) {
        if (!(s = sink_file_new(NULL, run_settle, r, err, errlen))) return GL_ERROR;
        s->streams = SINK_STREAM(STREAM_ANOMALIES);
        outputs_add(&r->out, s);
    }
    if (es->url) {
        if (!(s = sink_es_new(es, run_settle, r, err, errlen))) return GL_ERROR;
        /* --index-metrics: the parsed metric events too (metrics-gpu.dmon-NS) */
        s->streams = SINK_STREAM(STREAM_ANOMALIES) | (es->index_metrics ? SINK_STREAM(STREAM_METRICS) : 0);
        outputs_add(&r->out, s);
    }
    r->streams = 0;
    for (size_t i = 0; i < r->out.n; i++) r->streams |= r->out.v[i]->streams;
    return GL_OK;
}

/* Writes ev on stream to every output that takes it (a blocking write: the
 * outputs settle on their own, nothing is committed). */
static void run_write(struct run_ctx *r, const struct event *ev, enum sink_stream stream)
{
    struct sink_doc d;
    sink_doc_of(&d, ev, stream, NULL, NULL, &r->json, &r->key);
    for (size_t i = 0; i < r->out.n; i++) {
        if (!sink_takes(r->out.v[i], stream)) continue;
        int rc;
        while ((rc = sink_write(r->out.v[i], &d)) == GL_AGAIN) sink_poll(r->out.v[i], 100);
        if (rc == GL_ERROR) {   /* an output failed for good (said after the drain): reading on would only lose more */
            r->failed_writes++;
            pipeline_stop();
        } else {
            r->written++;
        }
    }
}

void run_emit_record(void *ctx, const struct event *rec)
{
    struct run_ctx *r = ctx;
    run_write(r, rec, STREAM_ANOMALIES);
    if (r->live) live_record(r->live, rec);
    if (r->report) report_record(r->report, rec);
    gpumetrics_record(rec);
}

/* Profile auto: at the first metric event, keeps gpu when the event
 * carries GPU fields (gpu.*), else switches r's engine to the generic
 * profile (it has seen kernel events at most). Logs the choice and why. */
static void run_choose_profile(struct run_ctx *r, const struct event *ev)
{
    if (!ev->kind || strcmp(ev->kind, "metric")) return;
    r->auto_pending = 0;
    const char *gpu_field = NULL;
    for (size_t i = 0; i < ev->nf && !gpu_field; i++)
        if (!strncmp(ev->f[i].key, "gpu.", 4)) gpu_field = ev->f[i].key;
    if (gpu_field) {
        r->profile_name = "gpu";
        log_info("msg=profile profile=gpu reason=\"the input carries GPU fields (%s)\"", gpu_field);
        return;
    }
    char err[GL_ERRLEN];
    struct profile *np = profile_load(NULL, "generic", err, sizeof err);
    if (!np) {
        log_error("msg=\"profile generic failed to load, gpu stays\" error=\"%s\"", err);
        return;
    }
    engine_reload(r->eng, np, NULL);
    profile_free(r->prof);
    r->prof = np;
    r->profile_name = "generic";
    log_info("msg=profile profile=generic reason=\"the input carries no GPU fields (first metric event: %s, %zu fields)\"",
             ev->dataset ? ev->dataset : "-", ev->nf);
}

/* Says once on stderr when the profile tracks no series after the first
 * few hundred events although metric samples came: its rules name none of
 * the input's fields, so nothing is judged. */
static void run_check_tracking(struct run_ctx *r)
{
    const struct engine_stats *es = engine_get_stats(r->eng);
    if (r->tracking_checked || es->events < 300) return;
    r->tracking_checked = 1;
    if (es->series || !es->samples) return;
    gl_say(GL_LOG_ERROR, "gpulog run: profile %s tracks no series after %llu events (%llu metric samples): none of its rules "
            "names a field of this input; use --profile generic or a --detectors file\n",
            r->detectors ? r->detectors : r->profile_name, (unsigned long long)es->events,
            (unsigned long long)es->samples);
}

void run_emit_event(void *ctx, const struct event *ev)
{
    struct run_ctx *r = ctx;
    if (r->auto_pending) run_choose_profile(r, ev);
    engine_feed(r->eng, ev);
    enum sink_stream st = sink_stream_of(ev->dataset);
    if (st != STREAM_ANOMALIES && (r->streams & SINK_STREAM(st))) run_write(r, ev, st);   /* --index-metrics */
    run_check_tracking(r);
    gpumetrics_observe(ev);
    if (r->report) report_event(r->report, ev);
    if (r->live) live_tick(r->live, r->eng);
}

/* SIGHUP: the detector configuration again (stage_reload), and the open
 * anomalies gauge. */
static void run_reload(struct run_ctx *r)
{
    if (stage_reload(r->eng, &r->prof, r->detectors, r->profile_name) == GL_OK)
        metrics_set(M_ANOMALIES_OPEN, (int64_t)engine_get_stats(r->eng)->open);
}

/* Once a second from the loop: the outputs make progress while the input
 * is idle, and the open-anomalies gauge. */
static void run_tick(void *ctx)
{
    struct run_ctx *r = ctx;
    outputs_poll(&r->out, 0);
    metrics_set(M_ANOMALIES_OPEN, (int64_t)engine_get_stats(r->eng)->open);
}

static void run_reload_cb(void *ctx) { run_reload(ctx); }

/* The input as the loop's fd source, named as run names it: FILE, "-", or
 * the command (its pipe reopened through /dev/fd, no log.file.path). */
static struct source *run_source(struct pipeline *pl, const struct run_input *in, const char *format, char *err,
                                 size_t errlen)
{
    char dev[32];
    snprintf(dev, sizeof dev, "/dev/fd/%d", in->fd);
    const char *arg = in->is_stdin ? "-" : in->exec_cmd ? dev : in->file;
    struct source *s = pipeline_open(pl, "fd", arg, format, err, errlen);
    if (s && in->exec_cmd) {
        free(s->name);
        s->name = xstrdup(in->exec_cmd);
        s->path = NULL;
    }
    return s;
}

int run_read(struct run_ctx *r, const struct run_input *in, const struct run_read_opts *o, struct feed_stats *st,
             int *stopped)
{
    struct pipeline_opts po = {
        .host = o->host, .fixed_now = feed_read_time(), .by_lineno = 1, .quiet = o->quiet, .max_reports = 20,
        .metrics = 1, .stage = run_emit_event, .reload = run_reload_cb, .tick = run_tick, .ctx = r,
    };
    struct pipeline *pl = pipeline_new(&po);
    char err[GL_ERRLEN];
    struct source *s = run_source(pl, in, o->format, err, sizeof err);
    if (!s) {
        gl_say(GL_LOG_ERROR, "gpulog run: %s\n", err);
        pipeline_free(pl);
        return GL_ERROR;
    }
    s->parser->opt_columns = o->columns;
    /* non-blocking, so that signals are seen while the input is quiet */
    int fd = s->ops->pollfd(s), fl = fcntl(fd, F_GETFL);
    if (fl >= 0 && !(fl & O_NONBLOCK)) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    cli_catch_signals(pipeline_on_signal);
    pipeline_run(pl);
    pipeline_finish(pl);                 /* the parser's last events; run's outputs are its own */
    if (fl >= 0 && !(fl & O_NONBLOCK)) fcntl(fd, F_SETFL, fl);
    *st = (struct feed_stats){ .lines = s->lines, .events = s->events, .rejected = s->rejected,
                               .declined = s->declined };
    *stopped = pipeline_stopping() && !r->failed_writes;
    int rc = s->failed || r->failed_writes ? GL_ERROR : GL_OK;
    pipeline_free(pl);
    return rc;
}

int run_finish(struct run_ctx *r, const char *cmd, int64_t shutdown_ms)
{
    int rc = GL_OK;
    engine_flush(r->eng);
    metrics_set(M_ANOMALIES_OPEN, (int64_t)engine_get_stats(r->eng)->open);
    long left = outputs_drain(&r->out, gl_now_ms() + shutdown_ms);
    int out_failed = outputs_failed(&r->out, cmd) > 0;
    if (left > 0) {
        if (out_failed) gl_say(GL_LOG_ERROR, "gpulog %s: %ld records not written\n", cmd, left);
        else gl_say(GL_LOG_ERROR, "gpulog %s: %ld records not written within the shutdown deadline (%lld ms)\n", cmd, left,
                     (long long)shutdown_ms);
        rc = GL_ERROR;
    }
    if (out_failed) rc = GL_ERROR;
    if (r->live) live_summary(r->live, r->eng);
    return rc;
}

int run_open(const struct run_mode *m, struct run_input *in, int year)
{
    char err[GL_ERRLEN];
    in->is_stdin = !in->exec_cmd && !strcmp(in->file, "-");
    if (in->exec_cmd) {
        in->cargv = argv_split(in->exec_cmd);
        if (!in->cargv || !in->cargv[0]) return cli_usage_error(m->name, "cannot split --exec command");
        in->child = exec_spawn(in->cargv, &in->fd, err, sizeof err);
        if (in->child < 0) {
            gl_say(GL_LOG_ERROR, "gpulog run: %s\n", err);
            return EXIT_IOERR;
        }
    } else if (!in->is_stdin && (in->fd = open(in->file, O_RDONLY | O_CLOEXEC)) < 0) {
        gl_say(GL_LOG_ERROR, "gpulog %s: %s: %s\n", m->name, in->file, strerror(errno));
        return EXIT_IOERR;
    }
    struct stat fst;
    int64_t ref = !in->exec_cmd && !in->is_stdin && fstat(in->fd, &fst) == 0 && S_ISREG(fst.st_mode)
                  ? (int64_t)fst.st_mtim.tv_sec * 1000 + fst.st_mtim.tv_nsec / 1000000 : 0;
    kmsg_syslog_year(year, feed_read_time() ? 0 : ref);
    return EXIT_OK;
}

void run_close(struct run_input *in)
{
    if (in->child > 0) {
        kill(-in->child, SIGTERM);
        int wst;
        waitpid(in->child, &wst, 0);
    }
    argv_free(in->cargv);
    if (in->fd > 0) close(in->fd);
}

/* Writes r's report to path ("-": stdout) after the input ended; the
 * caller keeps r. A regular file (or a new one) is written beside it under
 * a temporary name, synced and renamed over it: an interrupted or failed
 * write leaves the page that was there; a FIFO, device or symlink is
 * written in place. Returns GL_OK or GL_ERROR (reported on stderr). */
static int run_write_report(const struct run_mode *m, struct run_ctx *r, const char *path, const struct report_info *ri)
{
    struct stat lst;
    int in_place = !strcmp(path, "-") || (lstat(path, &lst) == 0 && !S_ISREG(lst.st_mode));
    struct buf tmp;
    buf_init(&tmp);
    if (!in_place) buf_printf(&tmp, "%s.tmp-%ld", path, (long)getpid());
    FILE *f = !strcmp(path, "-") ? stdout : fopen(in_place ? path : tmp.p, "w");
    int rc = f ? report_write(r->report, ri, f) : GL_ERROR;
    if (rc == GL_OK && f && !in_place && fsync(fileno(f)) != 0) rc = GL_ERROR;
    if (f && f != stdout && fclose(f) != 0) rc = GL_ERROR;
    if (rc == GL_OK && !in_place && rename(tmp.p, path) != 0) rc = GL_ERROR;
    int e = errno;
    if (!in_place && rc != GL_OK) unlink(tmp.p);
    buf_free(&tmp);
    if (rc != GL_OK) gl_say(GL_LOG_ERROR, "gpulog %s: %s: %s", m->name, path, strerror(e));
    else if (f != stdout)
        gl_say(GL_LOG_INFO, "gpulog %s: %sreport written to %s", m->name, ri->partial ? "partial " : "", path);
    return rc;
}

int run_stream(const struct run_mode *m, struct run_ctx *r, const struct run_input *in, const struct run_read_opts *o,
               const char *report_path, int64_t shutdown_ms)
{
    const char *name = in->exec_cmd ? in->exec_cmd : in->is_stdin ? "<stdin>" : in->file;
    metrics_set_ready(1);
    struct feed_stats st = { 0 };
    int stopped = 0, rc = run_read(r, in, o, &st, &stopped);
    metrics_set_ready(0);
    if (run_finish(r, m->name, shutdown_ms) != GL_OK) rc = GL_ERROR;
    struct report_info ri = { name, r->detectors ? r->detectors : r->profile_name, st.lines, st.rejected, stopped };
    if (r->report && run_write_report(m, r, report_path, &ri) != GL_OK) rc = GL_ERROR;
    if (m->report_only && stopped) {
        /* a page of part of the input is not the page asked for: it says so, and so does the status */
        gl_say(GL_LOG_ERROR, "gpulog %s: stopped by a signal before the end of the input: the page is partial (marked so)",
               m->name);
        rc = GL_ERROR;
    }
    if (run_summary(r, m->name, name, &st, stopped) != GL_OK) rc = GL_ERROR;
    return rc == GL_OK ? EXIT_OK : EXIT_IOERR;
}

int run_summary(struct run_ctx *r, const char *cmd, const char *name, const struct feed_stats *st, int stopped)
{
    const struct engine_stats *es = engine_get_stats(r->eng);
    char folded[64] = "";
    if (es->folded)
        snprintf(folded, sizeof folded, ", %llu rows folded into their sample step", (unsigned long long)es->folded);
    gl_say(GL_LOG_INFO,
            "gpulog %s: %s: %llu lines, %llu events, %llu rejected; %llu samples, %llu GPUs, %llu series, "
            "%llu out-of-order dropped, %llu duplicates, %llu gaps%s; anomalies: %llu started, %llu changed, "
            "%llu ended, %llu still open%s\n",
            cmd, name, (unsigned long long)st->lines, (unsigned long long)st->events,
            (unsigned long long)st->rejected, (unsigned long long)es->samples, (unsigned long long)es->gpus,
            (unsigned long long)es->series, (unsigned long long)es->out_of_order,
            (unsigned long long)es->duplicates, (unsigned long long)es->gaps, folded, (unsigned long long)es->starts,
            (unsigned long long)es->changes, (unsigned long long)es->ends, (unsigned long long)es->open,
            stopped ? " (stopped by a signal)" : "");
    if (es->evicted_active)
        gl_say(GL_LOG_WARN, "gpulog %s: max_series %zu is below the GPUs' series: %llu evictions of GPUs still reporting "
                "(each starts cold again; gpulog_gpus_evicted_total{reason=\"max_series\"})\n", cmd, r->prof->max_series,
                (unsigned long long)es->evicted_active);
    int rc = GL_OK;
    if (r->failed_writes) {
        gl_say(GL_LOG_ERROR, "gpulog run: %llu records could not be written\n", (unsigned long long)r->failed_writes);
        rc = GL_ERROR;
    }
    /* a record refused for good is not delivered: the exit status says so,
     * as collect's does (every record dead-lettered exited 0) */
    if (r->deadlettered) {
        gl_say(GL_LOG_ERROR, "gpulog %s: %llu records were refused by an output for good and dead-lettered (not delivered there)\n",
                cmd, (unsigned long long)r->deadlettered);
        rc = GL_ERROR;
    }
    return rc;
}

void run_ctx_free(struct run_ctx *r)
{
    outputs_free(&r->out);
    engine_free(r->eng);
    live_free(r->live);
    report_free(r->report);
    profile_free(r->prof);
    buf_free(&r->json);
    buf_free(&r->key);
}
