/* KVM family: types shared by bpf/kvm.bpf.c and pmda/kvm.c. */
#ifndef VIRT_KVM_H
#define VIRT_KVM_H

#include "hist_buckets.h"

#define KVM_ISA_VMX 1
#define KVM_ISA_SVM 2

/* Exit reasons map to dense slots of the "exits" array:
 *   [0, 128)    VMX basic exit reason (exit_reason & 0xffff)
 *   [128, 384)  SVM exit code 0x000-0x0ff
 *   [384, 512)  SVM exit code 0x400-0x47f (npf, avic_*, vmgexit)
 * Anything else goes to the "exits_other" hash keyed by isa << 32 | code. */
#define KVM_SLOT_VMX		0
#define KVM_SLOT_SVM_LO		128
#define KVM_SLOT_SVM_HI		384
#define KVM_SLOTS		512
#define KVM_SLOT_OTHER		0xffffffffu
#define KVM_UEXIT_REASONS	64	/* KVM_EXIT_* codes counted; more are dropped */

/* Per exit reason, hypercall number or KVM_EXIT_* reason; all u64 words so
 * the user side sums per-CPU copies word by word. The count is count plus
 * the histogram's mass (pmda/kvm.c stats_count()): a timed event adds to its
 * bucket only, an event counted without its time (counts-only mode) to
 * count only. */
struct kvm_stats {
	__u64 count;
	__u64 time_ns;
	__u64 hist[VIRT_HIST_BUCKETS];
};

/* What held a CPU while a vCPU waited on its run queue (kvm.bpf.c
 * wait_class()): a thread of the vCPU's own VMM process, of another VMM
 * process (a vCPU or any thread of it), a vhost worker, anything else;
 * or nothing did: the vCPU's own CPU quota (its cgroup's cpu.max) was used
 * up, whatever ran. */
enum kvm_wait_class {
	KVM_WAIT_SAME_VM,
	KVM_WAIT_OTHER_VM,
	KVM_WAIT_VHOST,
	KVM_WAIT_HOST,
	KVM_WAIT_THROTTLED,
	KVM_WAIT_CLASSES
};

/* Per vCPU slot, summed per VM and per vCPU by the agent; all u64 words,
 * folded word by word (on_vcpu_destroy, pmda/kvm.c). The wait words count
 * in the run queue's clock (rq->clock), as the kernel's sched_info does;
 * a wait's count is its histogram bucket, a halt's likewise. */
struct kvm_vm_stats {
	__u64 exits;
	__u64 exit_ns;
	__u64 uexits;
	__u64 uexit_ns;
	__u64 wait_by[KVM_WAIT_CLASSES];	/* run-queue wait, by what held the CPU */
	__u64 halt_polled;	/* halts halt-polling ended: KVM's halt_successful_poll,
				 * since seen (classic tracepoint: halts that did not sleep) */
	__u64 halt_ns;		/* time halted, polling included */
	__u64 halt_poll_ns;	/* KVM's own halt_poll_success_ns + halt_poll_fail_ns, since seen */
	__u64 halt_slept;	/* halts that slept (kvm_vcpu_wakeup's waited) */
	__u64 wait_hist[VIRT_HIST_BUCKETS];
	__u64 halt_hist[VIRT_HIST_BUCKETS];
	__u64 exits_unseen;	/* KVM's own exits of the vCPU (vcpu->stat.exits) between
				 * two exits counted in "exits", not counted there */
};

/* Nested-paging faults by what the host had to do (npf): kvm.bpf.c
 * snapshots at kvm_page_fault (an NPF / EPT-violation exit) the counters
 * below and classifies the fault at the entry that ends the exit: its
 * kind is the first counter that moved, in this order; mmio also when the
 * fault's error code has the reserved bit (AMD: an MMIO SPTE hit) or the
 * exit is an Intel EPT_MISCONFIG; retry when none moved. */
enum kvm_npf_kind {
	KVM_NPF_MMIO,		/* vcpu->stat.pf_emulate: the access was emulated */
	KVM_NPF_MAJOR,		/* the thread's maj_flt: a host fault that waited (swap-in, file) */
	KVM_NPF_MINOR,		/* the thread's min_flt: a host fault that did not wait */
	KVM_NPF_ASYNC,		/* vcpu->arch.apf.id: the host fault went to a kworker */
	KVM_NPF_FAST,		/* vcpu->stat.pf_fast: fixed without mmu_lock */
	KVM_NPF_MAPPING,	/* vcpu->stat.pf_fixed: host page present, SPTE installed */
	KVM_NPF_RETRY,		/* nothing moved: spurious, raced, retried */
	KVM_NPF_KINDS
};
#define KVM_NPF_COUNTERS	KVM_NPF_RETRY

