/*
 * KVM exit family (module "kvm"): exits, hypercalls and exits to the VMM, by
 * reason, with exit->entry latency histograms, and per VMM process.
 *
 * Attach order: tp_btf, raw_tp, classic tracepoint (bpf/kvm.bpf.c). The
 * family needs the kvm module and a vendor module whose exit reasons it can
 * name (kvm_amd: SVM table, kvm_intel: VMX table); it attaches by itself when
 * they are loaded after the agent started.
 */
#include "kvm_int.h"
#include "kvm_names.h"
#include "vmid.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <linux/capability.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static const struct virt_option kvm_options[NOPTS] = {
	[OPT_LATENCY] = { "latency", VIRT_OPT_BOOL, 0, 0, "true",
		"exit->entry latency histograms; false = counts only (cheaper)" },
	[OPT_MAX_VCPUS] = { "max_vcpus", VIRT_OPT_UINT, 16, 1u << 20, "4096",
		"vCPUs tracked (exit->entry pairing, per-VM counts), in a table of twice as many "
		"slots; exits of a vCPU that finds no slot are counted as dropped" },
	[OPT_MAX_VMS] = { "max_vms", VIRT_OPT_UINT, 1, 65536, "1024",
		"VMM processes with per-VM rows; threads of more are counted as dropped" },
	[OPT_MAX_HCALLS] = { "max_hypercalls", VIRT_OPT_UINT, 1, 65536, "256",
		"distinct hypercall numbers; more are counted as dropped" },
	[OPT_SCHED] = { "sched", VIRT_OPT_BOOL, 0, 0, "true",
		"scheduler hooks (method tp_btf): the run-queue wait histogram of each VM and "
		"its split by what held the CPU; false = run delay counters only (read from "
		"schedstat, no per-switch cost)" },
	[OPT_SUBREASONS] = { "subreasons", VIRT_OPT_BOOL, 0, 0, "false",
		"what exits are about, per VM: port I/O by port, MSR accesses by MSR, CPUID by "
		"leaf, MMIO by address (virt.kvm.pio, msr, cpuid, mmio); false = not traced, the "
		"exit path unchanged" },
	[OPT_SUB_TOP] = { "subreasons_top", VIRT_OPT_UINT, 1, 4096, "16",
		"ports, MSRs, CPUID leaves and MMIO addresses per VM and kind with instances of "
		"their own (the first seen); later ones count in <vm>/other" },
	[OPT_VCPU_STATS] = { "vcpu_stats", VIRT_OPT_BOOL, 0, 0, "false",
		"KVM's own per-vCPU statistics and histograms (virt.kvm.vcpu.kvm_stat.*, "
		"kvm_hist) from the vCPU statistics fds the VMM keeps (newer QEMUs; not QEMU "
		"7.2), shared with pidfd_getfd(): the agent then keeps CAP_SYS_PTRACE and "
		"CAP_DAC_READ_SEARCH; false = not read, both dropped" },
	[OPT_NPF] = { "npf", VIRT_OPT_BOOL, 0, 0, "false",
		"nested-paging faults per VM by what the host had to do (virt.kvm.vm.npf: mmio, "
		"major, minor, async, fast, mapping, retry), methods tp_btf and raw_tp; false = "
		"not traced, the entry program unchanged" },
	[OPT_INTERRUPTS] = { "interrupts", VIRT_OPT_BOOL, 0, 0, "false",
		"interrupt delivery latency per VM and kind, from the local APIC's accept (a "
		"timer: its expiry) to the VM entry that injects it (virt.kvm.vm.irq; method "
		"tp_btf); false = not traced" },
	[OPT_TIMER_LATENESS] = { "timer_lateness", VIRT_OPT_BOOL, 0, 0, "false",
		"how late or early guests' TSC-deadline timers fire, per VM "
		"(virt.kvm.vm.timer; kvm_wait_lapic_expire, which needs KVM's timer advance on; "
		"method tp_btf); false = not traced" },
};

/* ------------------------------------------------------------- names */

