#!/bin/bash
# vhost family overhead, run inside the test VM (bench/run vhost does that).
# Workload: vhostdrv -k K -p 4: our userspace vhost-net driver (tap
# backend) kicks the TX queue K times with 4 packets each and waits for
# each kick's completion, so every kick goes through the eventfd wakeup, the
# vhost worker's handler and vhost_exceeds_weight() per packet. For each
# configuration, P pairs of runs alternate without/with it attached, in the
# same boot; added cost per kick = (elapsed with - without) / K.
# Floor: empty fentry/fexit programs on the same hooks.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
b=$top/build
K=${BENCH_KICKS:-5000} P=${BENCH_PAIRS:-5}
export PATH=$b/bench:$b/qa:$PATH
modprobe vhost_net && modprobe tun || exit 77
work=$(mktemp -d)
vhostdrv -k 1000 -p 4 > /dev/null		# warm-up

run_ns() { vhostdrv -k "$K" -p 4 -s 64 | awk '$1 == "elapsed_ns" {print $2}'; }

pid=""
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
		wait_for $work/out attached 60 ;;
	virt|virt_kprobe)
		printf '[kvm]\nenabled = false\n[virtio]\nenabled = false\n[qemu]\nenabled = false\n[vhost]\n' > $work/conf
		[ $1 = virt_kprobe ] && printf 'method = kprobe\n' >> $work/conf
		: > $work/log
		$b/pmdavirt -A -l $work/log -c $work/conf -M $b/modules & pid=$!
		wait_for $work/log 'vhost: active' 120 ;;
	esac
}

stop_cfg()
{
	kill $pid 2>/dev/null
	wait $pid 2>/dev/null
	sleep 0.3
}

prog_ns() { bpftool prog show 2>/dev/null | awk '{ for (i = 1; i < NF; i++) if ($i == "run_time_ns") t += $(i+1) } END { printf "%d", t }'; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2)}'; }

for cfg in ${BENCH_CONFIGS:=empty_vhost virt virt_kprobe}; do
	: > $work/$cfg
	for i in $(seq 1 $P); do
		base=$(run_ns)
		start_cfg $cfg || { stop_cfg; echo "$cfg: cannot attach" >&2; continue 2; }
		with=$(run_ns)
		stop_cfg
		echo "$cfg pair $i: without $base ns, with $with ns" >&2
		echo $(( (with - base) / K )) >> $work/$cfg
	done
	start_cfg $cfg || continue
	sysctl -q -w kernel.bpf_stats_enabled=1
	t0=$(prog_ns); vhostdrv -k "$K" -p 4 -s 64 > /dev/null; t1=$(prog_ns)
	sysctl -q -w kernel.bpf_stats_enabled=0
	stop_cfg
	echo $(( (t1 - t0) / K )) > $work/$cfg.prog
	echo "$cfg $(median < $work/$cfg) $(sort -n $work/$cfg | head -1) $(sort -n $work/$cfg | tail -1) $(cat $work/$cfg.prog)" >> $work/summary
done

ratio() { awk -v a="$1" -v f="$2" 'BEGIN {printf "%.2f", (f + 0 > 0 && a != "-") ? (a / f) : 0}'; }
col() { awk -v c="$1" -v k="$2" '$1 == c {print $k}' $work/summary; }
echo "vhost family overhead: $K kicks of 4 x 64-byte packets per run (vhostdrv, tap backend), $P pairs per configuration, $(nproc) vCPU TCG VM"
echo "wall: added ns per kick from paired runs (median, min..max); prog: ns per kick inside BPF programs (bpf_stats)"
printf '%-12s %9s %18s %7s %8s %7s\n' config wall "min..max" /floor prog /floor
while read -r cfg med lo hi prog; do
	printf '%-12s %9s %18s %7s %8s %7s\n' $cfg $med "$lo..$hi" \
		$(ratio $med "$(col empty_vhost 2)") $prog $(ratio $prog "$(col empty_vhost 5)")
done < $work/summary
rm -rf $work
