# Sourced by the kvm benches (kvm.sh, accounting.sh, blocks.sh) inside the
# test VM, after they set `top`: the kvm module, the test guest on PATH, a
# warm-up run, run_ns (wall ns of N cpuid exits), a scratch directory and
# bench/lib.sh.
b=$top/build
N=${BENCH_EXITS:-20000}
export PATH=$b/qa:$b/bench:$PATH
modprobe kvm_amd || exit 77
work=$(mktemp -d)
kvmguest -q -c 1000 >/dev/null		# warm-up
run_ns() { kvmguest -c "$N" | awk '$1 == "run_ns" {print $2}'; }
pid=""
. "$top/bench/lib.sh"