#define N(x) [KVM_EXIT_##x] = "KVM_EXIT_" #x
static const char *const uexit_names[KVM_UEXIT_REASONS] = {
	N(UNKNOWN), N(EXCEPTION), N(IO), N(HYPERCALL), N(DEBUG), N(HLT), N(MMIO),
	N(IRQ_WINDOW_OPEN), N(SHUTDOWN), N(FAIL_ENTRY), N(INTR), N(SET_TPR),
	N(TPR_ACCESS), N(S390_SIEIC), N(S390_RESET), N(DCR), N(NMI),
	N(INTERNAL_ERROR), N(OSI), N(PAPR_HCALL), N(S390_UCONTROL), N(WATCHDOG),
	N(S390_TSCH), N(EPR), N(SYSTEM_EVENT), N(S390_STSI), N(IOAPIC_EOI),
	N(HYPERV), N(ARM_NISV), N(X86_RDMSR), N(X86_WRMSR), N(DIRTY_RING_FULL),
	N(AP_RESET_HOLD), N(X86_BUS_LOCK), N(XEN), N(RISCV_SBI), N(RISCV_CSR),
	N(NOTIFY),
};
#undef N
/* ------------------------------------------------------------- attach */

static bool kvm_ready(struct virt_family *fam)
{
	if (!virt_kmod_present("kvm")) {
		virt_set_reason(fam, "kernel module kvm not loaded");
		return false;
	}
	if (!virt_kmod_present("kvm_amd") && !virt_kmod_present("kvm_intel")) {
		virt_set_reason(fam, "no supported KVM vendor module (kvm_amd or kvm_intel) loaded%s",
				virt_kmod_present("kvm_pvm") ? "; kvm_pvm exit reasons are not decoded" : "");
		return false;
	}
	if (!virt_tracepoint_exists("kvm", "kvm_exit")) {
		virt_set_reason(fam, "tracepoint kvm:kvm_exit not found");
		return false;
	}
	return true;
}

static void unmap_arrays(struct kvm_state *st)
{
	kvm_vms_unmap(st);
	if (st->exits)
		munmap(st->exits, KVM_SLOTS * sizeof(*st->exits));
	st->exits = NULL;
}

/* vcpus and threads have nvcpus entries (kvm_vms.c's from then on), exits
 * KVM_SLOTS. A failure is reported by kvm_attached() ("mmap: <errno>"):
 * virt_map_mmap's why is dropped. */
static int map_arrays(struct kvm_state *st, struct kvm_bpf *skel, size_t nvcpus)
{
	char why[VIRT_REASON_MAX];
	size_t bytes;
	struct kvm_vcpu_slot *vcpus = virt_map_mmap(skel->maps.vcpus, &bytes, why, sizeof(why));
	uint64_t *threads = virt_map_mmap(skel->maps.threads, &bytes, why, sizeof(why));

	st->exits = virt_map_mmap(skel->maps.exits, &bytes, why, sizeof(why));
	if (kvm_vms_attach(st, vcpus, threads, nvcpus) == 0 && st->exits)
		return 0;
	unmap_arrays(st);
	return -1;
}

/* Slots: twice max_vcpus, a power of two. The variant's vCPU destroy hook
 * (fentry with tp_btf, kprobe with raw_tp) frees slots in the kernel; the
 * classic tracepoints key slots by thread, not vCPU: the agent frees them
 * when the VMM exits. Counts only: no entry program. On AMD with tp_btf,
 * slots keep svm->vmcb where svm_switch_vmcb() can be probed (vmcb_cache):
 * an exit's reason is then one probe read, not two. */
