/* test_columns.c - the parsers' shared column machinery (parsers/columns.c):
 * tokens, header names to keys, fractions, CSV line text, date and time
 * columns. */
#include "test.h"
#include "../parsers/columns.h"

#include <stdlib.h>

TEST(split_blanks)
{
    const char *tok[3];
    size_t tl[3];
    const char *s = "  0\t 45  -  ";
    CHECK_EQ_INT(col_split_blanks(s, strlen(s), tok, tl, 3), 3);
    CHECK(col_tok_is(tok[0], tl[0], "0"));
    CHECK(col_tok_is(tok[1], tl[1], "45"));
    CHECK(col_tok_is(tok[2], tl[2], "-"));
    CHECK(!col_tok_is(tok[1], tl[1], "4"));
    CHECK_EQ_INT(col_split_blanks("a b c d", 7, tok, tl, 3), 4);   /* more than max */
    CHECK_EQ_INT(col_split_blanks(" \t ", 3, tok, tl, 3), 0);
}

TEST(split_blanks_vs_bytewise)
{
    /* blanks, their look-alikes one bit away (0xa0, 0x89, 0x29, 0x00, 0x0d)
     * and plain bytes, lines of every length around the 64-byte blocks */
    static const unsigned char pool[] = { ' ', '\t', ' ', '5', '-', 0xa0, 0x89, 0x29, 0x00, 0x0d, 'x', 0x80 };
    unsigned seed = 12345;
    int bad = 0;
    for (int r = 0; r < 20000; r++) {
        char s[208];
        size_t n = (size_t)(r % 200);   /* 0-3 blocks of 64 and a part */
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            s[i] = (char)pool[(seed >> 16) % sizeof pool];
        }
        const char *t1[40], *t2[40];
        size_t l1[40], l2[40];
        int max = r % 3 ? 39 : 5;
        int k1 = col_split_blanks(s, n, t1, l1, max), k2 = col_split_blanks_bytes(s, n, t2, l2, max);
        int same = k1 == k2;
        for (int i = 0; same && i < k1 && i < max; i++) same = t1[i] == t2[i] && l1[i] == l2[i];
        if (!same && bad++ < 3) printf("  split differs on round %d (%zu bytes): %d vs %d tokens\n", r, n, k1, k2);
    }
    CHECK_EQ_INT(bad, 0);
}

TEST(key_of)
{
    static const struct col_map map[] = { { "pwr", "gpu.power.usage", 7 }, { "gtemp", "gpu.temperature.gpu", 8 } };
    int kind = -1;
    char *dyn = (char *)"x";
    CHECK_EQ_STR(col_key_of(map, 2, "gpu.dmon.", "gtemp", 5, &kind, &dyn), "gpu.temperature.gpu");
    CHECK_EQ_INT(kind, 8);
    CHECK(dyn == NULL);
    kind = -1;
    const char *k = col_key_of(map, 2, "gpu.dmon.", "NewCol", 6, &kind, &dyn);
    CHECK(dyn != NULL && k == dyn);
    CHECK(k && !strncmp(k, "gpu.dmon.", 9));
    CHECK_EQ_INT(kind, -1);
    free(dyn);
}

TEST(name_all)
{
    static const struct col_map map[] = { { "gtemp", "gpu.temperature.gpu", 1 }, { "temp", "gpu.temperature.gpu", 1 } };
    const char *tok[] = { "gtemp", "x y", "temp", "x_y" };
    size_t tl[] = { 5, 3, 4, 3 };
    struct col_def cols[4];
    col_name_all(cols, tok, tl, 4, map, 2, "gpu.dmon.", 7, 9);
    CHECK_EQ_STR(cols[0].key, "gpu.temperature.gpu");
    CHECK_EQ_INT(cols[0].kind, 1);
    CHECK(cols[0].dyn == NULL);
    CHECK_EQ_INT(cols[1].kind, 7);            /* unknown: the default kind, its own key */
    CHECK(cols[1].dyn != NULL && cols[1].key == cols[1].dyn);
    CHECK_EQ_INT(cols[2].kind, 9);            /* temp after gtemp: the same key, skipped */
    CHECK_EQ_INT(cols[3].kind, cols[3].key && cols[1].key && !strcmp(cols[3].key, cols[1].key) ? 9 : 7);
    col_free_all(cols, 4);
    CHECK(cols[1].dyn == NULL && cols[3].dyn == NULL);
}

