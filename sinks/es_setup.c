/*
 * es_setup.c - installs what the ES sink writes into (see es_setup.h):
 * engine and version, lifecycle (ILM, data stream lifecycle, ISM), component
 * and index templates stamped with the hash of their content, data streams,
 * Kibana saved objects. Moved here from cmd/setup.c, which now only parses
 * the flags.
 */
#include "es_setup.h"
#include "es_bulk.h"
#include "es_cli.h"

#include <dirent.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum flavor { FLAVOR_ES, FLAVOR_OS };

struct es_setup {
    struct es_conf conf;    /* a copy; its strings are the caller's */
    const char *schemas;
    const char *kibana;
    enum flavor flavor;
    int major, minor;
    long ilm_status;    /* Elasticsearch: GET /_ilm/status (200: ILM is there) */
    long ds_status;     /* Elasticsearch: GET /_data_stream (200: data stream API and lifecycle) */
    int use_dsl;        /* retention through the data stream lifecycle of the templates */
    int skipped;        /* objects this cluster cannot hold, reported, not failures */
    int failed;
    char err[GL_ERRLEN];
};

/* Whether path p exists. */
static int file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

/* Finds the schemas directory (see es_setup_schemas) into out. */
static const char *find_schemas(char *out, size_t outlen)
{
    const char *env = getenv("GPULOG_SCHEMAS");
    char exe[PATH_MAX], probe[PATH_MAX + 64];
    const char *cands[6];
    size_t nc = 0;
    char c1[PATH_MAX + 32], c2[PATH_MAX + 32];
    if (env && *env) cands[nc++] = env;
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            snprintf(c1, sizeof c1, "%s/../schemas", exe);
            snprintf(c2, sizeof c2, "%s/../share/gpulog/schemas", exe);
            cands[nc++] = c1;
            cands[nc++] = c2;
        }
    }
    cands[nc++] = "/usr/share/gpulog/schemas";
    cands[nc++] = "schemas";
    for (size_t i = 0; i < nc; i++) {
        snprintf(probe, sizeof probe, "%s/es/component_template.gpulog-mappings.json", cands[i]);
        if (file_exists(probe)) {
            snprintf(out, outlen, "%s", cands[i]);
            return out;
        }
    }
    return NULL;
}

/* GET path: the answer's JSON (NULL when empty or not JSON; the caller
 * decrefs it) and its HTTP status in *status (0 when the request failed;
 * s->err says why). */
static json_t *get_json(struct es_setup *s, const char *path, long *status)
{
    struct buf resp;
    buf_init(&resp);
    *status = 0;
    if (es_request(&s->conf, "GET", path, NULL, 0, NULL, NULL, &resp, status,
                   s->err, sizeof s->err) != GL_OK) {
        buf_free(&resp);
        return NULL;
    }
    json_t *j = resp.len ? json_loadb(resp.p, resp.len, 0, NULL) : NULL;
    buf_free(&resp);
    return j;
}

/* A request with a JSON body (borrowed, may be NULL); the answer goes to
 * resp. GL_ERROR on a transport error, reason in s->err. */
static int send_json(struct es_setup *s, const char *method, const char *path, const char *body,
                     long *status, struct buf *resp)
{
    return es_request(&s->conf, method, path, body, body ? strlen(body) : 0,
                      "application/json", NULL, resp, status, s->err, sizeof s->err);
}

/* HTTP status of GET path (0 when the request failed; s->err says why). */
static long probe(struct es_setup *s, const char *path)
{
    long st;
    json_decref(get_json(s, path, &st));
    return st;
}

/* Engine and version. GET / first; where it gives no version (Elasticsearch 9 and
 * Elasticsearch's minimal distribution answer 405 there, a proxy may hide it) the
 * local node's info: Elasticsearch nodes report build_flavor, OpenSearch ones do not. */
