/*
 * config_flags.c - command-line flags from the key table (config.h): the
 * getopt_long entries, the setting and the --help text of a key's flag all
 * come from its row.
 */
#include "config_int.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Borrowed row of path, which must exist and have a flag (a program error otherwise: aborts). */
static const struct config_key *flag_key(const char *path)
{
    const struct config_key *k = config_key_find(path);
    if (!k || (!k->flag.letter && !k->flag.name)) {
        fprintf(stderr, "gpulog: config key '%s' %s\n", path, k ? "has no flag" : "is unknown");
        abort();
    }
    return k;
}

int config_flag_val(const struct config_key *k)
{
    return k->flag.letter ? k->flag.letter : CONFIG_OPT_BASE + (int)(k - cfg_table);
}

void config_flag_spelling(const struct config_key *k, char *out, size_t outlen)
{
    const struct config_flag *f = &k->flag;
    char letter[8] = "";
    if (f->letter) snprintf(letter, sizeof letter, "-%c%s", f->letter, f->name ? ", " : "");
    snprintf(out, outlen, "%s%s%s%s%s", letter, f->name ? "--" : "", f->name ? f->name : "",
             f->arg ? " " : "", f->arg ? f->arg : "");
}

void config_option_add(struct option *opts, size_t *n, size_t max, char *shortopts, size_t shortlen,
                       const char *name, int has_arg, int val, int letter, const char *what)
{
    if (name) {
        if (*n >= max) { fprintf(stderr, "gpulog: option table full at '%s'\n", what); abort(); }
        opts[(*n)++] = (struct option){ name, has_arg, NULL, val };
    }
    if (letter <= 0 || letter >= 128) return;
    size_t sl = strlen(shortopts);
    if (sl + 3 > shortlen) { fprintf(stderr, "gpulog: short options full at '%s'\n", what); abort(); }
    shortopts[sl++] = (char)letter;
    if (has_arg == required_argument) shortopts[sl++] = ':';
    shortopts[sl] = '\0';
}

size_t config_flag_options(const char *const *paths, struct option *opts, size_t max,
                           char *shortopts, size_t shortlen)
{
    size_t n = 0;
    for (; *paths; paths++) {
        const struct config_key *k = flag_key(*paths);
        config_option_add(opts, &n, max, shortopts, shortlen, k->flag.name,
                          k->flag.arg ? required_argument : no_argument, config_flag_val(k), k->flag.letter, *paths);
    }
    return n;
}

int config_flag_apply(struct gpulog_config *cfg, const char *const *paths, int opt, const char *arg,
                      char *err, size_t errlen)
{
    for (; *paths; paths++) {
        const struct config_key *k = flag_key(*paths);
        if (config_flag_val(k) != opt) continue;
        if (config_set(cfg, k->path, k->flag.arg ? arg : "true", err, errlen) != GL_OK) return -1;
        return 1;
    }
    return 0;
}

/* Column of the help text; a longer spelling puts the text two spaces after it. */
#define HELP_COL 26
#define HELP_WIDTH 79

/* Appends text word-wrapped to HELP_WIDTH (words split at blanks and
 * newlines): its first word at the cursor (column at), the lines after it
 * from column col. */
static void put_wrapped(struct buf *out, const char *text, size_t at, size_t col)
{
    int first = 1;
    for (const char *p = text + strspn(text, " \n"); *p;) {
        size_t w = strcspn(p, " \n");
        if (!first && at + 1 + w > HELP_WIDTH) {
            buf_putc(out, '\n');
            for (at = 0; at < col; at++) buf_putc(out, ' ');
        } else if (!first) {
            buf_putc(out, ' ');
            at++;
        }
        buf_append(out, p, w);
        at += w;
        p += w;
        p += strspn(p, " \n");
        first = 0;
    }
    buf_putc(out, '\n');
}

void config_help_entry(struct buf *out, const char *spelling, const char *text)
{
    size_t start = out->len;
    buf_puts(out, "  ");
    buf_puts(out, spelling);
    size_t at = out->len - start;
    if (at + 2 > HELP_COL) { buf_puts(out, "  "); at += 2; }
    else for (; at < HELP_COL; at++) buf_putc(out, ' ');
    put_wrapped(out, text, at, HELP_COL);
}

void config_flag_help(const char *const *paths, struct buf *out)
{
    for (; *paths; paths++) {
        const struct config_key *k = flag_key(*paths);
        /* "-b, --brokers" in column 2, "--tz" in column 6 (under the long names) */
        char sp[96];
        memcpy(sp, "    ", 5);
        config_flag_spelling(k, sp + (k->flag.letter ? 0 : 4), sizeof sp - 4);
        struct buf text;
        buf_init(&text);
        buf_puts(&text, k->help);
        if (*k->def && k->type != CONFIG_MAP && k->type != CONFIG_SOURCES) buf_printf(&text, " (default %s)", k->def);
        buf_printf(&text, " [%s]", k->path);
        config_help_entry(out, sp, text.p);
        buf_free(&text);
    }
}
