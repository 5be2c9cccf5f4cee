/*
 * KVM exit family (module "kvm"): exits, hypercalls and exits to the VMM, by
 * reason, with exit->entry latency histograms, and per VMM process.
 *
 * Attach order: tp_btf, raw_tp, classic tracepoint (bpf/kvm.bpf.c). The
 * family needs the kvm module and a vendor module whose exit reasons it can
 * name (kvm_amd: SVM table, kvm_intel: VMX table); it attaches by itself when
 * they are loaded after the agent started.
 */
#include "virt.h"
#include "rows.h"
#include "kvm.h"
#include "kvm_names.h"
#include "kvm_books.h"
#include "kvm_vstats.h"
#include "kvm.skel.h"
#include "vmid.h"

#include <bpf/bpf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

enum kvm_opt { OPT_LATENCY, OPT_MAX_VCPUS, OPT_MAX_VMS, OPT_MAX_HCALLS, OPT_SCHED, OPT_SUBREASONS,
	       OPT_SUB_TOP, OPT_VCPU_STATS, NOPTS };

static const struct virt_option kvm_options[NOPTS] = {
	[OPT_LATENCY] = { "latency", VIRT_OPT_BOOL, 0, 0, "true",
		"exit->entry latency histograms; false = counts only (cheaper)" },
	[OPT_MAX_VCPUS] = { "max_vcpus", VIRT_OPT_UINT, 16, 1u << 20, "4096",
		"vCPUs tracked (exit->entry pairing, per-VM counts), in a table of twice as many slots; exits of a vCPU that finds no slot are counted as dropped" },
	[OPT_MAX_VMS] = { "max_vms", VIRT_OPT_UINT, 1, 65536, "1024",
		"VMM processes with per-VM rows; threads of more are counted as dropped" },
	[OPT_MAX_HCALLS] = { "max_hypercalls", VIRT_OPT_UINT, 1, 65536, "256",
		"distinct hypercall numbers; more are counted as dropped" },
	[OPT_SCHED] = { "sched", VIRT_OPT_BOOL, 0, 0, "true",
		"scheduler hooks (method tp_btf): the run-queue wait histogram of each VM and its split by what held the CPU; false = run delay counters only (read from schedstat, no per-switch cost)" },
	[OPT_SUBREASONS] = { "subreasons", VIRT_OPT_BOOL, 0, 0, "false",
		"what exits are about, per VM: port I/O by port, MSR accesses by MSR, CPUID by leaf, MMIO by address (virt.kvm.pio, msr, cpuid, mmio); false = not traced, the exit path unchanged" },
	[OPT_SUB_TOP] = { "subreasons_top", VIRT_OPT_UINT, 1, 4096, "16",
		"ports, MSRs, CPUID leaves and MMIO addresses per VM and kind with instances of their own (the first seen); later ones count in <vm>/other" },
	[OPT_VCPU_STATS] = { "vcpu_stats", VIRT_OPT_BOOL, 0, 0, "false",
		"KVM's own per-vCPU statistics and histograms (virt.kvm.vcpu.kvm_stat, kvm_stat_instant, kvm_hist) from the vCPU statistics fds the VMM keeps (newer QEMUs; not QEMU 7.2), shared with pidfd_getfd(): the agent then keeps CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH; false = not read, both dropped" },
};

/* Row words: VM rows use all four; reason rows count and time. A VM's
 * and a vCPU's sums are struct kvm_vm_stats as words: the rows take the
 * first four, the rest is answered from the sums (W_*). */
enum { W_COUNT, W_TIME, W_UEXITS, W_UTIME };
#define STATS_WORDS (sizeof(struct kvm_stats) / sizeof(__u64))
#define VM_WORDS (sizeof(struct kvm_vm_stats) / sizeof(__u64))
#define VM_WORD(field) (offsetof(struct kvm_vm_stats, field) / sizeof(__u64))
#define W_WAIT_BY VM_WORD(wait_by)
#define W_HALT_POLLED VM_WORD(halt_polled)
#define W_HALT_NS VM_WORD(halt_ns)
#define W_HALT_POLL_NS VM_WORD(halt_poll_ns)
#define W_WAIT_HIST VM_WORD(wait_hist)
#define W_HALT_HIST VM_WORD(halt_hist)

static const char *const wait_class_names[KVM_WAIT_CLASSES] = {
	[KVM_WAIT_SAME_VM] = "same_vm", [KVM_WAIT_OTHER_VM] = "other_vm",
	[KVM_WAIT_VHOST] = "vhost", [KVM_WAIT_HOST] = "host",
};

/* What a VM's row answers beyond its sums: its run delay (schedstat) and
 * the counts its histograms hold. */
struct vm_derived {
	uint64_t rd_gone;		/* run delay of vCPU threads it no longer has */
	uint64_t run_delay;
	uint64_t waits, halts, halt_slept;
};

/* A VM's row (st->vms), named by its VMM process's VM identity (vmid.h):
 * its counts of vCPU slots that are gone, and this refresh's total. A row
 * of an exited named VM is kept (retired, keyed by its name) so that the
 * VM restarted under its name (a new pid) carries its counters on. */
struct vm_entry {
	struct virt_keyed k;		/* key: the tgid; retired: virt_name_key() */
	uint64_t start;			/* the process's start time (pid reuse) */
	bool named;			/* the VM has a name, not "<pid>" */
	bool retired;			/* its VMM exited */
	bool sched;			/* the scheduler hooks count its waits */
	bool poll;			/* its halts' poll time is counted */
	bool subs_alive;		/* vm_alive() at sub-reason read subs_gen */
	uint64_t subs_gen;
	uint64_t gone[VM_WORDS];
	uint64_t sum[VM_WORDS];
	struct vm_derived d;
	/* "<vm>/<class>": sum[W_WAIT_BY + class] in v[0]; the halt histogram
	 * (histogram instances only) */
	struct virt_row by[KVM_WAIT_CLASSES];
	struct virt_row halt;
	/* KVM's own "exits" (debugfs) and ours, from when both first saw
	 * the VM: exits_unseen = KVM's growth - ours, taken only where
	 * KVM's exits read just before ours equal those read after */
	bool books_base;		/* both seen: unseen has a value */
	bool books_seen;		/* KVM's exits read in this refresh */
	bool pre_ok;			/* kvm_exits_pre read */
	unsigned int books_dirs;	/* its debugfs directories last seen */
	char books_dir[24];		/* the last: "<pid>-<fd>" */
	uint64_t kvm_exits, kvm_exits_pre, kvm_exits0, our_exits0;
	uint64_t unseen;		/* int64_t, as PM_TYPE_64 reads it */
	/* KVM's per-vCPU statistics fds of the VMM's vCPUs (vcpu_stats) */
	struct vcpu_stats_fd *vsfd;
	unsigned int nvsfd;
	int vs_err;			/* acquiring them failed: not tried again */
};

/* A vCPU's statistics fd, a duplicate of the VMM's fd vmm_fd
 * ("anon_inode:kvm-vcpu-stats"); its descriptors, and a data buffer. */
struct vcpu_stats_fd {
	int fd, vmm_fd;
	uint32_t id;
	struct kvm_vstats s;
	uint64_t *data;
};


/* What the agent last took from a slot of the vcpus array: its share of
 * its VM's counters, and the run delay of its thread (schedstat). */
struct vcpu_rec {
	uint32_t tgid;			/* 0: nothing taken */
	uint32_t id;			/* the vCPU's KVM vcpu_id */
	uint32_t tid;			/* the thread rd was read from */
	bool dropped;			/* counted once in vm_drops (max_vms) */
	uint64_t last[VM_WORDS];
	uint64_t rd;			/* its thread's run_delay, ns */
};

/* A vCPU's row (st->vcpu_rows), "<vm>/vcpu<N>", N KVM's vcpu_id: summed
 * as its VM's row is, from the slots holding vCPU N of the VM, what the
 * kernel folded from its destroyed slots (vcpus_gone) and what slots the
 * agent freed left (gone). A row lives as long as its VM's row (a vCPU
 * created again with its id continues it; a VM restarted under its name
 * finds its vCPUs' rows), so its counters never step back. */
struct vcpu_entry {
	struct virt_keyed k;		/* key: virt_name_key() */
	struct vm_entry *vm;
	uint32_t id;
	bool seen;			/* counted in this refresh */
	uint64_t gone[VM_WORDS];
	uint64_t sum[VM_WORDS];
	uint64_t rd_gone, run_delay;	/* run delay of threads it had, of all */
};

/* A sub-reason's row (st->subs[kind]), "<vm>/<key>" (kvm.h struct
 * kvm_sub_key): what entries of its VM's exited processes counted (gone),
 * and its live processes' entries of "subs" at this refresh (cur). */
struct sub_entry {
	struct virt_keyed k;		/* key: virt_name_key() */
	uint32_t tgid;			/* the process last seen counting it (labels) */
	int vmlen;			/* row.name's first vmlen bytes: its VM's name */
	bool seen;			/* a live process counts it */
	bool timed;			/* its time is measured (latency) */
	uint64_t gone[2], cur[2];	/* count, time */
};

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

/* The hooks of each method loaded with subreasons only:
 * virt_kvm_<method>_<name> */
static const char *const sub_progs[] = { "pio", "msr", "cpuid", "mmio" };

/* One of KVM's own values (debugfs) of a VM, "<vm>/<stat>", or of a
 * vCPU, "<vm>/vcpu<N>/<stat>": the sum over the VM's directories (a VMM
 * with two VMs has two) in this refresh. */
struct book_entry {
	struct virt_keyed k;		/* key: virt_name_key() */
	struct vm_entry *vm;
	int vcpu;			/* -1: the VM's */
	char stat[KVM_BOOK_NAME_MAX];
	uint64_t value;
	bool seen;			/* read in this refresh */
	bool counter, instant;		/* which metric has its value */
	uint64_t hist[VIRT_HIST_BUCKETS];	/* a histogram's (vcpu_hists) */
};

