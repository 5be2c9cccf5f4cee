/*
 * Slot tables: the agent's side of a BPF_F_MMAPABLE array of slots, one
 * per kernel object (a queue), that the BPF side claims and counts in and
 * the agent reads in place (no bpf() call per refresh). A slot's owner
 * word is 0 (never used), VIRT_SLOT_FREED (given back by the agent) or
 * the object's address; the BPF side claims a slot with a compare-and-
 * swap, sets its "filled" word once the slot is filled in, and its dead
 * word when the object dies, after which it writes the slot no more.
 * Only the agent frees a slot.
 *
 * The agent keeps a record per slot: the owner it took, the row's sums
 * the slot counts in, and the slot's words at the latest read. A dead
 * slot is buried: its counters go into its sums' base and the slot goes
 * back to the BPF side. What names an object and when one is buried is
 * the family's: it claims new slots through a callback and walks the
 * records.
 */
#ifndef VIRT_SLOTS_H
#define VIRT_SLOTS_H

#include "rows.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VIRT_SLOT_FREED 1

/* Where things are in a family's slot struct (offsets in bytes; the
 * struct's size a multiple of 8 bytes, every word 8-byte aligned). The
 * words the agent reads are nwords u64s from words; of them, the counters
 * are first ... nwords - 1, less the dead word. */
struct virt_slot_layout {
	size_t size;
	size_t owner;			/* the owner word */
	size_t filled;			/* nonzero once the BPF side filled the slot in */
	size_t words;
	unsigned int nwords;
	unsigned int first;		/* the first counter word, of the words read */
	unsigned int dead;		/* the dead word, of the words read */
};

struct virt_slot_rec {
	uint64_t owner;			/* the owner taken; 0: no record */
	struct virt_sums *sums;		/* where its counters go (nwords - first words) */
	void *entry;			/* the family's */
	uint64_t *last;			/* the words at the latest read, the dead word 0 */
	bool dead;			/* the dead word was set */
	bool seen;			/* in the latest read */
};

struct virt_slots {
	const struct virt_slot_layout *lay;
	unsigned char *mem;		/* the array; NULL: none */
	size_t n, bytes;		/* slots; bytes mapped (0: the caller's memory) */
	struct virt_slot_rec *rec;	/* one per slot */
	uint64_t *words;		/* the records' last words */
};

/* Claim slot k for its owner rec->owner (a first sight; rec->last holds
 * its words): set rec->sums (and rec->entry); false: not now. */
typedef bool (*virt_slot_claim_fn)(void *ctx, struct virt_slots *t, size_t k,
				   struct virt_slot_rec *rec);

/* The array's size for want objects, as a power of two: the smallest
 * bits with 1 << bits >= want, at least 1 (the BPF side hashes into it). */
unsigned int virt_slots_bits(unsigned long want);
/* Map the BPF array map in (virt_map_mmap); 0, or -1 with why. */
struct bpf_map;
int virt_slots_map(struct virt_slots *t, const struct virt_slot_layout *lay,
		   const struct bpf_map *map, char *why, size_t len);
/* Every record's counters into its sums' base, the records forgotten,
 * the array unmapped (the BPF object is going). The sums keep their sum:
 * virt_sums_begin makes it the base. */
void virt_slots_unmap(struct virt_slots *t);
/* The same on n slots in memory the caller owns (unit tests). */
int virt_slots_open(struct virt_slots *t, const struct virt_slot_layout *lay, void *mem,
		    size_t n);
void virt_slots_close(struct virt_slots *t);

/* Slot k's struct in the array. */
void *virt_slot_at(const struct virt_slots *t, size_t k);
/* Read every filled-in slot in use into its record, claiming slots of new
 * owners; records not read are left with seen false. */
void virt_slots_read(struct virt_slots *t, virt_slot_claim_fn claim, void *ctx);
/* Slot k's object is gone: its counters into its sums' base, the record
 * cleared, and the slot given back if give_back. */
void virt_slots_bury(struct virt_slots *t, size_t k, bool give_back);
/* Give slot k back to the BPF side: every word zeroed but the owner and
 * the dead mark (a dead slot is skipped by the BPF side, so nothing writes
 * it meanwhile; whoever claims it next clears the mark), then the owner
 * word VIRT_SLOT_FREED. */
void virt_slots_free(struct virt_slots *t, size_t k);
/* Each record's counters into its sums (virt_sums_add), after the family
 * began its rows' sums. */
void virt_slots_sum(struct virt_slots *t);

#endif
