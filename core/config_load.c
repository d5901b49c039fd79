/*
 * config_load.c - the YAML loader of the configuration (libyaml document
 * API, so every node carries a line and column): unknown keys, wrong types
 * and duplicates are errors reported as FILE:LINE:COL.
 */
#include "config_int.h"

#include "yamldoc.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>

/* ------------------------------------------------------------ YAML loader */

struct load {
    const char *name;
    yaml_document_t *doc;
    struct gpulog_config *cfg;
    char *err;
    size_t errlen, used;
    int nerr;
};

static void lerr(struct load *L, const yaml_node_t *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void lerr(struct load *L, const yaml_node_t *n, const char *fmt, ...)
{
    L->nerr++;
    if (!L->err || L->used + 1 >= L->errlen) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int w = snprintf(L->err + L->used, L->errlen - L->used, "%s%s:%lu:%lu: %s",
                     L->used ? "\n" : "", L->name,
                     n ? (unsigned long)n->start_mark.line + 1 : 1UL,
                     n ? (unsigned long)n->start_mark.column + 1 : 1UL, msg);
    if (w > 0) L->used += (size_t)w;
    if (L->used >= L->errlen) L->used = L->errlen - 1;
}

static const char *node_kind(const yaml_node_t *n)
{
    switch (n->type) {
    case YAML_SCALAR_NODE: return "a scalar";
    case YAML_SEQUENCE_NODE: return "a list";
    case YAML_MAPPING_NODE: return "a mapping";
    default: return "nothing";
    }
}

static const char *scalar(const yaml_node_t *n)
{
    return (const char *)n->data.scalar.value;
}

/* A plain ~ / null / empty scalar: the key is set back to its default. */
static int is_null(const yaml_node_t *n)
{
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return 0;
    const char *v = scalar(n);
    return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") || !strcmp(v, "NULL");
}

static int is_section(const char *path)
{
    size_t n = strlen(path);
    for (size_t i = 0; i < cfg_ntable; i++)
        if (!strncmp(cfg_table[i].path, path, n) && cfg_table[i].path[n] == '.') return 1;
    return 0;
}

/* Reports duplicate keys of a mapping node; returns 1 if pair i repeats an earlier key. */
static int dup_key(yaml_document_t *doc, yaml_node_t *map, yaml_node_pair_t *pair)
{
    yaml_node_t *k = yaml_document_get_node(doc, pair->key);
    if (!k || k->type != YAML_SCALAR_NODE) return 0;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < pair; p++) {
        yaml_node_t *pk = yaml_document_get_node(doc, p->key);
        if (pk && pk->type == YAML_SCALAR_NODE && !strcmp(scalar(pk), scalar(k))) return 1;
    }
    return 0;
}

/* Bounds on map values: aliases can make a small file describe a huge tree. */
#define MAP_MAX_DEPTH   8
#define MAP_MAX_ENTRIES 1024

static void flatten_map(struct load *L, struct config_map *m, const char *path,
                        yaml_node_t *node, const char *prefix, int depth)
{
    if (depth > MAP_MAX_DEPTH) {
        lerr(L, node, "%s: nested deeper than %d levels", path, MAP_MAX_DEPTH);
        return;
    }
    for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(L->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(L->doc, p->value);
        if (!k || !v) continue;
        if (k->type != YAML_SCALAR_NODE) {
            lerr(L, k, "%s: keys must be scalars", path);
            continue;
        }
        if (dup_key(L->doc, node, p)) {
            lerr(L, k, "%s: duplicate key '%s'", path, scalar(k));
            continue;
        }
        if (strchr(scalar(k), '=') || !*scalar(k)) {
            lerr(L, k, "%s: key '%s' is empty or contains '='", path, scalar(k));
            continue;
        }
        struct buf full;
        buf_init(&full);
        if (prefix) buf_printf(&full, "%s.", prefix);
        buf_puts(&full, scalar(k));
        if (m->n >= MAP_MAX_ENTRIES) {
            lerr(L, k, "%s: more than %d entries", path, MAP_MAX_ENTRIES);
            buf_free(&full);
            return;
        }
        if (v->type == YAML_MAPPING_NODE) flatten_map(L, m, path, v, full.p, depth + 1);
        else if (v->type == YAML_SCALAR_NODE) cfg_map_put(m, full.p, full.len, is_null(v) ? "" : scalar(v));
        else lerr(L, v, "%s.%s: expected a scalar, got %s", path, full.p, node_kind(v));
        buf_free(&full);
    }
}

