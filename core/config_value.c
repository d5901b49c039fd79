/*
 * config_value.c - the values of configuration keys: scalars by type
 * (strings, enums, integers, booleans, durations, sizes, addresses), maps
 * ("key=value" entries) and source items, each checked with a message
 * naming the key.
 */
#include "config_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* --------------------------------------------------------- small helpers */

void cfg_errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

char **cfg_str_field(void *base, const struct config_key *k)
{
    return (char **)((char *)base + k->off);
}

void cfg_set_str(char **dst, const char *v)
{
    free(*dst);
    *dst = xstrdup(v);
}

static int choice_ok(const char *choices, const char *v)
{
    size_t n = strlen(v);
    const char *p = choices;
    while (*p) {
        const char *e = strchr(p, '|');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, v, n)) return 1;
        p += len + (e ? 1 : 0);
    }
    return 0;
}

static int parse_bool(const char *v, int *out)
{
    static const char *t[] = { "true", "yes", "on", "1" }, *f[] = { "false", "no", "off", "0" };
    for (size_t i = 0; i < 4; i++) {
        if (!strcasecmp(v, t[i])) { *out = 1; return 1; }
        if (!strcasecmp(v, f[i])) { *out = 0; return 1; }
    }
    return 0;
}

/* Format names a source may name (config_set_formats); NULL = any. */
static const char *const *known_formats;

void config_set_formats(const char *const *names)
{
    known_formats = names;
}

/* "250ms", "10s", "1.5m", "2h", "7d", "30" (seconds) -> ms. */
static int parse_duration(const char *v, int64_t *out)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || errno || !(x >= 0) || x > 1e12) return 0;
    double mul;
    if (!*end || !strcmp(end, "s")) mul = 1000;
    else if (!strcmp(end, "ms")) mul = 1;
    else if (!strcmp(end, "m")) mul = 60000;
    else if (!strcmp(end, "h")) mul = 3600000;
    else if (!strcmp(end, "d")) mul = 86400000;
    else return 0;
    *out = (int64_t)(x * mul + 0.5);
    return 1;
}

/* "4096", "64KiB", "5MiB", "1G" -> bytes (1024-based units). */
static int parse_size(const char *v, int64_t *out)
{
    static const struct { const char *s; int64_t m; } u[] = {
        { "", 1 }, { "B", 1 },
        { "K", 1LL << 10 }, { "KB", 1LL << 10 }, { "KiB", 1LL << 10 },
        { "M", 1LL << 20 }, { "MB", 1LL << 20 }, { "MiB", 1LL << 20 },
        { "G", 1LL << 30 }, { "GB", 1LL << 30 }, { "GiB", 1LL << 30 },
    };
    const char *p = v;
    while (isdigit((unsigned char)*p)) p++;
    if (p == v || p - v > 15) return 0;
    int64_t n;
    if (!gl_parse_i64(v, (size_t)(p - v), &n)) return 0;
    for (size_t i = 0; i < GL_ARRAY_LEN(u); i++)
        if (!strcmp(p, u[i].s)) {
            if (n > INT64_MAX / u[i].m) return 0;
            *out = n * u[i].m;
            return 1;
        }
    return 0;
}

int config_split_addr(const char *addr, char *host, size_t hostlen, int *port)
{
    const char *colon;
    const char *h = addr;
    size_t hl;
    if (addr[0] == '[') {
        const char *rb = strchr(addr, ']');
        if (!rb || rb[1] != ':') return GL_ERROR;
        h = addr + 1;
        hl = (size_t)(rb - h);
        colon = rb + 1;
    } else {
        colon = strrchr(addr, ':');
        if (!colon) return GL_ERROR;
        hl = (size_t)(colon - addr);
        if (memchr(addr, ':', hl)) return GL_ERROR;   /* bare IPv6 needs [] */
    }
    const char *ps = colon + 1;
    int64_t p;
    if (!*ps || !gl_parse_i64(ps, strlen(ps), &p) || p < 0 || p > 65535) return GL_ERROR;
    if (hl >= hostlen) return GL_ERROR;
    memcpy(host, h, hl);
    host[hl] = '\0';
    for (size_t i = 0; i < hl; i++)
        if (isspace((unsigned char)host[i])) return GL_ERROR;
    *port = (int)p;
    return GL_OK;
}

