/* log2 histogram buckets, shared by the BPF programs and the agent: one
 * bucket function for both, unit-tested on the agent side (qa/unit/t_hist). */
#ifndef VIRT_HIST_BUCKETS_H
#define VIRT_HIST_BUCKETS_H

#ifndef VIRT_HIST_BUCKETS
#define VIRT_HIST_BUCKETS 40
#endif

/* Bucket of v: 0 and 1 go to bucket 0, [2^b, 2^(b+1)) to bucket b, the
 * last bucket takes the rest. Shifts, not __builtin_clzll: BPF has no
 * count-leading-zeros instruction. */
static inline __attribute__((always_inline)) unsigned int virt_log2_bucket(unsigned long long v)
{
	unsigned int r = 0;

	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) { r += 1; }
	return r < VIRT_HIST_BUCKETS ? r : VIRT_HIST_BUCKETS - 1;
}
#endif