static int kvm_configure(struct virt_family *fam, struct virt_skel *obj, const char *method,
		     char *why, size_t len)
{
	struct kvm_bpf *skel = (struct kvm_bpf *)obj;
	struct kvm_state *st = fam->priv;
	bool latency = fam->opts[OPT_LATENCY].b;
	__u32 bits = virt_slots_bits(2 * fam->opts[OPT_MAX_VCPUS].u);

	(void)why, (void)len;
	skel->rodata->latency = latency;
	skel->rodata->slot_bits = bits;
	skel->rodata->sched = fam->opts[OPT_SCHED].b && strcmp(method, "tp_btf") == 0;
	st->sched_on = skel->rodata->sched;
	st->poll_on = strcmp(method, "tracepoint") != 0;
	if (st->sched_on && libbpf_num_possible_cpus() > KVM_CPUS_MAX)
		virt_log(LOG_WARNING, "kvm: sched: CPUs from %d on are not looked at", KVM_CPUS_MAX);
	bpf_map__set_max_entries(skel->maps.vcpus, 1U << bits);
	bpf_map__set_max_entries(skel->maps.threads, 1U << bits);
	bpf_map__set_max_entries(skel->maps.hcalls, (__u32)fam->opts[OPT_MAX_HCALLS].u);
	bpf_map__set_max_entries(skel->maps.vms_gone, (__u32)fam->opts[OPT_MAX_VMS].u);
	bpf_map__set_max_entries(skel->maps.vcpus_gone, (__u32)fam->opts[OPT_MAX_VCPUS].u);
	kvm_subs_configure(fam, skel);
	kvm_npf_configure(fam, skel, method);
	kvm_irqs_configure(fam, skel, method);
	skel->rodata->vmcb_cache = strcmp(method, "tp_btf") == 0 && virt_kmod_present("kvm_amd") &&
				   virt_ksym_exists("svm_switch_vmcb");
	st->vmcb_cache = skel->rodata->vmcb_cache;
	return 0;
}

/* Hooks loaded only with what needs them: the scheduler's, the vmcb
 * cache's and subreasons' (kvm_subs_configure); the entry program that
 * charges subreasons' time replaces the plain one (which the exit path
 * keeps without them). */
#define ON(what, flag) VIRT_PROG_SWITCH(what, struct kvm_state, flag)
#define SUBS_ON keyed[KVM_KEYED_SUBS].on
static const struct virt_prog_switch kvm_switches[] = {
	ON("sched_*", sched_on), ON("switch_vmcb", vmcb_cache),
	ON("pio", SUBS_ON), ON("msr", SUBS_ON), ON("cpuid", SUBS_ON), ON("mmio", SUBS_ON),
	ON("fast_mmio", fast_mmio_on), ON("entry", entry_plain), ON("entry_subs", entry_subs),
	ON("entry_npf", npf.entry), ON("entry_subs_npf", npf.entry_subs),
	ON("page_fault", keyed[KVM_KEYED_NPF].on),
	ON("irq_*", irq.on), ON("timer_lateness", irq.timer),
};
#undef ON
#undef SUBS_ON

/* The shared arrays mapped in. */
static int kvm_attached(struct virt_family *fam, struct virt_skel *obj, char *why, size_t len)
{
	struct kvm_bpf *skel = (struct kvm_bpf *)obj;
	struct kvm_state *st = fam->priv;

	if (map_arrays(st, skel, bpf_map__max_entries(skel->maps.vcpus)) < 0) {
		snprintf(why, len, "mmap: %s", strerror(errno));
		return -1;
	}
	if (skel->rodata->vmcb_cache)
		virt_log(LOG_INFO, "kvm: SVM exit reasons through each vCPU's vmcb, kept by svm_switch_vmcb");
	st->skel = skel;
	return 0;
}

static const char *const kvm_methods[] = { "tp_btf", "raw_tp", "tracepoint" };

VIRT_ATTACH_OPS(kvm_ops, kvm_bpf, VIRT_METHODS(kvm_methods), VIRT_SWITCHES(kvm_switches),
	.configure = kvm_configure, .attached = kvm_attached);

static int kvm_alloc_buffers(struct kvm_state *st, struct virt_family *fam)
{
	size_t max = KVM_SLOTS;

	if (fam->opts[OPT_MAX_HCALLS].u > max)
		max = fam->opts[OPT_MAX_HCALLS].u;
	if (kvm_vms_init(st, fam) < 0)
		return -1;
	if (kvm_keyed_init(st, fam) == 0 &&
	    virt_bulk_alloc(&st->bulk, max, sizeof(uint64_t), sizeof(struct kvm_stats)) == 0)
		return 0;
	kvm_vms_free(st);
	kvm_keyed_free(st);
	return -1;
}

static void init_rows(struct kvm_state *st)
{
	char name[VIRT_NAME_MAX];

	for (unsigned int s = 0; s < KVM_SLOTS; s++) {
		kvm_slot_name(name, sizeof(name), s);
		virt_row_init(&st->slots[s], virt_indom(VIRT_I_KVM_REASON),
			      virt_indom(VIRT_I_KVM_REASON_HIST), name);
	}
	for (unsigned int r = 0; r < KVM_UEXIT_REASONS; r++) {
		if (uexit_names[r])
			snprintf(name, sizeof(name), "%s", uexit_names[r]);
		else
			snprintf(name, sizeof(name), "KVM_EXIT_%u", r);
		virt_row_init(&st->uexit[r], virt_indom(VIRT_I_KVM_UEXIT),
			      virt_indom(VIRT_I_KVM_UEXIT_HIST), name);
	}
}

