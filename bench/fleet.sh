#!/bin/bash
# bench/fleet.sh (bench/run fleet): many hosts' archives in pmseries, run
# on this machine. One host's archive from the test VM
# (bench/fleetarch.sh: BENCH_FLEET_VMS idle VMs, default 50, pmlogconf's
# default groups at -t 10 for BENCH_FLEET_SAMPLES samples, default 60),
# kept in build/fleet/ and made again only when absent; BENCH_FLEET_OPTIN=1:
# every virt group logged, the opt-in ones too, an archive and tables of
# its own (suffix -optin); then, in Debian
# 13's root (scripts/trixie-root.sh: PCP 6.3.8, Valkey 8.1), copies
# re-hosted to BENCH_FLEET_HOSTS hosts (default 100; BENCH_FLEET_FULL,
# default 10, of them whole, the others the first BENCH_FLEET_SHORT
# samples, default 2) loaded into
# Valkey through pmseries and every query of the Valkey dashboard timed
# through pmproxy (bench/fleetload.sh). See bench/README.md.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
vms=${BENCH_FLEET_VMS:-50} samples=${BENCH_FLEET_SAMPLES:-60}
root=${PMDAVIRT_ROOTS:-/var/cache/pmdavirt/roots}/trixie-test
[ -x $root/usr/bin/valkey-server ] || { echo "bench fleet: no Debian 13 root at $root: run scripts/trixie-root.sh" >&2; exit 1; }
mkdir -p $top/build/fleet
optin=${BENCH_FLEET_OPTIN:-0} sfx=""
[ "$optin" = 1 ] && sfx=-optin
arch=$top/build/fleet/host-${vms}vm$sfx
if [ ! -s $arch.meta ]; then
	echo "== one host's archive: $vms VMs, $samples samples at 10 s, in the test VM"
	$top/qa/vm/run --timeout ${BENCH_TIMEOUT:-3000} --env BENCH_FLEET_VMS=$vms --env BENCH_FLEET_SAMPLES=$samples --env BENCH_FLEET_OPTIN=$optin \
		-- $top/bench/fleetarch.sh $arch || exit 1
fi
cd $top && scripts/in-root.sh $root bench/fleetload.sh $arch $top/build/fleet/load$sfx ${BENCH_FLEET_FULL:-10} ${BENCH_FLEET_HOSTS:-100} ${BENCH_FLEET_SHORT:-2}
