// SPDX-License-Identifier: GPL-2.0
/*
 * KVM exits: counts, exit->entry time and log2 latency per exit reason, per
 * hypercall number and per KVM_EXIT_* reason of exits to the VMM, and per VMM
 * process.
 *
 * Three attach variants of the same handlers, picked at run time by
 * pmda/kvm.c: tp_btf (cheapest), raw_tp, and the classic tracepoint. The
 * exit reason is read from the vendor's vCPU struct through CO-RE (module
 * BTF of kvm_amd / kvm_intel), exactly what the tracepoint itself records via
 * svm_get_exit_info() / vmx_get_exit_info().
 *
 * Per-vCPU state and the per-reason stats live in plain arrays, whose
 * lookups the verifier inlines (array_map_gen_lookup): on tp_btf an exit
 * calls no helper but the clock and the vendor struct reads. A vCPU runs
 * on one thread at a time (KVM_RUN holds vcpu->mutex), so its slot needs
 * no atomics; the reason stats, shared by every vCPU, add atomically.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "kvm.h"
#include "virt_bpf.h"
#include "core_fixes.bpf.h"
#include "kvm_kernel.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* false: counts only (no kvm_entry program, no pairing) */
const volatile bool latency = true;

/* false: no scheduler hooks (the wait histogram and its split by what
 * held the CPU); their programs are not loaded */
const volatile bool sched = true;

/* true (AMD, tp_btf, where svm_switch_vmcb() can be probed): slots keep
 * their vCPU's svm->vmcb, kept current by virt_kvm_tp_btf_switch_vmcb */
const volatile bool vmcb_cache = false;

/* true: what exits are about (kvm_pio, kvm_msr, kvm_cpuid, kvm_mmio,
 * kvm_fast_mmio), per VMM process and key; false: their programs are not
 * loaded, and the entry program is the one without the sub-reason's time */
const volatile bool subreasons = false;

/* keys of each kind per VMM process with entries of their own (kvm.h) */
const volatile __u32 sub_top = 16;

/* The vendor structs the exit reason is read from (struct vcpu_svm,
 * vcpu_vmx and what changed in them): bpf/core_fixes.bpf.h. The classic
 * tracepoint's records below are no version flavours but this family's
 * attach variant: they stay here. */

/* Classic tracepoint records (include/trace/events/kvm.h, arch/x86/kvm/trace.h). */
/* arch/x86/kvm/trace.h TRACE_EVENT(kvm_exit) */
struct trace_event_raw_kvm_exit___virt {
	unsigned int exit_reason;
	__u32 isa;
	unsigned int vcpu_id;
} __attribute__((preserve_access_index));

/* arch/x86/kvm/trace.h TRACE_EVENT(kvm_entry) */
struct trace_event_raw_kvm_entry___virt {
	unsigned int vcpu_id;
} __attribute__((preserve_access_index));

/* include/trace/events/kvm.h TRACE_EVENT(kvm_vcpu_wakeup) */
struct trace_event_raw_kvm_vcpu_wakeup___virt {
	__u64 ns;
	bool waited;
} __attribute__((preserve_access_index));

/* arch/x86/kvm/trace.h TRACE_EVENT(kvm_hypercall) */
struct trace_event_raw_kvm_hypercall___virt {
	unsigned long nr;
} __attribute__((preserve_access_index));

/* include/trace/events/kvm.h TRACE_EVENT(kvm_userspace_exit) */
struct trace_event_raw_kvm_userspace_exit___virt {
	__u32 reason;
} __attribute__((preserve_access_index));

/* arch/x86/kvm/trace.h TRACE_EVENT(kvm_pio) */
struct trace_event_raw_kvm_pio___virt {
	unsigned int rw;
	unsigned int port;
} __attribute__((preserve_access_index));

/* arch/x86/kvm/trace.h TRACE_EVENT(kvm_msr) */
struct trace_event_raw_kvm_msr___virt {
	unsigned int write;
	__u32 ecx;
} __attribute__((preserve_access_index));

/* arch/x86/kvm/trace.h TRACE_EVENT(kvm_cpuid) */
struct trace_event_raw_kvm_cpuid___virt {
	unsigned int function;
} __attribute__((preserve_access_index));

/* include/trace/events/kvm.h TRACE_EVENT(kvm_mmio) */
struct trace_event_raw_kvm_mmio___virt {
	__u32 type;
	__u64 gpa;
} __attribute__((preserve_access_index));

/* include/trace/events/kvm.h: kvm_mmio's type. A read that goes to the
 * VMM is traced twice, READ_UNSATISFIED when it exits (read_exit_mmio())
 * and READ when the VMM's data completes it (read_prepare()); a read the
 * kernel handles once, READ (vcpu_mmio_read()); a write once, WRITE
 * (write_mmio()). READ and WRITE count each access once. */
#define VIRT_MMIO_READ	1
#define VIRT_MMIO_WRITE	2

/* arch/x86/kvm/trace.h TRACE_EVENT(kvm_fast_mmio). VMX only: a write to a
 * zero-length ioeventfd (a virtio doorbell) exits with EPT_MISCONFIG and
 * handle_ept_misconfig() (arch/x86/kvm/vmx/vmx.c) completes it on the
 * KVM_FAST_MMIO_BUS without emulating it: no kvm_mmio. Counted as a write. */
struct trace_event_raw_kvm_fast_mmio___virt {
	__u64 gpa;
} __attribute__((preserve_access_index));

/* log2 of the entries of "vcpus" and "threads" (set by the agent) */
const volatile __u32 slot_bits = 13;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1 << 13);
	__type(key, __u32);
	__type(value, struct kvm_vcpu_slot);
} vcpus SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1 << 13);
	__type(key, __u32);
	__type(value, __u64);
} threads SEC(".maps");

/* Per VMM process (tgid): what the slots of its destroyed vCPUs counted
 * (sized max_vms by the agent, which deletes exited processes' entries). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct kvm_vm_stats);
} vms_gone SEC(".maps");

/* Per VMM process and vcpu_id (KVM_VCPU_KEY): what the slots of its
 * destroyed vCPUs counted, for the per-vCPU rows (sized max_vcpus by the
 * agent, which deletes exited processes' entries). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct kvm_vm_stats);
} vcpus_gone SEC(".maps");

/* Per CPU: who runs and who waits there (kvm.h). Global data, not an
 * array map: a context switch's one check is then a bounds test and a load,
 * with no key stored to the stack nor a lookup inlined. */
struct kvm_cpu_wait waitq[KVM_CPUS_MAX];

/* Threads of vCPUs (set by index_thread(), cleared when unindexed, here
 * or by the agent) and VMM processes (set at adopt(), cleared by the agent
 * when the process exits), a bit per id. */
__u64 vcpu_tids[KVM_TID_MAX / 64];
__u64 vmm_tgids[KVM_TID_MAX / 64];

/* Every fold of a slot into vms_gone is bracketed by these: the agent sums
 * slots and vms_gone again when a fold ran meanwhile. */
__u64 folds_begun, folds_done;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, KVM_SLOTS);
	__type(key, __u32);
	__type(value, struct kvm_stats);
} exits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 64);
	__type(key, __u64);
	__type(value, struct kvm_stats);
} exits_other SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 256);
	__type(key, __u64);
	__type(value, struct kvm_stats);
} hcalls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, KVM_UEXIT_REASONS);
	__type(key, __u32);
	__type(value, struct kvm_stats);
} uexits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, KVM_DROPS);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

/* subreasons (kvm.h): sized by the agent (1 entry each when off) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1);
	__type(key, struct kvm_sub_key);
	__type(value, struct kvm_sub_stats);
} subs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct kvm_sub_used);
} sub_used SEC(".maps");

/* nested-paging faults (npf, kvm.h): per process and kind; sized by the
 * agent (1 entry when off), which deletes exited processes' entries */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1);
	__type(key, __u64);
	__type(value, struct kvm_stats);
} npfs SEC(".maps");
/* interrupts and guest timers (kvm.h): sized by the agent (1 entry each
 * when both are off) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, struct kvm_irq_key);
	__type(value, struct kvm_stats);
} irqs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct kvm_irq_pend);
} irq_pend SEC(".maps");

/* Per CPU: the kind of the interrupt the current task is about to make
 * the local APIC accept (irq_mark()) */
struct kvm_irq_mark {
	__u64 task;
	__u32 vector;		/* KVM_IRQ_ANY_VECTOR: any */
	__u32 kind;
};
#define KVM_IRQ_ANY_VECTOR	0x100

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct kvm_irq_mark);
} irq_marks SEC(".maps");

static const struct kvm_sub_stats zero_sub;
static const struct kvm_sub_used zero_used;
static const struct kvm_stats zero_stats;
static const struct kvm_vm_stats zero_vm;

static __always_inline __u32 exit_slot(__u32 isa, __u32 code)
{
	if (isa == KVM_ISA_VMX)
		return (code & 0xffff) < 128 ? KVM_SLOT_VMX + (code & 0xffff) : KVM_SLOT_OTHER;
	if (code < 0x100)
		return KVM_SLOT_SVM_LO + code;
	if (code >= 0x400 && code < 0x480)
		return KVM_SLOT_SVM_HI + (code - 0x400);
	return KVM_SLOT_OTHER;
}

