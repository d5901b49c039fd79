/*
 * setup.c - `gpulog setup`: installs what the ES sink writes into.
 *
 * Reads the objects from a schemas directory (schemas/es/ JSON files, built from
 * schemas/event.schema.json by schemas/es/gen_templates.py) and installs, in
 * order: lifecycle policies (ILM on Elasticsearch; ISM on OpenSearch when
 * the plugin answers), component templates, index templates, the data
 * streams of the namespace, and optionally Kibana saved objects.
 * Idempotent: every object carries a hash of its wanted content in
 * _meta.gpulog_hash (ISM: in its description); an installed object whose
 * hash matches is reported "unchanged" and not written again.
 */
#include "cli.h"
#include "../sinks/es_bulk.h"
#include "../sinks/es_cli.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void setup_help(void)
{
    printf(
        "usage: gpulog setup --es URL [--kibana URL] [--namespace NS] [--schemas-dir DIR]\n"
        "                    [auth options]\n"
        "\n"
        "Installs into Elasticsearch or OpenSearch (detected with GET /, else with\n"
        "GET /_nodes/_local: Elasticsearch 9 answers 405 on GET /) what\n"
        "gpulog's ES sink writes into, and says for each object whether it was\n"
        "created, updated or unchanged (a second run changes nothing):\n"
        "  - lifecycle policies gpulog-logs (90 days) and gpulog-metrics (30 days):\n"
        "    ILM on Elasticsearch, else its data stream lifecycle (data_retention\n"
        "    in the index templates); ISM on OpenSearch when the plugin is installed\n"
        "    (otherwise retention is not managed, and setup says so)\n"
        "  - component templates gpulog-settings, gpulog-mappings and index templates\n"
        "    for the data streams logs-gpu.xid-*, logs-gpu.anomaly-*, metrics-gpu.dmon-*\n"
        "  - the data streams of namespace NS (default: default); where the cluster\n"
        "    has no data stream API, setup says so and the first write creates them\n"
        "  - with --kibana URL: the saved objects of schemas/kibana/*.ndjson (data\n"
        "    views and dashboards), imported with overwrite=true\n"
        "\n"
        "options:\n"
        "      --es URL           the cluster (http[s]://[user:pass@]host:port)\n"
        "      --kibana URL       Kibana to import the dashboards into\n"
        "      --namespace NS     data stream namespace (default: default)\n"
        "      --schemas-dir DIR  where es/ and kibana/ are (default: $GPULOG_SCHEMAS,\n"
        "                         else <binary>/../schemas, <binary>/../share/gpulog/schemas,\n"
        "                         /usr/share/gpulog/schemas, ./schemas: the first that has\n"
        "                         es/component_template.gpulog-mappings.json)\n"
        "      --es-user USER     basic auth user; password from GPULOG_ES_PASSWORD or\n"
        "                         --es-password-file FILE\n"
        "      --es-api-key-file FILE  API key (else GPULOG_ES_API_KEY)\n"
        "      --es-ca FILE, --es-cert FILE, --es-key FILE  TLS\n"
        "Exit status: 0 all installed that the cluster can hold (what it cannot is\n"
        "reported as NOT installed, with the reason), 1 a request failed, 2 usage error.\n");
}

enum flavor { FLAVOR_ES, FLAVOR_OS };

