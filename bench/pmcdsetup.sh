# shellcheck shell=bash disable=SC2154 # top and b: the caller's
# Shared by the benchmarks that run the agent under the test VM's pmcd
# (scale.sh, churn.sh, fleetarch.sh), sourced inside the test VM once top
# (the tree) and b (its build) are set: PCP's environment, the build's
# workloads on PATH, kvm_amd (exit 77 without it), a scratch dir work, and
# a cleanup at exit that kills the caller's guests (pids in guests) and
# pmlogger (pid in logger) and removes the agent. pmcd_agent_install
# installs the build and the agent with the build's virt.conf, waits for
# two families to be active and sets agent (its pid), or says why and
# fails.

export PATH=$b/qa:$PATH
set +u; . /etc/pcp.env; set -u
export PCP_PYTHON_PROG=/usr/bin/python3
modprobe kvm_amd || exit 77
work=$(mktemp -d)
guests=() logger=
cleanup()
{
	[ ${#guests[@]} -gt 0 ] && kill "${guests[@]}" 2>/dev/null
	[ -n "$logger" ] && kill "$logger" 2>/dev/null
	( cd "$PCP_PMDAS_DIR/virt" && ./Remove < /dev/null ) > /dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT

pmcd_agent_install()
{
	pgrep -x pmcd > /dev/null || /etc/init.d/pmcd start > /dev/null 2>&1
	make -C "$top" -s install > /dev/null
	cp "$b/virt.conf" "$PCP_SYSCONF_DIR/virt/virt.conf"
	( cd "$PCP_PMDAS_DIR/virt" && ./Install < /dev/null ) > "$work/install" 2>&1 ||
		{ cat "$work/install"; return 1; }
	for _ in $(seq 1 120); do
		[ "$(pminfo -f virt.control.module.status 2>/dev/null | grep -c '"active"')" -ge 2 ] && break
		sleep 0.5
	done
	agent=$(pgrep -x pmdavirt)
	if [ -z "$agent" ] || ! pminfo virt.control.version > /dev/null 2>&1; then
		echo "bench: pmcd or the agent did not come up; Install said:"; tail -5 "$work/install"
		tail -5 "$PCP_LOG_DIR/pmcd/pmcd.log" "$PCP_LOG_DIR/pmcd/virt.log" 2>/dev/null
		return 1
	fi
}
