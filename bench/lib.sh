# Shared by the overhead benchmarks (kvm.sh, virtio.sh, vhost.sh), sourced
# inside the test VM. The caller defines start_cfg CFG (attach; non-zero
# on failure), stop_cfg, run_ns (one workload run, prints its ns) and sets
# work (a scratch dir) and P (pairs); measure_all EVENTS CFG... then
# writes "cfg median min max prog prog_min prog_max" per configuration to
# $work/summary, all per event. A run_ns whose event count varies from run
# to run (sched.sh: the run's context switches) writes it to $work/events:
# it then replaces EVENTS for that run. prog_per_event also keeps, per
# start, the ns per program run over all the configuration's programs
# ($work/CFG.perrun) and per program "name ns/run ns/event runs/event"
# ($work/CFG.perprog) and, when the configuration's start_cfg set hooks_re
# (an awk pattern of program names), the ns per event of the programs it
# matches, per start ($work/CFG.hooks: the median over its runs).

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

# BPF programs are counted by id: a configuration's programs are those
# loaded after it started that were not there before (base_ids, taken
# when this file is sourced: anything else in the VM that runs BPF), and a
# configuration may start only once every program of the previous one is
# gone. prog_ids lists loaded program ids; prog_ns IDS sums run_time_ns
# (kernel.bpf_stats_enabled) over those ids only.
prog_ids() { bpftool prog show 2>/dev/null | sed -n 's/^\([0-9][0-9]*\): .*/\1/p' | sort -n; }
prog_ns() { prog_stat run_time_ns "$@"; }
prog_runs() { prog_stat run_cnt "$@"; }
prog_stat()
{
	local stat=$1
	shift
	bpftool prog show 2>/dev/null | awk -v ids=" $* " -v stat=$stat '
		/^[0-9]+: / { id = $1; sub(":", "", id); mine = index(ids, " " id " ") > 0 }
		mine { for (i = 1; i < NF; i++) if ($i == stat) t += $(i+1) }
		END { printf "%d", t }'
}
base_ids=$(prog_ids | tr '\n' ' ')
echo "test VM kernel $(uname -r); BPF programs loaded before the benchmark: ${base_ids:-none}"

# new_ids: programs loaded now that are not in base_ids
new_ids() { prog_ids | awk -v b=" $base_ids " 'index(b, " " $1 " ") == 0' | tr '\n' ' '; }

# assert_clean WHAT: wait up to 10 s for every program loaded since
# base_ids to go (a stopped tool's programs are freed after its last
# reference goes); if any stay, name them and fail the benchmark
assert_clean()
{
	local left
	for _ in $(seq 1 100); do
		left=$(new_ids)
		[ -z "$left" ] && return 0
		sleep 0.1
	done
	echo "bench: BPF programs still loaded $1:" >&2
	for id in $left; do bpftool prog show id "$id" | head -1 >&2; done
	exit 1
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2)}'; }

# spread: "median min max" of the numbers on stdin
spread() { local v; v=$(sort -n); echo "$(echo "$v" | median) $(echo "$v" | head -1) $(echo "$v" | tail -1)"; }

ratio() { awk -v a="$1" -v f="$2" 'BEGIN {printf "%.2f", (f + 0 > 0 && a != "-") ? (a / f) : 0}'; }

# column K of configuration C in the summary
col() { awk -v c="$1" -v k="$2" '$1 == c {print $k}' $work/summary; }

# The summary as a table, config column W wide: wall and prog per event
# (median, min..max), each as a ratio to every LABEL=CFG given.
summary_table()
{
	local w=$1 ref refs=() labels=() fmt cfg med lo hi prog plo phi r
	shift
	for ref in "$@"; do labels+=("/${ref%%=*}"); refs+=("${ref#*=}"); done
	fmt="%-${w}s %10s %16s$(printf ' %%7s%.0s' "${refs[@]}") %8s %12s$(printf ' %%7s%.0s' "${refs[@]}")\n"
	# shellcheck disable=SC2059
	printf "$fmt" config wall "min..max" "${labels[@]}" prog "min..max" "${labels[@]}"
	while read -r cfg med lo hi prog plo phi; do
		local wr=() pr=()
		for r in "${refs[@]}"; do wr+=("$(ratio "$med" "$(col "$r" 2)")"); pr+=("$(ratio "$prog" "$(col "$r" 5)")"); done
		# shellcheck disable=SC2059
		printf "$fmt" "$cfg" "$med" "$lo..$hi" "${wr[@]}" "$prog" "$plo..$phi" "${pr[@]}"
	done < $work/summary
}

