/*
 * kvmguest - a tiny VMM whose guest causes an exactly known set of KVM exits,
 * so that QA can assert exact deltas of pmdavirt's kvm.* counters.
 *
 * Build:  cc -std=c11 -O2 -Wall -Wextra -Werror -o kvmguest kvmguest.c
 * (glibc >= 2.34: pthreads are in libc, no -pthread needed.)
 *
 * Usage:  kvmguest [-o N] [-i N] [-c N] [-l LEAF] [-R N] [-W N] [-m MSR] [-x VALUE]
 *                  [-M N] [-G N] [-F N] [-h N] [-n NR | -N] [-d USEC] [-v N] [-r R]
 *                  [-p PORT] [-V amd|intel] [-q] [-P SECS] [-I MS] [-w SECS] [-S] [-k N] [-H ARGS]
 *                  [-- ARGS]
 *   -o N      N `out PORT, al` instructions per vCPU (default 0)
 *   -i N      N `in al, PORT` instructions per vCPU, after the outs
 *             (default 0); this VMM answers each with 0
 *   -c N      N `cpuid` instructions per vCPU (default 0)
 *   -l LEAF   the cpuid leaf, in eax (default 0; ecx is 0)
 *   -R N      N `rdmsr` of MSR per vCPU (default 0)
 *   -W N      N `wrmsr` of VALUE to MSR per vCPU (default 0)
 *   -m MSR    the MSR index, in ecx (default 0x10, IA32_TIME_STAMP_COUNTER:
 *             KVM intercepts it on AMD and Intel and emulates it in the
 *             kernel; a write sets the guest's TSC)
 *   -x VALUE  what -W writes, edx:eax (default 0)
 *   -M N      N one-byte MMIO writes to GPA 0x20000 per vCPU (default 0)
 *   -G N      N one-byte MMIO reads from GPA 0x20000 per vCPU (default 0):
 *             no memslot there, so each is a KVM_EXIT_MMIO to this VMM,
 *             which checks it and answers reads with 0
 *   -F N      N one-byte writes to GPA 0x30000 per vCPU (default 0), where
 *             this VMM registers a zero-length ioeventfd (KVM_IOEVENTFD,
 *             len 0: how QEMU wires virtio doorbells): no memslot there,
 *             and KVM completes each write in the kernel by signalling the
 *             eventfd, never a KVM_EXIT_MMIO; the eventfd's count must be
 *             N * v at the VM's end
 *   -h N      N hypercalls per vCPU (default 0)
 *   -n NR     hypercall number, in eax (default 42)
 *   -N        hypercall numbers N_hc, N_hc - 1, ..., 1 (each once per vCPU
 *             run) instead of NR: many hypercall rows (bench/fetch)
 *   -d USEC   after every KVM_EXIT_IO, busy-wait USEC microseconds (spinning
 *             on clock_gettime(CLOCK_MONOTONIC)) before the next KVM_RUN
 *   -v N      vCPUs (default 1); every vCPU runs the same program on its own
 *             thread (vCPU 0 on the main thread)
 *   -r R      create, run and destroy the VM R times (default 1)
 *   -p PORT   I/O port for the `out` loop (default 0x10, 0..255)
 *   -V V      hypercall instruction: amd = vmmcall, intel = vmcall (default:
 *             from the host CPU vendor, read with cpuid in this process)
 *   -q        quiet: no summary on stdout (exit status still tells)
 *   -P SECS   after each vCPU's first KVM_EXIT_IO print "paused 1 <tid>"
 *             (the vCPU's thread id), at its final hlt "paused 2 <tid>",
 *             and sleep SECS seconds, or until SIGUSR1, each time: points
 *             where the vCPU exists and its thread is quiet, for reading
 *             its counters
 *   -I MS     idle forever: at the final hlt, sleep MS milliseconds and
 *             KVM_RUN again (the guest's jmp takes it back to the hlt), until
 *             the process is killed: an idle VM woken by a timer, one hlt
 *             exit per vCPU per MS (bench/scale); no summary is printed
 *   -w SECS   after the summary, linger SECS seconds before exiting (the
 *             process stays alive, so per-VMM-process metrics can be read)
 *   -S        keep each vCPU's KVM statistics fd (KVM_GET_STATS_FD) open
 *             while the vCPU lives, as newer QEMUs do
 *             (kvm_init_vcpu()), for pmdavirt's per-vCPU statistics
 *   -k N      nested-paging faults of known kinds (needs -v 1 -r 1): a second
 *             memslot of N pages (N <= 128) at GPA 0x40000, private
 *             anonymous, MADV_NOHUGEPAGE; before the hlt the guest (IF=0,
 *             so KVM never takes an async page fault) writes one byte to
 *             each page per pass, then `out 0xf1, al`. Four passes, and
 *             between them this VMM, on the vCPU's thread:
 *               1 first touch                   -> host minor faults
 *               2 after MADV_PAGEOUT (swap)     -> host major faults
 *               3 after the memslot is deleted and added again (its and
 *                 every SPTE zapped, pages present) -> mapping faults
 *               4 after dirty logging is turned on (SPTEs write-
 *                 protected)                    -> fast faults (AMD; Intel
 *                 with PML takes none)
 *             Per pass it prints "pass P minflt A majflt B pf_fixed F
 *             pf_fast G pf_emulate E ns T": the vCPU thread's own host
 *             faults during the KVM_RUN of the pass (getrusage
 *             RUSAGE_THREAD: the task's min_flt/maj_flt, what
 *             /proc/<pid>/task/<tid>/stat shows), KVM's debugfs counters
 *             of the VM over the pass ("-" without debugfs) and its time;
 *             after the page-out "swapped K", the pages /proc/self/pagemap
 *             shows in swap (bit 62) before pass 2
 *   -H ARGS   before the VM, start vhostdrv (qa/src/vhostdrv.c) with the
 *             space-separated ARGS on a thread of this process, printing
 *             "vhostdrv <tid>" first: its vhost device's worker is then this
 *             VMM's (a kernel thread "vhost-<pid>" before Linux 6.4, a thread
 *             of this process since), as QEMU's with vhost=on
 *   -- ARGS   ignored: run as `bash -c 'exec -a qemu-system-x86_64 kvmguest
 *             "$@"' ... -- -name guest=web01 -uuid U` the process carries a
 *             QEMU's VM identity (argv[0] and -name/-uuid, pmda/core/vmid.c)
 *
 * The VM: no in-kernel irqchip, no PIT (no KVM_CREATE_IRQCHIP/KVM_CREATE_PIT2),
 * so every port I/O goes to userspace and `hlt` exits to userspace
 * (KVM_EXIT_HLT). 64 KiB of guest RAM at GPA 0 (one memslot), the program at
 * GPA 0x1000, CS=0 IP=0x1000, real mode (16-bit). No memory operands, no
 * stack: the guest touches only the code page. Program, N values patched in
 * as immediates:
 *
 *        mov  edi, N_out ; test edi, edi ; jz 1f
 *     0: mov  al, 0 ; out PORT, al ; dec edi ; jnz 0b
 *     1: mov  edi, N_cpuid ; test edi, edi ; jz 3f
 *     2: xor  eax, eax ; xor ecx, ecx ; cpuid ; dec edi ; jnz 2b
 *     3: mov  edi, N_hc ; test edi, edi ; jz 5f
 *     4: mov  eax, NR ; xor ebx, ebx ; xor ecx, ecx ; xor edx, edx
 *        vmmcall (AMD) | vmcall (Intel) ; dec edi ; jnz 4b
 *     5: the same loop of N_rdmsr `mov ecx, MSR ; rdmsr`, then of N_wrmsr
 *        `mov ecx, MSR ; mov eax, lo ; mov edx, hi ; wrmsr`
 *     6: with -M or -G: mov ax, 0x2000 ; mov ds, ax (DS base 0x20000),
 *        then loops of N_mmio_wr `mov [0], al` and N_mmio_rd `mov al, [0]`
 *     7: with -F: mov ax, 0x3000 ; mov ds, ax, then a loop of N_fast
 *        `mov [0], al`
 *     8: hlt
 *        jmp  8b
 *
 * The loop counter is edi: cpuid clobbers eax/ebx/ecx/edx, a hypercall
 * returns in eax and takes its arguments from rbx/rcx/rdx/rsi.
 *
 * Exits caused by ONE vCPU run (multiply by -v and -r), in the kvm_exit
 * tracepoint's terms:
 *   io        N_out       (SVM 0x7b / VMX 30 IO_INSTRUCTION); each is also
 *                         a KVM_EXIT_IO to the VMM (kvm_userspace_exit io)
 *   cpuid     N_cpuid     (SVM 0x72 / VMX 10), handled in the kernel
 *   vmmcall   N_hc        (SVM 0x81) / VMCALL (VMX 18), handled in the
 *                         kernel: kvm_hypercall nr=NR each time; for an
 *                         unknown NR (42) the guest gets -KVM_ENOSYS
 *   msr       N_rdmsr + N_wrmsr (SVM 0x7c / VMX 31, 32), handled in the
 *                         kernel: kvm_msr read / write each time
 *   npf       N_mmio_wr + N_mmio_rd (SVM 0x400 / VMX EPT_MISCONFIG 49, after
 *                         the first access's EPT_VIOLATION), each a
 *                         KVM_EXIT_MMIO to the VMM
 *   fast      N_fast writes to the ioeventfd, in the kernel, no exit to
 *                         the VMM. VMX: the first is an EPT_VIOLATION (48)
 *                         emulated (kvm_mmio write), the others
 *                         EPT_MISCONFIG (49) that handle_ept_misconfig()
 *                         (arch/x86/kvm/vmx/vmx.c) completes on the
 *                         KVM_FAST_MMIO_BUS without emulation (kvm_fast_mmio,
 *                         no kvm_mmio); SVM: each an npf (0x400), emulated
 *                         (kvm_mmio write)
 *   hlt       1           (SVM 0x78 / VMX 12), KVM_EXIT_HLT to the VMM
 *   KVM_RUN returns = N_out + N_mmio_wr + N_mmio_rd + 1 (io and mmio ones +
 *                         the final hlt)
 * Not under our control, not to be asserted exactly:
 *   npf (SVM 0x400) / EPT_VIOLATION (VMX 48): the first fetch from the code
 *   page builds its NPT/EPT entry. Observed (Debian 6.1 kvm_amd nested in
 *   QEMU TCG): exactly 1 per VM (kvm_page_fault at GPA 0x1000), also with
 *   -v 4; vCPUs faulting concurrently, or host reclaim/migration, may add
 *   more. There is no way to pre-fault on 6.1 (KVM_PRE_FAULT_MEMORY is 6.10+).
 *   intr (SVM 0x60) / EXTERNAL_INTERRUPT (VMX 1): host interrupts (timer
 *   ticks) while the guest runs; observed 2..23 per run under TCG.
 *   pause and others could appear the same way (never observed).
 * There is no set-up or termination port I/O: io exits are exactly N_out + N_in.
 * kvm_entry fires once per kvm_exit. The hypercall number is used as is:
 * pick one KVM does not implement (42, 7, ...) for a side-effect-free call
 * returning -KVM_ENOSYS; e.g. 11 (KVM_HC_SCHED_YIELD) returns 0.
 * Both paths have run: AMD (vmmcall) in the test VM, Intel (vmcall) under
 * Bochs with EPT and unrestricted guest (qa/vm/bochs: exactly 1
 * EPT_VIOLATION, no EXTERNAL_INTERRUPT there); KVM_SET_TSS_ADDR for hosts
 * without unrestricted guest is untested.
 *
 * Summary on stdout (totals over all vCPUs and repeats), one fact per line:
 *   vendor amd|intel            hypercall instruction family used
 *   vcpus V / repeats R
 *   io_exits N                  KVM_EXIT_IO seen   (= (o + i) * v * r)
 *   mmio_exits N                KVM_EXIT_MMIO seen (= (M + G) * v * r)
 *   ioeventfd N                 the -F eventfd's counts (= F * v * r)
 *   hlt_exits N                 KVM_EXIT_HLT seen  (= v * r)
 *   other_exits N               any other KVM_RUN return (must be 0)
 *   userspace_exits N           KVM_RUN returns    (= (o + 1) * v * r)
 *   cpuid N leaf L              cpuid executed     (= c * v * r)
 *   rdmsr N msr M               rdmsr executed     (= R * v * r)
 *   wrmsr N msr M               wrmsr executed     (= W * v * r)
 *   hypercalls N nr NR          hypercalls executed (= h * v * r)
 *   hypercall_ret X             guest eax after the last hypercall (signed,
 *                               -1000 = -KVM_ENOSYS), or "none"
 *   io_delay_ns N               time spent in the -d busy-waits
 *   run_ns N                    first KVM_RUN to last hlt, summed over VMs
 *   elapsed_ns N                whole run, VM creation to destruction
 * "executed" counts are verified at the final hlt: rip must be just past
 * the hlt and edi 0, else the guest did not run the whole program.
 *
 * Exit status: 0 ok; 1 usage; 2 system/KVM error; 3 unexpected guest
 * behaviour (unexpected exit, wrong final state); 77 /dev/kvm missing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/kvm.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "vhostdrv.h"

#define GUEST_MEM	0x10000UL
#define CODE_GPA	0x1000UL
#define TSS_ADDR	0xfffbd000UL	/* Intel without unrestricted guest */
#define MMIO_GPA	0x20000UL	/* no memslot: MMIO to the VMM */
#define FAST_GPA	0x30000UL	/* no memslot: the -F ioeventfd */
#define DATA_GPA	0x40000UL	/* -k: the data memslot */
#define DATA_SLOT	1
#define DATA_PAGES_MAX	128
#define PASS_PORT	0xf1		/* -k: the end of a pass */
#define PASSES		4
#define PAGE		4096UL

