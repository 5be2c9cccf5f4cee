#!/bin/bash
# bench/fleetrehost.sh ARCHIVE VMS HOST OUT: a copy of ARCHIVE as if host
# HOST had logged it (bench/fleet.sh, qa 431): pmlogrewrite with
# "global { hostname -> HOST }" and the instances of each VM named in file
# VMS (one name a line) renamed "HOST-<name>..." in every instance domain
# whose instances start with it: "<vm>", "<vm>/...", "<vm>::..." (a
# histogram's buckets spell the name with '_' for '-': both spellings)
set -u
[ $# -eq 4 ] || { echo "usage: fleetrehost.sh ARCHIVE VMS HOST OUT" >&2; exit 2; }
arch=$1 vms=$2 host=$3 out=$4
[ -r "$vms" ] || { echo "fleetrehost.sh: cannot read VM list $vms" >&2; exit 2; }
case "$host" in *[!A-Za-z0-9_.-]*|'') echo "fleetrehost.sh: bad host name '$host'" >&2; exit 2 ;; esac
set +u; . /etc/pcp.env; set -u
rewrite=$(command -v pmlogrewrite || echo "$PCP_BINADM_DIR/pmlogrewrite")
cfg=$(mktemp)
trap 'rm -f $cfg' EXIT
# PCP 6.0.3's pmlogrewrite takes the hostname unquoted only
printf 'global {\n\thostname -> %s\n}\n' "$host" > $cfg
pmdumplog -i "$arch" | awk -v h="$host" -v vms="$vms" '
	BEGIN { while ((getline v < vms) > 0) { vm[v] = 1; u = v; gsub("-", "_", u); vm[u] = 1 } }
	/^InDom: / { indom = $2; next }
	/^ +[0-9]+ or "/ {
		n = $0; sub(/^ +[0-9]+ or "/, "", n); sub(/"$/, "", n)
		p = n; sub(/[\/:].*/, "", p)
		if ((p in vm) && !((indom, n) in done)) {
			done[indom, n] = 1
			rule[indom] = rule[indom] sprintf("\tiname \"%s\" -> \"%s-%s\"\n", n, h, n)
		}
	}
	END { for (i in rule) printf "indom %s {\n%s}\n", i, rule[i] }' >> $cfg
rm -f "$out".*
$rewrite -c $cfg "$arch" "$out" || { echo "fleetrehost.sh: pmlogrewrite of $arch for $host failed" >&2; exit 1; }
