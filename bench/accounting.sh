#!/bin/bash
# The bench's own accounting, run inside the test VM (bench/run accounting).
# 1. One empty raw_tp pair on kvm_exit + kvm_entry, started, measured,
#    stopped and started again: the second prog figure must equal the
#    first within noise, ROUNDS times. Each figure is the median of
#    BENCH_PROG_RUNS runs of one start; "within noise" = the two medians
#    differ by no more than 20 %, or by no more than the spread (max - min)
#    of the runs within either start (other VMs on the host widen it).
# 2. A configuration left running must make the next start fail loudly
#    (assert_clean), naming the programs still loaded.
# Exit 0 when both hold, 1 otherwise.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
R=${BENCH_ROUNDS:-3}
. "$top/bench/kvmsetup.sh"
start_cfg() { start_empty raw; }
stop_cfg() { kill $pid 2>/dev/null; wait $pid 2>/dev/null; }

# one_figure: start, "median min max" of the prog ns per exit of this
# start's own programs over BENCH_PROG_RUNS runs, stop
one_figure()
{
	start_checked empty_raw || exit 1
	prog_per_event $N spread
	stop_cfg
}

fail=0
echo "accounting: empty raw_tp pair, $N cpuid exits per run, $(uname -r); per start: median (min..max) of ${BENCH_PROG_RUNS:-3} runs"
for r in $(seq 1 $R); do
	read -r a alo ahi < <(one_figure)
	read -r b2 blo bhi < <(one_figure)
	[ -n "$a" ] && [ -n "$b2" ] && [ "$a" -gt 0 ] || { echo "round $r: no figure (first '$a', second '$b2')"; exit 1; }
	verdict=$(awk -v a="$a" -v b="$b2" -v sa=$((ahi - alo)) -v sb=$((bhi - blo)) 'BEGIN {
		d = b - a; if (d < 0) d = -d; s = sa > sb ? sa : sb
		printf "%.2f %s", b / a, (b / a >= 0.8 && b / a <= 1.25) || d <= s ? "ok" : "OFF" }')
	echo "round $r: first $a ($alo..$ahi) ns/exit, second $b2 ($blo..$bhi) ns/exit, second/first $verdict"
	case $verdict in *ok) ;; *) fail=1 ;; esac
done

# a configuration still running when the next starts: must fail loudly
start_checked empty_raw || exit 1
leftover=$cfg_ids
if (assert_clean "before the next configuration") 2> $work/err; then
	echo "guard: FAILED: programs $leftover still loaded and assert_clean passed"
	fail=1
else
	echo "guard: a running configuration stops the next one: $(head -1 $work/err)"
	grep -q "name empty_raw_exit" $work/err || { echo "guard: the message names no program"; fail=1; }
fi
stop_cfg
assert_clean "after the guard check"
rm -rf $work
[ $fail = 0 ] && echo "accounting: ok" || echo "accounting: FAILED"
exit $fail
