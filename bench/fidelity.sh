#!/bin/sh
# bench/fidelity.sh - the table of `make bench-fidelity`: how much of the recorder's own time
# (a thread's slot, its first buffer and pages, the function map) a trace shows inside the
# calls it records.
#
#   sh bench/fidelity.sh DIR REPS
#
# DIR holds fidelity_prog (bench/fidelity_prog.c: 8 threads x 100 calls of an empty function,
# -finstrument-functions, linked with libxfdr.so) and fidelity_read (bench/fidelity_read.c).
# Each of REPS runs records the program with XFDR_OPTIONS=start=1 into DIR/fidelity-trace
# (removed at the end, so that no later per-event row counts its trace) and prints what its
# trace says: the longest call, the longest first call of a thread, main's time before
# its first callee. Exit status 1 when a run or a read fails.
set -e
dir=$1 reps=${2:-5}
echo "recorder time inside calls: 8 threads x 100 calls of an empty function" \
	"(-finstrument-functions, libxfdr.so, start=1), $reps runs"
# A directory of its own, removed after: the per-event rows count every trace in $dir/trace.
out=$dir/fidelity-trace
trap 'rm -rf "$out"' EXIT INT TERM
i=0
while [ $i -lt "$reps" ]; do
	rm -rf "$out" && mkdir -p "$out"
	XFDR_OPTIONS="start=1 output=$out/" "$dir/fidelity_prog"
	set -- "$out"/*.xray
	[ $# -eq 1 ] && [ -f "$1" ] || { echo "fidelity: expected one trace in $out" >&2; exit 1; }
	printf 'run %d: ' $((i + 1))
	"$dir/fidelity_read" "$1"
	i=$((i + 1))
done
