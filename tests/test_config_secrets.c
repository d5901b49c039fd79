/* test_config_secrets.c - one rule of what is secret and one check per
 * value, wherever the value comes from (issue 27, item 10): config print
 * masked sasl.password but showed ssl.keystore.key and
 * sasl.oauthbearer.extensions; a comma in GPULOG_KAFKA_PROPERTIES split a
 * password and the error quoted the rest; config check took an ftp:// URL
 * and a namespace that run refused. */
#include "test.h"
#include "../core/config.h"
#include "../core/common.h"

#include <stdlib.h>

TEST(one_rule_of_what_is_secret)
{
    static const struct { const char *key; int secret; } keys[] = {
        { "sasl.password", 1 }, { "ssl.key.password", 1 }, { "ssl.keystore.password", 1 }, { "ssl.keystore.key", 1 },
        { "ssl.key.pem", 1 }, { "sasl.jaas.config", 1 }, { "sasl.oauthbearer.config", 1 },
        { "sasl.oauthbearer.extensions", 1 }, { "sasl.oauthbearer.client.secret", 1 }, { "elasticsearch.password", 1 },
        { "elasticsearch.api_key", 1 }, { "SASL.PASSWORD", 1 }, { "my.apikey", 1 }, { "x.private_key", 1 },
        { "aws.credentials", 1 }, { "passwd", 1 }, { "ssl.key", 1 },
        /* paths to secrets, and what is no secret */
        { "elasticsearch.password_file", 0 }, { "elasticsearch.api_key_file", 0 }, { "elasticsearch.key_file", 0 },
        { "ssl.keystore.location", 0 }, { "ssl.key.location", 0 }, { "ssl.ca.location", 0 }, { "sasl.username", 0 },
        { "security.protocol", 0 }, { "bootstrap.servers", 0 }, { "ssl.certificate.pem", 0 }, { "message.max.bytes", 0 },
        { "elasticsearch.user", 0 }, { "kafka.brokers", 0 }, { "monkey", 0 }, { "keyboard.layout", 0 },
    };
    for (size_t i = 0; i < GL_ARRAY_LEN(keys); i++) {
        int got = config_secret_key(keys[i].key, strlen(keys[i].key));
        if (got != keys[i].secret) printf("  %s: %d, expected %d\n", keys[i].key, got, keys[i].secret);
        CHECK_EQ_INT(got, keys[i].secret);
    }
}

TEST(print_masks_every_secret_the_rule_names)
{
    struct gpulog_config c;
    char err[512];
    config_defaults(&c);
    const char *y = "kafka:\n  properties:\n    ssl.keystore.key: \"-----BEGIN PRIVATE KEY-----kk\"\n"
                    "    sasl.oauthbearer.extensions: \"pool=ext-s3cr3t\"\n    ssl.keystore.location: /etc/ks.p12\n"
                    "elasticsearch:\n  url: https://u:url-s3cr3t@h:9200\n  password: pw-s3cr3t\n"
                    "  password_file: /run/secrets/pw\n";
    CHECK_EQ_INT(config_load_string("c.yaml", y, strlen(y), &c, err, sizeof err), GL_OK);
    struct buf b;
    buf_init(&b);
    config_print(&c, 1, &b);
    buf_putc(&b, '\0');
    CHECK(!strstr(b.p, "s3cr3t") && !strstr(b.p, "PRIVATE"));
    CHECK(strstr(b.p, "ssl.keystore.key: \"***\"") && strstr(b.p, "sasl.oauthbearer.extensions: \"***\""));
    CHECK(strstr(b.p, "ssl.keystore.location: /etc/ks.p12") && strstr(b.p, "password_file: /run/secrets/pw"));
    CHECK(strstr(b.p, "https://***@h:9200") != NULL);
    buf_free(&b);
    config_free(&c);
}

