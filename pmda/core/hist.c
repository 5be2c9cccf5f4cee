#include "hist.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int virt_bucket_name(char *buf, size_t len, const char *prefix, unsigned int b)
{
	int n = snprintf(buf, len, "%s::%llu-%llu", prefix,
			 (unsigned long long)virt_bucket_lo(b),
			 (unsigned long long)virt_bucket_hi(b));

	for (size_t i = 0; i + 1 < len && prefix[i]; i++)
		buf[i] = virt_bucket_char(buf[i]);
	return n;
}

size_t virt_window_size(unsigned int nb)
{
	return sizeof(struct virt_hist_window) + sizeof(uint64_t) * VIRT_WIN_SLOTS * nb;
}

/* Snapshot s of w: its nb buckets from lo. */
static uint64_t *snapshot(const struct virt_hist_window *w, unsigned int s)
{
	return (uint64_t *)&w->h[(size_t)s * w->nb];
}

/* A copy of w (NULL: none) keeping buckets [lo, lo + nb), which covers
 * w's; buckets new to the range were 0 in every snapshot. */
static struct virt_hist_window *widen(const struct virt_hist_window *w, unsigned int lo,
				      unsigned int nb)
{
	struct virt_hist_window *n = calloc(1, virt_window_size(nb));

	if (!n)
		return NULL;
	n->lo = lo;
	n->nb = nb;
	if (!w)
		return n;
	n->head = w->head;
	n->n = w->n;
	memcpy(n->t_ms, w->t_ms, sizeof(n->t_ms));
	for (unsigned int s = 0; w->nb && s < VIRT_WIN_SLOTS; s++)
		memcpy(snapshot(n, s) + (w->lo - lo), snapshot(w, s), sizeof(uint64_t) * w->nb);
	return n;
}

int virt_window_push(struct virt_hist_window **wp, uint64_t now_ms, uint64_t window_ms,
		     const uint64_t *hist)
{
	struct virt_hist_window *w = *wp;
	unsigned int lo = VIRT_HIST_BUCKETS, hi = 0;	/* range of non-zero buckets */

	if (w && w->n) {
		unsigned int newest = (w->head + VIRT_WIN_SLOTS - 1) % VIRT_WIN_SLOTS;

		if (now_ms - w->t_ms[newest] < window_ms / VIRT_WIN_PERIODS)
			return 0;
	}
	for (unsigned int b = 0; b < VIRT_HIST_BUCKETS; b++)
		if (hist[b]) {
			lo = b < lo ? b : lo;
			hi = b + 1;
		}
	if (w && w->nb) {
		lo = w->lo < lo ? w->lo : lo;
		hi = w->lo + w->nb > hi ? w->lo + w->nb : hi;
	}
	if (lo >= hi)
		lo = hi = 0;
	if (!w || lo != w->lo || hi - lo != w->nb) {
		struct virt_hist_window *n = widen(w, lo, hi - lo);

		if (!n)
			return -ENOMEM;
		free(w);
		*wp = w = n;
	}
	w->t_ms[w->head] = now_ms;
	memcpy(snapshot(w, w->head), &hist[w->lo], sizeof(uint64_t) * w->nb);
	w->head = (w->head + 1) % VIRT_WIN_SLOTS;
	if (w->n < VIRT_WIN_SLOTS)
		w->n++;
	return 0;
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

bool virt_window_delta(const struct virt_hist_window *w, uint64_t now_ms, uint64_t window_ms,
		       const uint64_t *hist, uint64_t *delta, bool *full)
{
	const uint64_t *base = NULL;

	*full = false;
	if (!w || !w->n)
		return false;
	/* walk newest to oldest; keep the newest one at least a window old,
	 * else end on the oldest */
	for (unsigned int i = 1; i <= w->n; i++) {
		unsigned int s = (w->head + VIRT_WIN_SLOTS - i) % VIRT_WIN_SLOTS;

		base = snapshot(w, s);
		if (now_ms - w->t_ms[s] >= window_ms) {
			*full = true;
			break;
		}
	}
	memcpy(delta, hist, sizeof(uint64_t) * VIRT_HIST_BUCKETS);
	for (unsigned int b = 0; b < w->nb; b++)
		delta[w->lo + b] = hist[w->lo + b] >= base[b] ? hist[w->lo + b] - base[b] : 0;
	return true;
}

bool virt_window_percentile(const struct virt_hist_window *w, uint64_t now_ms,
			    uint64_t window_ms, const uint64_t *hist, unsigned int p,
			    uint64_t *out)
{
	uint64_t delta[VIRT_HIST_BUCKETS];
	bool full;

	return virt_window_delta(w, now_ms, window_ms, hist, delta, &full) &&
	       virt_hist_percentile(delta, p, out);
}
