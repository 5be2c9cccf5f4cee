/* KVM's structs private to kvm.ko (arch/x86/kvm/lapic.h, the kvm module's
 * BTF), as bpf/kvm.bpf.c reads them for interrupts and guest timers: just
 * the fields read, all probe reads, behind accessors. Mirrors, not
 * kernel-version flavours (those are bpf/core_fixes.bpf.h's). */
#ifndef VIRT_KVM_KERNEL_BPF_H
#define VIRT_KVM_KERNEL_BPF_H

#include <bpf/bpf_core_read.h>

struct kvm_timer___virt {
	__u32 timer_advance_ns;
} __attribute__((preserve_access_index));

struct kvm_lapic___virt {
	struct kvm_timer___virt lapic_timer;
	struct kvm_vcpu *vcpu;
	bool apicv_active;
} __attribute__((preserve_access_index));

static __always_inline __u64 lapic_vcpu(void *apic)
{
	return (__u64)BPF_CORE_READ((struct kvm_lapic___virt *)apic, vcpu);
}

/* APICv (VMX) or AVIC (SVM) delivers the vCPU's interrupts: no injection
 * follows an accept (kvm_x86_deliver_interrupt() posts it). */
static __always_inline bool lapic_apicv_active(void *apic)
{
	return BPF_CORE_READ((struct kvm_lapic___virt *)apic, apicv_active);
}

/* The timer advance KVM applies now (adaptive, or the module parameter). */
static __always_inline __u32 vcpu_timer_advance_ns(struct kvm_vcpu *vcpu)
{
	struct kvm_lapic___virt *apic = (void *)BPF_CORE_READ(vcpu, arch.apic);

	return apic ? BPF_CORE_READ(apic, lapic_timer.timer_advance_ns) : 0;
}

#endif
