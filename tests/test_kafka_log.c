/* test_kafka_log.c - core/kafka_log.c: the causes of a failed Kafka
 * connection are chosen by librdkafka's typed error code (an authentication
 * error, a TLS error), not by matching log text; the reason text only tells
 * an untrusted certificate from another TLS failure. */
#include "test.h"
#include "../core/kafka_log.h"

#include <librdkafka/rdkafka.h>

#include <string.h>

TEST(authentication_error_names_the_credentials)
{
    const char *h = kafka_error_hint(RD_KAFKA_RESP_ERR__AUTHENTICATION,
                                     "SASL authentication error: Authentication failed during authentication due to "
                                     "invalid credentials with SASL mechanism PLAIN");
    CHECK(h && strstr(h, "sasl.password") && strstr(h, "authentication failed"));
    /* the code decides, whatever the reason says */
    CHECK(kafka_error_hint(RD_KAFKA_RESP_ERR__AUTHENTICATION, NULL) == h);
}

TEST(tls_errors_tell_an_untrusted_certificate_apart)
{
    const char *u = kafka_error_hint(RD_KAFKA_RESP_ERR__SSL,
                                     "ssl://127.0.0.1:19094/bootstrap: SSL handshake failed: error:0A000086:SSL "
                                     "routines::certificate verify failed: broker certificate could not be verified");
    CHECK(u && strstr(u, "not trusted") && strstr(u, "ssl.ca.location"));
    const char *o = kafka_error_hint(RD_KAFKA_RESP_ERR__SSL, "SSL handshake failed: unexpected eof while reading");
    CHECK(o && strstr(o, "handshake") && !strstr(o, "not trusted"));
    CHECK(kafka_error_hint(RD_KAFKA_RESP_ERR__SSL, NULL) == o);
}

TEST(other_codes_get_no_hint_even_with_matching_text)
{
    /* a transport error whose text happens to say "authentication failed" is not a refused login */
    CHECK(kafka_error_hint(RD_KAFKA_RESP_ERR__TRANSPORT, "proxy: authentication failed") == NULL);
    CHECK(kafka_error_hint(RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN, "certificate verify failed") == NULL);
    CHECK(kafka_error_hint(RD_KAFKA_RESP_ERR_NO_ERROR, NULL) == NULL);
}

int main(void)
{
    RUN(authentication_error_names_the_credentials);
    RUN(tls_errors_tell_an_untrusted_certificate_apart);
    RUN(other_codes_get_no_hint_even_with_matching_text);
    return TEST_REPORT();
}
