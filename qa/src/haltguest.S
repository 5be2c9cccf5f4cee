/* A 64 KiB firmware (QEMU -bios) for one vCPU that halts a known number of
 * times with a timer interrupt waking it each time, in real mode:
 *
 *   - the PIC (8259) is set up with IRQ0..7 at vectors 0x20..0x27 (its reset
 *     base, 0, would overlay the CPU's exceptions), auto-EOI, only IRQ0
 *     unmasked; IVT entry 0x20 points at tick, which counts interrupts;
 *   - the PIT's channel 0 runs periodic (mode 2) at HZ;
 *   - sti, then `hlt` exactly HALTS times (the little-endian u32 at image
 *     offset 0xffe0: patch it to change N without rebuilding);
 *   - then it stops the timer (IRQ0 masked, channel 0 one-shot), writes
 *     "halts H interrupts I\n" to the debugcon port PORT and halts for good
 *     with interrupts off.
 *
 * Under KVM with QEMU's in-kernel irqchip and PIT (QEMU's default for
 * -accel kvm), the PIC and PIT ports are emulated in the kernel and each
 * `hlt` is handled in KVM (kvm_emulate_halt(), then kvm_vcpu_halt(), where
 * halt-polling happens), not exited to QEMU: the only exits to QEMU are the
 * report's bytes, one KVM_EXIT_IO each. I >= H: a tick that lands while
 * the vCPU is not halted (late, or re-injected by KVM's PIT after lost
 * ticks) is counted without a halt of its own. The image is mapped at
 * 0xf0000; code runs with cs = 0xf000, ds = ss = 0. */
#ifndef HALTS
#define HALTS 1000
#endif
#ifndef HZ
#define HZ 250
#endif
#define PIT_CLOCK 1193182
#define DIVISOR ((PIT_CLOCK + HZ / 2) / HZ)
#define PORT 0x99
#define VECTOR 0x20
#define TICKS 0x500			/* u32 in RAM: interrupts counted */

	.code16
	.text
start:
	cli
	xorw	%ax, %ax
	movw	%ax, %ds
	movw	%ax, %ss
	movw	$0x7000, %sp
	movl	$0, TICKS
	movw	$tick, VECTOR * 4	/* IVT entry: offset, then segment */
	movw	$0xf000, VECTOR * 4 + 2

	/* The local APIC off (IA32_APIC_BASE bit 11): as on a PC without one,
	 * the PIC's output goes straight to the CPU. With it on, KVM passes
	 * the PIC's interrupt only if LVT0 is unmasked ExtINT
	 * (kvm_apic_accept_pic_intr(), arch/x86/kvm/lapic.c), which QEMU's
	 * reset state does not give (SeaBIOS sets it): IRQ0 would stay
	 * pending in the PIC for ever. */
	movl	$0x1b, %ecx
	rdmsr
	andw	$~0x800, %ax
	wrmsr

	/* PIC: ICW1 (edge, cascade, ICW4 follows), ICW2 (vector base), ICW3
	 * (slave on IRQ2), ICW4 (8086 mode; master with auto-EOI: the
	 * interrupt acknowledge ends it, no EOI write needed) */
	movb	$0x11, %al
	outb	%al, $0x20
	outb	%al, $0xa0
	movb	$VECTOR, %al
	outb	%al, $0x21
	movb	$VECTOR + 8, %al
	outb	%al, $0xa1
	movb	$0x04, %al
	outb	%al, $0x21
	movb	$0x02, %al
	outb	%al, $0xa1
	movb	$0x03, %al
	outb	%al, $0x21
	movb	$0x01, %al
	outb	%al, $0xa1
	movb	$0xff, %al		/* OCW1: all masked for now */
	outb	%al, $0xa1
	outb	%al, $0x21

	/* PIT channel 0: lobyte/hibyte, mode 2 (rate generator), binary */
	movb	$0x34, %al
	outb	%al, $0x43
	movw	$DIVISOR, %ax
	outb	%al, $0x40
	movb	%ah, %al
	outb	%al, $0x40
	movb	$0xfe, %al		/* OCW1: IRQ0 only */
	outb	%al, $0x21

	movl	%cs:halts, %ecx
	sti
1:	hlt				/* after sti: in its shadow, no race */
	decl	%ecx
	jnz	1b
	cli

	/* timer off: IRQ0 masked, channel 0 one-shot (mode 0), count 65536 */
	movb	$0xff, %al
	outb	%al, $0x21
	movb	$0x30, %al
	outb	%al, $0x43
	xorb	%al, %al
	outb	%al, $0x40
	outb	%al, $0x40

	movw	$s_halts, %si
	call	puts
	movl	%cs:halts, %eax
	call	putdec
	movw	$s_ints, %si
	call	puts
	movl	TICKS, %eax
	call	putdec
	movw	$s_nl, %si
	call	puts
2:	hlt
	jmp	2b

/* IRQ0: count it (auto-EOI: nothing to acknowledge) */
tick:
	incl	TICKS
	iret

/* the NUL-terminated string at %cs:%si to PORT */
puts:
	movw	$PORT, %dx
1:	movb	%cs:(%si), %al
	testb	%al, %al
	jz	2f
	outb	%al, %dx
	incw	%si
	jmp	1b
2:	ret

/* %eax in decimal to PORT */
putdec:
	movl	$10, %ebx
	xorw	%si, %si
1:	xorl	%edx, %edx
	divl	%ebx
	pushw	%dx
	incw	%si
	testl	%eax, %eax
	jnz	1b
	movw	$PORT, %dx
2:	popw	%ax
	addb	$'0', %al
	outb	%al, %dx
	decw	%si
	jnz	2b
	ret

s_halts: .asciz "halts "
s_ints:	.asciz " interrupts "
s_nl:	.asciz "\n"

	.org	0xffe0
halts:	.long	HALTS			/* N: patchable */

	.org	0xfff0				/* the reset vector */
	ljmp	$0xf000, $start
	.org	0x10000
