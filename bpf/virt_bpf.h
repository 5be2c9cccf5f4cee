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

/* Slot tables: one slot per kernel object in a plain BPF_F_MMAPABLE array
 * (the verifier inlines its lookups: no helper call; the agent reads it in
 * place), found by hashing the object's address. A slot's first word is
 * its owner: 0 never used (a probe stops there), VIRT_SLOT_FREED given
 * back by the agent after the owner died (reusable, a probe goes on), else
 * the object's address. The owner's death is a nonzero __u64 in the slot,
 * written by the family's BPF side, cleared here on reuse. */
#define VIRT_SLOT_FREED	1

/* The array index of the i-th slot of key's probe window in an array of
 * 1 << bits slots (Fibonacci hashing of the address; the mask keeps it in
 * the array). */
static __always_inline __u32 virt_slot_index(__u64 key, __u32 bits, __u32 i)
{
	return ((__u32)((key * 0x9E3779B97F4A7C15ULL) >> (64 - bits)) + i) & ((1U << bits) - 1);
}

/* The i-th slot of key's probe window in map. */
static __always_inline void *virt_slot_probe(void *map, __u32 bits, __u64 key, __u32 i)
{
	__u32 k = virt_slot_index(key, bits, i);

	return bpf_map_lookup_elem(map, &k);
}

/* Take slot s for key if its owner is still was (compare-and-swap): the
 * slot on success (*fresh set) or if another CPU just took it for the same
 * key, else NULL (another key won it). */
static __always_inline void *virt_slot_take(void *s, __u64 was, __u64 key, __u32 dead_off,
					    bool *fresh)
{
	__u64 owner = __sync_val_compare_and_swap((__u64 *)s, was, key);

	if (owner == was) {
		*(__u64 *)((char *)s + dead_off) = 0;	/* a freed slot keeps its old owner's mark */
		*fresh = true;
		return s;
	}
	return owner == key ? s : NULL;
}

/* key's live slot in map, looking at probe slots from its home. Probing
 * stops at the first never-used slot, which a new key takes if create
 * (two CPUs seeing a key first at once both end up in the one that won;
 * the winner's *fresh is set: it fills the slot in); freed slots are
 * reused only when the window has no never-used slot. A slot whose owner
 * died (the __u64 at dead_off) is skipped: a new object at the same
 * address gets a slot of its own. NULL if not found, or (create) when the
 * window is full: the caller counts that drop. */
static __always_inline void *virt_slot_get(void *map, __u32 bits, __u32 probe, __u64 key,
					   __u32 dead_off, bool create, bool *fresh)
{
	void *freed = NULL;

	*fresh = false;
	for (__u32 i = 0; i < probe; i++) {
		void *s = virt_slot_probe(map, bits, key, i);
		__u64 owner;

		if (!s)
			break;
		owner = *(__u64 *)s;
		if (owner == key && !*(__u64 *)((char *)s + dead_off))
			return s;
		if (owner == 0) {
			if (!create)
				return NULL;
			s = virt_slot_take(s, 0, key, dead_off, fresh);
			if (s)
				return s;
		} else if (owner == VIRT_SLOT_FREED && !freed) {
			freed = s;
		}
	}
	if (!create || !freed)
		return NULL;
	return virt_slot_take(freed, VIRT_SLOT_FREED, key, dead_off, fresh);
}

#endif
