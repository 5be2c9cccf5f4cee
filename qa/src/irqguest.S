/* The guest of qa/src/irqguest.c: real mode, x2APIC through MSRs (no
 * LAPIC MMIO), loaded at GPA CODE. The VMM sets the x2APIC on
 * (IA32_APIC_BASE), esi = the vCPU's id, and the parameters at PARAMS;
 * the guest enables its APIC (SVR), installs its handlers in the real-mode
 * IVT and, by MODE:
 *   MODE_TIMER (vCPU 0): N times a TSC-deadline timer DELTA cycles ahead
 *     (LVTT in TSC-deadline mode, IA32_TSC_DEADLINE), then sti; hlt until
 *     its handler ran; the handler adds rdtsc - deadline to LATE_SUM
 *   MODE_IPI (vCPUs 0 and 1): ping-pong, one IPI in flight: vCPU 0 sends
 *     vector 0x41 to APIC id 1 (ICR), vCPU 1's handler answers with vector
 *     0x42 to APIC id 0, N times each way; each handler adds rdtsc - the
 *     sender's rdtsc before its ICR write to LAT_SUM (the TSC is the VM's);
 *     vCPU 0 starts once vCPU 1's APIC is on (READY1)
 *   MODE_DEVICE (vCPU 0): sti; hlt until the handler of vector 0x43 (the
 *     VMM's MSI through an irqfd) ran N times (by IRQS: the VMM sends the
 *     next once IRQS moved, which can be before this loop saw FIRED)
 * Each waits for its interrupt with sti; hlt, or with POLL (-p) in a pause
 * loop with interrupts on. Each handler counts in IRQS and EOIs. A vCPU done writes to DONE_PORT
 * (a KVM_EXIT_IO: the VMM stops running it). */
#define CODE		0x1000
#define PARAMS		0x3000
#define MODE		(PARAMS + 0x00)
#define N		(PARAMS + 0x04)
#define DELTA		(PARAMS + 0x08)
#define IRQS		(PARAMS + 0x10)
#define FIRED		(PARAMS + 0x14)		/* vCPU 0's handler ran */
#define FIRED1		(PARAMS + 0x18)		/* vCPU 1's */
#define READY		(PARAMS + 0x1c)		/* vCPU 0's APIC is on */
#define DEADLINE	(PARAMS + 0x20)
#define LATE_SUM	(PARAMS + 0x28)
#define SENT		(PARAMS + 0x30)
#define LAT_SUM		(PARAMS + 0x38)
#define READY1		(PARAMS + 0x40)		/* vCPU 1's APIC is on */
#define POLL		(PARAMS + 0x44)		/* wait in a pause loop, not hlt */
#define MODE_TIMER	0
#define MODE_IPI	1
#define MODE_DEVICE	2
#define DONE_PORT	0xf4
#define MSR_TSC_DEADLINE 0x6e0
#define MSR_X2_EOI	0x80b
#define MSR_X2_SVR	0x80f
#define MSR_X2_ICR	0x830
#define MSR_X2_LVTT	0x832
#define V_TIMER		0x40
#define V_PING		0x41
#define V_PONG		0x42
#define V_DEVICE	0x43

	.macro	WRMSR32 msr, lo, hi
	movl	$\msr, %ecx
	movl	\lo, %eax
	movl	\hi, %edx
	wrmsr
	.endm

	.macro	IVT vec, handler
	movw	$(CODE + \handler), (\vec * 4)
	movw	$0, (\vec * 4 + 2)
	.endm

	/* the time since the u64 at from, added to the u64 at to */
	.macro	SINCE from, to
	rdtsc
	subl	\from, %eax
	sbbl	\from + 4, %edx
	addl	%eax, \to
	adcl	%edx, \to + 4
	.endm

	/* until the dword at flag is set, then clear it: sti; hlt, or with
	 * POLL a pause loop with interrupts on */
	.macro	WAIT flag
	cmpl	$0, POLL
	jne	8f
7:	sti
	hlt
	cli
	cmpl	$0, \flag
	je	7b
	jmp	9f
8:	sti
	pause
	cmpl	$0, \flag
	je	8b
	cli
9:	movl	$0, \flag
	.endm

	.code16
	.text
start:
	cli
	xorw	%ax, %ax
	movw	%ax, %ds
	IVT	V_TIMER, timer_isr
	IVT	V_PING, ping_isr
	IVT	V_PONG, pong_isr
	IVT	V_DEVICE, device_isr
	WRMSR32	MSR_X2_SVR, $0x1ff, $0		/* APIC on, spurious vector 0xff */
	movl	$READY, %ebx			/* (an APIC off drops what it is sent) */
	testl	%esi, %esi
	jz	1f
	movl	$READY1, %ebx
1:	movl	$1, (%ebx)
	movl	N, %edi
	cmpl	$MODE_TIMER, MODE
	je	timer
	cmpl	$MODE_IPI, MODE
	je	ipi
device:	/* until IRQS = N: the VMM's next MSI may come before WAIT sees FIRED,
	 * so one FIRED can stand for two interrupts */
	WAIT	FIRED
	cmpl	%edi, IRQS
	jb	device
	jmp	done

timer:
	WRMSR32	MSR_X2_LVTT, $(2 << 17 | V_TIMER), $0	/* TSC-deadline mode */
next_timer:
	rdtsc
	addl	DELTA, %eax
	adcl	$0, %edx
	movl	%eax, DEADLINE
	movl	%edx, DEADLINE + 4
	movl	$MSR_TSC_DEADLINE, %ecx
	wrmsr
	WAIT	FIRED
	decl	%edi
	jnz	next_timer
	jmp	done

ipi:
	testl	%esi, %esi
	jnz	pong
	/* vCPU 0: no ping before vCPU 1's APIC is on (it would be dropped) */
1:	pause
	cmpl	$0, READY1
	je	1b
ping:
	rdtsc
	movl	%eax, SENT
	movl	%edx, SENT + 4
	WRMSR32	MSR_X2_ICR, $V_PING, $1		/* fixed, to APIC id 1 */
	WAIT	FIRED
	decl	%edi
	jnz	ping
	jmp	done
pong:	/* vCPU 1 */
	WAIT	FIRED1
	rdtsc
	movl	%eax, SENT
	movl	%edx, SENT + 4
	WRMSR32	MSR_X2_ICR, $V_PONG, $0		/* fixed, to APIC id 0 */
	decl	%edi
	jnz	pong

done:
	movw	$DONE_PORT, %dx
	outb	%al, %dx
	hlt
	jmp	done

eoi:
	WRMSR32	MSR_X2_EOI, $0, $0
	incl	IRQS
	ret

timer_isr:
	pushal
	SINCE	DEADLINE, LATE_SUM
	movl	$1, FIRED
	call	eoi
	popal
	iret

ping_isr:	/* on vCPU 1 */
	pushal
	SINCE	SENT, LAT_SUM
	movl	$1, FIRED1
	call	eoi
	popal
	iret

pong_isr:	/* on vCPU 0 */
	pushal
	SINCE	SENT, LAT_SUM
	movl	$1, FIRED
	call	eoi
	popal
	iret

device_isr:
	pushal
	movl	$1, FIRED
	call	eoi
	popal
	iret
