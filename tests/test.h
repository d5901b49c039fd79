/*
 * test.h - a minimal unit-test harness (one binary per module).
 *
 *   TEST(name) { CHECK(x == 1); CHECK_EQ_INT(a, b); CHECK_EQ_STR(s, "x"); }
 *   int main(void) { RUN(name); return TEST_REPORT(); }
 *
 * Every binary ends with the line "N passed, N failed" that scripts/test.sh
 * sums up; a test fails if any CHECK in it fails.
 */
#ifndef GPULOG_TEST_H
#define GPULOG_TEST_H

#include <stdio.h>
#include <string.h>

static int test_passed, test_failed, test_cur_failed;
static const char *test_cur_name;

#define TEST(name) static void test_##name(void)
#define RUN(name) do { \
        test_cur_name = #name; test_cur_failed = 0; \
        test_##name(); \
        if (test_cur_failed) { test_failed++; printf("FAIL %s\n", #name); } \
        else { test_passed++; printf("ok   %s\n", #name); } \
    } while (0)
#define CHECK(cond) do { if (!(cond)) { \
        test_cur_failed = 1; \
        printf("  %s:%d: %s: CHECK(%s) failed\n", __FILE__, __LINE__, test_cur_name, #cond); } \
    } while (0)
#define CHECK_EQ_INT(a, b) do { long long _a = (long long)(a), _b = (long long)(b); if (_a != _b) { \
        test_cur_failed = 1; \
        printf("  %s:%d: %s: %s == %lld, expected %lld\n", __FILE__, __LINE__, test_cur_name, #a, _a, _b); } \
    } while (0)
#define CHECK_EQ_STR(a, b) do { const char *_a = (a), *_b = (b); \
        if (!_a || !_b || strcmp(_a, _b)) { \
        test_cur_failed = 1; \
        printf("  %s:%d: %s: %s == \"%s\", expected \"%s\"\n", __FILE__, __LINE__, test_cur_name, #a, \
               _a ? _a : "(null)", _b ? _b : "(null)"); } \
    } while (0)
#define CHECK_NEAR(a, b, eps) do { double _a = (a), _b = (b); \
        if (!(_a - _b <= (eps) && _b - _a <= (eps))) { \
        test_cur_failed = 1; \
        printf("  %s:%d: %s: %s == %.9g, expected %.9g\n", __FILE__, __LINE__, test_cur_name, #a, _a, _b); } \
    } while (0)
#define TEST_REPORT() (printf("%d passed, %d failed\n", test_passed, test_failed), test_failed ? 1 : 0)

#endif