TEST(frac_ms)
{
    int ms = -1;
    CHECK(col_frac_ms("5", 1, &ms) && ms == 500);
    CHECK(col_frac_ms("123456789", 9, &ms) && ms == 123);
    CHECK(col_frac_ms("07", 2, &ms) && ms == 70);
    CHECK(!col_frac_ms("", 0, &ms));
    CHECK(!col_frac_ms("1234567890", 10, &ms));
    CHECK(!col_frac_ms("1a", 2, &ms));
}

TEST(csv_text)
{
    const char *line = "\xef\xbb\xbf  a,b \r";
    size_t len = strlen(line);
    const char *s;
    size_t n;
    col_csv_text(line, &len, &s, &n);
    CHECK_EQ_INT(len, strlen(line) - 1);
    CHECK_EQ_INT(n, 3);
    CHECK(!memcmp(s, "a,b", 3));
}

TEST(when)
{
    struct parser *p = parser_new(parser_find("dmon"), NULL, NULL);
    struct col_when w;
    int64_t ts = -1;
    CHECK(gl_tz_set("UTC") == GL_OK);
    col_when_init(&w);
    CHECK_EQ_INT(col_when_stamp(p, &w, 0, &ts), GL_OK);
    CHECK_EQ_INT(ts, -1);                                   /* neither: left as it was */
    CHECK_EQ_INT(col_when_date(p, &w, NULL, "20250304", 8), GL_OK);
    CHECK_EQ_INT(col_when_time(p, &w, NULL, "02:11:10", 8), GL_OK);
    CHECK_EQ_INT(col_when_stamp(p, &w, 0, &ts), GL_OK);
    CHECK_EQ_INT(ts, 1741054270000LL);
    CHECK_EQ_INT(col_when_date(p, &w, NULL, "-2025110", 8), GL_ERROR);
    CHECK(strstr(p->err, "bad date '-2025110'") != NULL);
    CHECK_EQ_INT(col_when_time(p, &w, NULL, "-1:00:00", 8), GL_ERROR);
    CHECK(strstr(p->err, "bad time '-1:00:00'") != NULL);
    col_when_init(&w);
    CHECK_EQ_INT(col_when_date(p, &w, NULL, "20251340", 8), GL_OK);   /* month 13: refused when stamped */
    CHECK_EQ_INT(col_when_stamp(p, &w, 0, &ts), GL_ERROR);
    CHECK(strstr(p->err, "bad date 20251340") != NULL);
    parser_free(p);
}

TEST(when_memo)
{
    /* the memo answers a repeated token with the values it gave; a new or
     * bad token is parsed (a bad one refused, the memo kept) */
    struct parser *p = parser_new(parser_find("dmon"), NULL, NULL);
    struct col_when_memo memo = { 0 };
    struct col_when w, ref;
    int64_t ts = 0, want = 0;
    CHECK(gl_tz_set("UTC") == GL_OK);
    static const char *const rows[][2] = {
        { "20250304", "02:11:10" }, { "20250304", "02:11:10" }, { "20250304", "02:11:11" }, { "20250305", "02:11:11" },
        { "2025030x", "02:11:11" }, { "20250305", "02:1x:11" }, { "20250305", "02:11:11" }, { "20241231", "23:59:59" },
    };
    for (size_t i = 0; i < GL_ARRAY_LEN(rows); i++) {
        col_when_init(&w);
        col_when_init(&ref);
        int a = col_when_date(p, &w, &memo, rows[i][0], 8), b = col_when_date(p, &ref, NULL, rows[i][0], 8);
        CHECK_EQ_INT(a, b);
        a = col_when_time(p, &w, &memo, rows[i][1], 8);
        b = col_when_time(p, &ref, NULL, rows[i][1], 8);
        CHECK_EQ_INT(a, b);
        CHECK(!memcmp(&w, &ref, sizeof w));
        if (a == GL_OK && col_when_stamp(p, &w, 0, &ts) == GL_OK && col_when_stamp(p, &ref, 0, &want) == GL_OK)
            CHECK_EQ_INT(ts, want);
    }
    CHECK(!memcmp(memo.date, "20241231", 8) && memo.y == 2024 && memo.mo == 12 && memo.d == 31);
    CHECK(!memcmp(memo.time, "23:59:59", 8) && memo.hh == 23 && memo.mi == 59 && memo.ss == 59);
    parser_free(p);
}

int main(void)
{
    RUN(split_blanks);
    RUN(split_blanks_vs_bytewise);
    RUN(key_of);
    RUN(name_all);
    RUN(frac_ms);
    RUN(csv_text);
    RUN(when);
    RUN(when_memo);
    return TEST_REPORT();
}
