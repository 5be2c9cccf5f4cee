/*
 * The kvm family's interrupts and guest timers ([kvm] interrupts,
 * timer_lateness): per VM, interrupt delivery latency by kind, the
 * interrupts not timed (coalesced, posted, unmatched), and how late or
 * early TSC-deadline timers reached the guest, from the BPF map "irqs"
 * (bpf/kvm.h struct kvm_irq_key). The hooks attach with method tp_btf only.
 */
#include "kvm_int.h"

#include <string.h>

/* The tables of rows: their instance domains, the words of their sums,
 * what they take from a record and when a row is shown (its count; an
 * events row once it counted anything) */
static const struct kvm_keyed_table irq_tables[KVM_IRQ_TABLES] = {
	[KVM_IRQ_T_LATENCY] = { VIRT_I_KVM_IRQ, VIRT_I_KVM_IRQ_HIST, STATS_WORDS, KVM_KEYED_STATS, 1 },
	[KVM_IRQ_T_TIMER] = { VIRT_I_KVM_TIMER, VIRT_I_KVM_TIMER_HIST, STATS_WORDS, KVM_KEYED_STATS,
			      1 },
	[KVM_IRQ_T_EVENTS] = { VIRT_I_KVM_IRQ_VM, VIRT_NINDOMS, KVM_IRQ_EVENT_WORDS, KVM_KEYED_COUNT,
			       KVM_IRQ_EVENT_WORDS },
};

/* Per record of "irqs": its row's name after "<vm>", its table and, for
 * a count-only record, the word of the row's sums it counts in */
static const struct kvm_keyed_kind irq_recs[KVM_IRQ_RECS] = {
	[KVM_IRQ_TIMER] = { "/timer", KVM_IRQ_T_LATENCY, 0 },
	[KVM_IRQ_IPI] = { "/ipi", KVM_IRQ_T_LATENCY, 0 },
	[KVM_IRQ_DEVICE] = { "/device", KVM_IRQ_T_LATENCY, 0 },
	[KVM_IRQ_OTHER] = { "/other", KVM_IRQ_T_LATENCY, 0 },
	[KVM_TIMER_LATE] = { "/late", KVM_IRQ_T_TIMER, 0 },
	[KVM_TIMER_EARLY] = { "/early", KVM_IRQ_T_TIMER, 0 },
	[KVM_IRQ_COALESCED] = { "", KVM_IRQ_T_EVENTS, KVM_IRQ_W_COALESCED },
	[KVM_IRQ_POSTED] = { "", KVM_IRQ_T_EVENTS, KVM_IRQ_W_POSTED },
	[KVM_IRQ_UNMATCHED] = { "", KVM_IRQ_T_EVENTS, KVM_IRQ_W_UNMATCHED },
};

/* The functions the interrupt hooks attach to (fentry: a missing one, an
 * inlined static function, would fail the whole object's load) */
static const char *const irq_funcs[] = { "__apic_accept_irq", "apic_timer_expired",
					  "kvm_apic_local_deliver", "kvm_pv_send_ipi" };

static bool irq_hooks_present(const char **missing)
{
	for (size_t i = 0; i < VIRT_ARRAY_SIZE(irq_funcs); i++)
		if (!virt_ksym_exists(irq_funcs[i])) {
			*missing = irq_funcs[i];
			return false;
		}
	*missing = !virt_tracepoint_exists("kvm", "kvm_inj_virq") ? "tracepoint kvm_inj_virq" :
		   !virt_tracepoint_exists("kvm", "kvm_apic_ipi") ? "tracepoint kvm_apic_ipi" :
		   !virt_tracepoint_exists("kvm", "kvm_msi_set_irq") ? "tracepoint kvm_msi_set_irq" :
									  NULL;
	return !*missing;
}

/* The switches of the hooks (kvm.c's kvm_switches) and the maps' sizes:
 * both need the BTF-typed vCPU (method tp_btf); a hook KVM lacks turns
 * its option off, logged, and the rest of the family attaches. */
void kvm_irqs_configure(struct virt_family *fam, struct kvm_bpf *skel, const char *method)
{
	struct kvm_state *st = fam->priv;
	struct kvm_keyed *r = &st->keyed[KVM_KEYED_IRQS];
	bool tp_btf = strcmp(method, "tp_btf") == 0;
	const char *missing = NULL;

	st->irq.on = fam->opts[OPT_INTERRUPTS].b;
	st->irq.timer = fam->opts[OPT_TIMER_LATENESS].b;
	if ((st->irq.on || st->irq.timer) && !tp_btf) {
		virt_log(LOG_WARNING, "kvm: interrupts and timer_lateness need method tp_btf, not %s: off",
			 method);
		st->irq.on = st->irq.timer = false;
	}
	if (st->irq.on && !irq_hooks_present(&missing)) {
		virt_log(LOG_WARNING, "kvm: interrupts: %s not found (inlined?): off", missing);
		st->irq.on = false;
	}
	if (st->irq.timer && !virt_tracepoint_exists("kvm", "kvm_wait_lapic_expire")) {
		virt_log(LOG_WARNING, "kvm: timer_lateness: tracepoint kvm_wait_lapic_expire not found: off");
		st->irq.timer = false;
	}
	r->on = st->irq.on || st->irq.timer;
	if (!r->on)
		return;
	bpf_map__set_max_entries(skel->maps.irqs, r->max);
	if (st->irq.on)
		bpf_map__set_max_entries(skel->maps.irq_pend, bpf_map__max_entries(skel->maps.vcpus));
}

static uint32_t irqs_max(const struct virt_family *fam)
{
	if (!fam->opts[OPT_INTERRUPTS].b && !fam->opts[OPT_TIMER_LATENESS].b)
		return 0;
	return (uint32_t)fam->opts[OPT_MAX_VMS].u * KVM_IRQ_RECS;
}

static void irq_decode(const void *key, uint32_t *tgid, unsigned int *kind)
{
	const struct kvm_irq_key *k = key;

	*tgid = k->tgid;
	*kind = k->rec;
}

const struct kvm_keyed_ops kvm_irqs_keyed = {
	.map = KVM_KEYED_MAP(irqs), .key_size = sizeof(struct kvm_irq_key),
	.value_size = sizeof(struct kvm_stats), .tables = irq_tables, .ntables = KVM_IRQ_TABLES,
	.kinds = irq_recs, .nkinds = KVM_IRQ_RECS,
	.max = irqs_max, .decode = irq_decode,
};
