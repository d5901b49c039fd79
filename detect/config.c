/* config.c - detector profiles: the built-in "gpu" and "generic" ones and
 * JSON (or YAML: *.yaml, *.yml) files that extend or replace them (see
 * docs/detectors.md). */
#include "engine.h"
#include "../core/yamldoc.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include "../parsers/xid_catalog.h"

#include <stdio.h>
#include <yaml.h>
#include <stdlib.h>
#include <string.h>

static const char gpu_profile[] =
"{\"name\":\"gpu\",\"window\":64,\"window_span_s\":600,\"max_series\":200000,\"idle_evict_s\":3600,"
" \"out_of_order_tolerance_ms\":2000,\"gap_s\":5,\"resolution_ms\":1000,\"incidents\":true,\"rules\":["
"{\"id\":\"gpu.xid\",\"name\":\"GPU kernel error (Xid/SXid)\",\"detector\":\"xid\",\"metric\":\"gpu.xid.code\","
"  \"severity\":2,\"cooldown_s\":300},"
"{\"id\":\"gpu.missing\",\"name\":\"GPU stopped reporting\",\"detector\":\"missing_data\",\"metric\":\"sample_age_s\","
"  \"severity\":3,\"params\":{\"after_s\":5}},"
"{\"id\":\"gpu.temp.high\",\"name\":\"GPU temperature above limit\",\"detector\":\"threshold\","
"  \"metric\":\"gpu.temperature.gpu\",\"severity\":2,\"for\":10,\"clear\":10,\"cooldown_s\":60,"
"  \"params\":{\"high\":87,\"clear_high\":82}},"
"{\"id\":\"gpu.temp.rise\",\"name\":\"GPU temperature rising at steady load\",\"detector\":\"robust_z\","
"  \"metric\":\"gpu.temperature.gpu\",\"severity\":1,\"for\":3,\"clear\":20,\"cooldown_s\":30,"
"  \"params\":{\"z\":4,\"min_dev\":4,\"min_scale\":1,\"direction\":1,\"steady_range\":15,\"steady_power\":0.3,\"min_n\":30,\"lag\":10}},"
"{\"id\":\"gpu.temp.creep\",\"name\":\"GPU temperature creeping up at steady load\",\"detector\":\"creep\","
"  \"metric\":\"gpu.temperature.gpu\",\"severity\":1,\"for\":1,\"clear\":60,\"cooldown_s\":120},"
"{\"id\":\"gpu.temp.excess\",\"name\":\"GPU hotter than its power explains\",\"detector\":\"thermal_model\","
"  \"metric\":\"gpu.temperature.gpu\",\"severity\":2,\"for\":10,\"clear\":10,\"cooldown_s\":60},"
"{\"id\":\"gpu.thermal\",\"name\":\"Thermal throttling\",\"detector\":\"thermal_throttle\","
"  \"metric\":\"gpu.temperature.gpu\",\"severity\":2,\"for\":3,\"clear\":10,\"cooldown_s\":30},"
"{\"id\":\"gpu.power.cap\",\"name\":\"Power-cap throttling\",\"detector\":\"power_cap\","
"  \"metric\":\"gpu.throttling.power.pct\",\"severity\":1,\"for\":5,\"clear\":10,\"cooldown_s\":30},"
"{\"id\":\"gpu.power.idle\",\"name\":\"Idle power waste\",\"detector\":\"idle_power\",\"metric\":\"gpu.power.usage\","
"  \"severity\":1,\"for\":10,\"clear\":10,\"cooldown_s\":30},"
"{\"id\":\"gpu.hang\",\"name\":\"GPU hang (busy at low power)\",\"detector\":\"hang\","
"  \"metric\":\"gpu.utilization.gpu.pct\",\"severity\":3,\"for\":8,\"clear\":5,\"cooldown_s\":30},"
"{\"id\":\"gpu.mem.leak\",\"name\":\"Framebuffer memory leak\",\"detector\":\"memory_leak\","
"  \"metric\":\"gpu.memory.framebuffer.used_size\",\"severity\":2,\"for\":1,\"clear\":30,\"cooldown_s\":60},"
"{\"id\":\"gpu.mem.pressure\",\"name\":\"Framebuffer nearly full\",\"detector\":\"memory_pressure\","
"  \"metric\":\"gpu.memory.framebuffer.used_size\",\"severity\":2,\"for\":10,\"clear\":10,\"cooldown_s\":60},"
"{\"id\":\"gpu.clock.drop\",\"name\":\"SM clock drop under load\",\"detector\":\"clock_drop\","
"  \"metric\":\"gpu.clock.streaming_multiprocessor_frequency\",\"severity\":2,\"for\":5,\"clear\":10,\"cooldown_s\":30},"
"{\"id\":\"gpu.peer.clock\",\"name\":\"Straggler: SM clock below peers\",\"detector\":\"peer\","
"  \"metric\":\"gpu.clock.streaming_multiprocessor_frequency\",\"severity\":2,\"for\":5,\"clear\":10,\"cooldown_s\":30,"
"  \"params\":{\"rel\":0.12,\"tight\":0.03,\"direction\":-1}},"
"{\"id\":\"gpu.peer.power\",\"name\":\"Straggler: power apart from peers\",\"detector\":\"peer\","
"  \"metric\":\"gpu.power.usage\",\"severity\":1,\"for\":10,\"clear\":10,\"cooldown_s\":30,"
"  \"params\":{\"rel\":0.25,\"tight\":0.1,\"same_util\":20}},"
"{\"id\":\"gpu.peer.temp\",\"name\":\"Hotter than its peers\",\"detector\":\"peer\","
"  \"metric\":\"gpu.temperature.gpu\",\"severity\":1,\"for\":30,\"clear\":10,\"cooldown_s\":60,"
"  \"params\":{\"rel\":0,\"min_abs\":15,\"tight\":0.1,\"direction\":1,\"same_util\":20}},"
"{\"id\":\"gpu.ecc.sbe\",\"name\":\"Single-bit ECC errors rising\",\"detector\":\"counter_increase\","
"  \"metric\":\"gpu.ecc.single_bit.count\",\"severity\":2,\"cooldown_s\":120,"
"  \"params\":{\"window_s\":60,\"min_increase\":10}},"
"{\"id\":\"gpu.ecc.dbe\",\"name\":\"Double-bit ECC errors\",\"detector\":\"counter_increase\","
"  \"metric\":\"gpu.ecc.double_bit.count\",\"severity\":3,\"cooldown_s\":300,"
"  \"params\":{\"window_s\":300,\"min_increase\":1}},"
"{\"id\":\"gpu.health\",\"name\":\"GPU memory health needs a reset, drain or repair\",\"detector\":\"health\","
"  \"metric\":\"gpu.remapped_rows.pending\",\"severity\":3,\"for\":1,\"clear\":1,\"cooldown_s\":0},"
"{\"id\":\"gpu.pcie.replay\",\"name\":\"PCIe replay burst\",\"detector\":\"counter_increase\","
"  \"metric\":\"gpu.pcie.replay\",\"severity\":1,\"cooldown_s\":120,"
"  \"params\":{\"window_s\":60,\"min_increase\":10}},"
"{\"id\":\"gpu.power.stuck\",\"name\":\"Power reading stuck\",\"detector\":\"flatline\","
"  \"metric\":\"gpu.power.usage\",\"severity\":1,\"params\":{\"min_samples\":300,\"min_std\":1}}"
"]}";