static unsigned long n_out, n_in, n_cpuid, n_hc, hc_nr = 42, delay_us;
static unsigned long leaf, n_rdmsr, n_wrmsr, msr = 0x10, n_mmio_wr, n_mmio_rd, n_fast;
static unsigned long long msr_value;
static int hc_spread;			/* -N: hypercall number = loop counter */
static unsigned long n_vcpus = 1, repeats = 1, port = 0x10;
static int quiet, intel;
static unsigned long linger, pause_s, idle_ms;
static int keep_stats;			/* -S */
static char *vhost_args;		/* -H */
static unsigned long n_pages;		/* -k */

static int kvm_fd = -1;
static size_t run_size;
static size_t hlt_off;	/* offset of the hlt in the program */

struct vcpu {
	int fd, stats_fd;
	unsigned id;
	struct kvm_run *run;
	pthread_t thread;
	/* results */
	uint64_t io, mmio, hlt, other, runs, delay_ns, end_ns;
	int64_t hc_ret;
	int bad;
};

static _Noreturn void die(const char *fmt, ...)
{
	va_list ap;
	int e = errno;

	fprintf(stderr, "kvmguest: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, ": %s\n", strerror(e));
	exit(2);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void host_vendor(char v[13])
{
	uint32_t a = 0, b, c, d;

	__asm__ volatile("cpuid" : "+a"(a), "=b"(b), "=c"(c), "=d"(d));
	memcpy(v, &b, 4);
	memcpy(v + 4, &d, 4);
	memcpy(v + 8, &c, 4);
	v[12] = 0;
}

/* ---- guest code ---- */

struct code {
	uint8_t *p;
	size_t n;
};

static void b(struct code *c, int n, ...)
{
	va_list ap;

	va_start(ap, n);
	while (n--)
		c->p[c->n++] = (uint8_t)va_arg(ap, int);
	va_end(ap);
}

static void imm32(struct code *c, uint32_t v)
{
	b(c, 4, v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, v >> 24);
}

static void rel8(struct code *c, size_t at, size_t target)
{
	long d = (long)target - (long)(at + 1);

	if (d < -128 || d > 127) {
		fprintf(stderr, "kvmguest: internal error: jump too far\n");
		exit(2);
	}
	c->p[at] = (uint8_t)(int8_t)d;
}

/* One counted loop over body(); returns nothing, patches its own jumps. */
static void loop(struct code *c, uint32_t count, void (*body)(struct code *))
{
	size_t jz, top;

	b(c, 2, 0x66, 0xbf); imm32(c, count);	/* mov edi, count */
	b(c, 3, 0x66, 0x85, 0xff);		/* test edi, edi */
	b(c, 2, 0x74, 0); jz = c->n - 1;	/* jz past */
	top = c->n;
	body(c);
	b(c, 2, 0x66, 0x4f);			/* dec edi */
	b(c, 2, 0x75, 0); rel8(c, c->n - 1, top); /* jnz top */
	rel8(c, jz, c->n);
}

static void out_body(struct code *c)
{
	b(c, 2, 0xb0, 0x00);			/* mov al, 0 */
	b(c, 2, 0xe6, (int)port);		/* out port, al */
}

static void in_body(struct code *c)
{
	b(c, 2, 0xe4, (int)port);		/* in al, port */
}

static void cpuid_body(struct code *c)
{
	b(c, 2, 0x66, 0xb8); imm32(c, (uint32_t)leaf);	/* mov eax, leaf */
	b(c, 3, 0x66, 0x31, 0xc9);		/* xor ecx, ecx */
	b(c, 2, 0x0f, 0xa2);			/* cpuid */
}

static void hc_body(struct code *c)
{
	if (hc_spread)
		b(c, 3, 0x66, 0x89, 0xf8);	/* mov eax, edi: N_hc .. 1 */
	else {
		b(c, 2, 0x66, 0xb8); imm32(c, (uint32_t)hc_nr); /* mov eax, nr */
	}
	b(c, 3, 0x66, 0x31, 0xdb);		/* xor ebx, ebx */
	b(c, 3, 0x66, 0x31, 0xc9);		/* xor ecx, ecx */
	b(c, 3, 0x66, 0x31, 0xd2);		/* xor edx, edx */
	if (intel)
		b(c, 3, 0x0f, 0x01, 0xc1);	/* vmcall */
	else
		b(c, 3, 0x0f, 0x01, 0xd9);	/* vmmcall */
}

static void rdmsr_body(struct code *c)
{
	b(c, 2, 0x66, 0xb9); imm32(c, (uint32_t)msr);	/* mov ecx, msr */
	b(c, 2, 0x0f, 0x32);			/* rdmsr */
}

static void wrmsr_body(struct code *c)
{
	b(c, 2, 0x66, 0xb9); imm32(c, (uint32_t)msr);	/* mov ecx, msr */
	b(c, 2, 0x66, 0xb8); imm32(c, (uint32_t)msr_value);	/* mov eax, lo */
	b(c, 2, 0x66, 0xba); imm32(c, (uint32_t)(msr_value >> 32));	/* mov edx, hi */
	b(c, 2, 0x0f, 0x30);			/* wrmsr */
}

static void mmio_wr_body(struct code *c)
{
	b(c, 3, 0xa2, 0x00, 0x00);		/* mov [0], al */
}

static void mmio_rd_body(struct code *c)
{
	b(c, 3, 0xa0, 0x00, 0x00);		/* mov al, [0] */
}

/* -k: PASSES times, a write to each data page (segment DATA_GPA >> 4,
 * + 0x100 per page), then out PASS_PORT; esi counts the passes */
static void fault_passes(struct code *c)
{
	size_t pass, page;

	b(c, 2, 0x66, 0xbe); imm32(c, PASSES);	/* mov esi, PASSES */
	pass = c->n;
	b(c, 3, 0xbb, 0x00, DATA_GPA >> 12);	/* mov bx, DATA_GPA >> 4 */
	b(c, 2, 0x66, 0xbf); imm32(c, (uint32_t)n_pages);	/* mov edi, N */
	page = c->n;
	b(c, 2, 0x8e, 0xdb);			/* mov ds, bx */
	b(c, 3, 0xa2, 0x00, 0x00);		/* mov [0], al */
	b(c, 4, 0x81, 0xc3, 0x00, 0x01);	/* add bx, 0x100 */
	b(c, 2, 0x66, 0x4f);			/* dec edi */
	b(c, 2, 0x75, 0); rel8(c, c->n - 1, page);	/* jnz page */
	b(c, 2, 0xe6, PASS_PORT);		/* out PASS_PORT, al */
	b(c, 2, 0x66, 0x4e);			/* dec esi */
	b(c, 2, 0x75, 0); rel8(c, c->n - 1, pass);	/* jnz pass */
}

static void assemble(uint8_t *mem)
{
	struct code c = { mem + CODE_GPA, 0 };

	loop(&c, (uint32_t)n_out, out_body);
	loop(&c, (uint32_t)n_in, in_body);
	loop(&c, (uint32_t)n_cpuid, cpuid_body);
	loop(&c, (uint32_t)n_hc, hc_body);
	loop(&c, (uint32_t)n_rdmsr, rdmsr_body);
	loop(&c, (uint32_t)n_wrmsr, wrmsr_body);
	if (n_mmio_wr || n_mmio_rd) {
		b(&c, 3, 0xb8, (MMIO_GPA >> 4) & 0xff, MMIO_GPA >> 12);	/* mov ax, 0x2000 */
		b(&c, 2, 0x8e, 0xd8);		/* mov ds, ax */
	}
	loop(&c, (uint32_t)n_mmio_wr, mmio_wr_body);
	loop(&c, (uint32_t)n_mmio_rd, mmio_rd_body);
	if (n_fast) {
		b(&c, 3, 0xb8, (FAST_GPA >> 4) & 0xff, FAST_GPA >> 12);	/* mov ax, 0x3000 */
		b(&c, 2, 0x8e, 0xd8);		/* mov ds, ax */
	}
	loop(&c, (uint32_t)n_fast, mmio_wr_body);
	if (n_pages)
		fault_passes(&c);
	hlt_off = c.n;
	b(&c, 1, 0xf4);				/* hlt */
	b(&c, 2, 0xeb, 0xfd);			/* jmp hlt */
}

/* ---- vCPU ---- */

static void vcpu_setup(int vm, struct vcpu *v)
{
	struct kvm_sregs sregs;
	struct kvm_regs regs;

	v->fd = ioctl(vm, KVM_CREATE_VCPU, (unsigned long)v->id);
	if (v->fd < 0)
		die("KVM_CREATE_VCPU %u", v->id);
	v->stats_fd = keep_stats ? ioctl(v->fd, KVM_GET_STATS_FD, NULL) : -1;
	if (keep_stats && v->stats_fd < 0)
		die("KVM_GET_STATS_FD %u", v->id);
	v->run = mmap(NULL, run_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		      v->fd, 0);
	if (v->run == MAP_FAILED)
		die("mmap kvm_run");
	if (ioctl(v->fd, KVM_GET_SREGS, &sregs) < 0)
		die("KVM_GET_SREGS");
	sregs.cs.base = 0;
	sregs.cs.selector = 0;
	if (ioctl(v->fd, KVM_SET_SREGS, &sregs) < 0)
		die("KVM_SET_SREGS");
	memset(&regs, 0, sizeof(regs));
	regs.rip = CODE_GPA;
	regs.rflags = 0x2;
	if (ioctl(v->fd, KVM_SET_REGS, &regs) < 0)
		die("KVM_SET_REGS");
}

static void spin_us(struct vcpu *v)
{
	uint64_t t0 = now_ns(), t, end = t0 + delay_us * 1000u;

	do
		t = now_ns();
	while (t < end);
	v->delay_ns += t - t0;
}

static void on_usr1(int sig)
{
	(void)sig;
}

/* -P: the n-th quiet point of this vCPU's thread */
static void pause_here(int n)
{
	if (!pause_s)
		return;
	printf("paused %d %ld\n", n, (long)gettid());
	fflush(stdout);
	sleep((unsigned int)pause_s);
}

/* -I: the timer that wakes a halted vCPU */
static void idle_sleep(void)
{
	struct timespec ts = { (time_t)(idle_ms / 1000), (long)(idle_ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* -H: vhostdrv's main on this thread, its arguments split at spaces */
static void *vhostdrv_run(void *arg)
{
	char *argv[64], *save = NULL, *w;
	int argc = 0;

	argv[argc++] = "vhostdrv";
	for (w = strtok_r(arg, " ", &save); w && argc < 63; w = strtok_r(NULL, " ", &save))
		argv[argc++] = w;
	argv[argc] = NULL;
	printf("vhostdrv %ld\n", (long)gettid());
	fflush(stdout);
	optind = 0;	/* main's getopt is done: a fresh scan of these */
	printf("vhostdrv status %d\n", vhostdrv_main(argc, argv));
	fflush(stdout);
	return NULL;
}

static void start_vhostdrv(void)
{
	pthread_t th;

	errno = pthread_create(&th, NULL, vhostdrv_run, vhost_args);
	if (errno)
		die("pthread_create vhostdrv");
	pthread_detach(th);
}

/* ---- -k: nested-paging faults of known kinds ---- */

/* KVM's debugfs counters of the VM read per pass (the VM's directory is
 * "<pid>-<vm fd>"), in the order printed */
static const char *const kvm_books[] = { "pf_fixed", "pf_fast", "pf_emulate" };
#define NBOOKS (sizeof(kvm_books) / sizeof(kvm_books[0]))

struct fault_mark {
	long minflt, majflt;
	long long book[NBOOKS];		/* -1: not readable */
	uint64_t ns;
};

static struct {
	int vm;
	uint8_t *data;
	unsigned pass;			/* passes done */
	struct fault_mark at_run;	/* before the last KVM_RUN */
} flt = { .vm = -1 };

static long long kvm_book(const char *name)
{
	char path[128], buf[32];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/sys/kernel/debug/kvm/%d-%d/%s", (int)getpid(), flt.vm, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return strtoll(buf, NULL, 10);
}

/* Around a KVM_RUN: KVM's counters outside the thread's fault window */
static void fault_mark(struct fault_mark *m, int before_run)
{
	struct rusage ru;
	unsigned i;

	if (before_run)
		for (i = 0; i < NBOOKS; i++)
			m->book[i] = kvm_book(kvm_books[i]);
	if (getrusage(RUSAGE_THREAD, &ru) < 0)
		die("getrusage");
	m->minflt = ru.ru_minflt;
	m->majflt = ru.ru_majflt;
	m->ns = now_ns();
	if (!before_run)
		for (i = 0; i < NBOOKS; i++)
			m->book[i] = kvm_book(kvm_books[i]);
}

static void data_slot(uint32_t flags, uint64_t size)
{
	struct kvm_userspace_memory_region region = {
		.slot = DATA_SLOT, .flags = flags, .guest_phys_addr = DATA_GPA,
		.memory_size = size, .userspace_addr = (uintptr_t)flt.data,
	};

	if (ioctl(flt.vm, KVM_SET_USER_MEMORY_REGION, &region) < 0)
		die("KVM_SET_USER_MEMORY_REGION data slot flags %#x size %#llx", flags,
		    (unsigned long long)size);
}

/* Pages of the data slot that /proc/self/pagemap shows in swap (bit 62) */
static unsigned long pages_swapped(void)
{
	uint64_t e[DATA_PAGES_MAX];
	unsigned long i, n = 0;
	off_t off = (off_t)((uintptr_t)flt.data / PAGE * sizeof(uint64_t));
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		die("/proc/self/pagemap");
	if (pread(fd, e, n_pages * sizeof(e[0]), off) != (ssize_t)(n_pages * sizeof(e[0])))
		die("read pagemap");
	close(fd);
	for (i = 0; i < n_pages; i++)
		n += (e[i] >> 62) & 1;
	return n;
}

/* MADV_PAGEOUT until the data slot is in swap (3 tries): reclaim keeps a
 * page a PTE or a secondary MMU saw accessed (mm/vmscan.c
 * folio_check_references(); folio_referenced() asks KVM through the MMU
 * notifier, which clears its SPTE's accessed bit), so the first try keeps
 * the pages the guest touched and the next, the guest stopped, takes them */
static void page_out(void)
{
	for (int i = 0; i < 3 && pages_swapped() < n_pages; i++)
		if (madvise(flt.data, n_pages * PAGE, MADV_PAGEOUT) < 0)
			die("madvise MADV_PAGEOUT");
}

static void fault_setup(int vm)
{
	flt.vm = vm;
	flt.data = mmap(NULL, n_pages * PAGE, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (flt.data == MAP_FAILED)
		die("mmap data slot");
	if (madvise(flt.data, n_pages * PAGE, MADV_NOHUGEPAGE) < 0)
		die("madvise MADV_NOHUGEPAGE");
	data_slot(0, n_pages * PAGE);
}

/* What the next pass finds (the list in -k's usage) */
static void fault_prepare(unsigned next)
{
	if (next == 2) {
		page_out();
		printf("swapped %lu\n", pages_swapped());
	} else if (next == 3) {
		data_slot(0, 0);
		data_slot(0, n_pages * PAGE);
	} else if (next == 4) {
		data_slot(KVM_MEM_LOG_DIRTY_PAGES, n_pages * PAGE);
	}
}

static void print_book(const char *name, long long from, long long to)
{
	if (from < 0 || to < 0)
		printf(" %s -", name);
	else
		printf(" %s %lld", name, to - from);
}

/* The guest's out PASS_PORT: pass flt.pass + 1 ended */
static void fault_pass(void)
{
	struct fault_mark m;
	unsigned i;

	fault_mark(&m, 0);
	flt.pass++;
	printf("pass %u minflt %ld majflt %ld", flt.pass, m.minflt - flt.at_run.minflt,
	       m.majflt - flt.at_run.majflt);
	for (i = 0; i < NBOOKS; i++)
		print_book(kvm_books[i], flt.at_run.book[i], m.book[i]);
	printf(" ns %" PRIu64 "\n", m.ns - flt.at_run.ns);
	fault_prepare(flt.pass + 1);
	fflush(stdout);
}

static void fault_teardown(void)
{
	if (!n_pages)
		return;
	if (flt.pass != PASSES)
		fprintf(stderr, "kvmguest: %u fault passes, not %d\n", flt.pass, PASSES);
	munmap(flt.data, n_pages * PAGE);
}

static void *vcpu_run(void *arg)
{
	struct vcpu *v = arg;
	struct kvm_run *r = v->run;
	struct kvm_regs regs;

	if (n_pages)	/* kvm_run's first touch here: not in pass 1's faults */
		(void)*(volatile uint32_t *)&r->exit_reason;
	for (;;) {
		if (n_pages)
			fault_mark(&flt.at_run, 1);
		if (ioctl(v->fd, KVM_RUN, 0) < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			die("KVM_RUN vcpu %u", v->id);
		}
		v->runs++;
		switch (r->exit_reason) {
		case KVM_EXIT_IO:
			if (n_pages && r->io.port == PASS_PORT &&
			    r->io.direction == KVM_EXIT_IO_OUT) {
				fault_pass();
				break;
			}
			/* the outs come first, then the ins */
			if (r->io.direction != (v->io < n_out ? KVM_EXIT_IO_OUT : KVM_EXIT_IO_IN) ||
			    r->io.port != port || r->io.size != 1 ||
			    r->io.count != 1) {
				fprintf(stderr, "kvmguest: vcpu %u: unexpected io "
					"dir %u port %#x size %u count %u\n",
					v->id, r->io.direction, r->io.port,
					r->io.size, r->io.count);
				v->bad = 1;
				return NULL;
			}
			if (r->io.direction == KVM_EXIT_IO_IN)
				*((uint8_t *)r + r->io.data_offset) = 0;
			v->io++;
			if (v->io == 1)
				pause_here(1);
			if (delay_us)
				spin_us(v);
			break;
		case KVM_EXIT_MMIO:
			if (r->mmio.phys_addr != MMIO_GPA || r->mmio.len != 1 ||
			    (r->mmio.is_write ? v->mmio >= n_mmio_wr : v->mmio < n_mmio_wr)) {
				fprintf(stderr, "kvmguest: vcpu %u: unexpected mmio "
					"gpa %#llx len %u write %u\n", v->id,
					(unsigned long long)r->mmio.phys_addr,
					r->mmio.len, r->mmio.is_write);
				v->bad = 1;
				return NULL;
			}
			if (!r->mmio.is_write)
				memset(r->mmio.data, 0, sizeof(r->mmio.data));
			v->mmio++;
			break;
		case KVM_EXIT_HLT:
			v->end_ns = now_ns();
			v->hlt++;
			pause_here(2);
			if (ioctl(v->fd, KVM_GET_REGS, &regs) < 0)
				die("KVM_GET_REGS");
			if (regs.rip != CODE_GPA + hlt_off + 1 ||
			    (uint32_t)regs.rdi != 0) {
				fprintf(stderr, "kvmguest: vcpu %u: hlt at rip "
					"%#llx edi %#x, expected rip %#zx edi 0\n",
					v->id, (unsigned long long)regs.rip,
					(uint32_t)regs.rdi,
					(size_t)(CODE_GPA + hlt_off + 1));
				v->bad = 1;
			}
			v->hc_ret = (int32_t)(uint32_t)regs.rax;
			if (idle_ms && !v->bad) {
				idle_sleep();
				break;
			}
			return NULL;
		default:
			v->other++;
			fprintf(stderr, "kvmguest: vcpu %u: unexpected exit "
				"reason %u", v->id, r->exit_reason);
			if (r->exit_reason == KVM_EXIT_FAIL_ENTRY)
				fprintf(stderr, " (fail_entry hw reason %#llx)",
					(unsigned long long)
					r->fail_entry.hardware_entry_failure_reason);
			if (r->exit_reason == KVM_EXIT_INTERNAL_ERROR)
				fprintf(stderr, " (internal error suberror %u)",
					r->internal.suberror);
			fprintf(stderr, "\n");
			v->bad = 1;
			return NULL;
		}
	}
}

/* ---- one VM lifetime ---- */

struct totals {
	uint64_t io, mmio, hlt, other, runs, delay_ns, run_ns, fast;
	int64_t hc_ret;
	int bad;
};

/* -F: a zero-length ioeventfd at FAST_GPA (datamatch off: any write) */
static int fast_setup(int vm)
{
	struct kvm_ioeventfd io;
	int fd;

	if (!n_fast)
		return -1;
	fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (fd < 0)
		die("eventfd");
	memset(&io, 0, sizeof(io));
	io.addr = FAST_GPA;
	io.len = 0;
	io.fd = fd;
	if (ioctl(vm, KVM_IOEVENTFD, &io) < 0)
		die("KVM_IOEVENTFD");
	return fd;
}

/* What the guest's -F writes signalled: one count each */
static uint64_t fast_count(int fd)
{
	uint64_t n = 0;

	if (fd < 0)
		return 0;
	if (read(fd, &n, sizeof(n)) != (ssize_t)sizeof(n) && errno != EAGAIN)
		die("read eventfd");
	close(fd);
	return n;
}

static void one_vm(struct totals *t)
{
	struct kvm_userspace_memory_region region;
	struct vcpu *vc;
	uint64_t t0, tend = 0, n;
	uint8_t *mem;
	unsigned long i;
	int vm, efd;

	vm = ioctl(kvm_fd, KVM_CREATE_VM, 0UL);
	if (vm < 0)
		die("KVM_CREATE_VM");
	if (ioctl(vm, KVM_SET_TSS_ADDR, TSS_ADDR) < 0)
		die("KVM_SET_TSS_ADDR");
	mem = mmap(NULL, GUEST_MEM, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE | MAP_NORESERVE,
		   -1, 0);
	if (mem == MAP_FAILED)
		die("mmap guest memory");
	assemble(mem);
	memset(&region, 0, sizeof(region));
	region.slot = 0;
	region.guest_phys_addr = 0;
	region.memory_size = GUEST_MEM;
	region.userspace_addr = (uintptr_t)mem;
	if (ioctl(vm, KVM_SET_USER_MEMORY_REGION, &region) < 0)
		die("KVM_SET_USER_MEMORY_REGION");
	efd = fast_setup(vm);
	if (n_pages)
		fault_setup(vm);

	vc = calloc(n_vcpus, sizeof(*vc));
	if (!vc)
		die("calloc");
	for (i = 0; i < n_vcpus; i++) {
		vc[i].id = (unsigned)i;
		vcpu_setup(vm, &vc[i]);
	}

	t0 = now_ns();
	for (i = 1; i < n_vcpus; i++) {
		errno = pthread_create(&vc[i].thread, NULL, vcpu_run, &vc[i]);
		if (errno)
			die("pthread_create");
	}
	vcpu_run(&vc[0]);
	for (i = 1; i < n_vcpus; i++)
		pthread_join(vc[i].thread, NULL);

	for (i = 0; i < n_vcpus; i++) {
		struct vcpu *v = &vc[i];

		t->io += v->io;
		t->mmio += v->mmio;
		t->hlt += v->hlt;
		t->other += v->other;
		t->runs += v->runs;
		t->delay_ns += v->delay_ns;
		t->hc_ret = v->hc_ret;
		t->bad |= v->bad;
		if (v->end_ns > tend)
			tend = v->end_ns;
		munmap(v->run, run_size);
		if (v->stats_fd >= 0)
			close(v->stats_fd);
		close(v->fd);
	}
	if (tend > t0)
		t->run_ns += tend - t0;
	n = fast_count(efd);
	t->fast += n;
	if (n != n_fast * n_vcpus) {
		fprintf(stderr, "kvmguest: ioeventfd counted %" PRIu64 ", not %lu\n", n,
			n_fast * n_vcpus);
		t->bad = 1;
	}
	free(vc);
	if (n_pages && flt.pass != PASSES)
		t->bad = 1;
	fault_teardown();
	close(vm);
	munmap(mem, GUEST_MEM);
}

/* ---- main ---- */

static unsigned long num(const char *s, char opt, unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || *s == '-' || !*s || *end || v > max) {
		fprintf(stderr, "kvmguest: bad value for -%c: %s\n", opt, s);
		exit(1);
	}
	return v;
}

static void usage(void)
{
	fprintf(stderr, "usage: kvmguest [-o N] [-i N] [-c N] [-l LEAF] [-R N] [-W N] [-m MSR] [-x VALUE] "
		"[-M N] [-G N] [-F N] [-h N] [-n NR | -N] [-d USEC] [-v N] [-r R] [-p PORT] [-V amd|intel] "
		"[-q] [-P SECS] [-I MS] [-w SECS] [-S] [-k N] [-H ARGS] [-- ARGS]\n");
	exit(1);
}

int main(int argc, char **argv)
{
	struct totals t;
	char vendor[13];
	const char *force = NULL;
	unsigned long i;
	uint64_t t0, t1;
	int opt, mmap_size;

	while ((opt = getopt(argc, argv, "o:i:c:l:R:W:m:x:M:G:F:h:n:Nd:v:r:p:V:qP:I:w:Sk:H:")) != -1) {
		switch (opt) {
		case 'o': n_out = num(optarg, 'o', 0x7fffffff); break;
		case 'i': n_in = num(optarg, 'i', 0x7fffffff); break;
		case 'c': n_cpuid = num(optarg, 'c', 0x7fffffff); break;
		case 'l': leaf = num(optarg, 'l', 0xffffffff); break;
		case 'R': n_rdmsr = num(optarg, 'R', 0x7fffffff); break;
		case 'W': n_wrmsr = num(optarg, 'W', 0x7fffffff); break;
		case 'm': msr = num(optarg, 'm', 0xffffffff); break;
		case 'x': msr_value = strtoull(optarg, NULL, 0); break;
		case 'M': n_mmio_wr = num(optarg, 'M', 0x7fffffff); break;
		case 'G': n_mmio_rd = num(optarg, 'G', 0x7fffffff); break;
		case 'F': n_fast = num(optarg, 'F', 0x7fffffff); break;
		case 'h': n_hc = num(optarg, 'h', 0x7fffffff); break;
		case 'n': hc_nr = num(optarg, 'n', 0xffffffff); break;
		case 'N': hc_spread = 1; break;
		case 'd': delay_us = num(optarg, 'd', 60000000); break;
		case 'v': n_vcpus = num(optarg, 'v', 256); break;
		case 'r': repeats = num(optarg, 'r', 1000000); break;
		case 'p': port = num(optarg, 'p', 0xff); break;
		case 'V': force = optarg; break;
		case 'q': quiet = 1; break;
		case 'S': keep_stats = 1; break;
		case 'H': vhost_args = optarg; break;
		case 'k': n_pages = num(optarg, 'k', DATA_PAGES_MAX); break;
		case 'P':
			pause_s = num(optarg, 'P', 3600);
			signal(SIGUSR1, on_usr1);	/* ends a pause: sleep() returns */
			break;
		case 'I': idle_ms = num(optarg, 'I', 3600000); break;
		case 'w': linger = num(optarg, 'w', 86400); break;
		default: usage();
		}
	}
	/* "-- ARGS": ignored, so that a test can run kvmguest as a VMM with a
	 * VMM's command line (exec -a qemu-system-x86_64 ... -- -name guest=web01) */
	if ((optind != argc && strcmp(argv[optind - 1], "--") != 0) || n_vcpus < 1)
		usage();
	if (n_pages && (n_vcpus != 1 || repeats != 1 || port == PASS_PORT || idle_ms)) {
		fprintf(stderr, "kvmguest: -k needs -v 1 -r 1, no -I, and a -p other than %#x\n",
			PASS_PORT);
		exit(1);
	}

	host_vendor(vendor);
	if (force) {
		if (!strcmp(force, "amd"))
			intel = 0;
		else if (!strcmp(force, "intel"))
			intel = 1;
		else
			usage();
	} else {
		intel = strcmp(vendor, "AuthenticAMD") != 0 &&
			strcmp(vendor, "HygonGenuine") != 0;
	}

	kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm_fd < 0) {
		if (errno == ENOENT) {
			fprintf(stderr, "kvmguest: /dev/kvm: %s\n", strerror(errno));
			return 77;
		}
		die("/dev/kvm");
	}
	if (ioctl(kvm_fd, KVM_GET_API_VERSION, 0) != KVM_API_VERSION)
		die("KVM_GET_API_VERSION");
	mmap_size = ioctl(kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (mmap_size < (int)sizeof(struct kvm_run))
		die("KVM_GET_VCPU_MMAP_SIZE");
	run_size = (size_t)mmap_size;

	if (vhost_args)
		start_vhostdrv();
	memset(&t, 0, sizeof(t));
	t0 = now_ns();
	for (i = 0; i < repeats && !t.bad; i++)
		one_vm(&t);
	t1 = now_ns();

	if (!quiet) {
		printf("vendor %s\n", intel ? "intel" : "amd");
		printf("host_vendor %s\n", vendor);
		printf("hypercall_insn %s\n", intel ? "vmcall" : "vmmcall");
		printf("vcpus %lu\n", n_vcpus);
		printf("repeats %lu\n", i);
		printf("port %#lx\n", port);
		printf("io_exits %" PRIu64 "\n", t.io);
		printf("mmio_exits %" PRIu64 "\n", t.mmio);
		printf("ioeventfd %" PRIu64 "\n", t.fast);
		printf("hlt_exits %" PRIu64 "\n", t.hlt);
		printf("other_exits %" PRIu64 "\n", t.other);
		printf("userspace_exits %" PRIu64 "\n", t.runs);
		printf("cpuid %lu leaf %#lx\n", t.bad ? 0 : n_cpuid * n_vcpus * i, leaf);
		printf("rdmsr %lu msr %#lx\n", t.bad ? 0 : n_rdmsr * n_vcpus * i, msr);
		printf("wrmsr %lu msr %#lx\n", t.bad ? 0 : n_wrmsr * n_vcpus * i, msr);
		printf("hypercalls %lu nr %lu\n",
		       t.bad ? 0 : n_hc * n_vcpus * i, hc_nr);
		if (n_hc && !t.bad)
			printf("hypercall_ret %" PRId64 "\n", t.hc_ret);
		else
			printf("hypercall_ret none\n");
		printf("io_delay_ns %" PRIu64 "\n", t.delay_ns);
		printf("run_ns %" PRIu64 "\n", t.run_ns);
		printf("elapsed_ns %" PRIu64 "\n", t1 - t0);
		printf("status %s\n", t.bad ? "bad" : "ok");
	}
	fflush(stdout);
	if (linger)
		sleep((unsigned int)linger);
	return t.bad ? 3 : 0;
}
