// SPDX-License-Identifier: GPL-2.0
/* Not a family: the agent runs this BPF_PROG_TYPE_SYSCALL program through
 * BPF_PROG_TEST_RUN to look kernel symbols up by name, instead of reading
 * all of /proc/kallsyms (pmda/core/ksyms.c). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "ksym.h"

char LICENSE[] SEC("license") = "GPL";

SEC("syscall")
int virt_ksym_lookup(struct virt_ksym_arg *a)
{
	/* the helper takes no context pointer (the verifier wants stack or
	 * map memory for its name) */
	char name[VIRT_KSYM_NAME_LEN];
	__u64 addr = 0;

	__builtin_memcpy(name, a->name, sizeof(name));
	name[sizeof(name) - 1] = '\0';
	a->err = bpf_kallsyms_lookup_name(name, sizeof(name), 0, &addr);
	a->addr = addr;
	return 0;
}