static const char generic_profile[] =
"{\"name\":\"generic\",\"window\":64,\"window_span_s\":3600,\"max_series\":200000,\"idle_evict_s\":86400,"
" \"out_of_order_tolerance_ms\":2000,\"gap_s\":300,\"rules\":["
"{\"id\":\"metric.likelihood\",\"name\":\"Unlikely behaviour for this series\",\"detector\":\"seasonal\","
"  \"metric\":\"*\",\"severity\":2,\"for\":1,\"clear\":5,\"params\":{\"confirm\":20,\"point\":10}},"
"{\"id\":\"metric.xid\",\"name\":\"GPU kernel error (Xid/SXid)\",\"detector\":\"xid\",\"metric\":\"gpu.xid.code\","
"  \"severity\":2,\"cooldown_s\":300},"
"{\"id\":\"metric.missing\",\"name\":\"Series stopped reporting\",\"detector\":\"missing_data\",\"metric\":\"sample_age_s\","
"  \"severity\":2,\"params\":{\"after_s\":30}}"
"]}";

const char *profile_builtin_json(const char *name)
{
    /* "auto" starts as gpu: `run` switches to generic when the input has no GPU fields */
    if (!name || !strcmp(name, "gpu") || !strcmp(name, "auto")) return gpu_profile;
    if (!strcmp(name, "generic")) return generic_profile;
    return NULL;
}

