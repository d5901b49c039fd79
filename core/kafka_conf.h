/*
 * kafka_conf.h - setting librdkafka properties without printing secrets,
 * for every module that makes a Kafka client (sinks/kafka.c's producer,
 * ingest/kafka_src.c's consumer).
 */
#ifndef GPULOG_KAFKA_CONF_H
#define GPULOG_KAFKA_CONF_H

#include <stddef.h>

/* rd_kafka_conf_set for a rd_kafka_conf_t * (void * here, so this header
 * needs no librdkafka): GL_OK, or GL_ERROR with err naming the key, never
 * the value (a misspelled sasl.password=... must not print the password). */
int kafka_conf_set(void *conf, const char *key, const char *val, char *err, size_t errlen);

#endif
