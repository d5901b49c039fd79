/*
 * kafka_log.c - see kafka_log.h. librdkafka retries a failed connection for
 * ever; these lines are how the user learns why it fails and what to change.
 */
#include "kafka_log.h"
#include "common.h"

#include <librdkafka/rdkafka.h>

#include <string.h>
#include <strings.h>

/* What a failed connection means for the data, the same for every client:
 * collect acknowledges nothing, detect commits nothing. */
#define KAFKA_EFFECT "nothing is lost: collect keeps the events in its checkpoints and spool, detect commits no offset; retrying (--once gives up)"

const char *kafka_error_hint(int err, const char *reason)
{
    if (err == RD_KAFKA_RESP_ERR__AUTHENTICATION)
        return "kafka: authentication failed: the broker refused the SASL login; check sasl.username, sasl.password and "
               "sasl.mechanisms";
    if (err != RD_KAFKA_RESP_ERR__SSL) return NULL;
    /* OpenSSL's reason is the only place that tells the two apart */
    if (reason && strstr(reason, "certificate verify failed"))
        return "kafka: TLS: the broker's certificate is not trusted; check ssl.ca.location (the CA that signed it) and that "
               "the broker address is a name in the certificate";
    return "kafka: TLS handshake failed; check security.protocol and the ssl.* properties";
}

void kafka_log_error(int err, const char *reason)
{
    const char *hint = kafka_error_hint(err, reason);
    if (hint)
        log_error("msg=\"%s\" effect=\"%s\" code=%s text=\"%s\"", hint, KAFKA_EFFECT,
                  rd_kafka_err2name((rd_kafka_resp_err_t)err), reason ? reason : "");
    else
        log_warn("msg=\"kafka: %s\" reason=\"%s\"", rd_kafka_err2name((rd_kafka_resp_err_t)err), reason ? reason : "");
}

/* The default error callback (librdkafka's thread that polls the client):
 * every client-level error into our log, typed. */
static void error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    (void)rk;
    (void)opaque;
    kafka_log_error(err, reason);
}

/* librdkafka's log callback (its threads): errors and warnings into our
 * log, escaped like any outside text. A broker failure ("FAIL") is also
 * handed to the error callback with its typed code, which logs it, so its
 * log line is left out here. */
static void log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    (void)rk;
    if (fac && !strcmp(fac, "FAIL")) return;
    if (level <= 3) log_error("msg=\"librdkafka\" facility=%s text=\"%s\"", fac, buf);
    else if (level <= 4) log_warn("msg=\"librdkafka\" facility=%s text=\"%s\"", fac, buf);
}

void kafka_log_setup(void *conf)
{
    static int warned;
    rd_kafka_conf_set_log_cb(conf, log_cb);
    rd_kafka_conf_set_error_cb(conf, error_cb);
    char mech[64];
    size_t n = sizeof mech;
    int v = rd_kafka_version();
    if (rd_kafka_conf_get(conf, "sasl.mechanisms", mech, &n) == RD_KAFKA_CONF_OK && !strncasecmp(mech, "SCRAM", 5) &&
        (unsigned)v >> 8 < 0x020601u && !__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
        log_warn("msg=\"kafka: librdkafka %d.%d.%d is older than 2.6.1: Kafka 4.0 and later brokers refuse its SCRAM "
                 "login (its nonce, librdkafka PR 4895); there, use sasl.mechanisms=PLAIN over SASL_SSL or a newer "
                 "librdkafka\" mechanism=%s",
                 (v >> 24) & 0xff, (v >> 16) & 0xff, (v >> 8) & 0xff, mech);
}
