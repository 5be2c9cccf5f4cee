#!/bin/sh
# scripts/try-root.sh [--setup-test|--deb] bookworm|trixie -- a user's first
# steps on a fresh Debian 12 or 13: in a root made by mmdebstrap (cached as
# $PMDAVIRT_ROOTS/<suite>.tar, default /var/cache/pmdavirt/roots; no make
# in it), run README's first command, scripts/quickstart.sh (setup, build
# of the agent alone, make install, ./Install, the modules' status), twice
# (idempotent), and check that the agent is registered and answers, that no
# QA program was built and no kernel went into /boot. --setup-test: a
# developer's instead: scripts/setup-test.sh, then no libvirtd running, the
# test kernels cached, none in /boot. --deb: the Debian package's:
# scripts/setup.sh, build-essential, debhelper and lintian, make deb with
# /sys/kernel/btf hidden (a build chroot without the kernel's BTF), the
# package's contents, make lintian (no errors), apt install of the .deb,
# its Install and pminfo, apt remove. --test: --setup-test's steps, then
# what the tests need of that root alone: make all, the host tests that
# make check-trixie runs (its TRIXIE_TESTS, against the root's own pmcd)
# and one test of the VM tier (qa 101: the test VM boots the kernel
# setup-test cached in the root, over the root), each step timed. Prints
# every step; exits non-zero when one fails. Needs root, mmdebstrap,
# socat, unshare.
#
# The root runs in network, mount and PID namespaces of its own, so its
# pmcd neither meets this machine's (port 44321) nor is seen by pgrep.
# Its only way out is apt's: each http host of its sources resolves (its
# /etc/hosts) to a 127.0.0.N of its own loopback, where socat relays over
# a Unix socket to a socat in this machine's namespace, which connects to
# the real host.
set -eu
prog=try-root.sh
usage() { echo "usage: $prog [--setup-test|--test|--deb] bookworm|trixie" >&2; exit 2; }
[ $# -ge 1 ] || usage
roots=${PMDAVIRT_ROOTS:-/var/cache/pmdavirt/roots}
top=$(cd "$(dirname "$0")/.." && pwd)
self=$top/scripts/try-root.sh
. "$top/scripts/root-lib.sh"

# the apt hosts of the root's sources, one a line
apt_hosts()
{
	cat "$1"/etc/apt/sources.list "$1"/etc/apt/sources.list.d/* 2>/dev/null |
		sed -n 's|.*http://\([^/: ]*\)/.*|\1|p' | sort -u
}

# the agent's Install, in its directory; it answers once its modules
# attached (slow on a busy machine)
install_agent()
{
	cat <<'STEPS'
./Install < /dev/null
set +x
for i in $(seq 240); do
	pminfo -f virt.control.version 2>/dev/null | grep -q value && break
	sleep 0.5
done
set -x
STEPS
}

# what a user does, inside the root: README's first command
user_steps()
{
	cat <<'STEPS'
set -ex
cd /src/pmdavirt
if command -v make; then echo "try-root: FAIL: make before quickstart.sh"; exit 1; fi
./scripts/quickstart.sh
echo "try-root: quickstart.sh again (idempotent)"
./scripts/quickstart.sh > /tmp/again.out
grep -c 'inst \[' /tmp/again.out
pminfo -f pmcd.version virt.control.version
set +x
echo "try-root: $(. /etc/os-release; echo "$PRETTY_NAME"), kernel $(uname -r)"
echo "try-root: $(gcc --version | head -1); $(clang --version | head -1)"
echo "try-root: $(dpkg-query -W -f='${Package} ${Version}  ' pcp libbpf1 bpftool)"
echo "try-root: QA programs built: $(ls build/qa 2>/dev/null | wc -l)"
grep -q '^virt[[:space:]]' /etc/pcp/pmcd/pmcd.conf || { echo "try-root: FAIL: virt not in pmcd.conf"; exit 1; }
pminfo -f virt.control.module.status | grep -q value || {
	tail -20 "$(. /etc/pcp.conf; echo "$PCP_LOG_DIR")/pmcd/virt.log"; echo "try-root: FAIL: no module status"; exit 1; }
STEPS
	no_boot_kernel
}

# the Debian package, inside the root (README "Quick start", doc/packaging.md)
deb_steps()
{
	cat <<'STEPS'
set -ex
cd /src/pmdavirt
pmcd_up() { pminfo -v pmcd.version > /dev/null 2>&1 && echo "try-root: pmcd answers ($1)" || echo "try-root: pmcd does not answer ($1)"; }
./scripts/setup.sh
pmcd_up "after scripts/setup.sh"
# mount: to hide /sys/kernel/btf (not essential: mmdebstrap's apt variant lacks it)
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends build-essential debhelper lintian mount
pmcd_up "after build-essential debhelper lintian"
# a build chroot without the kernel's BTF (a buildd's): the build must not need it
mount -t tmpfs nobtf /sys/kernel/btf
if [ -e /sys/kernel/btf/vmlinux ]; then echo "try-root: FAIL: /sys/kernel/btf/vmlinux still there"; exit 1; fi
echo "try-root: make deb without /sys/kernel/btf/vmlinux"
make deb
umount /sys/kernel/btf
pmcd_up "after make deb"
dpkg-deb -c build/pcp-pmda-virt_*.deb | awk '{print $6}' | sed 's|^\./|/|' | LC_ALL=C sort > /tmp/contents
echo "try-root: package files: $(wc -l < /tmp/contents)"
for f in /usr/lib/pcp/pmdas/virt/pmdavirt /usr/lib/pcp/pmdas/virt/help.dir /usr/lib/pcp/pmdas/virt/help.pag \
	/var/lib/pcp/pmdas/virt/help.dir /usr/share/doc/pcp-pmda-virt/copyright /usr/share/man/man1/pmdavirt.1.gz; do
	grep -qx "$f" /tmp/contents || { echo "try-root: FAIL: $f not in the package"; exit 1; }
done
! grep -x '/usr/lib/pcp/pmdas/virt/help' /tmp/contents || { echo "try-root: FAIL: help text shipped"; exit 1; }
make lintian > /tmp/lintian.out 2>&1 || { cat /tmp/lintian.out; exit 1; }
pmcd_up "after make lintian"
cat /tmp/lintian.out
set +x
echo "try-root: lintian $(lintian --version | sed 's/.* v//'): $(grep -c '^E:' /tmp/lintian.out) errors, $(grep -c '^W:' /tmp/lintian.out) warnings"
set -x
DEBIAN_FRONTEND=noninteractive apt-get install -y ./build/pcp-pmda-virt_*.deb
pmcd_up "after apt-get install of the package"
ls -l /var/lib/pcp/pmdas/virt/pmdavirt
cd /var/lib/pcp/pmdas/virt
STEPS
	install_agent
	cat <<'STEPS'
pminfo -f virt.control.version virt.control.module.status
cd /
DEBIAN_FRONTEND=noninteractive apt-get remove -y pcp-pmda-virt
set +x
echo "try-root: $(. /etc/os-release; echo "$PRETTY_NAME"), kernel $(uname -r)"
echo "try-root: $(dpkg-query -W -f='${Package} ${Version}  ' pcp debhelper dpkg-dev lintian)"
grep -q '^virt[[:space:]]' /etc/pcp/pmcd/pmcd.conf && { echo "try-root: FAIL: virt still in pmcd.conf"; exit 1; }
[ ! -e /var/lib/pcp/pmdas/virt ] && [ ! -e /usr/lib/pcp/pmdas/virt ] || { echo "try-root: FAIL: agent files left"; exit 1; }
echo "try-root: package built, lintian-clean, installed, Installed, removed"
STEPS
	no_boot_kernel
}

# what a developer does before make check, inside the root
test_steps()
{
	cat <<'STEPS'
set -ex
cd /src/pmdavirt
./scripts/setup-test.sh
ls /var/cache/pmdavirt/kernels/*/boot/vmlinuz-* /var/cache/pmdavirt/kernels/*/lib/modules/*/build
set +x
if pgrep -a libvirtd; then echo "try-root: FAIL: libvirtd started"; exit 1; fi
echo "try-root: libvirtd not running"
STEPS
	no_boot_kernel
}

# the tests, inside the root after test_steps: the host tests of make
# check-trixie, then one VM test; a copy of the tree has no .git (qa 006
# lists the tree with git ls-files), so it is made one, as a clone is
run_tests_steps()
{
	echo "host_tests='$(sed -n 's/^TRIXIE_TESTS *?= *//p' "$top/GNUmakefile")'"
	cat <<'STEPS'
set -ex
cd /src/pmdavirt
t() { echo "try-root: $1: $(( $(date +%s) - $2 )) s, rc $3"; }
git init -q && git add -A && git -c user.name=try-root -c user.email=try-root@localhost commit -qm tree
t0=$(date +%s)
make -s -j2 all
t make $t0 0
set +e
t0=$(date +%s)
qa/check $host_tests
rc=$?
t "host tests $host_tests" $t0 $rc
t0=$(date +%s)
qa/check 101
vrc=$?
t "VM test 101" $t0 $vrc
set -e
[ $rc = 0 ] && [ $vrc = 0 ] || { echo "try-root: FAIL: tests"; exit 1; }
echo "try-root: tests passed"
STEPS
}

# --test: the test tier set up, then its tests
all_test_steps()
{
	cat <<'STEPS'
t_setup=$(date +%s)
STEPS
	test_steps
	cat <<'STEPS'
echo "try-root: setup-test.sh and its checks: $(( $(date +%s) - t_setup )) s"
STEPS
	run_tests_steps
}

no_boot_kernel()
{
	cat <<'STEPS'
if ls /boot/vmlinuz* 2>/dev/null; then echo "try-root: FAIL: a kernel in /boot"; exit 1; fi
echo "try-root: no /boot/vmlinuz*"
STEPS
}

# in the new namespaces: loopback, the relays, the file systems, the steps
inside()
{
	root=$1 work=$2 steps=$3
	ip link set lo up
	n=1
	for h in $(apt_hosts "$root"); do
		n=$((n + 1))
		socat TCP-LISTEN:80,bind=127.0.0.$n,reuseaddr,fork UNIX-CONNECT:"$work/relay.$h" &
	done
	root_mounts "$root"
	# this machine's /proc: the pids BPF programs see (qa 006 reads them
	# from VIRT_HOST_PROC/self, as in scripts/in-root.sh)
	mkdir -p "$root/run/host-proc" && mount --bind /proc "$root/run/host-proc"
	$steps > "$root/tmp/steps.sh"
	root_exec "$root" env VIRT_HOST_PROC=/run/host-proc /bin/sh /tmp/steps.sh
}

# the root's tarball, made once
tarball()
{
	t=$roots/$1.tar
	if [ ! -f "$t" ]; then
		mkdir -p "$roots"
		echo "$prog: making $t" >&2
		mmdebstrap --variant=apt --format=tar "$1" "$roots/$1.tmp.tar" >&2
		mv "$roots/$1.tmp.tar" "$t"
	fi
	echo "$t"
}

if [ "$1" = --inside ]; then
	inside "$2" "$3" "$4"
	exit
fi
steps=user_steps
case "$1" in
--setup-test) steps=test_steps; shift ;;
--test) steps=all_test_steps; shift ;;
--deb) steps=deb_steps; shift ;;
esac
case "${1:-}" in bookworm|trixie) suite=$1 ;; *) usage ;; esac
[ "$(id -u)" = 0 ] || { echo "$prog: must run as root" >&2; exit 1; }
for c in mmdebstrap socat unshare; do
	command -v $c > /dev/null || { echo "$prog: needs $c (scripts/setup-test.sh)" >&2; exit 2; }
done
tar=$(tarball "$suite")
work=$(mktemp -d /var/tmp/pmdavirt-try.XXXXXX)
relays=""
cleanup()
{
	for p in $relays; do kill "$p" 2>/dev/null || true; done
	[ -n "${PMDAVIRT_TRY_KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
root=$work/root
mkdir "$root"
tar -C "$root" --numeric-owner -xpf "$tar"
mkdir -p "$root/src/pmdavirt"
tar -C "$top" --exclude=./.git --exclude=./build --exclude=./build-asan -cf - . | tar -C "$root/src/pmdavirt" -xf -
root_hosts "$root"
n=1
for h in $(apt_hosts "$root"); do
	n=$((n + 1))
	printf '127.0.0.%s\t%s\n' "$n" "$h" >> "$root/etc/hosts"
	socat UNIX-LISTEN:"$work/relay.$h",fork TCP:"$h":80 &
	relays="$relays $!"
done
echo "$prog: $suite root in $root, source from $top"
unshare --net --mount --pid --fork --kill-child "$self" --inside "$root" "$work" "$steps"