/* Parses v as a number of the given type (integer, duration in ms, size
 * in bytes) into *out; NULL, or what was expected when v is not one. */
static const char *parse_number(enum config_type type, const char *v, int64_t *out)
{
    switch (type) {
    case CONFIG_INT: return gl_parse_i64(v, strlen(v), out) ? NULL : "an integer";
    case CONFIG_DURATION: return parse_duration(v, out) ? NULL : "a duration (250ms, 10s, 5m, 1h, 7d)";
    default: return parse_size(v, out) ? NULL : "a size (4096, 64KiB, 5MiB, 1GiB)";
    }
}

/* Parses a scalar value for key k into the struct at base. */
int config_url_ok(const char *url)
{
    size_t n = !strncmp(url, "http://", 7) ? 7 : !strncmp(url, "https://", 8) ? 8 : 0;
    if (!n) return 0;
    const char *host = url + n, *at = NULL;
    size_t auth = strcspn(host, "/?#");
    for (size_t i = 0; i < auth; i++) if (host[i] == '@') at = host + i;
    const char *h = at ? at + 1 : host;
    return h < host + auth && *h != ':';   /* a host before any port */
}

int config_namespace_ok(const char *ns)
{
    if (!ns || !*ns || ns[0] == '_') return 0;
    size_t n = 0;
    for (const char *p = ns; *p; p++, n++) {
        char c = *p;
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return 0;
    }
    return n <= 100;
}

int cfg_set_scalar(const struct config_key *k, void *base, const char *v, char *msg, size_t msglen)
{
    char *f = (char *)base + k->off;
    switch (k->type) {
    case CONFIG_STR:
        if ((k->flags & CONFIG_F_URL) && *v && !config_url_ok(v)) {
            struct buf m;   /* the URL's password is never echoed */
            buf_init(&m);
            config_url_mask(v, &m);
            cfg_errf(msg, msglen, "%s: '%s' is not an http:// or https:// URL with a host", k->path, m.p ? m.p : "");
            buf_free(&m);
            return GL_ERROR;
        }
        if ((k->flags & CONFIG_F_NAMESPACE) && !config_namespace_ok(v)) {
            cfg_errf(msg, msglen, "%s: '%s' is not a valid namespace ([a-z0-9_], not starting with _, at most 100)",
                     k->path, v);
            return GL_ERROR;
        }
        cfg_set_str((char **)f, v);
        return GL_OK;
    case CONFIG_ENUM:
        if (!choice_ok(k->choices, v)) {
            cfg_errf(msg, msglen, "%s: '%s' is not one of %s", k->path, v, k->choices);
            return GL_ERROR;
        }
        cfg_set_str((char **)f, v);
        return GL_OK;
    case CONFIG_ADDR: {
        char host[256];
        int port;
        if (*v && config_split_addr(v, host, sizeof host, &port) != GL_OK) {
            cfg_errf(msg, msglen, "%s: '%s' is not HOST:PORT (e.g. 0.0.0.0:9477, [::]:9477, :9477)", k->path, v);
            return GL_ERROR;
        }
        cfg_set_str((char **)f, v);
        return GL_OK;
    }
    case CONFIG_BOOL: {
        int b;
        if (!parse_bool(v, &b)) {
            cfg_errf(msg, msglen, "%s: expected true or false, got '%s'", k->path, v);
            return GL_ERROR;
        }
        *(int *)f = b;
        return GL_OK;
    }
    case CONFIG_INT: case CONFIG_DURATION: case CONFIG_SIZE: {
        int64_t x;
        const char *want = parse_number(k->type, v, &x);
        if (want) {
            cfg_errf(msg, msglen, "%s: expected %s, got '%s'", k->path, want, v);
            return GL_ERROR;
        }
        *(int64_t *)f = x;
        return GL_OK;
    }
    default:
        cfg_errf(msg, msglen, "%s: expected a %s, got a scalar", k->path,
             k->type == CONFIG_MAP ? "mapping" : "list");
        return GL_ERROR;
    }
}

