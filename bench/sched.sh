#!/bin/bash
# Scheduler hooks' overhead (the kvm family's sched = true), run inside the
# test VM (bench/run sched does that). Workload: pingpong R (two threads
# pinned to CPU 0 pass a byte over pipes R times: >= 2 context switches per
# round trip). Events = context switches of the whole VM during the run
# (/proc/stat ctxt): what sched_switch programs run on. Two scenarios in
# one boot:
#   no VM  - every switch is of a task that is no vCPU: the kvm family's
#            filtered path (one check per hook)
#   VM     - kvmguest -o ... -d D keeps a vCPU busy on the same CPU, so it
#            is preempted by the ping-pong and waits: the vCPU path (waits,
#            charges) runs on every switch of that CPU; configurations are
#            named vm_*
# Configurations: empty tp_btf programs on the same three hooks (the floor,
# emptyload sched), the kvm family with sched = false and with sched = true,
# bcc's runqlat (run-queue latency histogram: raw_tp sched_wakeup,
# sched_wakeup_new, sched_switch). Without any is the pairs' baseline.
# Configuration "paired" loads the floor and the kvm family (sched = true)
# at once: each switch runs both programs back to back, so their ns/run
# come from the same switches, and the ratio, run by run, moves far less
# with the host's load than one between starts (its "paired" table).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
b=$top/build
R=${BENCH_ROUNDTRIPS:-10000} P=${BENCH_PAIRS:-5}
D=${BENCH_GUEST_DELAY:-100}
export PATH=$b/bench:$b/qa:$PATH
modprobe kvm_amd || exit 77
command -v runqlat-bpfcc > /dev/null || echo "sched: no runqlat-bpfcc, its rows are missing" >&2
work=$(mktemp -d)
ctxt() { awk '$1 == "ctxt" {print $2}' /proc/stat; }
# run_ns: one workload run's wall ns; its context switches to $work/events
run_ns()
{
	local c0 c1 out
	c0=$(ctxt)
	out=$(pingpong "$R" 0)
	c1=$(ctxt)
	echo $((c1 - c0)) > $work/events
	echo "$out" | awk '$1 == "run_ns" {print $2}'
	echo "$out" | awk '$1 == "switches" {print $2}' > $work/own
}
pingpong 1000 0 > /dev/null		# warm-up

pid=""
. "$top/bench/lib.sh"

start_cfg()
{
	case ${1#vm_} in
	empty_sched) start_empty sched ;;
	# the agent's own start-up work is no part of a switch's cost: settle
	virt_nosched) start_agent kvm "sched = false" && sleep ${BENCH_SETTLE:-3} ;;
	virt) start_agent kvm "sched = true" && sleep ${BENCH_SETTLE:-3} ;;
	paired) start_empty sched && epid=$pid && start_agent kvm "sched = true" && sleep ${BENCH_SETTLE:-3} ;;
	runqlat)
		PYTHONUNBUFFERED=1 runqlat-bpfcc > $work/out 2>&1 & pid=$!
		wait_for $work/out "Tracing run queue latency" 900 && sleep 1 ;;
	*) return 1 ;;
	esac
}

# lib.sh's, and paired's floor
epid=""
stop_cfg()
{
	pkill -P $pid 2>/dev/null; kill $pid $epid 2>/dev/null
	wait $pid $epid 2>/dev/null
	epid=""
	sleep 0.3
}

# paired_ratios FILE HOOK: per run, the kvm family's program on HOOK over
# the empty one's ns/run (the n-th run of each), "median min max"
paired_ratios()
{
	awk -v h="$2" '$1 == "empty_sched_" h {e[++ne] = $2} $1 == "virt_kvm_tp_btf_sched_" h {v[++nv] = $2}
		END {for (i = 1; i <= ne && i <= nv; i++) if (e[i] > 0) printf "%.2f\n", v[i] / e[i]}' "$1" |
		sort -n | awk '{a[NR] = $1} END {if (NR) print a[int((NR + 1) / 2)], a[1], a[NR]}'
}

# prog_med FILE NAMEPATTERN FIELD: median of FIELD over FILE's lines whose
# name (field 1) matches; sched_sum: the medians summed per name
prog_med()
{
	awk -v p="$2" -v f=$3 '$1 ~ p {print $f}' "$1" | median
}
sched_sum()
{
	local n tot=0 v
	for n in $(awk -v p="$2" '$1 ~ p {print $1}' "$1" | sort -u); do
		v=$(awk -v n=$n -v f=$3 '$1 == n {print $f}' "$1" | median)
		tot=$((tot + v))
	done
	echo $tot
}

