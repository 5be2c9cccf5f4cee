#!/bin/sh
# Command 1 (README): on Debian 12 or 13, as root, from the source tree:
#
#   sudo ./scripts/quickstart.sh
#
# installs what building and running the agent needs and starts pmcd
# (scripts/setup.sh), builds the agent alone (make agent: not the QA
# programs), installs it (make install), registers it with pmcd (./Install
# in $PCP_PMDAS_DIR/virt) and prints the modules' status. Idempotent: a
# second run rebuilds what changed and registers the agent again (a
# local virt.conf stays: make install writes it only where there is none).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/setup.sh"
cd "$top"
make -j"$(nproc)" agent
make install
pmdas=$(. /etc/pcp.conf; echo "$PCP_PMDAS_DIR")
(cd "$pmdas/virt" && ./Install < /dev/null)
# pmcd answers for the agent once its modules attached (slow on a busy host)
i=0
until pminfo -f virt.control.version 2>/dev/null | grep -q value; do
	i=$((i + 1))
	[ $i -le 120 ] || { echo "quickstart.sh: the agent does not answer: see $(. /etc/pcp.conf; echo "$PCP_LOG_DIR")/pmcd/virt.log" >&2; exit 1; }
	sleep 0.5
done
pminfo -f virt.control.module.status
