// SPDX-License-Identifier: GPL-2.0
/* sample family: getppid() calls per process. Programs are named
 * virt_<family>_<method>_<what>: the agent loads one method's programs. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "sample.h"
#include "virt_bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);	/* max_processes, set by the agent */
	__type(key, __u32);
	__type(value, __u64);
} calls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SAMPLE_DROPS);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

static const __u64 zero;

#define NR_GETPPID 110		/* x86_64: arch/x86/entry/syscalls/syscall_64.tbl */

/* raw_syscalls:sys_enter(regs, id): every system call, no tracefs needed */
SEC("raw_tp/sys_enter")
int BPF_PROG(virt_sample_raw_tp_enter, struct pt_regs *regs, long id)
{
	__u32 pid;
	__u64 *n;

	if (id != NR_GETPPID)
		return 0;
	pid = bpf_get_current_pid_tgid() >> 32;
	n = VIRT_LOOKUP_OR_INIT(calls, &pid, &zero, drops, SAMPLE_DROP_PROC);
	if (n)
		__sync_fetch_and_add(n, 1);
	return 0;
}
