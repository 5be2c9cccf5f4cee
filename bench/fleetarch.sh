#!/bin/bash
# bench/fleetarch.sh OUT: one host's pmlogger archive for bench/fleet.sh,
# run inside the test VM (qa/vm/run). The set-up of bench/scale.sh: the
# agent installed under pmcd, pmlogconf run before any VM (as
# pmlogger_check at boot), then BENCH_FLEET_VMS (default 50) idle
# `kvmguest -v 2 -I 1000` VMs; then pmlogger with pmlogconf's whole
# configuration (every default group, PCP's and ours) at -t 10 for
# BENCH_FLEET_SAMPLES samples (default 60). Writes OUT.{0,meta,index},
# OUT.config (the pmlogger configuration) and OUT.vms (the VMs' names as
# the agent lists them). BENCH_FLEET_OPTIN=1: every virt/* group on, the
# opt-in ones too (per-vCPU rows, histograms, KVM's statistics, ...).
set -u
out=${1:?usage: fleetarch.sh OUT}
top=$(cd "$(dirname "$0")/.." && pwd)
b=$top/build
N=${BENCH_FLEET_VMS:-50} S=${BENCH_FLEET_SAMPLES:-60}
. "$top/bench/pmcdsetup.sh"

pmcd_agent_install || exit 1
pmlogconf -q $out.config > $work/pmlogconf.out 2>&1 || { cat $work/pmlogconf.out; exit 1; }
if [ "${BENCH_FLEET_OPTIN:-0}" = 1 ]; then
	# a group's control line "#+ group:y|n:...": on, then pmlogconf writes
	# its metrics
	sed -i 's|^\(#+ virt/[^:]*\):n:|\1:y:|' $out.config
	pmlogconf -q $out.config > $work/pmlogconf.out 2>&1 || { cat $work/pmlogconf.out; exit 1; }
fi
echo "fleetarch: pmlogconf groups on: $(grep -c '^#+ .*:y:' $out.config)"

nvms() { pminfo -f virt.kvm.vm.vcpus 2>/dev/null | grep -c 'inst \['; }
for _ in $(seq 1 $N); do
	kvmguest -q -v 2 -I 1000 & guests+=($!)
done
for _ in $(seq 1 600); do
	[ "$(nvms)" -ge "$N" ] && break
	sleep 0.5
done
echo "fleetarch: $(nvms) VMs listed of $N started"
pminfo -f virt.kvm.vm.vcpus | sed -n 's/.*or "\(.*\)"\].*/\1/p' > $out.vms
sleep 5
rm -f $out.0 $out.meta $out.index
t0=$(date +%s)
# S samples of the default interval: 10 s each (-s would count the
# once-only groups' records too)
pmlogger -t 10 -c $out.config -l $out.pmlogger.log $out > /dev/null 2>&1 & logger=$!
sleep $((S * 10 - 5))
kill -INT $logger 2>/dev/null || echo "fleetarch: pmlogger had exited before the end: $(tail -3 $out.pmlogger.log)"
wait $logger 2>/dev/null
[ -s $out.meta ] || { echo "fleetarch: pmlogger failed"; tail -5 $out.pmlogger.log; exit 1; }
echo "fleetarch: $(pmdumplog -z $out | grep -cE '^[0-9:.]+ +[0-9]+ metrics?$') records in $(( $(date +%s) - t0 )) s; $(nvms) VMs listed at the end"
pmlogsize $out | head -5
