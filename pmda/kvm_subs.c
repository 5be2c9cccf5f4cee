/*
 * The kvm family's sub-reasons (subreasons = true): what exits are about,
 * per VM: port I/O by port, MSR accesses by MSR, CPUID by leaf, MMIO by
 * address, from the BPF map "subs".
 */
#include "kvm_int.h"
#include "vmid.h"

#include <stdio.h>
#include <stdlib.h>

/* Per kind: its instance domain and its directions' names (none: one
 * direction) */
static const struct sub_kind {
	enum virt_indom_id indom;
	const char *dir[2];
} sub_kinds[KVM_SUB_KINDS] = {
	[KVM_SUB_PIO] = { VIRT_I_KVM_PIO, { "in", "out" } },
	[KVM_SUB_MSR] = { VIRT_I_KVM_MSR, { "rd", "wr" } },
	[KVM_SUB_CPUID] = { VIRT_I_KVM_CPUID, { NULL, NULL } },
	[KVM_SUB_MMIO] = { VIRT_I_KVM_MMIO, { "rd", "wr" } },
};

/* Sub-reasons: the switches of their hooks (kvm.c's kvm_switches). */
void kvm_subs_configure(struct virt_family *fam, struct kvm_bpf *skel)
{
	struct kvm_state *st = fam->priv;
	bool on = fam->opts[OPT_SUBREASONS].b, latency = fam->opts[OPT_LATENCY].b;

	skel->rodata->subreasons = on;
	skel->rodata->sub_top = (__u32)fam->opts[OPT_SUB_TOP].u;
	st->sub.on = on;
	st->sub.timed = on && latency;
	st->entry_plain = latency && !on;
	/* Intel fast MMIO (kvm_fast_mmio, arch/x86/kvm/trace.h): a hook of
	 * its own, left out where the kernel lacks the tracepoint */
	st->fast_mmio_on = on && virt_tracepoint_exists("kvm", "kvm_fast_mmio");
	if (!on)
		return;
	bpf_map__set_max_entries(skel->maps.subs, st->sub.max);
	bpf_map__set_max_entries(skel->maps.sub_used, (__u32)fam->opts[OPT_MAX_VMS].u);
}

/* subreasons: "subs" holds every VM's sub_top keys and "other" of each
 * kind; the agent reads it whole */
int kvm_subs_init(struct kvm_state *st, struct virt_family *fam)
{
	uint64_t n = fam->opts[OPT_MAX_VMS].u * KVM_SUB_KINDS * (fam->opts[OPT_SUB_TOP].u + 1);

	for (unsigned int k = 0; k < KVM_SUB_KINDS; k++)
		st->sub.rows[k] = VIRT_TABLE_OF_SUMS(struct sub_entry, sums, 2);
	if (!fam->opts[OPT_SUBREASONS].b)
		return 0;
	st->sub.max = n > (1u << 20) ? 1u << 20 : (uint32_t)n;
	st->sub.keys = calloc(st->sub.max, sizeof(*st->sub.keys));
	st->sub.vals = calloc(st->sub.max, sizeof(*st->sub.vals));
	return st->sub.keys && st->sub.vals ? 0 : -1;
}

void kvm_subs_free(struct kvm_state *st)
{
	free(st->sub.keys);
	free(st->sub.vals);
}

/* Each row's sums, begun (sum = base) or rebased (the map goes: what it
 * counted stays in the base). */
static void subs_each(struct kvm_state *st, void (*how)(struct virt_sums *))
{
	for (unsigned int k = 0; k < KVM_SUB_KINDS; k++)
		for (size_t i = 0; i < st->sub.rows[k].n; i++)
			how(&((struct sub_entry *)st->sub.rows[k].v[i])->sums);
}

void kvm_subs_forget(struct kvm_state *st)
{
	subs_each(st, virt_sums_rebase);
}

/* Is indom one of the sub-reasons' (their rows' labels)? */
bool kvm_sub_indom(enum virt_indom_id indom)
{
	for (unsigned int k = 0; k < KVM_SUB_KINDS; k++)
		if (sub_kinds[k].indom == indom)
			return true;
	return false;
}

/* "/<key>[/<dir>]" of a sub-reason key, or "/other" */
static void sub_key_name(char *buf, size_t len, const struct kvm_sub_key *k)
{
	const char *dir = sub_kinds[k->kind].dir[k->dir & 1];

	if (k->code == KVM_SUB_OTHER)
		snprintf(buf, len, "/other");
	else if (dir)
		snprintf(buf, len, "/0x%llx/%s", (unsigned long long)k->code, dir);
	else
		snprintf(buf, len, "/0x%llx", (unsigned long long)k->code);
}