static int detect_flavor(struct es_setup *s)
{
    long st, st_root;
    char via[96] = "GET /";
    json_t *j = get_json(s, "/", &st_root);
    if (!j && !st_root) return GL_ERROR;   /* unreachable: s->err says why */
    json_t *v = json_object_get(j, "version");
    const char *dist = json_string_value(json_object_get(v, "distribution"));
    const char *num = json_string_value(json_object_get(v, "number"));
    int flavor_known = st_root == 200 && num;
    if (flavor_known) s->flavor = dist && !strcmp(dist, "opensearch") ? FLAVOR_OS : FLAVOR_ES;
    json_t *nodes = NULL;
    if (!flavor_known) {
        nodes = get_json(s, "/_nodes/_local?filter_path=nodes.*.version,nodes.*.build_flavor", &st);
        if (!nodes && !st) { json_decref(j); return GL_ERROR; }
        const char *key;
        json_t *node = NULL, *n;
        json_object_foreach(json_object_get(nodes, "nodes"), key, n) { node = n; break; }
        num = json_string_value(json_object_get(node, "version"));
        if (st != 200 || !num) {
            snprintf(s->err, sizeof s->err, "no Elasticsearch or OpenSearch version: GET / answered HTTP %ld, "
                     "GET /_nodes/_local HTTP %ld%s", st_root, st,
                     st == 401 || st == 403 || st_root == 401 || st_root == 403 ? " (credentials?)" : "");
            json_decref(nodes);
            json_decref(j);
            return GL_ERROR;
        }
        s->flavor = json_object_get(node, "build_flavor") ? FLAVOR_ES : FLAVOR_OS;
        snprintf(via, sizeof via, "GET /_nodes/_local (GET / answered HTTP %ld)", st_root);
    }
    s->major = atoi(num);
    const char *dot = strchr(num, '.');
    s->minor = dot ? atoi(dot + 1) : 0;
    printf("cluster: %s %s (from %s)\n", s->flavor == FLAVOR_OS ? "OpenSearch" : "Elasticsearch", num, via);
    int ret = GL_OK;
    if (s->flavor == FLAVOR_ES && s->major && (s->major < 7 || (s->major == 7 && s->minor < 8))) {
        snprintf(s->err, sizeof s->err, "Elasticsearch %s is too old: composable templates need 7.8+", num);
        ret = GL_ERROR;
    }
    json_decref(nodes);
    json_decref(j);
    return ret;
}

/* The hash of obj's compact, key-sorted JSON as 32 hex digits; caller frees. */
static char *hash_of(json_t *obj)
{
    char *txt = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS);
    struct hash128 h;
    hash128_init(&h);
    hash128_feed(&h, txt, strlen(txt));
    free(txt);
    char hex[33];
    hash128_hex(&h, hex);
    return xstrdup(hex);
}

/* Sets meta_parent._meta.gpulog_hash to hash (creating _meta). */
static void stamp_meta(json_t *meta_parent, const char *hash)
{
    json_t *meta = json_object_get(meta_parent, "_meta");
    if (!json_is_object(meta)) {
        meta = json_object();
        json_object_set_new(meta_parent, "_meta", meta);
    }
    json_object_set_new(meta, "gpulog_hash", json_string(hash));
}

enum kind { K_ILM, K_ISM, K_COMPONENT, K_INDEX };
static const char *const kind_prefix[] = { "ilm.", "ism.", "component_template.", "index_template." };
static const char *const kind_label[] = { "ilm policy", "ism policy", "component template", "index template" };

/* Stamps want with the hash of its content before the stamp (ISM: in the
 * policy's description; ILM: policy._meta; templates: _meta). Returns the
 * hash; the caller frees it. */
static char *stamp(enum kind k, json_t *want)
{
    char *hash = hash_of(want);
    if (k == K_ISM) {
        json_t *pol = json_object_get(want, "policy");
        const char *d = json_string_value(json_object_get(pol, "description"));
        char desc[512];
        snprintf(desc, sizeof desc, "%s [gpulog_hash:%s]", d ? d : "gpulog", hash);
        json_object_set_new(pol, "description", json_string(desc));
    } else if (k == K_ILM) {
        stamp_meta(json_object_get(want, "policy"), hash);
    } else {
        stamp_meta(want, hash);
    }
    return hash;
}