/* ------------------------------------------------------------------ maps */

void cfg_map_clear(struct config_map *m)
{
    for (size_t i = 0; i < m->n; i++) free(m->kv[i]);
    free(m->kv);
    m->kv = NULL;
    m->n = 0;
}

void cfg_map_put(struct config_map *m, const char *key, size_t klen, const char *val)
{
    struct buf b;
    buf_init(&b);
    buf_append(&b, key, klen);
    buf_putc(&b, '=');
    buf_puts(&b, val);
    for (size_t i = 0; i < m->n; i++)
        if (!strncmp(m->kv[i], key, klen) && m->kv[i][klen] == '=') {
            free(m->kv[i]);
            m->kv[i] = b.p;
            return;
        }
    m->kv = xrealloc(m->kv, (m->n + 1) * sizeof *m->kv);
    m->kv[m->n++] = b.p;
}

const char *config_map_get(const struct config_map *m, const char *key)
{
    size_t kl = strlen(key);
    for (size_t i = 0; i < m->n; i++)
        if (!strncmp(m->kv[i], key, kl) && m->kv[i][kl] == '=') return m->kv[i] + kl + 1;
    return NULL;
}

int cfg_map_put_kv(struct config_map *m, const char *path, const char *kv, char *err, size_t errlen)
{
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv) {   /* the text is not echoed: it may be a secret pasted alone */
        cfg_errf(err, errlen, "%s: expected key=value (%s)", path, eq ? "no key before '='" : "no '='");
        return GL_ERROR;
    }
    char *val = xstrdup(eq + 1);
    cfg_map_put(m, kv, (size_t)(eq - kv), val);
    free(val);
    return GL_OK;
}

/* 1 when s (up to its first '=') is a property name: [A-Za-z0-9._-]+ and '='. */
static int name_then_eq(const char *s)
{
    const char *p = s;
    while (isalnum((unsigned char)*p) || *p == '.' || *p == '_' || *p == '-') p++;
    return p > s && *p == '=';
}

int cfg_map_put_list(struct config_map *m, const char *path, const char *text, char *err, size_t errlen)
{
    const char *item = text;
    size_t k = 0;
    for (;;) {
        /* the item ends at the next comma that a name= follows (a value may hold commas) */
        const char *end = item;
        for (;;) {
            end = strchr(end, ',');
            if (!end || name_then_eq(end + 1)) break;
            end++;
        }
        char *kv = end ? xstrndup(item, (size_t)(end - item)) : xstrdup(item);
        k++;
        int rc = cfg_map_put_kv(m, path, kv, err, errlen);
        free(kv);
        if (rc != GL_OK) {
            char e[GL_ERRLEN];
            snprintf(e, sizeof e, "%s", err);
            cfg_errf(err, errlen, "%s (item %zu of k=v,k=v)", e, k);
            return GL_ERROR;
        }
        if (!end) return GL_OK;
        item = end + 1;
    }
}

/* --------------------------------------------------------------- sources */

static void source_free(struct config_source *s)
{
    free(s->type);
    free(s->command);
    free(s->path);
    free(s->format);
    memset(s, 0, sizeof *s);
}

static void source_defaults(struct config_source *s)
{
    for (size_t i = 0; i < cfg_nsource_table; i++)
        *cfg_str_field(s, &cfg_source_table[i]) = xstrdup(cfg_source_table[i].def);
}

void config_clear_sources(struct gpulog_config *cfg)
{
    for (size_t i = 0; i < cfg->sources.n; i++) source_free(&cfg->sources.v[i]);
    free(cfg->sources.v);
    cfg->sources.v = NULL;
    cfg->sources.n = 0;
}