/* The row of key k of VM vm, made on first sight (found again by name: a
 * VM restarted under its name). */
static struct sub_entry *sub_row(struct kvm_state *st, const struct vm_entry *vm,
				 const struct kvm_sub_key *k)
{
	char name[VIRT_NAME_MAX];
	int vmlen = snprintf(name, sizeof(name), "%.*s", VMID_NAME_MAX, vm->k.row.name);
	struct sub_entry *e;

	sub_key_name(name + vmlen, sizeof(name) - (size_t)vmlen, k);
	e = virt_table_get_name(&st->sub.rows[k->kind], virt_indom(sub_kinds[k->kind].indom),
				PM_INDOM_NULL, name);
	if (!e)
		return NULL;
	e->vmlen = vmlen;
	return e;
}

/* kvm_vm_alive(), once per VM and read of "subs" (a stat of /proc) */
static bool sub_vm_alive(const struct kvm_state *st, struct vm_entry *vm)
{
	if (vm->subs_gen != st->sub.gen) {
		vm->subs_gen = st->sub.gen;
		vm->subs_alive = kvm_vm_alive(vm);
	}
	return vm->subs_alive;
}

/* An exited process's entry: out of "subs", and its key count with it. */
static void sub_delete(struct kvm_state *st, const struct kvm_sub_key *k)
{
	virt_map_delete(bpf_map__fd(st->skel->maps.subs), k);
	virt_map_delete(bpf_map__fd(st->skel->maps.sub_used), &k->tgid);
}

/* Entry i of the read of "subs" if its process is alive (live): a live
 * process's entry goes to its row's sum; an exited one's to its row's
 * base, and leaves the map. */
static void sub_take(struct kvm_state *st, int i, bool live)
{
	const struct kvm_sub_key *k = &st->sub.keys[i];
	const uint64_t *w = (const uint64_t *)&st->sub.vals[i];	/* count, time */
	struct vm_entry *vm = kvm_vm_of(st, k->tgid);
	struct sub_entry *e;

	if (k->kind >= KVM_SUB_KINDS)
		return;
	if (!vm) {		/* no row yet (next refresh), or never one */
		if (!live && !virt_pid_alive(k->tgid))
			sub_delete(st, k);
		return;
	}
	if (sub_vm_alive(st, vm) != live || !(e = sub_row(st, vm, k)))
		return;
	e->tgid = k->tgid;
	(live ? virt_sums_add : virt_sums_fold)(&e->sums, w);
	if (!live)
		sub_delete(st, k);
}

/* "subs", while subreasons are on (before the VM rows: kvm_refresh says
 * the order): exited
 * processes' entries first, so that the sums begun after them count them. */
int kvm_subs_read(struct kvm_state *st)
{
	int n;

	if (!st->sub.on)
		return 0;
	n = virt_map_dump(bpf_map__fd(st->skel->maps.subs), st->sub.keys, sizeof(*st->sub.keys),
			      st->sub.vals, sizeof(*st->sub.vals), st->sub.max);

	st->sub.gen++;
	for (int i = 0; i < n; i++)
		sub_take(st, i, false);
	subs_each(st, virt_sums_begin);
	for (int i = 0; i < n; i++)
		sub_take(st, i, true);
	return n < 0 ? n : 0;
}

/* Is the VM of a sub-reason row still known (live, or exited and kept
 * under its name)? */
static bool sub_vm_known(struct kvm_state *st, const struct sub_entry *e)
{
	char vm[VIRT_NAME_MAX];

	snprintf(vm, sizeof(vm), "%.*s", e->vmlen, e->k.row.name);
	return virt_table_find_name(&st->vms, vm) != NULL;
}

/* (After the VM rows: kvm_refresh says the order.) Rows of live VMs
 * shown, of exited named VMs retired (the VM restarted under its name
 * continues them), others freed. */
void kvm_subs_set(struct kvm_state *st)
{
	for (unsigned int k = 0; k < KVM_SUB_KINDS; k++) {
		for (size_t i = 0; i < st->sub.rows[k].n;) {
			struct sub_entry *e = (struct sub_entry *)st->sub.rows[k].v[i];

			if (!e->sums.live && !sub_vm_known(st, e)) {
				virt_table_remove(&st->sub.rows[k], e);	/* the last entry takes its place */
				continue;
			}
			e->timed = st->sub.timed;
			if (e->sums.live)
				virt_row_expose(&e->k.row, e->sums.sum[W_COUNT] != 0);
			else
				virt_row_retire(&e->k.row);
			i++;
		}
	}
}
