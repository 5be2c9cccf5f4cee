/* Kernel-version flavours of the fields the BPF programs read, behind
 * accessors; each cites the commit (and release) that changed the field.
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

#endif
