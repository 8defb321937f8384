#!/bin/sh
# examples/check.sh - run every example under xfdr and check what it recorded.
#
# usage: check.sh EXAMPLES_DIR XFDR_BIN LLVM_XRAY LIBXFDR_SO
#
# For each example: the program succeeds and writes exactly one trace and its .map; the
# trace passes `xfdr verify` and `llvm-xray convert`; and what only that example records is
# there (names of its functions in the .map, Entry_Args and custom events, one thread per
# worker). snapshot writes several traces, one per slowest-so-far request: each must pass
# both readers, name where its window begins (since_tsc in its .map), hold that window, and
# (when `xfdr convert` has --since) trim to it. One PASS, SKIP or FAIL line per check; exit
# status 1 if any failed.
set -u

dir=$1
xfdr=$2
llvm=$3
so=$4
tmp=$(mktemp -d "${TMPDIR:-/tmp}/xfdr-examples.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
failed=0

fail() {
	echo "FAIL $1: $2"
	[ -f "$tmp/$1/log" ] && sed 's/^/    | /' "$tmp/$1/log"
	failed=1
}

# run NAME ENV... PROGRAM ARGS...: run in its own output directory; sets $trace.
run() {
	name=$1
	shift
	mkdir -p "$tmp/$name"
	if ! env "$@" >"$tmp/$name/log" 2>&1; then
		fail "$name" "the program failed"
		return 1
	fi
	set -- "$tmp/$name"/*.xray
	if [ $# -ne 1 ] || [ ! -f "$1" ]; then
		fail "$name" "expected one trace in $tmp/$name, found: $*"
		return 1
	fi
	trace=$1
	if [ ! -f "$trace.map" ]; then
		fail "$name" "no $trace.map"
		return 1
	fi
	if ! "$xfdr" verify "$trace" >>"$tmp/$name/log" 2>&1; then
		fail "$name" "xfdr verify rejects the trace"
		return 1
	fi
	if ! "$llvm" convert --output-format=yaml "$trace" >"$tmp/$name/yaml" 2>>"$tmp/$name/log"; then
		fail "$name" "llvm-xray convert rejects the trace"
		return 1
	fi
	return 0
}

# names NAME FUNCTION...: each function is named in the .map.
names() {
	name=$1
	shift
	for fn in "$@"; do
		if ! grep -q "^function	[0-9]*	$fn	" "$trace.map"; then
			fail "$name" "the .map does not name $fn"
			return 1
		fi
	done
	return 0
}

# has NAME PATTERN WHAT: llvm-xray's YAML of the trace matches PATTERN.
has() {
	if ! grep -q "$2" "$tmp/$1/yaml"; then
		fail "$1" "llvm-xray convert shows no $3"
		return 1
	fi
	return 0
}

if run manual XFDR_OPTIONS="output=$tmp/manual/" "$dir/manual" &&
	has manual "kind: function-enter-arg" "entry with arguments" &&
	has manual "config loaded" "custom event"; then
	echo "PASS manual: macros, arguments and a custom event"
fi

if run cyg_sort LD_PRELOAD="$so" XFDR_OPTIONS="start=1:output=$tmp/cyg_sort/" \
	"$dir/cyg_sort" &&
	names cyg_sort main quicksort partition swap search checksum; then
	echo "PASS cyg_sort: -finstrument-functions program recorded unmodified via LD_PRELOAD"
fi

if run xray_sort XFDR_OPTIONS="start=1:output=$tmp/xray_sort/" "$dir/xray_sort" &&
	names xray_sort main quicksort &&
	has xray_sort "kind: function-exit" "function exit"; then
	echo "PASS xray_sort: clang XRay sleds recorded through xfdr's handler"
	# The names xfdr convert takes from the sidecar are those llvm-xray reads from the binary.
	"$xfdr" convert "$trace" >"$tmp/xray_sort/ours" 2>>"$tmp/xray_sort/log" &&
		"$llvm" convert -m "$dir/xray_sort" -symbolize --output-format=yaml "$trace" \
			>"$tmp/xray_sort/symbolized" 2>>"$tmp/xray_sort/log"
	if cmp -s "$tmp/xray_sort/ours" "$tmp/xray_sort/symbolized"; then
		echo "PASS xray_sort: xfdr convert with the .map == llvm-xray convert -m -symbolize"
	else
		fail xray_sort "xfdr convert's names differ from llvm-xray -symbolize's"
	fi
fi

# gcc -pg -mfentry -minstrument-return=call, recorded by `xfdr record` (which preloads the
# runtime): quicksort is recursive, so it stays a call; swap is inlined at -O2 and records
# nothing (with -finstrument-functions every inlined copy records).
if run fentry_sort "$xfdr" record -q -o "$tmp/fentry_sort" "$dir/fentry_sort" &&
	names fentry_sort main quicksort; then
	if grep -q "^function	[0-9]*	swap	" "$trace.map"; then
		fail fentry_sort "swap, inlined after -O2, has events"
	else
		echo "PASS fentry_sort: -pg -mfentry hooks after inlining, recorded by xfdr record"
	fi
fi

if run threads LD_PRELOAD="$so" XFDR_OPTIONS="start=1:output=$tmp/threads/" \
	"$dir/threads" 4 &&
	names threads worker count_range is_prime; then
	workers=$(grep -c "^thread	[0-9]*	[0-9]*	worker-[1-4]	" "$trace.map")
	tids=$(sed -n 's/.*thread: \([0-9]*\),.*/\1/p' "$tmp/threads/yaml" | sort -u | wc -l)
	if [ "$workers" -ne 4 ]; then
		fail threads "the .map names $workers worker threads, expected 4"
	elif [ "$tids" -lt 5 ]; then
		fail threads "llvm-xray sees $tids threads, expected main and 4 workers"
	else
		echo "PASS threads: 4 workers and main, each with its own thread id"
	fi
fi

# crash: dies by SIGSEGV (exit status 139), and still leaves one trace that both readers
# accept, whose dump shows the crash with the crashing function named.
mkdir -p "$tmp/crash"
LD_PRELOAD="$so" XFDR_OPTIONS="start=1:output=$tmp/crash/" "$dir/crash" >"$tmp/crash/log" 2>&1
status=$?
set -- "$tmp/crash"/*.xray
if [ "$status" -ne 139 ]; then
	fail crash "exit status $status, expected 139 (killed by SIGSEGV)"
elif [ $# -ne 1 ] || [ ! -f "$1" ]; then
	fail crash "expected one trace in $tmp/crash, found: $*"
elif ! "$xfdr" verify "$1" >>"$tmp/crash/log" 2>&1 ||
	! "$llvm" convert --output-format=yaml "$1" >"$tmp/crash/yaml" 2>>"$tmp/crash/log"; then
	fail crash "a reader rejects $1"
elif ! "$xfdr" dump "$1" >"$tmp/crash/dump" 2>>"$tmp/crash/log" ||
	! grep -q "crash=SIGSEGV" "$tmp/crash/dump" ||
	! grep -q "^    #[0-9]* 0x[0-9a-f]* owner_length " "$tmp/crash/dump" ||
	! grep -q "^    #[0-9]* 0x[0-9a-f]* process " "$tmp/crash/dump"; then
	fail crash "xfdr dump shows no SIGSEGV with owner_length and process among its frames"
else
	echo "PASS crash: died by SIGSEGV, the trace ends with the crash and its named backtrace"
fi

# below(t, s) in awk: the timestamp t is below s (digit strings compared by length, then as
# text: awk's numbers are doubles, exact only below 2^53).
tsc_awk='function below(t, s) { return length(t) < length(s) || (length(t) == length(s) && (t "") < (s "")) }'

# since_of TRACE: the since_tsc of TRACE's .map (empty when there is none).
since_of() {
	awk -F '\t' '$1 == "since_tsc" { print $2 }' "$1.map"
}

# snapshot_file TRACE: one snapshot passes both readers, and its .map says where the window
# begins; the request's own handle_request (id 1) entry is at or after it. Sets $since.
snapshot_file() {
	log=$tmp/snapshot/log
	if [ ! -f "$1.map" ]; then
		fail snapshot "no $1.map"
		return 1
	fi
	if ! "$xfdr" verify "$1" >>"$log" 2>&1; then
		fail snapshot "xfdr verify rejects $1"
		return 1
	fi
	if ! "$llvm" convert --output-format=yaml "$1" >"$1.yaml" 2>>"$log"; then
		fail snapshot "llvm-xray convert rejects $1"
		return 1
	fi
	since=$(since_of "$1")
	case $since in
	'' | *[!0-9]*)
		fail snapshot "$1.map has no since_tsc line"
		return 1
		;;
	esac
	if ! awk -v s="$since" "$tsc_awk"'
		/func-id: 1,.*kind: function-enter,/ && match($0, /tsc: [0-9]+/) &&
		    !below(substr($0, RSTART + 5, RLENGTH - 5), s) { found = 1 }
		END { exit !found }' "$1.yaml"; then
		fail snapshot "$1 holds no request entry at or after since_tsc $since"
		return 1
	fi
	return 0
}

# snapshot_trim TRACE: xfdr convert --since=snapshot keeps no record before since_tsc, and
# keeps the request itself.
snapshot_trim() {
	since=$(since_of "$1")
	if ! "$xfdr" convert --since=snapshot "$1" >"$1.trimmed" 2>>"$tmp/snapshot/log"; then
		fail snapshot "xfdr convert --since=snapshot rejects $1"
		return 1
	fi
	early=$(awk -v s="$since" "$tsc_awk"'
		match($0, /tsc: [0-9]+/) && below(substr($0, RSTART + 5, RLENGTH - 5), s) { n++ }
		END { print n + 0 }' "$1.trimmed")
	if [ "$early" -ne 0 ]; then
		fail snapshot "xfdr convert --since=snapshot $1 keeps $early records before $since"
		return 1
	fi
	if ! grep -q "func-id: 1,.*kind: function-enter," "$1.trimmed"; then
		fail snapshot "xfdr convert --since=snapshot $1 leaves no request entry"
		return 1
	fi
	return 0
}

mkdir -p "$tmp/snapshot"
if ! "$dir/snapshot" 3000 "$tmp/snapshot/" >"$tmp/snapshot/log" 2>&1; then
	fail snapshot "the program failed"
else
	set -- "$tmp/snapshot"/*.xray
	printed=$(grep -c "slowest so far: $tmp/snapshot/" "$tmp/snapshot/log")
	if [ ! -f "$1" ]; then
		fail snapshot "no snapshot in $tmp/snapshot"
	elif [ "$printed" -ne $# ]; then
		fail snapshot "the program printed $printed snapshot paths, $# files were written"
	else
		ok=1
		threads=0
		for trace; do
			snapshot_file "$trace" || { ok=0; break; }
			n=$(sed -n 's/.*thread: \([0-9]*\),.*/\1/p' "$trace.yaml" | sort -u | wc -l)
			[ "$n" -gt "$threads" ] && threads=$n
		done
		if [ $ok = 1 ] && [ "$threads" -lt 2 ]; then
			fail snapshot "no snapshot holds more than one thread"
			ok=0
		fi
		[ $ok = 1 ] && echo "PASS snapshot: $# snapshots, each valid for xfdr and llvm-xray," \
			"with since_tsc and the request's window, up to $threads threads"
		if [ $ok = 1 ] && "$xfdr" convert --help 2>&1 | grep -q -- '--since='; then
			for trace; do
				snapshot_trim "$trace" || { ok=0; break; }
			done
			[ $ok = 1 ] && echo "PASS snapshot: xfdr convert --since=snapshot keeps" \
				"no record before since_tsc"
		elif [ $ok = 1 ]; then
			echo "SKIP snapshot: this xfdr convert has no --since (trimming not checked)"
		fi
	fi
fi

exit $failed
