/*
 * The kvm family's sub-reasons (subreasons = true): what exits are about,
 * per VM: port I/O by port, MSR accesses by MSR, CPUID by leaf, MMIO by
 * address, from the BPF map "subs".
 */
#include "kvm_int.h"

#include <stdio.h>

/* Per kind: its table of rows (count, time; shown once counted) and
 * its directions' names (none: one direction) */
#define SUB_TABLE(dom) { VIRT_I_KVM_##dom, VIRT_NINDOMS, 2, KVM_KEYED_AS_IS, 1 }
static const struct kvm_keyed_table sub_tables[KVM_SUB_KINDS] = {
	[KVM_SUB_PIO] = SUB_TABLE(PIO), [KVM_SUB_MSR] = SUB_TABLE(MSR),
	[KVM_SUB_CPUID] = SUB_TABLE(CPUID), [KVM_SUB_MMIO] = SUB_TABLE(MMIO),
};
static const char *const sub_dirs[KVM_SUB_KINDS][2] = {
	[KVM_SUB_PIO] = { "in", "out" }, [KVM_SUB_MSR] = { "rd", "wr" },
	[KVM_SUB_MMIO] = { "rd", "wr" },
};
/* each kind in its table, its rows named by sub_key_name() */
static const struct kvm_keyed_kind sub_kinds[KVM_SUB_KINDS] = {
	[KVM_SUB_PIO] = { NULL, KVM_SUB_PIO, 0 }, [KVM_SUB_MSR] = { NULL, KVM_SUB_MSR, 0 },
	[KVM_SUB_CPUID] = { NULL, KVM_SUB_CPUID, 0 }, [KVM_SUB_MMIO] = { NULL, KVM_SUB_MMIO, 0 },
};

/* Sub-reasons: the switches of their hooks (kvm.c's kvm_switches). */
void kvm_subs_configure(struct virt_family *fam, struct kvm_bpf *skel)
{
	struct kvm_state *st = fam->priv;
	struct kvm_keyed *r = &st->keyed[KVM_KEYED_SUBS];
	bool on = fam->opts[OPT_SUBREASONS].b, latency = fam->opts[OPT_LATENCY].b;

	skel->rodata->subreasons = on;
	skel->rodata->sub_top = (__u32)fam->opts[OPT_SUB_TOP].u;
	r->on = on;
	r->timed = on && latency;
	st->entry_plain = latency && !on;
	/* Intel fast MMIO (kvm_fast_mmio, arch/x86/kvm/trace.h): a hook of
	 * its own, left out where the kernel lacks the tracepoint */
	st->fast_mmio_on = on && virt_tracepoint_exists("kvm", "kvm_fast_mmio");
	if (!on)
		return;
	bpf_map__set_max_entries(skel->maps.subs, r->max);
	bpf_map__set_max_entries(skel->maps.sub_used, (__u32)fam->opts[OPT_MAX_VMS].u);
}

/* "subs" holds every VM's sub_top keys and "other" of each kind; the
 * agent reads it whole */
static uint32_t subs_max(const struct virt_family *fam)
{
	uint64_t n = fam->opts[OPT_MAX_VMS].u * KVM_SUB_KINDS * (fam->opts[OPT_SUB_TOP].u + 1);

	if (!fam->opts[OPT_SUBREASONS].b)
		return 0;
	return n > (1u << 20) ? 1u << 20 : (uint32_t)n;
}

static void sub_decode(const void *key, uint32_t *tgid, unsigned int *kind)
{
	const struct kvm_sub_key *k = key;

	*tgid = k->tgid;
	*kind = k->kind;
}

/* "/<key>[/<dir>]" of a sub-reason key, or "/other" */
static void sub_key_name(const void *key, char *buf, size_t len)
{
	const struct kvm_sub_key *k = key;
	const char *dir = sub_dirs[k->kind][k->dir & 1];

	if (k->code == KVM_SUB_OTHER)
		snprintf(buf, len, "/other");
	else if (dir)
		snprintf(buf, len, "/0x%llx/%s", (unsigned long long)k->code, dir);
	else
		snprintf(buf, len, "/0x%llx", (unsigned long long)k->code);
}

/* an exited process's keys leave "sub_used" with it */
const struct kvm_keyed_ops kvm_subs_keyed = {
	.map = KVM_KEYED_MAP(subs), .used_map = KVM_KEYED_MAP(sub_used),
	.key_size = sizeof(struct kvm_sub_key), .value_size = sizeof(struct kvm_sub_stats),
	.tables = sub_tables, .ntables = KVM_SUB_KINDS,
	.kinds = sub_kinds, .nkinds = KVM_SUB_KINDS,
	.max = subs_max, .decode = sub_decode, .name = sub_key_name,
};
