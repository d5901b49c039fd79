/* test_config.c - the configuration table, YAML loader, environment and
 * flag precedence, printing and docs (core/config.c). */
#include "test.h"
#include "../core/config.h"
#include "../core/common.h"
#include "../parsers/parser.h"

#include <stdlib.h>
#include <unistd.h>

static int load(const char *yaml, struct gpulog_config *cfg, char *err, size_t errlen)
{
    config_defaults(cfg);
    return config_load_string("t.yaml", yaml, strlen(yaml), cfg, err, errlen);
}

TEST(defaults)
{
    struct gpulog_config c;
    config_defaults(&c);
    CHECK_EQ_STR(c.kafka.topic_metrics, "gpu.metrics");
    CHECK_EQ_STR(c.kafka.topic_events, "gpu.events");
    CHECK_EQ_STR(c.kafka.topic_anomalies, "gpu.anomalies");
    CHECK_EQ_STR(c.kafka.topic_deadletter, "gpu.deadletter");
    CHECK_EQ_STR(c.log.level, "info");
    CHECK_EQ_STR(c.log.format, "logfmt");
    CHECK_EQ_STR(c.detect.profile, "auto");
    CHECK_EQ_STR(c.es.ns, "default");
    CHECK_EQ_STR(c.metrics_addr, "");
    CHECK_EQ_INT(c.shutdown_timeout_ms, 10000);
    CHECK_EQ_INT(c.es.batch_bytes, 5 << 20);
    CHECK_EQ_INT(c.es.batch_age_ms, 250);
    CHECK_EQ_INT(c.es.index_metrics, 0);
    CHECK_EQ_INT(c.sources.n, 0);
    CHECK_EQ_INT(c.kafka.properties.n, 0);
    /* every key has a non-NULL default and help text */
    size_t n;
    const struct config_key *k = config_keys(&n);
    CHECK(n >= 30);
    for (size_t i = 0; i < n; i++) {
        CHECK(k[i].def != NULL);
        CHECK(k[i].help && strlen(k[i].help) > 10);
        CHECK(config_key_find(k[i].path) == &k[i]);
    }
    config_free(&c);
    CHECK(c.host == NULL);
}

TEST(empty_file_is_valid)
{
    struct gpulog_config c;
    char err[512];
    CHECK_EQ_INT(load("", &c, err, sizeof err), GL_OK);
    config_free(&c);
    CHECK_EQ_INT(load("# only a comment\n", &c, err, sizeof err), GL_OK);
    CHECK_EQ_STR(c.kafka.group, "gpulog-detect");
    config_free(&c);
}