static void rebase_keyed(struct virt_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		virt_row_rebase(&t->v[i]->row);
}

/* The BPF object goes; rows stay (instances keep their ids and counters
 * stay monotonic across e.g. rmmod/modprobe kvm_amd), VM rows too until
 * their process is found gone. */
static void kvm_detach(struct virt_family *fam)
{
	struct kvm_state *st = fam->priv;

	if (!st)
		return;
	kvm_vcpus_forget(st, (uint32_t)fam->opts[OPT_MAX_VMS].u);
	kvm_keyed_forget(st);
	kvm_statfds_close_all(st);
	unmap_arrays(st);
	st->skel = NULL;
	for (unsigned int s = 0; s < KVM_SLOTS; s++)
		virt_row_rebase(&st->slots[s]);
	for (unsigned int r = 0; r < KVM_UEXIT_REASONS; r++)
		virt_row_rebase(&st->uexit[r]);
	rebase_keyed(&st->other);
	rebase_keyed(&st->hcalls);
}

/* A VM's row goes (forever: freed, else retired under its name): what
 * the parts keep per VM goes with it (kvm_vms.c's retire_exited, through
 * st->vc.vm_going: the parts call no function of kvm.c). */
static void kvm_vm_going(struct kvm_state *st, struct vm_entry *vm, bool forever)
{
	kvm_statfds_close(vm);
	if (forever)
		kvm_book_rows_remove(st, vm);
}

/* First attach: rows live until exit. */
static int kvm_init(struct virt_family *fam)
{
	struct kvm_state *st = fam->priv;

	if (kvm_alloc_buffers(st, fam) < 0)
		return -ENOMEM;
	st->other = st->hcalls = VIRT_TABLE_OF(struct virt_keyed);
	st->vms = VIRT_TABLE_OF_SUMS(struct vm_entry, sums, KVM_SUM_WORDS);
	kvm_debugfs_init(st);
	kvm_statfds_init(st, fam);
	st->vc.vm_going = kvm_vm_going;
	init_rows(st);
	return 0;
}

/* ------------------------------------------------------------ refresh */

/* The i-th entry of the last per-CPU read, summed over the CPUs. */
static void take_stats(struct virt_row *r, const struct kvm_state *st, int i)
{
	uint64_t *sum = (uint64_t *)st->bulk.vals + (size_t)i * STATS_WORDS;

	sum[0] = kvm_stats_count(sum);
	virt_row_set(r, sum, 2, &sum[2]);
	virt_row_expose(r, false);
}

/* The reason rows from the shared exits array, read in place. */
static void read_exits(struct kvm_state *st)
{
	for (unsigned int k = 0; k < KVM_SLOTS; k++) {
		const volatile struct kvm_stats *e = &st->exits[k];
		uint64_t v[STATS_WORDS];

		v[0] = e->count;
		v[1] = e->time_ns;
		for (unsigned int b = 0; b < VIRT_HIST_BUCKETS; b++)
			v[2 + b] = e->hist[b];
		v[0] = kvm_stats_count(v);
		virt_row_set(&st->slots[k], v, 2, &v[2]);
		virt_row_expose(&st->slots[k], false);
	}
}

static int read_array(struct kvm_state *st, struct bpf_map *map, struct virt_row *rows,
		      unsigned int n)
{
	int got = virt_map_dump_percpu(bpf_map__fd(map), &st->bulk, sizeof(__u32), STATS_WORDS, n);

	for (int i = 0; i < got; i++) {
		__u32 k = ((__u32 *)st->bulk.keys)[i];

		if (k < n)
			take_stats(&rows[k], st, i);
	}
	return got < 0 ? got : 0;
}

typedef void (*name_fn)(char *buf, size_t len, uint64_t key);

static void name_other(char *buf, size_t len, uint64_t key)
{
	kvm_exit_name(buf, len, (unsigned int)(key >> 32), (unsigned int)key);
}

