/* Minimal unit-test harness: CHECK(cond) records a failure and goes on;
 * main() returns UNIT_DONE(), or UNIT_SKIP when the test cannot run here;
 * qa/unit/run aggregates. */
#ifndef VIRT_UNIT_H
#define VIRT_UNIT_H
#include <stdio.h>

static int unit_checks, unit_failures;

#define CHECK(cond)							\
	do {								\
		unit_checks++;						\
		if (!(cond)) {						\
			unit_failures++;				\
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n",	\
				__FILE__, __LINE__, #cond);		\
		}							\
	} while (0)

/* exit status of a test that cannot run here (automake's): counted as
 * skipped, not passed */
#define UNIT_SKIP 77

#define UNIT_DONE()							\
	(printf("%s: %d checks, %d failed\n", __FILE__, unit_checks,	\
		unit_failures), unit_failures != 0)
#endif
