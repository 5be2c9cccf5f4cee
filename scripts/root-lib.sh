# Shared by scripts/try-root.sh and scripts/in-root.sh (sourced; POSIX sh):
# shellcheck shell=sh
# a Debian root run in namespaces of its own (network, mount, PID: made by
# the caller with unshare), with the kernel's file systems and a private
# /run and /tmp.

# root_mounts ROOT: proc (of the new PID namespace), sys, tracefs,
# debugfs, bpf, /dev, /run, /tmp; lo up (its pmcd listens there)
root_mounts()
{
	ip link set lo up
	mount -t proc proc "$1/proc"
	mount -t sysfs sys "$1/sys"
	mount -t tracefs tracefs "$1/sys/kernel/tracing" 2>/dev/null || true
	mount -t debugfs debugfs "$1/sys/kernel/debug" 2>/dev/null || true
	mount -t bpf bpf "$1/sys/fs/bpf" 2>/dev/null || true
	mount --rbind /dev "$1/dev"
	mount -t tmpfs -o mode=0755 run "$1/run"
	mount -t tmpfs -o mode=1777 tmp "$1/tmp"
	[ -f "$1/sys/kernel/btf/vmlinux" ] || { echo "${0##*/}: no /sys/kernel/btf/vmlinux" >&2; exit 1; }
}

# root_hosts ROOT: localhost and this machine's name in its /etc/hosts
root_hosts()
{
	grep -qw localhost "$1/etc/hosts" 2>/dev/null || printf '127.0.0.1\tlocalhost\n' >> "$1/etc/hosts"
	printf '127.0.1.1\t%s\n' "$(hostname)" >> "$1/etc/hosts"
}

# root_exec ROOT COMMAND...: COMMAND chrooted in ROOT, clean environment
root_exec()
{
	r=$1; shift
	chroot "$r" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root TERM=dumb LANG=C.UTF-8 "$@" < /dev/null
}
