/*
 * test_common.c - unit tests of core/common.c: growable buffers, JSON string
 * escaping, number formatting, the 128-bit hash (pinned values) and the time
 * helpers (civil dates, ISO parse/format, local time in UTC and a DST zone).
 */
#include "../core/common.h"
#include "../core/u64map.h"
#include "test.h"

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* Pinned outputs of hash128/hash64 (computed once from this code; a change
 * breaks event ids of replayed data and must be deliberate). */
#define HASH_EMPTY "af2a59084670eb50a95be19eb0c05d2e"
#define HASH_LINE "96e5d39ef403ca83ecf80213cdb0c705"
#define HASH64_GPULOG 0xcf47219e0a4ac43dULL

/* 1 if s (n bytes) parses as one JSON string whose UTF-8 value equals want. */
static int json_str_is(const char *s, size_t n, const char *want, size_t want_n)
{
    json_error_t je;
    json_t *j = json_loadb(s, n, JSON_DECODE_ANY, &je);
    if (!j) { printf("  not JSON: %s: %.*s\n", je.text, (int)n, s); return 0; }
    int ok = json_is_string(j) && json_string_length(j) == want_n &&
             !memcmp(json_string_value(j), want, want_n);
    if (!ok) printf("  decoded differently: %.*s\n", (int)n, s);
    json_decref(j);
    return ok;
}

