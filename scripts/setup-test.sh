#!/bin/sh
# The test tier on top of scripts/setup.sh (which it runs first): lint,
# fuzzing, the test VM (QEMU, busybox, the test kernels), Bochs for
# check-vmx, the workloads and tools the QA tests drive, libvirt for tests
# that define a domain inside the test VM (libvirtd is not started here),
# mmdebstrap and socat for scripts/try-root.sh (mmdebstrap also for
# scripts/trixie-root.sh, make check-trixie's root), build-essential, debhelper
# and lintian for make deb and make lintian (qa 409). Idempotent. Needs
# root.
#
# The test kernels -- Debian 12's linux-image-amd64 (6.1, the test VM's
# default) and linux-image-6.12-amd64, with their headers (bcc's tools in
# the VM build against /lib/modules/<ver>/build) -- are never installed:
# they are downloaded and unpacked under $PMDAVIRT_KERNELS (default
# /var/cache/pmdavirt/kernels/<version>/), where qa/vm/run finds them.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
"$here/setup.sh"
. "$here/setup-lib.sh"

PKGS="clang-tidy cppcheck llvm pkg-config dpkg-dev build-essential debhelper lintian
 qemu-system-x86 busybox-static cpio file kmod xz-utils zstd git
 bpftrace bpfcc-tools
 bochs bochsbios vgabios isolinux syslinux-common xorriso
 strace iproute2 curl redis-server python3-yaml chromium valgrind groff-base man-db socat
 libvirt-daemon-system libvirt-clients mmdebstrap"

KERNELS=${PMDAVIRT_KERNELS:-/var/cache/pmdavirt/kernels}
# Debian 12's archive, whatever this machine runs
MIRROR=${PMDAVIRT_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY=${PMDAVIRT_DEBIAN_SECURITY:-http://deb.debian.org/debian-security}

# libFuzzer (make fuzz) is in clang's runtime package: libclang-rt-<major>-dev
clang_rt()
{
	major=$(dpkg-query -W -f='${Version}' clang | sed 's/^[0-9]*://; s/[.].*//')
	echo "libclang-rt-$major-dev"
}

# an apt of our own that sees only Debian 12 (downloads, never installs)
bookworm_apt()
{
	d=$KERNELS/.apt
	mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
	k=/usr/share/keyrings/debian-archive-keyring.gpg
	{ echo "deb [signed-by=$k] $MIRROR bookworm main"
	  echo "deb [signed-by=$k] $MIRROR bookworm-updates main"
	  echo "deb [signed-by=$k] $SECURITY bookworm-security main"; } > "$d/sources.list"
	cat > "$d/apt.conf" <<CONF
Dir::Etc::SourceList "$d/sources.list";
Dir::Etc::SourceParts "/dev/null";
Dir::State::Lists "$d/lists";
Dir::State::status "/dev/null";
Dir::Cache "$d/cache";
APT::Sandbox::User "root";
CONF
	export APT_CONFIG="$d/apt.conf"
	apt-get -q update
}

# depends PKG PATTERN: PKG's dependencies whose names match PATTERN
depends()
{
	apt-cache depends "$1" | sed -n 's/^ *|\{0,1\}Depends: \([^<>]*\)$/\1/p' | grep -x "$2" || true
}

# cache_kernel META: META's image and headers (with their -common and
# kbuild parts), unpacked under $KERNELS/<version>, modules.dep made
cache_kernel()
{
	image=$(depends "$1" 'linux-image-[0-9].*-amd64' | head -1)
	[ -n "$image" ] || { echo "setup-test.sh: $1: no kernel image" >&2; exit 1; }
	ver=${image#linux-image-}
	dir=$KERNELS/$ver
	if [ -f "$dir/.complete" ]; then
		echo "setup-test.sh: kernel $ver cached in $dir"
		return 0
	fi
	headers=linux-headers-$ver
	debs="$image $headers $(depends "$headers" 'linux-headers-.*-common\|linux-kbuild-.*')"
	echo "setup-test.sh: caching kernel $ver in $dir:" $debs
	rm -rf "$dir.tmp" && mkdir -p "$dir.tmp/debs"
	# shellcheck disable=SC2086
	(cd "$dir.tmp/debs" && apt-get -q download $debs)
	for f in "$dir.tmp"/debs/*.deb; do dpkg-deb -x "$f" "$dir.tmp"; done
	rm -rf "$dir.tmp/debs"
	depmod -b "$dir.tmp" "$ver"
	[ -f "$dir.tmp/boot/vmlinuz-$ver" ] && [ -d "$dir.tmp/usr/src/$headers" ] || {
		echo "setup-test.sh: $ver: image or headers missing after unpacking" >&2; exit 1; }
	touch "$dir.tmp/.complete"
	rm -rf "$dir" && mv "$dir.tmp" "$dir"
}

debian_release > /dev/null
# shellcheck disable=SC2086
install_pkgs $PKGS $(clang_rt)
(bookworm_apt && for k in linux-image-amd64 linux-image-6.12-amd64; do cache_kernel "$k"; done)
echo "setup-test.sh: done"