static void load_sources(struct load *L, yaml_node_t *node)
{
    config_clear_sources(L->cfg);
    if (is_null(node)) return;
    if (node->type != YAML_SEQUENCE_NODE) {
        lerr(L, node, "sources: expected a list, got %s", node_kind(node));
        return;
    }
    for (yaml_node_item_t *it = node->data.sequence.items.start; it < node->data.sequence.items.top; it++) {
        yaml_node_t *item = yaml_document_get_node(L->doc, *it);
        if (!item) continue;
        if (item->type != YAML_MAPPING_NODE) {
            lerr(L, item, "sources: each item is a mapping like {type: file, path: /var/log/gpu/dmon.log}, got %s",
                 node_kind(item));
            continue;
        }
        struct config_source *s = cfg_source_append(&L->cfg->sources);
        int bad = 0;
        for (yaml_node_pair_t *p = item->data.mapping.pairs.start; p < item->data.mapping.pairs.top; p++) {
            yaml_node_t *k = yaml_document_get_node(L->doc, p->key);
            yaml_node_t *v = yaml_document_get_node(L->doc, p->value);
            if (!k || !v) continue;
            if (k->type != YAML_SCALAR_NODE) { lerr(L, k, "sources: keys must be scalars"); bad = 1; continue; }
            if (dup_key(L->doc, item, p)) { lerr(L, k, "sources: duplicate key '%s'", scalar(k)); bad = 1; continue; }
            const struct config_key *sk = NULL;
            for (size_t i = 0; i < cfg_nsource_table; i++)
                if (!strcmp(cfg_source_table[i].path, scalar(k))) sk = &cfg_source_table[i];
            if (!sk) {
                const char *sug = cfg_suggest(cfg_source_table, cfg_nsource_table, scalar(k));
                lerr(L, k, "unknown key 'sources[].%s'%s%s%s", scalar(k),
                     *sug ? " (did you mean '" : "", sug, *sug ? "'?)" : "");
                bad = 1;
                continue;
            }
            if (v->type != YAML_SCALAR_NODE) {
                lerr(L, v, "sources[].%s: expected a scalar, got %s", sk->path, node_kind(v));
                bad = 1;
                continue;
            }
            char msg[GL_ERRLEN];
            if (cfg_set_scalar(sk, s, is_null(v) ? sk->def : scalar(v), msg, sizeof msg) != GL_OK) {
                lerr(L, v, "sources[].%s", msg);
                bad = 1;
            }
        }
        char msg[GL_ERRLEN];
        if (!bad && cfg_source_check(s, msg, sizeof msg) != GL_OK) lerr(L, item, "sources: %s", msg);
    }
}

static void load_mapping(struct load *L, yaml_node_t *node, const char *prefix)
{
    for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(L->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(L->doc, p->value);
        if (!k || !v) continue;
        if (k->type != YAML_SCALAR_NODE) {
            lerr(L, k, "keys must be scalars, got %s", node_kind(k));
            continue;
        }
        struct buf full;
        buf_init(&full);
        if (prefix) buf_printf(&full, "%s.", prefix);
        buf_puts(&full, scalar(k));
        if (dup_key(L->doc, node, p)) {
            lerr(L, k, "duplicate key '%s'", full.p);
            buf_free(&full);
            continue;
        }
        const struct config_key *ck = config_key_find(full.p);
        if (ck) {
            char msg[GL_ERRLEN];
            if (ck->type == CONFIG_SOURCES) {
                load_sources(L, v);
            } else if (ck->type == CONFIG_MAP) {
                struct config_map *m = (struct config_map *)((char *)L->cfg + ck->off);
                if (is_null(v)) cfg_map_clear(m);
                else if (v->type != YAML_MAPPING_NODE)
                    lerr(L, v, "%s: expected a mapping, got %s", ck->path, node_kind(v));
                else { cfg_map_clear(m); flatten_map(L, m, ck->path, v, NULL, 1); }
            } else if (v->type != YAML_SCALAR_NODE) {
                lerr(L, v, "%s: expected a %s value, got %s", ck->path,
                     ck->type == CONFIG_INT ? "integer" : ck->type == CONFIG_BOOL ? "boolean" :
                     ck->type == CONFIG_DURATION ? "duration" : ck->type == CONFIG_SIZE ? "size" : "scalar",
                     node_kind(v));
            } else if (cfg_set_scalar(ck, L->cfg, is_null(v) ? ck->def : scalar(v), msg, sizeof msg) != GL_OK) {
                lerr(L, v, "%s", msg);
            }
        } else if (is_section(full.p)) {
            if (v->type == YAML_MAPPING_NODE) load_mapping(L, v, full.p);
            else if (!is_null(v)) lerr(L, v, "%s: expected a mapping (a section), got %s", full.p, node_kind(v));
        } else {
            const char *sug = cfg_suggest(cfg_table, cfg_ntable, full.p);
            lerr(L, k, "unknown key '%s'%s%s%s", full.p,
                 *sug ? " (did you mean '" : "", sug, *sug ? "'?)" : "");
        }
        buf_free(&full);
    }
}

int config_load_string(const char *name, const char *yaml, size_t len,
                       struct gpulog_config *cfg, char *err, size_t errlen)
{
    struct load L = { name, NULL, cfg, err, errlen, 0, 0 };
    if (err && errlen) err[0] = '\0';
    yaml_document_t doc;
    if (ydoc_load(name, yaml, len, &doc, err, errlen) != GL_OK) return GL_ERROR;
    L.doc = &doc;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (root && !is_null(root)) {
        if (root->type != YAML_MAPPING_NODE) lerr(&L, root, "the configuration must be a mapping, got %s", node_kind(root));
        else load_mapping(&L, root, NULL);
    }
    yaml_document_delete(&doc);
    return L.nerr ? GL_ERROR : GL_OK;
}

int config_load(const char *path, struct gpulog_config *cfg, char *err, size_t errlen)
{
    struct buf text;
    buf_init(&text);
    int rc = ydoc_read_file(path, &text, err, errlen);
    if (rc == GL_OK) rc = config_load_string(path, text.p, text.len, cfg, err, errlen);
    buf_free(&text);
    return rc;
}
