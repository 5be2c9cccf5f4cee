#!/bin/bash
# The scheduler hooks' code as the kernel runs it, run inside the test VM
# (qa/vm/run bench/schedcode.sh; bench/run schedcode): the kvm family with
# sched = true and the empty floor loaded, each sched program's xlated code
# and its x86-64 machine code (bpftool's raw jited image through objdump:
# Debian's bpftool has no disassembler) to build/xlated-sched-<release>/,
# and the helper calls in each. The filtered path is read off these by
# hand (bench/RESULTS.md).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
b=$top/build
export PATH=$b/bench:$b/qa:$PATH
work=$(mktemp -d)
pid=""
. "$top/bench/lib.sh"
d=$b/xlated-sched-$(uname -r)
mkdir -p $d
dump()
{
	local id n
	for id in $(new_ids); do
		n=$(prog_fullname $id)
		case $n in *sched*) ;; *) continue ;; esac
		bpftool prog dump xlated id $id > $d/$n.xlated
		bpftool prog dump jited id $id file $d/$n.bin > /dev/null
		objdump -D -b binary -m i386:x86-64 $d/$n.bin | sed -n '/<.data>:/,$p' > $d/$n.jited
		echo "$n: $(grep -c ' call ' $d/$n.xlated) helper calls, $(grep -c '^ *[0-9]*: (' $d/$n.xlated) xlated instructions, $(grep -c '^ *[0-9a-f]*:' $d/$n.jited) x86 instructions (whole program)"
	done
}
start_empty sched && dump
kill $pid; wait $pid 2>/dev/null
assert_clean "after the empty programs"
start_agent kvm "sched = true" && dump
kill $pid; wait $pid 2>/dev/null
echo "dumps in $d"
rm -rf $work
