#!/bin/bash
# The scheduler hooks' code as the kernel runs it, run inside the test VM
# (qa/vm/run bench/schedcode.sh; bench/run schedcode): the kvm family with
# sched = true and the empty floor loaded, each sched program's xlated code
# and its x86-64 machine code (read by gdb from /proc/kcore: Debian's
# bpftool has no disassembler) to build/xlated-sched-<release>/,
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
# jited ID: the program's x86-64 code, read by gdb from /proc/kcore at its
# kallsyms address (bpf_prog_<tag>_...), its length from bpftool
jited()
{
	local tag len addr
	tag=$(bpftool prog show id $1 | sed -n '1s/.* tag \([0-9a-f]*\).*/\1/p')
	len=$(bpftool prog show id $1 | sed -n 's/.* jited \([0-9]*\)B.*/\1/p')
	addr=$(awk -v t="bpf_prog_$tag" 'index($3, t) == 1 {print $1; exit}' /proc/kallsyms)
	[ -n "$addr" ] && [ -n "$len" ] || { echo "no jited image of $1"; return; }
	gdb -batch -ex 'set architecture i386:x86-64' -ex "disassemble 0x$addr,+$len" -c /proc/kcore 2>&1 | grep -v '^The target architecture'
}

dump()
{
	local id n
	for id in $(new_ids); do
		n=$(prog_fullname $id)
		case $n in *sched*) ;; *) continue ;; esac
		bpftool prog dump xlated id $id > $d/$n.xlated
		jited $id > $d/$n.jited
		echo "$n: $(grep -c ' call ' $d/$n.xlated) helper calls, $(grep -c '^ *[0-9]*: (' $d/$n.xlated) xlated instructions, $(grep -c '^ *0x' $d/$n.jited) x86 instructions (whole program)"
	done
}
start_empty sched && dump
kill $pid; wait $pid 2>/dev/null
assert_clean "after the empty programs"
start_agent kvm "sched = true" && dump
kill $pid; wait $pid 2>/dev/null
echo "dumps in $d"
rm -rf $work
