/* es_bulk.c - see es_bulk.h. */
#include "es_bulk.h"
#include "../core/config.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int es_ns_valid(const char *ns)
{
    return config_namespace_ok(ns);   /* the one rule, also config check's */
}

int es_stream_name(enum sink_stream st, const char *ns, char *out, size_t outlen)
{
    const char *base = st == STREAM_ANOMALIES ? "logs-gpu.anomaly-"
                     : st == STREAM_EVENTS ? "logs-gpu.xid-" : "metrics-gpu.dmon-";
    int n = snprintf(out, outlen, "%s%s", base, ns && *ns ? ns : "default");
    return n < 0 || (size_t)n >= outlen ? -1 : n;
}

void es_bulk_append(struct buf *body, const char *index, const char *id,
                    const char *json, size_t len)
{
    buf_puts(body, "{\"create\":{\"_index\":");
    buf_put_json_str(body, index, strlen(index));
    if (id && *id) {
        buf_puts(body, ",\"_id\":");
        buf_put_json_str(body, id, strlen(id));
    }
    buf_puts(body, "}}\n");
    size_t start = body->len;
    buf_append(body, json, len);
    for (size_t i = start; i < body->len; i++)
        if (body->p[i] == '\n' || body->p[i] == '\r') body->p[i] = ' ';
    buf_putc(body, '\n');
}

enum es_verdict es_item_verdict(int status)
{
    if (status >= 200 && status < 300) return ES_STORED;
    if (status == 409) return ES_STORED;
    if (status == 429 || (status >= 500 && status < 600)) return ES_RETRY;
    return ES_REJECT;
}

void es_bulk_result_free(struct es_bulk_result *res)
{
    if (!res) return;
    for (size_t i = 0; i < res->n; i++) free(res->items[i].reason);
    free(res->items);
    res->items = NULL;
    res->n = 0;
}

static char *item_reason(json_t *action)
{
    json_t *e = json_object_get(action, "error");
    if (!e) return NULL;
    if (json_is_string(e)) return xstrdup(json_string_value(e));
    const char *type = json_string_value(json_object_get(e, "type"));
    const char *reason = json_string_value(json_object_get(e, "reason"));
    struct buf b;
    buf_init(&b);
    if (type) buf_puts(&b, type);
    if (type && reason) buf_puts(&b, ": ");
    if (reason) buf_puts(&b, reason);
    if (!type && !reason) {
        char *s = json_dumps(e, JSON_COMPACT);
        if (s) { buf_puts(&b, s); free(s); }
    }
    return b.p ? b.p : xstrdup("");
}

int es_bulk_parse(const char *body, size_t len, size_t expect_n,
                  struct es_bulk_result *res, char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    json_error_t je;
    json_t *root = json_loadb(body, len, 0, &je);
    if (!root || !json_is_object(root)) {
        snprintf(err, errlen, "bulk response is not a JSON object: %s", root ? "wrong type" : je.text);
        json_decref(root);
        return GL_ERROR;
    }
    json_t *errors = json_object_get(root, "errors");
    json_t *items = json_object_get(root, "items");
    if (!json_is_boolean(errors)) {
        snprintf(err, errlen, "bulk response without an \"errors\" flag");
        json_decref(root);
        return GL_ERROR;
    }
    res->errors = json_is_true(errors);
    if (!items) {
        if (res->errors) {
            snprintf(err, errlen, "bulk response says errors but carries no items");
            json_decref(root);
            return GL_ERROR;
        }
        res->n = expect_n;
        res->items = xcalloc(expect_n ? expect_n : 1, sizeof *res->items);
        for (size_t i = 0; i < expect_n; i++) res->items[i].status = 201;
        json_decref(root);
        return GL_OK;
    }
    if (!json_is_array(items) || json_array_size(items) != expect_n) {
        snprintf(err, errlen, "bulk response has %zu items, expected %zu",
                 json_is_array(items) ? json_array_size(items) : 0, expect_n);
        json_decref(root);
        return GL_ERROR;
    }
    res->n = expect_n;
    res->items = xcalloc(expect_n ? expect_n : 1, sizeof *res->items);
    for (size_t i = 0; i < expect_n; i++) {
        json_t *it = json_array_get(items, i);
        const char *k;
        json_t *action = NULL;
        if (json_is_object(it) && json_object_size(it) == 1)
            json_object_foreach(it, k, action) break;
        json_t *st = action ? json_object_get(action, "status") : NULL;
        if (!json_is_integer(st)) {
            snprintf(err, errlen, "bulk response item %zu has no status", i);
            es_bulk_result_free(res);
            json_decref(root);
            return GL_ERROR;
        }
        res->items[i].status = (int)json_integer_value(st);
        if (es_item_verdict(res->items[i].status) != ES_STORED || res->items[i].status == 409)
            res->items[i].reason = item_reason(action);
    }
    json_decref(root);
    return GL_OK;
}

int64_t es_backoff_ms(int attempt, int64_t base_ms, int64_t max_ms, uint64_t *rnd)
{
    if (attempt < 1) attempt = 1;
    int64_t d = base_ms;
    for (int i = 1; i < attempt && d < max_ms; i++) d *= 2;
    if (d > max_ms) d = max_ms;
    uint64_t x = *rnd ? *rnd : 0x9e3779b97f4a7c15ull;
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    *rnd = x;
    int64_t half = d / 2;
    return d - half + (half > 0 ? (int64_t)(x % (uint64_t)(half + 1)) : 0);
}

