#!/bin/bash
# Start-up, fetch cost and memory, run inside the test VM (bench/run fetch).
#  start-up: bench/startup.sh (pmdavirt -A, exec to all families attached,
#            median of 3, and RSS then)
#  fetch:    under pmcd, kvmguest -h H -N makes H distinct hypercall numbers
#            (each a row with its latency histogram: >= 10 000 histogram
#            instances with H = 10000); M fetches of the whole virt namespace
#            (pmprobe -v virt): bpf() syscalls per fetch (strace -c on the
#            agent), agent CPU per fetch and per 1000 instances fetched
#  memory:   agent RSS and our BPF maps' bytes_memlock with all families
#            active, then after C VMM processes and C vhost-net drivers have
#            come and gone (instance domains must be back to baseline)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
b=$top/build
H=${BENCH_HCALLS:-10000} M=${BENCH_FETCHES:-20} C=${BENCH_CYCLES:-200}
export PATH=$b/qa:$PATH
set +u; . /etc/pcp.env; set -u
export PCP_PYTHON_PROG=/usr/bin/python3
modprobe kvm_amd && modprobe vhost_net && modprobe tun || exit 77
work=$(mktemp -d)
conf=$work/virt.conf
sed -e "/^\[kvm\]/,/^\[/ s/^max_hypercalls = .*/max_hypercalls = $((H + 100))/" $b/virt.conf > $conf

BENCH_STARTS=${BENCH_STARTS:-3} "$top/bench/startup.sh" $conf

echo "== under pmcd"
pgrep -x pmcd > /dev/null || /etc/init.d/pmcd start > /dev/null 2>&1
make -C $top -s install >/dev/null
cp $conf $PCP_SYSCONF_DIR/virt/virt.conf
( cd $PCP_PMDAS_DIR/virt && ./Install < /dev/null ) > $work/install 2>&1 || { cat $work/install; exit 1; }
for _ in $(seq 1 120); do
	[ "$(pminfo -f virt.control.module.status | grep -c '"active"')" = 3 ] && break; sleep 0.5
done
agent=$(pgrep -x pmdavirt)
mapmem() { /usr/bin/python3 -c '
import json, subprocess
progs = json.loads(subprocess.check_output(["bpftool", "prog", "show", "-j"]))
ids = {m for p in progs if p.get("name", "").startswith("virt_") for m in p.get("map_ids", [])}
maps = json.loads(subprocess.check_output(["bpftool", "map", "show", "-j"]))
print(sum(m.get("bytes_memlock", 0) for m in maps if m["id"] in ids))'; }
rss() { awk '/^VmRSS/ {print $2}' /proc/$agent/status; }
echo "all families active: RSS $(rss) KiB, BPF maps $(( $(mapmem) / 1024 )) KiB"

kvmguest -q -h $H -N || exit 1
ninst=$(pminfo -f virt.kvm.hypercall.latency | grep -c 'inst \[')
rows=$(pminfo -f virt.kvm.hypercall.count | grep -c 'inst \[')
echo "hypercall rows $rows, their histogram instances $ninst"
echo "RSS with those rows, just counted (their percentile windows live): $(rss) KiB"
cpu() { awk '{print $14 + $15}' /proc/$agent/stat; }
hz=$(getconf CLK_TCK)
# the agent's own background work (percentile snapshots: a refresh every
# window/8) over 10 idle seconds, subtracted from the fetch loop's CPU
i0=$(cpu); sleep 10; i1=$(cpu)
echo "agent CPU while idle: $(awk -v c=$((i1 - i0)) -v hz=$hz 'BEGIN {printf "%.1f", c * 1000 / hz / 10}') ms/s (background refreshes)"
strace -f -c -e trace=bpf -p $agent -o $work/strace 2>/dev/null & st=$!
sleep 1
c0=$(cpu); w0=$(date +%s%N)
/usr/bin/python3 $top/bench/fetchall.py $M > $work/fetch || exit 1
c1=$(cpu); w1=$(date +%s%N)
idle=$(awk -v c=$((i1 - i0)) -v w=$(( (w1 - w0) / 1000000 )) 'BEGIN {printf "%d", c * w / 10000}')
sleep 0.5; kill -INT $st; wait $st 2>/dev/null
read -r _ nmetrics _ all _ wall < $work/fetch
calls=$(awk '$NF == "bpf" {print $4}' $work/strace)
echo "one pmFetch of all $nmetrics virt metrics returns $all values; $M fetches:"
echo "  bpf() calls per fetch $(awk -v c="${calls:-0}" -v m=$M 'BEGIN {printf "%.1f", c / m}') (every map read with one batch lookup; none per instance)"
awk -v c=$((c1 - c0 - idle)) -v hz=$hz -v m=$M -v n=$all -v w=$wall 'BEGIN {
	ms = c * 1000 / hz / m
	printf "  agent CPU per fetch %.1f ms = %.2f ms per 1000 values; client wall per fetch %.0f ms\n", ms, ms * 1000 / n, w }'
# a row's window goes once its percentiles can have no value: a window
# (percentile_window_s, 10 s here) after its last count, plus a snapshot period
sleep 5
echo "RSS with those rows idle for over a window (windows freed): $(rss) KiB"

echo "== memory after $C VMM processes and $C vhost-net drivers"
base_vm=$(pminfo -f virt.kvm.vm.exits | grep -c 'inst \[')
base_q=$(pminfo -f virt.vhost.kicks | grep -c 'inst \[')
r0=$(rss); m0=$(mapmem)
# RSS along the way: a leak grows with the cycles, allocator slack does not
step=$(( C >= 5 ? C / 5 : 1 ))
for i in $(seq 1 $C); do
	kvmguest -q -o 5 || break; vhostdrv -q -k 2 -p 1 -s 64 || break
	if [ $((i % step)) = 0 ]; then pminfo -f virt > /dev/null; echo "  after $i cycles: RSS $(rss) KiB"; fi
done
sleep 5
pminfo -f virt > /dev/null
echo "RSS $r0 -> $(rss) KiB; BPF maps $m0 -> $(mapmem) bytes"
echo "VM instances $base_vm -> $(pminfo -f virt.kvm.vm.exits | grep -c 'inst \['), vhost queues $base_q -> $(pminfo -f virt.vhost.kicks | grep -c 'inst \[')"
echo "dropped: $(pminfo -f virt.control.module.dropped | awk '/value/ {s += $NF} END {print s}')"
( cd $PCP_PMDAS_DIR/virt && ./Remove < /dev/null ) > /dev/null 2>&1
rm -rf $work
