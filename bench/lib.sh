# Shared by the overhead benchmarks (kvm.sh, virtio.sh, vhost.sh), sourced
# inside the test VM. The caller defines start_cfg CFG (attach; non-zero
# on failure), stop_cfg, run_ns (one workload run, prints its ns) and sets
# work (a scratch dir) and P (pairs); measure CFG EVENTS then appends
# "cfg median min max prog" to $work/summary, all per event.

# wait_for FILE PATTERN SECONDS
wait_for()
{
	for _ in $(seq 1 $(($3 * 10))); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "timeout waiting for '$2' in $1:" >&2; tail -5 "$1" >&2
	return 1
}

# Sum of run_time_ns over every BPF program loaded (the tool's own: nothing
# else in the VM runs BPF), with kernel.bpf_stats_enabled on.
prog_ns() { bpftool prog show 2>/dev/null | awk '{ for (i = 1; i < NF; i++) if ($i == "run_time_ns") t += $(i+1) } END { printf "%d", t }'; }

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2)}'; }

ratio() { awk -v a="$1" -v f="$2" 'BEGIN {printf "%.2f", (f + 0 > 0 && a != "-") ? (a / f) : 0}'; }

# column K of configuration C in the summary
col() { awk -v c="$1" -v k="$2" '$1 == c {print $k}' $work/summary; }

# measure CFG EVENTS: one attach first (it pays for BTF parsing and the
# like), P pairs of runs without/with CFG attached, alternating; then one
# more run with kernel.bpf_stats_enabled for the time inside the programs
# (not in the pairs: the stats' own clock reads cost ~1 us per program run)
measure()
{
	local cfg=$1 n=$2 base with t0 t1

	: > $work/$cfg
	start_cfg $cfg || { stop_cfg; echo "$cfg: cannot attach" >&2; return 1; }
	stop_cfg
	for i in $(seq 1 $P); do
		base=$(run_ns)
		start_cfg $cfg || { stop_cfg; echo "$cfg: cannot attach" >&2; return 1; }
		with=$(run_ns)
		stop_cfg
		echo "$cfg pair $i: without $base ns, with $with ns" >&2
		echo $(( (with - base) / n )) >> $work/$cfg
	done
	start_cfg $cfg || return 1
	sysctl -q -w kernel.bpf_stats_enabled=1
	t0=$(prog_ns); run_ns > /dev/null; t1=$(prog_ns)
	sysctl -q -w kernel.bpf_stats_enabled=0
	stop_cfg
	echo "$cfg $(median < $work/$cfg) $(sort -n $work/$cfg | head -1) $(sort -n $work/$cfg | tail -1) $(( (t1 - t0) / n ))" >> $work/summary
}

# start_empty VARIANT: bench/emptyload's empty programs of that variant
start_empty()
{
	emptyload "$1" > $work/out 2>&1 & pid=$!
	wait_for $work/out attached 60
}

# start_agent FAMILY [LINE...]: pmdavirt -A ($b = the build dir) with only
# FAMILY enabled; LINEs go into its config section (e.g. "latency = false")
start_agent()
{
	local fam=$1 f l
	shift
	: > $work/conf
	for f in kvm virtio vhost qemu; do
		[ $f = $fam ] || printf '[%s]\nenabled = false\n' $f >> $work/conf
	done
	printf '[%s]\n' $fam >> $work/conf
	for l in "$@"; do printf '%s\n' "$l" >> $work/conf; done
	: > $work/log
	$b/pmdavirt -A -l $work/log -c $work/conf -M $b/modules & pid=$!
	wait_for $work/log "$fam: active" 120
}
