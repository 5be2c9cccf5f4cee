/*
 * Kernel symbols by name. Reading /proc/kallsyms formats every symbol of
 * the kernel and its modules (0.4 s in the test VM); a BPF syscall
 * program asks kallsyms_lookup_name() for just the names wanted
 * (bpf_kallsyms_lookup_name(), Linux 5.16+), about 50 ms with its load.
 * /proc/kallsyms stays the fallback: older kernels, addresses hidden.
 */
#include "agent.h"
#include "ksym.skel.h"
#include "core/ksym.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <string.h>

int virt_ksym_scan(FILE *f, const char *const names[], uint64_t addrs[], bool present[],
		   unsigned int n)
{
	char line[512];
	int found = 0;

	while (fgets(line, sizeof(line), f)) {
		unsigned long long addr;
		char type, sym[256];

		if (sscanf(line, "%llx %c %255s", &addr, &type, sym) != 3)
			continue;
		for (unsigned int i = 0; i < n; i++)
			if (!present[i] && strcmp(sym, names[i]) == 0) {
				present[i] = true;
				addrs[i] = addr;
				found++;
			}
	}
	return found;
}

/* 0, or -errno when the BPF way is not there (or hides addresses). */
static int lookup_bpf(const char *const names[], uint64_t addrs[], bool present[], unsigned int n)
{
	struct ksym_bpf *skel;
	int fd, err = 0;

	for (unsigned int i = 0; i < n; i++)
		if (strlen(names[i]) >= VIRT_KSYM_NAME_LEN)
			return -ENAMETOOLONG;
	if (!(skel = ksym_bpf__open_and_load()))
		return -errno;
	fd = bpf_program__fd(skel->progs.virt_ksym_lookup);
	for (unsigned int i = 0; i < n && !err; i++) {
		struct virt_ksym_arg a = { .addr = 0 };
		struct bpf_test_run_opts run = { .sz = sizeof(run), .ctx_in = &a,
						 .ctx_size_in = sizeof(a) };

		snprintf(a.name, sizeof(a.name), "%s", names[i]);
		if ((err = bpf_prog_test_run_opts(fd, &run)) < 0)
			break;
		if (a.err == -EPERM)
			err = -EPERM;
		present[i] = a.err == 0;
		addrs[i] = a.addr;
	}
	ksym_bpf__destroy(skel);
	return err;
}

static int lookup_kallsyms(const char *const names[], uint64_t addrs[], bool present[],
			   unsigned int n)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	int found;

	if (!f)
		return -errno;
	found = virt_ksym_scan(f, names, addrs, present, n);
	fclose(f);
	return found;
}

int virt_ksym_lookup(const char *const names[], uint64_t addrs[], bool present[], unsigned int n)
{
	static int bpf_err;	/* the BPF way failed once: do not retry */
	int found = 0;

	for (unsigned int i = 0; i < n; i++) {
		addrs[i] = 0;
		present[i] = false;
	}
	if (!bpf_err && (bpf_err = lookup_bpf(names, addrs, present, n)) < 0)
		pmNotifyErr(LOG_INFO, "kernel symbols: no BPF lookup (%s), reading /proc/kallsyms",
			    strerror(-bpf_err));
	if (bpf_err) {
		for (unsigned int i = 0; i < n; i++) {
			addrs[i] = 0;
			present[i] = false;
		}
		return lookup_kallsyms(names, addrs, present, n);
	}
	for (unsigned int i = 0; i < n; i++)
		found += present[i];
	return found;
}
