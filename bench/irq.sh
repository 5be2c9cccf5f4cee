#!/bin/bash
# Interrupt delivery latency ([kvm] interrupts) overhead, run inside the
# test VM (bench/run irq). Workload: irqguest -p -J N (qa/src/irqguest.c): two
# vCPUs of an in-kernel irqchip ping-pong N times, one IPI in flight, so
# 2N IPIs per run, each an x2APIC ICR write (an MSR exit) that KVM delivers
# in the kernel: kvm_apic_ipi (the kind's marker), __apic_accept_irq and,
# at the target's next entry, kvm_inj_virq: three of the option's seven
# programs per IPI, with nothing in the loop but the guest (no VMM
# syscall, no timer to wait for). -D (MSIs through an irqfd) runs the same
# three but the VMM polls the guest with usleep(100) between two, and -T
# (timers) runs four but waits its deadline each time: both spend most of
# a run waiting, so fewer hook runs per second of run and noisier pairs.
# BENCH_IRQS = N (round trips; events = 2N IPIs). The guest polls for its
# IPIs (-p): in the test VM a vCPU halted in hlt now and then never gets
# its interrupt (qa/src/irqguest.c), and a run of thousands would hang.
# Configurations: the empty floor on the same hooks (the tp_btf kvm_exit
# and kvm_entry pair plus the seven interrupt hooks, each of the family's
# program type: empty_irq) and the pair alone (empty_btf), the agent
# without interrupts (virt) and with them (virt_irq), and bpftrace timing
# the same deliveries (bench/irq.bt). Rows as npf.sh's, and a second table:
# the interrupt hooks' own ns per IPI (the programs named *irq_<hook>, or
# all of bpftrace's), against the empty hooks' and bpftrace's.
# BENCH_IRQ_KIND=timer: irqguest -p -T R,D instead (R TSC-deadline timers,
# each D = BENCH_TIMER_CYCLES guest TSC cycles ahead, default 400 000; an
# event is a timer: apic_timer_expired, __apic_accept_irq, kvm_inj_virq,
# kvm_apic_local_deliver and, with timer_lateness, kvm_wait_lapic_expire),
# the floor with an empty kvm_wait_lapic_expire program too, the agent with
# interrupts and with timer_lateness as well, and bpftrace running irq.bt
# plus timer.bt (the lateness histograms).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
P=${BENCH_PAIRS:-5}
. "$top/bench/kvmsetup.sh"
R=${BENCH_IRQS:-1000}
KIND=${BENCH_IRQ_KIND:-ipi}
D=${BENCH_TIMER_CYCLES:-400000}
case $KIND in
ipi) N=$((2 * R)) work_args="-J $R" warm_args="-J 100" unit=IPI ;;
timer) N=$R work_args="-T $R,$D" warm_args="-T 100,$D" unit=timer ;;
*) echo "irq.sh: BENCH_IRQ_KIND is ipi or timer, not $KIND" >&2; exit 2 ;;
esac
irqguest -p $warm_args > /dev/null || exit 1		# warm-up, and irqguest works
# one run: its ns; irqguest's stall report (qa/src/irqguest.c: no
# interrupt for 10 s, each vCPU's state) to stderr, and a run that
# outlasts 10 minutes killed and reported, so it prints no time (the
# bpftrace configuration's second run once hung, its report discarded)
run_ns()
{
	timeout -s INT 600 irqguest -p $work_args > $work/run.out 2>&1
	local rc=$?
	grep '^stall' $work/run.out | sed 's/^/irqguest: /' >&2
	[ $rc = 124 ] && echo "irqguest: killed after 600 s" >&2
	awk '$1 == "run_ns" {print $2}' $work/run.out
}
# the programs on the interrupt hooks, by the names of bench/empty.bpf.c's
# and bpf/kvm.bpf.c's (virt_kvm_tp_btf_irq_<hook>)
irq_hooks='(irq_(accept|timer_expired|inject|ipi|pv_ipi|msi|lvt)|timer_lateness)$'

# hooks_re: read by lib.sh's prog_per_event
# shellcheck disable=SC2034
start_cfg()
{
	hooks_re=$irq_hooks
	case $1 in
	empty_*) start_empty "${1#empty_}" ;;
	virt) start_agent kvm ;;
	virt_irq) start_agent kvm "interrupts = true" ;;
	# not in the default list: with the timer's lateness too (no timer
	# fires under -J: the cost of loading it, nothing per IPI)
	virt_irq_timer) start_agent kvm "interrupts = true" "timer_lateness = true" ;;
	bpftrace)
		hooks_re=.
		start_bpftrace irq.bt ;;
	bpftrace_timer)
		hooks_re=.
		start_bpftrace irq.bt timer.bt ;;
	esac
}

if [ $KIND = timer ]; then
	measure_all $N ${BENCH_CONFIGS:=empty_btf empty_irq virt_irq virt_irq_timer bpftrace_timer}
	bt=bpftrace_timer
else
	measure_all $N ${BENCH_CONFIGS:=empty_btf empty_irq virt virt_irq bpftrace}
	bt=bpftrace
fi

echo "interrupts overhead: irqguest -p $work_args, $N ${unit}s per run, $P pairs per configuration, prog over ${BENCH_PROG_STARTS:-1} start(s), $(nproc) vCPU TCG VM"
echo "wall: added ns per $unit from paired runs (median, min..max); prog: ns per $unit inside BPF programs (bpf_stats)"
summary_table 14 floor=empty_irq bpftr=$bt

# the hooks alone: ns per IPI in the programs on the interrupt hooks
# (median over the starts; the kvm_exit/kvm_entry programs left out)
echo "interrupt hooks alone: ns per $unit in the programs on the interrupt and timer hooks (bpftrace: all its programs), median over the starts (min..max)"
printf '%-14s %8s %12s %7s %7s\n' config hooks "min..max" "/floor" "/bpftr"
hfloor="" hbt=""
[ -s $work/empty_irq.hooks ] && hfloor=$(spread < $work/empty_irq.hooks | cut -d' ' -f1)
[ -s $work/$bt.hooks ] && hbt=$(spread < $work/$bt.hooks | cut -d' ' -f1)
for cfg in $BENCH_CONFIGS; do
	[ -s $work/$cfg.hooks ] || continue
	read -r h hlo hhi <<< "$(spread < $work/$cfg.hooks)"
	printf '%-14s %8s %12s %7s %7s\n' $cfg $h "$hlo..$hhi" "$(ratio $h "$hfloor")" "$(ratio $h "$hbt")"
done
# per program: ns/run and runs per IPI, median over every run of every start
echo "per program (median over the runs): ns/run, ns/$unit, runs/$unit"
for cfg in $BENCH_CONFIGS; do
	[ -s $work/$cfg.perprog ] || continue
	awk -v c=$cfg '{ n[$1]++; r[$1, n[$1]] = $2; e[$1, n[$1]] = $3; k[$1, n[$1]] = $4 }
		function med(a, p, m,   i, j, t, v) {
			for (i = 1; i <= m; i++) v[i] = a[p, i]
			for (i = 2; i <= m; i++) for (j = i; j > 1 && v[j-1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j-1]; v[j-1] = t }
			return v[int((m + 1) / 2)] }
		END { for (p in n) printf "  %-14s %-36s %8d %8d %6.2f\n", c, p, med(r, p, n[p]), med(e, p, n[p]), med(k, p, n[p]) }' \
		$work/$cfg.perprog | sort -k2
done
rm -rf $work