# report TITLE PREFIX: one table over $work/summary
report()
{
	local t=$1 px=$2 cfg med lo hi prog plo phi
	local floor=$(col ${px}empty_sched 5) rq=$(col ${px}runqlat 5)
	local fsw=$(prog_med $work/${px}empty_sched.perprog sched_switch 2)
	echo "$t"
	printf '%-16s %8s %14s %8s %12s %7s %7s %8s %9s %8s %7s\n' config wall "min..max" prog "min..max" /floor /runqlt "ns/run" "sched/sw" "sw ns/run" /floor
	while read -r cfg med lo hi prog plo phi; do
		local run=$(median < $work/$cfg.perrun) ssum swrun
		# the scheduler hooks' share (kvm family: its sched programs; the
		# others load scheduler hooks only)
		case $cfg in
		*virt*) ssum=$(sched_sum $work/$cfg.perprog sched 3) ;;
		*) ssum=$(sched_sum $work/$cfg.perprog . 3) ;;
		esac
		# sched_switch: not the kvm family's switch_vmcb
		swrun=$(prog_med $work/$cfg.perprog sched_switch 2)
		printf '%-16s %8s %14s %8s %12s %7s %7s %8s %9s %8s %7s\n' $cfg $med "$lo..$hi" $prog "$plo..$phi" \
			$(ratio $prog "$floor") $(ratio $prog "$rq") "$run" "$ssum" "${swrun:--}" $(ratio "${swrun:--}" "$fsw")
	done < $work/summary
	if [ -s $work/${px}paired.perprog ]; then
		echo "paired (floor and kvm sched = true loaded together), kvm program / empty program, ns/run of the same runs, median (min..max) over $(grep -c '^empty_sched_switch ' $work/${px}paired.perprog) runs:"
		for h in switch wakeup; do
			set -- $(paired_ratios $work/${px}paired.perprog $h)
			printf '  sched_%-8s %s (%s..%s)\n' $h "${1:--}" "${2:--}" "${3:--}"
		done
	fi
	echo "per program, median ns/run, ns/switch, runs/switch over all starts' runs:"
	for cfg in $(awk '{print $1}' $work/summary); do
		for n in $(awk '{print $1}' $work/$cfg.perprog | sort -u); do
			printf '  %-16s %-32s %7s %7s %6s\n' $cfg $n $(prog_med $work/$cfg.perprog "^$n\$" 2) \
				$(prog_med $work/$cfg.perprog "^$n\$" 3) "$(awk -v n=$n '$1 == n {print $4}' $work/$cfg.perprog | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')"
		done
	done
}

# keep SCENARIO: the raw figures (summary, per-run and per-program files)
# to build/sched-<kernel release>/SCENARIO, for re-reading
keep()
{
	local d=$b/sched-$(uname -r)/$1
	mkdir -p $d && cp $work/summary $work/*.perrun $work/*.perprog $work/*.prog $d/ 2>/dev/null
}

configs=${BENCH_CONFIGS:-empty_sched virt_nosched virt runqlat}
echo "workload: pingpong $R: $(run_ns) ns, $(cat $work/events) context switches in the VM, $(cat $work/own) of its two threads"

# no VM: the filtered path
if [[ " ${BENCH_SCHED_SCENARIOS:-novm vm} " == *" novm "* ]]; then
	measure_all $R $configs
	keep novm
	report "== no VM (every switch of a task that is no vCPU: the filtered path); $R round trips per run, $P pairs, prog over ${BENCH_PROG_STARTS:-1} start(s), $(nproc) vCPU TCG VM" ""
	mv $work/summary $work/summary.novm
fi

# VM: a busy vCPU shares CPU 0 with the ping-pong
if [[ " ${BENCH_SCHED_SCENARIOS:-novm vm} " == *" vm "* ]]; then
	kvmguest -q -o 2147483647 -d "$D" > $work/guest 2>&1 & guest=$!
	sleep 2
	kill -0 $guest 2>/dev/null || { echo "sched: kvmguest did not start:" >&2; cat $work/guest >&2; exit 1; }
	echo "workload with the VM: pingpong $R: $(run_ns) ns, $(cat $work/events) context switches in the VM, $(cat $work/own) of its two threads"
	vmcfgs=$(for c in $configs; do echo vm_$c; done)
	measure_all $R $vmcfgs
	kill $guest; wait $guest 2>/dev/null
	keep vm
	report "== VM (kvmguest -o ... -d $D busy on the same CPU: the vCPU path); same columns" vm_
fi
echo "wall: added ns per context switch from paired runs (median, min..max); prog: ns per context switch inside the configuration's BPF programs (bpf_stats, all of them), median over starts (min..max); ns/run: ns per program run over them; sched/sw: ns per switch of its scheduler hooks alone (kvm family: its sched programs); sw ns/run: ns per run of its sched_switch program; /floor: over the empty programs' (same scenario)"
rm -rf $work
