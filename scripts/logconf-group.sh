#!/bin/sh
# logconf-group.sh GROUP: the pmlogconf group GROUP (pcp/pmlogconf/GROUP.head)
# on stdout: its header, then the numeric metrics of its family's table
# (metrics/FAMILY.def, FAMILY = GROUP up to the first '-'), except event
# parameters (logged inside their event records).
# An opt-in group's header names the metrics it takes, one extended regex
# over the name below "virt." per "# takes:" line: the group logs those; the
# family's own group (GROUP = FAMILY) logs the rest, so no metric is in two
# groups and a new metric lands in the default group unless a regex takes it.
# A metric a static group lists (pcp/pmlogconf/<group> without .head) is left
# out of its family's group too.
set -eu
group=$1
family=${group%%-*}
head=pcp/pmlogconf/$group.head
cat "$head"
echo
takes()
{
	sed -n 's/^# takes: //p' "$@" 2>/dev/null | paste -sd '|' -
}
if [ "$group" = "$family" ]; then
	mode=drop
	# shellcheck disable=SC2046 # a family without opt-in groups has none
	re=$(takes $(ls pcp/pmlogconf/"$family"-*.head 2>/dev/null))
else
	mode=keep
	re=$(takes "$head")
	[ -n "$re" ] || { echo "$head: an opt-in group without a '# takes:' line" >&2; exit 1; }
fi
static=$(for f in pcp/pmlogconf/*; do
	case $f in *.head) ;; *) sed -n 's/^[[:space:]]*virt\.\([a-z0-9_.]*\).*/\1/p' "$f" ;; esac
done | paste -sd ' ' -)
grep -v 'PM_TYPE_STRING, [A-Z_]*, PM_SEM_DISCRETE\|, EVENT_PARAM,' "metrics/$family.def" |
	sed -n 's/^VIRT_METRIC([A-Z]*, [A-Z0-9_]*, "\([^"]*\)".*/\1/p' |
	RE=${re:-^$} MODE=$mode STATIC="$static" awk '
		BEGIN { n = split(ENVIRON["STATIC"], s, " "); for (i = 1; i <= n; i++) listed[s[i]] = 1 }
		ENVIRON["MODE"] == "drop" && ($0 in listed) { next }
		(ENVIRON["MODE"] == "keep") == ($0 ~ ENVIRON["RE"]) { print "\tvirt." $0 }'