/* Whether the installed object have (the answer of GET, borrowed) carries
 * hash; for ISM also writes into update_q the ?if_seq_no=..&if_primary_term=..
 * its update needs (left empty otherwise). */
static int installed_matches(enum kind k, const char *name, json_t *have, const char *hash,
                             char *update_q, size_t qlen)
{
    if (k == K_ISM) {
        const char *d = json_string_value(json_object_get(json_object_get(have, "policy"), "description"));
        const char *p = d ? strstr(d, "[gpulog_hash:") : NULL;
        json_t *sq = json_object_get(have, "_seq_no"), *pt = json_object_get(have, "_primary_term");
        if (json_is_integer(sq) && json_is_integer(pt))
            snprintf(update_q, qlen, "?if_seq_no=%lld&if_primary_term=%lld",
                     (long long)json_integer_value(sq), (long long)json_integer_value(pt));
        return p && !strncmp(p + 13, hash, 32) && p[45] == ']';
    }
    json_t *obj = NULL;
    if (k == K_COMPONENT)
        obj = json_object_get(json_array_get(json_object_get(have, "component_templates"), 0), "component_template");
    else if (k == K_INDEX)
        obj = json_object_get(json_array_get(json_object_get(have, "index_templates"), 0), "index_template");
    else if (k == K_ILM)
        obj = json_object_get(json_object_get(have, name), "policy");
    const char *installed = json_string_value(json_object_get(json_object_get(obj, "_meta"), "gpulog_hash"));
    return installed && !strcmp(installed, hash);
}

/* PUTs want (borrowed) to path and prints the outcome: created, updated
 * (exists), or FAILED, which marks the run failed. */
static void put_object(struct es_setup *s, enum kind k, const char *name, const char *path,
                       json_t *want, int exists)
{
    char *body = json_dumps(want, JSON_COMPACT | JSON_SORT_KEYS);
    struct buf resp;
    buf_init(&resp);
    long st;
    if (send_json(s, "PUT", path, body, &st, &resp) != GL_OK) {
        printf("%s %s: FAILED: %s\n", kind_label[k], name, s->err);
        s->failed = 1;
    } else if (st < 200 || st >= 300) {
        printf("%s %s: FAILED: HTTP %ld: %.400s\n", kind_label[k], name, st, resp.p ? resp.p : "");
        s->failed = 1;
    } else {
        printf("%s %s: %s\n", kind_label[k], name, exists ? "updated" : "created");
    }
    buf_free(&resp);
    free(body);
}

/* Installs one object (want, borrowed; stamped here) unless the installed
 * one carries the same hash. */
static void install(struct es_setup *s, enum kind k, const char *name, json_t *want)
{
    char path[512];
    const char *api = k == K_ILM ? "/_ilm/policy/" : k == K_ISM ? "/_plugins/_ism/policies/"
                    : k == K_COMPONENT ? "/_component_template/" : "/_index_template/";
    snprintf(path, sizeof path, "%s%s", api, name);
    char *hash = stamp(k, want);
    long st;
    json_t *have = get_json(s, path, &st);
    if (!have && !st) {
        printf("%s %s: FAILED: %s\n", kind_label[k], name, s->err);
        s->failed = 1;
        free(hash);
        return;
    }
    char update_q[128] = "";
    int exists = st == 200;
    if (exists && have && installed_matches(k, name, have, hash, update_q, sizeof update_q)) {
        printf("%s %s: unchanged\n", kind_label[k], name);
    } else {
        char put_path[700];
        snprintf(put_path, sizeof put_path, "%s%s", path, exists ? update_q : "");
        put_object(s, k, name, put_path, want, exists);
    }
    json_decref(have);
    free(hash);
}

/* qsort comparison of two strings. */
static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sorted file names in dir that start with prefix and end with suffix;
 * free with free_list (NULL when there are none). */
