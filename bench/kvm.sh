#!/bin/bash
# KVM family overhead, run inside the test VM (bench/run does that).
# Workload: kvmguest -c N (N cpuid exits, handled in the kernel). For each
# configuration, P pairs of runs alternate without/with it attached, in the
# same boot; added cost per exit = (run_ns with - run_ns without) / exits.
# Prints one row per configuration: median and min..max of the added ns per
# exit, and ratios to the floor (an empty raw_tp pair), to the limit (the
# least a latency histogram needs: bench/empty.bpf.c's kvm limit programs)
# and to bpftrace.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
P=${BENCH_PAIRS:-5}
. "$top/bench/kvmsetup.sh"

start_cfg()
{
	case $1 in
	empty_*) start_empty "${1#empty_}" ;;
	limit) start_empty kvmlimit ;;
	limit_reason) start_empty kvmreason ;;
	virt) start_agent kvm ;;
	virt_counts) start_agent kvm "latency = false" ;;
	# what exits are about (issue 27): the cpuid exits' kvm_cpuid events
	virt_subs) start_agent kvm "subreasons = true" ;;
	# nested-paging faults by kind (issue 38): on cpuid exits, the cost of
	# the entry program's compare on exits that are no fault (bench/npf.sh
	# prices the faults)
	virt_npf) start_agent kvm "npf = true" ;;
	# another build's agent (BENCH_BEFORE = its top directory), to compare
	# a change with what it replaces in one boot
	before) b=$BENCH_BEFORE/build start_agent kvm ;;
	before_counts) b=$BENCH_BEFORE/build start_agent kvm "latency = false" ;;
	bpftrace)
		start_bpftrace kvmexits.bt ;;
	bcc_kvmexit)
		# Debian's kvmexit-bpfcc 0.26 refuses AMD and, on 6.1, counts
		# nothing on its raw_tracepoint path (it reads the vCPU pointer as
		# the reason): a copy forced onto its kvm:kvm_exit tracepoint path,
		# with room for SVM exit codes (cpuid is 0x72; VMX has < 69)
		sed -e 's/if b"Intel" in arch_info:/if True:/' \
		    -e 's/if BPF.support_raw_tracepoint_in_module():/if False:/' \
		    -e 's/#define REASON_NUM 69/#define REASON_NUM 1025/' \
		    "$(command -v kvmexit-bpfcc)" > $work/kvmexit-tp
		PYTHONUNBUFFERED=1 python3 $work/kvmexit-tp > $work/out 2>&1 & pid=$!
		wait_for $work/out "Display kvm exit reasons" 300 && sleep 1 ;;
	esac
}

measure_all $N ${BENCH_CONFIGS:=empty_raw empty_btf empty_tp limit limit_reason virt virt_counts virt_subs bpftrace bcc_kvmexit}

floor=$(col empty_raw 2) bt=$(col bpftrace 2)
pfloor=$(col empty_raw 5) plim=$(col limit 5) pbt=$(col bpftrace 5)
echo "kvm family overhead: $N cpuid exits per run, $P pairs per configuration, prog over ${BENCH_PROG_STARTS:-1} start(s), $(nproc) vCPU TCG VM"
echo "wall: added ns per exit from paired runs (median, min..max); prog: ns per exit inside BPF programs (bpf_stats)"
printf '%-12s %10s %16s %7s %7s %8s %12s %7s %7s %7s\n' config "wall" "min..max" "/floor" "/bpftr" "prog" "min..max" "/floor" "/limit" "/bpftr"
while read -r cfg med lo hi prog plo phi; do
	printf '%-12s %10s %16s %7s %7s %8s %12s %7s %7s %7s\n' $cfg $med "$lo..$hi" \
		$(ratio $med "$floor") $(ratio $med "$bt") $prog "$plo..$phi" $(ratio $prog "$pfloor") \
		$(ratio $prog "$plim") $(ratio $prog "$pbt")
done < $work/summary
if [ -n "$(col bcc_kvmexit 2)" ] && [ -n "$(col virt_counts 2)" ]; then
	echo "counts-only vs bcc kvmexit (forced onto its tracepoint): wall $(ratio "$(col virt_counts 2)" "$(col bcc_kvmexit 2)"), prog $(ratio "$(col virt_counts 5)" "$(col bcc_kvmexit 5)")"
fi
rm -rf $work