void profile_free(struct profile *p)
{
    if (!p) return;
    for (size_t i = 0; i < p->nrules; i++) {
        free(p->rules[i].id);
        free(p->rules[i].name);
        free(p->rules[i].metric);
    }
    free(p->rules);
    for (size_t i = 0; i < p->nactions; i++) free(p->actions[i].key);
    free(p->actions);
    for (size_t i = 0; i < p->slots.n; i++) free(p->slots.name[i]);
    free(p->name);
    free(p);
}

/* Where each value of a loaded file was (its key's and its own line and
 * column), for FILE:LINE:COL errors; owned by profile_load. */
struct ymark { const json_t *v; unsigned kl, kc, vl, vc; };
struct ymarks { const char *file; struct ymark *m; size_t n, cap; int bad; char *err; size_t errlen; };

static void ymark_add(struct ymarks *M, const json_t *v, const yaml_node_t *k, const yaml_node_t *n)
{
    if (M->n == M->cap) { M->cap = M->cap ? M->cap * 2 : 64; M->m = xrealloc(M->m, M->cap * sizeof *M->m); }
    struct ymark *m = &M->m[M->n++];
    m->v = v;
    m->kl = (unsigned)(k ? k : n)->start_mark.line + 1;
    m->kc = (unsigned)(k ? k : n)->start_mark.column + 1;
    m->vl = (unsigned)n->start_mark.line + 1;
    m->vc = (unsigned)n->start_mark.column + 1;
}

/* Where v was in the loaded file (its key's place when at_key): 1 and
 * *line, *col, or 0 (no file, or a value the file did not set). */
static int ymark_find(const struct ymarks *M, const json_t *v, int at_key, unsigned *line, unsigned *col)
{
    for (size_t i = 0; M && v && i < M->n; i++)
        if (M->m[i].v == v) {
            *line = at_key ? M->m[i].kl : M->m[i].vl;
            *col = at_key ? M->m[i].kc : M->m[i].vc;
            return 1;
        }
    return 0;
}

/* A compile error into err: "FILE:LINE:COL: msg" when v is a value the
 * loaded file set (M), "FILE: msg" for another value of a file, "msg" for
 * a built-in or JSON-text profile (M NULL). */
