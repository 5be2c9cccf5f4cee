/* Kernel-version flavours of the fields the BPF programs read, behind
 * accessors; each cites the commit (and release) that changed the field.
 * A family's mirrors of a kernel module's private structs, which are no
 * flavours, are the family's: bpf/<family>_kernel.bpf.h.
 * CO-RE picks the flavour that matches the running kernel's BTF. The task
 * accessors take BTF-typed pointers (tp_btf arguments): their reads are
 * plain loads, no helper call. */
#ifndef VIRT_CORE_FIXES_BPF_H
#define VIRT_CORE_FIXES_BPF_H

#include <bpf/bpf_core_read.h>

/* task_struct::state became __state in 2f064a59a11f ("sched: Change
 * task_struct::state", v5.14). */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

static __always_inline long task_state(struct task_struct *t)
{
	struct task_struct___pre514 *o = (void *)t;

	if (bpf_core_field_exists(t->__state))
		return t->__state;
	return o->state;
}

/* The CPU a task runs or is queued on (task_cpu()): thread_info.cpu since
 * bcf9033e5449 ("sched: move CPU field back into thread_info if
 * THREAD_INFO_IN_TASK", v5.16), task_struct::cpu before. */
struct task_struct___pre516 {
	unsigned int cpu;
} __attribute__((preserve_access_index));

static __always_inline __u32 task_cpu(struct task_struct *t)
{
	struct task_struct___pre516 *o = (void *)t;

	if (bpf_core_field_exists(t->thread_info.cpu))
		return t->thread_info.cpu;
	return o->cpu;
}

/* The clock of the run queue a task is on, rq_clock(): what the kernel's
 * sched_info (run_delay, /proc/<pid>/schedstat) counts in. The task's
 * sched_entity points at its cfs_rq, and that at its rq, with
 * CONFIG_FAIR_GROUP_SCHED (every distribution kernel); 0 without it (the
 * caller then does no wait accounting). */
static __always_inline __u64 task_rq_clock(struct task_struct *t)
{
	struct cfs_rq *cfs;
	struct rq *rq;

	if (!bpf_core_field_exists(t->se.cfs_rq))
		return 0;
	cfs = t->se.cfs_rq;
	rq = cfs ? cfs->rq : NULL;
	return rq ? rq->clock : 0;
}

/* When the task was queued on its run queue (rq clock; 0: not queued):
 * struct sched_info with CONFIG_SCHED_INFO (every distribution kernel),
 * set by sched_info_enqueue() since 46ac22bab42c (v2.6.12); 0 without it. */
static __always_inline __u64 task_last_queued(struct task_struct *t)
{
	if (!bpf_core_field_exists(t->sched_info.last_queued))
		return 0;
	return t->sched_info.last_queued;
}

/* The task's total wait on run queues (sched_info.run_delay, the second
 * field of /proc/<pid>/schedstat): sched_info_dequeue() adds a wait's part
 * on a CPU it leaves (a migration), sched_info_arrive() the rest when the
 * task gets a CPU. Since 46ac22bab42c (v2.6.12), like last_queued. */
static __always_inline __u64 task_run_delay(struct task_struct *t)
{
	if (!bpf_core_field_exists(t->sched_info.run_delay))
		return 0;
	return t->sched_info.run_delay;
}

/* last_queued of a task known by its address (a probe read). */
static __always_inline __u64 task_last_queued_at(__u64 t)
{
	if (!bpf_core_field_exists(((struct task_struct *)0)->sched_info.last_queued))
		return 0;
	return BPF_CORE_READ((struct task_struct *)t, sched_info.last_queued);
}

/* run_delay of a task known by its address (a probe read). */
static __always_inline __u64 task_run_delay_at(__u64 t)
{
	if (!bpf_core_field_exists(((struct task_struct *)0)->sched_info.run_delay))
		return 0;
	return BPF_CORE_READ((struct task_struct *)t, sched_info.run_delay);
}

/* Is the task's CFS group throttled on its CPU (its cgroup's cpu.max
 * quota, or an ancestor's, used up)? cfs_rq::throttle_count is non-zero
 * while its cfs_rq or an ancestor is throttled (tg_throttle_down()), with
 * CONFIG_CFS_BANDWIDTH (every distribution kernel), since 64660c864f46
 * ("sched: Prevent interactions with throttled entities", v3.2); false
 * without it. Probe reads: the task is known by its address. */
static __always_inline bool task_throttled_at(__u64 t)
{
	struct cfs_rq *cfs;

	if (!bpf_core_field_exists(((struct cfs_rq *)0)->throttle_count))
		return false;
	cfs = BPF_CORE_READ((struct task_struct *)t, se.cfs_rq);
	return cfs && BPF_CORE_READ(cfs, throttle_count);
}

/* KVM's halt-poll time of a vCPU (halt_poll_success_ns + halt_poll_fail_ns):
 * in struct kvm_vcpu_stat_generic since 0193cc908b5a ("KVM: stats: Separate
 * generic stats from architecture specific ones", v5.14), fail_ns since
 * cb953129bfe5 (v5.8). */
static __always_inline __u64 vcpu_halt_poll_ns(struct kvm_vcpu *vcpu)	/* probe reads */
{
	if (!bpf_core_field_exists(vcpu->stat.generic.halt_poll_fail_ns))
		return 0;
	return BPF_CORE_READ(vcpu, stat.generic.halt_poll_success_ns) +
	       BPF_CORE_READ(vcpu, stat.generic.halt_poll_fail_ns);
}

/* KVM's count of a vCPU's successful halt polls (halt_successful_poll),
 * in struct kvm_vcpu_stat_generic since 0193cc908b5a (v5.14). */