/* What trace_kvm_exit() records as exit_reason: svm_get_exit_info() reads
 * svm->vmcb->control.exit_code, vmx_get_exit_info() vmx->exit_reason.full.
 * Both lie beyond struct kvm_vcpu, in types of the vendor module's BTF, so
 * they are probe reads even on tp_btf (bpf_rdonly_cast takes vmlinux types
 * only). */
static __always_inline __u32 vendor_exit_code(void *vcpu, __u32 isa)
{
	if (isa == KVM_ISA_SVM)
		return svm_vcpu_exit_code(vcpu);
	if (isa == KVM_ISA_VMX)
		return vmx_vcpu_exit_reason(vcpu);
	return 0xffffffffu;
}

static __always_inline struct kvm_stats *exit_stats(__u32 isa, __u32 code, __u32 slot)
{
	__u64 key;

	if (slot != KVM_SLOT_OTHER)
		return bpf_map_lookup_elem(&exits, &slot);
	key = (__u64)isa << 32 | code;
	return VIRT_LOOKUP_OR_INIT(exits_other, &key, &zero_stats, drops, KVM_DROP_OTHER);
}

/* A timed event: its time and its bucket, which counts it (kvm.h). The
 * reason stats are shared by every vCPU (atomic adds); hypercall and
 * KVM_EXIT_* stats are per CPU (plain adds). */
static __always_inline void account(struct kvm_stats *s, __u64 ns, bool shared)
{
	__u32 b = virt_log2_bucket(ns);

	if (b >= VIRT_HIST_BUCKETS)
		return;
	if (shared) {
		__sync_fetch_and_add(&s->time_ns, ns);
		__sync_fetch_and_add(&s->hist[b], 1);
	} else {
		s->time_ns += ns;
		s->hist[b]++;
	}
}

/* ------------------------------------------------------------ vCPU slots */

/* First place of an identity's probe (Fibonacci hashing of its low 32
 * bits). A 32-bit move is the one ALU operation the verifier lets a
 * privileged program apply to a BTF pointer (check_alu_op: the result is a
 * scalar); it refuses shifts and multiplies of the pointer itself. */
static __always_inline __u32 home(__u64 ident)
{
	__u32 lo;

	asm volatile("%[lo] = %[id]" : [lo] "=w"(lo) : [id] "w"(ident));
	return (lo * 0x9E3779B1u) >> (32 - slot_bits);
}

static __always_inline __u32 probe_key(__u32 h, __u32 i)
{
	return (h + i) & ((1u << slot_bits) - 1);
}

static __always_inline struct kvm_vcpu_slot *find_vcpu(__u64 ident, __u32 *idx)
{
	__u32 h = home(ident);

	for (__u32 i = 0; i < KVM_PROBE; i++) {
		__u32 k = probe_key(h, i);
		struct kvm_vcpu_slot *s = bpf_map_lookup_elem(&vcpus, &k);

		if (s && s->ident == ident) {
			*idx = k;
			return s;
		}
	}
	return NULL;
}

/* Where a claim finds the vCPU's KVM vcpu_id: a BTF-typed struct kvm_vcpu
 * (tp_btf: a plain load), an untyped one (raw_tp: a probe read) or the
 * classic tracepoint's record. Read at claim only, not per exit. */
enum vcpu_id_src { ID_BTF, ID_PROBE, ID_RECORD };

static __always_inline __u32 vcpu_id_of(enum vcpu_id_src src, void *p)
{
	if (src == ID_BTF)
		return (__u32)((struct kvm_vcpu *)p)->vcpu_id;
	if (src == ID_PROBE)
		return (__u32)BPF_CORE_READ((struct kvm_vcpu *)p, vcpu_id);
	return ((struct trace_event_raw_kvm_exit___virt *)p)->vcpu_id;
}

/* The vCPU's current svm->vmcb, where slots keep it (vmcb_cache): read
 * at claim, then kept current by virt_kvm_tp_btf_switch_vmcb. */
static __always_inline __u64 vmcb_of(enum vcpu_id_src src, void *p)
{
	if (!vmcb_cache || src != ID_BTF || !svm_vcpu_exists())
		return 0;
	return svm_vcpu_vmcb(p);
}

/* What trace_kvm_exit() recorded as exit_reason (vendor_exit_code()), the
 * classic tracepoint's record, or on AMD with a slot that keeps svm->vmcb
 * one probe read instead of two. */
static __always_inline __u32 exit_code(__u32 isa, enum vcpu_id_src src, void *p,
				       const struct kvm_vcpu_slot *s)
{
	if (src == ID_RECORD)
		return ((struct trace_event_raw_kvm_exit___virt *)p)->exit_reason;
	if (vmcb_cache && isa == KVM_ISA_SVM && s && s->vmcb)
		return svm_vmcb_exit_code((void *)s->vmcb);
	return vendor_exit_code(p, isa);
}

/* KVM's own count of the vCPU's exits, vcpu->stat.exits: a plain load of
 * the BTF-typed vCPU (tp_btf), a probe read of the untyped one (raw_tp).
 * The classic tracepoint's record has no vCPU: not read there. */
static __always_inline __u64 vcpu_kvm_exits(enum vcpu_id_src src, void *p)
{
	if (src == ID_BTF)
		return ((struct kvm_vcpu *)p)->stat.exits;
	return BPF_CORE_READ((struct kvm_vcpu *)p, stat.exits);
}

/* An exit the agent counts in s->vm.exits, read beside KVM's own count
 * of the vCPU's exits at the same instant on the vCPU's thread (the only
 * writer of both): what KVM counted since the last exit counted, beyond
 * this one, are exits the agent did not see. vcpu_enter_guest()
 * (arch/x86/kvm/x86.c) adds one to stat.exits per exit, fastpath
 * re-entries included, before the next kvm_entry; whether the read at
 * kvm_exit comes before or after that (svm_handle_exit() on 6.1 AMD: after)
 * is the same at every exit of a kernel, so the difference is exact. A
 * count that steps back (0 written to KVM's debugfs file) starts again. */
static __always_inline void exits_reconcile(struct kvm_vcpu_slot *s, enum vcpu_id_src src,
					    void *p)
{
	__u64 now;

	if (src == ID_RECORD)
		return;
	now = vcpu_kvm_exits(src, p) + 1;
	s->vm.exits_unseen += kvm_exits_unseen_since(s->kvm_exits_seen, now);
	s->kvm_exits_seen = now;
}

static __always_inline struct kvm_vcpu_slot *claim_vcpu(__u64 ident, __u32 *idx, __u32 isa,
							enum vcpu_id_src src, void *p)
{
	__u32 h = home(ident);

	for (__u32 i = 0; i < KVM_PROBE; i++) {
		__u32 k = probe_key(h, i);
		struct kvm_vcpu_slot *s = bpf_map_lookup_elem(&vcpus, &k);

		if (s && !s->ident && !__sync_val_compare_and_swap(&s->ident, 0, ident)) {
			s->vcpu_id = vcpu_id_of(src, p);
			s->isa = isa;
			if (src != ID_RECORD) {		/* KVM's halt stats from here on */
				s->poll_seen = vcpu_halt_poll_ns(p) + 1;
				s->polled_seen = vcpu_halt_polls(p) + 1;
			}
			s->vmcb = vmcb_of(src, p);
			asm volatile("" ::: "memory");	/* before adopt() sets tgid */
			*idx = k;
			return s;
		}
	}
	VIRT_DROP(drops, KVM_DROP_VCPU);
	return NULL;
}

/* In tid's probe window of "threads", swap the first entry that is empty
 * or tid's (claim), or else that holds from, to to; whether one was. */
static __always_inline bool swap_thread(__u32 tid, bool claim, __u64 from, __u64 to)
{
	__u32 h = home(tid);

	for (__u32 i = 0; i < KVM_PROBE; i++) {
		__u32 k = probe_key(h, i);
		__u64 *t = bpf_map_lookup_elem(&threads, &k);
		__u64 cur;

		if (!t)
			continue;
		cur = *t;
		if (claim ? !cur || KVM_THREAD_TID(cur) == tid : cur == from) {
			if (__sync_val_compare_and_swap(t, cur, to) == cur)
				return true;
			if (!claim)	/* another CPU freed it */
				return false;
		}
	}
	return false;
}

static __always_inline bool id_marked(const __u64 *bits, __u32 id)
{
	return bits[KVM_TID_WORD(id)] & KVM_TID_BIT(id);
}

static __always_inline void id_mark(__u64 *bits, __u32 id, bool on)
{
	if (on)
		__sync_fetch_and_or(&bits[KVM_TID_WORD(id)], KVM_TID_BIT(id));
	else
		__sync_fetch_and_and(&bits[KVM_TID_WORD(id)], ~KVM_TID_BIT(id));
}

/* Point the thread's entry of "threads" at its vCPU's slot; whether it
 * could (no room counts a drop). */
static __always_inline bool index_thread(__u32 tid, __u32 idx)
{
	if (swap_thread(tid, true, 0, KVM_THREAD(tid, idx))) {
		id_mark(vcpu_tids, tid, true);
		return true;
	}
	VIRT_DROP(drops, KVM_DROP_VCPU);
	return false;
}

/* The slot of the vCPU that thread tid runs, and its index. */
static __always_inline struct kvm_vcpu_slot *tid_vcpu(__u32 tid, __u32 *idx)
{
	__u32 h = home(tid);

	for (__u32 i = 0; i < KVM_PROBE; i++) {
		__u32 k = probe_key(h, i);
		__u64 *t = bpf_map_lookup_elem(&threads, &k);

		if (t && KVM_THREAD_TID(*t) == tid) {
			__u32 v = KVM_THREAD_VCPU(*t);
			struct kvm_vcpu_slot *s = bpf_map_lookup_elem(&vcpus, &v);

			*idx = v;
			return s && s->tid == tid && s->ident > KVM_VCPU_RETIRED ? s : NULL;
		}
	}
	return NULL;
}

