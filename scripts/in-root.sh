#!/bin/sh
# scripts/in-root.sh ROOT COMMAND... -- run COMMAND in the Debian root ROOT
# (scripts/trixie-root.sh makes one), in its own network, mount and PID
# namespaces, as root, in the caller's directory: the git tree of that
# directory is bound into ROOT at the same path (writes there reach this
# machine: the build directories; and a worktree's repository), everything else ROOT has is seen
# through an overlay whose upper layer is thrown away afterwards. So
# ROOT's pmcd, started by a test, neither meets this machine's (port
# 44321) nor outlives the command, and ROOT stays as it was made. No
# network but loopback. VIRT_HOST_PROC names this machine's /proc there
# (the pids BPF programs see are this machine's). Exits with COMMAND's status. Needs root, unshare.
set -eu
prog=in-root.sh
top=$(cd "$(dirname "$0")/.." && pwd)
self=$top/scripts/in-root.sh
. "$top/scripts/root-lib.sh"

if [ "${1:-}" = --inside ]; then
	lower=$2 work=$3 tree=$4 gitdir=$5 cwd=$6; shift 6
	mount --make-rprivate /
	mkdir -p "$work/upper" "$work/work" "$work/merged"
	mount -t overlay overlay -o "lowerdir=$lower,upperdir=$work/upper,workdir=$work/work" "$work/merged"
	r=$work/merged
	root_mounts "$r"
	for d in "$tree" $gitdir; do
		mkdir -p "$r$d" && mount --bind "$d" "$r$d"
	done
	root_hosts "$r"
	# this machine's /proc (still ours: the new one is the root's): the
	# pids BPF programs see, which a test reads from VIRT_HOST_PROC/self
	mkdir -p "$r/run/host-proc" && mount --bind /proc "$r/run/host-proc"
	# git in the root: the tree is another user's for its safe.directory
	printf '[safe]\n\tdirectory = *\n' >> "$r/etc/gitconfig"
	# shellcheck disable=SC2016
	root_exec "$r" /bin/sh -c 'cd "$1" && shift && exec env VIRT_HOST_PROC=/run/host-proc "$@"' in-root "$cwd" "$@"
	exit
fi
[ $# -ge 2 ] || { echo "usage: $prog ROOT COMMAND..." >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "$prog: must run as root" >&2; exit 1; }
root=$(cd "$1" && pwd -P); shift
[ -x "$root/bin/sh" ] || { echo "$prog: $root: not a root" >&2; exit 2; }
cwd=$(pwd -P)
tree=$(git rev-parse --show-toplevel 2>/dev/null || echo "$cwd")
# a worktree's repository (git ls-files in qa 006) is elsewhere
gitdir=$(cd "$tree" && git rev-parse --path-format=absolute --git-common-dir 2>/dev/null) || gitdir=""
case "$gitdir" in "$tree"/*) gitdir="" ;; esac
work=$(mktemp -d /var/tmp/pmdavirt-in-root.XXXXXX)
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM HUP
rc=0
unshare --net --mount --pid --fork --kill-child "$self" --inside "$root" "$work" "$tree" "$gitdir" "$cwd" "$@" || rc=$?
exit $rc
