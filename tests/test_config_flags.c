/* test_config_flags.c - command-line flags generated from the configuration
 * table (core/config_flags.c): getopt entries, settings, --help, docs. */
#include "test.h"
#include "../core/config.h"
#include "../core/common.h"

#include <getopt.h>
#include <stdlib.h>

static const char *const keyflags[] = {
    "host", "tz", "kafka.brokers", "kafka.topics.metrics", "kafka.properties", "shutdown_timeout",
    "metrics_addr", "collect.spool_max", NULL,
};

/* Every flag of the table is well formed and names one key only. */
TEST(table_flags_unique)
{
    size_t n;
    const struct config_key *k = config_keys(&n);
    size_t withflag = 0;
    for (size_t i = 0; i < n; i++) {
        const struct config_flag *f = &k[i].flag;
        if (!f->letter && !f->name) { CHECK(!f->arg); continue; }
        withflag++;
        /* a flag without argument only for a boolean key */
        CHECK(f->arg || k[i].type == CONFIG_BOOL);
        CHECK(k[i].type != CONFIG_SOURCES);
        CHECK(!f->name || (strlen(f->name) > 1 && f->name[0] != '-' && !strchr(f->name, '=')));
        CHECK(f->letter != 'h');   /* every command's --help */
        for (size_t j = 0; j < i; j++) {
            if (f->letter) CHECK(k[j].flag.letter != f->letter);
            if (f->name && k[j].flag.name) CHECK(strcmp(k[j].flag.name, f->name) != 0);
        }
    }
    CHECK(withflag >= 15);
}

TEST(spelling)
{
    char s[96];
    config_flag_spelling(config_key_find("kafka.brokers"), s, sizeof s);
    CHECK_EQ_STR(s, "-b, --brokers LIST");
    config_flag_spelling(config_key_find("tz"), s, sizeof s);
    CHECK_EQ_STR(s, "--tz ZONE");
    config_flag_spelling(config_key_find("kafka.properties"), s, sizeof s);
    CHECK_EQ_STR(s, "-X key=value");
    config_flag_spelling(config_key_find("log.level"), s, sizeof s);
    CHECK_EQ_STR(s, "");
    CHECK_EQ_INT(config_flag_val(config_key_find("kafka.brokers")), 'b');
    CHECK(config_flag_val(config_key_find("tz")) >= CONFIG_OPT_BASE);
    CHECK(config_flag_val(config_key_find("tz")) != config_flag_val(config_key_find("metrics_addr")));
}

TEST(options)
{
    struct option opts[16];
    char shortopts[32] = ":h";
    size_t n = config_flag_options(keyflags, opts, GL_ARRAY_LEN(opts), shortopts, sizeof shortopts);
    /* -X has no long name: 8 keys, 7 long options */
    CHECK_EQ_INT(n, 7);
    CHECK_EQ_STR(shortopts, ":hH:b:t:X:");
    CHECK_EQ_STR(opts[0].name, "host");
    CHECK_EQ_INT(opts[0].has_arg, required_argument);
    CHECK_EQ_INT(opts[0].val, 'H');
    CHECK_EQ_STR(opts[1].name, "tz");
    CHECK_EQ_INT(opts[1].val, config_flag_val(config_key_find("tz")));
    CHECK_EQ_STR(opts[6].name, "spool-max");
}

/* getopt_long over a command line: key flags set the configuration, the
 * command's own flags come back to it, bad values are refused with the key. */