static char **list_files(const char *dir, const char *prefix, const char *suffix, size_t *n)
{
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return NULL;
    char **v = NULL;
    size_t cap = 0;
    struct dirent *de;
    size_t pl = strlen(prefix), sl = strlen(suffix);
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l <= pl + sl || strncmp(de->d_name, prefix, pl) || strcmp(de->d_name + l - sl, suffix)) continue;
        if (*n == cap) { cap = cap ? cap * 2 : 16; v = xrealloc(v, cap * sizeof *v); }
        v[(*n)++] = xstrdup(de->d_name);
    }
    closedir(d);
    if (*n) qsort(v, *n, sizeof *v, cmp_str);
    return v;
}

/* Frees a list_files result. */
static void free_list(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++) free(v[i]);
    free(v);
}

/* Elasticsearch: the lifecycle named in an index template's _meta.lifecycle, as
 * the ILM policy (index.lifecycle.name) where ILM is there, else as the data stream
 * lifecycle's data_retention (the delete min_age of that ILM policy file); nothing
 * where neither is there. OpenSearch's ISM attaches itself through ism_template. */
static void attach_lifecycle(struct es_setup *s, json_t *want)
{
    const char *life = json_string_value(json_object_get(json_object_get(want, "_meta"), "lifecycle"));
    if (!life || (s->ilm_status != 200 && !s->use_dsl)) return;
    json_t *tpl = json_object_get(want, "template");
    if (!tpl) { tpl = json_object(); json_object_set_new(want, "template", tpl); }
    if (s->ilm_status == 200) {
        json_t *set = json_object_get(tpl, "settings");
        if (!set) { set = json_object(); json_object_set_new(tpl, "settings", set); }
        json_object_set_new(set, "index.lifecycle.name", json_string(life));
        return;
    }
    char path[PATH_MAX + 300];
    snprintf(path, sizeof path, "%s/es/ilm.%s.json", s->schemas, life);
    json_t *pol = json_load_file(path, 0, NULL);
    const char *age = json_string_value(json_object_get(json_object_get(json_object_get(json_object_get(
        pol, "policy"), "phases"), "delete"), "min_age"));
    if (age) {
        json_t *dsl = json_object();
        json_object_set_new(dsl, "data_retention", json_string(age));
        json_object_set_new(tpl, "lifecycle", dsl);
    }
    json_decref(pol);
}

/* Installs every schemas/es/<prefix>NAME.json of kind k; a component or index
 * template kind with no file is a failure. */
static void install_kind(struct es_setup *s, enum kind k)
{
    char dir[PATH_MAX + 8];
    snprintf(dir, sizeof dir, "%s/es", s->schemas);
    size_t n;
    char **files = list_files(dir, kind_prefix[k], ".json", &n);
    if (!n && (k == K_COMPONENT || k == K_INDEX)) {
        printf("%ss: FAILED: no %s*.json in %s\n", kind_label[k], kind_prefix[k], dir);
        s->failed = 1;
    }
    for (size_t i = 0; i < n; i++) {
        char path[PATH_MAX + 300];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        json_error_t je;
        json_t *want = json_load_file(path, 0, &je);
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(strlen(files[i]) - strlen(kind_prefix[k]) - 5),
                 files[i] + strlen(kind_prefix[k]));
        if (!json_is_object(want)) {
            printf("%s %s: FAILED: %s: %s\n", kind_label[k], name, path, je.text);
            s->failed = 1;
            json_decref(want);
            continue;
        }
        if (k == K_INDEX && s->flavor == FLAVOR_ES) attach_lifecycle(s, want);
        install(s, k, name, want);
        json_decref(want);
    }
    free_list(files, n);
}

/* Why an API probe did not answer 200, for the messages about what was not installed. */
static const char *missing_why(long st)
{
    return st == 401 || st == 403 ? "these credentials may not use it" : "not on this cluster";
}

/* Installs the lifecycle the cluster has (Elasticsearch: ILM, else the data stream
 * lifecycle of the templates; OpenSearch: ISM) and says why when it has none. */