TEST(full_file)
{
    const char *y =
        "host: n7\n"
        "tz: UTC\n"
        "log: {level: debug, format: json}\n"
        "sources:\n"
        "  - type: exec\n"
        "    command: nvidia-smi dmon -o DT -s pucvmet\n"
        "    format: dmon\n"
        "  - type: kmsg\n"
        "  - {type: file, path: '/var/log/gpu/*.log'}\n"
        "  - type: stdin\n"
        "kafka:\n"
        "  brokers: a:1,b:2\n"
        "  topics: {metrics: m, events: e}\n"
        "  group: g\n"
        "  properties:\n"
        "    security.protocol: SSL\n"
        "    sasl: {username: u, password: p}\n"
        "detect:\n"
        "  profile: generic\n"
        "elasticsearch:\n"
        "  url: http://es:9200\n"
        "  index_metrics: yes\n"
        "  batch_bytes: 64KiB\n"
        "  batch_age: 250ms\n"
        "state_dir: /tmp/s\n"
        "metrics_addr: 127.0.0.1:9477\n"
        "shutdown_timeout: 1.5m\n";
    struct gpulog_config c;
    char err[1024] = "";
    CHECK_EQ_INT(load(y, &c, err, sizeof err), GL_OK);
    CHECK_EQ_STR(err, "");
    CHECK_EQ_STR(c.host, "n7");
    CHECK_EQ_STR(c.log.format, "json");
    CHECK_EQ_INT(c.sources.n, 4);
    if (c.sources.n == 4) {
        CHECK_EQ_STR(c.sources.v[0].type, "exec");
        CHECK_EQ_STR(c.sources.v[0].command, "nvidia-smi dmon -o DT -s pucvmet");
        CHECK_EQ_STR(c.sources.v[0].format, "dmon");
        CHECK_EQ_STR(c.sources.v[1].path, "/dev/kmsg");
        CHECK_EQ_STR(c.sources.v[1].format, "auto");
        CHECK_EQ_STR(c.sources.v[2].path, "/var/log/gpu/*.log");
        CHECK_EQ_STR(c.sources.v[3].type, "stdin");
    }
    CHECK_EQ_STR(c.kafka.brokers, "a:1,b:2");
    CHECK_EQ_STR(c.kafka.topic_metrics, "m");
    CHECK_EQ_STR(c.kafka.topic_events, "e");
    CHECK_EQ_STR(c.kafka.topic_anomalies, "gpu.anomalies");
    CHECK_EQ_STR(c.kafka.group, "g");
    CHECK_EQ_INT(c.kafka.properties.n, 3);
    CHECK_EQ_STR(config_map_get(&c.kafka.properties, "sasl.password"), "p");
    CHECK_EQ_STR(config_map_get(&c.kafka.properties, "security.protocol"), "SSL");
    CHECK(config_map_get(&c.kafka.properties, "sasl") == NULL);
    CHECK_EQ_STR(c.detect.profile, "generic");
    CHECK_EQ_INT(c.es.index_metrics, 1);
    CHECK_EQ_INT(c.es.batch_bytes, 65536);
    CHECK_EQ_INT(c.es.batch_age_ms, 250);
    CHECK_EQ_INT(c.shutdown_timeout_ms, 90000);
    CHECK_EQ_STR(c.metrics_addr, "127.0.0.1:9477");
    config_free(&c);
}

TEST(unknown_key_has_location_and_suggestion)
{
    struct gpulog_config c;
    char err[1024];
    CHECK_EQ_INT(load("host: a\nkafka:\n  brokerz: x:1\n", &c, err, sizeof err), GL_ERROR);
    CHECK_EQ_STR(err, "t.yaml:3:3: unknown key 'kafka.brokerz' (did you mean 'kafka.brokers'?)");
    config_free(&c);
    /* the right key in the wrong section */
    CHECK_EQ_INT(load("brokers: x:1\n", &c, err, sizeof err), GL_ERROR);
    CHECK_EQ_STR(err, "t.yaml:1:1: unknown key 'brokers' (did you mean 'kafka.brokers'?)");
    config_free(&c);
    /* nothing close: no suggestion */
    CHECK_EQ_INT(load("\n\n    \nzzzzzzzzzzzz: 1\n", &c, err, sizeof err), GL_ERROR);
    CHECK_EQ_STR(err, "t.yaml:4:1: unknown key 'zzzzzzzzzzzz'");
    config_free(&c);
    /* unknown section */
    CHECK_EQ_INT(load("kafak:\n  brokers: x\n", &c, err, sizeof err), GL_ERROR);
    CHECK(strstr(err, "t.yaml:1:1: unknown key 'kafak'") == err);
    config_free(&c);
    /* unknown key inside a source item */
    CHECK_EQ_INT(load("sources:\n  - type: file\n    path: /x\n    formt: dmon\n", &c, err, sizeof err), GL_ERROR);
    CHECK_EQ_STR(err, "t.yaml:4:5: unknown key 'sources[].formt' (did you mean 'format'?)");
    config_free(&c);
}

