/* emptyload btf|raw|tp: attach the empty program pair of that method on
 * kvm_exit + kvm_entry; emptyload npf: the tp_btf pair and kvm_page_fault;
 * emptyload irq: the tp_btf pair, the seven interrupt hooks and the timer's;
 * emptyload sched: empty tp_btf programs on
 * sched_switch, sched_wakeup and sched_migrate_task; emptyload blk_<block>: one building block alone on
 * kvm_entry (bench/blocks.sh). Print "attached", hold until SIGTERM/SIGINT. */
#include <bpf/libbpf.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "empty.skel.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	struct empty_bpf *skel;
	struct bpf_program *p;
	char prefix[32];

	if (argc != 2) {
		fprintf(stderr, "usage: emptyload btf|raw|tp|npf|irq|sched|blk_<block>\n");
		return 2;
	}
	snprintf(prefix, sizeof(prefix), "empty_%s_", argv[1]);
	skel = empty_bpf__open();
	if (!skel)
		return 1;
	bpf_object__for_each_program(p, skel->obj)
		bpf_program__set_autoload(p, strncmp(bpf_program__name(p), prefix,
						     strlen(prefix)) == 0);
	if (empty_bpf__load(skel) || empty_bpf__attach(skel)) {
		fprintf(stderr, "emptyload: cannot load/attach %s\n", argv[1]);
		empty_bpf__destroy(skel);
		return 1;
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	printf("attached\n");
	fflush(stdout);
	while (!stop)
		pause();
	empty_bpf__destroy(skel);
	return 0;
}
