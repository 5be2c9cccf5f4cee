/* A 64 KiB firmware (QEMU -bios) for two vCPUs: vCPU 0 wakes vCPU 1 through
 * the local APIC (INIT, then a SIPI whose vector 0xff starts it in real
 * mode at 0xff000, this image's offset 0xf000), writes '0' to port PORT
 * N0 times and halts; vCPU 1 writes '1' N1 times and halts. Each write is
 * one io exit to the VMM (KVM_EXIT_IO). The image is mapped at 0xf0000. */
#ifndef N0
#define N0 300
#endif
#ifndef N1
#define N1 700
#endif
#define PORT 0x99
#define BASE 0xf0000
#define LAPIC 0xfee00000

/* count writes of char to PORT (loop counts down counter: ecx in 32-bit
 * code, cx in real mode), then halt for good */
	.macro	WRITES count, char, counter
	mov	$\count, \counter
	movw	$PORT, %dx
	movb	$\char, %al
1:	outb	%al, %dx
	loop	1b
2:	hlt
	jmp	2b
	.endm

	.code16
	.text
bsp:
	cli
	lgdtl	%cs:gdt_desc
	movl	%cr0, %eax
	orl	$1, %eax
	movl	%eax, %cr0
	ljmpl	$0x08, $(BASE + pm32)
	.code32
pm32:
	movw	$0x10, %ax
	movw	%ax, %ds
	movw	%ax, %es
	movw	%ax, %ss
	orl	$0x100, LAPIC + 0xf0		/* spurious vector register: APIC on */
	movl	$0x01000000, LAPIC + 0x310	/* destination: APIC id 1 */
	movl	$0x00004500, LAPIC + 0x300	/* INIT */
	movl	$0x01000000, LAPIC + 0x310
	movl	$0x000046ff, LAPIC + 0x300	/* SIPI, vector 0xff */
	WRITES	N0, '0', %ecx

	.balign	8
/* The accessed bits are set: loading a segment whose descriptor lacks it
 * makes the CPU write it into the GDT, here in ROM, and under KVM that
 * write exits to QEMU, which drops it, and the load restarts forever. */
gdt:
	.quad	0
	.quad	0x00cf9b000000ffff		/* code: flat 4 GiB, 32-bit */
	.quad	0x00cf93000000ffff		/* data: flat 4 GiB */
gdt_desc:
	.word	gdt_desc - gdt - 1
	.long	BASE + gdt

	.code16
	.org	0xf000
ap:						/* real mode, cs 0xff00 */
	cli
	WRITES	N1, '1', %cx

	.org	0xfff0				/* the reset vector */
	ljmp	$0xf000, $bsp
	.org	0x10000
