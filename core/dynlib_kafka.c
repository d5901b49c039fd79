/*
 * dynlib_kafka.c - librdkafka's entry points, forwarded to the library
 * loaded with dlopen() on first use (see dynlib.c).
 */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include "dynlib.h"
#include "dynlib_int.h"

#include <dlfcn.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>

static struct dlib kafka_lib = { { "librdkafka.so.1", NULL, NULL }, "librdkafka1", NULL, PTHREAD_MUTEX_INITIALIZER };

int dynlib_kafka_info(char *ver, size_t vn, char *path, size_t pn)
{
    void *h = dynlib_open(&kafka_lib, path, pn);
    if (!h) return -1;
    const char *(*vs)(void);
    *(void **)&vs = dlsym(h, "rd_kafka_version_str");
    snprintf(ver, vn, "%s", vs ? vs() : "?");
    struct link_map *lm = NULL;
    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && *lm->l_name) snprintf(path, pn, "%s", lm->l_name);
    else snprintf(path, pn, "%s", kafka_lib.names[0]);
    return 0;
}

/* ---------------------------------------------------------------- librdkafka
 * The functions gpulog, its tests and benches call. The one variadic entry
 * point, used by the tests, goes through its _array twin. */

rd_kafka_resp_err_t rd_kafka_assign(rd_kafka_t *rk, const rd_kafka_topic_partition_list_t *partitions)
{
    typedef rd_kafka_resp_err_t (*fn_t)(rd_kafka_t *, const rd_kafka_topic_partition_list_t *);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_assign");
    return real_(rk, partitions);
}

rd_kafka_resp_err_t rd_kafka_assignment(rd_kafka_t *rk, rd_kafka_topic_partition_list_t **partitions)
{
    typedef rd_kafka_resp_err_t (*fn_t)(rd_kafka_t *, rd_kafka_topic_partition_list_t **);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_assignment");
    return real_(rk, partitions);
}

rd_kafka_resp_err_t rd_kafka_commit(rd_kafka_t *rk, const rd_kafka_topic_partition_list_t *offsets, int async)
{
    typedef rd_kafka_resp_err_t (*fn_t)(rd_kafka_t *, const rd_kafka_topic_partition_list_t *, int);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_commit");
    return real_(rk, offsets, async);
}

rd_kafka_resp_err_t rd_kafka_committed(rd_kafka_t *rk, rd_kafka_topic_partition_list_t *partitions, int timeout_ms)
{
    typedef rd_kafka_resp_err_t (*fn_t)(rd_kafka_t *, rd_kafka_topic_partition_list_t *, int);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_committed");
    return real_(rk, partitions, timeout_ms);
}

void rd_kafka_conf_destroy(rd_kafka_conf_t *conf)
{
    typedef void (*fn_t)(rd_kafka_conf_t *);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_conf_destroy");
    real_(conf);
}

rd_kafka_conf_t *rd_kafka_conf_new(void)
{
    typedef rd_kafka_conf_t * (*fn_t)(void);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_conf_new");
    return real_();
}

rd_kafka_conf_res_t rd_kafka_conf_set(rd_kafka_conf_t *conf, const char *name, const char *value, char *errstr, size_t errstr_size)
{
    typedef rd_kafka_conf_res_t (*fn_t)(rd_kafka_conf_t *, const char *, const char *, char *, size_t);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_conf_set");
    return real_(conf, name, value, errstr, errstr_size);
}

void rd_kafka_conf_set_dr_msg_cb(rd_kafka_conf_t *conf, void (*dr_msg_cb)(rd_kafka_t *rk, const rd_kafka_message_t *rkmessage, void *opaque))
{
    typedef void (*fn_t)(rd_kafka_conf_t *, void (*)(rd_kafka_t *rk, const rd_kafka_message_t *rkmessage, void *opaque));
    RESOLVE_AS(kafka, fn_t, "rd_kafka_conf_set_dr_msg_cb");
    real_(conf, dr_msg_cb);
}

