#!/bin/bash
# vhost family overhead, run inside the test VM (bench/run vhost does that).
# Workload: vhostdrv -k K -p 4: our userspace vhost-net driver (tap
# backend) kicks the TX queue K times with 4 packets each and waits for
# each kick's completion, so every kick goes through the eventfd wakeup, the
# vhost worker's handler and vhost_exceeds_weight() per packet. For each
# configuration, P pairs of runs alternate without/with it attached, in the
# same boot; added cost per kick = (elapsed with - without) / K.
# Floor: empty fentry/fexit programs on the same hooks. Limit: on the
# wakeup and handler-start hooks only, a clock read at each end, one slot
# store and load, one bucket increment (bench/empty.bpf.c, "hlimit").
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
. "$top/bench/lib.sh"

start_cfg()
{
	case $1 in
	empty_*) start_empty "${1#empty_}" ;;
	limit) start_empty hlimit ;;
	virt) start_agent vhost ;;
	virt_kprobe) start_agent vhost "method = kprobe" ;;
	esac
}

stop_cfg()
{
	kill $pid 2>/dev/null
	wait $pid 2>/dev/null
	sleep 0.3
}

measure_all $K ${BENCH_CONFIGS:=empty_vhost limit virt virt_kprobe}

echo "vhost family overhead: $K kicks of 4 x 64-byte packets per run (vhostdrv, tap backend), $P pairs per configuration, prog over ${BENCH_PROG_STARTS:-1} start(s), $(nproc) vCPU TCG VM"
echo "wall: added ns per kick from paired runs (median, min..max); prog: ns per kick inside BPF programs (bpf_stats)"
printf '%-12s %9s %18s %7s %8s %12s %7s %7s\n' config wall "min..max" /floor prog "min..max" /floor /limit
while read -r cfg med lo hi prog plo phi; do
	printf '%-12s %9s %18s %7s %8s %12s %7s %7s\n' $cfg $med "$lo..$hi" \
		$(ratio $med "$(col empty_vhost 2)") $prog "$plo..$phi" $(ratio $prog "$(col empty_vhost 5)") \
		$(ratio $prog "$(col limit 5)")
done < $work/summary
rm -rf $work