static void cfail(const struct ymarks *M, const json_t *v, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void cfail(const struct ymarks *M, const json_t *v, char *err, size_t errlen, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    unsigned l, c;
    if (ymark_find(M, v, 0, &l, &c)) snprintf(err, errlen, "%s:%u:%u: %s", M->file, l, c, msg);
    else if (M) snprintf(err, errlen, "%s: %s", M->file, msg);
    else snprintf(err, errlen, "%s", msg);
}

static double num_or(json_t *o, const char *k, double d)
{
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : d;
}

/* Compiles rule r into p (M: where the file set its values, or NULL).
 * GL_OK, GL_DECLINED (disabled) or GL_ERROR with the reason in err, at the
 * place in the file of the value that is wrong (a parameter's value, else
 * the rule's id). */
static int compile_rule(struct profile *p, json_t *r, const struct ymarks *M, char *err, size_t errlen)
{
    json_t *idv = json_object_get(r, "id");
    const char *id = json_string_value(idv);
    if (!id) { cfail(M, r, err, errlen, "a rule has no \"id\""); return GL_ERROR; }
    json_t *en = json_object_get(r, "enabled");
    if (en && json_is_false(en)) return GL_DECLINED;
    json_t *dv = json_object_get(r, "detector");
    const char *dname = json_string_value(dv);
    const struct det_ops *ops = dname ? det_find(dname) : NULL;
    if (!ops) { cfail(M, dv ? dv : idv, err, errlen, "rule %s: unknown detector \"%s\"", id, dname ? dname : ""); return GL_ERROR; }
    const char *metric = json_string_value(json_object_get(r, "metric"));
    int named = ops->scope == DS_SERIES || ops->needs_metric;   /* judges a metric the rule names */
    if (!metric) {
        if (named) {
            cfail(M, idv, err, errlen, "rule %s: needs a \"metric\"", id);
            return GL_ERROR;
        }
        metric = ops->default_metric ? ops->default_metric : ops->name;
    }
    struct rule_cfg rc;
    memset(&rc, 0, sizeof rc);
    rc.ops = ops;
    for (size_t i = 0; i < GL_ARRAY_LEN(rc.aux); i++) rc.aux[i] = -1;
    rc.severity = (int)num_or(r, "severity", 2);
    if (rc.severity < 1 || rc.severity > 3) { cfail(M, idv, err, errlen, "rule %s: severity must be 1, 2 or 3", id); return GL_ERROR; }
    rc.for_n = (int)num_or(r, "for", 1);
    rc.clear_n = (int)num_or(r, "clear", 1);
    if (rc.for_n < 1) rc.for_n = 1;
    if (rc.clear_n < 1) rc.clear_n = 1;
    if (rc.for_n > 65000) rc.for_n = 65000;
    if (rc.clear_n > 65000) rc.clear_n = 65000;
    rc.cooldown_ms = (int64_t)(num_or(r, "cooldown_s", 0) * 1000);
    rc.change_ms = (int64_t)(num_or(r, "change_s", 60) * 1000);
    json_t *params = json_object_get(r, "params");
    size_t np = 0;
    for (; np < DET_MAX_PARAMS && ops->params[np].name; np++) rc.p[np] = ops->params[np].def;   /* never past rc.p */
    if (params) {
        if (!json_is_object(params)) { cfail(M, params, err, errlen, "rule %s: \"params\" must be an object", id); return GL_ERROR; }
        const char *k;
        json_t *v;
        json_object_foreach(params, k, v) {
            size_t i = 0;
            while (i < np && strcmp(ops->params[i].name, k)) i++;
            if (i == np) { cfail(M, v, err, errlen, "rule %s: detector %s has no parameter \"%s\"", id, ops->name, k); return GL_ERROR; }
            /* every parameter within its range (detector.h: struct det_param) */
            if (!json_is_number(v) || !det_param_ok(&ops->params[i], json_number_value(v))) {
                char range[96];
                det_param_range(&ops->params[i], range, sizeof range);
                cfail(M, v, err, errlen, "rule %s: parameter %s must be %s", id, k, range);
                return GL_ERROR;
            }
            rc.p[i] = json_number_value(v);
        }
    }
    int is_star = !strcmp(metric, "*");
    if (is_star && ops->scope != DS_SERIES) { cfail(M, idv, err, errlen, "rule %s: \"*\" only for single-metric detectors", id); return GL_ERROR; }
    rc.slot = is_star || !named ? -1 : profile_slot(&p->slots, metric, ops->scope == DS_SERIES && !ops->no_window);
    if (named && !is_star && rc.slot < 0) { cfail(M, idv, err, errlen, "too many metrics (max %d)", ENG_MAX_SLOTS); return GL_ERROR; }
    if (is_star) p->star = 1;
    rc.id = (char *)id;   /* for configure's messages; owned copy below */
    if (ops->configure) {
        char msg[GL_ERRLEN];
        if (ops->configure(&rc, &p->slots, msg, sizeof msg) != GL_OK) {
            /* a rule's parameters together (lag < min_n, tau_lo <= tau ...):
             * at the first parameter the file wrote, else at the rule's id */
            const json_t *at = idv;
            unsigned l, c;
            const char *k;
            json_t *v;
            json_object_foreach(params, k, v)
                if (ymark_find(M, v, 0, &l, &c)) { at = v; break; }
            cfail(M, at, err, errlen, "%s", msg);
            return GL_ERROR;
        }
    }
    const char *name = json_string_value(json_object_get(r, "name"));
    rc.id = xstrdup(id);
    rc.name = xstrdup(name ? name : id);
    rc.metric = xstrdup(metric);
    p->rules = xrealloc(p->rules, (p->nrules + 1) * sizeof *p->rules);
    p->rules[p->nrules++] = rc;
    return GL_OK;
}

/* The user's action table ("actions": {"gpu.temp.high": "watch", "xid:79":
 * "drain_repair"}) into p (after its rules: a key is a rule id of the
 * profile, or xid:N / sxid:N; a value one of the actions). GL_OK, or
 * GL_ERROR with FILE:LINE:COL. */
static int compile_actions(struct profile *p, json_t *acts, const struct ymarks *M, char *err, size_t errlen)
{
    if (!acts) return GL_OK;
    if (!json_is_object(acts)) { cfail(M, acts, err, errlen, "\"actions\" must map rule ids or xid:N to an action"); return GL_ERROR; }
    const char *k;
    json_t *v;
    json_object_foreach(acts, k, v) {
        enum gl_action a;
        const char *name = json_string_value(v);
        if (!name || !gl_action_parse(name, &a)) {
            cfail(M, v, err, errlen, "action of \"%s\" must be one of none, watch, restart_app, check_cooling, check_power, "
                  "reset_gpu, reboot_node, drain_repair", k);
            return GL_ERROR;
        }
        int known = 0, code;
        char tail;
        if ((sscanf(k, "xid:%d%c", &code, &tail) == 1 || sscanf(k, "sxid:%d%c", &code, &tail) == 1) && code >= 0) known = 1;
        for (size_t i = 0; !known && i < p->nrules; i++) if (!strcmp(p->rules[i].id, k)) known = 1;
        if (!known) {
            cfail(M, v, err, errlen, "\"actions\": \"%s\" is no rule of this profile (nor xid:N / sxid:N)", k);
            return GL_ERROR;
        }
        p->actions = xrealloc(p->actions, (p->nactions + 1) * sizeof *p->actions);
        p->actions[p->nactions].key = xstrdup(k);
        p->actions[p->nactions].act = (int)a;
        p->nactions++;
    }
    return GL_OK;
}

/* Merges the rules of over into base (by id: fields replace, params merge
 * while the detector stays the same, a new detector starts from its own
 * defaults; a rule whose id is new is appended). O(rules): the ids are looked up in
 * a table (a scan of base per rule took 2.7 s for 14,000 rules). */
static void merge_rules(json_t *base, json_t *over)
{
    json_t *by_id = json_object();   /* id -> rule (borrowed references) */
    size_t i;
    json_t *r;
    json_array_foreach(base, i, r) {
        const char *bid = json_string_value(json_object_get(r, "id"));
        if (bid && !json_object_get(by_id, bid)) json_object_set(by_id, bid, r);
    }
    json_array_foreach(over, i, r) {
        const char *id = json_string_value(json_object_get(r, "id"));
        json_t *hit = id ? json_object_get(by_id, id) : NULL;
        if (!hit) {
            json_array_append(base, r);
            if (id) json_object_set(by_id, id, r);
            continue;
        }
        /* another detector: the base rule's params were its detector's
         * (the generic rule's `confirm` means nothing to zscore) */
        const char *bd = json_string_value(json_object_get(hit, "detector")), *od = json_string_value(json_object_get(r, "detector"));
        if (bd && od && strcmp(bd, od)) json_object_del(hit, "params");
        json_t *bp = json_object_get(hit, "params"), *op = json_object_get(r, "params");
        json_t *keep = bp && op && json_is_object(bp) && json_is_object(op) ? json_deep_copy(bp) : NULL;
        json_object_update(hit, r);
        if (keep) {
            json_object_update(keep, op);
            json_object_set_new(hit, "params", keep);
        }
    }
    json_decref(by_id);
}

static struct profile *compile(json_t *root, const struct ymarks *M, char *err, size_t errlen)
{
    json_t *rules = json_object_get(root, "rules");
    if (!json_is_array(rules)) { cfail(M, root, err, errlen, "profile has no \"rules\" array"); return NULL; }
    struct profile *p = xcalloc(1, sizeof *p);
    const char *name = json_string_value(json_object_get(root, "name"));
    p->name = xstrdup(name ? name : "custom");
    p->win_cap = (unsigned)num_or(root, "window", 64);
    if (p->win_cap < 4 || p->win_cap > WIN_CAP) {
        cfail(M, json_object_get(root, "window"), err, errlen, "\"window\" must be 4..%d samples", WIN_CAP);
        profile_free(p);
        return NULL;
    }
    p->win_span_ms = (uint32_t)(num_or(root, "window_span_s", 600) * 1000);
    p->max_series = (size_t)num_or(root, "max_series", 200000);
    if (p->max_series < 16) p->max_series = 16;
    p->idle_evict_ms = (int64_t)(num_or(root, "idle_evict_s", 3600) * 1000);
    p->ooo_tol_ms = (int64_t)num_or(root, "out_of_order_tolerance_ms", 2000);
    p->gap_ms = (int64_t)(num_or(root, "gap_s", 5) * 1000);
    p->resolution_ms = (int64_t)num_or(root, "resolution_ms", 0);
    json_t *inc = json_object_get(root, "incidents");
    if (inc && !json_is_boolean(inc)) { cfail(M, inc, err, errlen, "\"incidents\" must be true or false"); profile_free(p); return NULL; }
    p->incidents = json_is_true(inc);
    size_t i;
    json_t *r;
    json_array_foreach(rules, i, r) {
        if (gl_interrupted && gl_interrupted()) { cfail(M, NULL, err, errlen, "interrupted by a signal"); profile_free(p); return NULL; }
        if (!json_is_object(r)) { cfail(M, r, err, errlen, "rule %zu is not an object", i); profile_free(p); return NULL; }
        if (compile_rule(p, r, M, err, errlen) == GL_ERROR) { profile_free(p); return NULL; }
    }
    if (compile_actions(p, json_object_get(root, "actions"), M, err, errlen) != GL_OK) { profile_free(p); return NULL; }
    p->sl_power = profile_slot(&p->slots, "gpu.power.usage", 0);
    p->sl_util = profile_slot(&p->slots, "gpu.utilization.gpu.pct", 0);
    p->sl_clock = profile_slot(&p->slots, "gpu.clock.streaming_multiprocessor_frequency", 0);
    p->sl_mask = -1;                       /* only when a rule reads it */
    for (size_t s = 0; s < p->slots.n; s++)
        if (!strcmp(p->slots.name[s], "gpu.throttling.reasons")) p->sl_mask = (int)s;
    return p;
}

static struct profile *load_root(json_t *root, const struct ymarks *M, char *err, size_t errlen)
{
    if (!json_is_object(root)) { cfail(M, root, err, errlen, "a profile is a JSON object"); return NULL; }
    const char *ext = json_string_value(json_object_get(root, "extends"));
    if (!ext) return compile(root, M, err, errlen);
    const char *base_txt = profile_builtin_json(ext);
    if (!base_txt) { cfail(M, json_object_get(root, "extends"), err, errlen, "unknown profile \"%s\" in \"extends\" (gpu or generic)", ext); return NULL; }
    json_error_t je;
    json_t *base = json_loads(base_txt, 0, &je);
    if (!base) { snprintf(err, errlen, "built-in profile: %s", je.text); return NULL; }
    const char *k;
    json_t *v;
    json_object_foreach(root, k, v) {
        if (!strcmp(k, "rules")) {
            if (!json_is_array(v)) { cfail(M, v, err, errlen, "\"rules\" must be an array"); json_decref(base); return NULL; }
            merge_rules(json_object_get(base, "rules"), v);
        } else if (strcmp(k, "extends")) {
            json_object_set(base, k, v);
        }
    }
    struct profile *p = compile(base, M, err, errlen);
    json_decref(base);
    return p;
}

struct profile *profile_from_json(const char *text, size_t len, char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) { snprintf(err, errlen, "line %d: %s", je.line, je.text); return NULL; }
    struct profile *p = load_root(root, NULL, err, errlen);
    json_decref(root);
    return p;
}