void rd_kafka_conf_set_error_cb(rd_kafka_conf_t *conf, void (*error_cb)(rd_kafka_t *rk, int err, const char *reason, void *opaque))
{
    typedef void (*fn_t)(rd_kafka_conf_t *, void (*)(rd_kafka_t *rk, int err, const char *reason, void *opaque));
    RESOLVE_AS(kafka, fn_t, "rd_kafka_conf_set_error_cb");
    real_(conf, error_cb);
}

void rd_kafka_conf_set_log_cb(rd_kafka_conf_t *conf, void (*log_cb)(const rd_kafka_t *rk, int level, const char *fac, const char *buf))
{
    typedef void (*fn_t)(rd_kafka_conf_t *, void (*)(const rd_kafka_t *rk, int level, const char *fac, const char *buf));
    RESOLVE_AS(kafka, fn_t, "rd_kafka_conf_set_log_cb");
    real_(conf, log_cb);
}

rd_kafka_conf_res_t rd_kafka_conf_get(const rd_kafka_conf_t *conf, const char *name, char *dest, size_t *dest_size)
{
    typedef rd_kafka_conf_res_t (*fn_t)(const rd_kafka_conf_t *, const char *, char *, size_t *);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_conf_get");
    return real_(conf, name, dest, dest_size);
}

int rd_kafka_version(void)
{
    typedef int (*fn_t)(void);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_version");
    return real_();
}

void rd_kafka_conf_set_opaque(rd_kafka_conf_t *conf, void *opaque)
{
    typedef void (*fn_t)(rd_kafka_conf_t *, void *);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_conf_set_opaque");
    real_(conf, opaque);
}

void rd_kafka_conf_set_rebalance_cb(rd_kafka_conf_t *conf, void (*rebalance_cb)(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *partitions, void *opaque))
{
    typedef void (*fn_t)(rd_kafka_conf_t *, void (*)(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *partitions, void *opaque));
    RESOLVE_AS(kafka, fn_t, "rd_kafka_conf_set_rebalance_cb");
    real_(conf, rebalance_cb);
}

ssize_t rd_kafka_consume_batch_queue(rd_kafka_queue_t *rkqu, int timeout_ms, rd_kafka_message_t **rkmessages, size_t rkmessages_size)
{
    typedef ssize_t (*fn_t)(rd_kafka_queue_t *, int, rd_kafka_message_t **, size_t);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_consume_batch_queue");
    return real_(rkqu, timeout_ms, rkmessages, rkmessages_size);
}

rd_kafka_resp_err_t rd_kafka_consumer_close(rd_kafka_t *rk)
{
    typedef rd_kafka_resp_err_t (*fn_t)(rd_kafka_t *);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_consumer_close");
    return real_(rk);
}

rd_kafka_error_t *rd_kafka_incremental_assign(rd_kafka_t *rk, const rd_kafka_topic_partition_list_t *partitions)
{
    typedef rd_kafka_error_t *(*fn_t)(rd_kafka_t *, const rd_kafka_topic_partition_list_t *);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_incremental_assign");
    return real_(rk, partitions);
}

rd_kafka_error_t *rd_kafka_incremental_unassign(rd_kafka_t *rk, const rd_kafka_topic_partition_list_t *partitions)
{
    typedef rd_kafka_error_t *(*fn_t)(rd_kafka_t *, const rd_kafka_topic_partition_list_t *);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_incremental_unassign");
    return real_(rk, partitions);
}

const char *rd_kafka_rebalance_protocol(rd_kafka_t *rk)
{
    typedef const char *(*fn_t)(rd_kafka_t *);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_rebalance_protocol");
    return real_(rk);
}

const char *rd_kafka_error_string(const rd_kafka_error_t *error)
{
    typedef const char *(*fn_t)(const rd_kafka_error_t *);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_error_string");
    return real_(error);
}

