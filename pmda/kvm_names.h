/* KVM exit reasons -> names (pmda/kvm_names.c), split out of pmda/kvm.c so
 * that qa/unit/t_kvm_names.c can check them against the kernel's tables. */
#ifndef VIRT_KVM_NAMES_H
#define VIRT_KVM_NAMES_H
#include <stddef.h>

/* isa: KVM_ISA_VMX or KVM_ISA_SVM (bpf/kvm.h); code: the exit reason as
 * trace_kvm_exit() records it (VMX: exit_reason.full, flags included). */
void kvm_exit_name(char *buf, size_t len, unsigned int isa, unsigned int code);
/* the name of a dense slot of the "exits" array (bpf/kvm.h) */
void kvm_slot_name(char *buf, size_t len, unsigned int slot);
#endif
