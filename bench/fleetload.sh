#!/bin/bash
# bench/fleetload.sh ARCHIVE DIR [FULL [TOTAL [SHORT]]]: the pmseries half
# of bench/fleet.sh, run in Debian 13's root (scripts/in-root.sh: PCP
# 6.3.8, Valkey 8.1, a network of its own). ARCHIVE is one host's archive
# (bench/fleetarch.sh), DIR scratch space (the re-hosted copies) and where
# the tables go.
#  - re-host: copy k is host hKKK, its VMs hKKK-<vm> (bench/fleetrehost.sh);
#    hosts 1..FULL (default 10) get the whole archive, hosts FULL+1..TOTAL
#    (default 100) its first SHORT samples (default 2: the metadata of every
#    series and instance, few values), because pmseries --load takes about
#    a second per sample of a 50-VM host here (100 whole hours: 80 min)
#  - valkey-server (no persistence) and pmproxy (pmseries on, discovery
#    off) in front of it; the copies loaded with `pmseries --load`, one
#    after another
#  - at FULL hosts and at TOTAL hosts: load time, Valkey's used_memory
#    (INFO memory), series of one host (pmseries "<top>.*{hostname == H}"
#    over the archive's top-level names, against the metrics with values
#    in the archive: pmdumplog), and every query of the Valkey dashboard
#    through pmproxy as grafana-pcp makes it (bench/fleetquery.py), for
#    host h005 (a whole one), VM "All" and one VM picked
#  - Valkey's bytes per host (series, instances, names) and per sample of
#    one host (values), solved from the two sizes; per host-day = the one
#    plus 1440 of the other
set -u
arch=${1:?usage: fleetload.sh ARCHIVE DIR [SIZES]} dir=${2:?usage: fleetload.sh ARCHIVE DIR [SIZES]}
top=$(cd "$(dirname "$0")/.." && pwd)
FULL=${3:-10} TOTAL=${4:-100} SHORT=${5:-2}
mkdir -p $dir/hosts
vport=6379 pport=44322
url=http://127.0.0.1:$pport

echo "== re-host: $FULL whole copies, $((TOTAL - FULL)) of the first $SHORT samples"
sed 's/[^A-Za-z0-9_.-]/_/g' $arch.vms > $dir/vms
# the first SHORT samples (10 s apart, the first a few seconds in)
rm -f $dir/short.*
pmlogextract -T "$((SHORT * 10 + 5))sec" $arch $dir/short || exit 1
# copies of an earlier run with the same archive and sizes are kept
stamp="$(stat -c %Y $arch.0) $FULL $SHORT"
[ "$(cat $dir/hosts/stamp 2>/dev/null)" = "$stamp" ] || rm -f $dir/hosts/*
t0=$(date +%s)
for k in $(seq 1 $TOTAL); do
	h=$(printf 'h%03d' $k)
	[ -s $dir/hosts/$h.meta ] && continue
	src=$arch
	[ $k -gt $FULL ] && src=$dir/short
	$top/bench/fleetrehost.sh $src $dir/vms $h $dir/hosts/$h || exit 1
done
echo "$stamp" > $dir/hosts/stamp
echo "re-hosted in $(( $(date +%s) - t0 )) s; instances named by h001's VMs: $(pmdumplog -i $dir/hosts/h001 | sed -n 's/.* or "\(h001-[^"]*\)"$/\1/p' | sort -u | wc -l)"

valkey-server --port $vport --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --dir $dir \
	--pidfile $dir/valkey.pid --logfile $dir/valkey.log > /dev/null || exit 1
printf '[pmproxy]\npcp.enabled = false\nhttp.enabled = true\nredis.enabled = true\nsecure.enabled = false\n[redis]\nenabled = true\nservers = localhost:%s\n[discover]\nenabled = false\n[pmsearch]\nenabled = false\n[pmseries]\nenabled = true\n' \
	$vport > $dir/pmproxy.conf
/usr/lib/pcp/bin/pmproxy -f -A -i 127.0.0.1 -p $pport -s $dir/pmproxy.socket -c $dir/pmproxy.conf -l $dir/pmproxy.log &
proxy=$!
trap 'kill $proxy 2>/dev/null; valkey-cli -p $vport shutdown nosave > /dev/null 2>&1' EXIT
for _ in $(seq 1 60); do curl -sf $url/series/ping > /dev/null && break; sleep 0.5; done
mem() { valkey-cli -p $vport info memory | sed -n 's/^used_memory:\([0-9]*\).*/\1/p'; }
mem0=$(mem)