void rd_kafka_error_destroy(rd_kafka_error_t *error)
{
    typedef void (*fn_t)(rd_kafka_error_t *);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_error_destroy");
    real_(error);
}

rd_kafka_message_t *rd_kafka_consumer_poll(rd_kafka_t *rk, int timeout_ms)
{
    typedef rd_kafka_message_t * (*fn_t)(rd_kafka_t *, int);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_consumer_poll");
    return real_(rk, timeout_ms);
}

void rd_kafka_destroy(rd_kafka_t *rk)
{
    typedef void (*fn_t)(rd_kafka_t *);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_destroy");
    real_(rk);
}

const char *rd_kafka_err2name(rd_kafka_resp_err_t err)
{
    typedef const char * (*fn_t)(rd_kafka_resp_err_t);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_err2name");
    return real_(err);
}

const char *rd_kafka_err2str(rd_kafka_resp_err_t err)
{
    typedef const char * (*fn_t)(rd_kafka_resp_err_t);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_err2str");
    return real_(err);
}

rd_kafka_resp_err_t rd_kafka_fatal_error(rd_kafka_t *rk, char *errstr, size_t errstr_size)
{
    typedef rd_kafka_resp_err_t (*fn_t)(rd_kafka_t *, char *, size_t);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_fatal_error");
    return real_(rk, errstr, errstr_size);
}

rd_kafka_resp_err_t rd_kafka_flush(rd_kafka_t *rk, int timeout_ms)
{
    typedef rd_kafka_resp_err_t (*fn_t)(rd_kafka_t *, int);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_flush");
    return real_(rk, timeout_ms);
}

rd_kafka_resp_err_t rd_kafka_get_watermark_offsets(rd_kafka_t *rk, const char *topic, int32_t partition, int64_t *low, int64_t *high)
{
    typedef rd_kafka_resp_err_t (*fn_t)(rd_kafka_t *, const char *, int32_t, int64_t *, int64_t *);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_get_watermark_offsets");
    return real_(rk, topic, partition, low, high);
}

rd_kafka_resp_err_t rd_kafka_last_error(void)
{
    typedef rd_kafka_resp_err_t (*fn_t)(void);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_last_error");
    return real_();
}

void rd_kafka_message_destroy(rd_kafka_message_t *rkmessage)
{
    typedef void (*fn_t)(rd_kafka_message_t *);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_message_destroy");
    real_(rkmessage);
}

const char *rd_kafka_message_errstr(const rd_kafka_message_t *rkmessage)
{
    typedef const char *(*fn_t)(const rd_kafka_message_t *);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_message_errstr");
    return real_(rkmessage);
}

rd_kafka_resp_err_t rd_kafka_mock_broker_set_down(rd_kafka_mock_cluster_t *mcluster, int32_t broker_id)
{
    typedef rd_kafka_resp_err_t (*fn_t)(rd_kafka_mock_cluster_t *, int32_t);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_mock_broker_set_down");
    return real_(mcluster, broker_id);
}

rd_kafka_resp_err_t rd_kafka_mock_broker_set_up(rd_kafka_mock_cluster_t *mcluster, int32_t broker_id)
{
    typedef rd_kafka_resp_err_t (*fn_t)(rd_kafka_mock_cluster_t *, int32_t);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_mock_broker_set_up");
    return real_(mcluster, broker_id);
}

const char *rd_kafka_mock_cluster_bootstraps(const rd_kafka_mock_cluster_t *mcluster)
{
    typedef const char * (*fn_t)(const rd_kafka_mock_cluster_t *);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_mock_cluster_bootstraps");
    return real_(mcluster);
}

void rd_kafka_mock_cluster_destroy(rd_kafka_mock_cluster_t *mcluster)
{
    typedef void (*fn_t)(rd_kafka_mock_cluster_t *);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_mock_cluster_destroy");
    real_(mcluster);
}

