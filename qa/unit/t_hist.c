/* log2 buckets and instance names (pmda/hist.c). */
#include "hist.h"
#include "unit.h"

#include <string.h>

int main(void)
{
	char buf[128];

	CHECK(virt_bucket_of(0) == 0);
	CHECK(virt_bucket_of(1) == 0);
	CHECK(virt_bucket_of(2) == 1);
	CHECK(virt_bucket_of(3) == 1);
	CHECK(virt_bucket_of(1024) == 10);
	CHECK(virt_bucket_of(2047) == 10);
	CHECK(virt_bucket_of(2048) == 11);
	CHECK(virt_bucket_of(~0ull) == VIRT_HIST_BUCKETS - 1);
	/* every value lies inside its bucket's [lo, hi] */
	for (unsigned int b = 0; b + 1 < VIRT_HIST_BUCKETS; b++) {
		CHECK(virt_bucket_of(virt_bucket_lo(b)) == b);
		CHECK(virt_bucket_of(virt_bucket_hi(b)) == b);
		CHECK(virt_bucket_hi(b) + 1 == virt_bucket_lo(b + 1));
	}

	virt_bucket_name(buf, sizeof(buf), "io", 0);
	CHECK(strcmp(buf, "io::0-1") == 0);
	virt_bucket_name(buf, sizeof(buf), "io", 10);
	CHECK(strcmp(buf, "io::1024-2047") == 0);
	/* grafana-pcp splits at the first '-': the upper bound follows it */
	CHECK(strcmp(strchr(buf, '-') + 1, "2047") == 0);

	virt_sanitize(buf, sizeof(buf), "virtio-net 0\x01\xff/rx.0");
	CHECK(strcmp(buf, "virtio_net_0__/rx.0") == 0);
	virt_sanitize(buf, 4, "abcdef");
	CHECK(strcmp(buf, "abc") == 0);
	return UNIT_DONE();
}
