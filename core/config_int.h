/*
 * config_int.h - what the files of the configuration module share
 * (config.c, config_value.c, config_apply.c, config_load.c,
 * config_print.c, config_docs.c); private to them, see config.h for the
 * interface.
 */
#ifndef GPULOG_CONFIG_INT_H
#define GPULOG_CONFIG_INT_H

#include "config.h"
#include "common.h"

/* config.c: the key table and the keys of one sources[] item. */
extern const struct config_key cfg_table[];
extern const size_t cfg_ntable;
extern const struct config_key cfg_source_table[];
extern const size_t cfg_nsource_table;
/* The older environment name of a key (GPULOG_ES_PASSWORD), or NULL. */
const char *cfg_env_alias(const char *path);
/* The closest key path to path in table t of n rows, or "" if none is close. */
const char *cfg_suggest(const struct config_key *t, size_t n, const char *path);
/* The part of a dotted path after its last dot. */
const char *cfg_last_part(const char *p);

/* config_value.c */
/* Formats a message into err (nothing when err is NULL or errlen 0). */
void cfg_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The string field of key k in the struct at base. */
char **cfg_str_field(void *base, const struct config_key *k);
/* Replaces the owned string *dst by a copy of v. */
void cfg_set_str(char **dst, const char *v);
/* Parses scalar v for key k into the struct at base; GL_ERROR with msg. */
int cfg_set_scalar(const struct config_key *k, void *base, const char *v, char *msg, size_t msglen);
/* Map entries: clear all, put key (klen bytes) = val, put "k=v" text. */
void cfg_map_clear(struct config_map *m);
void cfg_map_put(struct config_map *m, const char *key, size_t klen, const char *val);
int cfg_map_put_kv(struct config_map *m, const char *path, const char *kv, char *err, size_t errlen);
/* Puts every "k=v" of the list text ("k=v,k=v"): a comma starts the next
 * entry only when a name= follows it, so values may hold commas (a
 * password, bootstrap.servers=a:9092,b:9092). Errors never quote a value. */
int cfg_map_put_list(struct config_map *m, const char *path, const char *text, char *err, size_t errlen);
/* Source items: append one with defaults, check a complete one, add a
 * "TYPE[:ARG]" flag value to cfg. */
struct config_source *cfg_source_append(struct config_sources *ss);
int cfg_source_check(struct config_source *s, char *msg, size_t msglen);
int cfg_source_add_spec(struct gpulog_config *cfg, const char *spec, char *err, size_t errlen);

#endif
