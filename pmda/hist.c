#include "hist.h"

#include <stdio.h>
#include <string.h>

unsigned int virt_bucket_of(uint64_t v)
{
	unsigned int b = v ? 63 - (unsigned int)__builtin_clzll(v) : 0;

	return b < VIRT_HIST_BUCKETS ? b : VIRT_HIST_BUCKETS - 1;
}

int virt_bucket_name(char *buf, size_t len, const char *prefix, unsigned int b)
{
	return snprintf(buf, len, "%s::%llu-%llu", prefix,
			(unsigned long long)virt_bucket_lo(b),
			(unsigned long long)virt_bucket_hi(b));
}

void virt_sanitize(char *dst, size_t len, const char *src)
{
	size_t i;

	if (len == 0)
		return;
	for (i = 0; i + 1 < len && src[i]; i++) {
		unsigned char c = (unsigned char)src[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			 (c >= '0' && c <= '9') || c == '_' || c == '.' ||
			 c == ':' || c == '/';

		dst[i] = src[i];
		if (!ok)
			dst[i] = '_';
	}
	dst[i] = '\0';
}

void virt_window_push(struct virt_hist_window *w, uint64_t now_ms, uint64_t window_ms,
		      const uint64_t *hist)
{
	if (w->n) {
		unsigned int newest = (w->head + VIRT_WIN_SLOTS - 1) % VIRT_WIN_SLOTS;

		if (now_ms - w->t_ms[newest] < window_ms / VIRT_WIN_PERIODS)
			return;
	}
	w->t_ms[w->head] = now_ms;
	memcpy(w->h[w->head], hist, sizeof(w->h[0]));
	w->head = (w->head + 1) % VIRT_WIN_SLOTS;
	if (w->n < VIRT_WIN_SLOTS)
		w->n++;
}

bool virt_hist_percentile(const uint64_t *delta, unsigned int p, uint64_t *out)
{
	double total = 0, rank, below = 0;

	for (unsigned int b = 0; b < VIRT_HIST_BUCKETS; b++)
		total += (double)delta[b];
	if (total == 0 || p == 0 || p >= 100)
		return false;
	/* as Prometheus' histogram_quantile(): rank p% of the count, find its
	 * bucket, assume the bucket's values spread evenly over [lo, hi] */
	rank = total * p / 100;
	for (unsigned int b = 0; b < VIRT_HIST_BUCKETS; b++) {
		double lo = (double)virt_bucket_lo(b), hi = (double)virt_bucket_hi(b);

		if (!delta[b] || below + (double)delta[b] < rank) {
			below += (double)delta[b];
			continue;
		}
		*out = (uint64_t)(lo + (hi - lo) * (rank - below) / (double)delta[b] + 0.5);
		return true;
	}
	return false;
}

const uint64_t *virt_window_base(const struct virt_hist_window *w, uint64_t now_ms,
				 uint64_t window_ms, bool *full)
{
	const uint64_t *base = NULL;

	*full = false;
	if (!w)
		return NULL;
	/* walk newest to oldest; keep the newest one at least a window old,
	 * else end on the oldest */
	for (unsigned int i = 1; i <= w->n; i++) {
		unsigned int s = (w->head + VIRT_WIN_SLOTS - i) % VIRT_WIN_SLOTS;

		base = w->h[s];
		if (now_ms - w->t_ms[s] >= window_ms) {
			*full = true;
			break;
		}
	}
	return base;
}

bool virt_window_percentile(const struct virt_hist_window *w, uint64_t now_ms,
			    uint64_t window_ms, const uint64_t *hist, unsigned int p,
			    uint64_t *out)
{
	uint64_t delta[VIRT_HIST_BUCKETS];
	bool full;
	const uint64_t *base = virt_window_base(w, now_ms, window_ms, &full);

	if (!base)
		return false;
	for (unsigned int b = 0; b < VIRT_HIST_BUCKETS; b++)
		delta[b] = hist[b] >= base[b] ? hist[b] - base[b] : 0;
	return virt_hist_percentile(delta, p, out);
}