rd_kafka_mock_cluster_t *rd_kafka_mock_cluster_new(rd_kafka_t *rk, int broker_cnt)
{
    typedef rd_kafka_mock_cluster_t * (*fn_t)(rd_kafka_t *, int);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_mock_cluster_new");
    return real_(rk, broker_cnt);
}

void rd_kafka_mock_push_request_errors_array(rd_kafka_mock_cluster_t *mcluster, int16_t ApiKey, size_t cnt, const rd_kafka_resp_err_t *errors)
{
    typedef void (*fn_t)(rd_kafka_mock_cluster_t *, int16_t, size_t, const rd_kafka_resp_err_t *);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_mock_push_request_errors_array");
    real_(mcluster, ApiKey, cnt, errors);
}

rd_kafka_resp_err_t rd_kafka_mock_topic_create(rd_kafka_mock_cluster_t *mcluster, const char *topic, int partition_cnt, int replication_factor)
{
    typedef rd_kafka_resp_err_t (*fn_t)(rd_kafka_mock_cluster_t *, const char *, int, int);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_mock_topic_create");
    return real_(mcluster, topic, partition_cnt, replication_factor);
}

rd_kafka_t *rd_kafka_new(rd_kafka_type_t type, rd_kafka_conf_t *conf, char *errstr, size_t errstr_size)
{
    typedef rd_kafka_t * (*fn_t)(rd_kafka_type_t, rd_kafka_conf_t *, char *, size_t);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_new");
    return real_(type, conf, errstr, errstr_size);
}

rd_kafka_resp_err_t rd_kafka_pause_partitions(rd_kafka_t *rk, rd_kafka_topic_partition_list_t *partitions)
{
    typedef rd_kafka_resp_err_t (*fn_t)(rd_kafka_t *, rd_kafka_topic_partition_list_t *);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_pause_partitions");
    return real_(rk, partitions);
}

int rd_kafka_poll(rd_kafka_t *rk, int timeout_ms)
{
    typedef int (*fn_t)(rd_kafka_t *, int);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_poll");
    return real_(rk, timeout_ms);
}

rd_kafka_resp_err_t rd_kafka_poll_set_consumer(rd_kafka_t *rk)
{
    typedef rd_kafka_resp_err_t (*fn_t)(rd_kafka_t *);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_poll_set_consumer");
    return real_(rk);
}

int rd_kafka_produce(rd_kafka_topic_t *rkt, int32_t partition, int msgflags, void *payload, size_t len, const void *key, size_t keylen, void *msg_opaque)
{
    typedef int (*fn_t)(rd_kafka_topic_t *, int32_t, int, void *, size_t, const void *, size_t, void *);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_produce");
    return real_(rkt, partition, msgflags, payload, len, key, keylen, msg_opaque);
}

rd_kafka_resp_err_t rd_kafka_purge(rd_kafka_t *rk, int purge_flags)
{
    typedef rd_kafka_resp_err_t (*fn_t)(rd_kafka_t *, int);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_purge");
    return real_(rk, purge_flags);
}

rd_kafka_resp_err_t rd_kafka_query_watermark_offsets(rd_kafka_t *rk, const char *topic, int32_t partition, int64_t *low, int64_t *high, int timeout_ms)
{
    typedef rd_kafka_resp_err_t (*fn_t)(rd_kafka_t *, const char *, int32_t, int64_t *, int64_t *, int);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_query_watermark_offsets");
    return real_(rk, topic, partition, low, high, timeout_ms);
}

size_t rd_kafka_queue_length(rd_kafka_queue_t *rkqu)
{
    typedef size_t (*fn_t)(rd_kafka_queue_t *);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_queue_length");
    return real_(rkqu);
}

void rd_kafka_queue_destroy(rd_kafka_queue_t *rkqu)
{
    typedef void (*fn_t)(rd_kafka_queue_t *);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_queue_destroy");
    real_(rkqu);
}