/* The slot of the vCPU the calling thread runs (hypercall, userspace exit). */
static __always_inline struct kvm_vcpu_slot *thread_vcpu(void)
{
	__u32 idx;

	return tid_vcpu((__u32)bpf_get_current_pid_tgid(), &idx);
}

/* ------------------------------------------------------ run-queue waits */

#define VIRT_TASK_RUNNING 0

/* The barrier keeps clang from forming the address before the bounds test
 * (the verifier then sees an unbounded offset). */
static __always_inline struct kvm_cpu_wait *cpu_wait(__u32 cpu)
{
	if (cpu >= KVM_CPUS_MAX)
		return NULL;
	barrier_var(cpu);
	return &waitq[cpu];
}

/* The vCPU of slot idx runs on this CPU (adopt(): its thread is current
 * here), so the CPU's next switch is looked at. */
static __always_inline void vcpu_runs_here(__u32 idx)
{
	struct kvm_cpu_wait *w = cpu_wait(bpf_get_smp_processor_id());

	if (w)
		w->cur = idx + 1;
}

/* Free entry i of w, if it still holds v. */
static __always_inline void waiter_drop(struct kvm_cpu_wait *w, __u32 i, __u32 v)
{
	if (__sync_val_compare_and_swap(&w->waiter[i], v, 0) == v)
		__sync_fetch_and_add(&w->waiting, -1);
}

/* Slot s is queued on cpu but not in its list (a full list, or a wait the
 * kernel does not count): every switch there is looked at until s runs,
 * moves on or is destroyed (unlisted_clear()), so it is found when it runs
 * and its next wait is seen. Once per slot. */
static __always_inline void unlisted_mark(struct kvm_vcpu_slot *s, struct kvm_cpu_wait *w, __u32 cpu)
{
	if (!__sync_val_compare_and_swap(&s->unlisted_cpu, 0, cpu + 1))
		__sync_fetch_and_add(&w->waiting, KVM_WAIT_UNLISTED);
}

/* Slot s is no longer queued unlisted; a compare-and-swap, since a vCPU is
 * destroyed from another CPU. */
static __always_inline void unlisted_clear(struct kvm_vcpu_slot *s)
{
	__u32 c = s->unlisted_cpu;
	struct kvm_cpu_wait *w;

	if (!c || __sync_val_compare_and_swap(&s->unlisted_cpu, c, 0) != c)
		return;
	if ((w = cpu_wait(c - 1)))
		__sync_fetch_and_add(&w->waiting, -KVM_WAIT_UNLISTED);
}

/* Slot idx, whose thread is t, waits on cpu's run queue, charged from
 * rq clock acct there (0: from when t is queued there). The slot says
 * where before the entry is published: a switch on cpu drops an entry
 * whose slot names another CPU. A full list counts a drop (the wait is
 * not seen) and marks the slot unlisted there, so the vCPU is found when
 * it runs. */
static __always_inline void wait_list(struct kvm_vcpu_slot *s, __u32 idx, __u32 cpu,
				      struct task_struct *t, __u64 acct)
{
	struct kvm_cpu_wait *w = cpu_wait(cpu);

	if (!w)
		return;
	s->wait_acct = acct;
	s->wait_task = (__u64)t;
	s->wait_throttled = acct && task_throttled_at((__u64)t);
	s->wait_cpu = cpu + 1;
	for (__u32 i = 0; i < KVM_WAITERS; i++) {
		if (!w->waiter[i] && !__sync_val_compare_and_swap(&w->waiter[i], 0, idx + 1)) {
			__sync_fetch_and_add(&w->waiting, 1);
			return;
		}
	}
	s->wait_cpu = 0;
	unlisted_mark(s, w, cpu);
	VIRT_DROP(drops, KVM_DROP_WAITQ);
}

/* A wait begins: t was queued at rq clock queued on cpu. */
static __always_inline void wait_begin(struct kvm_vcpu_slot *s, __u32 idx, __u32 cpu,
				       struct task_struct *t, __u64 queued)
{
	s->wait_rd = s->wait_leg_rd = task_run_delay(t);
	wait_list(s, idx, cpu, t, queued);
}

/* Slot idx waits no more (or moves to another CPU's list). */
static __always_inline void wait_unlist(struct kvm_vcpu_slot *s, __u32 idx)
{
	struct kvm_cpu_wait *w = s->wait_cpu ? cpu_wait(s->wait_cpu - 1) : NULL;

	s->wait_cpu = 0;
	for (__u32 i = 0; w && i < KVM_WAITERS; i++) {
		if (w->waiter[i] == idx + 1) {
			waiter_drop(w, i, idx + 1);
			return;
		}
	}
}

#define VIRT_PF_KTHREAD 0x00200000	/* include/linux/sched.h */

/* A vhost worker: a kernel thread "vhost-<VMM pid>" before Linux 6.4, a
 * thread of the VMM process of that name since ("vhost: use vhost_tasks
 * for worker threads", v6.4): checked before the thread group. */
static __always_inline bool vhost_worker(struct task_struct *t)
{
	return t->comm[0] == 'v' && t->comm[1] == 'h' && t->comm[2] == 'o' &&
	       t->comm[3] == 's' && t->comm[4] == 't' && t->comm[5] == '-' &&
	       ((t->flags & VIRT_PF_KTHREAD) || id_marked(vmm_tgids, t->tgid));
}

/* KVM's NX huge-page recovery worker "kvm-nx-lpage-recovery": a kernel
 * thread before Linux 6.13 (kvm_vm_create_worker_thread()), a thread of
 * the VMM since ("KVM: x86: switch hugepage recovery thread to
 * vhost_task", v6.13, in 6.12.y stable): host on either. */
static __always_inline bool kvm_nx_worker(struct task_struct *t)
{
	return t->comm[0] == 'k' && t->comm[1] == 'v' && t->comm[2] == 'm' &&
	       t->comm[3] == '-' && t->comm[4] == 'n' && t->comm[5] == 'x' && t->comm[6] == '-';
}

static __always_inline __u32 wait_class(struct task_struct *t, __u32 tgid)
{
	__u32 g = t->tgid;

	if (vhost_worker(t))
		return KVM_WAIT_VHOST;
	if (kvm_nx_worker(t))
		return KVM_WAIT_HOST;
	if (g == tgid)
		return KVM_WAIT_SAME_VM;
	return id_marked(vmm_tgids, g) ? KVM_WAIT_OTHER_VM : KVM_WAIT_HOST;
}

/* A slice of a wait to the class of the task that held the CPU, or to
 * throttled if the vCPU's quota was used up when the slice began:
 * throttle_cfs_rq() runs before the switch that ends its run, and an
 * unthrottle on an idle CPU switches at once (unthrottle_cfs_rq()). */
static __always_inline void wait_add(struct kvm_vcpu_slot *s, struct task_struct *ran, __u64 ns)
{
	__u32 c = s->wait_throttled ? KVM_WAIT_THROTTLED : wait_class(ran, s->tgid);

	if (c < KVM_WAIT_CLASSES)
		s->vm.wait_by[c] += ns;
}

/* The waiter is charged the time since its last charge, at rq clock now
 * of its CPU, to the class of the task that had the CPU meanwhile. After
 * a migration the wait on this CPU starts when the thread was queued here
 * (0 until it is: activate_task() after set_task_cpu()). */
static __always_inline void wait_charge(struct kvm_vcpu_slot *s, struct task_struct *ran, __u64 now)
{
	__u64 from = s->wait_acct;

	if (!from) {
		if (!(from = task_last_queued_at(s->wait_task)))
			return;
		s->wait_throttled = task_throttled_at(s->wait_task);
	}
	if (now > from)
		wait_add(s, ran, now - from);
	s->wait_acct = now;
	s->wait_throttled = task_throttled_at(s->wait_task);
}

/* t's run_delay once it gets a CPU at rq clock now: sched_info_arrive(),
 * which runs after this tracepoint (context_switch()), adds the wait since
 * it was queued here. Less its run_delay when its wait began, the wait's
 * length: with the parts sched_info_dequeue() added on CPUs it left. */
static __always_inline __u64 arrival_run_delay(struct task_struct *t, __u64 now)
{
	__u64 queued = task_last_queued(t);

	return task_run_delay(t) + (queued && now > queued ? now - queued : 0);
}

/* A context switch on a CPU where a tracked vCPU runs or waits, at rq
 * clock now. Each waiter is charged the slice that ends now, to the class
 * of prev, which had the CPU. next, if a waiter, ends its wait. prev, if
 * the vCPU running here and still runnable (preempted or yielding), waits
 * from now on: sched_info_depart() queues it at this clock. The slices of
 * a wait on one CPU tile it, so its split sums to its length. An entry
 * whose slot does not say it waits here is stale (the slot was freed, or
 * its switch-in missed): it goes. next, if a vCPU thread, runs here. */
static __always_inline int on_switch(struct kvm_cpu_wait *w, __u32 cpu,
				     struct task_struct *prev, struct task_struct *next)
{
	__u64 now = task_rq_clock(prev);
	__u32 prev_pid = prev->pid, next_pid = next->pid, cur = w->cur, idx;
	struct kvm_vcpu_slot *s;