/* Files found to be no statistic, never opened again (x86's
 * mmu_rmaps_stat walks the VM's rmaps under its MMU lock to print). */
#define BOOKS_BAD_MAX 32
struct books_bad {
	char name[KVM_BOOK_NAME_MAX];
};

struct kvm_state {
	struct kvm_bpf *skel;
	struct virt_row slots[KVM_SLOTS];
	struct virt_row uexit[KVM_UEXIT_REASONS];
	struct virt_table other, hcalls;	/* of struct virt_keyed: exit, hypercall nr */
	struct virt_table vms;		/* of struct vm_entry */
	size_t nlive, nretired;		/* rows of live VMMs, of exited named VMs */
	/* the BPF arrays, mmap'ed: read in place, no bpf() call */
	struct kvm_vcpu_slot *vcpus;
	uint64_t *threads;
	struct kvm_stats *exits;
	size_t nvcpus;			/* entries of vcpus and of threads */
	struct vcpu_rec *recs;		/* one per vcpus entry */
	/* Indexes of the slots in use at this sum and at the one before: one
	 * pass over the (mostly free) vcpus array, then only these. */
	uint32_t *occ, *occ_prev;
	size_t nocc, nocc_prev;
	struct virt_table vcpu_rows;	/* of struct vcpu_entry */
	/* a read of vcpus_gone (max_vcpus entries) */
	uint64_t *vgone_key;
	struct kvm_vm_stats *vgone;
	uint32_t max_vcpus;		/* their entries */
	int nvgone;			/* entries of the last read */
	uint64_t vgone_folds;		/* folds_done at that read */
	bool vgone_valid;		/* of this BPF object */
	/* a read of vms_gone (max_vms entries) */
	uint32_t *gone_tgid;
	struct kvm_vm_stats *gone;
	uint64_t vm_drops;
	bool sched_on;			/* scheduler hooks loaded (tp_btf, sched) */
	bool poll_on;			/* halts carry KVM's poll time (not tracepoint) */
	bool subs_on, subs_timed;	/* subreasons loaded; with latency */
	struct virt_table subs[KVM_SUB_KINDS];	/* of struct sub_entry */
	struct kvm_sub_key *sub_keys;	/* a read of "subs" (sub_max entries) */
	struct kvm_sub_stats *sub_vals;
	uint32_t sub_max;
	uint64_t subs_gen;		/* reads of "subs" */
	struct virt_table books, vcpu_books, vcpu_hists;	/* of struct book_entry */
	struct books_bad bad[BOOKS_BAD_MAX];
	unsigned int nbad;
	int books_errno;		/* of the last failed open of the root, logged */
	bool vstats_on;			/* vcpu_stats */
	int vstats_errno;		/* why per-vCPU statistics failed, logged */
	struct virt_bulk bulk;		/* bulk-read buffers, sized for the largest map */
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
	if (st->vcpus)
		munmap(st->vcpus, st->nvcpus * sizeof(*st->vcpus));
	if (st->threads)
		munmap(st->threads, st->nvcpus * sizeof(*st->threads));
	if (st->exits)
		munmap(st->exits, KVM_SLOTS * sizeof(*st->exits));
	free(st->recs);
	free(st->occ);
	free(st->occ_prev);
	st->vcpus = NULL;
	st->threads = NULL;
	st->exits = NULL;
	st->recs = NULL;
	st->occ = st->occ_prev = NULL;
	st->nocc = st->nocc_prev = 0;
}

/* vcpus and threads have nvcpus entries, exits KVM_SLOTS. A failure is
 * reported by attached() ("mmap: <errno>"): virt_map_mmap's why is dropped. */
static int map_arrays(struct kvm_state *st, struct kvm_bpf *skel, size_t nvcpus)
{
	char why[VIRT_REASON_MAX];
	size_t bytes;

	st->nvcpus = nvcpus;
	st->vcpus = virt_map_mmap(skel->maps.vcpus, &bytes, why, sizeof(why));
	st->threads = virt_map_mmap(skel->maps.threads, &bytes, why, sizeof(why));
	st->exits = virt_map_mmap(skel->maps.exits, &bytes, why, sizeof(why));
	st->recs = calloc(nvcpus, sizeof(*st->recs));
	st->occ = calloc(nvcpus, sizeof(*st->occ));
	st->occ_prev = calloc(nvcpus, sizeof(*st->occ_prev));
	st->nocc = st->nocc_prev = 0;
	if (st->vcpus && st->threads && st->exits && st->recs && st->occ && st->occ_prev)
		return 0;
	unmap_arrays(st);
	return -1;
}

static struct virt_skel *open_skel(void)
{
	return (struct virt_skel *)kvm_bpf__open();
}

static void autoload(struct bpf_object *obj, const char *method, const char *what, bool on)
{
	struct bpf_program *prog;
	char name[64];

	snprintf(name, sizeof(name), "virt_kvm_%s_%s", method, what);
	if ((prog = bpf_object__find_program_by_name(obj, name)))
		bpf_program__set_autoload(prog, on);
}

/* Sub-reasons: their hooks, and the entry program that charges their
 * time, replace the plain one (which the exit path keeps without them). */
static void configure_subs(struct virt_family *fam, struct kvm_bpf *skel, struct bpf_object *obj,
			   const char *method)
{
	struct kvm_state *st = fam->priv;
	bool on = fam->opts[OPT_SUBREASONS].b, latency = fam->opts[OPT_LATENCY].b;

	skel->rodata->subreasons = on;
	skel->rodata->sub_top = (__u32)fam->opts[OPT_SUB_TOP].u;
	for (size_t i = 0; i < VIRT_ARRAY_SIZE(sub_progs); i++)
		autoload(obj, method, sub_progs[i], on);
	autoload(obj, method, "entry", latency && !on);
	autoload(obj, method, "entry_subs", latency && on);
	st->subs_on = on;
	st->subs_timed = on && latency;
	if (!on)
		return;
	bpf_map__set_max_entries(skel->maps.subs, st->sub_max);
	bpf_map__set_max_entries(skel->maps.sub_used, (__u32)fam->opts[OPT_MAX_VMS].u);
}

/* Slots: twice max_vcpus, a power of two. The variant's vCPU destroy hook
 * (fentry with tp_btf, kprobe with raw_tp) frees slots in the kernel; the
 * classic tracepoints key slots by thread, not vCPU: the agent frees them
 * when the VMM exits. Counts only: no entry program. On AMD with tp_btf,
 * slots keep svm->vmcb where svm_switch_vmcb() can be probed (vmcb_cache):
 * an exit's reason is then one probe read, not two. */
static int configure(struct virt_family *fam, struct virt_skel *obj, const char *method,
		     char *why, size_t len)
{
	struct kvm_bpf *skel = (struct kvm_bpf *)obj;
	struct kvm_state *st = fam->priv;
	bool latency = fam->opts[OPT_LATENCY].b;
	__u32 bits = 1;
	int ncpus;

	(void)why, (void)len;
	while ((1ULL << bits) < 2 * fam->opts[OPT_MAX_VCPUS].u)
		bits++;
	skel->rodata->latency = latency;
	skel->rodata->slot_bits = bits;
	skel->rodata->sched = fam->opts[OPT_SCHED].b && strcmp(method, "tp_btf") == 0;
	if (!skel->rodata->sched) {
		bpf_program__set_autoload(skel->progs.virt_kvm_tp_btf_sched_switch, false);
		bpf_program__set_autoload(skel->progs.virt_kvm_tp_btf_sched_wakeup, false);
		bpf_program__set_autoload(skel->progs.virt_kvm_tp_btf_sched_migrate, false);
	}
	st->sched_on = skel->rodata->sched;
	st->poll_on = strcmp(method, "tracepoint") != 0;
	if ((ncpus = libbpf_num_possible_cpus()) > 0)
		bpf_map__set_max_entries(skel->maps.waitq, (__u32)ncpus);
	bpf_map__set_max_entries(skel->maps.vcpus, 1U << bits);
	bpf_map__set_max_entries(skel->maps.threads, 1U << bits);
	bpf_map__set_max_entries(skel->maps.hcalls, (__u32)fam->opts[OPT_MAX_HCALLS].u);
	bpf_map__set_max_entries(skel->maps.vms_gone, (__u32)fam->opts[OPT_MAX_VMS].u);
	bpf_map__set_max_entries(skel->maps.vcpus_gone, (__u32)fam->opts[OPT_MAX_VCPUS].u);
	configure_subs(fam, skel, obj->obj, method);
	skel->rodata->vmcb_cache = strcmp(method, "tp_btf") == 0 && virt_kmod_present("kvm_amd") &&
				   virt_ksym_exists("svm_switch_vmcb");
	if (!skel->rodata->vmcb_cache)
		bpf_program__set_autoload(skel->progs.virt_kvm_tp_btf_switch_vmcb, false);
	return 0;
}

/* The shared arrays mapped in. */
static int attached(struct virt_family *fam, struct virt_skel *obj, char *why, size_t len)
{
	struct kvm_bpf *skel = (struct kvm_bpf *)obj;

	if (map_arrays(fam->priv, skel, bpf_map__max_entries(skel->maps.vcpus)) < 0) {
		snprintf(why, len, "mmap: %s", strerror(errno));
		return -1;
	}
	if (skel->rodata->vmcb_cache)
		virt_log(LOG_INFO, "kvm: SVM exit reasons through each vCPU's vmcb, kept by svm_switch_vmcb");
	return 0;
}

static const char *const kvm_methods[] = { "tp_btf", "raw_tp", "tracepoint" };

static const struct virt_attach_ops kvm_ops = {
	.methods = kvm_methods,
	.nmethods = VIRT_ARRAY_SIZE(kvm_methods),
	.open = open_skel,
	.configure = configure,
	.attached = attached,
};

/* subreasons: "subs" holds every VM's sub_top keys and "other" of each
 * kind; the agent reads it whole */
