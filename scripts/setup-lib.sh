# Shared by scripts/setup.sh and scripts/setup-test.sh (sourced; POSIX sh).
#
# Maintainer scripts may call `systemctl daemon-reload` (pcp) or start
# daemons (pcp, libvirt-daemon-system); without systemd as PID 1
# (containers, Firecracker guests) systemctl fails, and on a shared
# machine a test dependency's daemon must not start. So while dpkg
# configures we hide systemctl and put a policy-rc.d in place that denies
# every start (invoke-rc.d, deb-systemd-invoke honour it); setup.sh starts
# pmcd itself afterwards.

[ "$(id -u)" = 0 ] || { echo "${0##*/}: must run as root" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
APT="apt-get -q -o DPkg::Lock::Timeout=600"

# the Debian release: bookworm (12) or trixie (13); anything else is refused
debian_release()
{
	codename=$(. /etc/os-release 2>/dev/null; echo "${VERSION_CODENAME:-}")
	case "$codename" in
	bookworm|trixie) echo "$codename" ;;
	*) echo "${0##*/}: unsupported release '${codename:-unknown}' (Debian 12 bookworm or 13 trixie)" >&2; exit 1 ;;
	esac
}

installed() { dpkg-query -W -f='${Status}\n' "$1" 2>/dev/null | grep -q '^install ok installed'; }

missing_of()
{
	m=""
	for p in "$@"; do installed "$p" || m="$m $p"; done
	echo "${m# }"
}

# hide_daemons [systemctl]: deny starts; with "systemctl" also hide it. A
# new systemd may be unpacked during the install, so systemctl is hidden
# only around `dpkg --configure -a`; /bin and /usr/bin are separate on
# non-merged-/usr.
hidden="" policy=""
unhide_daemons()
{
	for f in $hidden; do mv "$f.pmdavirt-hidden" "$f"; done
	hidden=""
	[ -z "$policy" ] || rm -f "$policy"
	policy=""
}
hide_daemons()
{
	trap unhide_daemons EXIT
	trap 'exit 130' INT TERM HUP
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		policy=/usr/sbin/policy-rc.d
		printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod 755 "$policy"
	fi
	[ "${1:-}" = systemctl ] && [ ! -d /run/systemd/system ] || return 0
	for f in /usr/bin/systemctl /bin/systemctl; do
		if [ -f "$f" ] && [ ! -L "$f" ]; then
			mv "$f" "$f.pmdavirt-hidden"; hidden="$hidden $f"
		fi
	done
}
configure_pending()
{
	hide_daemons systemctl
	dpkg --configure -a
	unhide_daemons
}

# install_pkgs PKG...: install the missing ones; fail naming any that
# did not end up installed
install_pkgs()
{
	missing=$(missing_of "$@")
	if [ -z "$missing" ]; then
		echo "${0##*/}: all packages present"
		if dpkg --audit 2>/dev/null | grep -q .; then configure_pending; fi
		return 0
	fi
	echo "${0##*/}: installing: $missing"
	$APT update
	# a postinst failing on a hidden systemctl fails apt-get; dpkg
	# --configure -a then finishes with systemctl hidden
	hide_daemons
	# shellcheck disable=SC2086
	$APT install -y --no-install-recommends $missing || true
	unhide_daemons
	configure_pending
	missing=$(missing_of "$@")
	[ -z "$missing" ] || { echo "${0##*/}: not installed: $missing" >&2; exit 1; }
}
