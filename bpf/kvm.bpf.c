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
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "kvm.h"
#include "virt_bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* false: counts only (no kvm_entry program, no pairing) */
const volatile bool latency = true;

/* Vendor structs, just the fields we read; CO-RE finds the real layout. */
struct vmcb_control_area___virt {
	__u32 exit_code;
} __attribute__((preserve_access_index));

struct vmcb___virt {
	struct vmcb_control_area___virt control;
} __attribute__((preserve_access_index));

struct vcpu_svm___virt {
	struct vmcb___virt *vmcb;
} __attribute__((preserve_access_index));

union vmx_exit_reason___virt {
	__u32 full;
} __attribute__((preserve_access_index));

struct vcpu_vmx___virt {
	union vmx_exit_reason___virt exit_reason;
} __attribute__((preserve_access_index));

/* Classic tracepoint records (include/trace/events/kvm.h, arch/x86/kvm/trace.h). */
struct trace_event_raw_kvm_exit___virt {
	unsigned int exit_reason;
	__u32 isa;
	unsigned int vcpu_id;
} __attribute__((preserve_access_index));

struct trace_event_raw_kvm_entry___virt {
	unsigned int vcpu_id;
} __attribute__((preserve_access_index));

struct trace_event_raw_kvm_hypercall___virt {
	unsigned long nr;
} __attribute__((preserve_access_index));

struct trace_event_raw_kvm_userspace_exit___virt {
	__u32 reason;
} __attribute__((preserve_access_index));

/* Keyed by thread id. A plain hash, not LRU: when max_vcpus threads are
 * tracked, a new thread's exits are dropped and counted (KVM_DROP_VCPU),
 * and no tracked thread loses what it counted. The agent deletes exited
 * threads (pmda/kvm.c), so the map returns to its baseline. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct kvm_vcpu_track);
} vcpus SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
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

static const struct kvm_stats zero_stats;

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
 * svm->vmcb->control.exit_code, vmx_get_exit_info() vmx->exit_reason.full. */
static __always_inline __u32 vendor_exit_code(void *vcpu, __u32 isa)
{
	if (isa == KVM_ISA_SVM && bpf_core_type_exists(struct vcpu_svm___virt)) {
		struct vcpu_svm___virt *svm = vcpu;

		return BPF_CORE_READ(svm, vmcb, control.exit_code);
	}
	if (isa == KVM_ISA_VMX && bpf_core_type_exists(struct vcpu_vmx___virt)) {
		struct vcpu_vmx___virt *vmx = vcpu;

		return BPF_CORE_READ(vmx, exit_reason.full);
	}
	return 0xffffffffu;
}

static __always_inline struct kvm_stats *exit_stats(__u32 isa, __u32 code, __u32 slot)
{
	struct kvm_stats *s;
	__u64 key;

	if (slot != KVM_SLOT_OTHER)
		return bpf_map_lookup_elem(&exits, &slot);
	key = (__u64)isa << 32 | code;
	s = bpf_map_lookup_elem(&exits_other, &key);
	if (s)
		return s;
	if (bpf_map_update_elem(&exits_other, &key, &zero_stats, BPF_NOEXIST) &&
	    !bpf_map_lookup_elem(&exits_other, &key)) {
		VIRT_DROP(drops, KVM_DROP_OTHER);
		return NULL;
	}
	return bpf_map_lookup_elem(&exits_other, &key);
}

static __always_inline void *lookup_or_init(void *map, const void *key, const void *zero,
					    __u32 drop)
{
	void *v = bpf_map_lookup_elem(map, key);

	if (v)
		return v;
	bpf_map_update_elem(map, key, zero, BPF_NOEXIST);
	v = bpf_map_lookup_elem(map, key);
	if (!v)
		VIRT_DROP(drops, drop);
	return v;
}

static __always_inline void account(struct kvm_stats *s, __u64 ns)
{
	__u32 b = virt_log2_bucket(ns);

	s->count++;
	s->time_ns += ns;
	if (b < VIRT_HIST_BUCKETS)
		s->hist[b]++;
}

/* The calling thread's entry, created on first sight; a thread id reused
 * by another process starts afresh (its old counts were the agent's). */
static __always_inline struct kvm_vcpu_track *track(void)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id, tgid = id >> 32;
	struct kvm_vcpu_track *st = bpf_map_lookup_elem(&vcpus, &tid);

	if (st && st->tgid == tgid)
		return st;
	struct kvm_vcpu_track fresh = { .tgid = tgid };

	bpf_map_update_elem(&vcpus, &tid, &fresh, BPF_ANY);
	st = bpf_map_lookup_elem(&vcpus, &tid);
	if (!st)
		VIRT_DROP(drops, KVM_DROP_VCPU);
	return st;
}

static __always_inline int on_exit(__u64 vcpu, __u32 isa, __u32 code)
{
	__u32 slot = exit_slot(isa, code);
	struct kvm_vcpu_track *st;

	if (!latency) {		/* the reason counts even if the thread can't be tracked */
		struct kvm_stats *s = exit_stats(isa, code, slot);

		if (s)
			s->count++;
		st = track();
		if (st)
			st->vm.exits++;
		return 0;
	}
	st = track();
	if (!st)
		return 0;
	st->exit_ts = bpf_ktime_get_ns();
	st->uexit_ts = 0;
	st->vcpu = vcpu;
	st->slot = slot;
	st->code = code;
	st->isa = isa;
	st->hcall = 0;
	return 0;
}

