/* Keyed tables: a family's rows found by a 64-bit key or by name
 * (pmda/core/rows.h). */
#include "virt.h"
#include "rows.h"

#include <stdlib.h>
#include <string.h>

uint64_t virt_name_key(const char *name)
{
	uint64_t h = 0xcbf29ce484222325ull;	/* FNV-1a */

	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		h = (h ^ *c) * 0x100000001b3ull;
	return h;
}

static size_t key_slot(uint64_t key, size_t nslot)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;	/* murmur3's fmix64 */
	key ^= key >> 33;
	return (size_t)key & (nslot - 1);
}

/* The index position of entry i's key, from its home slot on. */
static void index_entry(struct virt_table *t, size_t i)
{
	size_t h = key_slot(t->v[i]->key, t->nslot);

	while (t->slot[h])
		h = (h + 1) & (t->nslot - 1);
	t->slot[h] = (uint32_t)i + 1;
}

/* (Re)build the index, growing it to keep it at most half full. */
static int reindex(struct virt_table *t)
{
	size_t nslot = t->nslot ? t->nslot : 64;

	while (nslot <= 2 * t->n)
		nslot *= 2;
	if (nslot != t->nslot) {
		uint32_t *slot = calloc(nslot, sizeof(*slot));

		if (!slot)
			return -1;
		free(t->slot);
		t->slot = slot;
		t->nslot = nslot;
	} else {
		memset(t->slot, 0, nslot * sizeof(*t->slot));
	}
	for (size_t i = 0; i < t->n; i++)
		index_entry(t, i);
	return 0;
}

void *virt_table_find_if(const struct virt_table *t, uint64_t key,
			 bool (*match)(const void *entry, const void *arg), const void *arg)
{
	if (!t->nslot)
		return NULL;
	for (size_t h = key_slot(key, t->nslot); t->slot[h]; h = (h + 1) & (t->nslot - 1)) {
		struct virt_keyed *e = t->v[t->slot[h] - 1];

		if (e->key == key && (!match || match(e, arg)))
			return e;
	}
	return NULL;
}

void *virt_table_find(const struct virt_table *t, uint64_t key)
{
	return virt_table_find_if(t, key, NULL, NULL);
}

static bool has_name(const void *entry, const void *name)
{
	return strcmp(((const struct virt_keyed *)entry)->row.name, name) == 0;
}

void *virt_table_find_name(const struct virt_table *t, const char *name)
{
	return virt_table_find_if(t, virt_name_key(name), has_name, name);
}

static struct virt_sums *sums_of(const struct virt_table *t, struct virt_keyed *e)
{
	return (struct virt_sums *)(void *)((char *)e + t->sums_off);
}

/* The entry's row and sums released, the entry freed. */
static void entry_free(const struct virt_table *t, struct virt_keyed *e)
{
	virt_row_release(&e->row);
	if (t->nsums)
		virt_sums_release(sums_of(t, e));
	free(e);
}

void *virt_table_add(struct virt_table *t, uint64_t key, pmInDom indom,
		     pmInDom hindom, const char *name)
{
	struct virt_keyed *e;

	if (VIRT_GROW(t->v, t->cap, t->n + 1) < 0 || !(e = calloc(1, t->entry_size)))
		return NULL;
	if (t->nsums && virt_sums_init(sums_of(t, e), t->nsums) < 0) {
		free(e);
		return NULL;
	}
	e->key = key;
	virt_row_init(&e->row, indom, hindom, name);
	t->v[t->n++] = e;
	if (t->nslot <= 2 * t->n) {
		if (reindex(t) < 0) {
			entry_free(t, t->v[--t->n]);
			return NULL;
		}
	} else {
		index_entry(t, t->n - 1);
	}
	return e;
}

void *virt_table_get_name(struct virt_table *t, pmInDom indom, pmInDom hindom,
			  const char *name)
{
	void *e = virt_table_find_name(t, name);

	return e ? e : virt_table_add(t, virt_name_key(name), indom, hindom, name);
}

void virt_table_rekey(struct virt_table *t, void *entry, uint64_t key)
{
	((struct virt_keyed *)entry)->key = key;
	reindex(t);		/* same size: cannot fail */
}

/* Rare (a VM or queue gone for good): remove and rebuild the index. */
void virt_table_remove(struct virt_table *t, void *entry)
{
	for (size_t i = 0; i < t->n; i++) {
		if (t->v[i] != entry)
			continue;
		entry_free(t, t->v[i]);
		t->v[i] = t->v[--t->n];
		reindex(t);		/* same size: cannot fail */
		return;
	}
}

void virt_table_clear(struct virt_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		entry_free(t, t->v[i]);
	free(t->v);
	free(t->slot);
	t->v = NULL;
	t->slot = NULL;
	t->n = t->cap = t->nslot = 0;
}