/* "npfs" is keyed by process and kind */
#define KVM_NPF_KEY(tgid, kind)	((__u64)(tgid) << 32 | (__u32)(kind))
#define KVM_NPF_TGID(k)		((__u32)((k) >> 32))
#define KVM_NPF_KIND(k)		((__u32)(k))

struct kvm_npf_snap {
	__u64 of;		/* exit_ts of the exit the fault is of (0: none) */
	__u64 gpa;		/* the faulting guest-physical address */
	__u64 rsvd;		/* AMD error code bit 3 (PFERR_RSVD_MASK) */
	__u64 c[KVM_NPF_COUNTERS];	/* the counters at the fault */
};

/* One slot per vCPU in the "vcpus" array, at the first of KVM_PROBE
 * places from the hash of its identity: the struct kvm_vcpu * (tp_btf,
 * raw_tp) or its thread's pid_tgid (classic tracepoint). The BPF side
 * claims a free slot (ident 0) with a compare-and-swap and retires one
 * (KVM_VCPU_RETIRED) when a new VMM's vCPU turns up at a dead one's
 * address; the agent folds a retired slot's or a dead VMM's counts into
 * its VM and frees the slot (ident written last). Where the destroy hook
 * attaches (tp_btf: fentry, raw_tp: kprobe), a destroyed vCPU's slot is
 * folded into "vms_gone" (per process) and "vcpus_gone" (per process and
 * vcpu_id) and freed by the BPF side at once. A claim writes vcpu_id
 * before adopt() writes tgid (the agent reads slots whose tgid is set):
 * the id is read there only, never per exit. */
#define KVM_VCPU_KEY(tgid, id)	((__u64)(tgid) << 32 | (__u32)(id))
#define KVM_PROBE		8
#define KVM_VCPU_RETIRED	1

struct kvm_vcpu_slot {
	__u64 ident;		/* 0: free */
	__u64 owner;		/* tp_btf: vcpu->pid; else pid_tgid: thread last seen */
	__u64 exit_ts;		/* 0: not inside an exit */
	__u64 exit;		/* this exit: KVM_EXIT_WORD(its "exits" slot, its code) */
	/* An exit's hypercall and return to the VMM are marked with its
	 * exit_ts, so an exit stores nothing to clear the last exit's. */
	__u64 hcall_of;		/* exit_ts of the exit that was hypercall hcall_nr */
	__u64 hcall_nr;
	__u64 uexit_of;		/* exit_ts of the exit that went to the VMM at uexit_ts */
	__u64 uexit_ts;
	__u64 vmcb;		/* AMD, vmcb_cache: the vCPU's svm->vmcb (0: read it per exit) */
	__u32 tgid;		/* the VMM process (0: not known yet) */
	__u32 tid;		/* the thread running the vCPU */
	__u32 isa;		/* KVM_ISA_*, written once at claim */
	__u32 ureason;
	__u32 vcpu_id;		/* KVM's vcpu_id, written once at claim */
	__u32 sub_kind;		/* subreasons: KVM_SUB_* << 16 | direction (sub_of) */
	__u32 wait_cpu;		/* the CPU whose run queue the vCPU waits on, + 1 (0: none) */
	__u32 unlisted_cpu;	/* queued there, + 1, but not in its list (unlisted_mark()) */
	/* A wait: charged to what held the CPU up to wait_acct, in wait_cpu's
	 * rq clock (0: from when it was queued there, after a migration);
	 * its thread's run_delay when it began and when it came to wait_cpu */
	__u64 wait_acct;
	__u64 wait_rd;
	__u64 wait_leg_rd;
	__u64 wait_task;	/* the thread's struct task_struct * */
	__u64 wait_throttled;	/* its CPU quota was used up at wait_acct */
	__u64 poll_seen;	/* KVM's halt-poll ns at the last halt, + 1 (0: not read) */
	__u64 polled_seen;	/* KVM's successful halt polls then, + 1 */
	/* subreasons: the key of this exit's last sub-reason (port, MSR,
	 * leaf, address), marked with its exit_ts like hcall_of */
	__u64 sub_of;
	__u64 sub_code;
	__u64 kvm_exits_seen;	/* KVM's vcpu->stat.exits at the last exit counted, + 1
				 * (0: none yet; classic tracepoint: never read) */
	__u64 sched_rd;		/* sched: its thread's run_delay (schedstat) as of the last
				 * switch, wake-up or migration the hooks saw, + 1 (0: none) */
	__u64 timer_advance;	/* KVM's timer advance (ns) at its last TSC-deadline timer
				 * delivered, + 1 (0: none yet; timer_lateness) */
	struct kvm_npf_snap npf;	/* the nested-paging fault of an exit (npf) */
	struct kvm_vm_stats vm;	/* this vCPU's counts: per VM and per vCPU */
};

