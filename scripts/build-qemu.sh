#!/bin/sh
# Build the QEMU of the qemu family's QA tier: Debian's own qemu source
# package (the version installed, from deb-src), x86_64-softmmu only, with
# the dtrace trace backend (USDT probes in the binary) and symbols, so the
# family can attach by USDT and by symbol. Debian's packaged binary is
# stripped and has no USDT probes; this one differs only in those two.
# Symbols here are the ELF symbol table, which an unstripped build keeps:
# no DWARF (the family reads none, and -g slows the build).
#
#   scripts/build-qemu.sh [DIR]     (default $PMDAVIRT_QEMU or
#                                    /var/cache/pmdavirt/qemu)
#
# Cached: DIR/<version>-<hash of this script>/bin/qemu-system-x86_64 is
# reused while neither the installed qemu-system-x86's source version nor
# this script changes; a second run waits for one under way. Prints the binary's path
# as its last line. Needs root (apt-get), deb-src access and ~2.5 GB of disk.
set -eu
dir=${1:-${PMDAVIRT_QEMU:-/var/cache/pmdavirt/qemu}}
export DEBIAN_FRONTEND=noninteractive

# the source version of the installed qemu-system-x86 (binNMU suffix off)
ver=$(dpkg-query -W -f='${source:Version}' qemu-system-x86 2>/dev/null || true)
[ -n "$ver" ] || { echo "build-qemu.sh: qemu-system-x86 is not installed" >&2; exit 1; }
uver=$(echo "$ver" | sed 's/^[0-9]*://')
# a new version of this script (other configure options) builds anew
out=$dir/$uver-$(md5sum < "$0" | cut -c1-8)
bin=$out/bin/qemu-system-x86_64
# one build at a time: make check starts one in the background at its
# start, and check-qemu's call waits here for it, then finds it cached
mkdir -p "$dir"
exec 9> "$dir/.lock"
flock 9
if [ -x "$bin" ] && [ -f "$out/.done" ]; then
	echo "build-qemu.sh: cached $bin" >&2
	echo "$bin"
	exit 0
fi

t0=$(date +%s)
if ! apt-cache showsrc qemu 2>/dev/null | grep -q '^Package: qemu'; then
	src=/etc/apt/sources.list.d/pmdavirt-deb-src.sources
	sed -n '/^Types: deb$/,/^$/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null \
		| sed 's/^Types: deb$/Types: deb-src/' > "$src"
	[ -s "$src" ] || printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' > "$src"
	apt-get update -q
fi
# what x86_64-softmmu with slirp and the dtrace backend needs (not all of
# qemu's Build-Depends: no GUI, audio, storage backends or docs)
apt-get install -y -q --no-install-recommends dpkg-dev ninja-build meson python3-venv \
	libglib2.0-dev libpixman-1-dev libslirp-dev libfdt-dev zlib1g-dev systemtap-sdt-dev \
	libcap-ng-dev libattr1-dev flex bison > /dev/null

work=$dir/build-$uver
rm -rf "$dir"/*		# older builds: one is kept
mkdir -p "$work"
cd "$work"
apt-get source -q --download-only "qemu=$ver" > /dev/null 2>&1
dpkg-source -x qemu_*.dsc src > /dev/null 2>&1
mkdir build
cd build
# Debian's python3 first (not a pyenv one): Debian's meson runs under it
PATH=/usr/bin:/bin:$PATH
../src/configure --prefix="$out" --target-list=x86_64-softmmu \
	--enable-trace-backends=dtrace --enable-slirp --enable-virtfs --disable-debug-info \
	--disable-docs --disable-werror --disable-install-blobs --disable-tools \
	--disable-guest-agent --disable-gtk --disable-sdl --disable-vnc --disable-opengl \
	--disable-spice --disable-xen --disable-capstone --disable-curl --disable-libusb \
	--disable-linux-io-uring --disable-glusterfs --disable-rbd --disable-libiscsi \
	--disable-libnfs --disable-bpf --disable-pa --disable-alsa --disable-jack \
	--disable-oss --disable-sndio --disable-virglrenderer > ../configure.log 2>&1 \
	|| { tail -30 ../configure.log >&2; exit 1; }
ninja qemu-system-x86_64 > ../build.log 2>&1 || { tail -30 ../build.log >&2; exit 1; }
mkdir -p "$out/bin"
cp qemu-system-x86_64 "$bin"
cd /
rm -rf "$work"
echo "$ver built in $(( $(date +%s) - t0 ))s" > "$out/.done"
echo "build-qemu.sh: $(cat "$out/.done")" >&2
echo "$bin"
