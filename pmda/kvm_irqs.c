/*
 * The kvm family's interrupts and guest timers ([kvm] interrupts,
 * timer_lateness): per VM, interrupt delivery latency by kind, the
 * interrupts not timed (coalesced, posted, unmatched), and how late or
 * early TSC-deadline timers reached the guest, from the BPF map "irqs"
 * (bpf/kvm.h struct kvm_irq_key). The hooks attach with method tp_btf only.
 */
#include "kvm_int.h"
#include "vmid.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The tables of rows (st->irq.rows): their instance domains and the
 * words of their sums */
static const struct irq_table {
	enum virt_indom_id indom, hindom;	/* hindom VIRT_NINDOMS: no histogram */
	unsigned int words;
} irq_tables[KVM_IRQ_TABLES] = {
	[KVM_IRQ_T_LATENCY] = { VIRT_I_KVM_IRQ, VIRT_I_KVM_IRQ_HIST, STATS_WORDS },
	[KVM_IRQ_T_TIMER] = { VIRT_I_KVM_TIMER, VIRT_I_KVM_TIMER_HIST, STATS_WORDS },
	[KVM_IRQ_T_EVENTS] = { VIRT_I_KVM_IRQ_VM, VIRT_NINDOMS, KVM_IRQ_EVENT_WORDS },
};

/* Per record of "irqs": its table, its row's name after "<vm>" and, for
 * a count-only record, the word of the row's sums it counts in */
static const struct irq_rec {
	const char *suffix;
	unsigned int table;
	unsigned int word;
} irq_recs[KVM_IRQ_RECS] = {
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
	if (!st->irq.on && !st->irq.timer)
		return;
	bpf_map__set_max_entries(skel->maps.irqs, st->irq.max);
	if (st->irq.on)
		bpf_map__set_max_entries(skel->maps.irq_pend, bpf_map__max_entries(skel->maps.vcpus));
}

int kvm_irqs_init(struct kvm_state *st, struct virt_family *fam)
{
	for (unsigned int t = 0; t < KVM_IRQ_TABLES; t++)
		st->irq.rows[t] = VIRT_TABLE_OF_SUMS(struct irq_entry, sums, irq_tables[t].words);
	if (!fam->opts[OPT_INTERRUPTS].b && !fam->opts[OPT_TIMER_LATENESS].b)
		return 0;
	st->irq.max = (uint32_t)fam->opts[OPT_MAX_VMS].u * KVM_IRQ_RECS;
	st->irq.keys = calloc(st->irq.max, sizeof(*st->irq.keys));
	st->irq.vals = calloc(st->irq.max, sizeof(*st->irq.vals));
	return st->irq.keys && st->irq.vals ? 0 : -1;
}

void kvm_irqs_free(struct kvm_state *st)
{
	free(st->irq.keys);
	free(st->irq.vals);
}

static void irqs_each(struct kvm_state *st, void (*how)(struct virt_sums *))
{
	for (unsigned int t = 0; t < KVM_IRQ_TABLES; t++)
		for (size_t i = 0; i < st->irq.rows[t].n; i++)
			how(&((struct irq_entry *)st->irq.rows[t].v[i])->sums);
}

void kvm_irqs_forget(struct kvm_state *st)
{
	irqs_each(st, virt_sums_rebase);
}

/* Is indom one of the interrupts' (their rows' labels)? */
bool kvm_irq_indom(enum virt_indom_id indom)
{
	for (unsigned int t = 0; t < KVM_IRQ_TABLES; t++)
		if (irq_tables[t].indom == indom)
			return true;
	return false;
}

/* The row of record r of VM vm, made on first sight (found again by
 * name: a VM restarted under its name). */
static struct irq_entry *irq_row(struct kvm_state *st, const struct vm_entry *vm, unsigned int r)
{
	const struct irq_table *t = &irq_tables[irq_recs[r].table];
	char name[VIRT_NAME_MAX];
	int vmlen = snprintf(name, sizeof(name), "%.*s", VMID_NAME_MAX, vm->k.row.name);
	struct irq_entry *e;

	snprintf(name + vmlen, sizeof(name) - (size_t)vmlen, "%s", irq_recs[r].suffix);
	e = virt_table_get_name(&st->irq.rows[irq_recs[r].table], virt_indom(t->indom),
				t->hindom == VIRT_NINDOMS ? PM_INDOM_NULL : virt_indom(t->hindom), name);
	if (e)
		e->vmlen = vmlen;
	return e;
}

