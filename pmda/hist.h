/*
 * log2 histogram buckets shared by every family.
 *
 * Bucket 0 holds 0 and 1, bucket b >= 1 holds [2^b, 2^(b+1) - 1]; the last
 * bucket also holds everything larger. The BPF side computes the same index
 * (bpf/virt_bpf.h: virt_log2_bucket). Instance names are
 * "<prefix>::<lo>-<hi>": grafana-pcp heatmaps split at the first '-', so a
 * prefix must not contain '-' (see virt_sanitize).
 */
#ifndef VIRT_HIST_H
#define VIRT_HIST_H

#include <stddef.h>
#include <stdint.h>

#include "../bpf/hist_buckets.h"

static inline uint64_t virt_bucket_lo(unsigned int b)
{
	return b == 0 ? 0 : (uint64_t)1 << b;
}

static inline uint64_t virt_bucket_hi(unsigned int b)
{
	return ((uint64_t)1 << (b + 1)) - 1;
}

unsigned int virt_bucket_of(uint64_t v);

/* "<prefix>::<lo>-<hi>" into buf; returns snprintf's result. */
int virt_bucket_name(char *buf, size_t len, const char *prefix, unsigned int b);

/* Copy src into dst (len bytes incl. NUL) keeping [A-Za-z0-9_.:/] and
 * mapping everything else ('-', space, control and non-ASCII bytes) to '_'.
 * Kernel-provided names (device, queue, process) pass through this before
 * they become instance names. */
void virt_sanitize(char *dst, size_t len, const char *src);

#endif
