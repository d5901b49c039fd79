/*
 * config_apply.c - the layers of the configuration: defaults, config_set
 * (flags), environment overrides, config_init, and what a command applies
 * to the process (log settings, time zone, year); secrets from files.
 */
#include "config_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* -------------------------------------------------------- defaults, free */

/* Frees what key k's field in cfg owns (a string, map entries, the
 * sources) and leaves it empty; numbers are left as they are. */
static void key_release(struct gpulog_config *cfg, const struct config_key *k)
{
    switch (k->type) {
    case CONFIG_STR: case CONFIG_ENUM: case CONFIG_ADDR:
        free(*cfg_str_field(cfg, k));
        *cfg_str_field(cfg, k) = NULL;
        break;
    case CONFIG_MAP:
        cfg_map_clear((struct config_map *)((char *)cfg + k->off));
        break;
    case CONFIG_SOURCES:
        config_clear_sources(cfg);
        break;
    default:
        break;
    }
}

/* Sets key k of cfg to its built-in default (aborts if the table's default is bad). */
static void key_default(struct gpulog_config *cfg, const struct config_key *k)
{
    char msg[GL_ERRLEN];
    if (k->type == CONFIG_MAP || k->type == CONFIG_SOURCES) {
        key_release(cfg, k);
        return;
    }
    if (cfg_set_scalar(k, cfg, k->def, msg, sizeof msg) != GL_OK) {
        fprintf(stderr, "gpulog: bad built-in default: %s\n", msg);
        abort();
    }
}

void config_defaults(struct gpulog_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    for (size_t i = 0; i < cfg_ntable; i++) key_default(cfg, &cfg_table[i]);
}

void config_free(struct gpulog_config *cfg)
{
    for (size_t i = 0; i < cfg_ntable; i++) key_release(cfg, &cfg_table[i]);
    memset(cfg, 0, sizeof *cfg);
}

/* ------------------------------------------------------ set, environment */

int config_set(struct gpulog_config *cfg, const char *path, const char *value,
               char *err, size_t errlen)
{
    const struct config_key *k = config_key_find(path);
    if (k) {
        if (k->type == CONFIG_SOURCES) return cfg_source_add_spec(cfg, value, err, errlen);
        if (k->type == CONFIG_MAP)
            return cfg_map_put_kv((struct config_map *)((char *)cfg + k->off), path, value, err, errlen);
        return cfg_set_scalar(k, cfg, value, err, errlen);
    }
    for (size_t i = 0; i < cfg_ntable; i++) {
        size_t n = strlen(cfg_table[i].path);
        if (cfg_table[i].type == CONFIG_MAP && !strncmp(path, cfg_table[i].path, n) && path[n] == '.' && path[n + 1]) {
            if (strchr(path + n + 1, '=')) {
                cfg_errf(err, errlen, "%s: map keys cannot contain '='", path);
                return GL_ERROR;
            }
            cfg_map_put((struct config_map *)((char *)cfg + cfg_table[i].off), path + n + 1, strlen(path + n + 1), value);
            return GL_OK;
        }
    }
    const char *sug = cfg_suggest(cfg_table, cfg_ntable, path);
    cfg_errf(err, errlen, "unknown key '%s'%s%s%s", path, *sug ? " (did you mean '" : "", sug, *sug ? "'?)" : "");
    return GL_ERROR;
}

int config_apply_env(struct gpulog_config *cfg, char *err, size_t errlen)
{
    for (size_t i = 0; i < cfg_ntable; i++) {
        const struct config_key *k = &cfg_table[i];
        if (k->type == CONFIG_SOURCES) continue;
        char name[96];
        config_env_name(k->path, name, sizeof name);
        const char *v = getenv(name);
        if (!v && cfg_env_alias(k->path) && (v = getenv(cfg_env_alias(k->path))))
            snprintf(name, sizeof name, "%s", cfg_env_alias(k->path));
        if (!v) continue;
        char msg[GL_ERRLEN];
        if (k->type == CONFIG_MAP) {
            if (cfg_map_put_list((struct config_map *)((char *)cfg + k->off), k->path, v, msg, sizeof msg) != GL_OK) {
                cfg_errf(err, errlen, "%s: %s", name, msg);
                return GL_ERROR;
            }
        } else if (cfg_set_scalar(k, cfg, v, msg, sizeof msg) != GL_OK) {
            cfg_errf(err, errlen, "%s: %s", name, msg);
            return GL_ERROR;
        }
    }
    return GL_OK;
}

const char *config_path_from_argv(int argc, char **argv, const char *opt)
{
    const char *path = NULL;
    size_t n = strlen(opt);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--")) break;
        if (!strcmp(argv[i], opt) && i + 1 < argc) path = argv[++i];
        else if (!strncmp(argv[i], opt, n) && argv[i][n] == '=') path = argv[i] + n + 1;
    }
    return path;
}

int config_init(struct gpulog_config *cfg, const char *path, char *err, size_t errlen)
{
    config_defaults(cfg);
    if (!path || !*path) path = getenv("GPULOG_CONFIG");
    if (path && *path && config_load(path, cfg, err, errlen) != GL_OK) return GL_ERROR;
    return config_apply_env(cfg, err, errlen);
}

void config_apply_log(const struct gpulog_config *cfg)
{
    static const char *lv[] = { "debug", "info", "warn", "error" };
    for (int i = 0; i < 4; i++)
        if (!strcmp(cfg->log.level, lv[i])) gl_log_level = (enum gl_level)i;
    gl_log_json = !strcmp(cfg->log.format, "json");
}

int config_apply_process(const struct gpulog_config *cfg, char *err, size_t errlen)
{
    config_apply_log(cfg);
    if (*cfg->tz && gl_tz_set(cfg->tz) != GL_OK) {
        cfg_errf(err, errlen, "tz: unknown time zone '%s'", cfg->tz);
        return GL_ERROR;
    }
    if (cfg->year && (cfg->year < 1970 || cfg->year > 9999)) {
        cfg_errf(err, errlen, "year: wants 1970 to 9999 (0 = inferred), got %lld", (long long)cfg->year);
        return GL_ERROR;
    }
    return GL_OK;
}

int config_secret(const char *value, const char *file, char **out, char *err, size_t errlen)
{
    if (value && *value) {
        *out = xstrdup(value);
        return GL_OK;
    }
    if (!file || !*file) {
        *out = xstrdup("");
        return GL_OK;
    }
    FILE *f = fopen(file, "r");
    if (!f) {
        cfg_errf(err, errlen, "%s: %s", file, strerror(errno));
        return GL_ERROR;
    }
    char line[4096];
    if (!fgets(line, sizeof line, f)) line[0] = '\0';
    fclose(f);
    line[strcspn(line, "\r\n")] = '\0';
    *out = xstrdup(line);
    return GL_OK;
}

int config_init_command(struct gpulog_config *cfg, const char *cmd, int argc, char **argv)
{
    char err[GL_ERRLEN * 4];
    if (config_init(cfg, config_path_from_argv(argc, argv, "--config"), err, sizeof err) == GL_OK) return GL_OK;
    fprintf(stderr, "gpulog %s: %s\n", cmd, err);
    config_free(cfg);
    return GL_ERROR;
}
