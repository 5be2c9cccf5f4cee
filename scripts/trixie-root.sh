#!/bin/sh
# scripts/trixie-root.sh -- the trixie tier's root (make check-trixie):
# a Debian 13 directory tree made once by mmdebstrap with what building,
# installing and testing the agent needs there (trixie's gcc 14, clang 19,
# libbpf 1.5, PCP 6.3, Valkey), and trixie's Linux 6.12 unpacked into it
# (boot/vmlinuz-<ver>, lib/modules/<ver>; dpkg-deb -x, never installed:
# no initramfs, nothing in this machine's /boot). The test VM boots that
# kernel over that root (qa/vm/run --root); the host tier runs in it
# (scripts/in-root.sh).
#
#   scripts/trixie-root.sh           make it unless cached; print its path
#
# Cached as $PMDAVIRT_ROOTS/trixie-test (default /var/cache/pmdavirt/roots),
# keyed by what goes into it (the package list, the kernel's hook, the
# mirrors): a changed list makes it again. Never written to afterwards: its users put an overlay on it.
# Needs root and mmdebstrap (scripts/setup-test.sh).
set -eu
prog=trixie-root.sh
roots=${PMDAVIRT_ROOTS:-/var/cache/pmdavirt/roots}
root=$roots/trixie-test
mirror=${PMDAVIRT_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${PMDAVIRT_DEBIAN_SECURITY:-http://deb.debian.org/debian-security}

# build (as scripts/setup.sh), install and run (pcp, passwd for its
# postinst's groupadd), the host tier's tools (001-006, 404, 407: git and
# cpio for 006, valkey for 404) and the VM tier's (kmod, iproute2;
# bpftrace: the witness of 115 and 118; mount: swapon, swapoff for 130)
PKGS="pcp python3-pcp libpcp3-dev libpcp-pmda3-dev passwd
 libbpf-dev bpftool clang libelf-dev zlib1g-dev make gcc libc6-dev binutils
 procps python3-yaml valkey-server valkey-tools curl git cpio file kmod iproute2 bpftrace mount"

# the kernel: linux-image-amd64's image, downloaded with the root's apt
# (mmdebstrap's, in its hooks) and unpacked into the root; depmod there
# shellcheck disable=SC2016
KERNEL_HOOK='set -e; export APT_CONFIG="$MMDEBSTRAP_APT_CONFIG"
img=$(apt-cache depends linux-image-amd64 | sed -n "s/^ *Depends: \(linux-image-[0-9].*-amd64\)$/\1/p" | head -1)
mkdir -p "$1/tmp/k"; (cd "$1/tmp/k" && apt-get -o APT::Sandbox::User=root download "$img"); dpkg-deb -x "$1"/tmp/k/*.deb "$1"
rm -rf "$1/tmp/k"; ver=${img#linux-image-}; chroot "$1" depmod "$ver"; [ -f "$1/boot/vmlinuz-$ver" ]'

[ "$(id -u)" = 0 ] || { echo "$prog: must run as root" >&2; exit 1; }
# the cache's key: what goes into the root
key=$(echo "$PKGS $KERNEL_HOOK $mirror $security" | md5sum | cut -c1-12)
if [ "$(cat "$root/.pmdavirt-key" 2>/dev/null)" = "$key" ]; then
	echo "$root"
	exit 0
fi
command -v mmdebstrap > /dev/null || { echo "$prog: needs mmdebstrap (scripts/setup-test.sh)" >&2; exit 2; }
mkdir -p "$roots"
tmp=$root.tmp
rm -rf "$tmp"
echo "$prog: making $root (key $key)" >&2
t0=$(date +%s)
# shellcheck disable=SC2086
mmdebstrap --variant=apt --include="$(echo $PKGS | tr ' ' ',')" --customize-hook="$KERNEL_HOOK" \
	trixie "$tmp" "deb $mirror trixie main" "deb $mirror trixie-updates main" \
	"deb $security trixie-security main" >&2
echo "$key" > "$tmp/.pmdavirt-key"
rm -rf "$root"
mv "$tmp" "$root"
echo "$prog: made $root in $(( $(date +%s) - t0 )) s" >&2
echo "$root"
