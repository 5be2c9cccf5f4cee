/*
 * Plain C arrays: element count, and growth by doubling. No PCP, so the
 * pure-C parts (vmid.c, kvm_names.c), their unit tests and fuzzers use it
 * as the agent and the modules do.
 */
#ifndef VIRT_ARRAY_H
#define VIRT_ARRAY_H

#include <stddef.h>
#include <stdlib.h>

/* Elements of an array (not of a pointer). */
#define VIRT_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Room for need elements of elem bytes in *v (grown by doubling, at least
 * 16): 0, or -1 when out of memory (*v and *cap unchanged). */
static inline int virt_grow(void *v, size_t *cap, size_t need, size_t elem)
{
	void **arr = v;
	size_t ncap = *cap ? *cap : 16;
	void *p;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	if (!(p = realloc(*arr, ncap * elem)))
		return -1;
	*arr = p;
	*cap = ncap;
	return 0;
}
/* (sizeof of an element that may be a struct pointer: NOLINT for clang-tidy) */
#define VIRT_GROW(arr, cap, need) virt_grow(&(arr), &(cap), (need), sizeof(*(arr))) /* NOLINT(bugprone-sizeof-expression) */

#endif
