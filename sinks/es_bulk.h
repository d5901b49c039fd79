/*
 * es_bulk.h - pure helpers of the Elasticsearch/OpenSearch sink: data stream
 * names, `_bulk` request bodies, per-item outcome classification and the
 * parser of `_bulk` responses. No I/O here, so every rule is unit-tested
 * without a server (tests/test_es_bulk.c).
 */
#ifndef GPULOG_ES_BULK_H
#define GPULOG_ES_BULK_H

#include "sink.h"

/* The query string every bulk request uses: only the fields the sink reads
 * come back, so a response stays small whatever the batch size. */
#define ES_BULK_PATH "/_bulk?filter_path=errors,items.*.status,items.*.error.type,items.*.error.reason"

/* Checks a data stream namespace: 1..100 chars of [a-z0-9_], no leading '_' (config_namespace_ok).
 * Returns 1 when valid. */
int es_ns_valid(const char *ns);

/* Writes the data stream name for a routing class into out:
 * logs-gpu.anomaly-<ns>, logs-gpu.xid-<ns>, metrics-gpu.dmon-<ns>.
 * Returns the length, or -1 if out is too small. */
int es_stream_name(enum sink_stream st, const char *ns, char *out, size_t outlen);

/* Appends one `create` action and its source line to body:
 *   {"create":{"_index":"<index>","_id":"<id>"}}\n<json>\n
 * id may be NULL (the server then picks one). Raw CR/LF bytes in json (only
 * legal there as whitespace) become spaces so the NDJSON framing holds. */
void es_bulk_append(struct buf *body, const char *index, const char *id,
                    const char *json, size_t len);

/* What to do with one document after the server answered for it. */
enum es_verdict {
    ES_STORED = 0,   /* 2xx, or 409 on create: already stored */
    ES_RETRY  = 1,   /* 429 and 5xx: send this document again later */
    ES_REJECT = 2,   /* any other status: permanent, to the dead letter */
};

/* Classifies one item by its HTTP status only (error type names differ
 * between Elasticsearch and OpenSearch). */
enum es_verdict es_item_verdict(int status);

/* One parsed item of a bulk response. reason is owned by the result. */
struct es_item_result {
    int status;
    char *reason;     /* "type: reason" when the item failed, else NULL */
};

/* A parsed bulk response; es_bulk_result_free releases it. */
struct es_bulk_result {
    int errors;                       /* the top-level "errors" flag */
    size_t n;
    struct es_item_result *items;
};

/* Parses a `_bulk` response body (with or without filter_path). When
 * errors is false the response may omit items (some filter_path forms do):
 * then expect_n items with status 201 are assumed. Returns GL_OK, or
 * GL_ERROR with a reason when the body is not a bulk response or its item
 * count differs from expect_n (the caller then retries the whole request). */
int es_bulk_parse(const char *body, size_t len, size_t expect_n,
                  struct es_bulk_result *res, char *err, size_t errlen);
void es_bulk_result_free(struct es_bulk_result *res);

/* Delay before retry number attempt (1-based): exponential from base_ms,
 * capped at max_ms, with "equal jitter" (half fixed, half random) drawn
 * from rnd, a caller-held xorshift state. */
int64_t es_backoff_ms(int attempt, int64_t base_ms, int64_t max_ms, uint64_t *rnd);


#endif
