/* test_log.c - gl_log: logfmt and JSON output, escaping, repeat suppression. */
#include "test.h"
#include "../core/common.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Runs fn with stderr redirected to a temp file and returns what it wrote
 * (caller frees). */
static char *capture(void (*fn)(void))
{
    fflush(stderr);
    FILE *tmp = tmpfile();
    int saved = dup(2);
    dup2(fileno(tmp), 2);
    fn();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    long n = ftell(tmp);
    char *out = calloc(1, (size_t)n + 1);
    rewind(tmp);
    size_t got = fread(out, 1, (size_t)n, tmp);
    out[got] = '\0';
    fclose(tmp);
    return out;
}

static void emit_text(void)
{
    gl_log_json = 0;
    log_warn("msg=\"kafka down\" reason=\"a b\" n=5");
    log_info("plain \"quoted\"\nsecond line");
}

TEST(logfmt_body_kept_plain_text_escaped)
{
    char *s = capture(emit_text);
    CHECK(strstr(s, "level=warn msg=\"kafka down\" reason=\"a b\" n=5\n") != NULL);
    CHECK(strstr(s, "level=info msg=\"plain \\\"quoted\\\"\\nsecond line\"\n") != NULL);
    int lines = 0;
    for (char *p = s; *p; p++) lines += *p == '\n';
    CHECK_EQ_INT(lines, 2);
    free(s);
}

static void emit_json(void)
{
    gl_log_json = 1;
    log_error("msg=\"bulk failed\" status=429 reason=\"too many\"");
    log_info("x\"y");
    gl_log_json = 0;
}

TEST(json_mode_turns_pairs_into_members)
{
    char *s = capture(emit_json);
    char *nl = strchr(s, '\n');
    CHECK(nl != NULL);
    if (!nl) { free(s); return; }
    *nl = '\0';
    json_error_t e;
    json_t *o = json_loads(s, 0, &e);
    CHECK(o != NULL);
    if (o) {
        CHECK_EQ_STR(json_string_value(json_object_get(o, "msg")), "bulk failed");
        CHECK_EQ_INT(json_integer_value(json_object_get(o, "status")), 429);
        CHECK_EQ_STR(json_string_value(json_object_get(o, "reason")), "too many");
        CHECK_EQ_STR(json_string_value(json_object_get(o, "level")), "error");
        json_decref(o);
    }
    json_t *o2 = json_loads(nl + 1, JSON_DISABLE_EOF_CHECK, &e);
    CHECK(o2 != NULL);
    if (o2) {
        CHECK_EQ_STR(json_string_value(json_object_get(o2, "msg")), "x\"y");
        json_decref(o2);
    }
    free(s);
}

static void emit_repeats(void)
{
    gl_log_json = 0;
    for (int i = 0; i < 50; i++) log_warn("same thing");
    log_warn("different thing");
}

TEST(repeats_within_a_second_are_counted)
{
    char *s = capture(emit_repeats);
    int same = 0;
    for (char *p = s; (p = strstr(p, "msg=\"same thing\"")); p++) same++;
    /* the burst may straddle a second boundary: at most two copies printed */
    CHECK(same >= 1 && same <= 2);
    CHECK(strstr(s, "msg=\"previous message repeated\" count=") != NULL);
    CHECK(strstr(s, "different thing") != NULL);
    free(s);
}

/* a server's error text with a quote, a newline and fake fields */
static const char *const hostile = "bad\" level=debug injected=\"yes\nts=0 level=info msg=forged";

static void emit_hostile_text(void)
{
    gl_log_json = 0;
    log_error("msg=\"bulk failed\" reason=\"%s\" status=%d kind=%s n=%zu", hostile, 500, "a b", (size_t)7);
}

static void emit_hostile_json(void)
{
    gl_log_json = 1;
    log_error("msg=\"bulk failed\" reason=\"%s\" status=%d kind=%s", hostile, 500, "x\" y=1");
    gl_log_json = 0;
}

TEST(outside_text_is_escaped_in_logfmt)
{
    char *s = capture(emit_hostile_text);
    int lines = 0;
    for (char *p = s; *p; p++) lines += *p == '\n';
    CHECK_EQ_INT(lines, 1);
    CHECK(strstr(s, "reason=\"bad\\\" level=debug injected=\\\"yes\\nts=0 level=info msg=forged\" status=500 kind=\"a b\" n=7\n") != NULL);
    if (!strstr(s, " n=7")) printf("  got: %s", s);
    free(s);
}

