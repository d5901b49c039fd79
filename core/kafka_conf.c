/* kafka_conf.c - librdkafka property setting shared by the producer and the
 * consumer (see kafka_conf.h). */
#include "kafka_conf.h"
#include "common.h"
#include "config.h"

#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <string.h>

/* See kafka_conf.h; the caller owns conf. */
int kafka_conf_set(void *conf, const char *key, const char *val, char *err, size_t errlen)
{
    char e[256];
    if (rd_kafka_conf_set(conf, key, val, e, sizeof e) == RD_KAFKA_CONF_OK) return GL_OK;
    /* librdkafka quotes a bad value of a typed property; a credential's
     * value is masked even there */
    char *v = *val && config_secret_key(key, strlen(key)) ? strstr(e, val) : NULL;
    if (v) snprintf(v, sizeof e - (size_t)(v - e), "***");
    snprintf(err, errlen, "property %.100s (value not shown): %s", key, e);
    return GL_ERROR;
}