	if (!now)
		return 0;
	w->cur = 0;
	for (__u32 i = 0; i < KVM_WAITERS; i++) {
		__u32 v = w->waiter[i];

		idx = v - 1;
		if (!v || !(s = bpf_map_lookup_elem(&vcpus, &idx)))
			continue;
		if (s->wait_cpu != cpu + 1 || s->tid == prev_pid) {
			waiter_drop(w, i, v);
			continue;
		}
		wait_charge(s, prev, now);
		if (s->tid == next_pid) {
			__u64 rd = arrival_run_delay(next, now);
			__u32 b = virt_log2_bucket(rd > s->wait_rd ? rd - s->wait_rd : 0);

			s->sched_rd = rd + 1;
			s->wait_cpu = 0;
			waiter_drop(w, i, v);
			unlisted_clear(s);
			if (b < VIRT_HIST_BUCKETS)
				s->vm.wait_hist[b]++;
			w->cur = v;
		}
	}
	/* a vCPU thread queued here unlisted */
	if (!w->cur && (w->waiting >= KVM_WAIT_UNLISTED) && id_marked(vcpu_tids, next_pid) &&
	    (s = tid_vcpu(next_pid, &idx))) {
		s->sched_rd = arrival_run_delay(next, now) + 1;
		unlisted_clear(s);
		w->cur = idx + 1;
	}
	if (cur) {
		idx = cur - 1;
		s = bpf_map_lookup_elem(&vcpus, &idx);
		if (s && s->tid == prev_pid) {
			s->sched_rd = task_run_delay(prev) + 1;
			if (!s->wait_cpu && task_state(prev) == VIRT_TASK_RUNNING)
				wait_begin(s, idx, cpu, prev, now);
		}
	}
	return 0;
}

/* Linux's run queues (kernel/sched/core.c DEFINE_PER_CPU_SHARED_ALIGNED),
 * for the task that holds a CPU a waiter leaves. */
extern struct rq runqueues __ksym;

/* Waiting thread t leaves its CPU (set_task_cpu(), after deactivate_task()
 * added its wait there to its run_delay, at that run queue's clock): the
 * rest of the wait there goes to the task holding that CPU; the wait goes
 * on at dest, from when t is queued there. */
static __always_inline void wait_migrate(struct kvm_vcpu_slot *s, __u32 idx,
					 struct task_struct *t, __u32 dest)
{
	struct rq *rq = bpf_per_cpu_ptr(&runqueues, s->wait_cpu - 1);
	struct task_struct *ran = rq ? rq->curr : NULL;
	__u64 rd = task_run_delay(t), now = task_rq_clock(t);

	if (ran && s->wait_acct && now > s->wait_acct)
		wait_add(s, ran, now - s->wait_acct);
	else if (ran && !s->wait_acct && rd > s->wait_leg_rd) {	/* no switch there since */
		s->wait_throttled = task_throttled_at((__u64)t);
		wait_add(s, ran, rd - s->wait_leg_rd);
	}
	s->wait_leg_rd = rd;
	s->sched_rd = rd + 1;
	wait_unlist(s, idx);
	wait_list(s, idx, dest, t, 0);
}

/* A new slot, or its vCPU ran on another thread since (owner changed): take
 * the thread and its process. A vCPU of another process at this address is
 * a new VMM's (the old one's struct was freed): the slot keeps the old VM's
 * counts for the agent, and the vCPU gets a slot of its own. Until the
 * thread has an entry in "threads" the owner stays unset, so every exit
 * tries again and counts a drop while it fails: that exit's hypercall or
 * return to the VMM would not find its vCPU. */
static __always_inline struct kvm_vcpu_slot *adopt(struct kvm_vcpu_slot *s, __u32 idx,
						    __u64 ident, __u64 owner, __u32 isa,
						    enum vcpu_id_src src, void *p)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;

	if (s->tgid && s->tgid != tgid) {
		s->ident = KVM_VCPU_RETIRED;
		s = claim_vcpu(ident, &idx, isa, src, p);
		if (!s)
			return NULL;
	}
	if (s->tid != (__u32)id) {	/* a wait of its old thread is not the vCPU's */
		wait_unlist(s, idx);
		unlisted_clear(s);
		s->sched_rd = 0;
	}
	s->tid = (__u32)id;
	s->tgid = tgid;
	if (index_thread((__u32)id, idx)) {
		s->owner = owner;
		id_mark(vmm_tgids, tgid, true);
		if (sched) {	/* it runs: its run_delay is the kernel's now */
			vcpu_runs_here(idx);
			s->sched_rd = task_run_delay_at(bpf_get_current_task()) + 1;
		}
	}
	return s;
}

static __always_inline struct kvm_vcpu_slot *vcpu_slot(__u64 ident, __u64 owner, __u32 isa,
							enum vcpu_id_src src, void *p)
{
	struct kvm_vcpu_slot *s;
	__u32 idx = 0;

	s = find_vcpu(ident, &idx);
	if (!s && !(s = claim_vcpu(ident, &idx, isa, src, p)))
		return NULL;
	if (s->owner != owner)
		s = adopt(s, idx, ident, owner, isa, src, p);
	return s;
}

/* -------------------------------------------------------------- handlers */

static __always_inline int on_exit(__u64 ident, __u64 owner, __u32 isa,
				   enum vcpu_id_src src, void *p)
{
	struct kvm_vcpu_slot *s = vcpu_slot(ident, owner, isa, src, p);
	__u32 code, slot;

	if (!latency) {		/* the reason counts even if the vCPU can't be tracked */
		struct kvm_stats *st;

		code = exit_code(isa, src, p, s);
		slot = exit_slot(isa, code);
		st = exit_stats(isa, code, slot);
		if (st)
			__sync_fetch_and_add(&st->count, 1);
		if (s) {
			s->vm.exits++;
			exits_reconcile(s, src, p);
		}
		return 0;
	}
	if (!s)
		return 0;
	code = exit_code(isa, src, p, s);
	slot = exit_slot(isa, code);
	s->exit_ts = bpf_ktime_get_ns();
	s->exit = KVM_EXIT_WORD(slot, code);
	return 0;
}

static __always_inline int on_hypercall(__u64 nr)
{
	struct kvm_vcpu_slot *s;

	if (!latency) {
		struct kvm_stats *st = VIRT_LOOKUP_OR_INIT(hcalls, &nr, &zero_stats, drops,
							   KVM_DROP_HCALL);

		if (st)
			st->count++;
		return 0;
	}
	s = thread_vcpu();
	if (!s) {
		VIRT_DROP(drops, KVM_DROP_VCPU);	/* an untracked vCPU, or no thread entry */
	} else if (s->exit_ts) {
		s->hcall_of = s->exit_ts;
		s->hcall_nr = nr;
	}
	return 0;
}

/* A return to the VMM from a thread without a vCPU slot counts no drop:
 * either the vCPU has not exited the guest yet (QEMU's vCPU threads return
 * from KVM_RUN before their vCPU's first exit: three such returns in qa
 * 108's two-vCPU start), or the exit before it counted one (its vCPU's
 * claim failed, or its thread found no room in "threads": adopt()). */
static __always_inline int on_userspace_exit(__u32 reason)
{
	struct kvm_vcpu_slot *s = thread_vcpu();

	if (!latency) {
		struct kvm_stats *st = bpf_map_lookup_elem(&uexits, &reason);

		if (!st) {
			VIRT_DROP(drops, KVM_DROP_UEXIT);
			return 0;
		}
		st->count++;
		if (s)
			s->vm.uexits++;
		return 0;
	}
	if (s && s->exit_ts) {
		s->uexit_of = s->exit_ts;
		s->uexit_ts = bpf_ktime_get_ns();
		s->ureason = reason;
	}
	return 0;
}

/* ------------------------------------------------------ sub-reasons */

/* The entry of key k, made if the process has fewer than sub_top keys of
 * its kind; else k becomes the process's "other" key of the kind. */
static __always_inline struct kvm_sub_stats *sub_stats(struct kvm_sub_key *k)
{
	struct kvm_sub_stats *st = bpf_map_lookup_elem(&subs, k);
	struct kvm_sub_used *u;
	__u32 kind = k->kind;

	if (st)
		return st;
	u = VIRT_LOOKUP_OR_INIT(sub_used, &k->tgid, &zero_used, drops, KVM_DROP_SUB);
	if (!u || kind >= KVM_SUB_KINDS)
		return NULL;
	/* a key's entry is taken by the add that finds room (CPUs race) */
	if (u->n[kind] >= sub_top || __sync_fetch_and_add(&u->n[kind], 1) >= sub_top) {
		k->dir = 0;
		k->code = KVM_SUB_OTHER;
	}
	return VIRT_LOOKUP_OR_INIT(subs, k, &zero_sub, drops, KVM_DROP_SUB);
}

/* An event of the exit the calling thread's vCPU is handling: counted
 * now; with latency, the exit's time goes to it at the entry that ends
 * the exit (on_entry, the last event of the exit). */
