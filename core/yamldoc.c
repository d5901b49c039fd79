/* yamldoc.c - the bounded YAML loader shared by the configuration and the
 * detector files (see yamldoc.h). */
#include "yamldoc.h"
#include "common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void yerr(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void yerr(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

int ydoc_read_file(const char *path, struct buf *out, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) { yerr(err, errlen, "%s: %s", path, strerror(errno)); return GL_ERROR; }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode)) {
        fclose(f);
        yerr(err, errlen, "%s: not a regular file", path);
        return GL_ERROR;
    }
    char chunk[8192];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (out->len + n > YDOC_MAX_BYTES) {
            fclose(f);
            yerr(err, errlen, "%s: larger than %u bytes: refused", path, YDOC_MAX_BYTES);
            return GL_ERROR;
        }
        buf_append(out, chunk, n);
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) { yerr(err, errlen, "%s: read error", path); return GL_ERROR; }
    if (!out->p) buf_append(out, "", 0);
    return GL_OK;
}

/* Flow nesting ([ and {) outside quoted scalars and comments, checked before
 * libyaml sees the text (libyaml takes quadratic time on deep flow nesting).
 * Returns 0, or the 1-based line and column of the first bracket too deep. */
static int flow_too_deep(const char *s, size_t len, size_t *line, size_t *col)
{
    int depth = 0;
    char quote = 0;
    size_t ln = 1, lstart = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '\n') { ln++; lstart = i + 1; if (quote == 0) continue; }
        if (quote) {
            if (quote == '"' && c == '\\') i++;
            else if (c == quote) {
                if (quote == '\'' && i + 1 < len && s[i + 1] == '\'') i++;
                else quote = 0;
            }
            continue;
        }
        int tok_start = i == 0 || strchr(" \t\r\n[{,:-", s[i - 1]) != NULL;
        if (c == '#' && tok_start) { while (i < len && s[i] != '\n') i++; i--; continue; }
        if ((c == '"' || c == '\'') && tok_start) { quote = c; continue; }
        if (c == '[' || c == '{') {
            if (++depth > YDOC_MAX_DEPTH) { *line = ln; *col = i - lstart + 1; return 1; }
        } else if ((c == ']' || c == '}') && depth > 0) {
            depth--;
        }
    }
    return 0;
}

/* What the tree under a node expands to with every alias followed: its
 * nodes and the bytes of its scalars, each saturating past its bound. */
struct ysize { long nodes, bytes; };

/* The expanded size and the depth of the tree under node id; memo holds 0
 * (not seen), -1 (being walked: an alias cycle) or nodes + 1, bmemo the
 * bytes, dmemo the depth. Returns nodes -1 on a cycle or when
 * gl_interrupted() said stop (*stop set). */
static struct ysize tree_size(yaml_document_t *doc, int id, long *memo, long *bmemo, int *dmemo, int level, int *stop)
{
    struct ysize z = { 0, 0 }, bad = { -1, 0 };
    yaml_node_t *n = yaml_document_get_node(doc, id);
    if (!n) return z;
    long *m = &memo[id - 1];
    if (*m == -1) return bad;
    if (*m > 0) return (struct ysize){ *m - 1, bmemo[id - 1] };
    if (gl_interrupted && gl_interrupted()) { *stop = 1; return bad; }
    if (level > YDOC_MAX_DEPTH) { dmemo[id - 1] = level; return (struct ysize){ 1, 0 }; }   /* reported by the caller */
    *m = -1;
    struct ysize t = { 1, 0 };
    int depth = 0;
    if (n->type == YAML_SCALAR_NODE) {
        t.bytes = (long)n->data.scalar.length;
    } else if (n->type == YAML_SEQUENCE_NODE) {
        for (yaml_node_item_t *it = n->data.sequence.items.start;
             it < n->data.sequence.items.top && t.nodes <= YDOC_MAX_NODES && t.bytes <= YDOC_MAX_EXPANDED; it++) {
            struct ysize c = tree_size(doc, *it, memo, bmemo, dmemo, level + 1, stop);
            if (c.nodes < 0) return bad;
            t.nodes += c.nodes;
            t.bytes += c.bytes;
            if (dmemo[*it - 1] > depth) depth = dmemo[*it - 1];
        }
    } else if (n->type == YAML_MAPPING_NODE) {
        for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
             p < n->data.mapping.pairs.top && t.nodes <= YDOC_MAX_NODES && t.bytes <= YDOC_MAX_EXPANDED; p++) {
            struct ysize k = tree_size(doc, p->key, memo, bmemo, dmemo, level + 1, stop);
            struct ysize v = k.nodes < 0 ? bad : tree_size(doc, p->value, memo, bmemo, dmemo, level + 1, stop);
            if (v.nodes < 0) return bad;
            t.nodes += k.nodes + v.nodes;
            t.bytes += k.bytes + v.bytes;
            if (dmemo[p->value - 1] > depth) depth = dmemo[p->value - 1];
            if (dmemo[p->key - 1] > depth) depth = dmemo[p->key - 1];
        }
    }
    if (t.nodes > YDOC_MAX_NODES + 1) t.nodes = YDOC_MAX_NODES + 1;
    if (t.bytes > YDOC_MAX_EXPANDED + 1L) t.bytes = YDOC_MAX_EXPANDED + 1L;
    *m = t.nodes + 1;
    bmemo[id - 1] = t.bytes;
    dmemo[id - 1] = depth + 1;
    return t;
}

