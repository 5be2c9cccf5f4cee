#!/bin/bash
# qa/vm/pokekey.sh [N] — inside a 2-vCPU test VM, turn the scheduler's
# static key __cfs_bandwidth_used on and off N times (a cgroup's cpu.max
# set and cleared) while a pipe loop keeps each CPU switching tasks.
# Prints "survived N"; a guest that cannot take text pokes under TCG
# panics instead (doc/testing.md). Run it as
#   qa/vm/run --cpus 2 --kernel 6.12 --root "$(scripts/trixie-root.sh)" -- qa/vm/pokekey.sh 300
# (and with VIRT_VM_TCG_THREAD=single in the environment: one thread for both)
cg=/sys/fs/cgroup
grep -q "^cgroup2 $cg " /proc/mounts || mount -t cgroup2 none $cg || exit 1
echo +cpu > $cg/cgroup.subtree_control || exit 1
mkdir -p $cg/pokekey
for c in 0 1; do taskset -c $c bash -c 'while :; do echo x | cat > /dev/null; done' & done
n=${1:-300}
for i in $(seq 1 "$n"); do
	echo "20000 100000" > $cg/pokekey/cpu.max
	echo "max 100000" > $cg/pokekey/cpu.max
	[ $((i % 50)) = 0 ] && echo "toggled $i"
done
kill %1 %2
echo "survived $n"
