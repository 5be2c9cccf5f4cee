/* Helpers shared by every family's BPF program. */
#ifndef VIRT_BPF_H
#define VIRT_BPF_H

#include "hist_buckets.h"

/* log2 bucket of v, same as pmda/hist.c virt_bucket_of(): 0 and 1 go to
 * bucket 0, [2^b, 2^(b+1)) to bucket b, the last bucket takes the rest. */
static __always_inline __u32 virt_log2_bucket(__u64 v)
{
	__u32 r = 0;

	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) { r += 1; }
	return r < VIRT_HIST_BUCKETS ? r : VIRT_HIST_BUCKETS - 1;
}

/* Count an event lost to a full map: drops[reason] in a per-CPU array. */
#define VIRT_DROP(map, reason)						\
	do {								\
		__u32 __k = (reason);					\
		__u64 *__d = bpf_map_lookup_elem(&map, &__k);		\
		if (__d)						\
			(*__d)++;					\
	} while (0)

#endif
