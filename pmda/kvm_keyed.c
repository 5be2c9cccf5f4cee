/*
 * The kvm family's reader of its BPF hashes keyed by (VMM process, kind)
 * (kvm_keyed.h): one bulk read of each map per refresh, its entries
 * summed into per-VM rows, exited processes' entries folded and deleted.
 */
#include "kvm_int.h"
#include "vmid.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The maps' users (kvm_subs.c, kvm_npf.c, kvm_irqs.c) */
static const struct kvm_keyed_ops *const keyed_ops[KVM_KEYED_MAPS] = {
	[KVM_KEYED_SUBS] = &kvm_subs_keyed,
	[KVM_KEYED_NPF] = &kvm_npf_keyed,
	[KVM_KEYED_IRQS] = &kvm_irqs_keyed,
};

uint64_t kvm_stats_count(const uint64_t *w)
{
	uint64_t n = w[0];

	for (unsigned int b = 0; b < VIRT_HIST_BUCKETS; b++)
		n += w[2 + b];
	return n;
}

/* The rows' tables, and each map's read buffers if its option wants it */
int kvm_keyed_init(struct kvm_state *st, const struct virt_family *fam)
{
	for (unsigned int m = 0; m < KVM_KEYED_MAPS; m++) {
		struct kvm_keyed *r = &st->keyed[m];
		const struct kvm_keyed_ops *ops = keyed_ops[m];

		r->ops = ops;
		for (unsigned int t = 0; t < ops->ntables; t++)
			r->rows[t] = VIRT_TABLE_OF_SUMS(struct kvm_keyed_row, sums,
							ops->tables[t].words);
		if (!(r->max = ops->max(fam)))
			continue;
		r->keys = calloc(r->max, ops->key_size);
		r->vals = calloc(r->max, ops->value_size);
		if (!r->keys || !r->vals)
			return -1;
	}
	return 0;
}

void kvm_keyed_free(struct kvm_state *st)
{
	for (unsigned int m = 0; m < KVM_KEYED_MAPS; m++) {
		free(st->keyed[m].keys);
		free(st->keyed[m].vals);
		st->keyed[m].keys = st->keyed[m].vals = NULL;
	}
}

static struct kvm_keyed_row *row_at(const struct kvm_keyed *r, unsigned int t, size_t i)
{
	return (struct kvm_keyed_row *)r->rows[t].v[i];
}

/* Each row's sums, begun (sum = base) or rebased */
static void keyed_each(struct kvm_keyed *r, void (*how)(struct virt_sums *))
{
	for (unsigned int t = 0; t < KVM_KEYED_TABLES; t++)
		for (size_t i = 0; i < r->rows[t].n; i++)
			how(&row_at(r, t, i)->sums);
}

/* The maps go (a detach): what they counted stays in the rows' bases. */
void kvm_keyed_forget(struct kvm_state *st)
{
	for (unsigned int m = 0; m < KVM_KEYED_MAPS; m++)
		keyed_each(&st->keyed[m], virt_sums_rebase);
}

bool kvm_keyed_indom(enum virt_indom_id indom)
{
	for (unsigned int m = 0; m < KVM_KEYED_MAPS; m++)
		for (unsigned int t = 0; t < keyed_ops[m]->ntables; t++)
			if (keyed_ops[m]->tables[t].indom == indom)
				return true;
	return false;
}

static int map_fd(const struct kvm_state *st, size_t map)
{
	return bpf_map__fd(*(struct bpf_map *const *)(const void *)((const char *)st->skel + map));
}

/* kvm_vm_alive(), once per VM and read of a map */
static bool vm_alive(const struct kvm_state *st, struct vm_entry *vm)
{
	if (vm->keyed_read != st->keyed_reads) {
		vm->keyed_read = st->keyed_reads;
		vm->keyed_alive = kvm_vm_alive(vm);
	}
	return vm->keyed_alive;
}

/* The row of key (its kind, kind) of VM vm, made on first sight (found
 * again by name: a VM restarted under its name). */
static struct kvm_keyed_row *keyed_row(struct kvm_keyed *r, const struct vm_entry *vm,
				       const void *key, unsigned int kind)
{
	const struct kvm_keyed_kind *kd = &r->ops->kinds[kind];
	const struct kvm_keyed_table *t = &r->ops->tables[kd->table];
	char name[VIRT_NAME_MAX];
	int vmlen = snprintf(name, sizeof(name), "%.*s", VMID_NAME_MAX, vm->k.row.name);
	struct kvm_keyed_row *e;

	if (kd->suffix)
		snprintf(name + vmlen, sizeof(name) - (size_t)vmlen, "%s", kd->suffix);
	else
		r->ops->name(key, name + vmlen, sizeof(name) - (size_t)vmlen);
	e = virt_table_get_name(&r->rows[kd->table], virt_indom(t->indom),
				t->hindom == VIRT_NINDOMS ? PM_INDOM_NULL : virt_indom(t->hindom), name);
	if (!e)
		return NULL;
	e->vmlen = vmlen;
	e->kind = kind;
	return e;
}

/* Entry i's value as its row's sums count it (w: room for them). */
static const uint64_t *keyed_words(const struct kvm_keyed *r, int i, unsigned int kind,
				   uint64_t w[STATS_WORDS])
{
	const struct kvm_keyed_kind *kd = &r->ops->kinds[kind];
	const struct kvm_keyed_table *t = &r->ops->tables[kd->table];
	const uint64_t *v = (const uint64_t *)(const void *)((const char *)r->vals +
							       (size_t)i * r->ops->value_size);

	if (t->from == KVM_KEYED_STATS) {
		memcpy(w, v, STATS_WORDS * sizeof(*w));
		w[W_COUNT] = kvm_stats_count(v);
	} else if (t->from == KVM_KEYED_COUNT) {
		memset(w, 0, t->words * sizeof(*w));
		w[kd->word] = v[0];
	} else {
		return v;
	}
	return w;
}

