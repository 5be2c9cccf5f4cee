#!/bin/bash
# Price the building blocks of a per-exit BPF program, run inside the test
# VM (bench/run blocks). Each block is one tp_btf program alone on
# kvm_entry (bench/empty.bpf.c); kernel.bpf_stats_enabled gives its mean
# run time over BENCH_EXITS cpuid exits. The stats' own clock reads are in
# every row, so compare with the "none" row, not with zero.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/bench/kvmsetup.sh"
sysctl -q -w kernel.bpf_stats_enabled=1
out=$work/out
echo "building blocks on kvm_entry (tp_btf), $N cpuid exits, clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
printf '%-10s %10s %10s\n' block "ns/run" "-none"
none=0
for blk in ${BENCH_BLOCKS:-none pidtgid ktime array hash lru task add3 atomic3}; do
	emptyload "blk_$blk" > $out 2>&1 & pid=$!
	for _ in $(seq 1 100); do grep -q attached $out && break; sleep 0.1; done
	kvmguest -q -c "$N" > /dev/null
	ns=$(bpftool prog show | awk '/ name empty_blk_/ { for (i = 1; i <= NF; i++) { if ($i == "run_time_ns") t = $(i+1); if ($i == "run_cnt") c = $(i+1) } if (c) printf "%d", t / c }')
	kill $pid; wait $pid 2>/dev/null
	[ "$blk" = none ] && none=$ns
	printf '%-10s %10s %10s\n' "$blk" "$ns" "$((ns - none))"
done
rm -rf $work
