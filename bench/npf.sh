#!/bin/bash
# Nested-paging faults by kind ([kvm] npf) overhead, run inside the test VM
# (bench/run npf). Workload: kvmguest -F N: N guest writes to a zero-length
# ioeventfd, each an npf exit (AMD) that KVM emulates in the kernel and
# that fires kvm_page_fault: the feature's hot path, every exit a fault.
# Configurations: the empty floor on the same hooks (tp_btf kvm_exit,
# kvm_entry and kvm_page_fault: empty_npf) and without kvm_page_fault
# (empty_btf), the agent without npf (virt) and with it (virt_npf), and
# bpftrace doing the same classification (bench/npf.bt). Rows as kvm.sh's.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
P=${BENCH_PAIRS:-5}
. "$top/bench/kvmsetup.sh"
run_ns() { kvmguest -F "$N" | awk '$1 == "run_ns" {print $2}'; }

start_cfg()
{
	case $1 in
	empty_*) start_empty "${1#empty_}" ;;
	virt) start_agent kvm ;;
	virt_npf) start_agent kvm "npf = true" ;;
	bpftrace)
		start_bpftrace npf.bt ;;
	esac
}

measure_all $N ${BENCH_CONFIGS:=empty_btf empty_npf virt virt_npf bpftrace}

echo "npf overhead: $N npf exits (ioeventfd writes) per run, $P pairs per configuration, $(nproc) vCPU TCG VM"
echo "wall: added ns per exit from paired runs (median, min..max); prog: ns per exit inside BPF programs (bpf_stats)"
summary_table 12 floor=empty_npf bpftr=bpftrace
rm -rf $work