struct setup {
    struct es_cli cli;
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

static int file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

/* Finds the schemas directory (see the help text). */
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

static json_t *get_json(struct setup *s, const char *path, long *status)
{
    struct buf resp;
    buf_init(&resp);
    *status = 0;
    if (es_request(&s->cli.conf, "GET", path, NULL, 0, NULL, NULL, &resp, status,
                   s->err, sizeof s->err) != GL_OK) {
        buf_free(&resp);
        return NULL;
    }
    json_t *j = resp.len ? json_loadb(resp.p, resp.len, 0, NULL) : NULL;
    buf_free(&resp);
    return j;
}

static int send_json(struct setup *s, const char *method, const char *path, const char *body,
                     long *status, struct buf *resp)
{
    return es_request(&s->cli.conf, method, path, body, body ? strlen(body) : 0,
                      "application/json", NULL, resp, status, s->err, sizeof s->err);
}

/* HTTP status of GET path (0 when the request failed; s->err says why). */
static long probe(struct setup *s, const char *path)
{
    long st;
    json_decref(get_json(s, path, &st));
    return st;
}

/* Engine and version. GET / first; where it gives no version (Elasticsearch 9 and
 * Elasticsearch's minimal distribution answer 405 there, a proxy may hide it) the
 * local node's info: Elasticsearch nodes report build_flavor, OpenSearch ones do not. */
static int detect_flavor(struct setup *s)
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

/* Sets obj[key]._meta.gpulog_hash (creating _meta) and returns the hash. */
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

/* Installs one object unless the installed one carries the same hash. */
static void install(struct setup *s, enum kind k, const char *name, json_t *want)
{
    char path[512];
    const char *api = k == K_ILM ? "/_ilm/policy/" : k == K_ISM ? "/_plugins/_ism/policies/"
                    : k == K_COMPONENT ? "/_component_template/" : "/_index_template/";
    snprintf(path, sizeof path, "%s%s", api, name);

    /* the hash covers the wanted object before the stamp */
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

    long st;
    json_t *have = get_json(s, path, &st);
    if (!have && !st) {
        printf("%s %s: FAILED: %s\n", kind_label[k], name, s->err);
        s->failed = 1;
        free(hash);
        return;
    }
    const char *installed_hash = NULL;
    char update_q[128] = "";
    if (st == 200 && have) {
        json_t *obj = NULL;
        if (k == K_COMPONENT)
            obj = json_object_get(json_array_get(json_object_get(have, "component_templates"), 0), "component_template");
        else if (k == K_INDEX)
            obj = json_object_get(json_array_get(json_object_get(have, "index_templates"), 0), "index_template");
        else if (k == K_ILM)
            obj = json_object_get(json_object_get(have, name), "policy");
        if (k == K_ISM) {
            const char *d = json_string_value(json_object_get(json_object_get(have, "policy"), "description"));
            const char *p = d ? strstr(d, "[gpulog_hash:") : NULL;
            if (p && !strncmp(p + 13, hash, 32) && p[45] == ']') installed_hash = hash;
            json_t *sq = json_object_get(have, "_seq_no"), *pt = json_object_get(have, "_primary_term");
            if (json_is_integer(sq) && json_is_integer(pt))
                snprintf(update_q, sizeof update_q, "?if_seq_no=%lld&if_primary_term=%lld",
                         (long long)json_integer_value(sq), (long long)json_integer_value(pt));
        } else {
            installed_hash = json_string_value(json_object_get(json_object_get(obj, "_meta"), "gpulog_hash"));
        }
    }
    if (installed_hash && !strcmp(installed_hash, hash)) {
        printf("%s %s: unchanged\n", kind_label[k], name);
        json_decref(have);
        free(hash);
        return;
    }
    int exists = st == 200;
    json_decref(have);
    char *body = json_dumps(want, JSON_COMPACT | JSON_SORT_KEYS);
    struct buf resp;
    buf_init(&resp);
    char put_path[700];
    snprintf(put_path, sizeof put_path, "%s%s", path, exists ? update_q : "");
    if (send_json(s, "PUT", put_path, body, &st, &resp) != GL_OK) {
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
    free(hash);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sorted file names in dir that start with prefix and end with suffix. */
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

static void free_list(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++) free(v[i]);
    free(v);
}

/* Elasticsearch: the lifecycle named in an index template's _meta.lifecycle, as
 * the ILM policy (index.lifecycle.name) where ILM is there, else as the data stream
 * lifecycle's data_retention (the delete min_age of that ILM policy file); nothing
 * where neither is there. OpenSearch's ISM attaches itself through ism_template. */
static void attach_lifecycle(struct setup *s, json_t *want)
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

static void install_kind(struct setup *s, enum kind k)
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
static void lifecycle(struct setup *s)
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

static void data_streams(struct setup *s)
{
    for (int i = 0; i < 3; i++) {
        char name[160], path[200];
        es_stream_name((enum sink_stream)i, s->cli.conf.ns, name, sizeof name);
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
static void kibana_import(struct setup *s, const char *file)
{
    struct es_conf kc = s->cli.conf;
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

static void kibana(struct setup *s)
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

int cmd_setup(int argc, char **argv)
{
    static const struct option opts[] = {
        ES_CLI_LONGOPTS,
        { "kibana", required_argument, NULL, 'k' },
        { "schemas-dir", required_argument, NULL, 's' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    struct setup s;
    memset(&s, 0, sizeof s);
    es_cli_init(&s.cli);
    char schemas_buf[PATH_MAX];
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'k': s.kibana = optarg; break;
        case 's': s.schemas = optarg; break;
        case 'h': setup_help(); es_cli_free(&s.cli); return EXIT_OK;
        case ':': es_cli_free(&s.cli); return cli_usage_error("setup", "%s needs a value", argv[optind - 1]);
        case '?': es_cli_free(&s.cli); return cli_usage_error("setup", "unknown option %s", argv[optind - 1]);
        default: {
            int r = es_cli_opt(&s.cli, c, optarg, s.err, sizeof s.err);
            if (r <= 0) {
                es_cli_free(&s.cli);
                return cli_usage_error("setup", "%s", r < 0 ? s.err : "unknown option");
            }
        }
        }
    }
    if (optind < argc) { es_cli_free(&s.cli); return cli_usage_error("setup", "unexpected argument %s", argv[optind]); }
    if (!s.cli.conf.url) { es_cli_free(&s.cli); return cli_usage_error("setup", "--es URL is required"); }
    if (es_cli_finish(&s.cli, s.err, sizeof s.err) != GL_OK) {
        es_cli_free(&s.cli);
        return cli_usage_error("setup", "%s", s.err);
    }
    if (!s.schemas && !(s.schemas = find_schemas(schemas_buf, sizeof schemas_buf))) {
        es_cli_free(&s.cli);
        return cli_usage_error("setup", "no schemas directory found: pass --schemas-dir DIR");
    }
    char probe[PATH_MAX + 64];
    snprintf(probe, sizeof probe, "%s/es", s.schemas);
    if (!file_exists(probe)) {
        es_cli_free(&s.cli);
        return cli_usage_error("setup", "%s has no es/ directory", s.schemas);
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (detect_flavor(&s) != GL_OK) {
        char masked[512];
        es_url_masked(s.cli.conf.url, masked, sizeof masked);
        fprintf(stderr, "gpulog setup: %s: %s\n", masked, s.err);
        es_cli_free(&s.cli);
        return EXIT_IOERR;
    }
    lifecycle(&s);
    install_kind(&s, K_COMPONENT);
    if (!s.failed) install_kind(&s, K_INDEX);
    if (!s.failed) data_streams(&s);
    if (s.kibana) kibana(&s);
    if (s.failed) printf("setup: FAILED (see above)\n");
    else if (s.skipped) printf("setup: done; %d object(s) this cluster cannot hold were NOT installed (see above)\n", s.skipped);
    else printf("setup: done\n");
    es_cli_free(&s.cli);
    return s.failed ? EXIT_IOERR : EXIT_OK;
}
