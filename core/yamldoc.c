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

/* Size (nodes, aliases expanded, saturating past YDOC_MAX_NODES) and depth
 * of the tree under node id; memo holds 0 (not seen), -1 (being walked: an
 * alias cycle) or size + 1, dmemo the depth. Returns -1 on a cycle. */
static long tree_size(yaml_document_t *doc, int id, long *memo, int *dmemo, int level)
{
    yaml_node_t *n = yaml_document_get_node(doc, id);
    if (!n) return 0;
    long *m = &memo[id - 1];
    if (*m == -1) return -1;
    if (*m > 0) return *m - 1;
    if (level > YDOC_MAX_DEPTH) { dmemo[id - 1] = level; return 1; }   /* reported by the caller */
    *m = -1;
    long size = 1;
    int depth = 0;
    if (n->type == YAML_SEQUENCE_NODE) {
        for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top && size <= YDOC_MAX_NODES; it++) {
            long s = tree_size(doc, *it, memo, dmemo, level + 1);
            if (s < 0) return -1;
            size += s;
            if (dmemo[*it - 1] > depth) depth = dmemo[*it - 1];
        }
    } else if (n->type == YAML_MAPPING_NODE) {
        for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top && size <= YDOC_MAX_NODES; p++) {
            long sk = tree_size(doc, p->key, memo, dmemo, level + 1);
            long sv = sk < 0 ? -1 : tree_size(doc, p->value, memo, dmemo, level + 1);
            if (sv < 0) return -1;
            size += sk + sv;
            if (dmemo[p->value - 1] > depth) depth = dmemo[p->value - 1];
            if (dmemo[p->key - 1] > depth) depth = dmemo[p->key - 1];
        }
    }
    if (size > YDOC_MAX_NODES + 1) size = YDOC_MAX_NODES + 1;
    *m = size + 1;
    dmemo[id - 1] = depth + 1;
    return size;
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
        long *memo = xcalloc(nn, sizeof *memo);
        int *dmemo = xcalloc(nn, sizeof *dmemo);
        long size = tree_size(doc, 1, memo, dmemo, 1);
        int deep = 0;
        yaml_node_t *at = root;
        for (size_t i = 0; i < nn && !deep; i++)
            if (dmemo[i] > YDOC_MAX_DEPTH) { deep = 1; at = doc->nodes.start + i; }
        if (size < 0) {
            yerr(err, errlen, "%s:%lu:%lu: an alias refers to itself: refused", name,
                 (unsigned long)root->start_mark.line + 1, (unsigned long)root->start_mark.column + 1);
            rc = GL_ERROR;
        } else if (deep) {
            yerr(err, errlen, "%s:%lu:%lu: nested deeper than %d levels: refused", name,
                 (unsigned long)at->start_mark.line + 1, (unsigned long)at->start_mark.column + 1, YDOC_MAX_DEPTH);
            rc = GL_ERROR;
        } else if (size > YDOC_MAX_NODES) {
            yerr(err, errlen, "%s:%lu:%lu: aliases expand to more than %d nodes: refused", name,
                 (unsigned long)root->start_mark.line + 1, (unsigned long)root->start_mark.column + 1, YDOC_MAX_NODES);
            rc = GL_ERROR;
        }
        free(memo);
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