TEST(wrong_types)
{
    static const struct { const char *yaml, *want; } cases[] = {
        { "shutdown_timeout: soon\n", "t.yaml:1:19: shutdown_timeout: expected a duration" },
        { "shutdown_timeout: -1s\n", "t.yaml:1:19: shutdown_timeout: expected a duration" },
        { "elasticsearch:\n  index_metrics: maybe\n", "t.yaml:2:18: elasticsearch.index_metrics: expected true or false" },
        { "elasticsearch:\n  batch_bytes: 5 MB\n", "t.yaml:2:16: elasticsearch.batch_bytes: expected a size" },
        { "log:\n  level: verbose\n", "t.yaml:2:10: log.level: 'verbose' is not one of debug|info|warn|error" },
        { "kafka:\n  brokers: [a, b]\n", "t.yaml:2:12: kafka.brokers: expected a scalar value, got a list" },
        { "kafka: x\n", "t.yaml:1:8: kafka: expected a mapping (a section), got a scalar" },
        { "kafka:\n  properties: x=y\n", "t.yaml:2:15: kafka.properties: expected a mapping, got a scalar" },
        { "sources: {type: exec}\n", "t.yaml:1:10: sources: expected a list, got a mapping" },
        { "sources:\n  - exec\n", "t.yaml:2:5: sources: each item is a mapping" },
        { "sources:\n  - type: exec\n", "t.yaml:2:5: sources: source of type exec needs 'command'" },
        { "sources:\n  - type: file\n", "t.yaml:2:5: sources: source of type file needs 'path'" },
        { "sources:\n  - type: pipe\n", "t.yaml:2:11: sources[].type: 'pipe' is not one of exec|file|kmsg|stdin" },
        { "sources:\n  - {type: stdin, format: nope}\n", "t.yaml:2:5: sources: source format 'nope' is unknown" },
        { "metrics_addr: 9477\n", "t.yaml:1:15: metrics_addr: '9477' is not HOST:PORT" },
        { "metrics_addr: 'x:99999'\n", "t.yaml:1:15: metrics_addr: 'x:99999' is not HOST:PORT" },
        { "kafka:\n  properties: {a=b: 1}\n", "t.yaml:2:16: kafka.properties: key 'a=b' is empty or contains '='" },
        { "- a\n- b\n", "t.yaml:1:1: the configuration must be a mapping, got a list" },
        { "host: a\nhost: b\n", "t.yaml:2:1: duplicate key 'host'" },
        { "host: a\n---\nhost: b\n", "t.yaml:3:1: only one YAML document is allowed" },
        { "host: [a\n", "t.yaml:2:1: did not find expected ',' or ']'" },
        { "kafka:\n  group: g\n   bad: 1\n", "t.yaml:3:7: mapping values are not allowed in this context" },
    };
    for (size_t i = 0; i < GL_ARRAY_LEN(cases); i++) {
        struct gpulog_config c;
        char err[1024] = "";
        int rc = load(cases[i].yaml, &c, err, sizeof err);
        if (rc != GL_ERROR || strncmp(err, cases[i].want, strlen(cases[i].want))) {
            printf("  case %zu: rc %d err '%s'\n  want '%s'\n", i, rc, err, cases[i].want);
            CHECK(0);
        }
        config_free(&c);
    }
}

TEST(all_errors_reported)
{
    struct gpulog_config c;
    char err[2048];
    CHECK_EQ_INT(load("a: 1\nlog: {level: x}\nb: 2\n", &c, err, sizeof err), GL_ERROR);
    CHECK(strstr(err, "t.yaml:1:1: unknown key 'a'") != NULL);
    CHECK(strstr(err, "t.yaml:2:14: log.level") != NULL);
    CHECK(strstr(err, "\nt.yaml:3:1: unknown key 'b'") != NULL);
    config_free(&c);
    /* a tiny buffer is never overrun */
    char small[24];
    memset(small, 'x', sizeof small);
    CHECK_EQ_INT(load("a: 1\nb: 2\n", &c, small, 16), GL_ERROR);
    CHECK(strlen(small) < 16);
    CHECK(small[20] == 'x');
    config_free(&c);
}

