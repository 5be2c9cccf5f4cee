#!/bin/bash
# virtio family overhead, run inside the test VM with virtio-net (bench/run
# virtio does that). Workload: udpflood N: N 64-byte UDP datagrams over
# virtio-net to bench/run's sink on the host (one virtqueue_add_outbuf
# per packet, plus the completions and kicks that go with it; virtio-blk
# under TCG is too slow and noisy to resolve probe cost). For each
# configuration, P pairs of runs alternate without/with it attached, in the
# same boot; added cost per packet = (run_ns with - run_ns without) / N.
# Floors: empty fexit programs on the four virtqueue_add_* (what virtiostat
# probes) and on every hook the family uses; anchor: bcc virtiostat.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
b=$top/build
N=${BENCH_PACKETS:-100000} P=${BENCH_PAIRS:-5}
export PATH=$b/bench:$PATH
[ -e /sys/class/net/eth0 ] || { echo "virtio bench: no eth0 (run with --net)" >&2; exit 77; }
work=$(mktemp -d)
port=${BENCH_SINK_PORT:-5599}	# bench/run's udpsink.py on the host
udpflood 20000 64 10.0.2.2 $port > /dev/null		# warm-up

run_ns() { udpflood "$N" 64 10.0.2.2 $port | awk '$1 == "run_ns" {print $2}'; }

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
	virt|virt_counts|virt_kprobe)
		printf '[kvm]\nenabled = false\n[vhost]\nenabled = false\n[qemu]\nenabled = false\n[virtio]\n' > $work/conf
		[ $1 = virt_counts ] && printf 'latency = false\n' >> $work/conf
		[ $1 = virt_kprobe ] && printf 'method = kprobe\n' >> $work/conf
		: > $work/log
		$b/pmdavirt -A -l $work/log -c $work/conf -M $b/modules & pid=$!
		wait_for $work/log 'virtio: active' 120 ;;
	virtiostat)
		PYTHONUNBUFFERED=1 virtiostat-bpfcc 3600 > $work/out 2>&1 & pid=$!
		wait_for $work/out 'Tracing' 400 && sleep 1 ;;
	esac
}

stop_cfg()
{
	pkill -P $pid 2>/dev/null; kill -INT $pid 2>/dev/null
	sleep 0.5; kill $pid 2>/dev/null
	wait $pid 2>/dev/null
	sleep 0.3
}

prog_ns() { bpftool prog show 2>/dev/null | awk '{ for (i = 1; i < NF; i++) if ($i == "run_time_ns") t += $(i+1) } END { printf "%d", t }'; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2)}'; }

for cfg in ${BENCH_CONFIGS:=empty_vadd empty_vall virt virt_counts virt_kprobe virtiostat}; do
	: > $work/$cfg
	start_cfg $cfg || { stop_cfg; echo "$cfg: cannot attach" >&2; continue; }
	stop_cfg			# first attach pays for BTF parsing etc.
	for i in $(seq 1 $P); do
		base=$(run_ns)
		start_cfg $cfg || { stop_cfg; echo "$cfg: cannot attach" >&2; continue 2; }
		with=$(run_ns)
		stop_cfg
		echo "$cfg pair $i: without $base ns, with $with ns" >&2
		echo $(( (with - base) / N )) >> $work/$cfg
	done
	start_cfg $cfg || continue
	sysctl -q -w kernel.bpf_stats_enabled=1
	t0=$(prog_ns); udpflood "$N" 64 10.0.2.2 $port > /dev/null; t1=$(prog_ns)
	sysctl -q -w kernel.bpf_stats_enabled=0
	stop_cfg
	echo $(( (t1 - t0) / N )) > $work/$cfg.prog
	echo "$cfg $(median < $work/$cfg) $(sort -n $work/$cfg | head -1) $(sort -n $work/$cfg | tail -1) $(cat $work/$cfg.prog)" >> $work/summary
done

ratio() { awk -v a="$1" -v f="$2" 'BEGIN {printf "%.2f", (f + 0 > 0 && a != "-") ? (a / f) : 0}'; }
col() { awk -v c="$1" -v k="$2" '$1 == c {print $k}' $work/summary; }
echo "virtio family overhead: $N 64-byte UDP packets per run over virtio-net, $P pairs per configuration, $(nproc) vCPU TCG VM"
echo "wall: added ns per packet from paired runs (median, min..max); prog: ns per packet inside BPF programs (bpf_stats)"
printf '%-12s %8s %16s %6s %6s %6s %7s %6s %6s %6s\n' config wall "min..max" /vall /vadd /vstat prog /vall /vadd /vstat
while read -r cfg med lo hi prog; do
	printf '%-12s %8s %16s %6s %6s %6s %7s %6s %6s %6s\n' $cfg $med "$lo..$hi" \
		$(ratio $med "$(col empty_vall 2)") $(ratio $med "$(col empty_vadd 2)") $(ratio $med "$(col virtiostat 2)") \
		$prog $(ratio $prog "$(col empty_vall 5)") $(ratio $prog "$(col empty_vadd 5)") $(ratio $prog "$(col virtiostat 5)")
done < $work/summary
rm -rf $work
