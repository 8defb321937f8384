#!/bin/sh
# examples/check.sh - run every example under xfdr and check what it recorded.
#
# usage: check.sh EXAMPLES_DIR XFDR_BIN LLVM_XRAY LIBXFDR_SO
#
# For each example: the program succeeds and writes exactly one trace and its .map; the
# trace passes `xfdr verify` and `llvm-xray convert`; and what only that example records is
# there (names of its functions in the .map, Entry_Args and custom events, one thread per
# worker). One PASS or FAIL line per example; exit status 1 if any failed.
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

exit $failed
