/*
 * log2 histogram buckets shared by every family.
 *
 * Bucket 0 holds 0 and 1, bucket b >= 1 holds [2^b, 2^(b+1) - 1]; the last
 * bucket also holds everything larger: virt_log2_bucket() in
 * bpf/hist_buckets.h, the same function on both sides. Instance names are
 * "<prefix>::<lo>-<hi>": grafana-pcp heatmaps (Vector and Valkey) read the
 * bucket from what follows the first '-' (/^(.+?)-(.+?)$/), so each '-' of
 * a prefix is '_' there (a VM "web-01" has rows "web-01" and buckets
 * "web_01::1024-2047"); kernel-provided prefixes hold none (virt_sanitize,
 * pmda/core/rows.h).
 */
#ifndef VIRT_HIST_H
#define VIRT_HIST_H

#include <stdbool.h>
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

/* A character of a prefix as it is in bucket names. */
static inline char virt_bucket_char(char c)
{
	if (c == '-')
		return '_';
	return c;
}

/* "<prefix>::<lo>-<hi>" into buf, each '-' of prefix as '_'; returns
 * snprintf's result. */
int virt_bucket_name(char *buf, size_t len, const char *prefix, unsigned int b);

/*
 * Percentiles over a sliding window. The histograms are cumulative
 * counters; a window keeps snapshots of one, taken at most every
 * window/VIRT_WIN_PERIODS, and answers "what did it gain over the last
 * window" as the current histogram minus the newest snapshot at least one
 * window old (the oldest one while the agent has run less than a window).
 *
 * A snapshot keeps only the buckets [lo, lo + nb): every other bucket was 0
 * in every snapshot so far (most rows fill a few adjacent buckets). A
 * window grows its range when a bucket outside it is counted, so
 * virt_window_push may move it.
 */
#define VIRT_WIN_PERIODS 8
#define VIRT_WIN_SLOTS (VIRT_WIN_PERIODS + 2)

struct virt_hist_window {
	unsigned int head, n;		/* head: next slot to write */
	unsigned int lo, nb;		/* buckets kept */
	uint64_t t_ms[VIRT_WIN_SLOTS];
	uint64_t h[];			/* VIRT_WIN_SLOTS rows of nb buckets */
};

/* Bytes of a window keeping nb buckets. */
size_t virt_window_size(unsigned int nb);

/* Remember hist as of now_ms unless the newest snapshot is younger than
 * window_ms / VIRT_WIN_PERIODS; *w NULL makes a window. -ENOMEM leaves *w
 * as it was. */
int virt_window_push(struct virt_hist_window **w, uint64_t now_ms, uint64_t window_ms,
		     const uint64_t *hist);

/* The p-th percentile (0 < p < 100) of the values counted in delta, the
 * way Prometheus' histogram_quantile() estimates it: the bucket holding
 * rank p% of the count, linear interpolation inside its [lo, hi] range.
 * false if delta is empty. */
bool virt_hist_percentile(const uint64_t *delta, unsigned int p, uint64_t *out);

/* What hist gained over the last window_ms: hist minus the newest
 * snapshot at least window_ms old (*full = true), else minus the oldest.
 * false if the window has no snapshot. */
bool virt_window_delta(const struct virt_hist_window *w, uint64_t now_ms, uint64_t window_ms,
		       const uint64_t *hist, uint64_t *delta, bool *full);

/* The p-th percentile of what hist gained over the last window_ms; false
 * if nothing was counted in that window (no value is better than 0 here). */
bool virt_window_percentile(const struct virt_hist_window *w, uint64_t now_ms,
			    uint64_t window_ms, const uint64_t *hist, unsigned int p,
			    uint64_t *out);

#endif
