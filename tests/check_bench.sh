#!/bin/sh
# check_bench.sh MAKE BUILD LLVM_XRAY - the benchmark must keep measuring what it says it does.
#
# `make bench` is not a test (it measures, and takes minutes); this checks its machinery in
# seconds, so that a change that breaks a row, or a table that would let a lost event pass,
# fails `make check`:
#   1. the per-event table, every row but the peers that need `make bench-deps` (uftrace,
#      LTTng), at 1 repetition of 20000 events in 1 process: it must exit 0, hold every row
#      of both workloads, and say of every recorder row that its file holds every event;
#   2. what a row's check counts in an xfdr file is what llvm-xray counts in it, and both are
#      the number of events the program issued, known without the recorder: (1 + 1) x 2000;
#   3. the table itself on made-up rows: a recorder whose file misses events, one that drops,
#      one whose missing events are all accounted for (elision, ring mode), and a program that
#      dies without a row; only the accounted one may pass;
#   4. instructions per event under callgrind: the floor's, a handful;
#   5. the fork table (bench/fork_cost.c): every kind of parent, no file left by a child,
#      and what fork() copies read: every process has at least two spans of its own at each
#      level of the page tables (its stack and its program are far apart), so 6 page tables.
# Exit 1 with one line per problem; 2 on bad usage.
set -u

