/*
 * es_setup.h - installs what the ES sink writes into (`gpulog setup`).
 *
 * Reads the objects from a schemas directory (schemas/es/ JSON files, built from
 * schemas/event.schema.json by schemas/es/gen_templates.py) and installs, in
 * order: lifecycle policies (ILM on Elasticsearch; ISM on OpenSearch when
 * the plugin answers), component templates, index templates, the data
 * streams of the namespace, and optionally Kibana saved objects
 * (the .ndjson files of schemas/kibana/).
 * Idempotent: every object carries a hash of its wanted content in
 * _meta.gpulog_hash (ISM: in its description); an installed object whose
 * hash matches is reported "unchanged" and not written again.
 *
 * Each object's outcome is one line on stdout (created, updated, unchanged,
 * NOT installed with the reason, FAILED with the reason). Use:
 * es_setup_schemas, es_setup_new, es_setup_identify, es_setup_install,
 * es_setup_free.
 */
#ifndef GPULOG_ES_SETUP_H
#define GPULOG_ES_SETUP_H

#include "sink.h"

/* The schemas directory: dir itself when given, else the first of
 * $GPULOG_SCHEMAS, <binary>/../schemas, <binary>/../share/gpulog/schemas,
 * /usr/share/gpulog/schemas, ./schemas that has
 * es/component_template.gpulog-mappings.json, written into out. Returns it,
 * or NULL with a reason in err (none found, or it has no es/). */
const char *es_setup_schemas(const char *dir, char *out, size_t outlen, char *err, size_t errlen);

struct es_setup;
/* A setup run against the cluster of conf; conf, schemas and kibana (a Kibana
 * URL, or NULL for none) are borrowed and must outlive it. Free with
 * es_setup_free. */
struct es_setup *es_setup_new(const struct es_conf *conf, const char *schemas, const char *kibana);
/* Finds the engine and version (GET /, else GET /_nodes/_local) and prints
 * them. Returns GL_OK, or GL_ERROR with a reason in err (unreachable, no
 * version, Elasticsearch older than 7.8). */
int es_setup_identify(struct es_setup *s, char *err, size_t errlen);
/* After es_setup_identify: installs lifecycle, templates, data streams and,
 * with a Kibana URL, the saved objects, and prints a summary line. Returns
 * GL_OK when everything this cluster can hold is installed (what it cannot
 * is reported NOT installed), GL_ERROR when a request failed (reported). */
int es_setup_install(struct es_setup *s);
void es_setup_free(struct es_setup *s);

#endif