/* The first error of a detector file: "FILE:LINE:COL: msg" at v's key (at_key)
 * or value, "FILE: msg" when v has no mark. Later errors are dropped. */
static void yfail(struct ymarks *M, const json_t *v, int at_key, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void yfail(struct ymarks *M, const json_t *v, int at_key, const char *fmt, ...)
{
    if (M->bad++) return;
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    for (size_t i = 0; v && i < M->n; i++)
        if (M->m[i].v == v) {
            snprintf(M->err, M->errlen, "%s:%u:%u: %s", M->file, at_key ? M->m[i].kl : M->m[i].vl,
                     at_key ? M->m[i].kc : M->m[i].vc, msg);
            return;
        }
    snprintf(M->err, M->errlen, "%s: %s", M->file, msg);
}

/* YAML -> JSON value: mappings, sequences, plain scalars typed as JSON would
 * (numbers, true/false, null), quoted scalars as strings; marks recorded in
 * M, duplicate and non-scalar keys refused. */
static json_t *yaml_node_json(yaml_document_t *doc, yaml_node_t *n, const yaml_node_t *key, struct ymarks *M)
{
    if (!n) return NULL;
    if (gl_interrupted && gl_interrupted()) { yfail(M, NULL, 0, "interrupted by a signal"); return NULL; }
    json_t *out = NULL;
    if (n->type == YAML_SCALAR_NODE) {
        const char *v = (const char *)n->data.scalar.value;
        size_t len = n->data.scalar.length;
        int64_t i;
        double d;
        if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) out = json_stringn(v, len);
        else if (!strcmp(v, "true")) out = json_true();
        else if (!strcmp(v, "false")) out = json_false();
        else if (!strcmp(v, "null") || !strcmp(v, "~") || !len) out = json_null();
        else if (gl_parse_i64(v, len, &i)) out = json_integer(i);
        else if (gl_parse_double(v, len, &d)) out = json_real(d);
        else out = json_stringn(v, len);
    } else if (n->type == YAML_SEQUENCE_NODE) {
        out = json_array();
        for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
            json_t *e = yaml_node_json(doc, yaml_document_get_node(doc, *it), NULL, M);
            json_array_append_new(out, e ? e : json_null());
        }
    } else if (n->type == YAML_MAPPING_NODE) {
        out = json_object();
        for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
            yaml_node_t *k = yaml_document_get_node(doc, pr->key);
            json_t *v = yaml_node_json(doc, yaml_document_get_node(doc, pr->value), k, M);
            if (!v) v = json_null();
            if (!k || k->type != YAML_SCALAR_NODE) {
                yfail(M, v, 1, "keys must be scalars");
            } else if (json_object_get(out, (const char *)k->data.scalar.value)) {
                yfail(M, v, 1, "duplicate key \"%s\"", (const char *)k->data.scalar.value);
            } else {
                json_object_set(out, (const char *)k->data.scalar.value, v);
            }
            json_decref(v);
        }
    }
    if (out) ymark_add(M, out, key, n);
    return out;
}