TEST(a_comma_in_a_property_value_stays_in_it)
{
    struct gpulog_config c;
    char err[512] = "";
    config_defaults(&c);
    /* a comma starts the next entry only where name= follows it */
    setenv("GPULOG_KAFKA_PROPERTIES", "sasl.password=ab,c!d=,=e f,security.protocol=SASL_SSL,bootstrap.servers=a:1,b:2", 1);
    CHECK_EQ_INT(config_apply_env(&c, err, sizeof err), GL_OK);
    CHECK_EQ_STR(config_map_get(&c.kafka.properties, "sasl.password"), "ab,c!d=,=e f");
    CHECK_EQ_STR(config_map_get(&c.kafka.properties, "security.protocol"), "SASL_SSL");
    CHECK_EQ_STR(config_map_get(&c.kafka.properties, "bootstrap.servers"), "a:1,b:2");
    CHECK_EQ_INT(c.kafka.properties.n, 3);
    config_free(&c);
    /* a list that does not start with name=: refused without quoting it */
    config_defaults(&c);
    setenv("GPULOG_KAFKA_PROPERTIES", "hunter2s3cr3t,x=1", 1);
    CHECK_EQ_INT(config_apply_env(&c, err, sizeof err), GL_ERROR);
    CHECK(strstr(err, "GPULOG_KAFKA_PROPERTIES") && strstr(err, "expected key=value") && !strstr(err, "s3cr3t"));
    config_free(&c);
    unsetenv("GPULOG_KAFKA_PROPERTIES");
    /* -X without '=' names nothing of the text either */
    config_defaults(&c);
    CHECK_EQ_INT(config_set(&c, "kafka.properties", "s3cr3tonly", err, sizeof err), GL_ERROR);
    CHECK(!strstr(err, "s3cr3t"));
    config_free(&c);
}

TEST(url_and_namespace_checked_wherever_they_come_from)
{
    static const struct { const char *url; int ok; } urls[] = {
        { "http://h:9200", 1 }, { "https://u:p@h", 1 }, { "https://h/prefix", 1 }, { "ftp://h:21", 0 },
        { "file:///etc/passwd", 0 }, { "http://", 0 }, { "https://u:p@:9200", 0 }, { "h:9200", 0 }, { "HTTP://h", 0 },
    };
    for (size_t i = 0; i < GL_ARRAY_LEN(urls); i++) CHECK_EQ_INT(config_url_ok(urls[i].url), urls[i].ok);
    struct gpulog_config c;
    char err[512] = "";
    /* the file: FILE:LINE:COL, the URL's password masked */
    config_defaults(&c);
    const char *y = "elasticsearch:\n  url: ftp://elastic:pw-s3cr3t@host:21\n";
    CHECK_EQ_INT(config_load_string("c.yaml", y, strlen(y), &c, err, sizeof err), GL_ERROR);
    CHECK(strstr(err, "c.yaml:2:8: elasticsearch.url: 'ftp://***@host:21' is not an http:// or https:// URL") != NULL);
    CHECK(!strstr(err, "s3cr3t"));
    config_free(&c);
    /* the environment and the flags alike */
    config_defaults(&c);
    setenv("GPULOG_ELASTICSEARCH_URL", "ftp://host", 1);
    CHECK_EQ_INT(config_apply_env(&c, err, sizeof err), GL_ERROR);
    unsetenv("GPULOG_ELASTICSEARCH_URL");
    CHECK_EQ_INT(config_set(&c, "elasticsearch.url", "gopher://host", err, sizeof err), GL_ERROR);
    CHECK_EQ_INT(config_set(&c, "elasticsearch.url", "", err, sizeof err), GL_OK);   /* empty: no output */
    CHECK_EQ_INT(config_set(&c, "elasticsearch.namespace", "Prod-1", err, sizeof err), GL_ERROR);
    CHECK(strstr(err, "not a valid namespace") != NULL);
    CHECK_EQ_INT(config_set(&c, "elasticsearch.namespace", "prod_1", err, sizeof err), GL_OK);
    config_free(&c);
}

int main(void)
{
    RUN(one_rule_of_what_is_secret);
    RUN(print_masks_every_secret_the_rule_names);
    RUN(a_comma_in_a_property_value_stays_in_it);
    RUN(url_and_namespace_checked_wherever_they_come_from);
    return TEST_REPORT();
}