static __always_inline int on_sub(__u32 kind, __u32 dir, __u64 code)
{
	struct kvm_vcpu_slot *s = thread_vcpu();
	struct kvm_sub_key k = { .kind = (__u16)kind, .dir = (__u16)dir, .code = code };
	struct kvm_sub_stats *st;

	if (!s || !s->tgid) {
		VIRT_DROP(drops, KVM_DROP_VCPU);	/* an untracked vCPU, or no thread entry */
		return 0;
	}
	k.tgid = s->tgid;
	st = sub_stats(&k);
	if (!st)
		return 0;
	__sync_fetch_and_add(&st->count, 1);
	if (latency && s->exit_ts) {
		s->sub_of = s->exit_ts;
		s->sub_code = k.code;
		s->sub_kind = KVM_SUB_WORD(k.kind, k.dir);
	}
	return 0;
}

static __always_inline int mmio_sub(__u32 type, __u64 gpa)
{
	if (type == VIRT_MMIO_READ)
		return on_sub(KVM_SUB_MMIO, KVM_SUB_RD, gpa);
	if (type == VIRT_MMIO_WRITE)
		return on_sub(KVM_SUB_MMIO, KVM_SUB_WR, gpa);
	return 0;
}

/* The exit's time to the sub-reason it recorded. */
static __always_inline void sub_time(const struct kvm_vcpu_slot *s, __u64 ns)
{
	struct kvm_sub_key k = {
		.tgid = s->tgid, .kind = (__u16)(s->sub_kind >> 16), .dir = (__u16)s->sub_kind,
		.code = s->sub_code,
	};
	struct kvm_sub_stats *st = bpf_map_lookup_elem(&subs, &k);

	if (st)
		__sync_fetch_and_add(&st->time_ns, ns);
}

/* ------------------------------------------- nested-paging faults (npf) */

#define VIRT_PFERR_RSVD		(1ull << 3)	/* arch/x86/include/asm/kvm_host.h */
#define VIRT_VMX_EPT_MISCONFIG	49		/* its "exits" slot: VMX reasons are slots 0-127 */

/* The counters a fault's kind is told by (kvm.h enum kvm_npf_kind), of
 * the vCPU and of the calling thread, which runs it: plain loads of the
 * BTF-typed vCPU and task (tp_btf), probe reads (raw_tp). mm/memory.c
 * mm_account_fault() counts a host fault of get_user_pages() (regs NULL)
 * in the thread's maj_flt/min_flt as well, and never a VM_FAULT_RETRY. */
static __always_inline void npf_counters(__u64 *c, void *p, enum vcpu_id_src src)
{
	if (src == ID_BTF) {
		struct kvm_vcpu *vcpu = p;
		struct task_struct *t = bpf_get_current_task_btf();

		c[KVM_NPF_MMIO] = vcpu->stat.pf_emulate;
		c[KVM_NPF_MAJOR] = t->maj_flt;
		c[KVM_NPF_MINOR] = t->min_flt;
		c[KVM_NPF_ASYNC] = vcpu->arch.apf.id;
		c[KVM_NPF_FAST] = vcpu->stat.pf_fast;
		c[KVM_NPF_MAPPING] = vcpu->stat.pf_fixed;
	} else {
		struct kvm_vcpu *vcpu = p;
		struct task_struct *t = (struct task_struct *)bpf_get_current_task();

		c[KVM_NPF_MMIO] = BPF_CORE_READ(vcpu, stat.pf_emulate);
		c[KVM_NPF_MAJOR] = BPF_CORE_READ(t, maj_flt);
		c[KVM_NPF_MINOR] = BPF_CORE_READ(t, min_flt);
		c[KVM_NPF_ASYNC] = BPF_CORE_READ(vcpu, arch.apf.id);
		c[KVM_NPF_FAST] = BPF_CORE_READ(vcpu, stat.pf_fast);
		c[KVM_NPF_MAPPING] = BPF_CORE_READ(vcpu, stat.pf_fixed);
	}
}

/* kvm_page_fault (svm npf_interception(), vmx handle_ept_violation()),
 * on the vCPU's thread inside the exit: what the entry compares with. */
static __always_inline int on_page_fault(void *vcpu, __u64 gpa, __u64 err, enum vcpu_id_src src)
{
	struct kvm_vcpu_slot *s;
	__u32 idx;

	s = find_vcpu((__u64)vcpu, &idx);
	if (!s || !s->exit_ts)
		return 0;
	s->npf.of = s->exit_ts;
	s->npf.gpa = gpa;
	s->npf.rsvd = s->isa == KVM_ISA_SVM && (err & VIRT_PFERR_RSVD);
	npf_counters(s->npf.c, vcpu, src);
	return 0;
}

/* The kind of the exit's fault: mmio for an MMIO SPTE hit (AMD's reserved
 * bit) or an exit without the tracepoint (Intel's EPT_MISCONFIG: an MMIO
 * SPTE), else the first counter that moved since the fault (kvm.h). */
static __always_inline __u32 npf_kind(const struct kvm_vcpu_slot *s, __u64 ts, void *p,
				      enum vcpu_id_src src)
{
	__u64 now[KVM_NPF_COUNTERS];

	if (s->npf.of != ts || s->npf.rsvd)
		return KVM_NPF_MMIO;
	npf_counters(now, p, src);
	for (__u32 k = 0; k < KVM_NPF_COUNTERS; k++)
		if (now[k] != s->npf.c[k])
			return k;
	return KVM_NPF_RETRY;
}

/* At the entry that ends exit ts (ns long), if it was a nested-paging
 * fault: its time to its process's kind. */
static __always_inline void npf_entry(const struct kvm_vcpu_slot *s, __u64 ts, __u64 exit,
				      __u64 ns, void *p, enum vcpu_id_src src)
{
	struct kvm_stats *st;
	__u64 key;

	if (s->npf.of != ts && KVM_EXIT_SLOT(exit) != KVM_SLOT_VMX + VIRT_VMX_EPT_MISCONFIG)
		return;
	if (!s->tgid || src == ID_RECORD)
		return;
	key = KVM_NPF_KEY(s->tgid, npf_kind(s, ts, p, src));
	st = VIRT_LOOKUP_OR_INIT(npfs, &key, &zero_stats, drops, KVM_DROP_NPF);
	if (st)
		account(st, ns, true);
}

/* subs, npf: literals at each call, so that the entry program loaded
 * without subreasons or npf has no trace of them (a rodata switch would
 * leave its own load in the program) */
static __always_inline int on_entry(__u64 ident, bool subs, bool npf, enum vcpu_id_src src,
				    void *p)
{
	struct kvm_vcpu_slot *s;
	struct kvm_stats *st;
	__u32 idx;
	__u64 now, ns, ts, exit;

	s = find_vcpu(ident, &idx);
	if (!s || !(ts = s->exit_ts))
		return 0;	/* first entry, or not tracked */
	now = bpf_ktime_get_ns();
	ns = now - ts;
	s->exit_ts = 0;

	exit = s->exit;
	st = exit_stats(s->isa, KVM_EXIT_CODE(exit), KVM_EXIT_SLOT(exit));
	if (st)
		account(st, ns, true);
	if (s->hcall_of == ts) {
		__u64 nr = s->hcall_nr;

		st = VIRT_LOOKUP_OR_INIT(hcalls, &nr, &zero_stats, drops, KVM_DROP_HCALL);
		if (st)
			account(st, ns, false);
	}
	if (subs && s->sub_of == ts)
		sub_time(s, ns);
	if (npf)
		npf_entry(s, ts, exit, ns, p, src);
	s->vm.exits++;
	exits_reconcile(s, src, p);
	s->vm.exit_ns += ns;
	if (s->uexit_of == ts) {
		__u64 uns = now - s->uexit_ts;
		__u32 reason = s->ureason;

		st = bpf_map_lookup_elem(&uexits, &reason);
		if (st)
			account(st, uns, false);
		else
			VIRT_DROP(drops, KVM_DROP_UEXIT);
		s->vm.uexits++;
		s->vm.uexit_ns += uns;
	}
	return 0;
}

/* The end of a halt inside KVM (kvm_vcpu_halt() traces kvm_vcpu_wakeup
 * after update_halt_poll_stats()): ns halted, polling included; waited:
 * the vCPU slept. Whether polling ended it, and the time polling took, the
 * tracepoint does not say: they are KVM's own counts (the vCPU's
 * halt_successful_poll and halt_poll_*_ns), read where the slot's identity
 * is the struct kvm_vcpu (tp_btf, raw_tp), counted from when the slot was
 * claimed. The classic tracepoint counts halts that did not sleep. */
static __always_inline void kvm_count_since(__u64 *to, __u64 *seen, __u64 now)
{
	if (*seen && now > *seen)
		*to += now - *seen;
	*seen = now;
}

static __always_inline int on_halt(__u64 ns, bool waited, bool vcpu_ident)
{
	struct kvm_vcpu_slot *s = thread_vcpu();
	__u32 b = virt_log2_bucket(ns);

	if (!s) {
		VIRT_DROP(drops, KVM_DROP_VCPU);	/* an untracked vCPU, or no thread entry */
		return 0;
	}
	if (b < VIRT_HIST_BUCKETS)
		s->vm.halt_hist[b]++;
	s->vm.halt_ns += ns;
	if (waited)
		s->vm.halt_slept++;
	if (vcpu_ident) {
		struct kvm_vcpu *vcpu = (struct kvm_vcpu *)s->ident;

		kvm_count_since(&s->vm.halt_poll_ns, &s->poll_seen, vcpu_halt_poll_ns(vcpu) + 1);
		kvm_count_since(&s->vm.halt_polled, &s->polled_seen, vcpu_halt_polls(vcpu) + 1);
	} else if (!waited) {
		s->vm.halt_polled++;
	}
	return 0;
}