[ $# -eq 3 ] || { echo "usage: check_bench.sh MAKE BUILD LLVM_XRAY" >&2; exit 2; }
make=$1 build=$2 xray=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/xfdr-check-bench.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM
fails=0
fail() {
	echo "check_bench: $*"
	fails=$((fails + 1))
}

# ---- 1. the table, every row but the external peers -------------------------------------
$make --no-print-directory BUILD="$build" bench-events BENCH_REPS=1 BENCH_EVENTS=20000 \
	BENCH_PROCS=1 BENCH_PEERS= >"$tmp/table" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "make bench-events exited with $rc: $(grep -m 3 -E 'FAILED|MISSING|DROPPED|Error' "$tmp/table")"
# Data rows start with their number; the leaf has 21 of them, the tree 18 (no floor, clocks).
rows=$(grep -cE '^[0-9]+ ' "$tmp/table")
[ "$rows" -eq 39 ] || fail "the table has $rows rows, not 39 (21 leaf, 18 tree)"
# labels are padded to 44 columns: 'xfdr macros   ' is the plain row, not its variants
for label in 'xfdr macros   ' 'xfdr -finstrument-functions (linked)' \
	'xfdr -finstrument-functions (LD_PRELOAD)' 'xfdr gcc -pg -mfentry' 'xfdr as XRay handler' \
	'mode=stream' \
	'LLVM XRay FDR (compiler-rt 14)'; do
	n=$(grep -F "$label" "$tmp/table" | grep -c 'recorded all')
	[ "$n" -eq 2 ] || fail "'$label': $n of its 2 rows (leaf, tree) recorded every event"
done
# 40000 events fit the ring row's 64 buffers: it wraps only at make bench's size
for label in 'mode=ring' 'func_duration_threshold_us=5'; do
	n=$(grep -F "$label" "$tmp/table" | grep -cE 'all accounted for|recorded all')
	[ "$n" -eq 2 ] || fail "'$label': $n of its 2 rows account for every event"
done
# the exclude rows (cyg and fentry, leaf and tree) record nothing and count every call
n=$(grep -F 'exclude=bench_' "$tmp/table" | grep -c 'calls left out (exclude=): all accounted for')
[ "$n" -eq 4 ] || fail "the exclude rows: $n of 4 account for every event as calls left out"
grep -qE 'pending|not built' "$tmp/table" && fail "a row is pending: $(grep -m 1 pending "$tmp/table")"

# ---- 2. trace_count against llvm-xray, against the known count --------------------------
mkdir -p "$tmp/trace"
"$build/bench/bench_xfdr_manual" -r 1 -n 2000 -b 65536 -m 16 -o "$tmp/trace" >/dev/null ||
	fail "bench_xfdr_manual -r 1 -n 2000 failed"
file=$(ls "$tmp"/trace/*.xray 2>/dev/null | head -n 1)
if [ -n "$file" ]; then
	ours=$("$build/bench/trace_count" row "$file" | awk -F '\t' '{ print $3 }')
	theirs=$("$xray" convert --output-format=yaml "$file" 2>"$tmp/xray.err" |
		grep -cE 'kind: +function-(enter|exit)')
	[ "$ours" = 4000 ] || fail "trace_count counts $ours events in a file of 4000"
	[ "$theirs" = 4000 ] || fail "llvm-xray counts $theirs events in a file of 4000 ($(head -c 200 "$tmp/xray.err"))"
else
	fail "bench_xfdr_manual wrote no trace into $tmp/trace"
fi

# ---- 3. the table on made-up rows --------------------------------------------------------
# A recorder row of 1 repetition of 100 events (warm-up included: 200 issued), then a trace line.
fake() { # KEY RECORDED DROPPED NOTE
	printf "printf 'row\\\\t%s\\\\t%s\\\\t1.00\\\\t1.00\\\\t1.00\\\\t1\\\\t100\\\\t\\\\t0\\\\tleaf\\\\t100\\\\n'; " "$1" "$1"
	printf "printf 'trace\\\\t%s\\\\t%s\\\\t1600\\\\t%s\\\\t%s\\\\n'" "$1" "$2" "$3" "$4"
}
# expect STATUS PATTERN WHAT RUN: the table of RUN must exit STATUS and print PATTERN.
expect() {
	sh "$(dirname "$0")/../bench/run.sh" -p 1 check "$4" >"$tmp/fake" 2>&1
	rc=$?
	[ $rc -eq "$1" ] && grep -q "$2" "$tmp/fake" ||
		fail "$3 (exit $rc): $(grep -m 1 -E '^1 ' "$tmp/fake")"
}

expect 1 'MISSING 50 of 200 events' "a file missing 50 of 200 events passes" \
	"$(fake missing 150 0 'a note')"
expect 1 'DROPPED 5 of 200 events' "a recorder that dropped 5 events passes" \
	"$(fake dropping 195 5 'a note')"
expect 0 'all accounted for' "100 events in the file, 20 calls elided, 60 overwritten: not 200" \
	"$(fake elided 100 0 '1 files, functions 1 named 1, elided 20 calls, overwritten 60 events')"
expect 1 'MISSING 1 of 200' "an accounting one event short passes" \
	"$(fake short 100 0 '1 files, functions 1 named 1, elided 20 calls, overwritten 59 events')"
expect 1 'FAILED: exit status 3' "a program that exits 3 without a row passes" 'exit 3'

# ---- 4. instructions per event ------------------------------------------------------------
if command -v valgrind >/dev/null; then
	sh "$(dirname "$0")/../bench/instr.sh" 20000 "$build/bench/bench_base -w leaf -k floor" \
		>"$tmp/instr" 2>&1 || fail "instr.sh failed: $(tail -n 1 "$tmp/instr")"
	ir=$(awk '$2 == "floor:" { print $(NF - 1) }' "$tmp/instr")
	awk -v ir="${ir:-0}" 'BEGIN { exit !(ir >= 4 && ir <= 16) }' ||
		fail "the floor executes '${ir:-nothing}' instructions per event, not 4 to 16: $(cat "$tmp/instr")"
else
	echo "check_bench: valgrind is not installed: instructions per event not checked"
fi

# ---- 5. the fork table ----------------------------------------------------------------------
# bench-events does not build it
$make --no-print-directory BUILD="$build" "$build/bench/fork_cost" >"$tmp/fork" 2>&1 &&
	"$build/bench/fork_cost" -r 1 -n 5 >"$tmp/fork" 2>&1 ||
	fail "fork_cost -r 1 -n 5 failed: $(tail -n 1 "$tmp/fork")"
# rows: parent fork+_exit fork+exec files mappings anon_kB page_tables
awk '$1 ~ /^(threaded-)?(cyg-)?(no-xfdr|memory|file)$/ { n++
	if ($4 != 0 || $5 < 10 || $6 < 1 || $7 < 6) bad = bad " " $0 }
	END { if (n != 7 || bad != "") { print n " rows;" bad; exit 1 } }' "$tmp/fork" >"$tmp/fork.bad" ||
	fail "the fork table: $(cat "$tmp/fork.bad")"

if [ $fails -gt 0 ]; then
	echo "check_bench: $fails problems; the table was:"
	sed 's/^/  /' "$tmp/table"
	exit 1
fi
echo "check_bench: the per-event table (39 rows), trace_count against llvm-xray, the table's checks, instr.sh and the fork table all hold"