/* Aliases cannot blow a small file up into a huge map (billion laughs). */
TEST(alias_bomb_is_bounded)
{
    struct buf y;
    buf_init(&y);
    buf_puts(&y, "kafka:\n  properties:\n    l0: &l0 {a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8}\n");
    for (int i = 1; i <= 7; i++)
        buf_printf(&y, "    l%d: &l%d {a: *l%d, b: *l%d, c: *l%d, d: *l%d, e: *l%d, f: *l%d, g: *l%d, h: *l%d}\n",
                   i, i, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1);
    struct gpulog_config c;
    char err[512];
    int64_t t0 = gl_now_ms();
    CHECK_EQ_INT(load(y.p, &c, err, sizeof err), GL_ERROR);
    /* refused by the loader (core/yamldoc.c) before any map is built */
    CHECK(strstr(err, "aliases expand to more than 100000 nodes") != NULL);
    CHECK(gl_now_ms() - t0 < 2000);
    CHECK(c.kafka.properties.n <= 1024);
    config_free(&c);
    buf_free(&y);
    /* deep nesting */
    CHECK_EQ_INT(load("kafka:\n  properties: {a: {b: {c: {d: {e: {f: {g: {h: {i: 1}}}}}}}}}\n", &c, err, sizeof err), GL_ERROR);
    CHECK(strstr(err, "nested deeper than 8 levels") != NULL);
    config_free(&c);
    CHECK_EQ_INT(load("kafka:\n  properties: {a: {b: {c: 1}}}\n", &c, err, sizeof err), GL_OK);
    CHECK_EQ_STR(config_map_get(&c.kafka.properties, "a.b.c"), "1");
    config_free(&c);
}

TEST(null_means_default)
{
    struct gpulog_config c;
    char err[512];
    CHECK_EQ_INT(load("kafka:\n  group: ~\n  topics:\nshutdown_timeout:\nsources: null\n", &c, err, sizeof err), GL_OK);
    CHECK_EQ_STR(c.kafka.group, "gpulog-detect");
    CHECK_EQ_INT(c.shutdown_timeout_ms, 10000);
    config_free(&c);
    /* a quoted "null" is a string */
    CHECK_EQ_INT(load("host: 'null'\n", &c, err, sizeof err), GL_OK);
    CHECK_EQ_STR(c.host, "null");
    config_free(&c);
}

TEST(set_like_flags)
{
    struct gpulog_config c;
    char err[512];
    config_defaults(&c);
    CHECK_EQ_INT(config_set(&c, "kafka.brokers", "x:9092", err, sizeof err), GL_OK);
    CHECK_EQ_STR(c.kafka.brokers, "x:9092");
    CHECK_EQ_INT(config_set(&c, "shutdown_timeout", "3s", err, sizeof err), GL_OK);
    CHECK_EQ_INT(c.shutdown_timeout_ms, 3000);
    CHECK_EQ_INT(config_set(&c, "shutdown_timeout", "3 s", err, sizeof err), GL_ERROR);
    CHECK(strstr(err, "shutdown_timeout: expected a duration") != NULL);
    CHECK_EQ_INT(c.shutdown_timeout_ms, 3000);
    CHECK_EQ_INT(config_set(&c, "kafka.properties", "acks=1", err, sizeof err), GL_OK);
    CHECK_EQ_INT(config_set(&c, "kafka.properties", "acks=all", err, sizeof err), GL_OK);
    CHECK_EQ_INT(config_set(&c, "kafka.properties.linger.ms", "5", err, sizeof err), GL_OK);
    CHECK_EQ_INT(c.kafka.properties.n, 2);
    CHECK_EQ_STR(config_map_get(&c.kafka.properties, "acks"), "all");
    CHECK_EQ_STR(config_map_get(&c.kafka.properties, "linger.ms"), "5");
    CHECK_EQ_INT(config_set(&c, "kafka.properties", "noequals", err, sizeof err), GL_ERROR);
    CHECK_EQ_INT(config_set(&c, "kafka.properties.a=b", "1", err, sizeof err), GL_ERROR);
    CHECK_EQ_INT(config_set(&c, "sources", "exec:nvidia-smi dmon", err, sizeof err), GL_OK);
    CHECK_EQ_INT(config_set(&c, "sources", "kmsg", err, sizeof err), GL_OK);
    CHECK_EQ_INT(config_set(&c, "sources", "file:/var/log/x.log", err, sizeof err), GL_OK);
    CHECK_EQ_INT(config_set(&c, "sources", "file", err, sizeof err), GL_ERROR);
    CHECK_EQ_INT(config_set(&c, "sources", "socket:1", err, sizeof err), GL_ERROR);
    CHECK_EQ_INT(c.sources.n, 3);
    if (c.sources.n == 3) {
        CHECK_EQ_STR(c.sources.v[0].command, "nvidia-smi dmon");
        CHECK_EQ_STR(c.sources.v[1].path, "/dev/kmsg");
        CHECK_EQ_STR(c.sources.v[2].path, "/var/log/x.log");
    }
    config_clear_sources(&c);
    CHECK_EQ_INT(c.sources.n, 0);
    CHECK_EQ_INT(config_set(&c, "kafka.broker", "x", err, sizeof err), GL_ERROR);
    CHECK_EQ_STR(err, "unknown key 'kafka.broker' (did you mean 'kafka.brokers'?)");
    config_free(&c);
}