/* Record r's words as its row's sums count them: a timed record's count,
 * time and histogram (count: count word + histogram mass, kvm.h); a
 * count-only one's count in its word. */
static void irq_words(unsigned int r, const struct kvm_stats *v, uint64_t w[STATS_WORDS])
{
	const uint64_t *from = (const uint64_t *)v;

	if (irq_recs[r].table == KVM_IRQ_T_EVENTS) {
		for (unsigned int i = 0; i < STATS_WORDS; i++)
			w[i] = 0;
		w[irq_recs[r].word] = v->count;
		return;
	}
	for (unsigned int i = 0; i < STATS_WORDS; i++)
		w[i] = from[i];
	for (unsigned int b = 0; b < VIRT_HIST_BUCKETS; b++)
		w[W_COUNT] += v->hist[b];
}

/* Entry i of the read of "irqs" if its process is alive (live): a live
 * process's entry goes to its row's sum; an exited one's to its row's
 * base, and leaves the map. */
static void irq_take(struct kvm_state *st, int i, bool live)
{
	const struct kvm_irq_key *k = &st->irq.keys[i];
	struct vm_entry *vm = kvm_vm_of(st, k->tgid);
	uint64_t w[STATS_WORDS];
	struct irq_entry *e;

	if (k->rec >= KVM_IRQ_RECS)
		return;
	if (!vm) {		/* no row yet (next refresh), or never one */
		if (!live && !virt_pid_alive(k->tgid))
			virt_map_delete(bpf_map__fd(st->skel->maps.irqs), k);
		return;
	}
	if (kvm_vm_alive(vm) != live || !(e = irq_row(st, vm, k->rec)))
		return;
	e->tgid = k->tgid;
	irq_words(k->rec, &st->irq.vals[i], w);
	(live ? virt_sums_add : virt_sums_fold)(&e->sums, w);
	if (!live)
		virt_map_delete(bpf_map__fd(st->skel->maps.irqs), k);
}

/* "irqs", while either option is on (before the VM rows, as the
 * sub-reasons: kvm_refresh says the order). */
int kvm_irqs_read(struct kvm_state *st)
{
	int n;

	if (!st->irq.on && !st->irq.timer)
		return 0;
	n = virt_map_dump(bpf_map__fd(st->skel->maps.irqs), st->irq.keys, sizeof(*st->irq.keys),
			  st->irq.vals, sizeof(*st->irq.vals), st->irq.max);
	for (int i = 0; i < n; i++)
		irq_take(st, i, false);
	irqs_each(st, virt_sums_begin);
	for (int i = 0; i < n; i++)
		irq_take(st, i, true);
	return n < 0 ? n : 0;
}

/* Is the VM of an interrupt row still known (live, or exited and kept
 * under its name)? */
static bool irq_vm_known(struct kvm_state *st, const struct irq_entry *e)
{
	char vm[VIRT_NAME_MAX];

	snprintf(vm, sizeof(vm), "%.*s", e->vmlen, e->k.row.name);
	return virt_table_find_name(&st->vms, vm) != NULL;
}

/* A row's values from its sums: a histogram row's count, time and
 * buckets; an events row shown once it counted anything. */
static void irq_show(unsigned int t, struct irq_entry *e)
{
	const uint64_t *s = e->sums.sum;

	if (irq_tables[t].hindom != VIRT_NINDOMS) {
		virt_row_set(&e->k.row, s, 2, &s[2]);
		virt_row_expose(&e->k.row, false);
		return;
	}
	virt_row_expose(&e->k.row, s[KVM_IRQ_W_COALESCED] || s[KVM_IRQ_W_POSTED] ||
					    s[KVM_IRQ_W_UNMATCHED]);
}

/* (After the VM rows.) Rows of live VMs shown, of exited named VMs
 * retired, others freed. */
void kvm_irqs_set(struct kvm_state *st)
{
	for (unsigned int t = 0; t < KVM_IRQ_TABLES; t++) {
		for (size_t i = 0; i < st->irq.rows[t].n;) {
			struct irq_entry *e = (struct irq_entry *)st->irq.rows[t].v[i];

			if (!e->sums.live && !irq_vm_known(st, e)) {
				virt_table_remove(&st->irq.rows[t], e);	/* the last takes its place */
				continue;
			}
			if (e->sums.live)
				irq_show(t, e);
			else
				virt_row_retire(&e->k.row);
			i++;
		}
	}
}