# measure CFG EVENTS: one attach first (it pays for BTF parsing and the
# like), P pairs of runs without/with CFG attached, alternating; then one
# more run with kernel.bpf_stats_enabled for the time inside CFG's own
# programs (not in the pairs: the stats' own clock reads cost ~1 us per
# program run). Every start is preceded by assert_clean.
measure()
{
	local cfg=$1 n=$2 base with prog ev

	: > $work/$cfg
	# P = 0: prog alone, one start (no warm-up attach, no pairs: wall "-")
	if [ "$P" -gt 0 ]; then
		start_checked $cfg || return 1
		stop_cfg
	fi
	for i in $(seq 1 $P); do
		assert_clean "before a run without $cfg"
		base=$(run_ns)
		start_checked $cfg || return 1
		with=$(run_ns)
		ev=$(run_events $n)
		stop_cfg
		if [ -z "$base" ] || [ -z "$with" ]; then
			echo "$cfg pair $i: a run gave no time (without '$base', with '$with'); $cfg left out" >&2
			echo "$cfg - - -" >> $work/pairs
			return 1
		fi
		echo "$cfg pair $i: without $base ns, with $with ns ($ev events)" >&2
		echo $(( (with - base) / ev )) >> $work/$cfg
	done
	start_checked $cfg || return 1
	echo "$cfg programs: $(prog_names $cfg_ids)" >&2
	echo "$cfg helper calls in each program's xlated code: $(prog_calls $cfg $cfg_ids)" >&2
	prog_per_event $n > $work/$cfg.prog
	stop_cfg
	if [ -s $work/$cfg ]; then echo "$cfg $(spread < $work/$cfg)"; else echo "$cfg - - -"; fi >> $work/pairs
}

# measure_all EVENTS CFG...: measure each CFG, then BENCH_PROG_STARTS - 1
# (default 0) more starts of each for prog alone, round-robin over the
# configurations: under TCG where one start's programs land can move its
# prog figure by a quarter (the same code measured 2305 and 2853 ns/exit in
# one boot), so no configuration's figure should rest on one start, nor
# its starts sit next to each other. prog = the median over the starts
# (each the median of its BENCH_PROG_RUNS), with their min and max.
measure_all()
{
	local n=$1 cfg r
	shift
	: > $work/pairs
	for cfg in "$@"; do : > $work/$cfg.perrun; : > $work/$cfg.perprog; done
	for cfg in "$@"; do measure $cfg $n; done
	for r in $(seq 2 ${BENCH_PROG_STARTS:-1}); do
		for cfg in "$@"; do
			[ -s $work/$cfg.prog ] || continue	# it could not attach
			start_checked $cfg || continue
			prog_per_event $n >> $work/$cfg.prog
			stop_cfg
		done
	done
	: > $work/summary
	for cfg in "$@"; do
		[ -s $work/$cfg.prog ] || continue
		echo "$cfg prog per start: $(tr '\n' ' ' < $work/$cfg.prog)" >&2
		echo "$(awk -v c=$cfg '$1 == c' $work/pairs) $(spread < $work/$cfg.prog)" >> $work/summary
	done
}

# prog_per_event EVENTS [SPREAD]: with the configuration started (cfg_ids),
# the median over BENCH_PROG_RUNS (default 3) workload runs of the ns its
# own programs spent per event, bpf_stats on only around those runs; with
# SPREAD, "median min max"
prog_per_event()
{
	local t0 t1 c0 c1 runs ev id pr=$work/perrun.tmp pp=$work/perprog.tmp
	: > $pr; : > $pp; : > $work/hooks.tmp
	for id in $cfg_ids; do echo "$id $(prog_fullname $id)"; done > $work/names
	sysctl -q -w kernel.bpf_stats_enabled=1
	runs=$(for _ in $(seq 1 ${BENCH_PROG_RUNS:-3}); do
		prog_table $cfg_ids > $work/pt0
		run_ns > /dev/null
		prog_table $cfg_ids > $work/pt1
		ev=$(run_events $1)
		t0=$(awk '{t += $3} END {print t + 0}' $work/pt0) c0=$(awk '{c += $4} END {print c + 0}' $work/pt0)
		t1=$(awk '{t += $3} END {print t + 0}' $work/pt1) c1=$(awk '{c += $4} END {print c + 0}' $work/pt1)
		echo $(( (t1 - t0) / ev ))
		awk -v t=$((t1 - t0)) -v c=$((c1 - c0)) 'BEGIN { printf "%d\n", (c > 0) ? t / c : 0 }' >> $pr
		awk -v ev=$ev 'FILENAME ~ /names$/ { name[$1] = $2; next }
			FILENAME ~ /pt0$/ { t[$1] = $3; c[$1] = $4; next }
			{ dt = $3 - t[$1]; dc = $4 - c[$1]
			  printf "%s %d %d %.3f\n", (($1 in name) ? name[$1] : $2), ((dc > 0) ? dt / dc : 0), dt / ev, dc / ev }' \
			$work/names $work/pt0 $work/pt1 >> $pp
		awk -v c=$((c1 - c0)) -v n=$ev 'BEGIN { printf "program runs per event: %.2f\n", c / n }' >&2
		[ -z "${hooks_re:-}" ] || awk -v ev=$ev -v re="$hooks_re" '
			FILENAME ~ /names$/ { name[$1] = $2; next }
			FILENAME ~ /pt0$/ { t[$1] = $3; next }
			(($1 in name) ? name[$1] : $2) ~ re { s += $3 - t[$1] }
			END { printf "%d\n", s / ev }' $work/names $work/pt0 $work/pt1 >> $work/hooks.tmp
	done)
	sysctl -q -w kernel.bpf_stats_enabled=0
	median < $pr >> $work/${cfg:-prog}.perrun
	[ -z "${hooks_re:-}" ] || median < $work/hooks.tmp >> $work/${cfg:-prog}.hooks
	cat $pp >> $work/${cfg:-prog}.perprog
	echo "${cfg:-prog} prog per event, each run: $(echo $runs); ns per program run: $(tr '\n' ' ' < $pr)" >&2
	sed "s/^/${cfg:-prog} program (ns\/run ns\/event runs\/event): /" $pp >&2
	if [ -n "${2:-}" ]; then echo "$runs" | spread; else echo "$runs" | median; fi
}