TEST(precedence_defaults_file_env_flags)
{
    char path[] = "/tmp/gpulog-test-config-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    const char *y = "kafka:\n  brokers: file:1\n  group: fromfile\nstate_dir: /file\n";
    CHECK_EQ_INT(write(fd, y, strlen(y)), (long long)strlen(y));
    close(fd);
    struct gpulog_config c;
    char err[512];
    setenv("GPULOG_KAFKA_BROKERS", "env:2", 1);
    setenv("GPULOG_KAFKA_PROPERTIES", "a=1,b=2", 1);
    setenv("GPULOG_CONFIG", path, 1);
    CHECK_EQ_INT(config_init(&c, NULL, err, sizeof err), GL_OK);
    CHECK_EQ_STR(c.kafka.brokers, "env:2");              /* env over file */
    CHECK_EQ_STR(c.kafka.group, "fromfile");             /* file over default */
    CHECK_EQ_STR(c.kafka.topic_metrics, "gpu.metrics");  /* default */
    CHECK_EQ_STR(config_map_get(&c.kafka.properties, "b"), "2");
    CHECK_EQ_INT(config_set(&c, "kafka.brokers", "flag:3", err, sizeof err), GL_OK);
    CHECK_EQ_STR(c.kafka.brokers, "flag:3");             /* flag over env */
    config_free(&c);
    /* the Elasticsearch sink's older names work; the canonical name wins */
    setenv("GPULOG_ES_PASSWORD", "old-name", 1);
    CHECK_EQ_INT(config_init(&c, NULL, err, sizeof err), GL_OK);
    CHECK_EQ_STR(c.es.password, "old-name");
    config_free(&c);
    setenv("GPULOG_ELASTICSEARCH_PASSWORD", "new-name", 1);
    CHECK_EQ_INT(config_init(&c, NULL, err, sizeof err), GL_OK);
    CHECK_EQ_STR(c.es.password, "new-name");
    config_free(&c);
    unsetenv("GPULOG_ES_PASSWORD");
    unsetenv("GPULOG_ELASTICSEARCH_PASSWORD");
    /* a bad environment value is an error naming the variable */
    setenv("GPULOG_SHUTDOWN_TIMEOUT", "forever", 1);
    CHECK_EQ_INT(config_init(&c, path, err, sizeof err), GL_ERROR);
    CHECK(strncmp(err, "GPULOG_SHUTDOWN_TIMEOUT: ", 25) == 0);
    config_free(&c);
    unsetenv("GPULOG_SHUTDOWN_TIMEOUT");
    unsetenv("GPULOG_KAFKA_BROKERS");
    unsetenv("GPULOG_KAFKA_PROPERTIES");
    unsetenv("GPULOG_CONFIG");
    /* a missing file is an error */
    CHECK_EQ_INT(config_init(&c, "/nonexistent/gpulog.yaml", err, sizeof err), GL_ERROR);
    CHECK(strstr(err, "No such file") != NULL);
    config_free(&c);
    unlink(path);
}