static int alloc_subs(struct kvm_state *st, struct virt_family *fam)
{
	uint64_t n = fam->opts[OPT_MAX_VMS].u * KVM_SUB_KINDS * (fam->opts[OPT_SUB_TOP].u + 1);

	if (!fam->opts[OPT_SUBREASONS].b)
		return 0;
	st->sub_max = n > (1u << 20) ? 1u << 20 : (uint32_t)n;
	st->sub_keys = calloc(st->sub_max, sizeof(*st->sub_keys));
	st->sub_vals = calloc(st->sub_max, sizeof(*st->sub_vals));
	return st->sub_keys && st->sub_vals ? 0 : -1;
}

static int alloc_buffers(struct kvm_state *st, struct virt_family *fam)
{
	size_t max = KVM_SLOTS;

	if (fam->opts[OPT_MAX_HCALLS].u > max)
		max = fam->opts[OPT_MAX_HCALLS].u;
	st->gone_tgid = calloc(fam->opts[OPT_MAX_VMS].u, sizeof(*st->gone_tgid));
	st->gone = calloc(fam->opts[OPT_MAX_VMS].u, sizeof(*st->gone));
	st->max_vcpus = (uint32_t)fam->opts[OPT_MAX_VCPUS].u;
	st->vgone_key = calloc(fam->opts[OPT_MAX_VCPUS].u, sizeof(*st->vgone_key));
	st->vgone = calloc(fam->opts[OPT_MAX_VCPUS].u, sizeof(*st->vgone));
	if (st->gone_tgid && st->gone && st->vgone_key && st->vgone && alloc_subs(st, fam) == 0 &&
	    virt_bulk_alloc(&st->bulk, max, sizeof(uint64_t), sizeof(struct kvm_stats)) == 0)
		return 0;
	free(st->gone_tgid);
	free(st->gone);
	free(st->vgone_key);
	free(st->vgone);
	free(st->sub_keys);
	free(st->sub_vals);
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

static void vcpus_forget(struct kvm_state *st, uint32_t max_vms);
static void vstats_close(struct vm_entry *vm);
static void vstats_close_all(struct kvm_state *st);

/* The map goes: what it counted stays in each row's gone. */
static void subs_forget(struct kvm_state *st)
{
	for (unsigned int k = 0; k < KVM_SUB_KINDS; k++) {
		for (size_t i = 0; i < st->subs[k].n; i++) {
			struct sub_entry *e = (struct sub_entry *)st->subs[k].v[i];

			e->gone[0] += e->cur[0];
			e->gone[1] += e->cur[1];
			e->cur[0] = e->cur[1] = 0;
		}
	}
}

/* The BPF object goes; rows stay (instances keep their ids and counters
 * stay monotonic across e.g. rmmod/modprobe kvm_amd), VM rows too until
 * their process is found gone. */
static void kvm_detach(struct virt_family *fam)
{
	struct kvm_state *st = fam->priv;

	if (!st)
		return;
	vcpus_forget(st, (uint32_t)fam->opts[OPT_MAX_VMS].u);
	subs_forget(st);
	vstats_close_all(st);
	st->vgone_valid = false;
	unmap_arrays(st);
	virt_skel_destroy((struct virt_skel *)st->skel);
	st->skel = NULL;
	for (unsigned int s = 0; s < KVM_SLOTS; s++)
		virt_row_rebase(&st->slots[s]);
	for (unsigned int r = 0; r < KVM_UEXIT_REASONS; r++)
		virt_row_rebase(&st->uexit[r]);
	rebase_keyed(&st->other);
	rebase_keyed(&st->hcalls);
}

static int kvm_attach(struct virt_family *fam)
{
	struct kvm_state *st = fam->priv;

	if (!st) {			/* first attach: rows live until exit */
		st = calloc(1, sizeof(*st));
		if (!st)
			return -ENOMEM;
		if (alloc_buffers(st, fam) < 0) {
			free(st);
			return -ENOMEM;
		}
		fam->priv = st;
		st->other = st->hcalls = VIRT_TABLE_OF(struct virt_keyed);
		st->vms = VIRT_TABLE_OF(struct vm_entry);
		st->vcpu_rows = VIRT_TABLE_OF(struct vcpu_entry);
		for (unsigned int k = 0; k < KVM_SUB_KINDS; k++)
			st->subs[k] = VIRT_TABLE_OF(struct sub_entry);
		st->books = st->vcpu_books = st->vcpu_hists = VIRT_TABLE_OF(struct book_entry);
		st->vstats_on = fam->opts[OPT_VCPU_STATS].b;
		init_rows(st);
	}
	if (!(st->skel = (struct kvm_bpf *)virt_attach_skel(fam, &kvm_ops)))
		return -ENOENT;
	return VIRT_ATTACHED;
}

/* ------------------------------------------------------------ refresh */

/* A stats entry's count: its count word plus its histogram's mass (kvm.h). */
static uint64_t stats_count(const uint64_t *w)
{
	uint64_t n = w[0];

	for (unsigned int b = 0; b < VIRT_HIST_BUCKETS; b++)
		n += w[2 + b];
	return n;
}

/* The i-th entry of the last per-CPU read, summed over the CPUs. */
static void take_stats(struct virt_row *r, const struct kvm_state *st, int i)
{
	uint64_t *sum = (uint64_t *)st->bulk.vals + (size_t)i * STATS_WORDS;

	sum[0] = stats_count(sum);
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
		v[0] = stats_count(v);
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

/* ------------------------------------------------- per-VM from slots */

static bool not_retired(const void *e, const void *arg)
{
	(void)arg;
	return !((const struct vm_entry *)e)->retired;
}

/* The row of VMM process tgid (alive or found gone in this refresh). */
static struct vm_entry *vm_of(struct kvm_state *st, uint32_t tgid)
{
	return virt_table_find_if(&st->vms, tgid, not_retired, NULL);
}

static struct vm_entry *vm_at(struct kvm_state *st, size_t i)
{
	return (struct vm_entry *)st->vms.v[i];
}

static bool vmm_alive(struct kvm_state *st, uint32_t tgid)
{
	struct vm_entry *vm = vm_of(st, tgid);

	return vm ? vm->k.row.live : virt_pid_alive(tgid);
}

/* ------------------------------------------------------------ per vCPU */

/* The row of vCPU id of vm, "<vm>/vcpu<id>", made on first sight (found
 * again by name: a vCPU created again, a VM restarted under its name). */
static struct vcpu_entry *vcpu_row(struct kvm_state *st, struct vm_entry *vm, uint32_t id)
{
	char name[VIRT_NAME_MAX];
	struct vcpu_entry *c;

	snprintf(name, sizeof(name), "%.*s/vcpu%u", VMID_NAME_MAX, vm->k.row.name, id);
	if ((c = virt_table_get_name(&st->vcpu_rows, virt_indom(VIRT_I_KVM_VCPU), PM_INDOM_NULL,
				     name))) {
		c->vm = vm;
		c->id = id;
	}
	return c;
}

/* The vCPU row of process tgid's vCPU id, if its VM has a row. */
static struct vcpu_entry *vcpu_of(struct kvm_state *st, uint32_t tgid, uint32_t id)
{
	struct vm_entry *vm = vm_of(st, tgid);

	return vm ? vcpu_row(st, vm, id) : NULL;
}

/* The VM's row goes: its vCPUs' rows too. */
static void vcpu_rows_remove(struct kvm_state *st, const struct vm_entry *vm)
{
	for (size_t i = 0; i < st->vcpu_rows.n;) {
		struct vcpu_entry *c = (struct vcpu_entry *)st->vcpu_rows.v[i];

		if (c->vm == vm)
			virt_table_remove(&st->vcpu_rows, c);	/* the last entry takes its place */
		else
			i++;
	}
}

/* The VM's row goes: its rows of KVM's own values too. */
static void books_remove(struct kvm_state *st, const struct vm_entry *vm)
{
	struct virt_table *tables[] = { &st->books, &st->vcpu_books, &st->vcpu_hists };

	for (size_t t = 0; t < VIRT_ARRAY_SIZE(tables); t++)
		for (size_t i = 0; i < tables[t]->n;) {
			struct book_entry *b = (struct book_entry *)tables[t]->v[i];

			if (b->vm == vm)
				virt_table_remove(tables[t], b);	/* the last takes its place */
			else
				i++;
		}
}

static void add_words(uint64_t *to, const uint64_t *from)
{
	for (size_t w = 0; w < VM_WORDS; w++)
		to[w] += from[w];
}

/* The kernel's vcpus_gone: counts of destroyed vCPUs per process and
 * vcpu_id. Entries read, or -errno. */
static int read_vcpus_gone(struct kvm_state *st)
{
	return virt_map_dump(bpf_map__fd(st->skel->maps.vcpus_gone), st->vgone_key,
			     sizeof(*st->vgone_key), st->vgone, sizeof(*st->vgone), st->max_vcpus);
}

/* vcpus_gone as of now: read again only when a fold (the one writer, a
 * vCPU destroyed) completed since the last read, so a steady refresh makes
 * no bpf() call for it. The caller sums only while no fold runs. */
static int vcpus_gone_now(struct kvm_state *st)
{
	uint64_t done = __atomic_load_n(&st->skel->bss->folds_done, __ATOMIC_ACQUIRE);
	int n;

	if (st->vgone_valid && done == st->vgone_folds)
		return st->nvgone;
	n = read_vcpus_gone(st);
	st->nvgone = n < 0 ? 0 : n;
	st->vgone_folds = done;
	st->vgone_valid = n >= 0;
	return st->nvgone;
}

/* The run delay read from a thread the rec no longer follows stays with
 * its VM and vCPU (the kernel folds exit counts of destroyed vCPUs, not
 * this). */
static void rec_forget_thread(struct kvm_state *st, struct vcpu_rec *r)
{
	struct vm_entry *vm = r->rd ? vm_of(st, r->tgid) : NULL;
	struct vcpu_entry *c = vm ? vcpu_row(st, vm, r->id) : NULL;

	if (vm)
		vm->d.rd_gone += r->rd;
	if (c)
		c->rd_gone += r->rd;
	r->rd = 0;
	r->tid = 0;
}

/* A slot's counts stay with its VM when the slot goes. */
static void rec_fold(struct kvm_state *st, struct vcpu_rec *r)
{
	struct vm_entry *vm = vm_of(st, r->tgid);
	struct vcpu_entry *c = vm ? vcpu_row(st, vm, r->id) : NULL;

	if (vm)
		add_words(vm->gone, r->last);
	if (c)
		add_words(c->gone, r->last);
	rec_forget_thread(st, r);
	memset(r, 0, sizeof(*r));
}

/* The kernel's vms_gone: counts of destroyed vCPUs per process. Entries
 * read, or -errno. */
static int read_gone(struct kvm_state *st, uint32_t max_vms)
{
	return virt_map_dump(bpf_map__fd(st->skel->maps.vms_gone), st->gone_tgid,
			     sizeof(*st->gone_tgid), st->gone, sizeof(*st->gone), max_vms);
}

static void add_vm_stats(uint64_t *sum, const struct kvm_vm_stats *v)
{
	add_words(sum, (const uint64_t *)v);
}

/* The arrays go (detach): keep the VM rows, their counts in gone. */
static void vcpus_forget(struct kvm_state *st, uint32_t max_vms)
{
	int n = st->skel ? read_gone(st, max_vms) : 0;

	for (int i = 0; i < n; i++) {
		struct vm_entry *vm = vm_of(st, st->gone_tgid[i]);

		if (vm)
			add_vm_stats(vm->gone, &st->gone[i]);
	}
	n = st->skel ? read_vcpus_gone(st) : 0;
	for (int i = 0; i < n; i++) {
		struct vcpu_entry *c = vcpu_of(st, (uint32_t)(st->vgone_key[i] >> 32),
					       (uint32_t)st->vgone_key[i]);

		if (c)
			add_vm_stats(c->gone, &st->vgone[i]);
	}
	for (size_t i = 0; st->recs && i < st->nvcpus; i++)
		if (st->recs[i].tgid)
			rec_fold(st, &st->recs[i]);
}

/* The thread's run_delay in ns: /proc/<tgid>/task/<tid>/schedstat, second
 * field (sched_info.run_delay: fs/proc/base.c proc_pid_schedstat()). */
static bool thread_run_delay(uint32_t tgid, uint32_t tid, uint64_t *ns)
{
	unsigned long long run, delay;
	char path[64], buf[96];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/task/%u/schedstat", tgid, tid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	if (sscanf(buf, "%llu %llu", &run, &delay) != 2)
		return false;
	*ns = delay;
	return true;
}

static void rec_take(struct kvm_state *st, struct vcpu_rec *r,
		     const volatile struct kvm_vcpu_slot *v)
{
	const volatile uint64_t *w = (const volatile uint64_t *)&v->vm;
	uint32_t tid = v->tid;

	if (r->tgid != v->tgid) {
		rec_forget_thread(st, r);
		memset(r, 0, sizeof(*r));
	}
	r->tgid = v->tgid;
	r->id = v->vcpu_id;
	for (size_t i = 0; i < VM_WORDS; i++)
		r->last[i] = w[i];
	if (r->tid != tid)
		rec_forget_thread(st, r);
	r->tid = tid;
	thread_run_delay(r->tgid, tid, &r->rd);	/* a thread gone keeps its last */
}

/* Clear id's bit of a BPF-side id set (kvm.h). */
static void id_unmark(__u64 *bits, uint32_t id)
{
	__atomic_fetch_and(&bits[KVM_TID_WORD(id)], ~KVM_TID_BIT(id), __ATOMIC_RELAXED);
}

/* A slot retired by the BPF side, or of a VMM that exited: its last counts
 * go to its VM, and the slot and the thread entries that point at it are
 * freed for other vCPUs (the slot's ident last: a claim finds the rest
 * zeroed). */
static void vcpu_free(struct kvm_state *st, size_t i)
{
	struct kvm_vcpu_slot *v = &st->vcpus[i];

	rec_take(st, &st->recs[i], v);
	rec_fold(st, &st->recs[i]);
	for (size_t t = 0; t < st->nvcpus; t++) {
		uint64_t cur = __atomic_load_n(&st->threads[t], __ATOMIC_RELAXED);

		if (cur && KVM_THREAD_VCPU(cur) == i &&
		    __atomic_compare_exchange_n(&st->threads[t], &cur, 0, false,
						__ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
			id_unmark(st->skel->bss->vcpu_tids, KVM_THREAD_TID(cur));
	}
	memset((char *)v + sizeof(v->ident), 0, sizeof(*v) - sizeof(v->ident));
	__atomic_store_n(&v->ident, 0, __ATOMIC_RELEASE);
}

/* A new VM's rows beside its main one (which holds its wait histogram):
 * "<vm>/<class>" of its wait by what held the CPU, its halt histogram. */
static void vm_rows_init(struct vm_entry *vm)
{
	char name[VIRT_NAME_MAX];

	for (unsigned int c = 0; c < KVM_WAIT_CLASSES; c++) {
		snprintf(name, sizeof(name), "%.*s/%s", VMID_NAME_MAX, vm->k.row.name,
			 wait_class_names[c]);
		virt_row_init(&vm->by[c], virt_indom(VIRT_I_KVM_VM_WAIT_BY), PM_INDOM_NULL, name);
	}
	virt_row_init(&vm->halt, PM_INDOM_NULL, virt_indom(VIRT_I_KVM_VM_HALT_HIST),
		      vm->k.row.name);
}

/* Its rows beside the main one leave the instance domains (retire) or go
 * for good (release). */
static void vm_rows_retire(struct vm_entry *vm, void (*how)(struct virt_row *))
{
	for (unsigned int c = 0; c < KVM_WAIT_CLASSES; c++)
		how(&vm->by[c]);
	how(&vm->halt);
}

/* The retired row of a VM restarted under its name (rows of exited VMMs
 * are retired before live slots are summed). */
static struct vm_entry *vm_restarted(struct kvm_state *st, const char *name)
{
	struct vm_entry *vm = virt_table_find_name(&st->vms, name);

	return vm && vm->retired ? vm : NULL;
}

/* A VM row for a live VMM process (at most max_vms; slots of more are
 * counted once as dropped, through *dropped), named by its VM identity; a
 * VM restarted under its name takes its old row, counters and all. */
static struct vm_entry *vm_row(struct kvm_state *st, uint32_t tgid, bool *dropped, size_t max_vms)
{
	struct vm_entry *vm = vm_of(st, tgid);
	const struct vmid *id;

	if (vm || !(id = virt_vm_of(tgid)))
		return vm;
	if (st->nlive >= max_vms) {
		st->vm_drops += !*dropped;
		*dropped = true;
		return NULL;
	}
	if ((vm = id->named ? vm_restarted(st, id->name) : NULL)) {
		st->nretired -= vm->retired;
		vm->retired = false;
		virt_table_rekey(&st->vms, vm, tgid);
		memcpy(vm->sum, vm->gone, sizeof(vm->sum));
		vm->d.run_delay = vm->d.rd_gone;
	} else if ((vm = virt_table_add(&st->vms, tgid, virt_indom(VIRT_I_KVM_VM),
					virt_indom(VIRT_I_KVM_VM_WAIT_HIST), id->name))) {
		vm_rows_init(vm);
	} else {
		return NULL;
	}
	vm->books_base = false;		/* a new struct kvm: KVM's books begin again */
	vm->start = id->start;
	vm->named = id->named;
	vm->k.row.live = true;
	st->nlive++;
	return vm;
}

/* Is the row's VMM process still the one it was made for (not exited,
 * its pid not reused)? */
static bool vm_alive(const struct vm_entry *vm)
{
	const struct vmid *id;

	return !vm->retired && (id = virt_vm_of((uint32_t)vm->k.key)) && id->start == vm->start;
}

/* Rows whose VMM exited, after their counts were folded into gone: a
 * named VM's row is kept (retired: out of the instance domain, keyed by
 * its name) for the VM restarted under that name, others go. */
static void retire_exited(struct kvm_state *st)
{
	for (size_t i = 0; i < st->vms.n;) {
		struct vm_entry *vm = vm_at(st, i);

		if (vm->retired || vm->k.row.live) {
			i++;
		} else if (!vm->named || st->nretired >= VIRT_KEEP_EXITED) {
			vstats_close(vm);
			vcpu_rows_remove(st, vm);
			books_remove(st, vm);
			vm_rows_retire(vm, virt_row_release);
			virt_table_remove(&st->vms, vm);	/* the last entry takes its place */
		} else {
			vstats_close(vm);
			vm->vs_err = 0;
			virt_row_retire(&vm->k.row);
			vm_rows_retire(vm, virt_row_retire);
			vm->retired = true;
			st->nretired++;
			virt_table_rekey(&st->vms, vm, virt_name_key(vm->k.row.name));
			i++;
		}
	}
}

/* The slots in use now (claimed or retired), the last list kept: the
 * one pass over all of vcpus (4096 and more slots of ~750 bytes: four
 * passes of it were most of a refresh's CPU time). A slot claimed after
 * this pass is taken at the next refresh. */
static void scan_slots(struct kvm_state *st)
{
	uint32_t *t = st->occ_prev;

	st->occ_prev = st->occ;
	st->nocc_prev = st->nocc;
	st->occ = t;
	st->nocc = 0;
	for (size_t i = 0; i < st->nvcpus; i++)
		if (st->vcpus[i].ident)
			st->occ[st->nocc++] = (uint32_t)i;
}

/* Slots retired by the BPF side or of exited VMMs: their counts into
 * their VM's gone, the slots freed. */
static void free_exited_slots(struct kvm_state *st)
{
	for (size_t j = 0; j < st->nocc; j++) {
		size_t i = st->occ[j];
		const volatile struct kvm_vcpu_slot *v = &st->vcpus[i];
		uint64_t ident = v->ident;
		uint32_t tgid = v->tgid;

		if (ident == KVM_VCPU_RETIRED || (ident && tgid && !vmm_alive(st, tgid)))
			vcpu_free(st, i);
	}
}

/* Slots the kernel freed (a vCPU destroyed): it folded their counts, not
 * their threads' run delay; before exited VMs' rows retire. A rec is
 * taken only from a slot in use at a sum, so the slots of the last one
 * hold every rec there is. */
static void forget_free_slots(struct kvm_state *st)
{
	for (size_t j = 0; j < st->nocc_prev; j++) {
		size_t i = st->occ_prev[j];
		const volatile struct kvm_vcpu_slot *v = &st->vcpus[i];

		if ((v->ident <= KVM_VCPU_RETIRED || !v->tgid) && st->recs[i].tgid) {
			rec_forget_thread(st, &st->recs[i]);
			st->recs[i].tgid = 0;
		}
	}
}

/* vms_gone entries of exited VMMs: into their VM's gone, then deleted. */
static void fold_exited_gone(struct kvm_state *st, int n)
{
	for (int i = 0; i < n; i++) {
		struct vm_entry *vm = vm_of(st, st->gone_tgid[i]);

		if (vm ? vm->k.row.live : virt_pid_alive(st->gone_tgid[i]))
			continue;
		if (vm)
			add_vm_stats(vm->gone, &st->gone[i]);
		virt_map_delete(bpf_map__fd(st->skel->maps.vms_gone), &st->gone_tgid[i]);
		st->gone_tgid[i] = 0;
	}
}

/* vcpus_gone entries of exited VMMs: into their vCPU rows' gone, then
 * deleted (with fold_exited_gone, before the VM rows retire), and out of
 * the copy vcpus_gone_now() keeps, which goes on mirroring the map. */
static int fold_exited_vcpus_gone(struct kvm_state *st, int n)
{
	int kept = 0;

	for (int i = 0; i < n; i++) {
		uint32_t tgid = (uint32_t)(st->vgone_key[i] >> 32);
		struct vm_entry *vm = vm_of(st, tgid);
		struct vcpu_entry *c;

		if (vm ? vm->k.row.live : virt_pid_alive(tgid)) {
			st->vgone_key[kept] = st->vgone_key[i];
			st->vgone[kept++] = st->vgone[i];
			continue;
		}
		if (vm && (c = vcpu_row(st, vm, (uint32_t)st->vgone_key[i])))
			add_vm_stats(c->gone, &st->vgone[i]);
		virt_map_delete(bpf_map__fd(st->skel->maps.vcpus_gone), &st->vgone_key[i]);
	}
	st->nvgone = kept;
	return kept;
}

/* Per vCPU, after the VMs' sums: the same three parts, for vCPUs of live
 * VMs. */
static void sum_vcpus(struct kvm_state *st, int nvgone)
{
	for (size_t i = 0; i < st->vcpu_rows.n; i++) {
		struct vcpu_entry *c = (struct vcpu_entry *)st->vcpu_rows.v[i];

		memcpy(c->sum, c->gone, sizeof(c->sum));
		c->run_delay = c->rd_gone;
		c->seen = false;
	}
	for (size_t j = 0; j < st->nocc; j++) {
		const struct vcpu_rec *r = &st->recs[st->occ[j]];
		struct vm_entry *vm;
		struct vcpu_entry *c;

		if (!r->tgid || !(vm = vm_of(st, r->tgid)) || !vm->k.row.live ||
		    !(c = vcpu_row(st, vm, r->id)))
			continue;
		add_words(c->sum, r->last);
		c->run_delay += r->rd;
		c->seen = true;
	}
	for (int i = 0; i < nvgone; i++) {
		struct vm_entry *vm;
		struct vcpu_entry *c;

		if (!(vm = vm_of(st, (uint32_t)(st->vgone_key[i] >> 32))) ||
		    !vm->k.row.live || !(c = vcpu_row(st, vm, (uint32_t)st->vgone_key[i])))
			continue;
		add_vm_stats(c->sum, &st->vgone[i]);
		c->seen = true;
	}
}

/* Sum per VM: what the slots the agent freed left, what the kernel
 * folded from destroyed vCPUs (vms_gone), and the live slots'. Exited
 * VMMs' counts are folded first, so that a VM restarted under its name
 * in the same refresh finds them in its row. */
static void sum_vms(struct kvm_state *st, struct virt_family *fam)
{
	uint32_t max_vms = (uint32_t)fam->opts[OPT_MAX_VMS].u;
	int n, nv;

	st->nlive = 0;
	for (size_t i = 0; i < st->vms.n; i++) {
		struct vm_entry *vm = vm_at(st, i);

		vm->k.row.live = vm_alive(vm);
		st->nlive += vm->k.row.live;
		if (!vm->k.row.live && !vm->retired)	/* its threads are other VMs' no more */
			id_unmark(st->skel->bss->vmm_tgids, (uint32_t)vm->k.key);
	}
	scan_slots(st);
	free_exited_slots(st);
	forget_free_slots(st);
	n = read_gone(st, max_vms);
	fold_exited_gone(st, n);
	nv = fold_exited_vcpus_gone(st, vcpus_gone_now(st));
	retire_exited(st);
	for (size_t i = 0; i < st->vms.n; i++) {
		struct vm_entry *vm = vm_at(st, i);

		memcpy(vm->sum, vm->gone, sizeof(vm->sum));
		vm->d.run_delay = vm->d.rd_gone;
	}
	for (size_t j = 0; j < st->nocc; j++) {
		size_t i = st->occ[j];
		const volatile struct kvm_vcpu_slot *v = &st->vcpus[i];
		uint64_t ident = v->ident;
		uint32_t tgid = v->tgid;
		struct vm_entry *vm;

		if (ident <= KVM_VCPU_RETIRED || !tgid)
			continue;
		rec_take(st, &st->recs[i], v);
		vm = vm_row(st, tgid, &st->recs[i].dropped, max_vms);
		if (!vm)
			continue;
		add_words(vm->sum, st->recs[i].last);
		vm->d.run_delay += st->recs[i].rd;
	}
	for (int i = 0; i < n; i++) {
		bool dropped = true;	/* counted when its slots were live */
		struct vm_entry *vm;

		if (st->gone_tgid[i] && (vm = vm_row(st, st->gone_tgid[i], &dropped, max_vms)))
			add_vm_stats(vm->sum, &st->gone[i]);
	}
	sum_vcpus(st, nv);
}

static uint64_t hist_mass(const uint64_t *h)
{
	uint64_t n = 0;

	for (unsigned int b = 0; b < VIRT_HIST_BUCKETS; b++)
		n += h[b];
	return n;
}

/* A live VM's counts of waits and halts, its rows beside the main one.
 * Without the scheduler hooks its split has no instances (not zeros). */
static void vm_rows_set(const struct kvm_state *st, struct vm_entry *vm)
{
	vm->sched = st->sched_on;
	vm->poll = st->poll_on;
	vm->d.waits = hist_mass(&vm->sum[W_WAIT_HIST]);
	vm->d.halts = hist_mass(&vm->sum[W_HALT_HIST]);
	vm->d.halt_slept = vm->d.halts - vm->sum[W_HALT_POLLED];
	for (unsigned int c = 0; c < KVM_WAIT_CLASSES; c++) {
		virt_row_set(&vm->by[c], &vm->sum[W_WAIT_BY + c], 1, NULL);
		if (vm->sched)
			virt_row_expose(&vm->by[c], true);
		else
			virt_row_retire(&vm->by[c]);
	}
	virt_row_set(&vm->halt, NULL, 0, &vm->sum[W_HALT_HIST]);
	virt_row_expose(&vm->halt, false);
}

/* Per-VM rows: the sums, taken again while the kernel folded a slot
 * meanwhile (folds are rare and short: a vCPU destroyed). Slots are freed
 * as vCPUs and VMMs go, so the arrays return to their baseline after VMs
 * come and go; exited VMMs leave the instance domain. */
static void read_vms(struct kvm_state *st, struct virt_family *fam)
{
	const __u64 *begun = &st->skel->bss->folds_begun, *done = &st->skel->bss->folds_done;

	for (int tries = 0; tries < 100; tries++) {
		uint64_t d = __atomic_load_n(done, __ATOMIC_ACQUIRE);
		uint64_t b = __atomic_load_n(begun, __ATOMIC_ACQUIRE);

		if (b == d) {
			sum_vms(st, fam);
			if (__atomic_load_n(begun, __ATOMIC_ACQUIRE) == b)
				break;
		}
		sched_yield();
	}
	for (size_t i = 0; i < st->vms.n; i++) {
		struct vm_entry *vm = vm_at(st, i);

		if (!vm->k.row.live)
			continue;
		virt_row_set(&vm->k.row, vm->sum, VM_WORDS, &vm->sum[W_WAIT_HIST]);
		virt_row_expose(&vm->k.row, true);
		vm_rows_set(st, vm);
	}
	for (size_t i = 0; i < st->vcpu_rows.n; i++) {
		struct vcpu_entry *c = (struct vcpu_entry *)st->vcpu_rows.v[i];

		virt_row_set(&c->k.row, c->sum, VM_WORDS, NULL);
		if (c->seen)
			virt_row_expose(&c->k.row, true);
		else
			virt_row_retire(&c->k.row);
	}
}

/* ------------------------------------------------------- sub-reasons */

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
	e = virt_table_get_name(&st->subs[k->kind], virt_indom(sub_kinds[k->kind].indom),
				PM_INDOM_NULL, name);
	if (e)
		e->vmlen = vmlen;
	return e;
}

/* vm_alive(), once per VM and read of "subs" (a stat of /proc) */
static bool sub_vm_alive(const struct kvm_state *st, struct vm_entry *vm)
{
	if (vm->subs_gen != st->subs_gen) {
		vm->subs_gen = st->subs_gen;
		vm->subs_alive = vm_alive(vm);
	}
	return vm->subs_alive;
}

/* An exited process's entry: out of "subs", and its key count with it. */
static void sub_delete(struct kvm_state *st, const struct kvm_sub_key *k)
{
	virt_map_delete(bpf_map__fd(st->skel->maps.subs), k);
	virt_map_delete(bpf_map__fd(st->skel->maps.sub_used), &k->tgid);
}

/* "subs", before the VM rows are summed (the rows of VMMs that exited since
 * the last refresh are still there): a live process's entries are its
 * rows' cur; an exited one's go to their rows' gone and leave the map. */
static int read_subs(struct kvm_state *st)
{
	int n = virt_map_dump(bpf_map__fd(st->skel->maps.subs), st->sub_keys, sizeof(*st->sub_keys),
			      st->sub_vals, sizeof(*st->sub_vals), st->sub_max);

	st->subs_gen++;
	for (unsigned int k = 0; k < KVM_SUB_KINDS; k++) {
		for (size_t i = 0; i < st->subs[k].n; i++) {
			struct sub_entry *e = (struct sub_entry *)st->subs[k].v[i];

			e->cur[0] = e->cur[1] = 0;
			e->seen = false;
		}
	}
	for (int i = 0; i < n; i++) {
		const struct kvm_sub_key *k = &st->sub_keys[i];
		const struct kvm_sub_stats *v = &st->sub_vals[i];
		struct vm_entry *vm = vm_of(st, k->tgid);
		struct sub_entry *e;
		bool alive;

		if (k->kind >= KVM_SUB_KINDS)
			continue;
		if (!vm) {		/* no row yet (next refresh), or never one */
			if (!virt_pid_alive(k->tgid))
				sub_delete(st, k);
			continue;
		}
		if (!(e = sub_row(st, vm, k)))
			continue;
		alive = sub_vm_alive(st, vm);
		e->gone[0] += alive ? 0 : v->count;
		e->gone[1] += alive ? 0 : v->time_ns;
		e->cur[0] += alive ? v->count : 0;
		e->cur[1] += alive ? v->time_ns : 0;
		e->seen |= alive;
		e->tgid = k->tgid;
		if (!alive)
			sub_delete(st, k);
	}
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

/* After the VM rows: rows of live VMs shown, of exited named VMs retired
 * (the VM restarted under its name continues them), others freed. */
static void set_subs(struct kvm_state *st)
{
	for (unsigned int k = 0; k < KVM_SUB_KINDS; k++) {
		for (size_t i = 0; i < st->subs[k].n;) {
			struct sub_entry *e = (struct sub_entry *)st->subs[k].v[i];
			uint64_t v[2] = { e->gone[0] + e->cur[0], e->gone[1] + e->cur[1] };

			if (!e->seen && !sub_vm_known(st, e)) {
				virt_table_remove(&st->subs[k], e);	/* the last entry takes its place */
				continue;
			}
			e->timed = st->subs_timed;
			virt_row_set(&e->k.row, v, 2, NULL);
			if (e->seen)
				virt_row_expose(&e->k.row, false);
			else
				virt_row_retire(&e->k.row);
			i++;
		}
	}
}

/* ------------------------------------------- KVM's own books (debugfs) */

struct books_ctx {
	struct kvm_state *st;
	struct vm_entry *vm;
	const char *dir;		/* "<pid>-<fd>" */
};

static bool book_skip(const char *name, void *arg)
{
	const struct kvm_state *st = ((struct books_ctx *)arg)->st;

	for (unsigned int i = 0; i < st->nbad; i++)
		if (strncmp(st->bad[i].name, name, sizeof(st->bad[i].name) - 1) == 0)
			return true;	/* a name too long matches as far as it was kept */
	return false;
}

/* A file that is no number is logged and never opened again; one that
 * could not be read (its VM going away) is skipped in this refresh. */
static void book_bad(const char *name, int err, void *arg)
{
	struct books_ctx *c = arg;
	struct kvm_state *st = c->st;

	if ((err != -EINVAL && err != -ENAMETOOLONG) || st->nbad >= BOOKS_BAD_MAX)
		return;
	snprintf(st->bad[st->nbad].name, sizeof(st->bad[0].name), "%s", name);
	st->nbad++;
	virt_log(LOG_INFO, "kvm: %s/%s/%.*s is no statistic (%s), skipped from now on",
		 KVM_BOOKS_ROOT, c->dir, 2 * KVM_BOOK_NAME_MAX, name,
		 err == -EINVAL ? "not a number" : "name too long");
}

/* The entry of KVM's statistic raw of vm ("<vm>/<stat>") or of its vCPU
 * vcpu ("<vm>/vcpu<N>/<stat>") in t, made on first sight; NULL when out
 * of memory. */
static struct book_entry *book_row(struct virt_table *t, pmInDom indom, pmInDom hindom,
				   struct vm_entry *vm, int vcpu, const char *raw)
{
	char stat[KVM_BOOK_NAME_MAX], name[VIRT_NAME_MAX];
	struct book_entry *b;

	virt_sanitize(stat, sizeof(stat), raw);
	if (vcpu < 0)
		snprintf(name, sizeof(name), "%.*s/%.*s", VMID_NAME_MAX, vm->k.row.name,
			 KVM_BOOK_NAME_MAX - 1, stat);
	else
		snprintf(name, sizeof(name), "%.*s/vcpu%hu/%.*s", VMID_NAME_MAX, vm->k.row.name,
			 (unsigned short)vcpu, KVM_BOOK_NAME_MAX - 1, stat);
	if (!(b = virt_table_get_name(t, indom, hindom, name)))
		return NULL;
	b->vm = vm;
	b->vcpu = vcpu;
	snprintf(b->stat, sizeof(b->stat), "%s", stat);
	return b;
}

/* One value of KVM's: the sum over the VM's sources (a VMM with two VMs
 * has two directories, two vCPUs of one id) read in this refresh. */
static void book_add(struct book_entry *b, uint64_t value, bool instant)
{
	b->value = b->seen ? b->value + value : value;
	b->seen = true;
	b->counter = !instant;
	b->instant = instant;
}

static void book_stat(const struct kvm_book *k, void *arg)
{
	struct books_ctx *c = arg;
	struct vm_entry *vm = c->vm;
	struct book_entry *b = book_row(&c->st->books, virt_indom(VIRT_I_KVM_VM_STAT), PM_INDOM_NULL,
					vm, -1, k->name);

	if (!b)
		return;
	book_add(b, k->value, k->instant);
	if (strcmp(k->name, "exits") == 0) {
		vm->kvm_exits = b->value;
		vm->books_seen = true;
		vm->books_dirs++;
		snprintf(vm->books_dir, sizeof(vm->books_dir), "%s", c->dir);
	}
}

static const struct kvm_books_ops books_ops = {
	.skip = book_skip, .stat = book_stat, .bad = book_bad,
};

/* The live VM whose VMM created the debugfs directory of pid: its
 * thread id, which is the process's for every VMM we know (the VM made
 * on the main thread), else /proc/<pid>/status names the process. */
static struct vm_entry *books_vm(struct kvm_state *st, uint32_t pid)
{
	struct vm_entry *vm = vm_of(st, pid);
	unsigned int tgid = 0;
	char path[64], line[128];
	FILE *f;

	if (vm || !virt_pid_alive(pid))
		return vm && vm->k.row.live ? vm : NULL;
	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	if (!(f = fopen(path, "re")))
		return NULL;
	while (fgets(line, sizeof(line), f) && sscanf(line, "Tgid: %u", &tgid) != 1)
		;
	fclose(f);
	vm = tgid && tgid != pid ? vm_of(st, tgid) : NULL;
	return vm && vm->k.row.live ? vm : NULL;
}

static void books_log_root(struct kvm_state *st, int err)
{
	if (err == st->books_errno)
		return;
	st->books_errno = err;
	if (err)
		virt_log(LOG_INFO, "kvm: KVM's own statistics unavailable: %s: %s%s", KVM_BOOKS_ROOT,
			 strerror(err), err == ENOENT ? " (debugfs not mounted?)" : "");
}

/* The root, open (*root) and listed; NULL when it cannot be (logged once
 * per reason). */
static DIR *books_root(struct kvm_state *st, int *root)
{
	DIR *d = NULL;
	int fd = -1, err;

	if ((*root = open(KVM_BOOKS_ROOT, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0 &&
	    (fd = dup(*root)) >= 0)
		d = fdopendir(fd);
	err = d ? 0 : errno;
	if (!d && fd >= 0)
		close(fd);
	if (!d && *root >= 0)
		close(*root);
	books_log_root(st, err);
	return d;
}

/* A row has its instance while KVM's directory of its VM has the file. */
static void books_expose(struct virt_table *t)
{
	for (size_t i = 0; i < t->n; i++) {
		struct book_entry *b = (struct book_entry *)t->v[i];

		if (b->seen)
			virt_row_expose(&b->k.row, true);
		else
			virt_row_retire(&b->k.row);
		b->counter &= b->seen;
		b->instant &= b->seen;
	}
}

/* Its baselines when both books first have the VM, then KVM's growth
 * minus ours (virt.kvm.vm.exits: row word W_COUNT): only from a refresh
 * whose two reads of KVM's exits, before and after ours, agree (else
 * exits in between would count as unseen); else the last value stays. */
static void books_unseen(struct vm_entry *vm)
{
	uint64_t ours = vm->k.row.v[W_COUNT];

	if (!vm->k.row.live || !vm->books_seen || vm->books_dirs != 1 || !vm->pre_ok ||
	    vm->kvm_exits_pre != vm->kvm_exits)
		return;
	if (!vm->books_base) {
		vm->kvm_exits0 = vm->kvm_exits;
		vm->our_exits0 = ours;
		vm->books_base = true;
	}
	vm->unseen = (uint64_t)((int64_t)(vm->kvm_exits - vm->kvm_exits0) -
				(int64_t)(ours - vm->our_exits0));
}

static void books_unsee(struct virt_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		((struct book_entry *)t->v[i])->seen = false;
}

/* Each live VM's directory of /sys/kernel/debug/kvm: one readdir of the
 * root, one of each VM directory and of each of its vcpu<N>/, a read of
 * each file. No debugfs: no values (logged once). */
static void read_books(struct kvm_state *st)
{
	struct dirent *de;
	int root;
	DIR *d = books_root(st, &root);

	books_unsee(&st->books);
	for (size_t i = 0; i < st->vms.n; i++) {
		vm_at(st, i)->books_seen = false;
		vm_at(st, i)->books_dirs = 0;
	}
	while (d && (de = readdir(d))) {
		struct books_ctx c = { st, NULL, de->d_name };
		uint32_t pid = kvm_books_dir_pid(de->d_name);

		if (pid && (c.vm = books_vm(st, pid)))
			kvm_books_read(root, de->d_name, &books_ops, &c);
	}
	if (d) {
		closedir(d);
		close(root);
	}
	books_expose(&st->books);
	for (size_t i = 0; i < st->vms.n; i++)
		books_unseen(vm_at(st, i));
}

/* KVM's books cost a directory walk and ~60 reads per VM: read only for a
 * fetch that names one of their metrics or an instance request for their
 * own domains (exits_unseen's, the VMs', has rows without the books). */
static bool books_asked(void)
{
	return virt_asked(VIRT_M_KVM_VM_KVM_STAT) || virt_asked(VIRT_M_KVM_VM_KVM_STAT_INSTANT) ||
	       virt_asked(VIRT_M_KVM_VM_EXITS_UNSEEN) || virt_asked_indom(VIRT_I_KVM_VM_STAT);
}

/* KVM's exits of each live VM with one debugfs directory, read just
 * before ours (read_vms). */
static void books_pre(struct kvm_state *st)
{
	char path[sizeof(KVM_BOOKS_ROOT) + 40];

	for (size_t i = 0; i < st->vms.n; i++) {
		struct vm_entry *vm = vm_at(st, i);

		snprintf(path, sizeof(path), "%s/%s/exits", KVM_BOOKS_ROOT, vm->books_dir);
		vm->pre_ok = vm->k.row.live && vm->books_dirs == 1 &&
			     kvm_books_value(path, &vm->kvm_exits_pre) == 0;
	}
}

/* ------------------------------- KVM's per-vCPU books (stats fds) */

/* The VM's statistics fds closed: each holds a reference on its struct
 * kvm (kvm_vcpu_ioctl_get_stats_fd() -> kvm_get_kvm()), and so on the
 * vendor module; a VM whose VMM is gone must not be kept alive. */
static void vstats_fd_release(struct vcpu_stats_fd *v)
{
	close(v->fd);
	kvm_vstats_free(&v->s);
	free(v->data);
}

static void vstats_close(struct vm_entry *vm)
{
	for (unsigned int i = 0; i < vm->nvsfd; i++)
		vstats_fd_release(&vm->vsfd[i]);
	free(vm->vsfd);
	vm->vsfd = NULL;
	vm->nvsfd = 0;
}

static void vstats_close_all(struct kvm_state *st)
{
	for (size_t i = 0; i < st->vms.n; i++)
		vstats_close(vm_at(st, i));
}

static const char *vstats_hint(int err)
{
	switch (err) {
	case EPERM:
	case EACCES:
		return " (ptrace attach rights over the VMM: CAP_SYS_PTRACE, Yama ptrace_scope)";
	case ENOSYS:
		return " (pidfd_getfd: Linux 5.6 and later)";
	default:
		return "";
	}
}

/* Why the per-vCPU statistics failed, logged once per reason. */
static void vstats_log(struct kvm_state *st, const char *what, int err)
{
	if (err == st->vstats_errno)
		return;
	st->vstats_errno = err;
	virt_log(LOG_INFO, "kvm: KVM's per-vCPU statistics unavailable: %s: %s%s", what,
		 strerror(err), vstats_hint(err));
}

/* Is fd name of the VMM's fd directory a vCPU's statistics fd? Its anon
 * inode is "kvm-vcpu-stats" (kvm_vcpu_ioctl_get_stats_fd(),
 * virt/kvm/kvm_main.c; newer kernels add ":<vcpu_id>").
 * KVM_GET_STATS_FD itself is no use to another process: kvm_vcpu_ioctl()
 * refuses callers whose mm is not the VM's (-EIO), so the agent can only
 * share the statistics fds the VMM opened (newer QEMUs keep one per
 * vCPU: kvm_init_vcpu(); QEMU 7.2 none). */
static bool vcpu_stats_link(int dirfd, const char *name)
{
	static const char want[] = "anon_inode:kvm-vcpu-stats";
	char link[sizeof(want) + 8];
	ssize_t n = readlinkat(dirfd, name, link, sizeof(link) - 1);
	size_t w = sizeof(want) - 1;

	if (n < (ssize_t)w || memcmp(link, want, w) != 0)
		return false;
	link[n] = '\0';
	return link[w] == '\0' || (link[w] == ':' && strspn(link + w + 1, "0123456789") == (size_t)n - w - 1);
}

/* Take the VMM's statistics fd vmm_fd into vm->vsfd, its vCPU from its id
 * string; -errno and what failed. */
static int vstats_take(struct vm_entry *vm, int pidfd, int vmm_fd, const char **what)
{
	struct vcpu_stats_fd *t, v = { .vmm_fd = vmm_fd };
	int err;

	*what = "pidfd_getfd";
	if ((v.fd = (int)syscall(SYS_pidfd_getfd, pidfd, vmm_fd, 0)) < 0)
		return -errno;
	*what = "reading its descriptors";
	if ((err = kvm_vstats_load(v.fd, &v.s)) == 0 && v.s.vcpu < 0)
		err = -EINVAL;		/* no vCPU in its id string */
	if (!err && (!(v.data = calloc(v.s.words ? v.s.words : 1, sizeof(*v.data))) ||
		     !(t = realloc(vm->vsfd, (vm->nvsfd + 1) * sizeof(*t)))))
		err = -ENOMEM;
	if (err) {
		vstats_fd_release(&v);
		return err;
	}
	v.id = (uint32_t)v.s.vcpu;
	vm->vsfd = t;
	vm->vsfd[vm->nvsfd++] = v;
	return 0;
}

/* Every vCPU statistics fd of the VM's VMM, shared. A failure leaves the
 * VM without them (logged, not tried again while the VM lives). */
static void vstats_open(struct kvm_state *st, struct vm_entry *vm, int dirfd)
{
	const char *what = "pidfd_open";
	int pidfd = (int)syscall(SYS_pidfd_open, (pid_t)vm->k.key, 0);
	DIR *d = pidfd < 0 ? NULL : fdopendir(dup(dirfd));
	struct dirent *de;
	int err = pidfd < 0 ? -errno : 0;

	if (pidfd >= 0 && !d) {
		err = -errno;
		what = "listing its fds";
	}
	while (!err && d && (de = readdir(d)))
		if (vcpu_stats_link(dirfd, de->d_name))
			err = vstats_take(vm, pidfd, atoi(de->d_name), &what);
	if (d)
		closedir(d);
	if (pidfd >= 0)
		close(pidfd);
	if (err) {
		vstats_close(vm);
		vm->vs_err = -err;
		vstats_log(st, what, -err);
	} else if (vm->nvsfd) {
		st->vstats_errno = 0;
	} else if (st->vstats_errno != -1) {
		st->vstats_errno = -1;
		virt_log(LOG_INFO, "kvm: VMM %u holds no vCPU statistics fd (anon_inode:kvm-vcpu-stats: QEMU 7.2 opens none), so its vCPUs' have no values; logged once",
			 (uint32_t)vm->k.key);
	}
}

/* Are the fds still the VMM's vCPUs' statistics fds (one readlink each)? */
static bool vstats_current(const struct vm_entry *vm)
{
	for (unsigned int i = 0; i < vm->nvsfd; i++) {
		char path[48];

		snprintf(path, sizeof(path), "/proc/%u/fd/%d", (uint32_t)vm->k.key, vm->vsfd[i].vmm_fd);
		if (!vcpu_stats_link(AT_FDCWD, path))
			return false;
	}
	return true;
}

/* Every refresh, asked or not: a VMM that closed a vCPU's statistics fd
 * (its VM destroyed, the VMM alive) gets the VM's duplicates closed, so
 * that the struct kvm goes. */
static void vstats_drop_stale(struct kvm_state *st)
{
	for (size_t i = 0; i < st->vms.n; i++) {
		struct vm_entry *vm = vm_at(st, i);

		if (vm->nvsfd && !vstats_current(vm))
			vstats_close(vm);
	}
}

/* vCPU rows of the VM counted in this refresh (the BPF side saw them). */
static unsigned int vcpus_seen(const struct kvm_state *st, const struct vm_entry *vm)
{
	unsigned int n = 0;

	for (size_t i = 0; i < st->vcpu_rows.n; i++) {
		const struct vcpu_entry *c = (const struct vcpu_entry *)st->vcpu_rows.v[i];

		n += c->vm == vm && c->seen;
	}
	return n;
}

/* The VM's statistics fds, current: taken again when one of its vCPU fds
 * changed, or when it has more vCPUs than fds. */
static void vstats_refresh_fds(struct kvm_state *st, struct vm_entry *vm)
{
	char path[32];
	int dirfd;

	if (vm->vs_err || (vm->nvsfd && vstats_current(vm) && vm->nvsfd >= vcpus_seen(st, vm)))
		return;
	vstats_close(vm);
	snprintf(path, sizeof(path), "/proc/%u/fd", (uint32_t)vm->k.key);
	if ((dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		if (errno != ENOENT)
			vstats_log(st, "opening the VMM's /proc/<pid>/fd", errno);
		return;
	}
	vstats_open(st, vm, dirfd);
	close(dirfd);
}

/* A histogram's buckets into the agent's log2 buckets (kvm_vstats.h). */
static void vstats_hist(struct book_entry *b, const uint64_t *w, unsigned int size)
{
	if (!b->seen)
		memset(b->hist, 0, sizeof(b->hist));
	for (unsigned int k = 0; k < size; k++) {
		unsigned int slot = kvm_vstat_log2_slot(k);

		b->hist[slot < VIRT_HIST_BUCKETS ? slot : VIRT_HIST_BUCKETS - 1] += w[k];
	}
	b->seen = true;
}

/* One vCPU's statistics: one pread, then each into its row. */
static void vstats_read_one(struct kvm_state *st, struct vm_entry *vm, struct vcpu_stats_fd *v)
{
	if (kvm_vstats_read(v->fd, &v->s, v->data) < 0)
		return;
	for (unsigned int i = 0; i < v->s.n; i++) {
		const struct kvm_vstat_desc *d = &v->s.d[i];
		const uint64_t *w = &v->data[d->offset / 8];
		struct book_entry *b;

		if (d->kind == KVM_VSTAT_LOG_HIST &&
		    (b = book_row(&st->vcpu_hists, PM_INDOM_NULL,
				  virt_indom(VIRT_I_KVM_VCPU_STAT_HIST), vm, (int)v->id, d->name)))
			vstats_hist(b, w, d->size);
		else if ((d->kind == KVM_VSTAT_COUNTER || d->kind == KVM_VSTAT_INSTANT) &&
			 (b = book_row(&st->vcpu_books, virt_indom(VIRT_I_KVM_VCPU_STAT),
				       PM_INDOM_NULL, vm, (int)v->id, d->name)))
			book_add(b, w[0], d->kind == KVM_VSTAT_INSTANT);
	}
}

/* A histogram row has its bucket instances while its vCPU is read. */
static void vstats_expose_hists(struct virt_table *t)
{
	for (size_t i = 0; i < t->n; i++) {
		struct book_entry *b = (struct book_entry *)t->v[i];

		virt_row_set(&b->k.row, NULL, 0, b->hist);
		if (b->seen)
			virt_row_expose(&b->k.row, false);
		else
			virt_row_retire(&b->k.row);
	}
}

/* Each live VM's vCPUs' statistics fds, one pread each. */
static void read_vstats(struct kvm_state *st)
{
	books_unsee(&st->vcpu_books);
	books_unsee(&st->vcpu_hists);
	for (size_t i = 0; i < st->vms.n; i++) {
		struct vm_entry *vm = vm_at(st, i);

		if (!vm->k.row.live)
			continue;
		vstats_refresh_fds(st, vm);
		for (unsigned int k = 0; k < vm->nvsfd; k++)
			vstats_read_one(st, vm, &vm->vsfd[k]);
	}
	books_expose(&st->vcpu_books);
	vstats_expose_hists(&st->vcpu_hists);
}

/* Read only for a fetch that names their metrics or an instance request
 * for their domains. */
static bool vstats_asked(void)
{
	return virt_asked(VIRT_M_KVM_VCPU_KVM_STAT) ||
	       virt_asked(VIRT_M_KVM_VCPU_KVM_STAT_INSTANT) || virt_asked(VIRT_M_KVM_VCPU_KVM_HIST) ||
	       virt_asked_indom(VIRT_I_KVM_VCPU_STAT) || virt_asked_indom(VIRT_I_KVM_VCPU_STAT_HIST);
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

static int kvm_refresh(struct virt_family *fam)
{
	struct kvm_state *st = fam->priv;
	struct kvm_bpf *skel = st->skel;
	bool books = books_asked();
	int err = 0;

	read_exits(st);
	err |= read_hash(st, skel->maps.exits_other, &st->other, VIRT_I_KVM_REASON,
			 VIRT_I_KVM_REASON_HIST, name_other);
	err |= read_hash(st, skel->maps.hcalls, &st->hcalls, VIRT_I_KVM_HCALL,
			 VIRT_I_KVM_HCALL_HIST, name_decimal);
	err |= read_array(st, skel->maps.uexits, st->uexit, KVM_UEXIT_REASONS);
	if (st->subs_on)
		err |= read_subs(st);
	if (books)
		books_pre(st);
	read_vms(st, fam);
	set_subs(st);
	if (books)
		read_books(st);
	if (st->vstats_on && vstats_asked())
		read_vstats(st);
	else if (st->vstats_on)
		vstats_drop_stale(st);
	fam->dropped = virt_percpu_counters_total(bpf_map__fd(skel->maps.drops), &st->bulk,
						  KVM_DROPS) + st->vm_drops;
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

/* a sub-reason's count, and its time while measured */
#define SUB(kind) \
	WORD(kind##_COUNT, KVM_##kind, W_COUNT), \
	[VIRT_M_KVM_##kind##_TIME] = VIRT_ANSWER_WORD_WHEN(KVM_##kind, struct sub_entry, k.row, \
							   k.row.v[W_TIME], timed)
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
	WORD(VM_EXITS, KVM_VM, W_COUNT),
	WORD(VM_EXIT_TIME, KVM_VM, W_TIME),
	WORD(VM_UEXITS, KVM_VM, W_UEXITS),
	WORD(VM_UEXIT_TIME, KVM_VM, W_UTIME),
	WORD(VCPU_EXITS, KVM_VCPU, W_COUNT),
	WORD(VCPU_EXIT_TIME, KVM_VCPU, W_TIME),
	WORD(VCPU_UEXITS, KVM_VCPU, W_UEXITS),
	WORD(VCPU_UEXIT_TIME, KVM_VCPU, W_UTIME),
	PCTS(EXIT, KVM_REASON),
	PCTS(HCALL, KVM_HCALL),
	PCTS(UEXIT, KVM_UEXIT),
	VM(VCPU_RUN_DELAY, KVM_VCPU, struct vcpu_entry, run_delay),
	VM(VM_RUN_DELAY, KVM_VM, struct vm_entry, d.run_delay),
	VM_WHEN(RUN_DELAY_WAITS, d.waits, sched),
	[VIRT_M_KVM_VM_RUN_DELAY_HIST] = VIRT_ANSWER_BUCKET(KVM_VM_WAIT_HIST),
	VIRT_ANSWER_PERCENTILES(VIRT_M_KVM_VM_RUN_DELAY, KVM_VM, struct vm_entry, k.row, k.row),
	WORD(VM_RUN_DELAY_BY, KVM_VM_WAIT_BY, 0),
	VM(VM_HALTS, KVM_VM, struct vm_entry, d.halts),
	VM(VM_HALT_POLLED, KVM_VM, struct vm_entry, sum[W_HALT_POLLED]),
	VM(VM_HALT_SLEPT, KVM_VM, struct vm_entry, d.halt_slept),
	VM(VM_HALT_TIME, KVM_VM, struct vm_entry, sum[W_HALT_NS]),
	VM_WHEN(HALT_POLL_TIME, sum[W_HALT_POLL_NS], poll),
	[VIRT_M_KVM_VM_HALT_HIST] = VIRT_ANSWER_BUCKET(KVM_VM_HALT_HIST),
	VIRT_ANSWER_PERCENTILES(VIRT_M_KVM_VM_HALT, KVM_VM, struct vm_entry, k.row, halt),
	SUB(PIO), SUB(MSR), SUB(CPUID), SUB(MMIO),
	VM_WHEN(EXITS_UNSEEN, unseen, books_base),
	BOOK(VM_KVM_STAT, KVM_VM_STAT, counter),
	BOOK(VM_KVM_STAT_INSTANT, KVM_VM_STAT, instant),
	BOOK(VCPU_KVM_STAT, KVM_VCPU_STAT, counter),
	BOOK(VCPU_KVM_STAT_INSTANT, KVM_VCPU_STAT, instant),
	[VIRT_M_KVM_VCPU_KVM_HIST] = VIRT_ANSWER_BUCKET(KVM_VCPU_STAT_HIST),
	[VIRT_M_KVM_EXIT_REASON] = VIRT_ANSWER_NAME(KVM_REASON),
	[VIRT_M_KVM_HCALL_NUMBER] = VIRT_ANSWER_NAME(KVM_HCALL),
	[VIRT_M_KVM_UEXIT_REASON] = VIRT_ANSWER_NAME(KVM_UEXIT),
	[VIRT_M_KVM_VM_NAME] = VIRT_ANSWER_NAME(KVM_VM),
};

/* The VM of a "<vm>/<class>" row, and its class. */
static const struct vm_entry *vm_of_by_row(const struct virt_row *row, unsigned int *class)
{
	for (unsigned int c = 0; c < KVM_WAIT_CLASSES; c++) {
		const char *slash = strrchr(row->name, '/');

		if (slash && strcmp(slash + 1, wait_class_names[c]) == 0) {
			*class = c;
			return (const struct vm_entry *)(const void *)((const char *)(row - c) -
								      offsetof(struct vm_entry, by));
		}
	}
	return NULL;
}

static bool sub_indom(enum virt_indom_id indom)
{
	for (unsigned int k = 0; k < KVM_SUB_KINDS; k++)
		if (sub_kinds[k].indom == indom)
			return true;
	return false;
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
 * a sub-reason's: its VM's; a KVM value's: its VM's, stat and (a vCPU's)
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
			   indom != VIRT_I_KVM_VCPU_STAT && !sub_indom(indom)) ||
	    !(row = virt_row_of(virt_indom(indom), inst)))
		return 0;
	if (sub_indom(indom))
		vm = vm_of(fam->priv, VIRT_ENTRY_OF(row, struct sub_entry)->tgid);
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
		sts = pmdaAddLabels(lp, "{\"class\":\"%s\"}", wait_class_names[class]);
	return sts < 0 ? sts : 0;
}

const struct virt_module virt_module = {
	.abi = VIRT_MODULE_ABI,
	.name = "kvm",
	.layout = VIRT_MODULE_LAYOUT,
	.options = kvm_options,
	.noptions = NOPTS,
	.ready = kvm_ready,
	.attach = kvm_attach,
	.detach = kvm_detach,
	.refresh = kvm_refresh,
	.answers = kvm_answers,
	.labels = kvm_labels,
	.caps = kvm_caps,
};
