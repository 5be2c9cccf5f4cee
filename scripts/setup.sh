#!/bin/sh
# Install every build and test dependency of pmdavirt on a Debian 12 machine.
# Idempotent: safe to run again. Needs root.
#
# PCP's postinst calls `systemctl daemon-reload`, which fails on machines
# without systemd as PID 1 (containers, Firecracker guests). We hide systemctl
# while dpkg configures packages, then start pmcd through its init script.
set -eu

PKGS="pcp libpcp3-dev libpcp-pmda3-dev python3-pcp
 libbpf-dev bpftool clang llvm libclang-rt-14-dev libelf-dev zlib1g-dev
 pkg-config make gcc clang-tidy cppcheck dpkg-dev
 qemu-system-x86 linux-image-amd64 linux-image-6.12-amd64 busybox-static cpio
 bpftrace bpfcc-tools linux-headers-amd64 linux-headers-6.12-amd64
 bochs bochsbios vgabios isolinux syslinux-common xorriso
 strace iproute2 procps curl redis-server chromium valgrind groff-base man-db
 libvirt-daemon-system libvirt-clients"

[ "$(id -u)" = 0 ] || { echo "setup.sh: must run as root" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || missing="$missing $p"
done

# systemd may arrive as a dependency during the install, so hide it just
# before dpkg configures; /bin and /usr/bin are separate on non-merged-/usr.
hidden=""
restore_systemctl() {
	for f in $hidden; do mv "$f.pmdavirt-hidden" "$f"; done
	hidden=""
}
configure_without_systemctl() {
	if [ ! -d /run/systemd/system ]; then
		for f in /usr/bin/systemctl /bin/systemctl; do
			if [ -f "$f" ] && [ ! -L "$f" ]; then
				mv "$f" "$f.pmdavirt-hidden"; hidden="$hidden $f"
			fi
		done
		trap restore_systemctl EXIT
	fi
	dpkg --configure -a
	restore_systemctl
}

# libvirt's daemons are for the test VM only (qa/vm/libvirt starts them
# there): a policy-rc.d of our own, where there is none, keeps their
# postinst from starting them on this machine
policy=/usr/sbin/policy-rc.d
own_policy=false
if [ -n "$missing" ]; then
	echo "setup.sh: installing:$missing"
	if [ ! -e $policy ]; then
		printf '#!/bin/sh\ncase "$1" in libvirtd|virtlogd|virtlockd|virtqemud|virtproxyd) exit 101 ;; esac\nexit 0\n' > $policy
		chmod 755 $policy; own_policy=true
	fi
	apt-get update -q
	apt-get install -y -q --no-install-recommends $missing || true
	configure_without_systemctl
	if $own_policy; then rm -f $policy; fi
else
	echo "setup.sh: all packages present"
	if dpkg --audit 2>/dev/null | grep -q .; then configure_without_systemctl; fi
fi

# pmcd: start through the init script when not running (no systemd here).
if ! pgrep -x pmcd >/dev/null 2>&1; then
	/etc/init.d/pmcd start || { echo "setup.sh: pmcd failed to start" >&2; exit 1; }
fi
echo "setup.sh: done"