/* ------------------------------------------ interrupts and guest timers */

/* The slot idx's pending interrupts, reset when they were another
 * vCPU's (the slot was freed and claimed again). Accepts for one vCPU
 * come from several CPUs at once: words change by compare-and-swap. */
static __always_inline struct kvm_irq_pend *irq_pend_of(__u32 idx, __u64 ident)
{
	struct kvm_irq_pend *p = bpf_map_lookup_elem(&irq_pend, &idx);
	__u64 old;

	if (!p)
		return NULL;
	old = p->ident;
	if (old != ident && __sync_val_compare_and_swap(&p->ident, old, ident) == old) {
		p->start = 0;
		for (__u32 i = 0; i < KVM_IRQ_PENDING; i++)
			p->e[i] = 0;
	}
	return p;
}

static __always_inline void irq_pend_forget(__u32 idx)
{
	struct kvm_irq_pend *p = bpf_map_lookup_elem(&irq_pend, &idx);

	if (p)
		p->ident = 0;
}

static const struct kvm_stats zero_irq;

static __always_inline struct kvm_stats *irq_stats(__u32 tgid, __u32 rec)
{
	struct kvm_irq_key k = { .tgid = tgid, .rec = rec };

	return VIRT_LOOKUP_OR_INIT(irqs, &k, &zero_irq, drops, KVM_DROP_IRQ);
}

static __always_inline void irq_count(__u32 tgid, __u32 rec)
{
	struct kvm_stats *st = irq_stats(tgid, rec);

	if (st)
		__sync_fetch_and_add(&st->count, 1);
}

static __always_inline void irq_time(__u32 tgid, __u32 rec, __u64 ns)
{
	struct kvm_stats *st = irq_stats(tgid, rec);

	if (st)
		account(st, ns, true);
}

/* The kind of the interrupt the caller is about to make a local APIC
 * accept: its hook runs just before __apic_accept_irq() on the same task
 * and CPU (a marker left by a preempted or migrated sender only costs the
 * kind: "other"). */
static __always_inline int irq_mark(__u32 kind, __u32 vector)
{
	__u32 z = 0;
	struct kvm_irq_mark *m = bpf_map_lookup_elem(&irq_marks, &z);

	if (m) {
		m->task = (__u64)bpf_get_current_task_btf();
		m->vector = vector;
		m->kind = kind;
	}
	return 0;
}

static __always_inline __u32 irq_kind(__u32 vector)
{
	__u32 z = 0;
	struct kvm_irq_mark *m = bpf_map_lookup_elem(&irq_marks, &z);

	if (!m || m->task != (__u64)bpf_get_current_task_btf())
		return KVM_IRQ_OTHER;
	if (m->vector == KVM_IRQ_ANY_VECTOR) {	/* an LVT's: one accept */
		m->task = 0;
		return m->kind;
	}
	return m->vector == vector ? m->kind : KVM_IRQ_OTHER;
}

/* An interrupt the vCPU's pending table takes: a second accept of a
 * pending vector is one IRR bit, one injection (coalesced). */
static __always_inline void irq_pend_add(struct kvm_irq_pend *p, __u32 tgid, __u64 word)
{
	__u32 vec = KVM_IRQ_WORD_VEC(word);

	for (__u32 i = 0; i < KVM_IRQ_PENDING; i++) {
		__u64 w = p->e[i];

		if (w && KVM_IRQ_WORD_VEC(w) == vec) {
			irq_count(tgid, KVM_IRQ_COALESCED);
			return;
		}
	}
	for (__u32 i = 0; i < KVM_IRQ_PENDING; i++)
		if (!p->e[i] && !__sync_val_compare_and_swap(&p->e[i], 0, word))
			return;
	VIRT_DROP(drops, KVM_DROP_IRQ);
}

/* __apic_accept_irq() (arch/x86/kvm/lapic.c): every interrupt KVM delivers
 * to a local APIC, from any context. Fixed and lowest-priority ones
 * (APIC_DM_FIXED 0, APIC_DM_LOWEST 0x100) are injected later; NMI, SMI,
 * INIT and SIPI are not counted. A timer's time runs from its expiry. */
static __always_inline int on_irq_accept(void *apic, int dm, int vector)
{
	struct kvm_vcpu_slot *s;
	struct kvm_irq_pend *p;
	__u32 idx, kind;
	__u64 ts, start;

	if (dm != 0 && dm != 0x100)
		return 0;
	s = find_vcpu(lapic_vcpu(apic), &idx);
	if (!s || !s->tgid)
		return 0;	/* not tracked yet: its injection counts unmatched */
	if (lapic_apicv_active(apic)) {
		irq_count(s->tgid, KVM_IRQ_POSTED);
		return 0;
	}
	kind = irq_kind((__u32)vector);
	if (!(p = irq_pend_of(idx, s->ident)))
		return 0;
	ts = bpf_ktime_get_ns();
	if (kind == KVM_IRQ_TIMER && (start = __sync_lock_test_and_set(&p->start, 0)))
		ts = start;
	irq_pend_add(p, s->tgid, KVM_IRQ_WORD(ts, kind, (__u32)vector));
	return 0;
}

/* apic_timer_expired(): the first expiry of the vCPU's LAPIC timer not
 * yet accepted (the accept happens on the vCPU's thread when it next
 * runs, kvm_inject_apic_timer_irqs()). */
static __always_inline int on_timer_expired(void *apic)
{
	struct kvm_vcpu_slot *s;
	struct kvm_irq_pend *p;
	__u32 idx;

	s = find_vcpu(lapic_vcpu(apic), &idx);
	if (s && (p = irq_pend_of(idx, s->ident)) && !p->start)
		__sync_val_compare_and_swap(&p->start, 0, bpf_ktime_get_ns());
	return 0;
}

/* kvm_inj_virq (svm_inject_irq() / vmx_inject_irq()), on the vCPU's
 * thread at the entry that injects vector: its oldest pending accept is
 * timed; every entry of the vector is one IRR bit, all cleared. A
 * re-injection (an injection an exit cut short) and a soft interrupt
 * (INTn) were counted or are none. */
static __always_inline int on_irq_inject(__u32 vector, bool soft, bool reinjected)
{
	struct kvm_irq_pend *p;
	struct kvm_vcpu_slot *s;
	__u64 now, oldest = 0, w;
	__u32 idx;

	if (soft || reinjected)
		return 0;
	s = tid_vcpu((__u32)bpf_get_current_pid_tgid(), &idx);
	if (!s || !s->tgid || !(p = irq_pend_of(idx, s->ident))) {
		VIRT_DROP(drops, KVM_DROP_IRQ);
		return 0;
	}
	now = bpf_ktime_get_ns();
	for (__u32 i = 0; i < KVM_IRQ_PENDING; i++) {
		w = p->e[i];
		if (!w || KVM_IRQ_WORD_VEC(w) != (vector & 0xff))
			continue;
		if (!oldest || ((w - oldest) & (1ull << 63)))
			oldest = w;
		__sync_val_compare_and_swap(&p->e[i], w, 0);
	}
	if (!oldest) {
		irq_count(s->tgid, KVM_IRQ_UNMATCHED);
		return 0;
	}
	/* modulo 2^54 ns, the accept's time in the word */
	irq_time(s->tgid, KVM_IRQ_WORD_KIND(oldest),
		 ((now << 10) - (oldest & ~0x3ffull)) >> 10);
	return 0;
}

/* kvm_wait_lapic_expire (__kvm_wait_lapic_expire(), arch/x86/kvm/lapic.c):
 * at the entry that delivers a TSC-deadline timer, with KVM's timer
 * advance on, delta = the guest's TSC then - its deadline, in guest TSC
 * cycles: > 0 late, < 0 early (KVM then spins the rest). In ns by the
 * vCPU's virtual TSC rate. */
static __always_inline int on_lapic_expire(__s64 delta)
{
	struct kvm_vcpu_slot *s = thread_vcpu();
	__u64 cycles = delta < 0 ? (__u64)-delta : (__u64)delta;
	struct kvm_vcpu *vcpu;
	__u32 khz;

	if (!s || !s->tgid) {
		VIRT_DROP(drops, KVM_DROP_IRQ);
		return 0;
	}
	vcpu = (struct kvm_vcpu *)s->ident;	/* out of the CO-RE read: no relocation of the slot */
	/* __kvm_wait_lapic_expire() traces before adjust_lapic_timer_advance():
	 * the advance in effect for this timer */
	s->timer_advance = (__u64)vcpu_timer_advance_ns(vcpu) + 1;
	khz = BPF_CORE_READ(vcpu, arch.virtual_tsc_khz);
	if (!khz)
		return 0;
	irq_time(s->tgid, delta < 0 ? KVM_TIMER_EARLY : KVM_TIMER_LATE, cycles * 1000000 / khz);
	return 0;
}

SEC("fentry/__apic_accept_irq")
int BPF_PROG(virt_kvm_tp_btf_irq_accept, void *apic, int delivery_mode, int vector)
{
	return on_irq_accept(apic, delivery_mode, vector);
}

SEC("fentry/apic_timer_expired")
int BPF_PROG(virt_kvm_tp_btf_irq_timer_expired, void *apic)
{
	return on_timer_expired(apic);
}