static void lifecycle(struct es_setup *s)
{
    if (s->flavor == FLAVOR_ES) {
        s->ilm_status = probe(s, "/_ilm/status");
        s->ds_status = s->ilm_status ? probe(s, "/_data_stream") : 0;
        if (!s->ilm_status || !s->ds_status) {
            printf("lifecycle: FAILED: %s\n", s->err);
            s->failed = 1;
        } else if (s->ilm_status == 200) {
            install_kind(s, K_ILM);
        } else if (s->ds_status == 200 && (s->major > 8 || (s->major == 8 && s->minor >= 11))) {
            s->use_dsl = 1;
            printf("lifecycle: ILM is not available (GET /_ilm/status answered HTTP %ld): retention "
                   "through the data stream lifecycle (data_retention in the index templates)\n", s->ilm_status);
        } else {
            s->skipped++;
            printf("lifecycle: NOT installed: this Elasticsearch has neither ILM (GET /_ilm/status "
                   "answered HTTP %ld: %s) nor the data stream lifecycle (GET /_data_stream answered HTTP "
                   "%ld: %s; it needs the data-streams module and 8.11+): retention is NOT managed; delete "
                   "old backing indices yourself\n", s->ilm_status, missing_why(s->ilm_status),
                   s->ds_status, missing_why(s->ds_status));
        }
        return;
    }
    long st = probe(s, "/_plugins/_ism/policies");
    if (st == 200) {
        install_kind(s, K_ISM);
        return;
    }
    s->skipped++;
    printf("lifecycle: NOT installed: the ISM plugin (opensearch-index-management) is not installed on "
           "this OpenSearch (GET /_plugins/_ism/policies answered HTTP %ld: %s): retention is NOT managed; "
           "delete old backing indices yourself or install the plugin and run setup again\n", st, missing_why(st));
}

/* Creates the three data streams of the namespace unless they exist (on an
 * Elasticsearch without the data stream API, says why it does not). */
static void data_streams(struct es_setup *s)
{
    for (int i = 0; i < 3; i++) {
        char name[160], path[200];
        es_stream_name((enum sink_stream)i, s->conf.ns, name, sizeof name);
        if (s->flavor == FLAVOR_ES && s->ds_status != 200) {
            s->skipped++;
            printf("data stream %s: NOT created: no data stream API here (GET /_data_stream answered "
                   "HTTP %ld: %s); the first document written creates it from its index template\n",
                   name, s->ds_status, missing_why(s->ds_status));
            continue;
        }
        snprintf(path, sizeof path, "/_data_stream/%s", name);
        long st;
        json_t *j = get_json(s, path, &st);
        json_decref(j);
        if (!st) {
            printf("data stream %s: FAILED: %s\n", name, s->err);
            s->failed = 1;
            continue;
        }
        if (st == 200) {
            printf("data stream %s: unchanged\n", name);
            continue;
        }
        struct buf resp;
        buf_init(&resp);
        if (send_json(s, "PUT", path, NULL, &st, &resp) != GL_OK || st < 200 || st >= 300) {
            printf("data stream %s: FAILED: %s\n", name, st ? (resp.p ? resp.p : "?") : s->err);
            s->failed = 1;
        } else {
            printf("data stream %s: created\n", name);
        }
        buf_free(&resp);
    }
}

/* POSTs one NDJSON file to Kibana's saved-object import and checks the
 * "success" field of the answer (Kibana answers 200 even on failures). */
