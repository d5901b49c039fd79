/* engine_harness.h - what the detector-engine tests share (test_detectors.c,
 * test_reload.c, test_snapshot.c, fuzz_snapshot.c, ...): profiles from JSON text and metric samples fed to an
 * engine. Include after test.h and ../detect/engine.h. */
#ifndef GPULOG_ENGINE_HARNESS_H
#define GPULOG_ENGINE_HARNESS_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define T0 1762473600000LL

/* A profile from JSON text (caller frees with profile_free), or NULL with the
 * error printed. */
static inline struct profile *prof_of(const char *json)
{
    char err[256];
    struct profile *p = profile_from_json(json, strlen(json), err, sizeof err);
    if (!p) printf("  profile error: %s\n", err);
    return p;
}

/* The built-in profile name ("gpu", "generic"; caller frees with
 * profile_free), or NULL with the error printed. */
static inline struct profile *prof_builtin(const char *name)
{
    char err[256];
    struct profile *p = profile_load(NULL, name, err, sizeof err);
    if (!p) printf("  profile %s: %s\n", name, err);
    return p;
}

/* Feeds one metric sample of host/gpu (gpu < 0: none) at ms milliseconds
 * after T0 as input partition tag, the pairs key (const char *), value
 * (double) in ap up to a NULL key. */
static inline void sample_va_ms(struct engine *e, int tag, const char *host, int gpu, int64_t ms, va_list ap)
{
    struct event ev;
    event_init(&ev);
    ev.kind = "metric";
    ev.dataset = "gpu.dmon";
    ev.host = host;
    ev.offset = -1;
    ev.ts_ms = T0 + ms;
    if (gpu >= 0) event_add_int(&ev, "gpu.index", gpu);
    const char *k;
    while ((k = va_arg(ap, const char *))) event_add_num(&ev, k, va_arg(ap, double));
    engine_feed_tag(e, &ev, tag);
    event_free(&ev);
}

/* sample_va_ms at sec seconds after T0. */
static inline void sample_va(struct engine *e, int tag, const char *host, int gpu, int64_t sec, va_list ap)
{
    sample_va_ms(e, tag, host, gpu, sec * 1000, ap);
}

/* Feeds one metric sample of host/gpu (gpu < 0: none) at ms milliseconds
 * after T0, then pairs key (const char *), value (double); NULL ends the list. */
static inline void sample_ms(struct engine *e, const char *host, int gpu, int64_t ms, ...)
{
    va_list ap;
    va_start(ap, ms);
    sample_va_ms(e, 0, host, gpu, ms, ap);
    va_end(ap);
}

/* Feeds one metric sample of host/gpu (gpu < 0: none) at sec seconds after
 * T0, then pairs key (const char *), value (double); NULL ends the list. */
static inline void sample(struct engine *e, const char *host, int gpu, int64_t sec, ...)
{
    va_list ap;
    va_start(ap, sec);
    sample_va(e, 0, host, gpu, sec, ap);
    va_end(ap);
}

/* The same for input partition tag (engine_feed_tag: gpulog detect). */
static inline void sample_tagged(struct engine *e, int tag, const char *host, int gpu, int64_t sec, ...)
{
    va_list ap;
    va_start(ap, sec);
    sample_va(e, tag, host, gpu, sec, ap);
    va_end(ap);
}

/* The string field k of ev into out ("" when absent). */
static inline void ev_str(const struct event *ev, const char *k, char *out, size_t len)
{
    size_t n = 0;
    const char *s = event_get_str(ev, k, &n);
    snprintf(out, len, "%.*s", s ? (int)n : 0, s ? s : "");
}

/* Starts an Xid kernel event of host at ms with code (the caller adds
 * fields, feeds it and frees it with event_free). */
static inline void xid_event(struct event *ev, const char *host, int64_t ms, int code)
{
    event_init(ev);
    ev->kind = "event";
    ev->dataset = "gpu.xid";
    ev->host = host;
    ev->offset = -1;
    ev->ts_ms = ms;
    event_add_int(ev, "gpu.xid.code", code);
}

#endif
