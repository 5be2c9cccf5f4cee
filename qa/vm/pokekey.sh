#!/bin/bash
# qa/vm/pokekey.sh [cfs|kvm|kvm-held] [N] — inside a 2-vCPU test VM, turn a
# static key on and off N times while a pipe loop keeps each CPU switching
# tasks. Prints "survived N"; a guest that cannot take text pokes under
# TCG panics or freezes instead (doc/testing.md).
#   cfs       the scheduler's __cfs_bandwidth_used (a cgroup's cpu.max set
#             and cleared; tested in enqueue_entity(), set_next_task_fair())
#   kvm       N nested guests created, run and destroyed (kvmguest -r N):
#             each turns KVM's preempt_notifier_key (kvm_create_vm() ->
#             preempt_notifier_inc(); tested in __schedule()) and, with no
#             in-kernel irqchip, kvm_has_noapic_vcpu (kvm_arch_vcpu_create())
#             on and off
#   kvm-held  the same with a guest created first, with CPU 1 offline, and
#             kept for the whole run (paused): the keys' counts never drop
#             to 0, so no guest after it pokes text (what qa 118 does)
# Run it as
#   qa/vm/run --cpus 2 -- qa/vm/pokekey.sh kvm 300
#   qa/vm/run --cpus 2 --kernel 6.12 --root "$(scripts/trixie-root.sh)" -- qa/vm/pokekey.sh cfs 300
# (and with VIRT_VM_TCG_THREAD=single in the environment: one thread for both)
mode=${1:-cfs} n=${2:-300}
PATH=$PATH:${VIRT_BUILD:-build}/qa
case $mode in
cfs)
	cg=/sys/fs/cgroup
	grep -q "^cgroup2 $cg " /proc/mounts || mount -t cgroup2 none $cg || exit 1
	echo +cpu > $cg/cgroup.subtree_control || exit 1
	mkdir -p $cg/pokekey ;;
kvm|kvm-held)
	modprobe kvm_amd || exit 1 ;;
*)	echo "usage: $0 [cfs|kvm|kvm-held] [N]" >&2; exit 2 ;;
esac
if [ $mode = kvm-held ]; then
	echo 0 > /sys/devices/system/cpu/cpu1/online || exit 1
	kvmguest -o 1 -P 3600 > /tmp/keeper 2>&1 &
	keeper=$!
	until grep -q "^paused 1 " /tmp/keeper; do kill -0 $keeper || { cat /tmp/keeper; exit 1; }; sleep 0.2; done
	echo 1 > /sys/devices/system/cpu/cpu1/online || exit 1
fi
loops=""
for c in 0 1; do taskset -c $c bash -c 'while :; do echo x | cat > /dev/null; done' & loops="$loops $!"; done
case $mode in
cfs)
	for i in $(seq 1 "$n"); do
		echo "20000 100000" > $cg/pokekey/cpu.max
		echo "max 100000" > $cg/pokekey/cpu.max
		[ $((i % 50)) = 0 ] && echo "toggled $i"
	done ;;
kvm*)
	for i in $(seq 10 10 "$n"); do
		kvmguest -q -r 10 -o 10 || { echo "kvmguest failed at $i"; exit 1; }
		echo "toggled $i"
	done ;;
esac
kill $loops ${keeper:-}
echo "survived $n"
