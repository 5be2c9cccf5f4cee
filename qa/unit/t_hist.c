/* log2 buckets (bpf/hist_buckets.h: the function the BPF programs run
 * too) and bucket instance names (pmda/core/hist.c). */
#include "hist.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>

int main(void)
{
	char buf[128];

	CHECK(virt_log2_bucket(0) == 0);
	CHECK(virt_log2_bucket(1) == 0);
	CHECK(virt_log2_bucket(2) == 1);
	CHECK(virt_log2_bucket(3) == 1);
	CHECK(virt_log2_bucket(1024) == 10);
	CHECK(virt_log2_bucket(2047) == 10);
	CHECK(virt_log2_bucket(2048) == 11);
	CHECK(virt_log2_bucket(~0ull) == VIRT_HIST_BUCKETS - 1);
	/* every value lies inside its bucket's [lo, hi] */
	for (unsigned int b = 0; b + 1 < VIRT_HIST_BUCKETS; b++) {
		CHECK(virt_log2_bucket(virt_bucket_lo(b)) == b);
		CHECK(virt_log2_bucket(virt_bucket_hi(b)) == b);
		CHECK(virt_bucket_hi(b) + 1 == virt_bucket_lo(b + 1));
	}
	/* against count-leading-zeros around every power of two */
	for (unsigned int s = 1; s < 64; s++) {
		for (int d = -1; d <= 1; d++) {
			unsigned long long v = (1ull << s) + (unsigned long long)d;
			unsigned int want = 63 - (unsigned int)__builtin_clzll(v);

			if (want >= VIRT_HIST_BUCKETS)
				want = VIRT_HIST_BUCKETS - 1;
			CHECK(virt_log2_bucket(v) == want);
		}
	}

	virt_bucket_name(buf, sizeof(buf), "io", 0);
	CHECK(strcmp(buf, "io::0-1") == 0);
	virt_bucket_name(buf, sizeof(buf), "io", 10);
	CHECK(strcmp(buf, "io::1024-2047") == 0);
	/* grafana-pcp splits at the first '-': the upper bound follows it */
	CHECK(strcmp(strchr(buf, '-') + 1, "2047") == 0);
	/* a VM's name keeps its '-', its buckets have '_' in its place */
	virt_bucket_name(buf, sizeof(buf), "web-01/vcpu0/halt-x", 10);
	CHECK(strcmp(buf, "web_01/vcpu0/halt_x::1024-2047") == 0);
	virt_bucket_name(buf, 6, "a-b-c-d", 10);
	CHECK(strcmp(buf, "a_b_c") == 0);

	/* percentiles: one bucket, values spread evenly over [1024, 2047] */
	{
		uint64_t d[VIRT_HIST_BUCKETS] = { 0 }, v = 0;

		CHECK(!virt_hist_percentile(d, 50, &v));	/* empty: no value */
		d[10] = 100;
		CHECK(virt_hist_percentile(d, 50, &v) && v == 1024 + 512);
		CHECK(virt_hist_percentile(d, 99, &v) && v == 1024 + 1013);
		CHECK(!virt_hist_percentile(d, 0, &v) && !virt_hist_percentile(d, 100, &v));
		/* 90 fast (bucket 4: 16-31), 10 slow (bucket 20): p50 fast,
		 * p90 the top of the fast bucket, p99 in the slow one */
		memset(d, 0, sizeof(d));
		d[4] = 90;
		d[20] = 10;
		CHECK(virt_hist_percentile(d, 50, &v) && v >= 16 && v <= 31);
		CHECK(virt_hist_percentile(d, 90, &v) && v == 31);
		CHECK(virt_hist_percentile(d, 99, &v) && v >= (1u << 20) && v < (1u << 21));
	}
	/* the window: what the histogram gained over the last window only */
	{
		struct virt_hist_window *w = NULL;
		uint64_t h[VIRT_HIST_BUCKETS] = { 0 }, v = 0;

		CHECK(!virt_window_percentile(w, 0, 10000, h, 50, &v));
		h[20] = 1000;			/* old slow history */
		virt_window_push(&w, 1000, 10000, h);
		virt_window_push(&w, 1100, 10000, h);	/* too soon: ignored */
		CHECK(w && w->n == 1 && w->lo == 20 && w->nb == 1);
		/* younger than a window: measured from the oldest snapshot */
		h[4] += 10;
		CHECK(virt_window_percentile(w, 2000, 10000, h, 99, &v) && v <= 31);
		for (uint64_t t = 2250; t <= 20000; t += 1250)
			virt_window_push(&w, t, 10000, h);
		CHECK(w->n == VIRT_WIN_SLOTS && w->lo == 4 && w->nb == 17);
		/* nothing new in the last window: no value */
		CHECK(!virt_window_percentile(w, 20000, 10000, h, 50, &v));
		h[8] += 5;			/* 256-511 */
		CHECK(virt_window_percentile(w, 20500, 10000, h, 50, &v) && v >= 256 && v <= 511);
		free(w);
	}
	/* a window's range grows both ways and keeps what it had */
	{
		struct virt_hist_window *w = NULL;
		uint64_t h[VIRT_HIST_BUCKETS] = { 0 }, v = 0;
		bool full;
		uint64_t d[VIRT_HIST_BUCKETS];

		CHECK(virt_window_push(&w, 1000, 8000, h) == 0);	/* all zero */
		CHECK(w && w->n == 1 && w->nb == 0);
		CHECK(virt_window_delta(w, 1000, 8000, h, d, &full) && !full && d[0] == 0);
		h[10] = 3;
		CHECK(virt_window_push(&w, 2000, 8000, h) == 0 && w->lo == 10 && w->nb == 1);
		h[12] = 2;
		CHECK(virt_window_push(&w, 3000, 8000, h) == 0 && w->lo == 10 && w->nb == 3);
		h[2] = 7;
		CHECK(virt_window_push(&w, 4000, 8000, h) == 0 && w->lo == 2 && w->nb == 11);
		CHECK(w->n == 4);
		h[39] = 1;
		/* a window from the first snapshot: all of it */
		CHECK(virt_window_delta(w, 5000, 8000, h, d, &full) && !full);
		CHECK(d[2] == 7 && d[10] == 3 && d[12] == 2 && d[39] == 1 && d[11] == 0);
		/* from the second (7000 ms old at 9000): the later counts only */
		CHECK(virt_window_delta(w, 10000, 8000, h, d, &full) && full);
		CHECK(d[2] == 7 && d[10] == 0 && d[12] == 2 && d[39] == 1);
		CHECK(virt_window_percentile(w, 10000, 8000, h, 10, &v) && v >= 4 && v <= 7);
		CHECK(virt_window_size(3) < virt_window_size(VIRT_HIST_BUCKETS));
		free(w);
	}
	return UNIT_DONE();
}
