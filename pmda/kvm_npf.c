/*
 * The kvm family's nested-paging faults by kind ([kvm] npf = true): per
 * VM, the NPF / EPT-violation exits by what the host had to do (kvm.h
 * enum kvm_npf_kind), their count, time and log2 latency, from the BPF
 * map "npfs" (keyed by process and kind; the agent deletes exited
 * processes' entries).
 */
#include "kvm_int.h"
#include "vmid.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const npf_kind_names[KVM_NPF_KINDS] = {
	[KVM_NPF_MMIO] = "mmio", [KVM_NPF_MAJOR] = "major", [KVM_NPF_MINOR] = "minor",
	[KVM_NPF_ASYNC] = "async", [KVM_NPF_FAST] = "fast", [KVM_NPF_MAPPING] = "mapping",
	[KVM_NPF_RETRY] = "retry",
};

/* Why npf stays off with this method and these options (NULL: it can be
 * on): the fault's snapshot and its classification read the struct
 * kvm_vcpu, which the classic tracepoint's record lacks; the kind is told
 * at the entry that ends the exit, which counts-only mode does not load. */
static const char *npf_refused(const struct virt_family *fam, const char *method)
{
	if (!fam->opts[OPT_LATENCY].b)
		return "latency = false (no entry program)";
	if (strcmp(method, "tracepoint") == 0)
		return "the classic tracepoint method has no struct kvm_vcpu";
	if (!virt_tracepoint_exists("kvm", "kvm_page_fault"))
		return "tracepoint kvm:kvm_page_fault not found";
	return NULL;
}

/* npf: the switches of its hooks (kvm.c's kvm_switches), after
 * kvm_subs_configure: the entry program that classifies faults replaces
 * the plain or the subreasons' one. */
void kvm_npf_configure(struct virt_family *fam, struct kvm_bpf *skel, const char *method)
{
	struct kvm_state *st = fam->priv;
	const char *why = fam->opts[OPT_NPF].b ? npf_refused(fam, method) : NULL;

	if (why)
		virt_log(LOG_WARNING, "kvm: npf off with method %s: %s", method, why);
	st->npf.on = fam->opts[OPT_NPF].b && !why;
	st->entry_subs = st->sub.timed && !st->npf.on;
	st->entry_plain = st->entry_plain && !st->npf.on;
	st->npf.entry = st->npf.on && !st->sub.timed;
	st->npf.entry_subs = st->npf.on && st->sub.timed;
	if (st->npf.on)
		bpf_map__set_max_entries(skel->maps.npfs, st->npf.max);
}

/* "npfs" holds every VM's kinds; the agent reads it whole */
int kvm_npf_init(struct kvm_state *st, struct virt_family *fam)
{
	uint64_t n = fam->opts[OPT_MAX_VMS].u * KVM_NPF_KINDS;

	st->npf.rows = VIRT_TABLE_OF_SUMS(struct npf_entry, sums, STATS_WORDS);
	if (!fam->opts[OPT_NPF].b)
		return 0;
	st->npf.max = (uint32_t)n;
	st->npf.keys = calloc(st->npf.max, sizeof(*st->npf.keys));
	st->npf.vals = calloc(st->npf.max, sizeof(*st->npf.vals));
	return st->npf.keys && st->npf.vals ? 0 : -1;
}

void kvm_npf_free(struct kvm_state *st)
{
	free(st->npf.keys);
	free(st->npf.vals);
}

/* The map goes (a detach): what it counted stays in the rows' bases. */
void kvm_npf_forget(struct kvm_state *st)
{
	for (size_t i = 0; i < st->npf.rows.n; i++)
		virt_sums_rebase(&((struct npf_entry *)st->npf.rows.v[i])->sums);
}

/* The row of kind of VM vm, "<vm>/<kind>", made on first sight (found
 * again by name: a VM restarted under its name). */
static struct npf_entry *npf_row(struct kvm_state *st, const struct vm_entry *vm, uint32_t kind)
{
	char name[VIRT_NAME_MAX];
	int vmlen = snprintf(name, sizeof(name), "%.*s", VMID_NAME_MAX, vm->k.row.name);
	struct npf_entry *e;

	snprintf(name + vmlen, sizeof(name) - (size_t)vmlen, "/%s", npf_kind_names[kind]);
	e = virt_table_get_name(&st->npf.rows, virt_indom(VIRT_I_KVM_NPF),
				virt_indom(VIRT_I_KVM_NPF_HIST), name);
	if (!e)
		return NULL;
	e->vmlen = vmlen;
	e->kind = kind;
	return e;
}