TEST(path_from_argv)
{
    char *a1[] = { (char *)"collect", (char *)"--brokers", (char *)"x", (char *)"--config", (char *)"/a.yaml", (char *)"-" };
    CHECK_EQ_STR(config_path_from_argv(6, a1, "--config"), "/a.yaml");
    char *a2[] = { (char *)"detect", (char *)"--config=/b.yaml", (char *)"--config", (char *)"/c.yaml" };
    CHECK_EQ_STR(config_path_from_argv(4, a2, "--config"), "/c.yaml");
    char *a3[] = { (char *)"run", (char *)"--", (char *)"--config", (char *)"/d.yaml" };
    CHECK(config_path_from_argv(4, a3, "--config") == NULL);
    char *a4[] = { (char *)"run", (char *)"--config" };
    CHECK(config_path_from_argv(2, a4, "--config") == NULL);
    char *a5[] = { (char *)"run", (char *)"--config=/e.yaml" };
    CHECK_EQ_STR(config_path_from_argv(2, a5, "--config"), "/e.yaml");
    CHECK(config_path_from_argv(2, a5, "--conf") == NULL);
}

TEST(env_names)
{
    char n[64];
    config_env_name("kafka.topics.metrics", n, sizeof n);
    CHECK_EQ_STR(n, "GPULOG_KAFKA_TOPICS_METRICS");
    config_env_name("elasticsearch.password_file", n, sizeof n);
    CHECK_EQ_STR(n, "GPULOG_ELASTICSEARCH_PASSWORD_FILE");
    config_env_name("state_dir", n, 10);
    CHECK_EQ_STR(n, "GPULOG_ST");
}

TEST(split_addr)
{
    char h[64];
    int p = -1;
    CHECK_EQ_INT(config_split_addr("0.0.0.0:9477", h, sizeof h, &p), GL_OK);
    CHECK_EQ_STR(h, "0.0.0.0");
    CHECK_EQ_INT(p, 9477);
    CHECK_EQ_INT(config_split_addr(":80", h, sizeof h, &p), GL_OK);
    CHECK_EQ_STR(h, "");
    CHECK_EQ_INT(config_split_addr("[::1]:0", h, sizeof h, &p), GL_OK);
    CHECK_EQ_STR(h, "::1");
    CHECK_EQ_INT(p, 0);
    CHECK_EQ_INT(config_split_addr("::1:80", h, sizeof h, &p), GL_ERROR);
    CHECK_EQ_INT(config_split_addr("host", h, sizeof h, &p), GL_ERROR);
    CHECK_EQ_INT(config_split_addr("host:", h, sizeof h, &p), GL_ERROR);
    CHECK_EQ_INT(config_split_addr("host:65536", h, sizeof h, &p), GL_ERROR);
    CHECK_EQ_INT(config_split_addr("host:-1", h, sizeof h, &p), GL_ERROR);
    CHECK_EQ_INT(config_split_addr("[::1]80", h, sizeof h, &p), GL_ERROR);
}

