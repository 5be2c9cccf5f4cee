/* KVM exit names (pmda/kvm_names.c) against the kernel's own tables
 * (<asm/vmx.h> VMX_EXIT_REASONS, <asm/svm.h> SVM_EXIT_REASONS), against
 * the reason numbers of the Intel SDM (vol. 3, appendix C "VMX basic exit
 * reasons") and AMD APM (vol. 2, appendix C) that qa/src/kvmguest.c's exits
 * carry, and the slot layout of bpf/kvm.h. */
#include "kvm_names.h"
#include "array.h"
#include "unit.h"

#include <linux/kvm.h>	/* <asm/kvm.h>: the *_VECTOR numbers SVM_EXIT_REASONS uses */
#include <asm/svm.h>
#include <asm/vmx.h>
#include "kvm.h"	/* after <linux/kvm.h>: its __u32 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const struct { unsigned int code; const char *name; } vmx[] = {
	VMX_EXIT_REASONS
}, svm[] = {
	SVM_EXIT_REASONS
};
#define NVMX VIRT_ARRAY_SIZE(vmx)
#define NSVM VIRT_ARRAY_SIZE(svm)

static int is_named(unsigned int isa, unsigned int code, const char *want)
{
	char buf[64];

	kvm_exit_name(buf, sizeof(buf), isa, code);
	if (strcmp(buf, want) != 0)
		fprintf(stderr, "isa %u code 0x%x: \"%s\", want \"%s\"\n", isa, code, buf, want);
	return strcmp(buf, want) == 0;
}

static int slot_is_named(unsigned int slot, const char *want)
{
	char buf[64];

	kvm_slot_name(buf, sizeof(buf), slot);
	if (strcmp(buf, want) != 0)
		fprintf(stderr, "slot %u: \"%s\", want \"%s\"\n", slot, buf, want);
	return strcmp(buf, want) == 0;
}

static const char *vmx_table_name(unsigned int code)
{
	for (size_t i = 0; i < NVMX; i++)
		if (vmx[i].code == code)
			return vmx[i].name;
	return NULL;
}

/* The slot of an SVM exit code in the "exits" array (bpf/kvm.h layout). */
static unsigned int svm_slot(unsigned int code)
{
	if (code < 0x100)
		return KVM_SLOT_SVM_LO + code;
	if (code >= 0x400 && code < 0x400 + (KVM_SLOTS - KVM_SLOT_SVM_HI))
		return KVM_SLOT_SVM_HI + code - 0x400;
	return KVM_SLOT_OTHER;
}

static void check_vmx_table(void)
{
	char want[32];

	for (size_t i = 0; i < NVMX; i++) {
		unsigned int c = vmx[i].code;

		/* a basic reason: below the flag bits, inside the VMX slots */
		CHECK(c <= 0xffff);
		CHECK(c < KVM_SLOT_SVM_LO - KVM_SLOT_VMX);
		CHECK(is_named(KVM_ISA_VMX, c, vmx[i].name));
		CHECK(slot_is_named(KVM_SLOT_VMX + c, vmx[i].name));
		/* exit_reason.full with flags set: the kernel's tracepoint names
		 * exit_reason & 0xffff (kvm_print_exit_reason()) and so do we */
		CHECK(is_named(KVM_ISA_VMX, c | VMX_EXIT_REASONS_FAILED_VMENTRY, vmx[i].name));
		CHECK(is_named(KVM_ISA_VMX, c | VMX_EXIT_REASONS_SGX_ENCLAVE_MODE, vmx[i].name));
	}
	/* codes the table does not name get a stable name of their own */
	for (unsigned int c = 0; c < KVM_SLOT_SVM_LO - KVM_SLOT_VMX; c++) {
		if (vmx_table_name(c))
			continue;
		snprintf(want, sizeof(want), "vmx_%u", c);
		CHECK(is_named(KVM_ISA_VMX, c, want));
		CHECK(is_named(KVM_ISA_VMX, c | VMX_EXIT_REASONS_FAILED_VMENTRY, want));
		CHECK(slot_is_named(KVM_SLOT_VMX + c, want));
	}
	CHECK(is_named(KVM_ISA_VMX, 0x1234, "vmx_4660"));
}