struct config_source *cfg_source_append(struct config_sources *ss)
{
    ss->v = xrealloc(ss->v, (ss->n + 1) * sizeof *ss->v);
    struct config_source *s = &ss->v[ss->n++];
    memset(s, 0, sizeof *s);
    source_defaults(s);
    return s;
}

/* Checks one complete source item; fills the kmsg default path. */
int cfg_source_check(struct config_source *s, char *msg, size_t msglen)
{
    if (!*s->type) {
        cfg_errf(msg, msglen, "source: 'type' is required (exec, file, kmsg or stdin)");
        return GL_ERROR;
    }
    if (!strcmp(s->type, "exec") && !*s->command) {
        cfg_errf(msg, msglen, "source of type exec needs 'command'");
        return GL_ERROR;
    }
    if (strcmp(s->type, "exec") && *s->command) {
        cfg_errf(msg, msglen, "'command' is only for sources of type exec (this one is %s)", s->type);
        return GL_ERROR;
    }
    if (!strcmp(s->type, "file") && !*s->path) {
        cfg_errf(msg, msglen, "source of type file needs 'path'");
        return GL_ERROR;
    }
    if ((!strcmp(s->type, "exec") || !strcmp(s->type, "stdin")) && *s->path) {
        cfg_errf(msg, msglen, "'path' is not used by sources of type %s", s->type);
        return GL_ERROR;
    }
    if (!strcmp(s->type, "kmsg") && !*s->path) cfg_set_str(&s->path, "/dev/kmsg");
    if (known_formats) {
        size_t i = 0;
        while (known_formats[i] && strcmp(known_formats[i], s->format)) i++;
        if (!known_formats[i]) {
            struct buf b;
            buf_init(&b);
            for (i = 0; known_formats[i]; i++) buf_printf(&b, "%s%s", i ? ", " : "", known_formats[i]);
            cfg_errf(msg, msglen, "source format '%s' is unknown (formats: %s)", s->format, b.p ? b.p : "");
            buf_free(&b);
            return GL_ERROR;
        }
    }
    return GL_OK;
}

/* "exec:CMD", "file:PATH", "kmsg[:PATH]", "stdin" (optionally "@FORMAT"
 * is not supported: set format with config_set on the item instead). */
int cfg_source_add_spec(struct gpulog_config *cfg, const char *spec, char *err, size_t errlen)
{
    const char *colon = strchr(spec, ':');
    size_t tl = colon ? (size_t)(colon - spec) : strlen(spec);
    char type[16];
    if (tl == 0 || tl >= sizeof type) {
        cfg_errf(err, errlen, "sources: expected TYPE[:ARG] (exec:CMD, file:PATH, kmsg, stdin), got '%s'", spec);
        return GL_ERROR;
    }
    memcpy(type, spec, tl);
    type[tl] = '\0';
    if (!choice_ok(cfg_source_table[0].choices, type)) {
        cfg_errf(err, errlen, "sources: unknown source type '%s' (exec, file, kmsg, stdin)", type);
        return GL_ERROR;
    }
    struct config_sources tmp = { NULL, 0 };
    struct config_source *s = cfg_source_append(&tmp);
    cfg_set_str(&s->type, type);
    const char *arg = colon ? colon + 1 : "";
    if (!strcmp(type, "exec")) cfg_set_str(&s->command, arg);
    else cfg_set_str(&s->path, arg);
    char msg[GL_ERRLEN];
    if (cfg_source_check(s, msg, sizeof msg) != GL_OK) {
        cfg_errf(err, errlen, "sources: %s", msg);
        source_free(s);
        free(tmp.v);
        return GL_ERROR;
    }
    cfg->sources.v = xrealloc(cfg->sources.v, (cfg->sources.n + 1) * sizeof *cfg->sources.v);
    cfg->sources.v[cfg->sources.n++] = *s;
    free(tmp.v);
    return GL_OK;
}
