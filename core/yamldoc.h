/*
 * yamldoc.h - the one YAML loader (libyaml document API) for the
 * configuration file and the detector files: input size and nesting are
 * bounded before libyaml parses, the document's nodes are bounded, aliases
 * are bounded by the size of the tree they expand to (nodes, and bytes of
 * text: one large scalar aliased 10,000 times is 4 GB), and only one
 * document is allowed. The walk over the tree gives up when
 * gl_interrupted() says a signal asked the command to stop.
 */
#ifndef GPULOG_YAMLDOC_H
#define GPULOG_YAMLDOC_H

#include <stddef.h>
#include <yaml.h>

struct buf;

#define YDOC_MAX_BYTES (1u << 20)   /* input size */
#define YDOC_MAX_DEPTH 64           /* nesting of mappings and lists */
#define YDOC_MAX_NODES 100000       /* nodes of the document, and of the tree with every alias expanded */
#define YDOC_MAX_EXPANDED (4u << 20) /* bytes of scalar text of the tree with every alias expanded */

/* Reads the file at path into out (at most YDOC_MAX_BYTES, else an error
 * naming the size). GL_OK, or GL_ERROR with "PATH: reason" in err. The
 * caller owns out. */
int ydoc_read_file(const char *path, struct buf *out, char *err, size_t errlen);

/* Parses text (len bytes; name is the file name in messages) into doc,
 * which the caller deletes (yaml_document_delete) after GL_OK. GL_ERROR
 * with "NAME:LINE:COL: reason" in err for a syntax error, input over the
 * bounds above, an alias cycle, a second document or a signal (the walk
 * polls gl_interrupted); doc is then empty. */
int ydoc_load(const char *name, const char *text, size_t len, yaml_document_t *doc, char *err, size_t errlen);

#endif
