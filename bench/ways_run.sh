#!/bin/sh
# bench/ways_run.sh - the table of `make bench-ways` (bench/bench.mk builds the programs).
#
#   sh bench/ways_run.sh -d DIR -c TRACE_COUNT -n ITERATIONS -r REPS WAY...
#
# DIR holds one program per WAY (bench/ways_workload.c built that way); TRACE_COUNT is
# bench/trace_count.c built. Each is
# run REPS times under xfdr (XFDR_OPTIONS=start=1, a bounded pool sized from a first run so
# nothing drops), the uninstrumented one (first WAY, gcc_none) without. Per way: the events of
# the last run's trace (trace_count: verified, read with libxfdr_reader), the drops the .map
# reports, the fastest interpretation time (the program's own clock, without start-up and
# flush) when xfdr is linked but idle (start=0) and when recording, ns added per event against
# the uninstrumented build (ns/ev: what the way costs in all, code-generation changes included)
# and against the same build idle (ns/ev_idle: what recording costs), and whether the .map
# names the functions (named/listed). Exit status 1 when a run fails or a trace does not verify.
set -e
dir= counter= iters=100000 reps=5
while getopts c:d:n:r: o; do
	case $o in
	c) counter=$OPTARG ;;
	d) dir=$OPTARG ;;
	n) iters=$OPTARG ;;
	r) reps=$OPTARG ;;
	*) echo "usage: ways_run.sh -d DIR -c TRACE_COUNT -n ITERATIONS -r REPS WAY..." >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ -n "$dir" ] && [ -n "$counter" ] && [ $# -gt 0 ] ||
	{ echo "ways_run.sh: -d DIR, -c TRACE_COUNT and ways needed" >&2; exit 2; }
out=$dir/trace
buf=1048576

fastest() { sort -n | head -n 1; }

# run WAY OPTIONS: REPS runs; prints the fastest elapsed ns; leaves the last trace in $out
run() {
	way=$1 opts=$2 i=0
	: >"$dir/$way.times"
	while [ $i -lt "$reps" ]; do
		rm -rf "$out" && mkdir -p "$out"
		if [ -n "$opts" ]; then
			XFDR_OPTIONS="$opts:output=$out/" "$dir/$way" "$iters" >"$dir/$way.out" 2>"$dir/$way.err"
		else
			"$dir/$way" "$iters" >"$dir/$way.out" 2>"$dir/$way.err"
		fi
		awk '{ print $2 }' "$dir/$way.out" >>"$dir/$way.times"
		i=$((i + 1))
	done
	fastest <"$dir/$way.times"
}

echo "bench-ways: bench/ways_workload.c, $iters iterations, fastest of $reps runs, $(uname -m)," \
	"$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')"
printf '%-26s %11s %6s %9s %9s %9s %9s %6s\n' way events drops idle_ms run_ms ns/ev ns/ev_idle names
base=
status=0
for way in "$@"; do
	if [ -z "$base" ]; then
		base=$(run "$way" "")
		awk -v way="$way" -v t="$base" \
			'BEGIN { printf "%-26s %11s %6s %9s %9.2f %9s %9s %6s\n", way, "-", "-", "-",
				 t / 1e6, "-", "-", "-" }'
		continue
	fi
	# a first run sizes the pool: every event (recorded or dropped) and 10 %, in 1 MiB buffers
	reps_all=$reps reps=1
	run "$way" "start=1:buffer_size=$buf:buffer_max=64:mode=bounded" >/dev/null
	reps=$reps_all
	trace=$(ls "$out"/*.xray)
	count=$("$counter" "$way" "$trace") || { status=1; continue; }
	# trace_count: "trace WAY events bytes drops N files, functions F named M"
	bufs=$(echo "$count" | awk -v buf=$buf '{ printf "%d", ($3 + $5) * 8 * 1.1 / buf + 16 }')
	idle=$(run "$way" "start=0")
	t=$(run "$way" "start=1:buffer_size=$buf:buffer_max=$bufs:mode=bounded")
	trace=$(ls "$out"/*.xray)
	count=$("$counter" "$way" "$trace") || { status=1; continue; }
	echo "$count" | awk -v way="$way" -v t="$t" -v base="$base" -v idle="$idle" '{
		names = $11 + 0 > 0 ? ($11 + 0) "/" $9 : "no"
		printf "%-26s %11d %6d %9.2f %9.2f %9.2f %9.2f %6s\n", way, $3, $5, idle / 1e6,
			t / 1e6, $3 ? (t - base) / $3 : 0, $3 ? (t - idle) / $3 : 0, names
	}'
done
rm -rf "$out"
exit $status
