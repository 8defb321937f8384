#!/bin/sh
# bench/run.sh - run the benchmark programs one after the other and print one table.
#
# usage: run.sh SHOWN-COMMAND RUN...
#   SHOWN-COMMAND  the command the user typed (printed at the top, nothing else)
#   RUN            a shell command line running one program that prints the info/row lines
#                  of bench/harness.h, or "pending:LABEL" for a row whose program does not
#                  exist yet (printed as such, so the table keeps its shape)
#
# The programs run sequentially, never in parallel, so no row competes with another for the
# CPU. Exit status: 0 when every program ran and no row reports a drop or a failure, 1 else
# (the table is printed in full either way).
set -u

shown=$1
shift
tmp=$(mktemp -d "${TMPDIR:-/tmp}/xfdr-bench.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

n=0
status=0
for run in "$@"; do
	n=$((n + 1))
	case $run in
	pending:*)
		printf 'row\tpending\t%s\t-\t-\t-\t0\t0\tnot built yet\t-\n' "${run#pending:}" >"$tmp/$n.out"
		: >"$tmp/$n.err"
		continue
		;;
	esac
	printf '%d\t%s\n' "$n" "$run" >"$tmp/$n.cmd"
	sh -c "$run" >"$tmp/$n.out" 2>"$tmp/$n.err"
	rc=$?
	if [ $rc -ne 0 ]; then
		status=1
		# A program that died before printing its row still gets one, naming the failure.
		grep -q '^row' "$tmp/$n.out" ||
			printf 'row\tfailed\t%s\t-\t-\t-\t0\t0\tFAILED: exit status %d\t-\n' \
				"$run" "$rc" >>"$tmp/$n.out"
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
		i=$((i + 1))
	done
} >"$tmp/all"

awk -F '\t' -v shown="$shown" '
function add(list, item) { return list == "" ? item : list "; " item }
$1 == "cmd"    { cmds[++ncmd] = sprintf("  run %d: %s", $2, $3); run = $2 }
$1 == "stderr" { errs[++nerr] = $2 }
$1 == "info" {
	if ($2 == "compiler" && !seen_compiler[$3]++)
		compilers = add(compilers, $3)
	else if ($2 == "pinned")
		pinned = add(pinned, "run " run " " $3)
	else
		info[$2] = $3
}
$1 == "row" {
	nrow++
	key[nrow] = $2; label[nrow] = $3; med[nrow] = $4; lo[nrow] = $5; hi[nrow] = $6
	reps[nrow] = $7; events[nrow] = $8; note[nrow] = $9; faults[nrow] = $10
	if ($2 == "floor")
		floor = $4
	if ($7 > 0 && reps_shown == "")
		reps_shown = $7 " x " $8 " events"
}
END {
	print "xfdr overhead: ns per event (one event = one function entry or one exit)"
	print "command:  " shown
	for (i = 1; i <= ncmd; i++)
		print cmds[i]
	print "machine:  " info["cpu"] "; " info["online_cpus"] " online CPUs"
	print "          rdtscp " info["rdtscp"] "; invariant TSC " info["invariant_tsc"]
	print "          " info["kernel"]
	print "compiler: " compilers
	print "pinned:   " pinned
	print "method:   median of " reps_shown " per row, after one warm-up repetition;"
	print "          CLOCK_MONOTONIC around each whole repetition; x floor = row median / floor median;"
	print "          faults = minor page faults per 1000 events inside the timed repetitions"
	print ""
	printf "%-3s %-40s %9s %8s  %-13s %7s  %s\n", "#", "row", "ns/event", "x floor", "min..max",
		"faults", "note"
	for (i = 1; i <= nrow; i++) {
		ratio = "-"
		if (floor > 0 && med[i] != "-")
			ratio = sprintf("%.2f", med[i] / floor)
		spread = lo[i] == "-" ? "-" : lo[i] ".." hi[i]
		pf = "-"
		if (faults[i] != "-" && reps[i] > 0)
			pf = sprintf("%.2f", faults[i] * 1000 / (reps[i] * events[i]))
		printf "%-3d %-40s %9s %8s  %-13s %7s  %s\n", i, label[i], med[i], ratio, spread, pf,
			note[i]
		if (note[i] ~ /DROPPED|FAILED/)
			bad = bad "\n  row " i ": " label[i] ": " note[i]
	}
	if (nerr > 0) {
		print ""
		print "stderr of the programs (each distinct line once):"
		for (i = 1; i <= nerr; i++)
			print "  " errs[i]
	}
	if (bad != "") {
		print ""
		print "NOT A CLEAN RUN:" bad
		exit 1
	}
}' "$tmp/all" || status=1
exit $status