TEST(apply_with_getopt)
{
    enum { O_ONCE = 0x100 };
    struct option opts[16] = { { "once", no_argument, NULL, O_ONCE } };
    char shortopts[32] = ":h";
    size_t n = 1 + config_flag_options(keyflags, opts + 1, GL_ARRAY_LEN(opts) - 2, shortopts, sizeof shortopts);
    memset(&opts[n], 0, sizeof opts[n]);
    static char args[][24] = { "collect", "-b", "k1:9092", "--tz=UTC", "--once", "--shutdown-timeout", "5",
                               "-X", "acks=all", "--spool-max", "2MiB", "--metrics-addr", ":9477" };
    char *argv[GL_ARRAY_LEN(args) + 1];
    int argc = (int)GL_ARRAY_LEN(args);
    for (int i = 0; i < argc; i++) argv[i] = args[i];
    argv[argc] = NULL;
    struct gpulog_config c;
    config_defaults(&c);
    char err[GL_ERRLEN];
    int ch, own = 0, bad = 0;
    optind = 1;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, shortopts, opts, NULL)) != -1) {
        int r = config_flag_apply(&c, keyflags, ch, optarg, err, sizeof err);
        if (r < 0) bad++;
        else if (r == 0 && ch == O_ONCE) own++;
        else if (r == 0) bad++;
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(own, 1);
    CHECK_EQ_STR(c.kafka.brokers, "k1:9092");
    CHECK_EQ_STR(c.tz, "UTC");
    CHECK_EQ_INT(c.shutdown_timeout_ms, 5000);
    CHECK_EQ_STR(config_map_get(&c.kafka.properties, "acks"), "all");
    CHECK_EQ_INT(c.collect.spool_max, 2 << 20);
    CHECK_EQ_STR(c.metrics_addr, ":9477");

    /* a bad value: refused with the key's reason; a flag of a key not listed: not applied */
    CHECK_EQ_INT(config_flag_apply(&c, keyflags, config_flag_val(config_key_find("shutdown_timeout")), "soon",
                                   err, sizeof err), -1);
    CHECK(strstr(err, "shutdown_timeout") != NULL);
    CHECK_EQ_INT(c.shutdown_timeout_ms, 5000);
    CHECK_EQ_INT(config_flag_apply(&c, keyflags, 'g', "grp", err, sizeof err), 0);
    CHECK_EQ_STR(c.kafka.group, "gpulog-detect");
    config_free(&c);
}

TEST(help_lines)
{
    struct buf b;
    buf_init(&b);
    config_flag_help(keyflags, &b);
    /* the text from column 26; keys in the order given */
    CHECK(strncmp(b.p, "  -H, --host NAME         host.name written", 42) == 0);
    CHECK(strstr(b.p, "\n  -b, --brokers LIST      bootstrap servers") != NULL);
    CHECK(strstr(b.p, "\n      --tz ZONE           time zone") != NULL);
    CHECK(strstr(b.p, "[kafka.brokers]") != NULL);
    CHECK(strstr(b.p, "(default gpu.metrics) [kafka.topics.metrics]") != NULL);
    /* a long spelling: the text follows it two spaces on */
    CHECK(strstr(b.p, "      --metrics-addr HOST:PORT  HOST:PORT of") != NULL);
    /* no line over 79 columns, continuation lines under the text column */
    size_t lines = 0;
    for (char *p = b.p, *e; *p; p = e + 1) {
        e = strchr(p, '\n');
        CHECK(e != NULL);
        if (!e) break;
        CHECK((size_t)(e - p) <= 79);
        if (p[0] == ' ' && p[2] != '-' && p[6] != '-') CHECK(strspn(p, " ") == 26);
        lines++;
    }
    CHECK(lines > 8);
    buf_free(&b);
}

/* A command's own flag in the same layout; newlines in its text are blanks. */
TEST(help_entry)
{
    struct buf b;
    buf_init(&b);
    config_help_entry(&b, "    --once", "read what is there,\ndeliver it");
    CHECK_EQ_STR(b.p, "      --once              read what is there, deliver it\n");
    buf_reset(&b);
    config_help_entry(&b, "    --a-very-long-flag-name N", "text");
    CHECK_EQ_STR(b.p, "      --a-very-long-flag-name N  text\n");
    buf_free(&b);
}

TEST(docs_have_flags)
{
    struct buf b;
    buf_init(&b);
    config_docs(&b);
    CHECK(strstr(b.p, "| Environment | Flag | Description |") != NULL);
    CHECK(strstr(b.p, "| `GPULOG_KAFKA_BROKERS` | `-b, --brokers LIST` |") != NULL);
    CHECK(strstr(b.p, "| `GPULOG_LOG_LEVEL` |  |") != NULL);
    buf_free(&b);
}

int main(void)
{
    RUN(table_flags_unique);
    RUN(spelling);
    RUN(options);
    RUN(apply_with_getopt);
    RUN(help_lines);
    RUN(help_entry);
    RUN(docs_have_flags);
    return TEST_REPORT();
}
