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
 * the user side sums per-CPU copies word by word. */
struct kvm_stats {
	__u64 count;
	__u64 time_ns;
	__u64 hist[VIRT_HIST_BUCKETS];
};

struct kvm_vm_stats {
	__u64 exits;
	__u64 exit_ns;
	__u64 uexits;
	__u64 uexit_ns;
};

/* Per vCPU thread (the "vcpus" hash, keyed by thread id): where the
 * thread is between kvm_exit and the next kvm_entry, and its share of its
 * VM's counters. Per-VM numbers are summed by tgid in the agent, so the
 * per-exit programs touch one per-thread entry instead of a per-VM hash. */
struct kvm_vcpu_track {
	__u64 exit_ts;		/* 0: not inside an exit */
	__u64 uexit_ts;		/* 0: this exit did not go to the VMM */
	__u64 vcpu;		/* identity: vcpu pointer (or vcpu_id) */
	__u64 hcall_nr;
	__u32 slot;
	__u32 code;
	__u32 isa;
	__u32 ureason;
	__u32 hcall;		/* this exit was a hypercall */
	__u32 tgid;		/* the VMM process */
	struct kvm_vm_stats vm;
};

enum kvm_drop {
	KVM_DROP_VCPU,		/* vcpus map could not take a new thread */
	KVM_DROP_OTHER,		/* exits_other full */
	KVM_DROP_HCALL,		/* hcalls full */
	KVM_DROP_VM,		/* more VMM processes than max_vms (agent side) */
	KVM_DROP_UEXIT,		/* KVM_EXIT_* code >= KVM_UEXIT_REASONS */
	KVM_DROPS
};

#endif