TEST(print_masks_and_round_trips)
{
    const char *y =
        "kafka:\n  properties: {sasl.password: topsecret, ssl.key.password: k2, client.id: me}\n"
        "elasticsearch:\n  password: hunter2\n  api_key: 'abc: def'\n  user: elastic\n"
        "sources:\n  - {type: exec, command: \"nvidia-smi dmon -s 'pu' # x\"}\n"
        "host: 'yes'\n"
        "tz: \"quote\\\" and \\\\ back\"\n"
        "shutdown_timeout: 2h\n";
    struct gpulog_config c, c2;
    char err[1024];
    CHECK_EQ_INT(load(y, &c, err, sizeof err), GL_OK);
    struct buf m;
    buf_init(&m);
    config_print(&c, 1, &m);
    CHECK(strstr(m.p, "hunter2") == NULL);
    CHECK(strstr(m.p, "topsecret") == NULL);
    CHECK(strstr(m.p, "k2") == NULL);
    CHECK(strstr(m.p, "abc") == NULL);
    CHECK(strstr(m.p, "  password: \"***\"\n") != NULL);
    CHECK(strstr(m.p, "  api_key: \"***\"\n") != NULL);
    CHECK(strstr(m.p, "    sasl.password: \"***\"\n") != NULL);
    CHECK(strstr(m.p, "    client.id: me\n") != NULL);
    CHECK(strstr(m.p, "  user: elastic\n") != NULL);
    CHECK(strstr(m.p, "  password_file: \"\"\n") != NULL);   /* unset secrets stay visibly empty */
    CHECK(strstr(m.p, "kafka:\n  brokers: \"\"\n  topics:\n    metrics: gpu.metrics\n") != NULL);
    CHECK(strstr(m.p, "shutdown_timeout: 2h\n") != NULL);
    /* unmasked print loads back to the same configuration */
    struct buf u, u2;
    buf_init(&u);
    buf_init(&u2);
    config_print(&c, 0, &u);
    config_defaults(&c2);
    int rc = config_load_string("printed", u.p, u.len, &c2, err, sizeof err);
    if (rc != GL_OK) printf("  %s\n%s\n", err, u.p);
    CHECK_EQ_INT(rc, GL_OK);
    config_print(&c2, 0, &u2);
    CHECK_EQ_STR(u2.p, u.p);
    CHECK_EQ_STR(c2.host, "yes");
    CHECK_EQ_STR(c2.tz, "quote\" and \\ back");
    CHECK_EQ_STR(c2.es.api_key, "abc: def");
    if (c2.sources.n == 1) CHECK_EQ_STR(c2.sources.v[0].command, "nvidia-smi dmon -s 'pu' # x");
    CHECK_EQ_INT(c2.sources.n, 1);
    /* the masked print is itself a valid configuration */
    struct gpulog_config c3;
    config_defaults(&c3);
    CHECK_EQ_INT(config_load_string("masked", m.p, m.len, &c3, err, sizeof err), GL_OK);
    config_free(&c3);
    buf_free(&m);
    buf_free(&u);
    buf_free(&u2);
    config_free(&c);
    config_free(&c2);
}

TEST(secret_from_file)
{
    char path[] = "/tmp/gpulog-test-secret-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    CHECK_EQ_INT(write(fd, "s3cr3t\nsecond\n", 14), 14);
    close(fd);
    char *s = NULL, err[256];
    CHECK_EQ_INT(config_secret("", path, &s, err, sizeof err), GL_OK);
    CHECK_EQ_STR(s, "s3cr3t");
    free(s);
    CHECK_EQ_INT(config_secret("direct", path, &s, err, sizeof err), GL_OK);
    CHECK_EQ_STR(s, "direct");
    free(s);
    CHECK_EQ_INT(config_secret("", "", &s, err, sizeof err), GL_OK);
    CHECK_EQ_STR(s, "");
    free(s);
    unlink(path);
    s = NULL;
    CHECK_EQ_INT(config_secret("", path, &s, err, sizeof err), GL_ERROR);
    CHECK(s == NULL);
}

TEST(apply_log)
{
    struct gpulog_config c;
    char err[256];
    CHECK_EQ_INT(load("log: {level: warn, format: json}\n", &c, err, sizeof err), GL_OK);
    config_apply_log(&c);
    CHECK_EQ_INT(gl_log_level, GL_LOG_WARN);
    CHECK_EQ_INT(gl_log_json, 1);
    config_free(&c);
    config_defaults(&c);
    config_apply_log(&c);
    CHECK_EQ_INT(gl_log_level, GL_LOG_INFO);
    CHECK_EQ_INT(gl_log_json, 0);
    CHECK_EQ_INT(config_apply_process(&c, err, sizeof err), GL_OK);
    CHECK_EQ_INT(config_set(&c, "tz", "Mars/Olympus_Mons", err, sizeof err), GL_OK);
    CHECK_EQ_INT(config_apply_process(&c, err, sizeof err), GL_ERROR);
    CHECK_EQ_STR(err, "tz: unknown time zone 'Mars/Olympus_Mons'");
    CHECK_EQ_INT(config_set(&c, "tz", "UTC", err, sizeof err), GL_OK);
    CHECK_EQ_INT(config_apply_process(&c, err, sizeof err), GL_OK);
    config_free(&c);
}