static __always_inline int on_hypercall(__u64 nr)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct kvm_vcpu_track *st;

	if (!latency) {
		struct kvm_stats *s = lookup_or_init(&hcalls, &nr, &zero_stats, KVM_DROP_HCALL);

		if (s)
			s->count++;
		return 0;
	}
	st = bpf_map_lookup_elem(&vcpus, &tid);
	if (st && st->exit_ts) {
		st->hcall = 1;
		st->hcall_nr = nr;
	}
	return 0;
}

static __always_inline int on_userspace_exit(__u32 reason)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct kvm_vcpu_track *st = bpf_map_lookup_elem(&vcpus, &tid);

	if (!latency) {
		struct kvm_stats *s = bpf_map_lookup_elem(&uexits, &reason);

		if (!s) {
			VIRT_DROP(drops, KVM_DROP_UEXIT);
			return 0;
		}
		s->count++;
		if (st)
			st->vm.uexits++;
		return 0;
	}
	if (st && st->exit_ts) {
		st->uexit_ts = bpf_ktime_get_ns();
		st->ureason = reason;
	}
	return 0;
}

static __always_inline int on_entry(__u64 vcpu)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct kvm_vcpu_track *st = bpf_map_lookup_elem(&vcpus, &tid);
	struct kvm_stats *s;
	__u64 now, ns;

	if (!st || !st->exit_ts || st->vcpu != vcpu)
		return 0;	/* first entry, or a stale thread id */
	now = bpf_ktime_get_ns();
	ns = now - st->exit_ts;
	st->exit_ts = 0;

	s = exit_stats(st->isa, st->code, st->slot);
	if (s)
		account(s, ns);
	if (st->hcall) {
		__u64 nr = st->hcall_nr;

		s = lookup_or_init(&hcalls, &nr, &zero_stats, KVM_DROP_HCALL);
		if (s)
			account(s, ns);
	}
	st->vm.exits++;
	st->vm.exit_ns += ns;
	if (st->uexit_ts) {
		__u64 uns = now - st->uexit_ts;
		__u32 reason = st->ureason;

		s = bpf_map_lookup_elem(&uexits, &reason);
		if (s)
			account(s, uns);
		else
			VIRT_DROP(drops, KVM_DROP_UEXIT);
		st->vm.uexits++;
		st->vm.uexit_ns += uns;
	}
	return 0;
}

/* tp_btf: BTF-typed raw tracepoints, the cheapest way in. */
/* Linux 6.12's verifier types these arguments trusted_ptr_or_null_: a
 * program that does not check for NULL is refused (-EACCES) */
SEC("tp_btf/kvm_exit")
int BPF_PROG(virt_kvm_btf_exit, struct kvm_vcpu *vcpu, __u32 isa)
{
	if (!vcpu)
		return 0;
	return on_exit((__u64)vcpu, isa, vendor_exit_code(vcpu, isa));
}

SEC("tp_btf/kvm_entry")
int BPF_PROG(virt_kvm_btf_entry, struct kvm_vcpu *vcpu)
{
	if (!vcpu)
		return 0;
	return on_entry((__u64)vcpu);
}

SEC("tp_btf/kvm_hypercall")
int BPF_PROG(virt_kvm_btf_hypercall, unsigned long nr)
{
	return on_hypercall(nr);
}

SEC("tp_btf/kvm_userspace_exit")
int BPF_PROG(virt_kvm_btf_userspace_exit, __u32 reason)
{
	return on_userspace_exit(reason);
}

/* raw_tp: same arguments, untyped. */
SEC("raw_tp/kvm_exit")
int BPF_PROG(virt_kvm_raw_exit, void *vcpu, __u32 isa)
{
	return on_exit((__u64)vcpu, isa, vendor_exit_code(vcpu, isa));
}

SEC("raw_tp/kvm_entry")
int BPF_PROG(virt_kvm_raw_entry, void *vcpu)
{
	return on_entry((__u64)vcpu);
}

SEC("raw_tp/kvm_hypercall")
int BPF_PROG(virt_kvm_raw_hypercall, unsigned long nr)
{
	return on_hypercall(nr);
}

SEC("raw_tp/kvm_userspace_exit")
int BPF_PROG(virt_kvm_raw_userspace_exit, __u32 reason)
{
	return on_userspace_exit(reason);
}

/* Classic tracepoints: the record the kernel formatted; identity is vcpu_id. */
SEC("tracepoint/kvm/kvm_exit")
int virt_kvm_tp_exit(struct trace_event_raw_kvm_exit___virt *ctx)
{
	return on_exit(ctx->vcpu_id, ctx->isa, ctx->exit_reason);
}

SEC("tracepoint/kvm/kvm_entry")
int virt_kvm_tp_entry(struct trace_event_raw_kvm_entry___virt *ctx)
{
	return on_entry(ctx->vcpu_id);
}

SEC("tracepoint/kvm/kvm_hypercall")
int virt_kvm_tp_hypercall(struct trace_event_raw_kvm_hypercall___virt *ctx)
{
	return on_hypercall(ctx->nr);
}

SEC("tracepoint/kvm/kvm_userspace_exit")
int virt_kvm_tp_userspace_exit(struct trace_event_raw_kvm_userspace_exit___virt *ctx)
{
	return on_userspace_exit(ctx->reason);
}
