/*
 * config_print.c - `gpulog config print`: the configuration as YAML, in
 * the table's order, with secrets (and passwords inside URLs) masked.
 */
#include "config_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---------------------------------------------------------------- printer */

static int plain_ok(const char *s)
{
    static const char *reserved[] = { "true", "false", "yes", "no", "on", "off", "null", "y", "n" };
    if (!isalpha((unsigned char)s[0]) && s[0] != '/') return 0;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("_./@+-", *p)) return 0;
    for (size_t i = 0; i < GL_ARRAY_LEN(reserved); i++)
        if (!strcasecmp(s, reserved[i])) return 0;
    return 1;
}

static void put_yaml_str(struct buf *b, const char *s)
{
    if (plain_ok(s)) { buf_puts(b, s); return; }
    buf_putc(b, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') { buf_putc(b, '\\'); buf_putc(b, (char)*p); }
        else if (*p == '\n') buf_puts(b, "\\n");
        else if (*p == '\t') buf_puts(b, "\\t");
        else if (*p < 0x20 || *p == 0x7f) buf_printf(b, "\\x%02x", *p);
        else buf_putc(b, (char)*p);
    }
    buf_putc(b, '"');
}

static void put_duration(struct buf *b, int64_t ms)
{
    if (ms && ms % 86400000 == 0) buf_printf(b, "%lldd", (long long)(ms / 86400000));
    else if (ms && ms % 3600000 == 0) buf_printf(b, "%lldh", (long long)(ms / 3600000));
    else if (ms && ms % 60000 == 0) buf_printf(b, "%lldm", (long long)(ms / 60000));
    else if (ms % 1000 == 0) buf_printf(b, "%llds", (long long)(ms / 1000));
    else buf_printf(b, "%lldms", (long long)ms);
}

static void put_size(struct buf *b, int64_t v)
{
    if (v && v % (1LL << 30) == 0) buf_printf(b, "%lldGiB", (long long)(v >> 30));
    else if (v && v % (1LL << 20) == 0) buf_printf(b, "%lldMiB", (long long)(v >> 20));
    else if (v && v % (1LL << 10) == 0) buf_printf(b, "%lldKiB", (long long)(v >> 10));
    else buf_printf(b, "%lld", (long long)v);
}

/* The one rule of what is secret (config.h): words that name a credential
 * anywhere in the key, or a last component that is a key; a path to a
 * secret (*_file, *.location) is not one. */
int config_secret_key(const char *k, size_t n)
{
    static const char *const words[] = { "password", "passwd", "secret", "token", "credential", "jaas", "private",
                                         "api_key", "apikey", "key.pem", "oauthbearer.config",
                                         "oauthbearer.extensions" };
    char low[256];
    if (n >= sizeof low) n = sizeof low - 1;
    for (size_t i = 0; i < n; i++) low[i] = (char)tolower((unsigned char)k[i]);
    low[n] = '\0';
    if ((n > 5 && !strcmp(low + n - 5, "_file")) || (n > 9 && !strcmp(low + n - 9, ".location"))) return 0;
    for (size_t i = 0; i < GL_ARRAY_LEN(words); i++)
        if (strstr(low, words[i])) return 1;
    const char *last = strrchr(low, '.');
    last = last ? last + 1 : low;
    size_t ln = strlen(last);
    return !strcmp(last, "key") || (ln > 4 && !strcmp(last + ln - 4, "_key"));
}

void config_url_mask(const char *url, struct buf *out)
{
    const char *scheme = strstr(url, "://");
    const char *host = scheme ? scheme + 3 : url;
    size_t auth = strcspn(host, "/?#");
    const char *at = memchr(host, '@', auth);
    /* the last '@' of the authority ends the user info (a password may hold '@') */
    for (const char *p = at; p && p < host + auth; p = memchr(p + 1, '@', (size_t)(host + auth - p - 1))) at = p;
    if (!scheme || !at) { buf_puts(out, url); return; }
    buf_append(out, url, (size_t)(host - url));
    buf_puts(out, "***");
    buf_puts(out, at);
}

/* put_yaml_str of s, with a password in a URL masked when mask is set. */
static void put_str_masked(struct buf *b, const char *s, int mask)
{
    if (!mask || !strstr(s, "://")) { put_yaml_str(b, s); return; }
    struct buf m;
    buf_init(&m);
    config_url_mask(s, &m);
    put_yaml_str(b, m.p ? m.p : "");
    buf_free(&m);
}

