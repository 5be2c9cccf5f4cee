#!/bin/bash
# Start-up, run inside the test VM (bench/run startup; bench/fetch.sh runs
# it first): pmdavirt -A with every family of the configuration, wall time
# from exec to the last family active, BENCH_STARTS runs (default 5), the
# median, and the RSS then. $1: the configuration (default the build's).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
b=$top/build
conf=${1:-$b/virt.conf}
R=${BENCH_STARTS:-5}
modprobe kvm_amd && modprobe vhost_net && modprobe tun || exit 77
log=$(mktemp)
want=3		# kvm, virtio, vhost (qemu waits for a VMM with probes)
echo "== start-up: pmdavirt -A, $(uname -r), $R runs"
for r in $(seq 1 "$R"); do
	: > $log
	t0=$(date +%s%N)
	$b/pmdavirt -A -c "$conf" -M $b/modules -l $log & pid=$!
	for _ in $(seq 1 600); do [ "$(grep -c ': active via' $log)" -ge $want ] && break; sleep 0.05; done
	t1=$(date +%s%N)
	rss=$(awk '/^VmRSS/ {print $2}' /proc/$pid/status)
	echo "run $r: $(( (t1 - t0) / 1000000 )) ms to $want families attached, RSS $rss KiB"
	kill $pid; wait $pid 2>/dev/null
done | tee $log.runs
echo "median: $(awk '{print $3}' $log.runs | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}') ms"
rm -f $log $log.runs