/* Ranges of the numbers a detector file may set (beyond them the engine's
 * arithmetic overflows or the setting makes no sense). */
struct yrange { const char *key; double lo, hi; };
static const struct yrange top_ranges[] = {
    { "window", 4, WIN_CAP }, { "window_span_s", 1, 30 * 86400 }, { "max_series", 16, 100000000 },
    { "idle_evict_s", 1, 365 * 86400 }, { "out_of_order_tolerance_ms", 0, 3600000 }, { "gap_s", 0.001, 7 * 86400 },
    { "resolution_ms", 0, 3600000 },
};
static const struct yrange rule_ranges[] = {
    { "severity", 1, 3 }, { "for", 1, 65000 }, { "clear", 1, 65000 },
    { "cooldown_s", 0, 30 * 86400 }, { "change_s", 0, 30 * 86400 },
};
static const char *const top_keys[] = { "name", "extends", "rules", "description", "incidents", "actions" };
static const char *const rule_keys[] = { "id", "name", "detector", "metric", "enabled", "params", "description" };

/* Checks o's keys against names[] and ranges[] (numbers in range); 0 if ok. */
static int check_keys(struct ymarks *M, json_t *o, const char *what, const char *const *names, size_t nn,
                      const struct yrange *ranges, size_t nr)
{
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) {
        size_t i = 0;
        while (i < nn && strcmp(names[i], k)) i++;
        if (i < nn) continue;
        i = 0;
        while (i < nr && strcmp(ranges[i].key, k)) i++;
        if (i == nr) { yfail(M, v, 1, "%s: unknown key \"%s\"", what, k); return 1; }
        double d = json_number_value(v);
        if (!json_is_number(v) || !(d >= ranges[i].lo && d <= ranges[i].hi)) {
            yfail(M, v, 0, "%s: %s must be a number from %g to %g", what, k, ranges[i].lo, ranges[i].hi);
            return 1;
        }
    }
    return 0;
}