static void indent(struct buf *b, int n)
{
    for (int i = 0; i < n; i++) buf_puts(b, "  ");
}

static void put_value(struct buf *b, const struct config_key *k, const void *base, int mask, int depth)
{
    const char *f = (const char *)base + k->off;
    switch (k->type) {
    case CONFIG_STR: case CONFIG_ENUM: case CONFIG_ADDR: {
        const char *s = *(char *const *)f;
        buf_putc(b, ' ');
        if (mask && config_secret_key(k->path, strlen(k->path)) && *s) put_yaml_str(b, "***");
        else put_str_masked(b, s, mask);
        buf_putc(b, '\n');
        break;
    }
    case CONFIG_INT: buf_printf(b, " %lld\n", (long long)*(const int64_t *)f); break;
    case CONFIG_BOOL: buf_printf(b, " %s\n", *(const int *)f ? "true" : "false"); break;
    case CONFIG_DURATION: buf_putc(b, ' '); put_duration(b, *(const int64_t *)f); buf_putc(b, '\n'); break;
    case CONFIG_SIZE: buf_putc(b, ' '); put_size(b, *(const int64_t *)f); buf_putc(b, '\n'); break;
    case CONFIG_MAP: {
        const struct config_map *m = (const struct config_map *)f;
        if (!m->n) { buf_puts(b, " {}\n"); break; }
        buf_putc(b, '\n');
        for (size_t i = 0; i < m->n; i++) {
            const char *eq = strchr(m->kv[i], '=');
            size_t kl = (size_t)(eq - m->kv[i]);
            char *key = xstrndup(m->kv[i], kl);
            indent(b, depth + 1);
            put_yaml_str(b, key);
            buf_puts(b, ": ");
            if (mask && config_secret_key(key, kl) && eq[1]) put_yaml_str(b, "***");
            else put_str_masked(b, eq + 1, mask);
            buf_putc(b, '\n');
            free(key);
        }
        break;
    }
    case CONFIG_SOURCES: {
        const struct config_sources *ss = (const struct config_sources *)f;
        if (!ss->n) { buf_puts(b, " []\n"); break; }
        buf_putc(b, '\n');
        for (size_t i = 0; i < ss->n; i++) {
            int first = 1;
            for (size_t j = 0; j < cfg_nsource_table; j++) {
                const char *v = *cfg_str_field(&ss->v[i], &cfg_source_table[j]);
                if (!*v) continue;
                indent(b, depth);
                buf_puts(b, first ? "- " : "  ");
                first = 0;
                buf_printf(b, "%s: ", cfg_source_table[j].path);
                put_yaml_str(b, v);
                buf_putc(b, '\n');
            }
        }
        break;
    }
    }
}

/* Number of leading dot-separated components a and b (lengths la, lb) share. */
static int common_parts(const char *a, size_t la, const char *b, size_t lb)
{
    int n = 0;
    size_t i = 0;
    for (;;) {
        int ea = i == la || a[i] == '.', eb = i == lb || b[i] == '.';
        if (ea && eb && i > 0) n++;
        if (ea != eb || i == la || i == lb) return n;
        if (!ea && a[i] != b[i]) return n;
        i++;
    }
}

void config_print(const struct gpulog_config *cfg, int mask, struct buf *out)
{
    char prev[128] = "";   /* section of the previous key, e.g. "kafka.topics" */
    for (size_t i = 0; i < cfg_ntable; i++) {
        const char *path = cfg_table[i].path;
        const char *dot = strrchr(path, '.');
        size_t slen = dot ? (size_t)(dot - path) : 0;
        int c = common_parts(path, slen, prev, strlen(prev));
        /* open the sections below the shared ones */
        int depth = 0;
        size_t start = 0;
        while (start < slen) {
            const char *e = memchr(path + start, '.', slen - start);
            size_t end = e ? (size_t)(e - path) : slen;
            if (depth >= c) {
                indent(out, depth);
                buf_append(out, path + start, end - start);
                buf_puts(out, ":\n");
            }
            depth++;
            start = end + 1;
        }
        indent(out, depth);
        buf_printf(out, "%s:", cfg_last_part(path));
        put_value(out, &cfg_table[i], cfg, mask, depth);
        snprintf(prev, sizeof prev, "%.*s", (int)slen, path);
    }
}