# the archive itself: samples, metrics with values (the witness of the
# series per host), top-level names, span
$top/bench/fleetvalued.sh $arch > $dir/metrics.witness
# every top-level name of the archive (pmseries' globs need a prefix)
pminfo -a $arch | cut -d. -f1 | sort -u > $dir/tops
echo "archive: $(pmdumplog -z $arch virt.kvm.vm.exits | grep -cE '^[0-9]{2}:') samples, $(wc -l < $dir/metrics.witness) metrics with values, $(wc -l < $arch.vms) VMs;" \
	"$(stat -c %s $arch.0) B data, $(stat -c %s $arch.meta) B meta"
# epoch seconds of the first and last record (pmproxy's /series/values
# takes seconds)
first=$(/usr/bin/python3 -c '
import sys
from pcp import pmapi
import cpmapi as c
ctx = pmapi.pmContext(c.PM_CONTEXT_ARCHIVE, sys.argv[1])
l = ctx.pmGetArchiveLabel()
e = ctx.pmGetArchiveEnd()
print(int(l.start), int(e) + 1)' $arch) || exit 1
set -- $first; a_end=$2

# series_of HOST: the metric names of HOST's series in pmseries
series_of()
{
	local t
	for t in $(cat $dir/tops); do pmseries -p $vport "$t.*{hostname == \"$1\"}"; done |
		grep -E '^[0-9a-f]{40}$' > $dir/series.$1
	[ -s $dir/series.$1 ] || return 0
	# shellcheck disable=SC2046 # one argument per series
	pmseries -p $vport -m $(cat $dir/series.$1) | sed -n 's/^ *Metric: //p' | sort -u
}

# the samples of a whole copy: records with the agent's per-VM exits
samples=$(pmdumplog -z $arch virt.kvm.vm.exits | grep -cE '^[0-9]{2}:')
short=$(pmdumplog -z $dir/short virt.kvm.vm.exits | grep -cE '^[0-9]{2}:')
: > $dir/table
loaded=0 load_s=0 pick=$(printf "h%03d" $(( FULL < 5 ? FULL : 5 )))
vm=$pick-$(head -1 $dir/vms)
for n in $FULL $TOTAL; do
	t0=$(date +%s%N)
	for k in $(seq $((loaded + 1)) $n); do
		h=$(printf 'h%03d' $k)
		pmseries -p $vport --load $dir/hosts/$h > $dir/load.log 2>&1 || { cat $dir/load.log; exit 1; }
	done
	t1=$(date +%s%N)
	per_host=$(awk -v d=$((t1 - t0)) -v k=$((n - loaded)) 'BEGIN {printf "%.1f", d / 1e9 / k}')
	load_s=$(awk -v a=$load_s -v d=$((t1 - t0)) 'BEGIN {printf "%.1f", a + d / 1e9}')
	loaded=$n
	bytes=$(( $(mem) - mem0 ))
	series_of $pick > $dir/names.$n
	nser=$(wc -l < $dir/names.$n)
	hosts=$(curl -s "$url/series/labels?names=hostname" | /usr/bin/python3 -c 'import json, sys; print(len(json.load(sys.stdin)["hostname"]))')
	echo "== $n hosts loaded ($hosts hostnames in pmseries): $per_host s per host loaded in this step, Valkey used_memory +$bytes B;" \
		"host $pick: $nser series"
	# the witness: the archive's metrics with values (pmseries --load
	# leaves out proc.* and acct.*, as pmproxy's default exclude.metrics)
	grep -vE '^(proc|acct)\.' $dir/metrics.witness > $dir/witness.kept
	echo "  of the archive's $(wc -l < $dir/metrics.witness) metrics with values (pmdumplog), less proc.* and acct.*" \
		"($(wc -l < $dir/witness.kept)): $(comm -12 $dir/names.$n $dir/witness.kept | wc -l) in pmseries," \
		"$(comm -13 $dir/names.$n $dir/witness.kept | wc -l) not; pmseries' series of metrics without a value in the archive:" \
		"$(comm -23 $dir/names.$n $dir/witness.kept | wc -l) ($(comm -23 $dir/names.$n $dir/witness.kept | cut -d. -f1-2 | sort | uniq -c | sort -rn | head -4 | awk '{printf "%s %d ", $2, $1}'))"
	# grafana-pcp's requests for the dashboard's default range (6 h) ending
	# at the archive's end: from - 2 x 60 s to to + 60 s, and Grafana's
	# interval for 6 h on ~1000 px, 20 s (the archive's samples are 10 s
	# apart: every other one comes back); each target twice, the median (mean)
	for w in all vm; do
		sel='.*'; [ $w = vm ] && sel=$vm
		/usr/bin/python3 $top/bench/fleetquery.py $url $top/grafana/pmdavirt-valkey.json $pick "$sel" \
			$((a_end - 6 * 3600 - 120)) $((a_end + 60)) 20 2 > $dir/queries.$n.$w || exit 1
		# per panel: its targets run one after another in the datasource
		awk '!/^variable/ { cold[$1] += $2; warm[$1] += $3 } END { for (p in cold) print p, cold[p], warm[p] }' \
			$dir/queries.$n.$w > $dir/panels.$n.$w
	done
	grep '^variable' $dir/queries.$n.all
	echo "targets whose values pmproxy cut short (3 tries): VM All $(awk '!/^variable/ && $6 < 0' $dir/queries.$n.all | wc -l):" \
		"$(awk '!/^variable/ && $6 < 0 {print $7}' $dir/queries.$n.all | tr '\n' ' ')"
	echo "targets without a series: VM All $(awk '!/^variable/ && $4 == 0' $dir/queries.$n.all | wc -l)," \
		"VM $vm $(awk '!/^variable/ && $4 == 0' $dir/queries.$n.vm | wc -l)"
	echo "slowest targets, VM All (cold ms, warm ms, series, instances, values, query):"
	grep -v '^variable' $dir/queries.$n.all | sort -k2,2nr | head -6 |
		awk '{ e = $7; for (i = 8; i <= NF; i++) e = e " " $i; printf "  %7.0f %7.0f %2d %6d %7d %s\n", $2, $3, $4, $5, $6, e }'
	echo "slowest targets, VM $vm:"
	grep -v '^variable' $dir/queries.$n.vm | sort -k2,2nr | head -4 |
		awk '{ e = $7; for (i = 8; i <= NF; i++) e = e " " $i; printf "  %7.0f %7.0f %2d %6d %7d %s\n", $2, $3, $4, $5, $6, e }'
	stats() { sort -n -k$2,$2 $1 | awk -v k=$2 '{ v[NR] = $k; if ($k > 1000) o++ } END { printf "%.0f %.0f %d", v[int((NR + 1) / 2)], v[NR], o }'; }
	echo "$n $load_s $per_host $bytes $nser $(stats $dir/panels.$n.all 2) $(stats $dir/panels.$n.all 3) $(stats $dir/panels.$n.vm 2) $(wc -l < $dir/panels.$n.all)" >> $dir/table
done

echo "== per size (hosts of $(wc -l < $arch.vms) VMs; hosts 1-$FULL $samples samples each, the others $short)"
echo "load = s to load all; s/host = per host of that step; MB = Valkey used_memory growth; series = of host $pick;"
echo "panel ms (the $(awk '{print $NF; exit}' $dir/table) panels: cold = first load, warm = refresh), median, max, panels over 1 s: VM All; vm = VM $vm picked, cold"
fmt='%6s %7s %7s %8s %7s %9s %9s %5s %9s %9s %5s %9s %9s %5s\n'
printf "$fmt" hosts load s/host MB series cold-med cold-max ">1s" warm-med warm-max ">1s" vm-med vm-max ">1s"
awk '{printf "%6d %7.1f %7.1f %8.1f %7d %9d %9d %5d %9d %9d %5d %9d %9d %5d\n", $1, $2, $3, $4 / 1e6, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14}' $dir/table
# Valkey's bytes = hosts x H + host-samples x V: H from the difference of
# the two sizes less their values, V from the whole hosts
awk -v s=$samples -v sh=$short -v f=$FULL -v t=$TOTAL '
	NR == 1 { m1 = $4; l1 = $2 } NR == 2 { m2 = $4; l2 = $2 }
	END {
		# m1 = f H + f s V; m2 - m1 = (t - f)(H + sh V)
		v = (m1 / f - (m2 - m1) / (t - f)) / (s - sh); h = m1 / f - s * v
		printf "Valkey bytes per host (series, instances, names) %.0f; per sample of a host %.0f;", h, v
		printf " per host-day at 60 s (1440 samples) %.1f MB\n", (h + 1440 * v) / 1e6
		printf "load: s per whole host (%d samples) %.1f; per host of %d samples %.1f; per sample about %.2f s\n",
			s, l1 / f, sh, (l2 - l1) / (t - f), (l1 / f - (l2 - l1) / (t - f)) / (s - sh)
	}' $dir/table