/* The exits qa/src/kvmguest.c makes, by the vendors' numbers. */
static const struct {
	unsigned int isa, code;
	const char *name;
} guest_exits[] = {
	{ KVM_ISA_VMX, 30, "IO_INSTRUCTION" },
	{ KVM_ISA_VMX, 10, "CPUID" },
	{ KVM_ISA_VMX, 18, "VMCALL" },
	{ KVM_ISA_VMX, 12, "HLT" },
	{ KVM_ISA_VMX, 48, "EPT_VIOLATION" },
	{ KVM_ISA_VMX, 1, "EXTERNAL_INTERRUPT" },
	/* a VM entry that fails on guest state: bit 31 + basic reason 33 */
	{ KVM_ISA_VMX, 0x80000021, "INVALID_STATE" },
	{ KVM_ISA_SVM, 0x7b, "io" },
	{ KVM_ISA_SVM, 0x72, "cpuid" },
	{ KVM_ISA_SVM, 0x81, "hypercall" },
	{ KVM_ISA_SVM, 0x78, "hlt" },
	{ KVM_ISA_SVM, 0x400, "npf" },
	{ KVM_ISA_SVM, 0x60, "interrupt" },
};

static void check_guest_exits(void)
{
	for (size_t i = 0; i < sizeof(guest_exits) / sizeof(guest_exits[0]); i++)
		CHECK(is_named(guest_exits[i].isa, guest_exits[i].code, guest_exits[i].name));
}

static void check_svm_table(void)
{
	for (size_t i = 0; i < NSVM; i++) {
		unsigned int c = svm[i].code, s = svm_slot(c);

		CHECK(is_named(KVM_ISA_SVM, c, svm[i].name));
		if (s != KVM_SLOT_OTHER)
			CHECK(slot_is_named(s, svm[i].name));
	}
	/* SVM codes are not masked: another code, another name */
	CHECK(is_named(KVM_ISA_SVM, 0x1007b, "svm_0x1007b"));
}

/* Slot names are the instance names of one instance domain: distinct. */
static void check_slots_distinct(void)
{
	static char names[KVM_SLOTS][64];

	for (unsigned int s = 0; s < KVM_SLOTS; s++) {
		kvm_slot_name(names[s], sizeof(names[s]), s);
		CHECK(names[s][0] != '\0');
		for (unsigned int t = 0; t < s; t++)
			if (strcmp(names[s], names[t]) == 0) {
				fprintf(stderr, "slots %u and %u: \"%s\"\n", t, s, names[s]);
				CHECK(!"slot names distinct");
			}
	}
}

/* exits_unseen's step (bpf/kvm.h): KVM's count + 1 at the last exit the
 * agent counted, and at this one */
static void check_exits_unseen_since(void)
{
	CHECK(kvm_exits_unseen_since(0, 1) == 0);		/* the first exit counted */
	CHECK(kvm_exits_unseen_since(0, 5000) == 0);		/* first, KVM counted before */
	CHECK(kvm_exits_unseen_since(8, 9) == 0);		/* the next exit, none missed */
	CHECK(kvm_exits_unseen_since(8, 12) == 3);		/* three between */
	CHECK(kvm_exits_unseen_since(8, 8) == 0);		/* KVM's count did not grow */
	CHECK(kvm_exits_unseen_since(5000, 3) == 0);		/* it was reset (stepped back) */
	CHECK(kvm_exits_unseen_since(1, UINT64_MAX) == UINT64_MAX - 2);
}

int main(void)
{
	check_exits_unseen_since();
	check_vmx_table();
	check_guest_exits();
	check_svm_table();
	check_slots_distinct();
	return UNIT_DONE();
}
