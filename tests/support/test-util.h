/* SPDX-License-Identifier: MIT */
/* Assertions for unit tests: on failure print file:line, the expression and both values. */
#ifndef QMAPD_TEST_UTIL_H
#define QMAPD_TEST_UTIL_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Unused only in test-main.c, which includes this header for TEST_SKIP and test-case.h. */
static int test_failures __attribute__((unused));

#define EXPECT_INT_OP(a, op, b)                                                                    \
	do {                                                                                       \
		long long _a = (long long)(a), _b = (long long)(b);                                \
		if (!(_a op _b)) {                                                                 \
			fprintf(stderr, "%s:%d: expected %s %s %s, got %lld and %lld\n", __FILE__, \
				__LINE__, #a, #op, #b, _a, _b);                                    \
			test_failures++;                                                           \
		}                                                                                  \
	} while (0)

#define EXPECT_EQ(a, b) EXPECT_INT_OP(a, ==, b)
#define EXPECT_NE(a, b) EXPECT_INT_OP(a, !=, b)
#define EXPECT_GE(a, b) EXPECT_INT_OP(a, >=, b)
#define EXPECT_LT(a, b) EXPECT_INT_OP(a, <, b)
#define EXPECT_TRUE(x)	EXPECT_INT_OP(!!(x), ==, 1)

#define EXPECT_PTR_EQ(a, b)                                                                    \
	do {                                                                                   \
		const void *_a = (a), *_b = (b);                                               \
		if (_a != _b) {                                                                \
			fprintf(stderr, "%s:%d: expected %s == %s, got %p and %p\n", __FILE__, \
				__LINE__, #a, #b, _a, _b);                                     \
			test_failures++;                                                       \
		}                                                                              \
	} while (0)

#define EXPECT_STR_EQ(a, b)                                                                  \
	do {                                                                                 \
		const char *_a = (a), *_b = (b);                                             \
		if (!_a || !_b || strcmp(_a, _b) != 0) {                                     \
			fprintf(stderr, "%s:%d: expected %s == %s, got \"%s\" and \"%s\"\n", \
				__FILE__, __LINE__, #a, #b, _a ? _a : "(null)",              \
				_b ? _b : "(null)");                                         \
			test_failures++;                                                     \
		}                                                                            \
	} while (0)

#define EXPECT_MEM_EQ(a, b, n)                                                            \
	do {                                                                              \
		if (memcmp((a), (b), (n)) != 0) {                                         \
			fprintf(stderr, "%s:%d: memory %s differs from %s (%zu bytes)\n", \
				__FILE__, __LINE__, #a, #b, (size_t)(n));                 \
			test_failures++;                                                  \
		}                                                                         \
	} while (0)

/* In a TEST() case (test-case.h) a skip ends that case only: test-main.c defines
 * test_case_skip. A test with its own main() does not link it, and exits 77. */
void test_case_skip(void) __attribute__((weak));

#define TEST_SKIP(...)                                 \
	do {                                           \
		fprintf(stderr, "SKIP: " __VA_ARGS__); \
		fputc('\n', stderr);                   \
		if (test_case_skip)                    \
			test_case_skip();              \
		exit(77);                              \
	} while (0)

static inline int test_result(const char *name)
{
	if (test_failures) {
		fprintf(stderr, "%s: %d check(s) failed\n", name, test_failures);
		return 1;
	}
	printf("%s: all checks passed\n", name);
	return 0;
}

#endif
