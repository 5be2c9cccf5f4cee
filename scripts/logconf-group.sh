#!/bin/sh
# logconf-group.sh GROUP: the pmlogconf group GROUP (pcp/pmlogconf/GROUP.head)
# on stdout: its header, then the numeric metrics of its family's table
# (metrics/FAMILY.def, FAMILY = GROUP up to the first '-'), except event
# parameters (logged inside their event records).
# An opt-in group's header names the metrics it takes, one extended regex
# over the name below "virt." per "# takes:" line: the group logs those; the
# family's own group (GROUP = FAMILY) logs the rest, so no metric is in two
# groups and a new metric lands in the default group unless a regex takes it.
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
grep -v 'PM_TYPE_STRING, [A-Z_]*, PM_SEM_DISCRETE\|, EVENT_PARAM,' "metrics/$family.def" |
	sed -n 's/^VIRT_METRIC([A-Z]*, [A-Z0-9_]*, "\([^"]*\)".*/\1/p' |
	RE=${re:-^$} MODE=$mode awk '(ENVIRON["MODE"] == "keep") == ($0 ~ ENVIRON["RE"]) { print "\tvirt." $0 }'
