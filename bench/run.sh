#!/bin/sh
# bench/run.sh - run the benchmark programs one after the other and print one table.
#
# usage: run.sh [-p PROCESSES] SHOWN-COMMAND RUN...
#   PROCESSES      how many times each RUN is run, each time a new process (default 3)
#   SHOWN-COMMAND  the command the user typed (printed at the top, nothing else)
#   RUN            "COMMAND" or "COMMAND |check| CHECK": COMMAND runs one program (or a peer
#                  script around one) that prints the info/row/trace/process lines of
#                  bench/harness.h; CHECK, run after it and untimed, prints the row's trace
#                  line (bench/trace_count.c). "pending:LABEL" names a row whose program does
#                  not exist yet (printed as such, so the table keeps its shape).
#
# The programs run sequentially, never in parallel, so no row competes with another for the
# CPU. Each COMMAND's wall time is the row's whole-process time, unless it prints a process
# line of its own (a peer whose session set-up is not part of the program). Each RUN runs
# PROCESSES times, in rounds: on a VM the host's load can make every process of a spell of
# tens of seconds 30 % slower or faster, so a row is the median of its processes' medians,
# its spread the min and max over all their repetitions; the trace line kept is the first
# that reports a problem, else the last. Rows are grouped by workload (leaf, then tree).
# Exit status: 0 when every program ran and every recorder row holds every event, 1 else
# (the table is printed in full either way).
set -u

procs=3
if [ "${1:-}" = "-p" ]; then
	procs=$2
	shift 2
fi
shown=$1
shift
tmp=$(mktemp -d "${TMPDIR:-/tmp}/xfdr-bench.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

now_ms() { date +%s%N | awk '{ printf "%.1f", $1 / 1e6 }'; }

# The lines of one RUN's processes -> those of one: per row key the median of the medians,
# the min of the mins, the max of the maxes, the faults averaged, the first FAILED note; the
# first trace line that is not clean, else the last; the median process and wall times.
merge_processes() {
	awk -F '\t' -v OFS='\t' '
	function median(list,    a, k, i, j, v) {
		k = split(list, a, " ")
		for (i = 2; i <= k; i++) {	# insertion sort: a handful of values
			v = a[i] + 0
			for (j = i - 1; j >= 1 && a[j] + 0 > v; j--)
				a[j + 1] = a[j]
			a[j + 1] = v
		}
		return a[int((k + 1) / 2)]
	}
	$1 == "row" {
		if (!($2 in first)) { first[$2] = $0; order[++nrows] = $2 }
		if ($4 != "-") {
			meds[$2] = meds[$2] " " $4
			if (!has_spread[$2]++ || $5 + 0 < lo[$2] + 0)
				lo[$2] = $5
			if (has_spread[$2] == 1 || $6 + 0 > hi[$2] + 0)
				hi[$2] = $6
		}
		faults[$2] += $10; nproc[$2]++
		if ($9 ~ /FAILED/ && !($2 in failed)) failed[$2] = $0
		next
	}
	$1 == "trace" {
		if (!($2 in bad_trace) && ($6 ~ /^FAILED/ || ($5 != "-" && $5 > 0))) bad_trace[$2] = $0
		last_trace[$2] = $0
		next
	}
	$1 == "process" { ptimes[$2] = ptimes[$2] " " $3; next }
	$1 == "wall"    { walls = walls " " $2; next }
	!seen[$0]++     { print }
	END {
		for (i = 1; i <= nrows; i++) {
			k = order[i]
			if (k in failed) { print failed[k]; continue }
			split(first[k], f, "\t")
			if (k in meds) { f[4] = median(meds[k]); f[5] = lo[k]; f[6] = hi[k] }
			f[10] = f[10] == "-" ? "-" : int(faults[k] / nproc[k] + 0.5)
			line = f[1]
			for (j = 2; j <= 12; j++) line = line OFS f[j]
			print line
		}
		for (k in last_trace) print (k in bad_trace) ? bad_trace[k] : last_trace[k]
		for (k in ptimes) print "process", k, median(ptimes[k])
		if (walls != "") print "wall", median(walls)
	}'
}

# Round-robin: every RUN once, then every RUN again. The host's load on a VM comes and goes
# over tens of seconds, so a row run PROCESSES times in a row could spend all of them in one
# slow (or fast) spell; in rounds, every row meets the same mix of spells.
p=0
while [ $p -lt "$procs" ]; do
	p=$((p + 1))
	n=0
	for run in "$@"; do
		n=$((n + 1))
		case $run in
		pending:*)
			printf '%d\t%s\n' "$n" "$run" >"$tmp/$n.cmd"
			printf 'row\tpending\t%s\t-\t-\t-\t0\t0\tnot built yet\t-\tleaf\t0\n' \
				"${run#pending:}" >"$tmp/$n.all"
			: >"$tmp/$n.err"
			continue
			;;
		esac
		if [ $p -eq 1 ]; then
			printf '%d\t%s\n' "$n" "$run" >"$tmp/$n.cmd"
			: >"$tmp/$n.all"
			: >"$tmp/$n.err"
			echo 0 >"$tmp/$n.rc"
		fi
		# a run that failed is not run again: its row says why
		[ "$(cat "$tmp/$n.rc")" -eq 0 ] || continue
		cmd=${run%%|check|*}
		check=
		[ "$cmd" = "$run" ] || check=${run#*|check|}
		t0=$(now_ms)
		sh -c "$cmd" >"$tmp/$n.one" 2>>"$tmp/$n.err"
		rc=$?
		t1=$(now_ms)
		printf 'wall\t%s\n' "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", b - a }')" \
			>>"$tmp/$n.one"
		if [ $rc -eq 0 ] && [ -n "$check" ]; then
			sh -c "$check" >>"$tmp/$n.one" 2>>"$tmp/$n.err" || rc=$?
		fi
		cat "$tmp/$n.one" >>"$tmp/$n.all"
		echo $rc >"$tmp/$n.rc"
	done
done

n=0
for run in "$@"; do
	n=$((n + 1))
	case $run in
	pending:*)
		cp "$tmp/$n.all" "$tmp/$n.out"
		continue
		;;
	esac
	merge_processes <"$tmp/$n.all" >"$tmp/$n.out"
	rc=$(cat "$tmp/$n.rc")
	if [ "$rc" -ne 0 ]; then
		# A program that died before printing its row still gets one, naming the failure.
		grep -q '^row' "$tmp/$n.out" ||
			printf 'row\tfailed\t%s\t-\t-\t-\t0\t0\tFAILED: exit status %d\t-\tleaf\t0\n' \
				"${run%%|check|*}" "$rc" >>"$tmp/$n.out"
		printf 'status\t%d\n' "$rc" >>"$tmp/$n.out"
	fi
done

{
	printf 'info\tprocesses\t%d\n' "$procs"
	i=1
	while [ $i -le $n ]; do
		[ -f "$tmp/$i.cmd" ] && printf 'cmd\t%s\n' "$(cat "$tmp/$i.cmd")"
		cat "$tmp/$i.out"
		# One stderr line per distinct message; a runtime that repeats itself is noted once.
		sed -e 's/^==[0-9]*==//' "$tmp/$i.err" | awk '!seen[$0]++' |
			while IFS= read -r line; do
				printf 'stderr\t[run %d] %s\n' "$i" "$line"
			done
		printf 'end\n'
		i=$((i + 1))
	done
} >"$tmp/all"

awk -F '\t' -v shown="$shown" -f "$(dirname "$0")/table.awk" "$tmp/all"
exit $?
