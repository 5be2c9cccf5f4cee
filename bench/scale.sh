#!/bin/bash
# What a VM costs the agent, run inside the test VM (bench/run scale).
# Under pmcd with the agent installed (as fetch.sh), a pmlogger config made
# by pmlogconf before any VM; its groups of ours logged at the default
# interval give the metric list. Then for N in BENCH_SCALE_VMS (default
# "1 50 200", cumulative: VMs are added, never restarted), N idle
# `kvmguest -v 2 -I MS` VMs (2 vCPUs each halting, one hlt exit per vCPU
# per BENCH_SCALE_IDLE_MS, default 1000 ms) and per N:
#  - values per sample and agent CPU per fetch of that list (one pmFetch,
#    bench/fetchall.py, BENCH_FETCHES times; the agent's threads' run time
#    from /proc/<pid>/task/*/schedstat, less its idle background measured
#    just before), the client's wall per fetch, the idle background;
#  - syscalls per fetch (strace -f on the agent over BENCH_SCALE_TRACED
#    fetches, default 5; a fetch's own syscalls told from the background's
#    by the agent's main loop, split_trace): bpf() and all, and the files
#    one fetch opens, grouped by path with digits as N (what grows per VM);
#  - values per sample of each opt-in pmlogconf group (virt/kvm-vcpu & co.,
#    one fetch of its metrics): what turning it on adds per VM;
#  - agent RSS; the test VM's MemAvailable (what one VM costs the host);
#  - archive bytes per sample: pmlogger -t 10 of those groups for
#    BENCH_SCALE_SAMPLES samples (default 7), the data volume over the
#    records; per day at pmlogger's default interval (60 s) = 1440 samples.
# Then the least-squares slope per VM of every column, and (perf) the
# agent's top symbols during fetches at the largest N.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
b=$top/build
NS=${BENCH_SCALE_VMS:-1 50 200} M=${BENCH_FETCHES:-20} IDLE=${BENCH_SCALE_IDLE_MS:-1000}
TRACED=${BENCH_SCALE_TRACED:-5} SAMPLES=${BENCH_SCALE_SAMPLES:-7}
export PATH=$b/qa:$PATH
set +u; . /etc/pcp.env; set -u
export PCP_PYTHON_PROG=/usr/bin/python3
modprobe kvm_amd || exit 77
work=$(mktemp -d)
guests=()
cleanup()
{
	[ ${#guests[@]} -gt 0 ] && kill "${guests[@]}" 2>/dev/null
	( cd $PCP_PMDAS_DIR/virt && ./Remove < /dev/null ) > /dev/null 2>&1
	rm -rf $work
}
trap cleanup EXIT

echo "test VM kernel $(uname -r), $(nproc) CPU, MemTotal $(awk '/^MemTotal/ {print $2}' /proc/meminfo) KiB," \
	"pid_max $(cat /proc/sys/kernel/pid_max), threads-max $(cat /proc/sys/kernel/threads-max)"
pgrep -x pmcd > /dev/null || /etc/init.d/pmcd start > /dev/null 2>&1
make -C $top -s install >/dev/null
cp $b/virt.conf $PCP_SYSCONF_DIR/virt/virt.conf
( cd $PCP_PMDAS_DIR/virt && ./Install < /dev/null ) > $work/install 2>&1 || { cat $work/install; exit 1; }
for _ in $(seq 1 120); do
	[ "$(pminfo -f virt.control.module.status 2>/dev/null | grep -c '"active"')" -ge 2 ] && break; sleep 0.5
done
agent=$(pgrep -x pmdavirt)
if [ -z "$agent" ] || ! pminfo virt.control.version > /dev/null 2>&1; then
	echo "bench: pmcd or the agent did not come up; Install said:"; tail -5 $work/install
	tail -5 $PCP_LOG_DIR/pmcd/pmcd.log $PCP_LOG_DIR/pmcd/virt.log 2>/dev/null
	exit 1
fi
pminfo -f virt.control.module.status | sed -n 's/.*inst \[[0-9]* or "\([a-z]*\)"\] value "\(.*\)"/  \1: \2/p'

# pmlogconf before any VM (as pmlogger_check at boot); our groups with
# pmlogger's default interval (not virt/version: once; virt/descriptions:
# every 10 minutes)
# strace slows the agent past pmcd's 5 s PMDA timeout, after which pmcd
# drops it: 10 minutes
pmstore pmcd.control.timeout 600 > /dev/null || exit 1
# and the clients' wait for pmcd (default 10 s): a traced fetch at 200 VMs
# takes longer
export PMCD_REQUEST_TIMEOUT=600
pmlogconf -q $work/all.config > $work/pmlogconf.out 2>&1 || { cat $work/pmlogconf.out; exit 1; }
awk '/^#\+ / { split($2, g, ":"); on = (g[1] ~ /^virt\// && g[2] == "y" && g[3] == "default"); if (on) print g[1] > "/dev/stderr" }
	/^#----/ { on = 0 } on && /^[ \t]+virt\./ { print $1 }' $work/all.config > $work/metrics 2> $work/groups
{ echo "log mandatory on default {"; sed 's/^/	/' $work/metrics; echo "}"; } > $work/logger.config
echo "pmlogconf's groups of ours at the default interval: $(tr '\n' ' ' < $work/groups)($(wc -l < $work/metrics) metrics)"

# the opt-in groups (probe "? available : exclude"): offered, not logged
logconf=$PCP_VAR_DIR/config/pmlogconf/virt
optin_groups=$(cd $logconf && grep -l '? available : exclude' -- * | tr '\n' ' ')
: > $work/optin
rss() { awk '/^VmRSS/ {print $2}' /proc/$agent/status; }
avail() { awk '/^MemAvailable/ {print $2}' /proc/meminfo; }
# the agent's run time, ns, over its threads
runns() { cat /proc/$agent/task/*/schedstat 2>/dev/null | awk '{t += $1} END {printf "%d", t}'; }
refreshes() { pminfo -f virt.control.refreshes 2>/dev/null | awk '/value/ {print $2}'; }
nvms() { pminfo -f virt.kvm.vm.vcpus 2>/dev/null | grep -c 'inst \['; }

# start_vms N: start VMs until N run (each 2 vCPUs, idle, halting) and the
# agent lists N VMs
start_vms()
{
	local want=$1 i
	for i in $(seq $((${#guests[@]} + 1)) $want); do
		kvmguest -q -v 2 -I $IDLE & guests+=($!)
	done
	for _ in $(seq 1 600); do
		[ "$(nvms)" -ge "$want" ] && return 0
		sleep 0.5
	done
	echo "bench: the agent lists $(nvms) VMs of $want started" >&2
	return 1
}

# trace_window OUT CMD...: strace every syscall of the agent's threads
# while CMD runs; OUT.log the trace, OUT.s the window's length in seconds
trace_window()
{
	local out=$1 t0 t1 st
	shift
	t0=$(date +%s%N)
	strace -f -qq -y -p $agent -o $out.log 2>/dev/null & st=$!
	sleep 1
	"$@" > /dev/null
	kill -INT $st; wait $st 2>/dev/null
	t1=$(date +%s%N)
	echo $(( (t1 - t0) / 1000000 )) | awk '{print $1 / 1000}' > $out.s
}

# split_trace OUT: each syscall of the agent's trace OUT.log as "fetch NAME" or
# "bg NAME" (NAME: the syscall, or "open PATH" for an openat, digits as N).
# The agent's main loop (pmda/core/pmdavirt.c main_loop) waits in select():
# a select() that returns a request from pmcd starts a fetch's work, which
# ends with its reply, a write() to fd 1 (pmcd's pipe); what the loop does
# after that reply or after a select() that timed out (the percentile
# snapshots' refreshes, the family polls) is background. Exact, unlike a
# background rate measured apart and subtracted (strace slows the agent:
# the 2026-11-28 table's flaw).
split_trace()
{
	awk '
		/^[0-9]+ +<\.\.\./ || / resumed>/ { next }
		{ sub(/^[0-9]+ +/, ""); n = $0; sub(/\(.*/, "", n)
		  what = n
		  if (n == "openat" && match($0, /"[^"]*"/)) {
			p = substr($0, RSTART + 1, RLENGTH - 2); d = ""
			if (p !~ /^\// && match($0, /openat\([0-9]+<[^>]*>/)) { d = substr($0, RSTART, RLENGTH - 1); sub(/.*</, "", d); p = d "/" p }
			gsub(/[0-9]+/, "N", p); what = "open " p
		  }
		}
		n ~ /^(select|pselect6)$/ {
			for (i = 1; i <= np; i++) print "bg " pend[i]
			np = 0
			state = ($0 ~ /= 0 \(Timeout\)/ || $0 ~ /= 0$/) ? "bg" : "fetch"
			print state " " what
			next
		}
		{ pend[++np] = what }
		state == "fetch" && n == "write" && $0 ~ /^write\(1</ {
			for (i = 1; i <= np; i++) print "fetch " pend[i]
			np = 0
		}
		END { for (i = 1; i <= np; i++) print "bg " pend[i] }' "$1.log"
}

# per_fetch OUT calls|paths: "name count" per fetch of the trace's TRACED
# fetches, most first: the syscalls by name, or the files opened by path
per_fetch()
{
	split_trace "$1" | awk -v f=$TRACED -v kind="$2" '
		$1 != "fetch" { next }
		{ sub(/^fetch /, "") }
		kind == "paths" && !/^open / { next }
		kind == "paths" { sub(/^open /, "") }
		kind == "calls" && /^open / { $0 = "openat" }
		{ c[$0]++ }
		END { for (x in c) { v = c[x] / f; if (v >= 0.05) printf "%s %.1f\n", x, v } }' | sort -k2,2nr
}

mem0=$(avail)
: > $work/table
for n in $NS; do
	start_vms $n || break
	alive=0
	for p in "${guests[@]}"; do kill -0 $p 2>/dev/null && alive=$((alive + 1)); done
	sleep 5
	# background: 10 idle seconds
	i0=$(runns); sleep 10; i1=$(runns)
	idle_ns_s=$(( (i1 - i0) / 10 ))
	c0=$(runns); w0=$(date +%s%N)
	/usr/bin/python3 $top/bench/fetchall.py $M $work/metrics > $work/fetch || exit 1
	c1=$(runns); w1=$(date +%s%N)
	read -r _ _ _ values _ wall < $work/fetch
	cpu_ms=$(awk -v c=$((c1 - c0)) -v i=$idle_ns_s -v w=$((w1 - w0)) -v m=$M \
		'BEGIN {printf "%.1f", (c - i * w / 1e9) / 1e6 / m}')
	# syscalls: the agent strace'd over TRACED fetches, the fetches' own
	# (split_trace) per fetch; the background's, and virt.control.refreshes
	# over the window (fetches' and background's), for the record
	r0=$(refreshes)
	trace_window $work/busy.$n /usr/bin/python3 $top/bench/fetchall.py $TRACED $work/metrics
	r1=$(refreshes)
	# the trace's start, to check split_trace by eye (build/ is shared with the host)
	head -400 $work/busy.$n.log > $b/scale-trace.$n.head 2>/dev/null
	per_fetch $work/busy.$n calls > $work/calls.$n
	per_fetch $work/busy.$n paths > $work/paths.$n
	echo "N=$n: traced window $(cat $work/busy.$n.s) s: $(split_trace $work/busy.$n | awk '$1 == "fetch" && $2 ~ /select/ {f++} $1 == "bg" && $2 ~ /select/ {b++} $1 == "bg" {s++} END {printf "%d requests from pmcd, %d timer wake-ups, %d background syscalls", f, b, s}');" \
		"virt.control.refreshes +$((r1 - r0)) (fetches' and background's)"
	bpfc=$(awk '$1 == "bpf" {print $2}' $work/calls.$n)
	allc=$(awk '{t += $2} END {printf "%.0f", t}' $work/calls.$n)
	echo "N=$n: syscalls per fetch, most first: $(head -6 $work/calls.$n | tr '\n' ' ')"
	echo "N=$n: files opened per fetch: $(awk '{t += $2} END {printf "%.0f", t}' $work/paths.$n); by path (digits as N): $(head -4 $work/paths.$n | tr '\n' ' ')"
	echo "N=$n: by directory: $(awk '{d = $1; sub("/[^/]*$", "", d); c[d] += $2} END {for (d in c) printf "%s %.1f\n", d, c[d]}' $work/paths.$n | sort -k2,2nr | head -4 | tr '\n' ' ')"
	# what each opt-in group would add: its metrics' values in one fetch
	for g in $optin_groups; do
		sed -n 's/^[[:space:]]*\(virt\.[a-z0-9_.]*\).*/\1/p' "$logconf/$g" > $work/optin.metrics
		read -r _ _ _ gv _ < <(/usr/bin/python3 $top/bench/fetchall.py 1 $work/optin.metrics)
		echo "$n $g ${gv:-0}" >> $work/optin
	done
	echo "N=$n: opt-in groups' values per sample: $(awk -v n=$n '$1 == n {printf "%s %s  ", $2, $3}' $work/optin)"
	# archive bytes per sample: our metrics' bytes in the data volume
	# (pmlogsize -d; pmlogger adds a preamble and an epilogue record of its
	# own) over the samples, plus the per-record overhead
	rm -f $work/arch.*
	pmlogger -t 10 -s $SAMPLES -c $work/logger.config -l $work/pmlogger.log $work/arch > /dev/null 2>&1
	pmlogsize -d $work/arch.0 > $work/size.$n 2>&1
	persample=$(awk -v s=$SAMPLES '/^  data:/ { r = $5 } /\(virt\./ { v += $2 } /^  overhead:/ { o = $2 }
		END { printf "%d", v / s + ((r + 0 > 0) ? o / r : 0) }' $work/size.$n)
	mbytes=$(stat -c %s $work/arch.meta 2>/dev/null || echo 0)
	echo "N=$n: $alive VMs alive ($(nvms) listed); archive $(sed -n 's/^  data: \(.*\)/data \1/p' $work/size.$n), meta $mbytes B;" \
		"most bytes: $(grep '(virt\.' $work/size.$n | head -4 | sed 's/.*: \([0-9]*\) bytes.*(\(.*\))/\2 \1/' | tr '\n' ' ')"
	echo "$n $values $cpu_ms $wall $(awk -v i=$idle_ns_s 'BEGIN {printf "%.1f", i / 1e6}') ${bpfc:-0} ${allc:-0} $(rss) $((mem0 - $(avail))) $persample $mbytes" >> $work/table
	cp $work/table $work/optin $b/ 2>/dev/null	# build/ is the host's: the rows so far
done

perf_top()
{
	perf record -q -F 499 -e cpu-clock -g -p $agent -o $work/perf.data 2> $work/perf.err & pf=$!
	sleep 1
	/usr/bin/python3 $top/bench/fetchall.py 5 $work/metrics > /dev/null
	kill -INT $pf; wait $pf 2>/dev/null
	perf report -i $work/perf.data --no-children --sort dso,sym --stdio 2>/dev/null |
		grep -E '^ +[0-9.]+%' | head -12
	[ -s $work/perf.data ] || { echo "perf recorded nothing:"; tail -3 $work/perf.err; }
}
echo "== the agent's top symbols during 5 fetches at N=$(tail -1 $work/table | cut -d' ' -f1) (perf, cpu-clock)"
perf_top

echo "== per N (VMs of 2 vCPUs, idle: a hlt exit per vCPU per $IDLE ms)"
echo "values = per sample of the default groups; cpu = agent ms per fetch (less idle); wall = client ms per fetch;"
echo "idle = agent ms/s between fetches; bpf, sys = syscalls per fetch; rss KiB; host = test VM MemAvailable drop, KiB;"
echo "B/smp = archive data bytes per sample; MB/day = at 60 s (1440 samples); meta = metadata volume bytes"
fmt='%5s %7s %8s %8s %7s %6s %7s %7s %8s %8s %8s %8s\n'
printf "$fmt" N values cpu wall idle bpf sys rss host B/smp MB/day meta
awk '{printf "%5d %7d %8.1f %8.1f %7.1f %6.1f %7d %7d %8d %8d %8.2f %8d\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10 * 1440 / 1e6, $11}' $work/table
# least squares over the Ns: slope per VM and intercept of each column
awk 'function fit(k,   i, sx, sy, sxx, sxy, s) {
		for (i = 1; i <= n; i++) { sx += x[i]; sy += v[i, k]; sxx += x[i] * x[i]; sxy += x[i] * v[i, k] }
		s = (n * sxx - sx * sx) ? (n * sxy - sx * sy) / (n * sxx - sx * sx) : 0
		return sprintf("%.3g (at 0 VMs %.3g)", s, (sy - s * sx) / n) }
	{ n++; x[n] = $1; for (k = 2; k <= NF; k++) v[n, k] = $k }
	END {
		if (n < 2) { print "slopes: need two sizes"; exit }
		print "slope per VM (least squares over " n " sizes):"
		print "  values per sample     " fit(2)
		print "  agent CPU ms/fetch    " fit(3)
		print "  client wall ms/fetch  " fit(4)
		print "  agent idle ms/s       " fit(5)
		print "  bpf() per fetch       " fit(6)
		print "  syscalls per fetch    " fit(7)
		print "  agent RSS KiB         " fit(8)
		print "  test VM memory KiB    " fit(9)
		print "  archive B/sample      " fit(10)
		split(fit(10), a, " "); printf "  archive per VM per day at 60 s: %.0f KB\n", a[1] * 1440 / 1000
	}' $work/table
echo "opt-in groups, values per sample (one fetch), slope per VM (least squares):"
for g in $optin_groups; do
	awk -v g=$g '$2 == g { n++; x[n] = $1; y[n] = $3 }
		END { for (i = 1; i <= n; i++) { sx += x[i]; sy += y[i]; sxx += x[i] * x[i]; sxy += x[i] * y[i]; l = l " " x[i] ":" y[i] }
			s = (n > 1 && n * sxx != sx * sx) ? (n * sxy - sx * sy) / (n * sxx - sx * sx) : 0
			printf "  virt/%-16s %6.1f per VM (N:values%s)\n", g, s, l }' $work/optin
done
last=$(tail -1 $work/table)
set -- $last
[ -n "${9:-}" ] && [ "$1" -gt 0 ] && echo "one VM costs the test VM about $(( $9 / $1 )) KiB: with $(avail) KiB still available it holds about $(( $(avail) * $1 / $9 + $1 )) such VMs by memory"
