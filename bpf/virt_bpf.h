/* Helpers shared by every family's BPF program. */
#ifndef VIRT_BPF_H
#define VIRT_BPF_H

#include "hist_buckets.h"

/* Count an event lost to a full map: drops[reason] in a per-CPU array. */
#define VIRT_DROP(map, reason)						\
	do {								\
		__u32 __k = (reason);					\
		__u64 *__d = bpf_map_lookup_elem(&map, &__k);		\
		if (__d)						\
			(*__d)++;					\
	} while (0)

/* The value of key in map (a hash), inserted as init if absent; when the
 * map is full, NULL and the event counted in drops[reason]. (Two CPUs may
 * insert at once: BPF_NOEXIST lets one win, both then find its entry.) */
#define VIRT_LOOKUP_OR_INIT(map, key, init, drops, reason)			\
	({									\
		void *__v = bpf_map_lookup_elem(&(map), (key));			\
		if (!__v) {							\
			bpf_map_update_elem(&(map), (key), (init), BPF_NOEXIST);	\
			__v = bpf_map_lookup_elem(&(map), (key));		\
			if (!__v)						\
				VIRT_DROP(drops, reason);			\
		}								\
		__v;								\
	})

#endif
