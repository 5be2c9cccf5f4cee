#!/bin/bash
# make demo: boot the test VM, install the agent under a real pmcd there,
# run a nested KVM guest of known behaviour and show the KVM metrics live
# with pmrep and pminfo. Needs `make setup` and `make` first.
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${VIRT_VM:-}" ]; then
	echo "Booting the test VM (Debian 6.1 kernel under QEMU TCG; ~10 s) ..."
	exec "$top/qa/vm/run" --timeout 600 -- "$0" "$@"
fi
. /etc/pcp.env
export PATH=$top/build/qa:$PATH
modprobe kvm_amd
$PCP_RC_DIR/pmcd start >/dev/null
make -C "$top" -s install >/dev/null
cp "$top/build/virt.conf" "$PCP_SYSCONF_DIR/virt/virt.conf"
(cd "$PCP_PMDAS_DIR/virt" && ./Install </dev/null >/dev/null)
echo; echo "== pminfo -f virt.control.module.status virt.control.module.method"
pminfo -f virt.control.module.status virt.control.module.method
echo "== nested guests, one after another until pmrep is done: 300 out (the VMM"
echo "   busy-waits 100 us after each), 300 cpuid, 50 hypercalls nr 42 each"
stop=$(mktemp)
(while [ -f "$stop" ]; do kvmguest -q -o 300 -c 300 -h 50 -d 100; done) &
echo; echo "== pmrep: exits/s per reason and time out of the guest (ns/s), 1 s samples"
pmrep -t 1 -s 8 -p -w 10 -i 'io|cpuid|hypercall' virt.kvm.exit.count virt.kvm.exit.time
rm -f "$stop"; wait
echo; echo "== pminfo -f virt.kvm.userspace.count virt.kvm.hypercall.count"
pminfo -f virt.kvm.userspace.count virt.kvm.hypercall.count
echo "== histogram virt.kvm.userspace.latency (KVM_EXIT_IO: VMM handling time, ns buckets)"
pminfo -f virt.kvm.userspace.latency | grep KVM_EXIT_IO
(cd "$PCP_PMDAS_DIR/virt" && ./Remove </dev/null >/dev/null)