SEC("tp_btf/kvm_inj_virq")
int BPF_PROG(virt_kvm_tp_btf_irq_inject, unsigned int vector, bool soft, bool reinjected)
{
	return on_irq_inject(vector, soft, reinjected);
}

/* Kind markers: an IPI (ICR write: kvm_apic_send_ipi(); PV: the
 * KVM_HC_SEND_IPI hypercall, which traces no kvm_apic_ipi), an MSI
 * (kvm_set_msi_irq(): irqfd, KVM_SIGNAL_MSI), an LVT entry (the timer's:
 * APIC_LVTT 0x320; else other). IOAPIC and PIC interrupts have none. */
SEC("tp_btf/kvm_apic_ipi")
int BPF_PROG(virt_kvm_tp_btf_irq_ipi, __u32 icr_low, __u32 dest_id)
{
	return irq_mark(KVM_IRQ_IPI, icr_low & 0xff);
}

SEC("fentry/kvm_pv_send_ipi")
int BPF_PROG(virt_kvm_tp_btf_irq_pv_ipi, void *kvm, unsigned long lo, unsigned long hi,
	     __u32 min, unsigned long icr)
{
	return irq_mark(KVM_IRQ_IPI, (__u32)icr & 0xff);
}

SEC("tp_btf/kvm_msi_set_irq")
int BPF_PROG(virt_kvm_tp_btf_irq_msi, __u64 address, __u64 data)
{
	return irq_mark(KVM_IRQ_DEVICE, (__u32)data & 0xff);
}

SEC("fentry/kvm_apic_local_deliver")
int BPF_PROG(virt_kvm_tp_btf_irq_lvt, void *apic, int lvt_type)
{
	return irq_mark(lvt_type == 0x320 ? KVM_IRQ_TIMER : KVM_IRQ_OTHER, KVM_IRQ_ANY_VECTOR);
}

SEC("tp_btf/kvm_wait_lapic_expire")
int BPF_PROG(virt_kvm_tp_btf_timer_lateness, unsigned int vcpu_id, __s64 delta)
{
	return on_lapic_expire(delta);
}

/* Free the thread's index entry that points at slot idx. */
static __always_inline void unindex_thread(__u32 tid, __u32 idx)
{
	if (swap_thread(tid, false, KVM_THREAD(tid, idx), 0))
		id_mark(vcpu_tids, tid, false);
}

/* A vCPU is destroyed (kvm_arch_vcpu_destroy(), from kvm_destroy_vcpus()
 * or a failed KVM_CREATE_VCPU): its slot's counts go to its process's
 * entry of vms_gone and the slot is freed at once, so VMs that come and go
 * inside one VMM, or VMMs that come and go between two refreshes, need no
 * slots beyond their live vCPUs'. The slot's ident is cleared last: a claim
 * finds the rest zeroed. */
static __always_inline void fold_stats(struct kvm_vm_stats *g, const struct kvm_vcpu_slot *s)
{
	__u64 *to = (__u64 *)g;
	const __u64 *from = (const __u64 *)&s->vm;

	for (__u32 w = 0; w < sizeof(*g) / sizeof(__u64); w++)
		if (from[w])
			__sync_fetch_and_add(&to[w], from[w]);
}

static __always_inline int on_vcpu_destroy(__u64 ident)
{
	struct kvm_vcpu_slot *s;
	struct kvm_vm_stats *g;
	__u32 idx = 0, tgid;
	__u64 key;

	s = find_vcpu(ident, &idx);
	if (!s)
		return 0;
	__sync_fetch_and_add(&folds_begun, 1);
	tgid = s->tgid;
	if (tgid && (g = VIRT_LOOKUP_OR_INIT(vms_gone, &tgid, &zero_vm, drops, KVM_DROP_VM)))
		fold_stats(g, s);
	key = KVM_VCPU_KEY(tgid, s->vcpu_id);
	if (tgid && (g = VIRT_LOOKUP_OR_INIT(vcpus_gone, &key, &zero_vm, drops, KVM_DROP_VCPU_GONE)))
		fold_stats(g, s);
	if (s->tid)
		unindex_thread(s->tid, idx);
	wait_unlist(s, idx);
	unlisted_clear(s);
	irq_pend_forget(idx);
	__builtin_memset((char *)s + sizeof(s->ident), 0, sizeof(*s) - sizeof(s->ident));
	asm volatile("" ::: "memory");
	s->ident = 0;
	__sync_fetch_and_add(&folds_done, 1);
	return 0;
}

SEC("fentry/kvm_arch_vcpu_destroy")
int BPF_PROG(virt_kvm_tp_btf_destroy, struct kvm_vcpu *vcpu)
{
	return on_vcpu_destroy((__u64)vcpu);
}

SEC("kprobe/kvm_arch_vcpu_destroy")
int BPF_KPROBE(virt_kvm_raw_tp_destroy, void *vcpu)
{
	return on_vcpu_destroy((__u64)vcpu);
}

/* tp_btf: BTF-typed raw tracepoints, the cheapest way in. The vCPU's
 * thread is checked by a direct load of vcpu->pid (kvm_vcpu_ioctl() sets it
 * when another thread runs KVM_RUN), no helper call. Linux 6.12 types the
 * argument as maybe-NULL: it is checked before use. */
SEC("tp_btf/kvm_exit")
int BPF_PROG(virt_kvm_tp_btf_exit, struct kvm_vcpu *vcpu, __u32 isa)
{
	if (!vcpu)
		return 0;
	return on_exit((__u64)vcpu, (__u64)vcpu->pid, isa, ID_BTF, vcpu);
}

/* svm_switch_vmcb() (arch/x86/kvm/svm/svm.c, since v5.13) is the one place
 * that sets svm->vmcb: vmcb01 at vCPU creation and when a nested guest
 * exits, the nested guest's vmcb02 when it enters. It runs on the vCPU's
 * thread like its exits (or before the vCPU's first exit), so the slot's
 * copy is current at every exit. Attached only with vmcb_cache. A kprobe,
 * not fentry: a trampoline on a kvm_amd function would hold kvm_amd, and
 * an operator's rmmod of it would fail while the agent runs (qa 103); the
 * hook is rare (nested entries and exits), so its cost does not matter. */
SEC("kprobe/svm_switch_vmcb")
int BPF_KPROBE(virt_kvm_tp_btf_switch_vmcb, void *svm, void *target)
{
	struct kvm_vcpu_slot *s;
	__u32 idx;

	if (!svm || !target)
		return 0;
	s = find_vcpu((__u64)svm, &idx);
	if (s)
		s->vmcb = svm_vmcb_info_ptr(target);
	return 0;
}

SEC("tp_btf/kvm_entry")
int BPF_PROG(virt_kvm_tp_btf_entry, struct kvm_vcpu *vcpu)
{
	if (!vcpu)
		return 0;
	return on_entry((__u64)vcpu, false, false, ID_BTF, vcpu);
}

SEC("tp_btf/kvm_entry")
int BPF_PROG(virt_kvm_tp_btf_entry_subs, struct kvm_vcpu *vcpu)
{
	if (!vcpu)
		return 0;
	return on_entry((__u64)vcpu, true, false, ID_BTF, vcpu);
}

/* npf: the entry programs that classify nested-paging faults, and the
 * fault's snapshot */
SEC("tp_btf/kvm_entry")
int BPF_PROG(virt_kvm_tp_btf_entry_npf, struct kvm_vcpu *vcpu)
{
	if (!vcpu)
		return 0;
	return on_entry((__u64)vcpu, false, true, ID_BTF, vcpu);
}

SEC("tp_btf/kvm_entry")
int BPF_PROG(virt_kvm_tp_btf_entry_subs_npf, struct kvm_vcpu *vcpu)
{
	if (!vcpu)
		return 0;
	return on_entry((__u64)vcpu, true, true, ID_BTF, vcpu);
}

SEC("tp_btf/kvm_page_fault")
int BPF_PROG(virt_kvm_tp_btf_page_fault, struct kvm_vcpu *vcpu, __u64 gpa, __u64 err)
{
	if (!vcpu)
		return 0;
	return on_page_fault(vcpu, gpa, err, ID_BTF);
}

/* What the exit is about (subreasons): the events KVM traces while it
 * handles the exit, on the vCPU's thread, between kvm_exit and kvm_entry. */
SEC("tp_btf/kvm_pio")
int BPF_PROG(virt_kvm_tp_btf_pio, unsigned int rw, unsigned int port)
{
	return on_sub(KVM_SUB_PIO, rw ? KVM_SUB_OUT : KVM_SUB_IN, port);
}

SEC("tp_btf/kvm_msr")
int BPF_PROG(virt_kvm_tp_btf_msr, unsigned int write, __u32 ecx)
{
	return on_sub(KVM_SUB_MSR, write ? KVM_SUB_WR : KVM_SUB_RD, ecx);
}

SEC("tp_btf/kvm_cpuid")
int BPF_PROG(virt_kvm_tp_btf_cpuid, unsigned int function)
{
	return on_sub(KVM_SUB_CPUID, 0, function);
}

SEC("tp_btf/kvm_mmio")
int BPF_PROG(virt_kvm_tp_btf_mmio, int type, int len, __u64 gpa)
{
	return mmio_sub(type, gpa);
}

SEC("tp_btf/kvm_fast_mmio")
int BPF_PROG(virt_kvm_tp_btf_fast_mmio, __u64 gpa)
{
	return on_sub(KVM_SUB_MMIO, KVM_SUB_WR, gpa);
}

