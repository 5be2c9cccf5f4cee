#!/bin/bash
# KVM family overhead, run inside the test VM (bench/run does that).
# Workload: kvmguest -c N (N cpuid exits, handled in the kernel). For each
# configuration, P pairs of runs alternate without/with it attached, in the
# same boot; added cost per exit = (run_ns with - run_ns without) / exits.
# Prints one row per configuration: median and min..max of the added ns per
# exit, and ratios to the floor (an empty raw_tp pair) and to bpftrace.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
b=$top/build
N=${BENCH_EXITS:-20000} P=${BENCH_PAIRS:-5}
export PATH=$b/qa:$b/bench:$PATH
modprobe kvm_amd || exit 77
work=$(mktemp -d)
kvmguest -q -c 1000 >/dev/null		# warm-up

run_ns() { kvmguest -c "$N" | awk '$1 == "run_ns" {print $2}'; }

pid=""
# wait_for FILE PATTERN SECONDS
wait_for()
{
	for _ in $(seq 1 $(($3 * 10))); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "timeout waiting for '$2' in $1:" >&2; tail -5 "$1" >&2
	return 1
}

start_cfg()
{
	case $1 in
	empty_*)
		emptyload "${1#empty_}" > $work/out 2>&1 & pid=$!
		wait_for $work/out attached 30 ;;
	virt|virt_counts)
		if [ $1 = virt ]; then printf '[kvm]\n' > $work/conf; else printf '[kvm]\nlatency = false\n' > $work/conf; fi
		: > $work/log
		$b/pmdavirt -A -l $work/log -c $work/conf -M $b/modules & pid=$!
		wait_for $work/log 'kvm: active' 60 ;;
	bpftrace)
		bpftrace "$top/bench/kvmexits.bt" > $work/out 2>&1 & pid=$!
		wait_for $work/out Attaching 120 && sleep 1 ;;
	esac
}

stop_cfg()
{
	pkill -P $pid 2>/dev/null; kill $pid 2>/dev/null
	wait $pid 2>/dev/null
	sleep 0.3
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2)}'; }

for cfg in ${BENCH_CONFIGS:=empty_raw empty_btf empty_tp virt virt_counts bpftrace}; do
	: > $work/$cfg
	for i in $(seq 1 $P); do
		base=$(run_ns)
		start_cfg $cfg || { stop_cfg; echo "$cfg: cannot attach" >&2; continue 2; }
		with=$(run_ns)
		stop_cfg
		echo "$cfg pair $i: without $base ns, with $with ns" >&2
		echo $(( (with - base) / N )) >> $work/$cfg
	done
	echo "$cfg $(median < $work/$cfg) $(sort -n $work/$cfg | head -1) $(sort -n $work/$cfg | tail -1)" >> $work/summary
done

floor=$(awk '$1 == "empty_raw" {print $2}' $work/summary)
bt=$(awk '$1 == "bpftrace" {print $2}' $work/summary)
echo "kvm family overhead: $N cpuid exits per run, $P pairs per configuration, $(nproc) vCPU TCG VM"
printf '%-12s %12s %16s %10s %12s\n' config "ns/exit" "min..max" "/floor" "/bpftrace"
while read -r cfg med lo hi; do
	printf '%-12s %12s %16s %10s %12s\n' $cfg $med "$lo..$hi" \
		$(awk -v a=$med -v f=$floor 'BEGIN {printf "%.2f", (f > 0) ? (a / f) : 0}') \
		$(awk -v a=$med -v f=$bt 'BEGIN {printf "%.2f", (f > 0) ? (a / f) : 0}')
done < $work/summary
rm -rf $work