static void name_decimal(char *buf, size_t len, uint64_t key)
{
	snprintf(buf, len, "%llu", (unsigned long long)key);
}

static int read_hash(struct kvm_state *st, struct bpf_map *map, struct virt_table *t,
		     enum virt_indom_id indom, enum virt_indom_id hindom, name_fn name)
{
	int got = virt_map_dump_percpu(bpf_map__fd(map), &st->bulk, sizeof(__u64), STATS_WORDS,
				       bpf_map__max_entries(map));

	for (int i = 0; i < got; i++) {
		uint64_t k = ((uint64_t *)st->bulk.keys)[i];
		struct virt_keyed *e = virt_table_find(t, k);

		if (!e) {
			char buf[VIRT_NAME_MAX];

			name(buf, sizeof(buf), k);
			e = virt_table_add(t, k, virt_indom(indom), virt_indom(hindom), buf);
		}
		if (e)
			take_stats(&e->row, st, i);
	}
	return got < 0 ? got : 0;
}

/* vcpu_stats = true: pidfd_getfd() needs ptrace attach rights over the VMM
 * (PTRACE_MODE_ATTACH_REALCREDS: __ptrace_may_access(), a VMM with more
 * capabilities than the agent kept needs CAP_SYS_PTRACE), and listing
 * /proc/<pid>/fd of another user's VMM (proc_fd_permission()) needs
 * CAP_DAC_READ_SEARCH. */
static uint64_t kvm_caps(const struct virt_family *fam)
{
	return fam->opts && fam->opts[OPT_VCPU_STATS].b ?
		       (1ull << CAP_SYS_PTRACE) | (1ull << CAP_DAC_READ_SEARCH) : 0;
}

/* The refresh order of kvm's parts, stated here only: the reason rows
 * (on their own); the keyed maps "subs", "npfs", "irqs" (kvm_keyed_read)
 * before the VM rows are summed, while the rows of VMMs that exited since
 * the last refresh are still there, so that their exited processes'
 * entries fold into them; the VM and vCPU rows (kvm_vms_read), which
 * retire exited VMs' rows (and their parts' per-VM state: kvm_vm_going);
 * after them the keyed maps' rows (kvm_keyed_set: shown for live VMs,
 * retired with theirs), then KVM's own
 * values (kvm_debugfs_refresh, kvm_statfds_refresh), which hang on the
 * VM rows as they now are. */
static int kvm_refresh(struct virt_family *fam)
{
	struct kvm_state *st = fam->priv;
	struct kvm_bpf *skel = st->skel;
	int err = 0;

	read_exits(st);
	err |= read_hash(st, skel->maps.exits_other, &st->other, VIRT_I_KVM_REASON,
			 VIRT_I_KVM_REASON_HIST, name_other);
	err |= read_hash(st, skel->maps.hcalls, &st->hcalls, VIRT_I_KVM_HCALL,
			 VIRT_I_KVM_HCALL_HIST, name_decimal);
	err |= read_array(st, skel->maps.uexits, st->uexit, KVM_UEXIT_REASONS);
	err |= kvm_keyed_read(st);
	kvm_vms_read(st, fam);
	kvm_keyed_set(st);
	kvm_debugfs_refresh(st);
	kvm_statfds_refresh(st);
	fam->dropped_now = st->vc.vm_drops;	/* and the drops map's: the agent's */
	return err ? -EIO : 0;
}

/* -------------------------------------------------------------- fetch */

/* Every row is a struct virt_row (the reason rows in arrays, the others
 * in a struct virt_keyed): offsets are within the row. */
