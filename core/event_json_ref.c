/*
 * event_json_ref.c - event_from_json_jansson: schema-v1 JSON into an event
 * through a jansson tree. The reference the flat decoder (event_json.c) is
 * checked against (tests/fuzz/fuzz_event_json_diff.c, bench/decode_bench).
 */
#include "event_json_int.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

int event_from_json_jansson(struct event *ev, const char *json, size_t len, char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    event_reset(ev);
    if (!root) {
        snprintf(err, errlen, "invalid JSON: %s (column %d)", je.text, je.column);
        return GL_ERROR;
    }
    if (!json_is_object(root)) {
        snprintf(err, errlen, "not a JSON object");
        json_decref(root);
        return GL_ERROR;
    }
    const char *key;
    json_t *val;
    int have_ts = 0;
    json_object_foreach(root, key, val) {
        if (!strcmp(key, "@timestamp")) {
            if (!json_is_string(val) ||
                gl_parse_iso_ts(json_string_value(val), json_string_length(val), &ev->ts_ms) != GL_OK) {
                snprintf(err, errlen, "bad @timestamp");
                json_decref(root);
                return GL_ERROR;
            }
            have_ts = 1;
        } else if ((!strcmp(key, "event.kind") || !strcmp(key, "event.dataset") ||
                    !strcmp(key, "event.id") || !strcmp(key, "event.created") ||
                    !strcmp(key, "host.name") || !strcmp(key, "log.file.path")) && !json_is_string(val)) {
            snprintf(err, errlen, "%s is not a string", key);
            json_decref(root);
            return GL_ERROR;
        } else if (!strcmp(key, "log.offset") && !json_is_integer(val)) {
            snprintf(err, errlen, "log.offset is not an integer");
            json_decref(root);
            return GL_ERROR;
        } else if (!strcmp(key, "event.kind") && json_is_string(val)) {
            ev->kind = ej_ev_kind(ev, json_string_value(val), json_string_length(val));
        } else if (!strcmp(key, "event.dataset") && json_is_string(val)) {
            ev->dataset = ej_ev_string(ev, 2, json_string_value(val), json_string_length(val));
        } else if (!strcmp(key, "event.id") && json_is_string(val)) {
            snprintf(ev->id, sizeof ev->id, "%s", json_string_value(val));
        } else if (!strcmp(key, "event.created") && json_is_string(val)) {
            gl_parse_iso_ts(json_string_value(val), json_string_length(val), &ev->created_ms);
        } else if (!strcmp(key, "host.name") && json_is_string(val)) {
            ev->host = ej_ev_string(ev, 0, json_string_value(val), json_string_length(val));
        } else if (!strcmp(key, "log.file.path") && json_is_string(val)) {
            ev->path = ej_ev_string(ev, 1, json_string_value(val), json_string_length(val));
        } else if (!strcmp(key, "log.offset") && json_is_integer(val)) {
            ev->offset = json_integer_value(val);
        } else if (!strcmp(key, "agent.name") || !strcmp(key, "agent.version")) {
            /* regenerated on output */
        } else if (json_is_integer(val) || json_is_real(val) || json_is_boolean(val) || json_is_string(val)) {
            const char *k = ej_intern_key_cstr(key);
            if (!k) { ej_field_dropped(); continue; }   /* table full: bounded memory first */
            if (json_is_integer(val)) event_add_int(ev, k, json_integer_value(val));
            else if (json_is_real(val)) event_add_num(ev, k, json_real_value(val));
            else if (json_is_boolean(val)) event_add_bool(ev, k, json_is_true(val));
            else event_add_str(ev, k, json_string_value(val), json_string_length(val));
        }
        /* nested objects, arrays and nulls are not part of schema v1: skipped */
    }
    json_decref(root);
    if (!have_ts) {
        snprintf(err, errlen, "missing @timestamp");
        return GL_ERROR;
    }
    return GL_OK;
}
