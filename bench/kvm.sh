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
		# only the kvm family: sections left out are enabled by default
		printf '[virtio]\nenabled = false\n[vhost]\nenabled = false\n[kvm]\n' > $work/conf
		[ $1 = virt_counts ] && printf 'latency = false\n' >> $work/conf
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

# Sum of run_time_ns over every BPF program loaded (the tool's own, as
# nothing else in the VM runs BPF); with kernel.bpf_stats_enabled on.
prog_ns() { bpftool prog show 2>/dev/null | awk '{ for (i = 1; i < NF; i++) if ($i == "run_time_ns") t += $(i+1) } END { printf "%d", t }'; }

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
	# one more run with bpf_stats: time inside the tool's programs per exit
	# (not in the pairs above: the stats' own clock reads cost ~1 us/run)
	start_cfg $cfg || continue
	sysctl -q -w kernel.bpf_stats_enabled=1
	t0=$(prog_ns); kvmguest -q -c "$N" > /dev/null; t1=$(prog_ns)
	sysctl -q -w kernel.bpf_stats_enabled=0
	stop_cfg
	echo $(( (t1 - t0) / N )) > $work/$cfg.prog
	echo "$cfg $(median < $work/$cfg) $(sort -n $work/$cfg | head -1) $(sort -n $work/$cfg | tail -1) $(cat $work/$cfg.prog 2>/dev/null || echo -)" >> $work/summary
done

floor=$(awk '$1 == "empty_raw" {print $2}' $work/summary)
bt=$(awk '$1 == "bpftrace" {print $2}' $work/summary)
pfloor=$(awk '$1 == "empty_raw" {print $5}' $work/summary)
pbt=$(awk '$1 == "bpftrace" {print $5}' $work/summary)
ratio() { awk -v a="$1" -v f="$2" 'BEGIN {printf "%.2f", (f + 0 > 0 && a != "-") ? (a / f) : 0}'; }
echo "kvm family overhead: $N cpuid exits per run, $P pairs per configuration, $(nproc) vCPU TCG VM"
echo "wall: added ns per exit from paired runs (median, min..max); prog: ns per exit inside BPF programs (bpf_stats)"
printf '%-12s %10s %16s %7s %7s %8s %7s %7s\n' config "wall" "min..max" "/floor" "/bpftr" "prog" "/floor" "/bpftr"
while read -r cfg med lo hi prog; do
	printf '%-12s %10s %16s %7s %7s %8s %7s %7s\n' $cfg $med "$lo..$hi" \
		$(ratio $med $floor) $(ratio $med $bt) $prog $(ratio $prog $pfloor) $(ratio $prog $pbt)
done < $work/summary
rm -rf $work
