#!/bin/sh
# bench/instr.sh - instructions per event of each benchmark row, counted by callgrind.
#
# usage: instr.sh EVENTS RUN...
#   RUN  the same entries as bench/run.sh takes; their COMMAND part is run once more under
#        valgrind --tool=callgrind with "-r 1 -n EVENTS -m 64" appended (one warm-up and one
#        counted repetition of EVENTS events; a pool of 64 buffers is enough for them). Peer
#        scripts (uftrace, LTTng: tracers that cannot run under valgrind) and pending rows
#        are skipped.
#
# Timings on a shared machine move by several per cent from run to run; instruction counts do
# not: the same binary on the same input executes the same instructions whatever else the
# machine does. Only the instructions executed inside bench_measure() (--toggle-collect) are
# counted, i.e. the measured loops, the callees and everything the recorders do per event,
# not start-up or the flush. --smc-check=all: XRay patches its sleds in the program's text,
# which callgrind would otherwise not notice. --trace-children: a row's command may start its
# program through sh or with environment variables. Exit status 1 when a run fails.
set -u

events=$1
shift
tmp=$(mktemp -d "${TMPDIR:-/tmp}/xfdr-instr.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

if ! command -v valgrind >/dev/null; then
	echo "instructions per event: skipped (valgrind is not installed)"
	exit 0
fi

echo "instructions per event: valgrind --tool=callgrind --toggle-collect=bench_measure," \
	"2 x $events events per row"
echo "(under valgrind glibc registers no rseq area: clock=rdtsc pays sched_getcpu(), and" \
	"clock=auto takes rdtscp where the host CPU has it)"
# Valgrind's CPUID is its own and always has rdtscp; its decoder runs it only where the host
# has it. xfdr asks the kernel there (clock_cpu_has_rdtscp()); the rdtscp reference row cannot.
host_rdtscp=0
grep -qw rdtscp /proc/cpuinfo 2>/dev/null && host_rdtscp=1
printf '%-3s %-44s %-5s %10s %10s  %s\n' "#" "row" "work" "Ir/event" "+Ir/event" "note"
n=0
status=0
: >"$tmp/rows"
for run in "$@"; do
	case $run in
	pending:* | *peer_* | *uftrace* | *lttng*) continue ;;
	*clock_rdtscp*) [ $host_rdtscp = 1 ] || continue ;;
	esac
	n=$((n + 1))
	cmd=${run%%|check|*}
	check=
	[ "$cmd" = "$run" ] || check=${run#*|check|}
	rm -f "$tmp"/cg.* "$tmp/out"
	valgrind --tool=callgrind --toggle-collect=bench_measure --smc-check=all \
		--trace-children=yes --callgrind-out-file="$tmp/cg.%p" \
		sh -c "$cmd -r 1 -n $events -m 64" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	ir=$(cat "$tmp"/cg.* 2>/dev/null | awk '$1 == "totals:" { s += $2 } END { print s + 0 }')
	row=$(grep '^row' "$tmp/out" | head -n 1)
	if [ $rc -ne 0 ] || [ -z "$row" ]; then
		status=1
		printf 'failed\t%s\tFAILED under valgrind (exit %d): %s\n' "$cmd" $rc \
			"$(grep -v '^==' "$tmp/err" | head -n 1)" >>"$tmp/rows"
		continue
	fi
	# the check deletes what an xfdr row flushed; its count is of no use here
	[ -z "$check" ] || sh -c "$check" >/dev/null 2>&1
	printf '%s\t%s\n' "$row" "$ir" >>"$tmp/rows"
done
awk -F '\t' '
$1 == "failed" { printf "%-3d %-44s %-5s %10s %10s  %s\n", ++n, $2, "-", "-", "-", $3; next }
{
	n++
	# row fields: key label median min max reps events note faults workload calls, then Ir
	per = $13 / (($7 + 1) * $8)
	if ($2 == "call")
		call[$11] = per
	own = $2 == "floor" || $2 ~ /^clock_/
	printf "%-3d %-44s %-5s %10.1f %10s  %s\n", n, $3, $11, per,
		own ? sprintf("%.1f", per) : ($2 == "call" || !($11 in call)) ? "-" : \
		sprintf("%.1f", per - call[$11]), $9
}' "$tmp/rows"
exit $status
