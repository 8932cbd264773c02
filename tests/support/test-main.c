/* SPDX-License-Identifier: MIT */
/*
 * The main() of every unit test written with TEST() (test-case.h): runs the registered cases
 * in file order, or those named on the command line, prints "ok NAME", "FAIL NAME" or
 * "skip NAME" per case and a last line "N passed, N failed, N skipped".
 *
 * Exit status: 0 when nothing failed, 1 when a case failed, 77 when every case run was
 * skipped (ctest's SKIP_RETURN_CODE), 2 for a usage error or a name that matches no case.
 * Linked from a static library, so a test with its own main() never pulls this file in.
 */
#include <fnmatch.h>
#include <getopt.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test-case.h"

/* The largest test file has about fifty cases; a bound keeps registration allocation-free. */
#define MAX_CASES 512

static const struct test_case *cases[MAX_CASES];
static unsigned n_cases;
static void (*setup)(void);
static jmp_buf skip_jump;
static bool in_case;

void test_case_register(const struct test_case *tc)
{
	if (n_cases == MAX_CASES) {
		fprintf(stderr, "more than %d test cases: raise MAX_CASES in %s\n", MAX_CASES,
			__FILE__);
		exit(2);
	}
	cases[n_cases++] = tc;
}

void test_case_set_setup(void (*fn)(void))
{
	if (setup) {
		fprintf(stderr, "more than one TEST_SETUP()\n");
		exit(2);
	}
	setup = fn;
}

/* Called by TEST_SKIP (test-util.h), which exits 77 itself outside a case. */
void test_case_skip(void)
{
	if (in_case)
		longjmp(skip_jump, 1);
}

static int by_line(const void *a, const void *b)
{
	const struct test_case *x = *(const struct test_case *const *)a;
	const struct test_case *y = *(const struct test_case *const *)b;

	return (x->line > y->line) - (x->line < y->line);
}

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"Usage: %s [--list] [-p PATTERN]... [NAME|PATTERN]...\n"
		"Run this test's cases, all of them or those whose name matches a PATTERN\n"
		"(an fnmatch(3) glob such as 'ul_*').\n"
		"  -l, --list             list the cases (those matching, if patterns are given)\n"
		"  -p, --pattern PATTERN  run the cases matching PATTERN (repeatable)\n"
		"  -h, --help             show this help\n",
		prog);
}

/* Runs one case; returns 0 passed, 1 failed, 77 skipped. */
static int run_case(const struct test_case *tc)
{
	int before = *tc->failures;

	/* Nothing buffered may be lost to a crash or copied into a forked child. */
	fflush(stdout);
	in_case = true;
	if (setjmp(skip_jump)) {
		in_case = false;
		printf("skip %s\n", tc->name);
		return 77;
	}
	/* The setup's checks and skips count as the case's. */
	if (setup)
		setup();
	tc->fn();
	in_case = false;
	if (*tc->failures != before) {
		printf("FAIL %s (%d check(s) failed)\n", tc->name, *tc->failures - before);
		return 1;
	}
	printf("ok %s\n", tc->name);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option options[] = { { "list", no_argument, NULL, 'l' },
						 { "pattern", required_argument, NULL, 'p' },
						 { "help", no_argument, NULL, 'h' },
						 {} };
	const char **patterns = calloc((size_t)argc, sizeof(*patterns));
	unsigned n_patterns = 0, passed = 0, failed = 0, skipped = 0;
	bool list = false;
	int c;

	if (!patterns) {
		perror("calloc");
		return 2;
	}
	while ((c = getopt_long(argc, argv, "lp:h", options, NULL)) != -1) {
		switch (c) {
		case 'l':
			list = true;
			break;
		case 'p':
			patterns[n_patterns++] = optarg;
			break;
		case 'h':
			usage(stdout, argv[0]);
			free(patterns);
			return 0;
		default:
			usage(stderr, argv[0]);
			free(patterns);
			return 2;
		}
	}
	for (int i = optind; i < argc; i++)
		patterns[n_patterns++] = argv[i];

	qsort(cases, n_cases, sizeof(cases[0]), by_line);

	bool *picked = calloc(n_cases ? n_cases : 1, sizeof(*picked));
	if (!picked) {
		perror("calloc");
		free(patterns);
		return 2;
	}
	for (unsigned i = 0; i < n_cases; i++)
		picked[i] = n_patterns == 0;
	for (unsigned p = 0; p < n_patterns; p++) {
		bool any = false;

		for (unsigned i = 0; i < n_cases; i++)
			if (fnmatch(patterns[p], cases[i]->name, 0) == 0)
				picked[i] = any = true;
		if (!any) {
			fprintf(stderr, "%s: no case matches '%s' (--list shows them)\n", argv[0],
				patterns[p]);
			free(picked);
			free(patterns);
			return 2;
		}
	}

	/* Lines, not blocks, so the cases' output and ours interleave as they happened. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (unsigned i = 0; i < n_cases; i++) {
		if (!picked[i])
			continue;
		if (list) {
			printf("%s\n", cases[i]->name);
			continue;
		}
		switch (run_case(cases[i])) {
		case 0:
			passed++;
			break;
		case 77:
			skipped++;
			break;
		default:
			failed++;
			break;
		}
	}
	free(picked);
	free(patterns);
	if (list)
		return 0;
	printf("%u passed, %u failed, %u skipped\n", passed, failed, skipped);
	if (failed)
		return 1;
	return passed == 0 && skipped > 0 ? 77 : 0;
}
