#!/bin/bash
# virtio family overhead, run inside the test VM with virtio-net (bench/run
# virtio does that). Workload: udpflood N: N 64-byte UDP datagrams over
# virtio-net to bench/run's sink on the host (one virtqueue_add_outbuf
# per packet, plus the completions and kicks that go with it; virtio-blk
# under TCG is too slow and noisy to resolve probe cost). For each
# configuration, P pairs of runs alternate without/with it attached, in the
# same boot; added cost per packet = (run_ns with - run_ns without) / N.
# Floors: empty fexit programs on the four virtqueue_add_* (what virtiostat
# probes) and on every hook the family uses; limit: the least a latency
# histogram must do on the add/get_buf hooks (bench/empty.bpf.c, "vlimit");
# anchor: bcc virtiostat.
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
. "$top/bench/lib.sh"

start_cfg()
{
	case $1 in
	empty_*) start_empty "${1#empty_}" ;;
	limit) start_empty vlimit ;;
	virt) start_agent virtio ;;
	virt_counts) start_agent virtio "latency = false" ;;
	virt_kprobe) start_agent virtio "method = kprobe" ;;
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

measure_all $N ${BENCH_CONFIGS:=empty_vadd empty_vall limit virt virt_counts virt_kprobe virtiostat}

echo "virtio family overhead: $N 64-byte UDP packets per run over virtio-net, $P pairs per configuration, prog over ${BENCH_PROG_STARTS:-1} start(s), $(nproc) vCPU TCG VM"
echo "wall: added ns per packet from paired runs (median, min..max); prog: ns per packet inside BPF programs (bpf_stats)"
printf '%-12s %8s %16s %6s %6s %6s %6s %7s %12s %6s %6s %6s %6s\n' config wall "min..max" /vall /vadd /limit /vstat prog "min..max" /vall /vadd /limit /vstat
while read -r cfg med lo hi prog plo phi; do
	printf '%-12s %8s %16s %6s %6s %6s %6s %7s %12s %6s %6s %6s %6s\n' $cfg $med "$lo..$hi" \
		$(ratio $med "$(col empty_vall 2)") $(ratio $med "$(col empty_vadd 2)") \
		$(ratio $med "$(col limit 2)") $(ratio $med "$(col virtiostat 2)") \
		$prog "$plo..$phi" $(ratio $prog "$(col empty_vall 5)") $(ratio $prog "$(col empty_vadd 5)") \
		$(ratio $prog "$(col limit 5)") $(ratio $prog "$(col virtiostat 5)")
done < $work/summary
rm -rf $work
