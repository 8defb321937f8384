#!/bin/sh
# bench/run.sh - run the benchmark programs one after the other and print one table.
#
# usage: run.sh SHOWN-COMMAND RUN...
#   SHOWN-COMMAND  the command the user typed (printed at the top, nothing else)
#   RUN            "COMMAND" or "COMMAND |check| CHECK": COMMAND runs one program (or a peer
#                  script around one) that prints the info/row/trace/process lines of
#                  bench/harness.h; CHECK, run after it and untimed, prints the row's trace
#                  line (bench/trace_count.c). "pending:LABEL" names a row whose program does
#                  not exist yet (printed as such, so the table keeps its shape).
#
# The programs run sequentially, never in parallel, so no row competes with another for the
# CPU. Each COMMAND's wall time is the row's whole-process time, unless it prints a process
# line of its own (a peer whose session set-up is not part of the program). Rows are grouped
# by workload (leaf, then tree). Exit status: 0 when every program ran and every recorder
# row holds every event, 1 else (the table is printed in full either way).
set -u

shown=$1
shift
tmp=$(mktemp -d "${TMPDIR:-/tmp}/xfdr-bench.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

now_ms() { date +%s%N | awk '{ printf "%.1f", $1 / 1e6 }'; }

n=0
for run in "$@"; do
	n=$((n + 1))
	case $run in
	pending:*)
		printf '%d\t%s\n' "$n" "$run" >"$tmp/$n.cmd"
		printf 'row\tpending\t%s\t-\t-\t-\t0\t0\tnot built yet\t-\tleaf\t0\n' \
			"${run#pending:}" >"$tmp/$n.out"
		: >"$tmp/$n.err"
		continue
		;;
	esac
	cmd=${run%%|check|*}
	check=
	[ "$cmd" = "$run" ] || check=${run#*|check|}
	printf '%d\t%s\n' "$n" "$run" >"$tmp/$n.cmd"
	t0=$(now_ms)
	sh -c "$cmd" >"$tmp/$n.out" 2>"$tmp/$n.err"
	rc=$?
	t1=$(now_ms)
	printf 'wall\t%s\n' "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", b - a }')" \
		>>"$tmp/$n.out"
	if [ $rc -eq 0 ] && [ -n "$check" ]; then
		sh -c "$check" >>"$tmp/$n.out" 2>>"$tmp/$n.err" || rc=$?
	fi
	if [ $rc -ne 0 ]; then
		# A program that died before printing its row still gets one, naming the failure.
		grep -q '^row' "$tmp/$n.out" ||
			printf 'row\tfailed\t%s\t-\t-\t-\t0\t0\tFAILED: exit status %d\t-\tleaf\t0\n' \
				"$cmd" "$rc" >>"$tmp/$n.out"
		printf 'status\t%d\n' "$rc" >>"$tmp/$n.out"
	fi
done

{
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
