#!/bin/bash
# VMs that come and go for days (bench/run churn, issue 37), run inside the
# test VM. Under pmcd with the agent installed (as scale.sh) and pmlogger
# logging what pmlogconf's default groups log (made before any VM) every
# BENCH_CHURN_LOG_S seconds (default 10), BENCH_CHURN_VMS short-lived VMs
# (default 10000), BENCH_CHURN_PARALLEL at a time (default 10): each
# `kvmguest -q -v 2 -c 100 -w 1` (2 vCPUs, 100 cpuid exits, then 1 s
# alive: the agent's percentile snapshots refresh every 2 s). The time of
# the first 100 says how long the rest takes; the run stops after
# BENCH_CHURN_MAX_S seconds (default 900) and says how many ran.
# Before, after the first 100 and at the end (the agent's VM rows gone):
# the instances of every instance domain of ours (pmGetInDom), the agent's
# RSS, the archive's data and metadata bytes (every new instance adds to
# the metadata).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
b=$top/build
TOTAL=${BENCH_CHURN_VMS:-10000} PAR=${BENCH_CHURN_PARALLEL:-10}
LOG_S=${BENCH_CHURN_LOG_S:-10} MAX_S=${BENCH_CHURN_MAX_S:-900}
export PATH=$b/qa:$PATH
set +u; . /etc/pcp.env; set -u
export PCP_PYTHON_PROG=/usr/bin/python3
modprobe kvm_amd || exit 77
work=$(mktemp -d)
logger=
cleanup()
{
	[ -n "$logger" ] && kill "$logger" 2>/dev/null
	( cd $PCP_PMDAS_DIR/virt && ./Remove < /dev/null ) > /dev/null 2>&1
	rm -rf $work
}
trap cleanup EXIT

pgrep -x pmcd > /dev/null || /etc/init.d/pmcd start > /dev/null 2>&1
make -C $top -s install >/dev/null
cp $b/virt.conf $PCP_SYSCONF_DIR/virt/virt.conf
( cd $PCP_PMDAS_DIR/virt && ./Install < /dev/null ) > $work/install 2>&1 || { cat $work/install; exit 1; }
for _ in $(seq 1 120); do
	[ "$(pminfo -f virt.control.module.status 2>/dev/null | grep -c '"active"')" -ge 2 ] && break; sleep 0.5
done
agent=$(pgrep -x pmdavirt)
[ -n "$agent" ] || { echo "bench: the agent did not come up"; tail -5 $work/install; exit 1; }
pmstore pmcd.control.timeout 600 > /dev/null || exit 1
export PMCD_REQUEST_TIMEOUT=600
pmlogconf -q $work/all.config > $work/pmlogconf.out 2>&1 || { cat $work/pmlogconf.out; exit 1; }
awk '/^#\+ / { split($2, g, ":"); on = (g[1] ~ /^virt\// && g[2] == "y" && g[3] == "default") }
	/^#----/ { on = 0 } on && /^[ \t]+virt\./ { print $1 }' $work/all.config > $work/metrics
{ echo "log mandatory on $LOG_S sec {"; sed 's/^/	/' $work/metrics; echo "}"; } > $work/logger.config
pmlogger -c $work/logger.config -l $work/pmlogger.log $work/arch > /dev/null 2>&1 & logger=$!

rss() { awk '/^VmRSS/ {print $2}' /proc/$agent/status; }
# "indom:instances ..." of every instance domain of ours with instances
indoms()
{
	/usr/bin/python3 - <<'PY'
from pcp import pmapi
import cpmapi as c_api
ctx = pmapi.pmContext(c_api.PM_CONTEXT_HOST, "local:")
names = []
ctx.pmTraversePMNS("virt", names.append)
seen = {}
for pmid in ctx.pmLookupName(names):
    indom = ctx.pmLookupDesc(pmid).contents.indom
    if indom != c_api.PM_INDOM_NULL and indom not in seen:
        seen[indom] = len(ctx.pmGetInDom(indom=indom)[0] or [])
print("%d instances: %s" % (sum(seen.values()), " ".join(
    "%d.%d:%d" % (i >> 22, i & 0x3fffff, n) for i, n in sorted(seen.items()) if n)))
PY
}
archive() { echo "archive data $(stat -c %s $work/arch.0 2>/dev/null || echo 0) B, meta $(stat -c %s $work/arch.meta 2>/dev/null || echo 0) B"; }
dropped() { pminfo -f virt.control.module.dropped | sed -n 's/.*"kvm"\] value //p'; }
state() { echo "$1: agent RSS $(rss) KiB; $(indoms); $(archive); kvm dropped $(dropped)"; }

sleep $((LOG_S + 2))
state "before any VM"
# one VM: start, 100 cpuid exits, 1 s alive, gone
one() { kvmguest -q -v 2 -c 100 -w 1 > /dev/null 2>&1; }
t0=$(date +%s%N)
started=0 failed=0
declare -a running=()
while [ $started -lt "$TOTAL" ]; do
	# PAR at a time: wait for the oldest when full
	if [ ${#running[@]} -ge "$PAR" ]; then
		wait "${running[0]}" || failed=$((failed + 1))
		running=("${running[@]:1}")
	fi
	one & running+=($!)
	started=$((started + 1))
	if [ $started -eq 100 ]; then
		wait "${running[@]}"; running=()
		t100=$(( ($(date +%s%N) - t0) / 1000000 ))
		echo "first 100 VMs: $((t100 / 1000)).$((t100 % 1000 / 100)) s ($PAR at a time); $TOTAL would take ~$((t100 * TOTAL / 100000)) s (limit $MAX_S s)"
		state "after 100"
	fi
	if [ $(( ($(date +%s%N) - t0) / 1000000000 )) -ge "$MAX_S" ]; then
		echo "stopped at the time limit: $started VMs started"
		break
	fi
done
[ ${#running[@]} -gt 0 ] && wait "${running[@]}"	# not pmlogger
t1=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "$started VMs in $((t1 / 1000)) s ($failed failed)"
# the last VMs' rows go at the refreshes after they exit
sleep $((LOG_S + 4))
state "after $started"
kill -INT $logger; wait $logger 2>/dev/null; logger=
echo "archive records (pmlogger every $LOG_S s): $(pmdumplog $work/arch virt.control.refreshes 2>/dev/null | grep -c ' value ')"
pmlogsize $work/arch.meta 2>&1 | sed -n '1,6p'