TEST(buf_basics)
{
    struct buf b;
    buf_init(&b);
    CHECK_EQ_INT(b.len, 0);
    buf_puts(&b, "abc");
    buf_append(&b, "def", 3);
    buf_putc(&b, 'g');
    CHECK_EQ_STR(b.p, "abcdefg");
    CHECK_EQ_INT(b.len, 7);
    /* grow far past any initial capacity, keeping the NUL terminator */
    for (int i = 0; i < 10000; i++) buf_printf(&b, "%04d", i % 10000);
    CHECK_EQ_INT(b.len, 7 + 40000);
    CHECK(b.p[b.len] == '\0');
    CHECK(!memcmp(b.p + 7, "00000001", 8));
    CHECK(!memcmp(b.p + b.len - 4, "9999", 4));
    /* one printf larger than the current free space */
    char big[5000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    buf_reset(&b);
    CHECK_EQ_INT(b.len, 0);
    CHECK(b.p[0] == '\0');
    buf_printf(&b, "<%s>", big);
    CHECK_EQ_INT(b.len, 5001);
    CHECK(b.p[0] == '<' && b.p[5000] == '>' && b.p[5001] == '\0');
    buf_free(&b);
    CHECK(b.p == NULL || b.len == 0);
}

TEST(buf_put_i64_extremes)
{
    struct buf b;
    buf_init(&b);
    buf_put_i64(&b, 0); buf_putc(&b, ' ');
    buf_put_i64(&b, -1); buf_putc(&b, ' ');
    buf_put_i64(&b, INT64_MAX); buf_putc(&b, ' ');
    buf_put_i64(&b, INT64_MIN);
    CHECK_EQ_STR(b.p, "0 -1 9223372036854775807 -9223372036854775808");
    buf_free(&b);
}

TEST(json_escape_ascii_and_controls)
{
    struct buf b;
    buf_init(&b);
    const char in[] = "a\"b\\c\n\t\r\x01\x1f/z";
    buf_put_json_str(&b, in, sizeof in - 1);
    CHECK_EQ_STR(b.p, "\"a\\\"b\\\\c\\n\\t\\r\\u0001\\u001f/z\"");
    CHECK(json_str_is(b.p, b.len, in, sizeof in - 1));
    buf_reset(&b);
    buf_put_json_str(&b, "", 0);
    CHECK_EQ_STR(b.p, "\"\"");
    buf_free(&b);
}

TEST(json_escape_utf8_validation)
{
    struct buf b;
    buf_init(&b);
    /* valid 2, 3 and 4 byte sequences pass through unchanged */
    const char ok[] = "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 \xe4\xb8\xad";
    buf_put_json_str(&b, ok, sizeof ok - 1);
    CHECK(json_str_is(b.p, b.len, ok, sizeof ok - 1));
    /* each invalid byte becomes U+FFFD; NUL too */
    static const struct { const char *in; size_t n; const char *out; } bad[] = {
        { "\xff", 1, "\xef\xbf\xbd" },
        { "a\xc0\x80z", 4, "a\xef\xbf\xbd\xef\xbf\xbdz" },            /* overlong NUL */
        { "\xe2\x82", 2, "\xef\xbf\xbd\xef\xbf\xbd" },                 /* truncated */
        { "\xed\xa0\x80", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },   /* surrogate */
        { "\xf4\x90\x80\x80", 4, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" }, /* > U+10FFFF */
        { "x\0y", 3, "x\xef\xbf\xbdy" },
        { "\x80", 1, "\xef\xbf\xbd" },
    };
    for (size_t i = 0; i < GL_ARRAY_LEN(bad); i++) {
        buf_reset(&b);
        buf_put_json_str(&b, bad[i].in, bad[i].n);
        if (!json_str_is(b.p, b.len, bad[i].out, strlen(bad[i].out))) {
            printf("  case %zu\n", i);
            CHECK(0);
        }
    }
    buf_free(&b);
}

TEST(double_round_trip)
{
    static const double v[] = {
        0.0, 1.0, -1.0, 0.1, 0.2, 0.3, 1.0 / 3.0, 2.0 / 3.0, 123.456, 391.42, 106.56,
        1e-300, 4.9e-324, 1e300, 1.7976931348623157e308, 9007199254740993.0,
        1e15, 1e15 + 0.5, 1e16, -1e16, 12345678901234.5, 5e-7, 3.14159265358979,
    };
    struct buf b;
    buf_init(&b);
    for (size_t i = 0; i < GL_ARRAY_LEN(v); i++) {
        buf_reset(&b);
        buf_put_double(&b, v[i]);
        char *end;
        double back = strtod(b.p, &end);
        if (*end || back != v[i]) {
            printf("  %.17g written as %s\n", v[i], b.p);
            CHECK(0);
        }
        json_error_t je;
        json_t *j = json_loads(b.p, JSON_DECODE_ANY, &je);
        CHECK(j != NULL && json_is_number(j));
        json_decref(j);
    }
    /* whole numbers are written as integers, no exponent or dot */
    buf_reset(&b);
    buf_put_double(&b, 42.0);
    CHECK_EQ_STR(b.p, "42");
    buf_reset(&b);
    buf_put_double(&b, 391.42);
    CHECK_EQ_STR(b.p, "391.42");
    buf_reset(&b);
    buf_put_double(&b, NAN);
    CHECK_EQ_STR(b.p, "null");
    buf_reset(&b);
    buf_put_double(&b, -INFINITY);
    CHECK_EQ_STR(b.p, "null");
    buf_free(&b);
}

TEST(hash_pinned)
{
    /* Pinned once: event ids must not change between versions or machines,
     * or Kafka dedup keys and Elasticsearch _ids change under replays. */
    struct hash128 h;
    char hex[33];
    hash128_init(&h);
    hash128_hex(&h, hex);
    CHECK_EQ_STR(hex, HASH_EMPTY);
    hash128_init(&h);
    hash128_feed(&h, "golden-host", 11);
    hash128_feed(&h, "/var/log/dmon.log", 17);
    hash128_feed_u64(&h, 168);
    hash128_feed(&h, "    0    631     63     57    100     10", 40);
    hash128_hex(&h, hex);
    CHECK_EQ_STR(hex, HASH_LINE);
    CHECK_EQ_INT(strlen(hex), 32);
    for (int i = 0; i < 32; i++) CHECK((hex[i] >= '0' && hex[i] <= '9') || (hex[i] >= 'a' && hex[i] <= 'f'));
    /* same input twice: same value; one byte different: different value */
    char hex2[33];
    hash128_init(&h);
    hash128_feed(&h, "golden-host", 11);
    hash128_feed(&h, "/var/log/dmon.log", 17);
    hash128_feed_u64(&h, 168);
    hash128_feed(&h, "    0    631     63     57    100     10", 40);
    hash128_hex(&h, hex2);
    CHECK_EQ_STR(hex2, hex);
    hash128_init(&h);
    hash128_feed(&h, "golden-host", 11);
    hash128_feed(&h, "/var/log/dmon.log", 17);
    hash128_feed_u64(&h, 169);
    hash128_feed(&h, "    0    631     63     57    100     10", 40);
    hash128_hex(&h, hex2);
    CHECK(strcmp(hex2, hex) != 0);
    /* feeding in pieces must not collide with a different split */
    hash128_init(&h);
    hash128_feed(&h, "ab", 2);
    hash128_feed(&h, "c", 1);
    hash128_hex(&h, hex);
    hash128_init(&h);
    hash128_feed(&h, "a", 1);
    hash128_feed(&h, "bc", 2);
    hash128_hex(&h, hex2);
    CHECK(strcmp(hex, hex2) != 0);
    CHECK(hash64("gpulog", 6, 0) == HASH64_GPULOG);
    CHECK(hash64("gpulog", 6, 1) != hash64("gpulog", 6, 0));
}

TEST(days_from_civil)
{
    CHECK_EQ_INT(gl_days_from_civil(1970, 1, 1), 0);
    CHECK_EQ_INT(gl_days_from_civil(1969, 12, 31), -1);
    CHECK_EQ_INT(gl_days_from_civil(2000, 3, 1), 11017);
    CHECK_EQ_INT(gl_days_from_civil(2024, 2, 29), 19782);
    CHECK_EQ_INT(gl_days_from_civil(2025, 11, 7), 20399);
    CHECK_EQ_INT(gl_days_from_civil(2100, 3, 1), 47541);
    CHECK_EQ_INT(gl_days_from_civil(1600, 1, 1), -135140);
}

TEST(fmt_ts)
{
    char out[25];
    gl_fmt_ts(0, out);
    CHECK_EQ_STR(out, "1970-01-01T00:00:00.000Z");
    gl_fmt_ts(1762485301000LL, out);
    CHECK_EQ_STR(out, "2025-11-07T03:15:01.000Z");
    gl_fmt_ts(1709164800123LL, out);
    CHECK_EQ_STR(out, "2024-02-29T00:00:00.123Z");
    gl_fmt_ts(-1, out);
    CHECK_EQ_STR(out, "1969-12-31T23:59:59.999Z");
    gl_fmt_ts(253402300799999LL, out);
    CHECK_EQ_STR(out, "9999-12-31T23:59:59.999Z");
    /* same day twice (the formatter caches the date part) then another day */
    gl_fmt_ts(1762485302001LL, out);
    CHECK_EQ_STR(out, "2025-11-07T03:15:02.001Z");
    gl_fmt_ts(1762571702001LL, out);
    CHECK_EQ_STR(out, "2025-11-08T03:15:02.001Z");
}

TEST(parse_iso_ts)
{
    CHECK_EQ_INT(gl_tz_set("UTC"), GL_OK);
    int64_t t = 0;
    CHECK_EQ_INT(gl_parse_iso_ts("2025-11-07T03:15:01.000Z", 24, &t), GL_OK);
    CHECK_EQ_INT(t, 1762485301000LL);
    const char *s = "2025-01-21T04:41:44,283302+00:00";   /* dmesg --time-format iso */
    CHECK_EQ_INT(gl_parse_iso_ts(s, strlen(s), &t), GL_OK);
    CHECK_EQ_INT(t, 1737434504283LL);
    s = "2025-11-07T05:15:01.5+02:00";
    CHECK_EQ_INT(gl_parse_iso_ts(s, strlen(s), &t), GL_OK);
    CHECK_EQ_INT(t, 1762485301500LL);
    s = "2025-11-06T22:15:01-0500";
    CHECK_EQ_INT(gl_parse_iso_ts(s, strlen(s), &t), GL_OK);
    CHECK_EQ_INT(t, 1762485301000LL);
    s = "2025-11-07 03:15:01";     /* no zone: read in the --tz zone (UTC here) */
    CHECK_EQ_INT(gl_parse_iso_ts(s, strlen(s), &t), GL_OK);
    CHECK_EQ_INT(t, 1762485301000LL);
    static const char *const bad[] = {
        "", "2025-11-07", "2025-11-07T03:15", "2025/11/07T03:15:01Z", "2025-11-07T03:15:01.Z",
        "2025-11-07T03:15:01.000Zjunk", "2025-13-07T03:15:01Z", "2025-11-07T24:15:01Z",
        "2025-11-07T03:15:01+2", "20x5-11-07T03:15:01Z",
    };
    for (size_t i = 0; i < GL_ARRAY_LEN(bad); i++) {
        if (gl_parse_iso_ts(bad[i], strlen(bad[i]), &t) != GL_ERROR) {
            printf("  accepted '%s'\n", bad[i]);
            CHECK(0);
        }
    }
}

TEST(fmt_parse_round_trip)
{
    CHECK_EQ_INT(gl_tz_set("UTC"), GL_OK);
    char out[25];
    int64_t t;
    for (int64_t ms = 0; ms < 253402300799999LL; ms += 987654321987LL / 7) {
        gl_fmt_ts(ms, out);
        if (gl_parse_iso_ts(out, 24, &t) != GL_OK || t != ms) {
            printf("  %lld -> %s -> %lld\n", (long long)ms, out, (long long)t);
            CHECK(0);
            break;
        }
    }
}

TEST(local_to_epoch_utc)
{
    CHECK_EQ_INT(gl_tz_set("UTC"), GL_OK);
    int64_t t = 0;
    CHECK_EQ_INT(gl_local_to_epoch_ms(2025, 11, 7, 3, 15, 1, 250, &t), GL_OK);
    CHECK_EQ_INT(t, 1762485301250LL);
    CHECK_EQ_INT(gl_local_to_epoch_ms(2024, 2, 29, 0, 0, 0, 0, &t), GL_OK);
    CHECK_EQ_INT(gl_local_to_epoch_ms(2025, 2, 29, 0, 0, 0, 0, &t), GL_ERROR);
    CHECK_EQ_INT(gl_local_to_epoch_ms(2025, 13, 1, 0, 0, 0, 0, &t), GL_ERROR);
    CHECK_EQ_INT(gl_local_to_epoch_ms(2025, 4, 31, 0, 0, 0, 0, &t), GL_ERROR);
    CHECK_EQ_INT(gl_local_to_epoch_ms(2025, 1, 1, 24, 0, 0, 0, &t), GL_ERROR);
    CHECK_EQ_INT(gl_local_to_epoch_ms(2025, 1, 1, 0, 60, 0, 0, &t), GL_ERROR);
    CHECK_EQ_INT(gl_local_to_epoch_ms(2025, 1, 0, 0, 0, 0, 0, &t), GL_ERROR);
    CHECK_EQ_INT(gl_tz_set("No/Such_Zone"), GL_ERROR);
    CHECK_EQ_INT(gl_tz_set("../../etc/passwd"), GL_ERROR);
}

TEST(local_to_epoch_dst_zone)
{
    CHECK_EQ_INT(gl_tz_set("Europe/Berlin"), GL_OK);
    int64_t t = 0;
    /* winter: UTC+1 */
    CHECK_EQ_INT(gl_local_to_epoch_ms(2025, 1, 15, 12, 0, 0, 0, &t), GL_OK);
    CHECK_EQ_INT(t, 1736938800000LL);          /* 2025-01-15T11:00:00Z */
    /* summer: UTC+2 */
    CHECK_EQ_INT(gl_local_to_epoch_ms(2025, 7, 1, 12, 30, 15, 0, &t), GL_OK);
    CHECK_EQ_INT(t, 1751365815000LL);          /* 2025-07-01T10:30:15Z */
    /* the hours around the spring-forward (2025-03-30 02:00 -> 03:00) */
    CHECK_EQ_INT(gl_local_to_epoch_ms(2025, 3, 30, 1, 59, 59, 0, &t), GL_OK);
    CHECK_EQ_INT(t, 1743296399000LL);          /* 00:59:59Z */
    CHECK_EQ_INT(gl_local_to_epoch_ms(2025, 3, 30, 3, 0, 0, 0, &t), GL_OK);
    CHECK_EQ_INT(t, 1743296400000LL);          /* 01:00:00Z */
    /* after fall-back (2025-10-26 03:00 -> 02:00): 04:00 local is 03:00Z */
    CHECK_EQ_INT(gl_local_to_epoch_ms(2025, 10, 26, 4, 0, 0, 0, &t), GL_OK);
    CHECK_EQ_INT(t, 1761447600000LL);          /* 03:00:00Z */
    /* the same hour again after a cache hit in another season */
    CHECK_EQ_INT(gl_local_to_epoch_ms(2025, 1, 15, 12, 59, 59, 999, &t), GL_OK);
    CHECK_EQ_INT(t, 1736942399999LL);
    CHECK_EQ_INT(gl_tz_set("America/New_York"), GL_OK);
    CHECK_EQ_INT(gl_local_to_epoch_ms(2025, 7, 1, 12, 30, 15, 0, &t), GL_OK);
    CHECK_EQ_INT(t, 1751387415000LL);          /* UTC-4 */
    CHECK_EQ_INT(gl_tz_set("UTC"), GL_OK);
    CHECK_EQ_INT(gl_local_to_epoch_ms(2025, 7, 1, 12, 30, 15, 0, &t), GL_OK);
    CHECK_EQ_INT(t, 1751373015000LL);
}

TEST(parse_numbers)
{
    int64_t i;
    double d;
    CHECK(gl_parse_i64("123", 3, &i) && i == 123);
    CHECK(gl_parse_i64("-7", 2, &i) && i == -7);
    CHECK(gl_parse_i64("+7", 2, &i) && i == 7);
    CHECK(!gl_parse_i64("", 0, &i));
    CHECK(!gl_parse_i64("-", 1, &i));
    CHECK(!gl_parse_i64("12a", 3, &i));
    CHECK(!gl_parse_i64("1234567890123456789", 19, &i));   /* would overflow: refused */
    CHECK(gl_parse_i64("123456789012345678", 18, &i) && i == 123456789012345678LL);
    CHECK(gl_parse_double("391.42", 6, &d) && d == 391.42);
    CHECK(gl_parse_double("-1e3", 4, &d) && d == -1000.0);
    CHECK(!gl_parse_double("391.42 W", 8, &d));
    CHECK(!gl_parse_double("nan", 3, &d));
    CHECK(!gl_parse_double("inf", 3, &d));
    CHECK(!gl_parse_double("1e999", 5, &d));
    CHECK(!gl_parse_double("0x10", 4, &d));
    CHECK(!gl_parse_double("", 0, &d));
}

/* the multimap of hashed keys: every value under a key comes back, none
 * of another key, through growth and a clear */
TEST(u64map_multimap)
{
    struct u64map m;
    u64map_init(&m);
    for (uint32_t i = 0; i < 5000; i++) u64map_add(&m, (uint64_t)(i % 1000) * 0x9E3779B97F4A7C15ULL, i);
    size_t it = 0;
    uint32_t v, n = 0, sum = 0;
    while (u64map_next(&m, 7 * 0x9E3779B97F4A7C15ULL, &it, &v)) { n++; sum += v; CHECK_EQ_INT(v % 1000, 7); }
    CHECK_EQ_INT(n, 5);
    CHECK_EQ_INT(sum, 7 + 1007 + 2007 + 3007 + 4007);
    it = 0;
    CHECK(!u64map_next(&m, 12345, &it, &v));
    u64map_clear(&m);
    it = 0;
    CHECK(!u64map_next(&m, 7 * 0x9E3779B97F4A7C15ULL, &it, &v));
    u64map_add(&m, 1, 42);
    it = 0;
    CHECK(u64map_next(&m, 1, &it, &v) && v == 42);
    CHECK(!u64map_next(&m, 1, &it, &v));
    u64map_free(&m);
}

int main(void)
{
    RUN(u64map_multimap);
    RUN(buf_basics);
    RUN(buf_put_i64_extremes);
    RUN(json_escape_ascii_and_controls);
    RUN(json_escape_utf8_validation);
    RUN(double_round_trip);
    RUN(hash_pinned);
    RUN(days_from_civil);
    RUN(fmt_ts);
    RUN(parse_iso_ts);
    RUN(fmt_parse_round_trip);
    RUN(local_to_epoch_utc);
    RUN(local_to_epoch_dst_zone);
    RUN(parse_numbers);
    return TEST_REPORT();
}
