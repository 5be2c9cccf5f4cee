# Sourced by bench/run: hold the benchmark's VM alone on one host CPU.
#
# isolate_begin CPU  makes two cpusets in the cgroup v1 cpuset hierarchy:
#                    "virt-bench" (CPU) and "virt-rest" (every other online
#                    CPU), moves every task of the root cpuset into
#                    virt-rest (kernel threads bound to a CPU stay: the
#                    kernel refuses them), and leaves the caller in
#                    virt-bench, so the VMs it starts run there alone.
# isolate_end        moves every task back to the root cpuset and removes
#                    both (also on exit: the caller traps it).
# Without a cpuset v1 hierarchy (a pure cgroup v2 host) it says so and
# fails: a figure that claims isolation must have had it.
iso_root=/sys/fs/cgroup/cpuset

iso_other_cpus()
{
	local want=$1 c out=""
	for c in $(seq 0 $(($(nproc --all) - 1))); do
		[ "$c" = "$want" ] && continue
		[ -e /sys/devices/system/cpu/cpu$c/online ] && [ "$(cat /sys/devices/system/cpu/cpu$c/online)" = 0 ] && continue
		out=${out:+$out,}$c
	done
	echo "$out"
}

# iso_move FROM TO: every task of cpuset FROM into cpuset TO, one at a time
iso_move()
{
	local t
	while read -r t; do echo "$t" > "$2/tasks"; done < "$1/tasks" 2>/dev/null
}

isolate_begin()
{
	local cpu=$1 rest
	[ -f "$iso_root/cpuset.cpus" ] || { echo "bench: no cgroup v1 cpuset hierarchy at $iso_root: cannot isolate CPU $cpu" >&2; return 1; }
	rest=$(iso_other_cpus "$cpu")
	[ -n "$rest" ] || { echo "bench: CPU $cpu is the only online CPU: nothing to isolate it from" >&2; return 1; }
	isolate_end
	mkdir "$iso_root/virt-bench" "$iso_root/virt-rest" || return 1
	cat "$iso_root/cpuset.mems" > "$iso_root/virt-bench/cpuset.mems"
	cat "$iso_root/cpuset.mems" > "$iso_root/virt-rest/cpuset.mems"
	echo "$cpu" > "$iso_root/virt-bench/cpuset.cpus" || { echo "bench: CPU $cpu: no such online CPU" >&2; isolate_end; return 1; }
	echo "$rest" > "$iso_root/virt-rest/cpuset.cpus"
	# twice: a task forked while the first pass ran stays behind otherwise
	iso_move "$iso_root" "$iso_root/virt-rest"
	iso_move "$iso_root" "$iso_root/virt-rest"
	echo $$ > "$iso_root/virt-bench/tasks"
	echo "bench: the benchmark VMs run alone on host CPU $cpu; every other task on CPU $rest ($(wc -l < "$iso_root/tasks") pinned kernel threads stay)"
}

isolate_end()
{
	local d
	for d in virt-bench virt-rest; do
		[ -d "$iso_root/$d" ] || continue
		iso_move "$iso_root/$d" "$iso_root"
		rmdir "$iso_root/$d" 2>/dev/null
	done
	return 0
}