/* "NAME:LINE:COL: " of node n into err, then the message. */
static void node_err(char *err, size_t errlen, const char *name, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void node_err(char *err, size_t errlen, const char *name, const yaml_node_t *n, const char *fmt, ...)
{
    if (!err || !errlen) return;
    int k = snprintf(err, errlen, "%s:%lu:%lu: ", name, (unsigned long)n->start_mark.line + 1,
                     (unsigned long)n->start_mark.column + 1);
    if (k < 0 || (size_t)k >= errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + k, errlen - (size_t)k, fmt, ap);
    va_end(ap);
}

int ydoc_load(const char *name, const char *text, size_t len, yaml_document_t *doc, char *err, size_t errlen)
{
    memset(doc, 0, sizeof *doc);
    if (len > YDOC_MAX_BYTES) {
        yerr(err, errlen, "%s: larger than %u bytes: refused", name, YDOC_MAX_BYTES);
        return GL_ERROR;
    }
    size_t line, col;
    if (flow_too_deep(text, len, &line, &col)) {
        yerr(err, errlen, "%s:%zu:%zu: nested deeper than %d levels: refused", name, line, col, YDOC_MAX_DEPTH);
        return GL_ERROR;
    }
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) { yerr(err, errlen, "%s: out of memory", name); return GL_ERROR; }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, doc)) {
        yerr(err, errlen, "%s:%lu:%lu: %s%s%s", name,
             (unsigned long)parser.problem_mark.line + 1, (unsigned long)parser.problem_mark.column + 1,
             parser.problem ? parser.problem : "YAML syntax error",
             parser.context ? " " : "", parser.context ? parser.context : "");
        yaml_parser_delete(&parser);
        memset(doc, 0, sizeof *doc);
        return GL_ERROR;
    }
    int rc = GL_OK;
    yaml_node_t *root = yaml_document_get_root_node(doc);
    if (root) {
        size_t nn = (size_t)(doc->nodes.top - doc->nodes.start);
        long *memo = xcalloc(nn, sizeof *memo), *bmemo = xcalloc(nn, sizeof *bmemo);
        int *dmemo = xcalloc(nn, sizeof *dmemo), stop = 0;
        /* the document's own nodes first: a long file without a single
         * alias is too big, not an alias problem */
        struct ysize size = nn > YDOC_MAX_NODES ? (struct ysize){ 0, 0 } : tree_size(doc, 1, memo, bmemo, dmemo, 1, &stop);
        int deep = 0;
        yaml_node_t *at = root;
        for (size_t i = 0; i < nn && !deep; i++)
            if (dmemo[i] > YDOC_MAX_DEPTH) { deep = 1; at = doc->nodes.start + i; }
        if (nn > YDOC_MAX_NODES) {
            node_err(err, errlen, name, doc->nodes.start + YDOC_MAX_NODES,
                     "more than %d nodes (keys, values and list items): refused", YDOC_MAX_NODES);
            rc = GL_ERROR;
        } else if (stop) {
            node_err(err, errlen, name, root, "interrupted by a signal");
            rc = GL_ERROR;
        } else if (size.nodes < 0) {
            node_err(err, errlen, name, root, "an alias refers to itself: refused");
            rc = GL_ERROR;
        } else if (deep) {
            node_err(err, errlen, name, at, "nested deeper than %d levels: refused", YDOC_MAX_DEPTH);
            rc = GL_ERROR;
        } else if (size.nodes > YDOC_MAX_NODES) {
            node_err(err, errlen, name, root, "aliases expand to more than %d nodes: refused", YDOC_MAX_NODES);
            rc = GL_ERROR;
        } else if (size.bytes > YDOC_MAX_EXPANDED) {
            node_err(err, errlen, name, root, "aliases expand to more than %u bytes of text: refused",
                     (unsigned)YDOC_MAX_EXPANDED);
            rc = GL_ERROR;
        }
        free(memo);
        free(bmemo);
        free(dmemo);
        if (rc == GL_OK) {   /* a second document is a mistake (two files pasted together) */
            yaml_document_t doc2;
            if (yaml_parser_load(&parser, &doc2)) {
                yaml_node_t *r2 = yaml_document_get_root_node(&doc2);
                if (r2) {
                    yerr(err, errlen, "%s:%lu:%lu: only one YAML document is allowed", name,
                         (unsigned long)r2->start_mark.line + 1, (unsigned long)r2->start_mark.column + 1);
                    rc = GL_ERROR;
                }
                yaml_document_delete(&doc2);
            }
        }
    }
    yaml_parser_delete(&parser);
    if (rc != GL_OK) { yaml_document_delete(doc); memset(doc, 0, sizeof *doc); }
    return rc;
}
