#!/bin/sh
# bench/fleetvalued.sh ARCHIVE: the metrics with a value in ARCHIVE, one a
# line, sorted (bench/fleet.sh's and qa 431's witness of pmseries' series
# per host). pmdumplog prints "PMID (name): value V", "PMID (name): inst
# [...] value V", or "PMID (name):" then a line per instance; a metric
# with "No values returned!" or an error in every record is left out.
[ $# -eq 1 ] || { echo "usage: fleetvalued.sh ARCHIVE" >&2; exit 2; }
pmdumplog -z "$1" | awk '
	/^    [0-9]+\.[0-9]+\.[0-9]+ \(/ {
		n = $2; gsub(/[():]/, "", n); pend = ""
		if ($0 ~ /\): (value |inst \[)/) v[n] = 1
		else if ($0 ~ /\):$/) pend = n
		next
	}
	pend != "" && /^ +inst \[/ { v[pend] = 1 }
	{ pend = "" }
	END { for (k in v) print k }' | sort