TEST(outside_text_cannot_add_json_fields)
{
    char *s = capture(emit_hostile_json);
    json_error_t e;
    json_t *o = json_loads(s, JSON_DISABLE_EOF_CHECK, &e);
    CHECK(o != NULL);
    if (o) {
        CHECK_EQ_STR(json_string_value(json_object_get(o, "reason")), hostile);
        CHECK_EQ_STR(json_string_value(json_object_get(o, "level")), "error");
        CHECK_EQ_STR(json_string_value(json_object_get(o, "kind")), "x\" y=1");
        CHECK(json_object_get(o, "injected") == NULL && json_object_get(o, "y") == NULL);
        CHECK_EQ_INT(json_integer_value(json_object_get(o, "status")), 500);
        CHECK_EQ_INT(json_object_size(o), 6);   /* ts level msg reason status kind */
        json_decref(o);
    } else printf("  got: %s", s);
    free(s);
}

/* bytes from input can neither act on a terminal nor end a line: controls,
 * DEL, C1 controls and invalid UTF-8 escaped; printable UTF-8 kept */
TEST(printable_escapes_what_a_terminal_acts_on)
{
    const char in[] = "a\nb\x1b]0;t\x07\x1b[2J\x7f\xc2\x9b\xff \xc3\xa9 \\ \"";
    struct buf b;
    buf_init(&b);
    buf_put_printable(&b, in, sizeof in - 1, 0);
    CHECK_EQ_STR(b.p, "a\\nb\\x1b]0;t\\x07\\x1b[2J\\x7f\\xc2\\x9b\\xff \xc3\xa9 \\ \"");
    buf_reset(&b);
    buf_put_printable(&b, "q\"\\", 3, 1);
    CHECK_EQ_STR(b.p, "q\\\"\\\\");
    buf_free(&b);
    char out[8];
    gl_printable(out, sizeof out, "ab\x1b[2J", 7);   /* "ab\x1b" is 6 bytes, "[" fits, "2" fits: 7 + NUL */
    CHECK_EQ_STR(out, "ab\\x1b[");
    gl_printable(out, 6, "ab\x1b" "cd", 5);                /* the escape does not fit whole: cut before it */
    CHECK_EQ_STR(out, "ab");
    gl_printable(out, 4, "\xc3\xa9\xc3\xa9", 4);        /* a UTF-8 sequence is not cut */
    CHECK_EQ_STR(out, "\xc3\xa9");
}

static void emit_say(void)
{
    gl_log_json = 0;
    gl_say(GL_LOG_WARN, "%s:%d: %s", "x\n{\"msg\":\"forged\"}\n.log", 3, "bad '\x1b[31m'");
    gl_log_json = 1;
    gl_say(GL_LOG_WARN, "%s:%d: %s", "x\n{\"msg\":\"forged\"}\n.log", 3, "bad '\x1b[31m'");
    gl_log_json = 0;
}

/* a command's report line: the name escaped in text, one JSON object in json */
TEST(say_escapes_names_and_input)
{
    char *s = capture(emit_say);
    char *nl = strchr(s, '\n');
    CHECK(nl != NULL);
    if (!nl) { free(s); return; }
    *nl = '\0';
    CHECK_EQ_STR(s, "x\\n{\"msg\":\"forged\"}\\n.log:3: bad '\\x1b[31m'");
    json_error_t e;
    json_t *o = json_loads(nl + 1, JSON_DISABLE_EOF_CHECK, &e);
    CHECK(o != NULL);
    if (o) {
        CHECK_EQ_STR(json_string_value(json_object_get(o, "msg")), "x\n{\"msg\":\"forged\"}\n.log:3: bad '\x1b[31m'");
        CHECK_EQ_STR(json_string_value(json_object_get(o, "level")), "warn");
        json_decref(o);
    }
    int lines = 0;
    for (char *p = nl + 1; *p; p++) lines += *p == '\n';
    CHECK_EQ_INT(lines, 1);
    free(s);
}

int main(void)
{
    RUN(printable_escapes_what_a_terminal_acts_on);
    RUN(say_escapes_names_and_input);
    RUN(logfmt_body_kept_plain_text_escaped);
    RUN(json_mode_turns_pairs_into_members);
    RUN(repeats_within_a_second_are_counted);
    RUN(outside_text_is_escaped_in_logfmt);
    RUN(outside_text_cannot_add_json_fields);
    return TEST_REPORT();
}