/* Validates a detector file's tree before it is compiled: known keys only,
 * numbers in range (parameters: compile_rule, by detector). 0 if ok, else the first
 * error in M->err. */
static int validate_file(struct ymarks *M, json_t *root)
{
    if (!json_is_object(root)) { yfail(M, root, 0, "a detector file is a mapping (JSON object)"); return 1; }
    if (check_keys(M, root, "top level", top_keys, GL_ARRAY_LEN(top_keys), top_ranges, GL_ARRAY_LEN(top_ranges))) return 1;
    json_t *rules = json_object_get(root, "rules");
    if (rules && !json_is_array(rules)) { yfail(M, rules, 0, "\"rules\" must be a list"); return 1; }
    size_t i;
    json_t *r;
    json_array_foreach(rules, i, r) {
        char what[96];
        const char *id = json_string_value(json_object_get(r, "id"));
        snprintf(what, sizeof what, "rule %.60s", id ? id : "(no id)");
        if (!json_is_object(r)) { yfail(M, r, 0, "rule %zu is not a mapping", i + 1); return 1; }
        if (check_keys(M, r, what, rule_keys, GL_ARRAY_LEN(rule_keys), rule_ranges, GL_ARRAY_LEN(rule_ranges))) return 1;
        json_t *params = json_object_get(r, "params");
        if (params && !json_is_object(params)) { yfail(M, params, 0, "%s: \"params\" must be a mapping", what); return 1; }
        /* parameters: each against its detector's range when the rule is compiled */
    }
    return 0;
}

