/*
 * The kvm family's nested-paging faults by kind ([kvm] npf = true): per
 * VM, the NPF / EPT-violation exits by what the host had to do (kvm.h
 * enum kvm_npf_kind), their count, time and log2 latency, from the BPF
 * map "npfs" (keyed by process and kind; the agent deletes exited
 * processes' entries).
 */
#include "kvm_int.h"

#include <string.h>

/* Each kind's row, "<vm>/<kind>", in the one table (struct kvm_stats:
 * count, time, histogram) */
static const struct kvm_keyed_table npf_table = {
	VIRT_I_KVM_NPF, VIRT_I_KVM_NPF_HIST, STATS_WORDS, KVM_KEYED_STATS, 1
};
static const struct kvm_keyed_kind npf_kinds[KVM_NPF_KINDS] = {
	[KVM_NPF_MMIO] = { "/mmio", 0, 0 }, [KVM_NPF_MAJOR] = { "/major", 0, 0 },
	[KVM_NPF_MINOR] = { "/minor", 0, 0 }, [KVM_NPF_ASYNC] = { "/async", 0, 0 },
	[KVM_NPF_FAST] = { "/fast", 0, 0 }, [KVM_NPF_MAPPING] = { "/mapping", 0, 0 },
	[KVM_NPF_RETRY] = { "/retry", 0, 0 },
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
	struct kvm_keyed *r = &st->keyed[KVM_KEYED_NPF];
	bool subs_timed = st->keyed[KVM_KEYED_SUBS].timed;
	const char *why = fam->opts[OPT_NPF].b ? npf_refused(fam, method) : NULL;

	if (why)
		virt_log(LOG_WARNING, "kvm: npf off with method %s: %s", method, why);
	r->on = fam->opts[OPT_NPF].b && !why;
	st->entry_subs = subs_timed && !r->on;
	st->entry_plain = st->entry_plain && !r->on;
	st->npf.entry = r->on && !subs_timed;
	st->npf.entry_subs = r->on && subs_timed;
	if (r->on)
		bpf_map__set_max_entries(skel->maps.npfs, r->max);
}

/* "npfs" holds every VM's kinds; the agent reads it whole */
static uint32_t npf_max(const struct virt_family *fam)
{
	return fam->opts[OPT_NPF].b ? (uint32_t)(fam->opts[OPT_MAX_VMS].u * KVM_NPF_KINDS) : 0;
}

static void npf_decode(const void *key, uint32_t *tgid, unsigned int *kind)
{
	uint64_t k = *(const uint64_t *)key;

	*tgid = KVM_NPF_TGID(k);
	*kind = KVM_NPF_KIND(k);
}

/* Each VM's major time on its own row (virt.kvm.vm.npf_major_time). */
static void npf_vm_major(struct kvm_state *st)
{
	struct kvm_keyed *r = &st->keyed[KVM_KEYED_NPF];

	for (size_t i = 0; i < st->vms.n; i++) {
		struct vm_entry *vm = kvm_vm_at(st, i);

		vm->npf_on = r->on;
		vm->npf_major_ns = 0;
	}
	for (size_t i = 0; i < r->rows[0].n; i++) {
		struct kvm_keyed_row *e = (struct kvm_keyed_row *)r->rows[0].v[i];
		struct vm_entry *vm;

		if (e->kind == KVM_NPF_MAJOR && (vm = kvm_keyed_vm(st, e)))
			vm->npf_major_ns = e->k.row.v[W_TIME];
	}
}

const struct kvm_keyed_ops kvm_npf_keyed = {
	.map = KVM_KEYED_MAP(npfs), .key_size = sizeof(uint64_t),
	.value_size = sizeof(struct kvm_stats), .tables = &npf_table, .ntables = 1,
	.kinds = npf_kinds, .nkinds = KVM_NPF_KINDS,
	.max = npf_max, .decode = npf_decode, .after_set = npf_vm_major,
};
