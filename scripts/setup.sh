#!/bin/sh
# Install what building, installing and running pmdavirt needs on Debian 12
# (bookworm) or 13 (trixie), and start pmcd. Nothing for the tests: that is
# scripts/setup-test.sh (make setup-test). Idempotent. Needs root.
set -eu
. "$(dirname "$0")/setup-lib.sh"

# build: the agent, its modules and BPF objects (vmlinux.h is in the tree:
# bpf/vmlinux/); install and run: pcp (pmcd, newhelp, pmdaproc.sh, pmrep);
# passwd: trixie's pcp postinst calls groupadd without depending on it
PKGS="pcp python3-pcp libpcp3-dev libpcp-pmda3-dev passwd
 libbpf-dev bpftool clang libelf-dev zlib1g-dev make gcc binutils
 procps"

debian_release > /dev/null
# shellcheck disable=SC2086
install_pkgs $PKGS

# pmcd: start through the init script when not running (works without systemd)
if ! pgrep -x pmcd >/dev/null 2>&1; then
	/etc/init.d/pmcd start || { echo "setup.sh: pmcd failed to start" >&2; exit 1; }
fi
echo "setup.sh: done"