# prog_fullname ID: the program's function name from its BTF (the first
# line of its xlated dump), else the kernel's (cut at 15 characters)
prog_fullname()
{
	local n
	n=$(bpftool prog dump xlated id "$1" 2>/dev/null | sed -n '1s/^[a-z_0-9 ]* \**\([A-Za-z_][A-Za-z_0-9]*\)(.*/\1/p')
	[ -n "$n" ] || n=$(bpftool prog show id "$1" 2>/dev/null | sed -n '1s/.* name \([^ ]*\).*/\1/p')
	echo "${n:-?}"
}

# run_events EVENTS: the last run's event count: $work/events if run_ns
# wrote it, else EVENTS
run_events() { if [ -s $work/events ]; then cat $work/events; else echo $1; fi; }

# prog_table IDS: "id name run_time_ns run_cnt" per program
prog_table()
{
	bpftool prog show 2>/dev/null | awk -v ids=" $* " '
		/^[0-9]+: / { id = $1; sub(":", "", id)
			if (index(ids, " " id " ") == 0) next
			name = "?"; t = 0; c = 0
			for (i = 2; i < NF; i++) {
				if ($i == "name") name = $(i+1)
				if ($i == "run_time_ns") t = $(i+1)
				if ($i == "run_cnt") c = $(i+1)
			}
			print id, name, t, c }'
}

# start_checked CFG: start CFG on a clean VM; cfg_ids = its programs
start_checked()
{
	assert_clean "before $1 started"
	start_cfg $1 || { stop_cfg; echo "$1: cannot attach" >&2; return 1; }
	cfg_ids=$(new_ids)
	[ -n "$cfg_ids" ] || { stop_cfg; echo "$1: started but loaded no BPF program" >&2; return 1; }
}

# prog_names IDS: "id:name" of each
prog_names() { for id in "$@"; do bpftool prog show id "$id" | sed -n '1s/^\([0-9]*\): [a-z_]*  *name \([^ ]*\).*/\1:\2/p'; done | tr '\n' ' '; }

# prog_calls CFG IDS: "name:calls" of each program (call instructions in
# its xlated code, all paths; the dumps go to build/xlated/CFG-ID for
# counting a path's)
prog_calls()
{
	local cfg=$1 id d=$top/build/xlated
	shift
	mkdir -p $d
	for id in "$@"; do
		bpftool prog dump xlated id "$id" > $d/$cfg-$id 2>&1
		bpftool prog dump jited id "$id" > $d/$cfg-$id.jited 2>&1
		echo "$(bpftool prog show id "$id" | sed -n '1s/.* name \([^ ]*\).*/\1/p'):$(grep -c ' call ' $d/$cfg-$id)"
	done | tr '\n' ' '
}

# start_empty VARIANT: bench/emptyload's empty programs of that variant
start_empty()
{
	emptyload "$1" > $work/out 2>&1 & pid=$!
	wait_for $work/out attached 60
}

# start_bpftrace SCRIPT...: bpftrace running bench/SCRIPT (several: one
# program of them all), once attached
start_bpftrace()
{
	local f
	for f in "$@"; do cat "$top/bench/$f"; done > $work/prog.bt
	bpftrace $work/prog.bt > $work/out 2>&1 & pid=$!
	wait_for $work/out Attaching 120 && sleep 1
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

# Stop the configuration running as $pid and its children (bcc tools run
# python under a shell); a family script with other needs defines its own.
stop_cfg()
{
	pkill -P $pid 2>/dev/null; kill $pid 2>/dev/null
	wait $pid 2>/dev/null
	sleep 0.3
}
