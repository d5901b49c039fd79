/*
 * kafka_log.h - librdkafka's log lines in gpulog's log, with the causes of
 * a failed connection that a user can fix named in words (a refused SASL
 * login, a broker certificate that is not trusted, another TLS failure),
 * for every Kafka client (sinks/kafka.c's producer, detect's consumer).
 */
#ifndef GPULOG_KAFKA_LOG_H
#define GPULOG_KAFKA_LOG_H

/* Installs the log callback and a default error callback (kafka_log_error)
 * on conf (a rd_kafka_conf_t *; void * here, so this header needs no
 * librdkafka) and warns once per process when conf asks for SCRAM and this
 * librdkafka is older than 2.6.1, whose SCRAM login Kafka 4.0 and later
 * brokers refuse. Call before rd_kafka_new(); a client that needs its own
 * error callback sets it after this call and passes errors on to
 * kafka_log_error. */
void kafka_log_setup(void *conf);

/* What to check for a librdkafka error, chosen by its typed code (an
 * rd_kafka_resp_err_t: __AUTHENTICATION, __SSL), the reason text only
 * telling an untrusted certificate from another TLS failure: a static
 * sentence, or NULL when the error is none of the causes above. */
const char *kafka_error_hint(int err, const char *reason);

/* Logs one client-level librdkafka error (an error callback's err and
 * reason; the caller keeps reason): a cause we can name as an error with
 * what it means for the data, any other error as a warning with its code. */
void kafka_log_error(int err, const char *reason);

#endif