static void kibana_import(struct es_setup *s, const char *file)
{
    struct es_conf kc = s->conf;
    kc.url = s->kibana;
    CURL *h = curl_easy_init();
    struct curl_slist *hdrs = NULL;
    es_curl_auth(h, &kc, &hdrs);
    hdrs = curl_slist_append(hdrs, "kbn-xsrf: true");
    hdrs = curl_slist_append(hdrs, "osd-xsrf: true");
    curl_mime *mime = curl_mime_init(h);
    curl_mimepart *part = curl_mime_addpart(mime);
    curl_mime_name(part, "file");
    curl_mime_filedata(part, file);
    curl_mime_type(part, "application/ndjson");
    struct buf url, resp;
    buf_init(&url);
    buf_init(&resp);
    buf_puts(&url, s->kibana);
    while (url.len && url.p[url.len - 1] == '/') url.p[--url.len] = '\0';
    buf_puts(&url, "/api/saved_objects/_import?overwrite=true");
    curl_easy_setopt(h, CURLOPT_URL, url.p);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_MIMEPOST, mime);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, es_collect_body);   /* capped */
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &resp);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 120000L);
    const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
    CURLcode rc = curl_easy_perform(h);
    long st = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st);
    json_t *j = rc == CURLE_OK ? json_loadb(resp.p ? resp.p : "", resp.len, 0, NULL) : NULL;
    if (rc != CURLE_OK) {
        char masked[512];
        es_url_masked(s->kibana, masked, sizeof masked);
        printf("kibana %s: FAILED: %s: %s\n", base, masked, curl_easy_strerror(rc));
        s->failed = 1;
    } else if (st != 200 || !json_is_true(json_object_get(j, "success"))) {
        printf("kibana %s: FAILED: HTTP %ld, success=%s: %.600s\n", base, st,
               json_is_true(json_object_get(j, "success")) ? "true" : "false", resp.p ? resp.p : "");
        s->failed = 1;
    } else {
        printf("kibana %s: imported %lld objects (overwrite)\n", base,
               (long long)json_integer_value(json_object_get(j, "successCount")));
    }
    json_decref(j);
    buf_free(&url);
    buf_free(&resp);
    curl_mime_free(mime);
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(h);
}

/* Imports every .ndjson file of schemas/kibana/ into Kibana; none is a failure. */
static void kibana(struct es_setup *s)
{
    char dir[PATH_MAX + 8];
    snprintf(dir, sizeof dir, "%s/kibana", s->schemas);
    size_t n;
    char **files = list_files(dir, "", ".ndjson", &n);
    if (!n) {
        printf("kibana: FAILED: no *.ndjson in %s\n", dir);
        s->failed = 1;
    }
    for (size_t i = 0; i < n; i++) {
        char path[PATH_MAX + 300];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        kibana_import(s, path);
    }
    free_list(files, n);
}


const char *es_setup_schemas(const char *dir, char *out, size_t outlen, char *err, size_t errlen)
{
    if (!dir && !(dir = find_schemas(out, outlen))) {
        snprintf(err, errlen, "no schemas directory found: pass --schemas-dir DIR");
        return NULL;
    }
    char probe[PATH_MAX + 64];
    snprintf(probe, sizeof probe, "%s/es", dir);
    if (!file_exists(probe)) {
        snprintf(err, errlen, "%s has no es/ directory", dir);
        return NULL;
    }
    return dir;
}

struct es_setup *es_setup_new(const struct es_conf *conf, const char *schemas, const char *kibana)
{
    struct es_setup *s = xcalloc(1, sizeof *s);
    s->conf = *conf;
    s->schemas = schemas;
    s->kibana = kibana;
    return s;
}

int es_setup_identify(struct es_setup *s, char *err, size_t errlen)
{
    if (detect_flavor(s) == GL_OK) return GL_OK;
    snprintf(err, errlen, "%s", s->err);
    return GL_ERROR;
}

int es_setup_install(struct es_setup *s)
{
    lifecycle(s);
    install_kind(s, K_COMPONENT);
    if (!s->failed) install_kind(s, K_INDEX);
    if (!s->failed) data_streams(s);
    if (s->kibana) kibana(s);
    if (s->failed) printf("setup: FAILED (see above)\n");
    else if (s->skipped) printf("setup: done; %d object(s) this cluster cannot hold were NOT installed (see above)\n", s->skipped);
    else printf("setup: done\n");
    return s->failed ? GL_ERROR : GL_OK;
}

void es_setup_free(struct es_setup *s)
{
    free(s);
}
