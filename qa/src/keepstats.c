/*
 * keepstats.so - LD_PRELOAD into a VMM that keeps no KVM statistics fd
 * (e.g. Debian 12's QEMU 7.2): after each KVM_CREATE_VCPU it
 * opens the new vCPU's statistics fd (KVM_GET_STATS_FD) and keeps it, as
 * newer QEMUs do in kvm_init_vcpu(), and after KVM_CREATE_VM the VM's
 * (anon_inode:kvm-vm-stats, which the agent does not take), so that pmdavirt's per-vCPU
 * statistics ([kvm] vcpu_stats) can share it. Only the VMM itself can open
 * one: kvm_vcpu_ioctl() refuses a caller whose mm is not the VM's.
 *
 * Build: cc -shared -fPIC -o keepstats.so keepstats.c -ldl
 */
#include <dlfcn.h>
#include <linux/kvm.h>
#include <stdarg.h>
#include <sys/ioctl.h>

int ioctl(int fd, unsigned long request, ...)
{
	static int (*real)(int, unsigned long, ...);
	va_list ap;
	void *arg;
	int ret;

	va_start(ap, request);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "ioctl");
	ret = real(fd, request, arg);
	/* kept until exit; the VM's is for the tests' own reader
	 * (qa/src/kvmstats.c), not the agent */
	if ((request == KVM_CREATE_VCPU || request == KVM_CREATE_VM) && ret >= 0)
		(void)real(ret, KVM_GET_STATS_FD, 0);
	return ret;
}
