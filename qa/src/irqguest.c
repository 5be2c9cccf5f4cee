/*
 * irqguest - a tiny VMM with an in-kernel irqchip whose guest takes an
 * exactly known number of interrupts of one kind, and measures with its
 * own TSC how late they reached it: the ground truth of pmdavirt's
 * virt.kvm.vm.irq.* and virt.kvm.vm.timer.* (qa 140).
 *
 * Usage:  irqguest (-T N,D | -J N | -D N) [-p] [-b BIN] [-w SECS] [-- ARGS]
 *   -T N,D  timer: vCPU 0 programs N TSC-deadline timers, each D guest TSC
 *           cycles ahead, and halts until each fired (vector 0x40); prints
 *           "timer_irqs N", "timer_late_cycles_sum S" (the guest's rdtsc
 *           in the handler minus the deadline, summed), "tsc_khz K"
 *           (KVM_GET_TSC_KHZ)
 *   -J N    IPIs: two vCPUs ping-pong N times, one IPI in flight (vector
 *           0x41 to vCPU 1, 0x42 back to vCPU 0: 2N IPIs); prints
 *           "ipis 2N", "ipi_lat_cycles_sum S" (each handler's rdtsc minus
 *           the sender's rdtsc before its ICR write, summed), "tsc_khz K"
 *   -D N    device: an MSI (vector 0x43 to vCPU 0) through an irqfd
 *           (KVM_SET_GSI_ROUTING gsi 24, KVM_IRQFD), written N times by
 *           this VMM, each after the guest's handler took the last;
 *           prints "device_irqs N"
 *   -p      the guest waits for each interrupt in a pause loop with
 *           interrupts on, not in hlt. In the test VM (KVM on TCG's
 *           emulated SVM) a vCPU waiting in hlt now and then never gets
 *           its interrupt, with nothing left pending in its LAPIC (the
 *           stall report): 6 runs of 60 with hlt, none of 60 polling (two
 *           test VMs side by side, memory compaction every 50 ms in each;
 *           no agent). qa 140 and bench/irq.sh poll
 *   -b BIN  the guest image (default: irqguest.bin beside this program;
 *           qa/src/irqguest.S)
 *   -w SECS after the summary, linger SECS seconds (the process, and so
 *           its per-process counts, stay)
 *   -- ARGS ignored (a QEMU's VM identity, as kvmguest's)
 * A guest that takes no interrupt for STALL_S seconds is stalled: each
 * vCPU thread, stopped by a signal (KVM_RUN returns EINTR), prints
 * "stall vcpu I: ..." (its rip, mp_state, pending event, the LAPIC's
 * IRR/ISR word of vectors 0x40-0x5f, its TSC deadline) and runs on: what
 * KVM held when it stopped delivering.
 * The summary ends with "run_ns T" (wall ns from starting the vCPUs to
 * both done: bench/irq.sh's run time), "irqs K" (the guest's handlers'
 * count, which must be N, 2N or N) and "status 0". The VM: KVM_CREATE_IRQCHIP, no PIT, 64 KiB
 * of RAM at GPA 0, the image at 0x1000, real mode; the guest's APIC in
 * x2APIC mode (IA32_APIC_BASE set here; CPUID leaf 1 says x2APIC and
 * TSC-deadline), so no LAPIC MMIO. Not a kvmguest option: kvmguest's guest
 * has no irqchip (its hlt exits to the VMM) and its -I is taken.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MEM_SIZE	0x10000
#define CODE_GPA	0x1000
#define PARAMS		0x3000
#define DONE_PORT	0xf4
#define MSR_APIC_BASE	0x1b
#define APIC_BASE	0xfee00000u
#define APIC_X2		(3u << 10)	/* enabled (bit 11) and x2APIC (bit 10) */
#define APIC_BSP	(1u << 8)
#define MSI_GSI		24
#define V_DEVICE	0x43
#define MSR_TSC_DEADLINE 0x6e0
#define STALL_S		10
#define APIC_ISR	0x100	/* + 0x10 per 32 vectors (KVM_GET_LAPIC's layout) */
#define APIC_IRR	0x200

enum mode { MODE_TIMER, MODE_IPI, MODE_DEVICE };

/* the guest's parameters and results (irqguest.S) */
struct params {
	uint32_t mode, n;
	uint32_t delta, pad0;
	uint32_t irqs, fired, fired1, ready;
	uint64_t deadline, late_sum, sent, lat_sum;
	uint32_t ready1, poll;
};

struct vcpu {
	int fd;
	unsigned int id;
	struct kvm_run *run;
	pthread_t th;
};