TEST(docs_cover_every_key)
{
    struct buf d;
    buf_init(&d);
    config_docs(&d);
    size_t n;
    const struct config_key *k = config_keys(&n);
    for (size_t i = 0; i < n; i++) {
        char needle[128], env[96];
        snprintf(needle, sizeof needle, "| `%s` |", k[i].path);
        if (!strstr(d.p, needle)) { printf("  docs lack %s\n", k[i].path); CHECK(0); }
        config_env_name(k[i].path, env, sizeof env);
        if (k[i].type != CONFIG_SOURCES && !strstr(d.p, env)) { printf("  docs lack %s\n", env); CHECK(0); }
    }
    const struct config_key *sk = config_source_keys(&n);
    for (size_t i = 0; i < n; i++) {
        char needle[128];
        snprintf(needle, sizeof needle, "| `sources[].%s` |", sk[i].path);
        CHECK(strstr(d.p, needle) != NULL);
    }
    /* the example in the docs is a valid configuration */
    const char *a = strstr(d.p, "```yaml\n"), *b = a ? strstr(a + 8, "```") : NULL;
    CHECK(a && b);
    if (a && b) {
        struct gpulog_config c;
        char err[512];
        config_defaults(&c);
        int rc = config_load_string("docs-example", a + 8, (size_t)(b - a - 8), &c, err, sizeof err);
        if (rc != GL_OK) printf("  %s\n", err);
        CHECK_EQ_INT(rc, GL_OK);
        CHECK_EQ_INT(c.sources.n, 2);
        config_free(&c);
    }
    buf_free(&d);
}

/* Deep flow nesting is refused before libyaml parses it (it took 22.8 s for
 * 200 KB of '['), with its line and column; so is input over 1 MiB. */
TEST(nesting_and_size_bounded_before_parsing)
{
    struct buf y;
    buf_init(&y);
    buf_puts(&y, "kafka:\n  properties: ");
    for (int i = 0; i < 200000; i++) buf_putc(&y, '[');
    struct gpulog_config c;
    char err[512];
    int64_t t0 = gl_now_ms();
    CHECK_EQ_INT(load(y.p, &c, err, sizeof err), GL_ERROR);
    CHECK(gl_now_ms() - t0 < 500);
    CHECK(strstr(err, ":2:79: nested deeper than 64 levels") != NULL);
    config_free(&c);
    buf_reset(&y);
    buf_puts(&y, "host: x\n");
    while (y.len <= (1u << 20)) buf_puts(&y, "# padding padding padding padding padding padding padding\n");
    CHECK_EQ_INT(load(y.p, &c, err, sizeof err), GL_ERROR);
    CHECK(strstr(err, "larger than 1048576 bytes") != NULL);
    config_free(&c);
    /* quoted brackets and comments do not count */
    buf_reset(&y);
    buf_puts(&y, "host: \"");
    for (int i = 0; i < 100; i++) buf_putc(&y, '[');
    buf_puts(&y, "\" # [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n");
    CHECK_EQ_INT(load(y.p, &c, err, sizeof err), GL_OK);
    config_free(&c);
    buf_free(&y);
}

int main(void)
{
    config_set_formats(parser_format_names());   /* as the binary does */
    RUN(defaults);
    RUN(empty_file_is_valid);
    RUN(full_file);
    RUN(unknown_key_has_location_and_suggestion);
    RUN(wrong_types);
    RUN(all_errors_reported);
    RUN(alias_bomb_is_bounded);
    RUN(nesting_and_size_bounded_before_parsing);
    RUN(null_means_default);
    RUN(set_like_flags);
    RUN(precedence_defaults_file_env_flags);
    RUN(path_from_argv);
    RUN(env_names);
    RUN(split_addr);
    RUN(print_masks_and_round_trips);
    RUN(secret_from_file);
    RUN(apply_log);
    RUN(docs_cover_every_key);
    return TEST_REPORT();
}