void rd_kafka_queue_io_event_enable(rd_kafka_queue_t *rkqu, int fd, const void *payload, size_t size)
{
    typedef void (*fn_t)(rd_kafka_queue_t *, int, const void *, size_t);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_queue_io_event_enable");
    real_(rkqu, fd, payload, size);
}

rd_kafka_queue_t *rd_kafka_queue_get_consumer(rd_kafka_t *rk)
{
    typedef rd_kafka_queue_t * (*fn_t)(rd_kafka_t *);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_queue_get_consumer");
    return real_(rk);
}

rd_kafka_resp_err_t rd_kafka_resume_partitions(rd_kafka_t *rk, rd_kafka_topic_partition_list_t *partitions)
{
    typedef rd_kafka_resp_err_t (*fn_t)(rd_kafka_t *, rd_kafka_topic_partition_list_t *);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_resume_partitions");
    return real_(rk, partitions);
}

rd_kafka_resp_err_t rd_kafka_subscribe(rd_kafka_t *rk, const rd_kafka_topic_partition_list_t *topics)
{
    typedef rd_kafka_resp_err_t (*fn_t)(rd_kafka_t *, const rd_kafka_topic_partition_list_t *);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_subscribe");
    return real_(rk, topics);
}

void rd_kafka_topic_destroy(rd_kafka_topic_t *rkt)
{
    typedef void (*fn_t)(rd_kafka_topic_t *);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_topic_destroy");
    real_(rkt);
}

const char *rd_kafka_topic_name(const rd_kafka_topic_t *rkt)
{
    typedef const char * (*fn_t)(const rd_kafka_topic_t *);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_topic_name");
    return real_(rkt);
}

rd_kafka_topic_t *rd_kafka_topic_new(rd_kafka_t *rk, const char *topic, rd_kafka_topic_conf_t *conf)
{
    typedef rd_kafka_topic_t * (*fn_t)(rd_kafka_t *, const char *, rd_kafka_topic_conf_t *);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_topic_new");
    return real_(rk, topic, conf);
}

rd_kafka_topic_partition_t *rd_kafka_topic_partition_list_add(rd_kafka_topic_partition_list_t *rktparlist, const char *topic, int32_t partition)
{
    typedef rd_kafka_topic_partition_t * (*fn_t)(rd_kafka_topic_partition_list_t *, const char *, int32_t);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_topic_partition_list_add");
    return real_(rktparlist, topic, partition);
}

rd_kafka_topic_partition_list_t *rd_kafka_topic_partition_list_copy(const rd_kafka_topic_partition_list_t *src)
{
    typedef rd_kafka_topic_partition_list_t * (*fn_t)(const rd_kafka_topic_partition_list_t *);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_topic_partition_list_copy");
    return real_(src);
}

void rd_kafka_topic_partition_list_destroy(rd_kafka_topic_partition_list_t *rkparlist)
{
    typedef void (*fn_t)(rd_kafka_topic_partition_list_t *);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_topic_partition_list_destroy");
    real_(rkparlist);
}

rd_kafka_topic_partition_list_t *rd_kafka_topic_partition_list_new(int size)
{
    typedef rd_kafka_topic_partition_list_t * (*fn_t)(int);
    RESOLVE_AS(kafka, fn_t, "rd_kafka_topic_partition_list_new");
    return real_(size);
}

void rd_kafka_mock_push_request_errors(rd_kafka_mock_cluster_t *mcluster, int16_t ApiKey, size_t cnt, ...)
{
    rd_kafka_resp_err_t errs[64];
    va_list ap;
    va_start(ap, cnt);
    while (cnt) {   /* in order, 64 at a time */
        size_t n = cnt < 64 ? cnt : 64;
        for (size_t i = 0; i < n; i++) errs[i] = (rd_kafka_resp_err_t)va_arg(ap, int);
        rd_kafka_mock_push_request_errors_array(mcluster, ApiKey, n, errs);
        cnt -= n;
    }
    va_end(ap);
}