static int kvm_fd = -1, vm_fd = -1;
static size_t run_size;
static volatile struct params *prm;
static enum mode mode = MODE_TIMER;
static unsigned long n_irqs, delta, linger;
static bool poll_wait;
static atomic_int stall_dump, vcpus_done;

static _Noreturn void die(const char *fmt, ...)
{
	va_list ap;
	int e = errno;

	va_start(ap, fmt);
	fprintf(stderr, "irqguest: ");
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, ": %s\n", strerror(e));
	exit(1);
}

static void load_image(uint8_t *mem, const char *bin)
{
	int fd = open(bin, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		die("%s", bin);
	n = read(fd, mem + CODE_GPA, PARAMS - CODE_GPA);
	close(fd);
	if (n <= 0)
		die("read %s", bin);
}

/* CPUID as KVM supports it, with x2APIC (leaf 1 ecx bit 21) and
 * TSC-deadline (bit 24): KVM refuses x2APIC mode and TSC-deadline LVTT
 * without them. */
static void set_cpuid(int fd)
{
	struct {
		struct kvm_cpuid2 c;
		struct kvm_cpuid_entry2 e[128];
	} cpuid = { .c.nent = 128 };

	if (ioctl(kvm_fd, KVM_GET_SUPPORTED_CPUID, &cpuid) < 0)
		die("KVM_GET_SUPPORTED_CPUID");
	for (unsigned int i = 0; i < cpuid.c.nent; i++)
		if (cpuid.e[i].function == 1)
			cpuid.e[i].ecx |= 1u << 21 | 1u << 24;
	if (ioctl(fd, KVM_SET_CPUID2, &cpuid) < 0)
		die("KVM_SET_CPUID2");
}

static void set_apic_base(int fd, unsigned int id)
{
	struct {
		struct kvm_msrs m;
		struct kvm_msr_entry e[1];
	} msrs = { .m.nmsrs = 1 };

	msrs.e[0].index = MSR_APIC_BASE;
	msrs.e[0].data = APIC_BASE | APIC_X2 | (id == 0 ? APIC_BSP : 0);
	if (ioctl(fd, KVM_SET_MSRS, &msrs) != 1)
		die("KVM_SET_MSRS IA32_APIC_BASE");
}

/* Real mode at CODE_GPA, esi = the vCPU's id, a stack of its own; an AP
 * (in wait-for-SIPI with an in-kernel LAPIC) made runnable. */
static void vcpu_setup(struct vcpu *v)
{
	struct kvm_mp_state mp = { KVM_MP_STATE_RUNNABLE };
	struct kvm_sregs sregs;
	struct kvm_regs regs;

	if ((v->fd = ioctl(vm_fd, KVM_CREATE_VCPU, (unsigned long)v->id)) < 0)
		die("KVM_CREATE_VCPU %u", v->id);
	v->run = mmap(NULL, run_size, PROT_READ | PROT_WRITE, MAP_SHARED, v->fd, 0);
	if (v->run == MAP_FAILED)
		die("mmap kvm_run");
	set_cpuid(v->fd);
	set_apic_base(v->fd, v->id);
	if (ioctl(v->fd, KVM_GET_SREGS, &sregs) < 0)
		die("KVM_GET_SREGS");
	sregs.cs.base = sregs.ss.base = sregs.ds.base = 0;
	sregs.cs.selector = sregs.ss.selector = sregs.ds.selector = 0;
	if (ioctl(v->fd, KVM_SET_SREGS, &sregs) < 0)
		die("KVM_SET_SREGS");
	memset(&regs, 0, sizeof(regs));
	regs.rip = CODE_GPA;
	regs.rsp = 0x8000 - 0x800 * v->id;
	regs.rsi = v->id;
	regs.rflags = 0x2;
	if (ioctl(v->fd, KVM_SET_REGS, &regs) < 0)
		die("KVM_SET_REGS");
	if (v->id && ioctl(v->fd, KVM_SET_MP_STATE, &mp) < 0)
		die("KVM_SET_MP_STATE");
}

static uint32_t lapic_word(const struct kvm_lapic_state *l, unsigned int off)
{
	uint32_t w;

	memcpy(&w, l->regs + off, sizeof(w));
	return w;
}

/* what KVM holds for this stopped vCPU (its own thread: vCPU ioctls) */
static void stall_report(const struct vcpu *v)
{
	struct {
		struct kvm_msrs m;
		struct kvm_msr_entry e[1];
	} msrs = { .m.nmsrs = 1, .e[0].index = MSR_TSC_DEADLINE };
	struct kvm_mp_state mp = { 0 };
	struct kvm_vcpu_events ev = { 0 };
	struct kvm_lapic_state lapic = { 0 };
	struct kvm_regs regs = { 0 };

	ioctl(v->fd, KVM_GET_REGS, &regs);
	ioctl(v->fd, KVM_GET_MP_STATE, &mp);
	ioctl(v->fd, KVM_GET_VCPU_EVENTS, &ev);
	ioctl(v->fd, KVM_GET_LAPIC, &lapic);
	ioctl(v->fd, KVM_GET_MSRS, &msrs);
	printf("stall vcpu %u: rip 0x%llx rflags 0x%llx mp_state %u injected %u nr 0x%x shadow %u"
	       " irr 0x%08x isr 0x%08x tsc_deadline %llu irqs %u\n",
	       v->id, (unsigned long long)regs.rip, (unsigned long long)regs.rflags, mp.mp_state,
	       ev.interrupt.injected, ev.interrupt.nr, ev.interrupt.shadow,
	       lapic_word(&lapic, APIC_IRR + 0x20), lapic_word(&lapic, APIC_ISR + 0x20),
	       (unsigned long long)msrs.e[0].data, prm->irqs);
	fflush(stdout);
}

/* KVM_RUN until the guest's out to DONE_PORT; an interrupted run (a
 * signal) runs again, after a stall report if one was asked for; anything
 * else is an error. */
static void *vcpu_run(void *arg)
{
	struct vcpu *v = arg;

	for (;;) {
		if (ioctl(v->fd, KVM_RUN, NULL) < 0) {
			if (errno != EINTR)
				die("KVM_RUN vcpu %u", v->id);
			if (atomic_load(&stall_dump))
				stall_report(v);
			continue;
		}
		if (v->run->exit_reason == KVM_EXIT_IO && v->run->io.port == DONE_PORT) {
			atomic_fetch_add(&vcpus_done, 1);
			return NULL;
		}
		errno = 0;
		die("vcpu %u: exit reason %u (port 0x%x)", v->id, v->run->exit_reason,
		    v->run->io.port);
	}
}

/* -D: gsi MSI_GSI is an MSI with vector V_DEVICE to APIC id 0, signalled
 * through an eventfd (irqfd) */
static int irqfd_setup(void)
{
	struct {
		struct kvm_irq_routing r;
		struct kvm_irq_routing_entry e[1];
	} rt = { .r.nr = 1 };
	struct kvm_irqfd irqfd = { .gsi = MSI_GSI };
	int efd = eventfd(0, EFD_CLOEXEC);

	if (efd < 0)
		die("eventfd");
	rt.e[0].gsi = MSI_GSI;
	rt.e[0].type = KVM_IRQ_ROUTING_MSI;
	rt.e[0].u.msi.address_lo = APIC_BASE;
	rt.e[0].u.msi.data = V_DEVICE;
	if (ioctl(vm_fd, KVM_SET_GSI_ROUTING, &rt) < 0)
		die("KVM_SET_GSI_ROUTING");
	irqfd.fd = (uint32_t)efd;
	if (ioctl(vm_fd, KVM_IRQFD, &irqfd) < 0)
		die("KVM_IRQFD");
	return efd;
}

/* -D: N writes, each once the guest took the last (the first once its
 * APIC is on: a software-disabled APIC drops what it is sent) */
static void device_irqs(int efd)
{
	uint64_t one = 1;

	while (!prm->ready)
		usleep(100);
	for (unsigned long i = 0; i < n_irqs; i++) {
		while (prm->irqs < i)
			usleep(100);
		if (write(efd, &one, sizeof(one)) != sizeof(one))
			die("write irqfd");
	}
}

static void on_sigusr1(int sig)
{
	(void)sig;
}

/* Until all vCPUs are done: a guest whose IRQS did not move for STALL_S
 * seconds gets its vCPUs stopped and reported, once per stall. */
static void *watchdog(void *arg)
{
	const struct vcpu *v = arg;
	unsigned int nvcpus = mode == MODE_IPI ? 2 : 1, last = prm->irqs, still = 0;

	while ((unsigned int)atomic_load(&vcpus_done) < nvcpus) {
		sleep(1);
		if (prm->irqs != last) {
			last = prm->irqs;
			still = 0;
			continue;
		}
		if (++still != STALL_S)
			continue;
		atomic_store(&stall_dump, 1);
		for (unsigned int i = 0; i < nvcpus; i++)
			pthread_kill(v[i].th, SIGUSR1);
	}
	return NULL;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void summary(int vcpu0, uint64_t run_ns)
{
	int khz = ioctl(vcpu0, KVM_GET_TSC_KHZ, 0);

	if (mode == MODE_TIMER)
		printf("timer_irqs %lu\ntimer_late_cycles_sum %llu\n", n_irqs,
		       (unsigned long long)prm->late_sum);
	else if (mode == MODE_IPI)
		printf("ipis %lu\nipi_lat_cycles_sum %llu\n", 2 * n_irqs,
		       (unsigned long long)prm->lat_sum);
	else
		printf("device_irqs %lu\n", n_irqs);
	printf("tsc_khz %d\nrun_ns %llu\nirqs %u\nstatus 0\n", khz,
	       (unsigned long long)run_ns, prm->irqs);
	fflush(stdout);
}

static unsigned long num(const char *s, char opt)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || end == s || (*end && *end != ',') || v == 0 || v > 0x7fffffff) {
		fprintf(stderr, "irqguest: -%c: bad number '%s'\n", opt, s);
		exit(2);
	}
	return v;
}