/* exits_unseen (kvm.bpf.c exits_reconcile()): from KVM's count of a
 * vCPU's exits at the exit the agent counts now, + 1, and at the last one
 * it counted (seen, + 1; 0: none yet), the exits KVM counted between the
 * two; none when KVM's count grew by one or less (stepped back: 0 written
 * to its debugfs file). */
static inline __attribute__((always_inline)) __u64 kvm_exits_unseen_since(__u64 seen, __u64 now)
{
	return seen && now > seen + 1 ? now - seen - 1 : 0;
}

#define KVM_EXIT_WORD(slot, code)	((__u64)(slot) << 32 | (__u32)(code))
#define KVM_EXIT_SLOT(w)		((__u32)((w) >> 32))
#define KVM_EXIT_CODE(w)		((__u32)(w))

/* The "threads" array: vCPU thread id -> its vCPU's slot, for the
 * hypercall and userspace-exit tracepoints (they carry no vCPU); same
 * probing, keyed by tid. One word, so that the BPF side and the agent
 * change an entry with one compare-and-swap: 0 is free. */
#define KVM_THREAD(tid, vcpu)	((__u64)(vcpu) << 32 | (__u32)(tid))
#define KVM_THREAD_TID(t)	((__u32)(t))
#define KVM_THREAD_VCPU(t)	((__u32)((t) >> 32))

/* The "waitq" array, one entry per CPU (KVM_CPUS_MAX: Debian's amd64
 * CONFIG_NR_CPUS; switches on CPUs beyond are not looked at): the tracked vCPU running there and
 * the vCPUs waiting on its run queue (slot index + 1; 0: none). waiting
 * counts the waiter[] entries in use and, in units of KVM_WAIT_UNLISTED, the
 * vCPUs queued here but not in the list (a full list, or a wait the kernel
 * does not count; each slot's unlisted_cpu): until such a vCPU runs or
 * leaves, every switch here is looked at, so it is found when it runs. A
 * context switch on a CPU whose word any is 0 is not looked at further. */
#define KVM_CPUS_MAX		8192
#define KVM_WAITERS		8
#define KVM_WAIT_UNLISTED	(1u << 16)
struct kvm_cpu_wait {
	union {
		struct {
			__u32 waiting;	/* entries in use + KVM_WAIT_UNLISTED x unlisted */
			__u32 cur;	/* the vCPU running here */
		};
		__u64 any;
	};
	__u32 waiter[KVM_WAITERS];
};

/* vCPU threads, a bit per thread id (tid < KVM_TID_MAX, the kernel's
 * PID_MAX_LIMIT on 64-bit): the wake-up and migration hooks' one check. */
#define KVM_TID_MAX		(1u << 22)
#define KVM_TID_BIT(tid)	(1ull << ((tid) & 63))
#define KVM_TID_WORD(tid)	(((tid) & (KVM_TID_MAX - 1)) >> 6)

enum kvm_drop {
	KVM_DROP_VCPU,		/* an event of a vCPU without a slot (or thread entry) */
	KVM_DROP_OTHER,		/* exits_other full */
	KVM_DROP_HCALL,		/* hcalls full */
	KVM_DROP_VM,		/* more VMM processes than max_vms (vms_gone full) */
	KVM_DROP_UEXIT,		/* KVM_EXIT_* code >= KVM_UEXIT_REASONS */
	KVM_DROP_VCPU_GONE,	/* a destroyed vCPU's per-vCPU counts (vcpus_gone full) */
	KVM_DROP_WAITQ,		/* a wait not seen: KVM_WAITERS vCPUs waited on its CPU already */
	KVM_DROP_SUB,		/* a sub-reason event not counted: subs or sub_used full */
	KVM_DROP_NPF,		/* a nested-paging fault not counted: npfs full */
	KVM_DROP_IRQ,		/* interrupts / timer_lateness: an interrupt or timer event not
				 * counted (irqs full, pending table full, no vCPU thread) */
	KVM_DROPS
};

