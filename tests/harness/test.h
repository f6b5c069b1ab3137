/*
 * A small test harness: TEST(name) { ... } registers a case; every case is
 * its own ctest entry and runs in its own process (cmake/Autd3Test.cmake).
 * Typed assertions print both values. SKIP("reason") exits 77, which ctest
 * reports as skipped, never as passed.
 */
#ifndef AUTD3_TEST_HARNESS_H
#define AUTD3_TEST_HARNESS_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*autd3_test_fn)(void);
void autd3_test_register(const char *name, autd3_test_fn fn);

#define TEST(name)                                                                         \
  static void test_##name(void);                                                           \
  __attribute__((constructor)) static void test_reg_##name(void) { autd3_test_register(#name, test_##name); } \
  static void test_##name(void)

#define TEST_FAIL_(...)                                           \
  do {                                                            \
    fprintf(stderr, "%s:%d: FAILED: ", __FILE__, __LINE__);       \
    fprintf(stderr, __VA_ARGS__);                                 \
    fprintf(stderr, "\n");                                        \
    exit(1);                                                      \
  } while (0)

#define ASSERT_TRUE(c) do { if (!(c)) TEST_FAIL_("expected true: %s", #c); } while (0)
#define ASSERT_FALSE(c) do { if (c) TEST_FAIL_("expected false: %s", #c); } while (0)
#define ASSERT_EQ(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); \
    if (a_ != b_) TEST_FAIL_("%s == %s: %lld != %lld", #a, #b, a_, b_); } while (0)
#define ASSERT_NE(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); \
    if (a_ == b_) TEST_FAIL_("%s != %s: both %lld", #a, #b, a_); } while (0)
#define ASSERT_LT(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); \
    if (!(a_ < b_)) TEST_FAIL_("%s < %s: %lld >= %lld", #a, #b, a_, b_); } while (0)
#define ASSERT_LE(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); \
    if (!(a_ <= b_)) TEST_FAIL_("%s <= %s: %lld > %lld", #a, #b, a_, b_); } while (0)
#define ASSERT_GT(a, b) ASSERT_LT(b, a)
#define ASSERT_GE(a, b) ASSERT_LE(b, a)
#define ASSERT_STREQ(a, b) do { const char *a_ = (a), *b_ = (b); \
    if (strcmp(a_, b_) != 0) TEST_FAIL_("%s == %s: \"%s\" != \"%s\"", #a, #b, a_, b_); } while (0)
#define ASSERT_CONTAINS(hay, needle) do { const char *h_ = (hay), *n_ = (needle); \
    if (strstr(h_, n_) == NULL) TEST_FAIL_("\"%s\" does not contain \"%s\"", h_, n_); } while (0)
#define ASSERT_MEMEQ(a, b, n) do { if (memcmp((a), (b), (n)) != 0) TEST_FAIL_("memory %s != %s (%zu bytes)", #a, #b, (size_t)(n)); } while (0)
/* Assert an autd3_err_t, printing the name and the detailed message on mismatch. */
#define ASSERT_ERR(expr, expected) do { autd3_err_t e_ = (expr); if (e_ != (expected)) \
    TEST_FAIL_("%s: got %s (%s), expected %s", #expr, autd3_err_name(e_), autd3_last_error(), autd3_err_name(expected)); } while (0)
#define ASSERT_OK(expr) ASSERT_ERR(expr, AUTD3_OK)

#define SKIP(...) do { fprintf(stderr, "SKIPPED: "); fprintf(stderr, __VA_ARGS__); fprintf(stderr, "\n"); exit(77); } while (0)

#endif