static __always_inline __u64 vcpu_halt_polls(struct kvm_vcpu *vcpu)	/* a probe read */
{
	if (!bpf_core_field_exists(vcpu->stat.generic.halt_successful_poll))
		return 0;
	return BPF_CORE_READ(vcpu, stat.generic.halt_successful_poll);
}

/* ------------------------------------------------------------------ KVM
 * The vendor modules' vCPU structs (kvm_amd's, kvm_intel's module BTF):
 * just the fields read. A vcpu pointer of these is the struct kvm_vcpu's
 * (to_svm()/to_vmx() are container_of of their first member). They are
 * probe reads even from tp_btf: bpf_rdonly_cast takes vmlinux types only. */

/* arch/x86/include/asm/svm.h struct vmcb_control_area and struct vmcb,
 * arch/x86/kvm/svm/svm.h struct vcpu_svm: svm->vmcb->control.exit_code
 * since KVM's first release (6aa8b732ca01, "[PATCH] kvm: userspace
 * interface", v2.6.20) */
struct vmcb_control_area___virt {
	__u32 exit_code;
} __attribute__((preserve_access_index));

struct vmcb___virt {
	struct vmcb_control_area___virt control;
} __attribute__((preserve_access_index));

struct vcpu_svm___virt {
	struct vmcb___virt *vmcb;
} __attribute__((preserve_access_index));

/* arch/x86/kvm/svm/svm.h struct kvm_vmcb_info (svm_switch_vmcb()'s target),
 * since 4995a3685f1b ("KVM: SVM: Use a separate vmcb for the nested L2
 * guest", v5.13) */
struct kvm_vmcb_info___virt {
	struct vmcb___virt *ptr;
} __attribute__((preserve_access_index));

/* Is struct vcpu_svm in the kernel's BTF (kvm_amd loaded, with BTF)? */
static __always_inline bool svm_vcpu_exists(void)
{
	return bpf_core_type_exists(struct vcpu_svm___virt);
}

/* svm->vmcb of a vcpu (probe read) */
static __always_inline __u64 svm_vcpu_vmcb(void *vcpu)
{
	struct vcpu_svm___virt *svm = vcpu;

	return (__u64)BPF_CORE_READ(svm, vmcb);
}

/* vmcb->control.exit_code: what svm_get_exit_info() reports (probe read) */
static __always_inline __u32 svm_vmcb_exit_code(void *vmcb)
{
	struct vmcb___virt *v = vmcb;

	return BPF_CORE_READ(v, control.exit_code);
}

/* svm->vmcb->control.exit_code of a vcpu (two probe reads); ~0 without
 * struct vcpu_svm */
static __always_inline __u32 svm_vcpu_exit_code(void *vcpu)
{
	struct vcpu_svm___virt *svm = vcpu;

	if (!svm_vcpu_exists())
		return 0xffffffffu;
	return BPF_CORE_READ(svm, vmcb, control.exit_code);
}

/* target->ptr of svm_switch_vmcb(svm, target): the vmcb it switches to */
static __always_inline __u64 svm_vmcb_info_ptr(void *target)
{
	struct kvm_vmcb_info___virt *t = target;

	return (__u64)BPF_CORE_READ(t, ptr);
}

/* arch/x86/kvm/vmx/vmx.h union vmx_exit_reason in struct vcpu_vmx, since
 * 8e5332402164 ("KVM: VMX: Convert vcpu_vmx.exit_reason to a union",
 * v5.12; a u32 exit_reason before, which this does not read) */
union vmx_exit_reason___virt {
	__u32 full;
} __attribute__((preserve_access_index));

struct vcpu_vmx___virt {
	union vmx_exit_reason___virt exit_reason;
} __attribute__((preserve_access_index));

/* since 7172c753c26a ("KVM: VMX: Move common fields of struct
 * vcpu_{vmx,tdx} to a struct", v6.16) the exit reason is in struct vcpu_vt
 * (arch/x86/kvm/vmx/common.h), vcpu_vmx's member vt */
struct vcpu_vt___virt {
	union vmx_exit_reason___virt exit_reason;
} __attribute__((preserve_access_index));

struct vcpu_vmx___vt {
	struct vcpu_vt___virt vt;
} __attribute__((preserve_access_index));

/* vmx->exit_reason.full (vmx->vt.exit_reason.full since v6.16): what
 * vmx_get_exit_info() reports (probe read); ~0 without struct vcpu_vmx */
static __always_inline __u32 vmx_vcpu_exit_reason(void *vcpu)
{
	if (bpf_core_field_exists(struct vcpu_vmx___vt, vt)) {
		struct vcpu_vmx___vt *vmx = vcpu;

		return BPF_CORE_READ(vmx, vt.exit_reason.full);
	}
	if (bpf_core_field_exists(struct vcpu_vmx___virt, exit_reason)) {
		struct vcpu_vmx___virt *vmx = vcpu;

		return BPF_CORE_READ(vmx, exit_reason.full);
	}
	return 0xffffffffu;
}

/* ---------------------------------------------------------------- virtio
 * The scatterlist's layout (a configuration flavour); the ring's private
 * struct vring_virtqueue is virtio's own: bpf/virtio_kernel.bpf.h. */
/* Does struct scatterlist begin with page_link (8 bytes), offset, length,
 * so that its first 16 bytes can be read in one probe read? Not with
 * CONFIG_DEBUG_SG, whose sg_magic comes first (include/linux/scatterlist.h). */
static __always_inline bool scatterlist_plain_head(void)
{
	return bpf_core_field_offset(struct scatterlist, page_link) == 0 &&
	       bpf_core_field_offset(struct scatterlist, length) == 12;
}

#endif
