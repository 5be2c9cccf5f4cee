/*
 * Least privilege: after start-up the agent keeps only the capabilities
 * that loading, attaching and reading BPF programs and maps need — also
 * later, for hot attach — and drops every other one from its effective,
 * permitted, inheritable, ambient and bounding sets, with no_new_privs so
 * nothing it might exec gets them back. It still runs as uid 0 (pmcd starts
 * it as root through pmdaroot), so root-owned files such as tracefs stay
 * readable through ordinary ownership.
 */
#include "privs.h"
#include "config.h"

#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* What each kept capability is for (Linux 6.1):
 *   CAP_BPF, CAP_PERFMON   load tracing programs, create maps, attach
 *                          tp_btf/fentry links and kprobe perf events
 *   CAP_SYS_ADMIN          BPF_BTF_GET_NEXT_ID / BPF_BTF_GET_FD_BY_ID for
 *                          module BTF (kvm_amd, virtio_ring, vhost): libbpf's
 *                          CO-RE relocations, our attach targets (btftargets.c);
 *                          BPF_ENABLE_STATS ([agent] bpf_stats = true)
 *   CAP_SYSLOG             real addresses in /proc/kallsyms (vhost handler
 *                          names; kallsyms_show_value())
 *   CAP_SYS_RESOURCE       RLIMIT_MEMLOCK for BPF maps on kernels without
 *                          memcg accounting of BPF memory (before 5.11)
 * and what an enabled module's configuration asks for (virt_module.caps:
 * [kvm] vcpu_stats = true keeps CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH). */
static const int keep[] = { CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN, CAP_SYSLOG,
			    CAP_SYS_RESOURCE };

uint64_t virt_privs_keep_mask(uint64_t extra)
{
	uint64_t m = extra;

	for (size_t i = 0; i < VIRT_ARRAY_SIZE(keep); i++)
		m |= 1ull << keep[i];
	return m;
}

static int last_cap(void)
{
	FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "r");
	int n = 40;

	if (f) {
		if (fscanf(f, "%d", &n) != 1)
			n = 40;
		fclose(f);
	}
	return n < 63 ? n : 63;
}

int virt_drop_privileges(uint64_t extra, char *why, size_t len)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];
	uint64_t m = virt_privs_keep_mask(extra);
	int top = last_cap();

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		snprintf(why, len, "no_new_privs: %s", strerror(errno));
		return -errno;
	}
	/* the bounding set first: dropping from it needs CAP_SETPCAP */
	for (int c = 0; c <= top; c++)
		if (!(m & (1ull << c)) && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL) {
			snprintf(why, len, "bounding set, capability %d: %s", c, strerror(errno));
			return -errno;
		}
	(void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	memset(data, 0, sizeof(data));
	data[0].effective = data[0].permitted = (uint32_t)m;
	data[1].effective = data[1].permitted = (uint32_t)(m >> 32);
	if (syscall(SYS_capset, &hdr, data) < 0) {
		snprintf(why, len, "capset: %s", strerror(errno));
		return -errno;
	}
	return 0;
}
