/* SPDX-License-Identifier: MIT */
/*
 * Named test cases: TEST(name) { ... } defines a case and registers it (a constructor, before
 * main) with the shared main of test-main.c, which runs the cases in file order, or those
 * picked by name:
 *
 *   test-qmap --list              the cases, one a line
 *   test-qmap v5_frames           one case (any number of names or globs)
 *   test-qmap -p 'ul_*'           the cases matching an fnmatch(3) glob
 *
 * A case's name is its C identifier (TEST(v5_frames) is the case "v5_frames"): the test's
 * executable is already the first level of the name, and an identifier needs no second naming
 * scheme, is found by grep and is a valid glob as it stands.
 *
 * The EXPECT_* macros of test-util.h count failures per case. TEST_SKIP() ends the case as
 * skipped; the test exits 77 (ctest's SKIP_RETURN_CODE) only if every case it ran skipped.
 * TEST_SETUP() { ... } (at most one a file) runs before every case, as part of it: the state
 * each case starts from, whichever cases run. A test with a main() of its own simply does not
 * include this header.
 */
#ifndef QMAPD_TEST_CASE_H
#define QMAPD_TEST_CASE_H

#include "test-util.h"

struct test_case {
	const char *name;
	void (*fn)(void);
	/* test-util.h's counter of the case's translation unit: each test file has its own. */
	int *failures;
	/* Constructors run in no promised order: the cases are sorted by line. */
	int line;
};

void test_case_register(const struct test_case *tc);
void test_case_set_setup(void (*fn)(void));

#define TEST(name)                                                                            \
	static void test_case_##name(void);                                                   \
	__attribute__((constructor)) static void test_case_register_##name(void)              \
	{                                                                                     \
		static const struct test_case tc = { #name, test_case_##name, &test_failures, \
						     __LINE__ };                              \
		test_case_register(&tc);                                                      \
	}                                                                                     \
	static void test_case_##name(void)

#define TEST_SETUP()                                                       \
	static void test_setup(void);                                      \
	__attribute__((constructor)) static void test_setup_register(void) \
	{                                                                  \
		test_case_set_setup(test_setup);                           \
	}                                                                  \
	static void test_setup(void)

#endif