/* An exited process's entry: out of the map (and its process out of the
 * used map). */
static void keyed_delete(const struct kvm_state *st, const struct kvm_keyed *r, const void *key,
			 uint32_t tgid)
{
	virt_map_delete(map_fd(st, r->ops->map), key);
	if (r->ops->used_map)
		virt_map_delete(map_fd(st, r->ops->used_map), &tgid);
}

/* Entry i of the read if its process is alive (live): a live process's
 * entry goes to its row's sum; an exited one's to its row's base, and
 * leaves the map. */
static void keyed_take(struct kvm_state *st, struct kvm_keyed *r, int i, bool live)
{
	const void *key = (const char *)r->keys + (size_t)i * r->ops->key_size;
	uint64_t w[STATS_WORDS];
	struct kvm_keyed_row *e;
	struct vm_entry *vm;
	unsigned int kind;
	uint32_t tgid;

	r->ops->decode(key, &tgid, &kind);
	if (kind >= r->ops->nkinds)
		return;
	if (!(vm = kvm_vm_of(st, tgid))) {	/* no row yet (next refresh), or never one */
		if (!live && !virt_pid_alive(tgid))
			keyed_delete(st, r, key, tgid);
		return;
	}
	if (vm_alive(st, vm) != live || !(e = keyed_row(r, vm, key, kind)))
		return;
	e->tgid = tgid;
	(live ? virt_sums_add : virt_sums_fold)(&e->sums, keyed_words(r, i, kind, w));
	if (!live)
		keyed_delete(st, r, key, tgid);
}

/* The map, whole, while its hooks are loaded: exited processes' entries
 * first, so that the sums begun after them count them. */
static int keyed_read(struct kvm_state *st, struct kvm_keyed *r)
{
	int n;

	if (!r->on)
		return 0;
	n = virt_map_dump(map_fd(st, r->ops->map), r->keys, r->ops->key_size, r->vals,
			  r->ops->value_size, r->max);
	st->keyed_reads++;
	for (int i = 0; i < n; i++)
		keyed_take(st, r, i, false);
	keyed_each(r, virt_sums_begin);
	for (int i = 0; i < n; i++)
		keyed_take(st, r, i, true);
	return n < 0 ? n : 0;
}

/* (Before the VM rows: kvm_refresh says the order.) */
int kvm_keyed_read(struct kvm_state *st)
{
	int err = 0;

	for (unsigned int m = 0; m < KVM_KEYED_MAPS; m++)
		err |= keyed_read(st, &st->keyed[m]);
	return err;
}

/* Is vm the VM of row e (the first vmlen bytes of its name)? */
static bool vm_is(const struct vm_entry *vm, const struct kvm_keyed_row *e)
{
	return strncmp(vm->k.row.name, e->k.row.name, (size_t)e->vmlen) == 0 &&
	       vm->k.row.name[e->vmlen] == '\0';
}

/* Its process's VM while that one runs it; else by name: a retired VM is
 * keyed by its name, a VM restarted under its name by its new process,
 * which the row then follows (one look through the VMs). */
struct vm_entry *kvm_keyed_vm(struct kvm_state *st, struct kvm_keyed_row *e)
{
	char name[VIRT_NAME_MAX];
	struct vm_entry *vm = kvm_vm_of(st, e->tgid);

	if (vm && vm_is(vm, e))
		return vm;
	snprintf(name, sizeof(name), "%.*s", e->vmlen, e->k.row.name);
	if ((vm = virt_table_find_name(&st->vms, name)))
		return vm;
	for (size_t i = 0; i < st->vms.n; i++)
		if (vm_is(vm = kvm_vm_at(st, i), e)) {
			e->tgid = (uint32_t)vm->k.key;
			return vm;
		}
	return NULL;
}

/* A kept row's words from its sums; shown while its VM lives (once it
 * counted), else retired. */
static void keyed_show(const struct kvm_keyed *r, unsigned int t, struct kvm_keyed_row *e,
		       bool vm_live)
{
	const struct kvm_keyed_table *tb = &r->ops->tables[t];
	const uint64_t *s = e->sums.sum;
	bool counted = false;

	for (unsigned int w = 0; w < tb->shown_by; w++)
		counted = counted || s[w] != 0;
	e->timed = r->timed;
	if (tb->from == KVM_KEYED_STATS)
		virt_row_set(&e->k.row, s, 2, &s[2]);
	if (vm_live)
		virt_row_expose(&e->k.row, counted);
	else
		virt_row_retire(&e->k.row);
}

/* Rows of live VMs shown, of exited named VMs retired (the VM restarted
 * under its name continues them), others freed. */
static void keyed_set(struct kvm_state *st, struct kvm_keyed *r)
{
	for (unsigned int t = 0; t < r->ops->ntables; t++) {
		for (size_t i = 0; i < r->rows[t].n;) {
			struct kvm_keyed_row *e = row_at(r, t, i);
			const struct vm_entry *vm = e->sums.live ? NULL : kvm_keyed_vm(st, e);

			if (!e->sums.live && !vm) {
				virt_table_remove(&r->rows[t], e);	/* the last takes its place */
				continue;
			}
			keyed_show(r, t, e, e->sums.live || !vm->retired);
			i++;
		}
	}
	if (r->ops->after_set)
		r->ops->after_set(st);
}

/* (After the VM rows: kvm_refresh says the order.) */
void kvm_keyed_set(struct kvm_state *st)
{
	for (unsigned int m = 0; m < KVM_KEYED_MAPS; m++)
		keyed_set(st, &st->keyed[m]);
}
