/*
 * kafka_log.h - librdkafka's log lines in gpulog's log, with the causes of
 * a failed connection that a user can fix named in words (a refused SASL
 * login, a broker certificate that is not trusted, another TLS failure),
 * for every Kafka client (sinks/kafka.c's producer, detect's consumer).
 */
#ifndef GPULOG_KAFKA_LOG_H
#define GPULOG_KAFKA_LOG_H

/* Installs the log callback on conf (a rd_kafka_conf_t *; void * here, so
 * this header needs no librdkafka) and warns once per process when conf
 * asks for SCRAM and this librdkafka is older than 2.6.1, whose SCRAM login
 * Kafka 4.0 and later brokers refuse. Call before rd_kafka_new(). */
void kafka_log_setup(void *conf);

/* What to check for a librdkafka error text (a log line or an error
 * callback's reason): a static sentence, or NULL when the text names none
 * of the causes above. */
const char *kafka_error_hint(const char *text);

#endif