/* Entry i of the read of "npfs" if its process is alive (live): a live
 * process's entry goes to its row's sum; an exited one's to its row's
 * base, and leaves the map. */
static void npf_take(struct kvm_state *st, int i, bool live)
{
	uint64_t key = st->npf.keys[i];
	uint32_t tgid = KVM_NPF_TGID(key), kind = KVM_NPF_KIND(key);
	struct vm_entry *vm = kvm_vm_of(st, tgid);
	struct npf_entry *e;

	if (kind >= KVM_NPF_KINDS)
		return;
	if (!vm) {		/* no row yet (next refresh), or never one */
		if (!live && !virt_pid_alive(tgid))
			virt_map_delete(bpf_map__fd(st->skel->maps.npfs), &key);
		return;
	}
	if (kvm_vm_alive(vm) != live || !(e = npf_row(st, vm, kind)))
		return;
	e->tgid = tgid;
	(live ? virt_sums_add : virt_sums_fold)(&e->sums, (const uint64_t *)&st->npf.vals[i]);
	if (!live)
		virt_map_delete(bpf_map__fd(st->skel->maps.npfs), &key);
}

/* "npfs", while npf is on (before the VM rows, as "subs": kvm_refresh
 * says the order): exited processes' entries first, so that the sums
 * begun after them count them. */
int kvm_npf_read(struct kvm_state *st)
{
	int n;

	if (!st->npf.on)
		return 0;
	n = virt_map_dump(bpf_map__fd(st->skel->maps.npfs), st->npf.keys, sizeof(*st->npf.keys),
			  st->npf.vals, sizeof(*st->npf.vals), st->npf.max);
	for (int i = 0; i < n; i++)
		npf_take(st, i, false);
	for (size_t i = 0; i < st->npf.rows.n; i++)
		virt_sums_begin(&((struct npf_entry *)st->npf.rows.v[i])->sums);
	for (int i = 0; i < n; i++)
		npf_take(st, i, true);
	return n < 0 ? n : 0;
}

/* The row's words from its sums: count (count word + histogram mass,
 * kvm.h struct kvm_stats), time, histogram. */
static void npf_row_set(struct npf_entry *e)
{
	const uint64_t *w = e->sums.sum;
	uint64_t v[2] = { w[0], w[1] };

	for (unsigned int b = 0; b < VIRT_HIST_BUCKETS; b++)
		v[0] += w[2 + b];
	virt_row_set(&e->k.row, v, 2, &w[2]);
}

static bool npf_vm_known(struct kvm_state *st, const struct npf_entry *e)
{
	char vm[VIRT_NAME_MAX];

	snprintf(vm, sizeof(vm), "%.*s", e->vmlen, e->k.row.name);
	return virt_table_find_name(&st->vms, vm) != NULL;
}

/* Each VM's major time on its own row (virt.kvm.vm.npf_major_time). */
static void npf_vm_major(struct kvm_state *st)
{
	for (size_t i = 0; i < st->vms.n; i++) {
		struct vm_entry *vm = kvm_vm_at(st, i);

		vm->npf_on = st->npf.on;
		vm->npf_major_ns = 0;
	}
	for (size_t i = 0; i < st->npf.rows.n; i++) {
		const struct npf_entry *e = (const struct npf_entry *)st->npf.rows.v[i];
		char name[VIRT_NAME_MAX];
		struct vm_entry *vm;

		if (e->kind != KVM_NPF_MAJOR)
			continue;
		snprintf(name, sizeof(name), "%.*s", e->vmlen, e->k.row.name);
		if ((vm = virt_table_find_name(&st->vms, name)))
			vm->npf_major_ns = e->k.row.v[W_TIME];
	}
}

/* (After the VM rows.) Rows of live VMs shown, of exited named VMs
 * retired (the VM restarted under its name continues them), others freed. */
void kvm_npf_set(struct kvm_state *st)
{
	for (size_t i = 0; i < st->npf.rows.n;) {
		struct npf_entry *e = (struct npf_entry *)st->npf.rows.v[i];

		if (!e->sums.live && !npf_vm_known(st, e)) {
			virt_table_remove(&st->npf.rows, e);	/* the last entry takes its place */
			continue;
		}
		npf_row_set(e);
		if (e->sums.live)
			virt_row_expose(&e->k.row, false);
		else
			virt_row_retire(&e->k.row);
		i++;
	}
	npf_vm_major(st);
}
