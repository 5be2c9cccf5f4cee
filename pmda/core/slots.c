#include "virt.h"
#include "slots.h"

#include <bpf/libbpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static uint64_t *slot_word(const struct virt_slots *t, size_t k, size_t off)
{
	return (uint64_t *)(void *)(t->mem + k * t->lay->size + off);
}

void *virt_slot_at(const struct virt_slots *t, size_t k)
{
	return t->mem + k * t->lay->size;
}

unsigned int virt_slots_bits(unsigned long want)
{
	unsigned int bits = 1;

	while ((1UL << bits) < want)
		bits++;
	return bits;
}

int virt_slots_open(struct virt_slots *t, const struct virt_slot_layout *lay, void *mem,
		    size_t n)
{
	*t = (struct virt_slots){ .lay = lay, .mem = mem, .n = n };
	t->rec = calloc(n ? n : 1, sizeof(*t->rec));
	t->words = calloc(n * lay->nwords + 1, sizeof(*t->words));
	if (!t->rec || !t->words) {
		free(t->rec);
		free(t->words);
		*t = (struct virt_slots){ 0 };
		return -1;
	}
	for (size_t k = 0; k < n; k++)
		t->rec[k].last = t->words + k * lay->nwords;
	return 0;
}

static void fold(const struct virt_slots *t, struct virt_slot_rec *rec)
{
	virt_sums_fold(rec->sums, rec->last + t->lay->first);
}

void virt_slots_close(struct virt_slots *t)
{
	for (size_t k = 0; k < t->n; k++)
		if (t->rec[k].owner)
			fold(t, &t->rec[k]);
	free(t->rec);
	free(t->words);
	*t = (struct virt_slots){ 0 };
}

int virt_slots_map(struct virt_slots *t, const struct virt_slot_layout *lay,
		   const struct bpf_map *map, char *why, size_t len)
{
	size_t bytes;
	void *mem = virt_map_mmap(map, &bytes, why, len);

	if (!mem)
		return -1;
	if (virt_slots_open(t, lay, mem, bpf_map__max_entries(map)) < 0) {
		snprintf(why, len, "out of memory");
		munmap(mem, bytes);
		return -1;
	}
	t->bytes = bytes;
	return 0;
}

void virt_slots_unmap(struct virt_slots *t)
{
	void *mem = t->mem;
	size_t bytes = t->bytes;

	virt_slots_close(t);
	if (mem && bytes)
		munmap(mem, bytes);
}

/* The slot's words, each an aligned 8-byte load: the BPF side may be
 * adding to them. */
static void read_words(const struct virt_slots *t, size_t k, uint64_t *out)
{
	const uint64_t *w = slot_word(t, k, t->lay->words);

	for (unsigned int i = 0; i < t->lay->nwords; i++)
		out[i] = __atomic_load_n(&w[i], __ATOMIC_RELAXED);
}

/* Slot k's words into its record, claimed for its owner on first sight;
 * a slot being claimed shows once filled in. */
static void read_slot(struct virt_slots *t, size_t k, virt_slot_claim_fn claim, void *ctx)
{
	struct virt_slot_rec *rec = &t->rec[k];
	uint64_t owner = __atomic_load_n(slot_word(t, k, t->lay->owner), __ATOMIC_ACQUIRE);

	if (owner <= VIRT_SLOT_FREED ||
	    !__atomic_load_n(slot_word(t, k, t->lay->filled), __ATOMIC_ACQUIRE))
		return;
	/* only the agent frees a slot: a record there is this owner's */
	if (rec->owner && rec->owner != owner)
		return;
	read_words(t, k, rec->last);
	if (!rec->owner) {
		rec->owner = owner;
		if (!claim(ctx, t, k, rec)) {
			rec->owner = 0;
			return;
		}
	}
	rec->dead = rec->last[t->lay->dead] != 0;
	rec->last[t->lay->dead] = 0;
	rec->seen = true;
}

void virt_slots_read(struct virt_slots *t, virt_slot_claim_fn claim, void *ctx)
{
	for (size_t k = 0; k < t->n; k++) {
		t->rec[k].seen = false;
		read_slot(t, k, claim, ctx);
	}
}

void virt_slots_free(struct virt_slots *t, size_t k)
{
	const struct virt_slot_layout *lay = t->lay;
	size_t dead = lay->words + lay->dead * sizeof(uint64_t);

	for (size_t off = 0; off < lay->size; off += sizeof(uint64_t))
		if (off != lay->owner && off != dead)
			__atomic_store_n(slot_word(t, k, off), 0, __ATOMIC_RELAXED);
	__atomic_store_n(slot_word(t, k, lay->owner), VIRT_SLOT_FREED, __ATOMIC_RELEASE);
}

void virt_slots_bury(struct virt_slots *t, size_t k, bool give_back)
{
	struct virt_slot_rec *rec = &t->rec[k];

	fold(t, rec);
	if (give_back && t->mem)
		virt_slots_free(t, k);
	memset(rec->last, 0, t->lay->nwords * sizeof(*rec->last));
	*rec = (struct virt_slot_rec){ .last = rec->last };
}

void virt_slots_sum(struct virt_slots *t)
{
	for (size_t k = 0; k < t->n; k++)
		if (t->rec[k].owner)
			virt_sums_add(t->rec[k].sums, t->rec[k].last + t->lay->first);
}