#define WORD(id, indom, w) \
	[VIRT_M_KVM_##id] = VIRT_ANSWER_WORD(indom, struct virt_keyed, row, row.v[w])
#define PCTS(id, indom) \
	VIRT_ANSWER_PERCENTILES(VIRT_M_KVM_##id##_LAT, indom, struct virt_keyed, row, row)
/* a field of a VM's or vCPU's entry; a VM's, while its bool flag is true */
#define VM(id, indom, T, field) [VIRT_M_KVM_##id] = VIRT_ANSWER_WORD(indom, T, k.row, field)
#define VM_WHEN(id, field, flag) \
	[VIRT_M_KVM_VM_##id] = VIRT_ANSWER_WORD_WHEN(KVM_VM, struct vm_entry, k.row, field, flag)
/* word w of an entry's sums; while its bool flag is true */
#define SUM(id, indom, T, w) [VIRT_M_KVM_##id] = VIRT_ANSWER_SUM(indom, T, k.row, sums, w)
#define SUM_WHEN(id, indom, T, w, flag) \
	[VIRT_M_KVM_##id] = VIRT_ANSWER_SUM_WHEN(indom, T, k.row, sums, w, flag)
/* a sub-reason's count, and its time while measured */
#define SUB(kind) SUM(kind##_COUNT, KVM_##kind, struct kvm_keyed_row, W_COUNT), \
	SUM_WHEN(kind##_TIME, KVM_##kind, struct kvm_keyed_row, W_TIME, timed)
/* one of KVM's values, in the metric its kind says */
#define BOOK(id, indom, kind) \
	[VIRT_M_KVM_##id] = VIRT_ANSWER_WORD_WHEN(indom, struct book_entry, k.row, value, kind)

static const struct virt_answer kvm_answers[VIRT_NMETRICS] = {
	WORD(EXIT_COUNT, KVM_REASON, W_COUNT),
	WORD(EXIT_TIME, KVM_REASON, W_TIME),
	[VIRT_M_KVM_EXIT_LATENCY] = VIRT_ANSWER_BUCKET(KVM_REASON_HIST),
	WORD(HCALL_COUNT, KVM_HCALL, W_COUNT),
	WORD(HCALL_TIME, KVM_HCALL, W_TIME),
	[VIRT_M_KVM_HCALL_LATENCY] = VIRT_ANSWER_BUCKET(KVM_HCALL_HIST),
	WORD(UEXIT_COUNT, KVM_UEXIT, W_COUNT),
	WORD(UEXIT_TIME, KVM_UEXIT, W_TIME),
	[VIRT_M_KVM_UEXIT_LATENCY] = VIRT_ANSWER_BUCKET(KVM_UEXIT_HIST),
	SUM(VM_EXITS, KVM_VM, struct vm_entry, W_COUNT),
	SUM(VM_EXIT_TIME, KVM_VM, struct vm_entry, W_TIME),
	SUM(VM_UEXITS, KVM_VM, struct vm_entry, W_UEXITS),
	SUM(VM_UEXIT_TIME, KVM_VM, struct vm_entry, W_UTIME),
	SUM(VCPU_EXITS, KVM_VCPU, struct vcpu_entry, W_COUNT),
	SUM(VCPU_EXIT_TIME, KVM_VCPU, struct vcpu_entry, W_TIME),
	SUM(VCPU_UEXITS, KVM_VCPU, struct vcpu_entry, W_UEXITS),
	SUM(VCPU_UEXIT_TIME, KVM_VCPU, struct vcpu_entry, W_UTIME),
	PCTS(EXIT, KVM_REASON),
	PCTS(HCALL, KVM_HCALL),
	PCTS(UEXIT, KVM_UEXIT),
	SUM(VCPU_RUN_DELAY, KVM_VCPU, struct vcpu_entry, W_RUN_DELAY),
	[VIRT_M_KVM_VCPU_TIMER_ADVANCE] = VIRT_ANSWER_WORD_WHEN(KVM_VCPU, struct vcpu_entry, k.row,
								timer_advance, advance_known),
	SUM(VM_RUN_DELAY, KVM_VM, struct vm_entry, W_RUN_DELAY),
	VM_WHEN(RUN_DELAY_WAITS, d.waits, sched),
	[VIRT_M_KVM_VM_RUN_DELAY_HIST] = VIRT_ANSWER_BUCKET(KVM_VM_WAIT_HIST),
	VIRT_ANSWER_PERCENTILES(VIRT_M_KVM_VM_RUN_DELAY, KVM_VM, struct vm_entry, k.row, k.row),
	WORD(VM_RUN_DELAY_BY, KVM_VM_WAIT_BY, 0),
	VM(VM_HALTS, KVM_VM, struct vm_entry, d.halts),
	VM(VM_VCPUS, KVM_VM, struct vm_entry, d.vcpus),
	SUM(VM_HALT_POLLED, KVM_VM, struct vm_entry, W_HALT_POLLED),
	SUM(VM_HALT_SLEPT, KVM_VM, struct vm_entry, W_HALT_SLEPT),
	SUM(VM_HALT_TIME, KVM_VM, struct vm_entry, W_HALT_NS),
	SUM_WHEN(VM_HALT_POLL_TIME, KVM_VM, struct vm_entry, W_HALT_POLL_NS, poll),
	[VIRT_M_KVM_VM_HALT_HIST] = VIRT_ANSWER_BUCKET(KVM_VM_HALT_HIST),
	VIRT_ANSWER_PERCENTILES(VIRT_M_KVM_VM_HALT, KVM_VM, struct vm_entry, k.row, halt),
	SUB(PIO), SUB(MSR), SUB(CPUID), SUB(MMIO),
	SUM_WHEN(VM_EXITS_UNSEEN, KVM_VM, struct vm_entry, W_UNSEEN, unseen_known),
	BOOK(VM_KVM_STAT_COUNT, KVM_VM_STAT, count),
	BOOK(VM_KVM_STAT_TIME, KVM_VM_STAT, time),
	BOOK(VM_KVM_STAT_INSTANT, KVM_VM_STAT, instant),
	BOOK(VM_KVM_STAT_PEAK, KVM_VM_STAT, peak),
	BOOK(VCPU_KVM_STAT_COUNT, KVM_VCPU_STAT, count),
	BOOK(VCPU_KVM_STAT_TIME, KVM_VCPU_STAT, time),
	BOOK(VCPU_KVM_STAT_INSTANT, KVM_VCPU_STAT, instant),
	BOOK(VCPU_KVM_STAT_PEAK, KVM_VCPU_STAT, peak),
	[VIRT_M_KVM_VCPU_KVM_HIST] = VIRT_ANSWER_BUCKET(KVM_VCPU_STAT_HIST),
	SUM(VM_IRQ_COUNT, KVM_IRQ, struct kvm_keyed_row, W_COUNT),
	SUM(VM_IRQ_TIME, KVM_IRQ, struct kvm_keyed_row, W_TIME),
	[VIRT_M_KVM_VM_IRQ_LATENCY] = VIRT_ANSWER_BUCKET(KVM_IRQ_HIST),
	VIRT_ANSWER_PERCENTILES(VIRT_M_KVM_VM_IRQ_LAT, KVM_IRQ, struct kvm_keyed_row, k.row, k.row),
	SUM(VM_IRQ_COALESCED, KVM_IRQ_VM, struct kvm_keyed_row, KVM_IRQ_W_COALESCED),
	SUM(VM_IRQ_POSTED, KVM_IRQ_VM, struct kvm_keyed_row, KVM_IRQ_W_POSTED),
	SUM(VM_IRQ_UNMATCHED, KVM_IRQ_VM, struct kvm_keyed_row, KVM_IRQ_W_UNMATCHED),
	SUM(VM_TIMER_COUNT, KVM_TIMER, struct kvm_keyed_row, W_COUNT),
	SUM(VM_TIMER_TIME, KVM_TIMER, struct kvm_keyed_row, W_TIME),
	[VIRT_M_KVM_VM_TIMER_LATENESS] = VIRT_ANSWER_BUCKET(KVM_TIMER_HIST),
	VIRT_ANSWER_PERCENTILES(VIRT_M_KVM_VM_TIMER_LATE, KVM_TIMER, struct kvm_keyed_row, k.row, k.row),
	[VIRT_M_KVM_EXIT_REASON] = VIRT_ANSWER_NAME(KVM_REASON),
	[VIRT_M_KVM_HCALL_NUMBER] = VIRT_ANSWER_NAME(KVM_HCALL),
	[VIRT_M_KVM_UEXIT_REASON] = VIRT_ANSWER_NAME(KVM_UEXIT),
	[VIRT_M_KVM_VM_NAME] = VIRT_ANSWER_NAME(KVM_VM),
	[VIRT_M_KVM_VM_BUCKET_PREFIX] = VIRT_ANSWER_BUCKET_PREFIX(KVM_VM),
	[VIRT_M_KVM_NPF_COUNT] = VIRT_ANSWER_WORD(KVM_NPF, struct kvm_keyed_row, k.row, k.row.v[W_COUNT]),
	[VIRT_M_KVM_NPF_TIME] = VIRT_ANSWER_WORD(KVM_NPF, struct kvm_keyed_row, k.row, k.row.v[W_TIME]),
	[VIRT_M_KVM_NPF_LATENCY] = VIRT_ANSWER_BUCKET(KVM_NPF_HIST),
	VIRT_ANSWER_PERCENTILES(VIRT_M_KVM_NPF_LAT, KVM_NPF, struct kvm_keyed_row, k.row, k.row),
	VM_WHEN(NPF_MAJOR_TIME, npf_major_ns, npf_on),
};

/* The VM of a "<vm>/<class>" row, and its class. */
static const struct vm_entry *vm_of_by_row(const struct virt_row *row, unsigned int *class)
{
	for (unsigned int c = 0; c < KVM_WAIT_CLASSES; c++) {
		const char *slash = strrchr(row->name, '/');

		if (slash && strcmp(slash + 1, kvm_wait_class_names[c]) == 0) {
			*class = c;
			return (const struct vm_entry *)(const void *)((const char *)(row - c) -
								      offsetof(struct vm_entry, by));
		}
	}
	return NULL;
}

/* A KVM value's: its stat and, for a vCPU's, the vcpu. */
static int book_labels(pmLabelSet **lp, const struct book_entry *b)
{
	int sts = virt_label_add(lp, "stat", b->stat);

	if (sts >= 0 && b->vcpu >= 0)
		sts = pmdaAddLabels(lp, "{\"vcpu\":%d}", b->vcpu);
	return sts;
}

/* A VM's labels: its identity's (vm_name, vm_uuid, vmm, vmm_pid); a
 * vCPU's: its VM's and vcpu; a "<vm>/<class>" row's: its VM's and class;
 * a sub-reason's and a fault kind's: its VM's; a KVM value's: its VM's, stat and (a vCPU's)
 * vcpu. */
static int kvm_labels(struct virt_family *fam, enum virt_indom_id indom, unsigned int inst,
		      pmLabelSet **lp)
{
	const struct vcpu_entry *c = NULL;
	const struct book_entry *b = NULL;
	const struct vm_entry *vm;
	unsigned int class = KVM_WAIT_CLASSES;
	struct virt_row *row;
	int sts;

	if (!fam->priv || (indom != VIRT_I_KVM_VM && indom != VIRT_I_KVM_VCPU &&
			   indom != VIRT_I_KVM_VM_WAIT_BY && indom != VIRT_I_KVM_VM_STAT &&
			   indom != VIRT_I_KVM_VCPU_STAT && !kvm_keyed_indom(indom)) ||
	    !(row = virt_row_of(virt_indom(indom), inst)))
		return 0;
	if (kvm_keyed_indom(indom))
		vm = kvm_vm_of(fam->priv, VIRT_ENTRY_OF(row, struct kvm_keyed_row)->tgid);
	else if (indom == VIRT_I_KVM_VM_STAT || indom == VIRT_I_KVM_VCPU_STAT)
		vm = (b = VIRT_ENTRY_OF(row, struct book_entry))->vm;
	else if (indom == VIRT_I_KVM_VCPU)
		vm = (c = VIRT_ENTRY_OF(row, struct vcpu_entry))->vm;
	else if (indom == VIRT_I_KVM_VM_WAIT_BY)
		vm = vm_of_by_row(row, &class);
	else
		vm = VIRT_ENTRY_OF(row, struct vm_entry);
	if (!vm || vm->retired)
		return 0;
	if ((sts = virt_label_vm(lp, virt_vm_of((uint32_t)vm->k.key))) < 0)
		return sts;
	if (c)
		sts = pmdaAddLabels(lp, "{\"vcpu\":%u}", c->id);
	else if (b)
		sts = book_labels(lp, b);
	else if (class < KVM_WAIT_CLASSES)
		sts = pmdaAddLabels(lp, "{\"class\":\"%s\"}", kvm_wait_class_names[class]);
	return sts < 0 ? sts : 0;
}

VIRT_MODULE("kvm",
	.options = kvm_options, .noptions = NOPTS,
	.ready = kvm_ready, .priv_size = sizeof(struct kvm_state), .init = kvm_init,
	.attach = &kvm_ops, .ndrops = KVM_DROPS, .detach = kvm_detach,
	.refresh = kvm_refresh, .answers = kvm_answers, .labels = kvm_labels, .caps = kvm_caps);