static const char *default_bin(void)
{
	static char path[4096];
	char exe[4096 - 4];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return "irqguest.bin";
	exe[n] = '\0';
	snprintf(path, sizeof(path), "%s.bin", exe);
	return path;
}

int main(int argc, char **argv)
{
	const char *bin = NULL;
	struct vcpu v[2] = { { .id = 0 }, { .id = 1 } };
	struct sigaction sa = { .sa_handler = on_sigusr1 };
	pthread_t wd;
	struct kvm_userspace_memory_region mr = { .memory_size = MEM_SIZE };
	unsigned int nvcpus;
	int opt, efd = -1;
	uint64_t t0;
	uint8_t *mem;

	while ((opt = getopt(argc, argv, "T:J:D:pb:w:")) != -1) {
		switch (opt) {
		case 'T':
			mode = MODE_TIMER;
			n_irqs = num(optarg, 'T');
			if (!strchr(optarg, ','))
				goto usage;
			delta = num(strchr(optarg, ',') + 1, 'T');
			break;
		case 'J': mode = MODE_IPI; n_irqs = num(optarg, 'J'); break;
		case 'D': mode = MODE_DEVICE; n_irqs = num(optarg, 'D'); break;
		case 'p': poll_wait = true; break;
		case 'b': bin = optarg; break;
		case 'w': linger = num(optarg, 'w'); break;
		default: goto usage;
		}
	}
	if (!n_irqs)
		goto usage;
	nvcpus = mode == MODE_IPI ? 2 : 1;
	if ((kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC)) < 0)
		die("/dev/kvm");
	if ((vm_fd = ioctl(kvm_fd, KVM_CREATE_VM, 0)) < 0)
		die("KVM_CREATE_VM");
	if (ioctl(vm_fd, KVM_CREATE_IRQCHIP, 0) < 0)
		die("KVM_CREATE_IRQCHIP");
	run_size = (size_t)ioctl(kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	mem = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		die("mmap guest memory");
	load_image(mem, bin ? bin : default_bin());
	prm = (volatile struct params *)(mem + PARAMS);
	prm->mode = mode;
	prm->n = (uint32_t)n_irqs;
	prm->delta = (uint32_t)delta;
	prm->poll = poll_wait;
	mr.userspace_addr = (uint64_t)(uintptr_t)mem;
	if (ioctl(vm_fd, KVM_SET_USER_MEMORY_REGION, &mr) < 0)
		die("KVM_SET_USER_MEMORY_REGION");
	if (mode == MODE_DEVICE)
		efd = irqfd_setup();
	for (unsigned int i = 0; i < nvcpus; i++)
		vcpu_setup(&v[i]);
	/* no SA_RESTART: the signal ends KVM_RUN with EINTR */
	if (sigaction(SIGUSR1, &sa, NULL) < 0)
		die("sigaction");
	t0 = now_ns();
	for (unsigned int i = 0; i < nvcpus; i++)
		if ((errno = pthread_create(&v[i].th, NULL, vcpu_run, &v[i])))
			die("pthread_create");
	if ((errno = pthread_create(&wd, NULL, watchdog, v)))
		die("pthread_create");
	if (mode == MODE_DEVICE)
		device_irqs(efd);
	pthread_join(wd, NULL);		/* first: it signals the vCPU threads */
	for (unsigned int i = 0; i < nvcpus; i++)
		pthread_join(v[i].th, NULL);
	summary(v[0].fd, now_ns() - t0);
	if (linger)
		sleep((unsigned int)linger);
	return 0;
usage:
	fprintf(stderr, "usage: irqguest (-T N,D | -J N | -D N) [-p] [-b BIN] [-w SECS] [-- ARGS]\n");
	return 2;
}