SEC("tp_btf/kvm_hypercall")
int BPF_PROG(virt_kvm_tp_btf_hypercall, unsigned long nr)
{
	return on_hypercall(nr);
}

SEC("tp_btf/kvm_userspace_exit")
int BPF_PROG(virt_kvm_tp_btf_userspace_exit, __u32 reason)
{
	return on_userspace_exit(reason);
}

SEC("tp_btf/kvm_vcpu_wakeup")
int BPF_PROG(virt_kvm_tp_btf_halt, __u64 ns, bool waited)
{
	return on_halt(ns, waited, true);
}

/* The scheduler's hooks (sched): they fire on every context switch,
 * wake-up and migration of the host. A task that is no vCPU costs one
 * check each: a switch, the CPU's waitq word (no tracked vCPU runs, waits
 * or is queued unlisted there); a wake-up or migration, the task's bit in
 * vcpu_tids. */
SEC("tp_btf/sched_switch")
int BPF_PROG(virt_kvm_tp_btf_sched_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	__u32 cpu = task_cpu(prev);
	struct kvm_cpu_wait *w = cpu_wait(cpu);

	if (!w || !w->any)
		return 0;
	return on_switch(w, cpu, prev, next);
}

/* A vCPU thread is queued after sleeping (ttwu_do_activate()): it waits
 * from sched_info.last_queued on the CPU it was queued on. Not if it never
 * left the CPU or a run queue (ttwu_runnable()): it runs, or waits already. */
SEC("tp_btf/sched_wakeup")
int BPF_PROG(virt_kvm_tp_btf_sched_wakeup, struct task_struct *p)
{
	struct kvm_cpu_wait *w;
	struct kvm_vcpu_slot *s;
	__u32 pid = p->pid, idx;
	__u64 queued;

	if (!id_marked(vcpu_tids, pid))
		return 0;
	s = tid_vcpu(pid, &idx);
	if (!s || s->wait_cpu || p->on_cpu)
		return 0;
	if ((queued = task_last_queued(p)))
		wait_begin(s, idx, task_cpu(p), p, queued);
	else if ((w = cpu_wait(task_cpu(p))))
		unlisted_mark(s, w, task_cpu(p));
	return 0;
}

/* A waiting vCPU moves to another CPU's run queue (load balancing, a
 * changed affinity, NUMA balancing): wait_migrate(). */
SEC("tp_btf/sched_migrate_task")
int BPF_PROG(virt_kvm_tp_btf_sched_migrate, struct task_struct *p, int dest_cpu)
{
	struct kvm_cpu_wait *w;
	struct kvm_vcpu_slot *s;
	__u32 pid = p->pid, idx;

	if (!id_marked(vcpu_tids, pid))
		return 0;
	s = tid_vcpu(pid, &idx);
	if (!s)
		return 0;
	if (s->wait_cpu)
		wait_migrate(s, idx, p, (__u32)dest_cpu);
	else if (s->unlisted_cpu && (w = cpu_wait((__u32)dest_cpu))) {
		unlisted_clear(s);
		unlisted_mark(s, w, (__u32)dest_cpu);
	}
	return 0;
}

/* raw_tp: same arguments, untyped; the thread is checked by its id. */
SEC("raw_tp/kvm_exit")
int BPF_PROG(virt_kvm_raw_tp_exit, void *vcpu, __u32 isa)
{
	return on_exit((__u64)vcpu, bpf_get_current_pid_tgid(), isa, ID_PROBE, vcpu);
}

SEC("raw_tp/kvm_entry")
int BPF_PROG(virt_kvm_raw_tp_entry, void *vcpu)
{
	return on_entry((__u64)vcpu, false, false, ID_PROBE, vcpu);
}

SEC("raw_tp/kvm_entry")
int BPF_PROG(virt_kvm_raw_tp_entry_subs, void *vcpu)
{
	return on_entry((__u64)vcpu, true, false, ID_PROBE, vcpu);
}

SEC("raw_tp/kvm_entry")
int BPF_PROG(virt_kvm_raw_tp_entry_npf, void *vcpu)
{
	return on_entry((__u64)vcpu, false, true, ID_PROBE, vcpu);
}

SEC("raw_tp/kvm_entry")
int BPF_PROG(virt_kvm_raw_tp_entry_subs_npf, void *vcpu)
{
	return on_entry((__u64)vcpu, true, true, ID_PROBE, vcpu);
}

SEC("raw_tp/kvm_page_fault")
int BPF_PROG(virt_kvm_raw_tp_page_fault, void *vcpu, __u64 gpa, __u64 err)
{
	return on_page_fault(vcpu, gpa, err, ID_PROBE);
}

SEC("raw_tp/kvm_pio")
int BPF_PROG(virt_kvm_raw_tp_pio, unsigned int rw, unsigned int port)
{
	return on_sub(KVM_SUB_PIO, rw ? KVM_SUB_OUT : KVM_SUB_IN, port);
}

SEC("raw_tp/kvm_msr")
int BPF_PROG(virt_kvm_raw_tp_msr, unsigned int write, __u32 ecx)
{
	return on_sub(KVM_SUB_MSR, write ? KVM_SUB_WR : KVM_SUB_RD, ecx);
}

SEC("raw_tp/kvm_cpuid")
int BPF_PROG(virt_kvm_raw_tp_cpuid, unsigned int function)
{
	return on_sub(KVM_SUB_CPUID, 0, function);
}

SEC("raw_tp/kvm_mmio")
int BPF_PROG(virt_kvm_raw_tp_mmio, int type, int len, __u64 gpa)
{
	return mmio_sub(type, gpa);
}

SEC("raw_tp/kvm_fast_mmio")
int BPF_PROG(virt_kvm_raw_tp_fast_mmio, __u64 gpa)
{
	return on_sub(KVM_SUB_MMIO, KVM_SUB_WR, gpa);
}

SEC("raw_tp/kvm_hypercall")
int BPF_PROG(virt_kvm_raw_tp_hypercall, unsigned long nr)
{
	return on_hypercall(nr);
}

SEC("raw_tp/kvm_userspace_exit")
int BPF_PROG(virt_kvm_raw_tp_userspace_exit, __u32 reason)
{
	return on_userspace_exit(reason);
}

SEC("raw_tp/kvm_vcpu_wakeup")
int BPF_PROG(virt_kvm_raw_tp_halt, __u64 ns, bool waited)
{
	return on_halt(ns, waited, true);
}

/* Classic tracepoints: the record the kernel formatted, without the vCPU
 * pointer (vcpu_id repeats across VMs): the identity is the thread. */
SEC("tracepoint/kvm/kvm_exit")
int virt_kvm_tracepoint_exit(struct trace_event_raw_kvm_exit___virt *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();

	return on_exit(id, id, ctx->isa, ID_RECORD, ctx);
}

SEC("tracepoint/kvm/kvm_entry")
int virt_kvm_tracepoint_entry(struct trace_event_raw_kvm_entry___virt *ctx)
{
	return on_entry(bpf_get_current_pid_tgid(), false, false, ID_RECORD, ctx);
}

SEC("tracepoint/kvm/kvm_entry")
int virt_kvm_tracepoint_entry_subs(struct trace_event_raw_kvm_entry___virt *ctx)
{
	return on_entry(bpf_get_current_pid_tgid(), true, false, ID_RECORD, ctx);
}

SEC("tracepoint/kvm/kvm_pio")
int virt_kvm_tracepoint_pio(struct trace_event_raw_kvm_pio___virt *ctx)
{
	return on_sub(KVM_SUB_PIO, ctx->rw ? KVM_SUB_OUT : KVM_SUB_IN, ctx->port);
}

SEC("tracepoint/kvm/kvm_msr")
int virt_kvm_tracepoint_msr(struct trace_event_raw_kvm_msr___virt *ctx)
{
	return on_sub(KVM_SUB_MSR, ctx->write ? KVM_SUB_WR : KVM_SUB_RD, ctx->ecx);
}

SEC("tracepoint/kvm/kvm_cpuid")
int virt_kvm_tracepoint_cpuid(struct trace_event_raw_kvm_cpuid___virt *ctx)
{
	return on_sub(KVM_SUB_CPUID, 0, ctx->function);
}

SEC("tracepoint/kvm/kvm_mmio")
int virt_kvm_tracepoint_mmio(struct trace_event_raw_kvm_mmio___virt *ctx)
{
	return mmio_sub(ctx->type, ctx->gpa);
}

SEC("tracepoint/kvm/kvm_fast_mmio")
int virt_kvm_tracepoint_fast_mmio(struct trace_event_raw_kvm_fast_mmio___virt *ctx)
{
	return on_sub(KVM_SUB_MMIO, KVM_SUB_WR, ctx->gpa);
}

SEC("tracepoint/kvm/kvm_hypercall")
int virt_kvm_tracepoint_hypercall(struct trace_event_raw_kvm_hypercall___virt *ctx)
{
	return on_hypercall(ctx->nr);
}

SEC("tracepoint/kvm/kvm_userspace_exit")
int virt_kvm_tracepoint_userspace_exit(struct trace_event_raw_kvm_userspace_exit___virt *ctx)
{
	return on_userspace_exit(ctx->reason);
}

SEC("tracepoint/kvm/kvm_vcpu_wakeup")
int virt_kvm_tracepoint_halt(struct trace_event_raw_kvm_vcpu_wakeup___virt *ctx)
{
	return on_halt(ctx->ns, ctx->waited, false);
}