/* What exits are about (subreasons): per VMM process, the events KVM
 * traces while it handles an exit, by kind and key. The first sub_top keys
 * of a kind a process shows get entries of their own ("subs"); later keys
 * count in the process's KVM_SUB_OTHER entry of the kind (dir 0): counters
 * stay monotonic, no key moves between rows. */
enum kvm_sub_kind {
	KVM_SUB_PIO,		/* kvm_pio: port, dir KVM_SUB_IN / KVM_SUB_OUT */
	KVM_SUB_MSR,		/* kvm_msr: MSR index, dir KVM_SUB_RD / KVM_SUB_WR */
	KVM_SUB_CPUID,		/* kvm_cpuid: leaf (function), dir 0 */
	KVM_SUB_MMIO,		/* kvm_mmio: guest-physical address, dir KVM_SUB_RD / KVM_SUB_WR */
	KVM_SUB_KINDS
};
#define KVM_SUB_RD		0
#define KVM_SUB_WR		1
#define KVM_SUB_IN		KVM_SUB_RD
#define KVM_SUB_OUT		KVM_SUB_WR
#define KVM_SUB_OTHER		(~0ULL)		/* code of a process's "other" entry */
#define KVM_SUB_WORD(kind, dir)	((__u32)(kind) << 16 | (__u16)(dir))

struct kvm_sub_key {
	__u32 tgid;
	__u16 kind;
	__u16 dir;
	__u64 code;
};

struct kvm_sub_stats {
	__u64 count;
	__u64 time_ns;		/* exit->entry time of the exits it was the last event of */
};

/* Per VMM process: keys of each kind that have entries (capped at sub_top) */
struct kvm_sub_used {
	__u32 n[KVM_SUB_KINDS];
};

/* Interrupts and guest timers (interrupts = true, timer_lateness = true):
 * per VMM process, one "irqs" entry (struct kvm_stats) per record. The
 * latency records time an interrupt from the local APIC's accept (a timer:
 * its expiry) to the VM entry that injects it, by kind; the timer records
 * the lateness (late) or earliness (early) of a TSC-deadline timer at the
 * entry that delivers it (kvm_wait_lapic_expire), in ns; the event
 * records count only (count word). */
enum kvm_irq_rec {
	KVM_IRQ_TIMER,		/* the LAPIC timer (LVTT) */
	KVM_IRQ_IPI,		/* an IPI between the VM's vCPUs (ICR write, PV send-IPI) */
	KVM_IRQ_DEVICE,		/* an MSI (irqfd, KVM_SIGNAL_MSI) */
	KVM_IRQ_OTHER,		/* anything else: IOAPIC/PIC (INTx), LINT, PMI, ... */
	KVM_IRQ_KINDS,
	KVM_TIMER_LATE = KVM_IRQ_KINDS,
	KVM_TIMER_EARLY,
	KVM_IRQ_COALESCED,	/* accepted while the same vector was pending */
	KVM_IRQ_POSTED,		/* accepted with APICv/AVIC active: delivered by hardware, not timed */
	KVM_IRQ_UNMATCHED,	/* injected without an accept seen (ExtINT, accepted before attach) */
	KVM_IRQ_RECS
};

struct kvm_irq_key {
	__u32 tgid;
	__u32 rec;		/* enum kvm_irq_rec */
};

/* Per vCPU slot (same index, "irq_pend"): the interrupts accepted and not
 * yet injected. A word is (accept ns << 10) | kind << 8 | vector, 0 free
 * (a fixed interrupt's vector is >= 16). start: the first expiry of the
 * vCPU's LAPIC timer not yet accepted (0: none). ident: the slot's ident
 * the entry belongs to (another: the entry is stale, reset). */
#define KVM_IRQ_PENDING		8
#define KVM_IRQ_WORD(ns, kind, vec)	((__u64)(ns) << 10 | (__u64)(kind) << 8 | ((vec) & 0xff))
#define KVM_IRQ_WORD_VEC(w)	((__u32)(w) & 0xff)
#define KVM_IRQ_WORD_KIND(w)	((__u32)((w) >> 8) & 3)
#define KVM_IRQ_WORD_NS(w)	((w) >> 10)
struct kvm_irq_pend {
	__u64 ident;
	__u64 start;
	__u64 e[KVM_IRQ_PENDING];
};

#endif
