/* KVM exit reasons -> names, as the kernel's kvm_exit tracepoint prints
 * them (kvm_print_exit_reason() in arch/x86/kvm/trace.h). */
#include "kvm_names.h"
#include "array.h"

#include <linux/kvm.h>	/* <asm/kvm.h>: the *_VECTOR numbers SVM_EXIT_REASONS uses */
#include <asm/svm.h>
#include <asm/vmx.h>
#include "kvm.h"	/* after <linux/kvm.h>: its __u32 */
#include <stdio.h>

static const struct { unsigned int code; const char *name; } svm_names[] = {
	SVM_EXIT_REASONS
}, vmx_names[] = {
	VMX_EXIT_REASONS
};

/* VMX: the basic reason is the low 16 bits of exit_reason.full, the rest
 * are flags (VMX_EXIT_REASON_FLAGS); the tracepoint names exit_reason &
 * 0xffff. Unknown codes get stable names vmx_<n> / svm_0x<hex>. */
void kvm_exit_name(char *buf, size_t len, unsigned int isa, unsigned int code)
{
	if (isa == KVM_ISA_VMX) {
		for (size_t i = 0; i < VIRT_ARRAY_SIZE(vmx_names); i++)
			if (vmx_names[i].code == (code & 0xffff)) {
				snprintf(buf, len, "%s", vmx_names[i].name);
				return;
			}
		snprintf(buf, len, "vmx_%u", code & 0xffff);
		return;
	}
	for (size_t i = 0; i < VIRT_ARRAY_SIZE(svm_names); i++)
		if (svm_names[i].code == code) {
			snprintf(buf, len, "%s", svm_names[i].name);
			return;
		}
	snprintf(buf, len, "svm_0x%x", code);
}

void kvm_slot_name(char *buf, size_t len, unsigned int slot)
{
	if (slot < KVM_SLOT_SVM_LO)
		kvm_exit_name(buf, len, KVM_ISA_VMX, slot - KVM_SLOT_VMX);
	else if (slot < KVM_SLOT_SVM_HI)
		kvm_exit_name(buf, len, KVM_ISA_SVM, slot - KVM_SLOT_SVM_LO);
	else
		kvm_exit_name(buf, len, KVM_ISA_SVM, 0x400 + slot - KVM_SLOT_SVM_HI);
}