struct profile *profile_load(const char *path, const char *builtin, char *err, size_t errlen)
{
    if (!path) {
        const char *t = profile_builtin_json(builtin);
        if (!t) { snprintf(err, errlen, "unknown profile \"%s\" (auto, gpu or generic)", builtin); return NULL; }
        return profile_from_json(t, strlen(t), err, errlen);
    }
    /* JSON or YAML, both through the bounded YAML loader (JSON is YAML's
     * flow style) so both get FILE:LINE:COL; JSON syntax is checked first */
    struct buf text;
    buf_init(&text);
    if (ydoc_read_file(path, &text, err, errlen) != GL_OK) { buf_free(&text); return NULL; }
    size_t pl = strlen(path);
    int is_yaml = (pl > 5 && !strcmp(path + pl - 5, ".yaml")) || (pl > 4 && !strcmp(path + pl - 4, ".yml"));
    if (!is_yaml) {
        json_error_t je;
        json_t *j = json_loadb(text.p, text.len, JSON_REJECT_DUPLICATES, &je);
        if (!j) { snprintf(err, errlen, "%s:%d:%d: %s", path, je.line, je.column, je.text); buf_free(&text); return NULL; }
        json_decref(j);
    }
    yaml_document_t doc;
    if (ydoc_load(path, text.p, text.len, &doc, err, errlen) != GL_OK) { buf_free(&text); return NULL; }
    buf_free(&text);
    struct ymarks M = { .file = path, .err = err, .errlen = errlen };
    yaml_node_t *rn = yaml_document_get_root_node(&doc);
    json_t *root = rn ? yaml_node_json(&doc, rn, NULL, &M) : NULL;
    yaml_document_delete(&doc);
    struct profile *p = NULL;
    if (!root && !M.bad) snprintf(err, errlen, "%s: empty document", path);
    else if (!M.bad && !validate_file(&M, root)) {
        p = load_root(root, &M, err, errlen);   /* a compile error names the file, and where in it */
    }
    json_decref(root);
    free(M.m);
    return p;
}
