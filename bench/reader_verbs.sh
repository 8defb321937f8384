#!/bin/sh
# bench/reader_verbs.sh - time each xfdr reader verb beside the same llvm-xray verb on one trace.
#
# usage: reader_verbs.sh [-x XFDR] [-l LLVM_XRAY] [-t RUNNER] [-n REPS] [-N XRAY_REPS]
#                        [-s ROW_SECONDS] [-d DESCRIPTION] [-X] [-A] TRACE
#   XFDR         the xfdr command (default: xfdr)
#   LLVM_XRAY    llvm-xray 14 (default: llvm-xray)
#   RUNNER       bench/reader_time.c built: runs a command, prints "STATUS WALL_NS MAXRSS_KB"
#   REPS         runs per xfdr row (default 3), XRAY_REPS per llvm-xray row (default 1)
#   ROW_SECONDS  a row gets one more run only while its runs so far, plus one more of the same
#                length, stay within ROW_SECONDS (default 20): long rows run once
#   DESCRIPTION  one line saying how TRACE was made (printed with the table)
#   -X           xfdr's rows only: for a trace llvm-xray cannot hold in memory (it loads every
#                record first, about 20 bytes of memory per byte of trace)
#   -A           the analysis verbs only (account, funcs, diff, stack, flame, pprof), and verify as
#                the yardstick; implies -X
#
# Prints one table: per row the runs made, the median wall time, input MB/s (TRACE's bytes /
# 1e6 / median seconds), the largest max RSS of the runs (MB = 1e6 bytes) and the size of
# what the command wrote to stdout. A command that fails gets a row naming its exit status and
# the first line of its stderr (llvm-xray: its "llvm-xray: ..." line), so the table keeps its
# shape while verbs are missing (a split timeline: the size of all its parts). Outputs go to a
# temporary folder, removed at the end. The YAML of both tools is compared with cmp. Exit
# status: 1 when an xfdr command dies by a signal or `xfdr verify` rejects TRACE, else 0 (a
# verb not written yet is a row, not an error).
set -u

xfdr=xfdr
xray=llvm-xray
runner=
reps=3
xreps=1
row_s=20
desc=
xfdr_only=0
analysis_only=0
while getopts x:l:t:n:N:s:d:XA opt; do
	case $opt in
	x) xfdr=$OPTARG ;;
	l) xray=$OPTARG ;;
	t) runner=$OPTARG ;;
	n) reps=$OPTARG ;;
	N) xreps=$OPTARG ;;
	s) row_s=$OPTARG ;;
	d) desc=$OPTARG ;;
	X) xfdr_only=1 ;;
	A) xfdr_only=1 analysis_only=1 ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
if [ $# -ne 1 ] || [ -z "$runner" ]; then
	echo "usage: reader_verbs.sh -t RUNNER [-x XFDR] [-l LLVM_XRAY] [-n REPS] [-N XRAY_REPS] [-s ROW_SECONDS] [-d DESC] [-X] [-A] TRACE" >&2
	exit 2
fi
trace=$1
if [ ! -r "$trace" ]; then
	echo "reader_verbs.sh: cannot read $trace" >&2
	exit 2
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/xfdr-bench-reader.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM

bytes=$(stat -c %s "$trace")
status=0

# measure REPS OUT CMD... - run CMD up to REPS times, stdout to OUT. Sets r_code (0, or the
# failing run's status), r_runs, r_ms (median), r_rss_kb (largest), r_err (message on failure).
measure() {
	m_reps=$1
	m_out=$2
	shift 2
	r_runs=0
	r_code=0
	r_rss_kb=0
	r_err=
	m_list=
	m_total_ns=0
	while [ "$r_runs" -lt "$m_reps" ]; do
		m_line=$("$runner" "$m_out" "$tmp/err" "$@") || m_line="127 0 0"
		read -r m_st m_ns m_kb <<EOF
$m_line
EOF
		if [ "$m_st" != 0 ]; then
			r_code=$m_st
			# llvm-xray prints the failing record first and its verdict last.
			r_err=$(grep -m1 '^llvm-xray:' "$tmp/err")
			[ -n "$r_err" ] || r_err=$(sed -n '/./{p;q;}' "$tmp/err")
			return
		fi
		r_runs=$((r_runs + 1))
		m_list="$m_list $m_ns"
		[ "$m_kb" -gt "$r_rss_kb" ] && r_rss_kb=$m_kb
		m_total_ns=$((m_total_ns + m_ns))
		# One more run only if it is expected to end within the row's time budget.
		[ $((m_total_ns + m_ns)) -gt $((row_s * 1000000000)) ] && break
	done
	r_ms=$(echo "$m_list" | tr ' ' '\n' | sed '/^$/d' | sort -n |
		awk '{v[NR] = $1} END {m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.0f", m / 1e6}')
}

# show VERB TOOL OUT NOTE - print the row of the last measure, whose stdout went to OUT.
# Returns 1 when that command failed.
show() {
	if [ "$r_code" -ne 0 ]; then
		if [ "$r_code" -lt 0 ]; then
			s_how="killed by signal $((-r_code))"
		else
			s_how="exit $r_code"
		fi
		if [ "$2" = xfdr ]; then
			s_note="failed ($s_how)"
			[ "$r_code" -lt 0 ] && status=1
			[ "$1" = verify ] && status=1
		else
			s_note="fails ($s_how)"
		fi
		[ -n "$r_err" ] && s_note="$s_note: $r_err"
		printf '%-20s %-9s %4s %9s %8s %9s %8s  %s\n' "$1" "$2" - - - - - "$s_note"
		return 1
	fi
	awk -v verb="$1" -v tool="$2" -v runs="$r_runs" -v ms="$r_ms" -v kb="$r_rss_kb" \
		-v bytes="$bytes" -v out="$(stat -c %s "$3")" -v note="$4" 'BEGIN {
		mbs = ms > 0 ? bytes / 1e6 / (ms / 1000) : 0
		line = sprintf("%-20s %-9s %4d %9d %8.1f %9.1f %8.2f  %s", verb, tool, runs, ms, mbs,
			kb * 1024 / 1e6, out / 1e6, note)
		sub(/ +$/, "", line)
		print line
	}'
}

# row VERB TOOL REPS OUT NOTE CMD... - measure CMD and print its row (none for llvm-xray
# with -X).
row() {
	[ "$2" = llvm-xray ] && [ "$xfdr_only" = 1 ] && return 0
	w_verb=$1
	w_tool=$2
	w_reps=$3
	w_out=$4
	w_note=$5
	shift 5
	measure "$w_reps" "$w_out" "$@"
	show "$w_verb" "$w_tool" "$w_out" "$w_note"
}

if [ "$analysis_only" = 1 ]; then
	echo "xfdr analysis verbs: wall time and peak memory on one trace (llvm-xray left out)"
elif [ "$xfdr_only" = 1 ]; then
	echo "xfdr reader verbs: wall time and peak memory on one trace (llvm-xray left out)"
else
	echo "xfdr reader verbs beside llvm-xray: wall time and peak memory on one trace"
fi
printf 'trace:    %s, %s bytes (%.1f MiB)\n' "$trace" "$bytes" "$(echo "$bytes" | awk '{print $1 / 1048576}')"
[ -n "$desc" ] && echo "          $desc"
echo "tools:    $("$xfdr" --version 2>&1 | head -n1); $("$xray" --version 2>&1 | grep -m1 -i 'llvm version' | sed 's/^ *//')"
echo "cpu:      $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) CPUs; $(uname -sr)"
echo "runs:     xfdr up to $reps, llvm-xray up to $xreps per row, fewer when a row would exceed ${row_s} s;"
echo "          ms = median wall time, MB/s = input MB per second, RSS = largest max RSS, MB = 1e6 bytes"
echo
printf '%-20s %-9s %4s %9s %8s %9s %8s  %s\n' verb tool runs ms MB/s "RSS MB" "out MB" note

rm -f "$tmp/out"
row verify xfdr "$reps" "$tmp/out" "" "$xfdr" verify "$trace"
rm -f "$tmp/out"
[ "$analysis_only" = 1 ] || row dump xfdr "$reps" "$tmp/out" "(llvm-xray has no dump)" \
	"$xfdr" dump "$trace"
rm -f "$tmp/out"

# The conversions (YAML, timelines): not analysis verbs.
converts() {
	# YAML: --no-map, so that xfdr prints function ids as llvm-xray does without -instr_map.
	measure "$reps" "$tmp/x.yaml" "$xfdr" convert --no-map --output-format=yaml "$trace"
	x_code=$r_code
	show "convert yaml" xfdr "$tmp/x.yaml" "--no-map"
	[ "$xfdr_only" = 1 ] || measure "$xreps" "$tmp/l.yaml" "$xray" convert --output-format=yaml "$trace"
	note=
	if [ "$xfdr_only" = 1 ]; then
		:
	elif [ "$x_code" -eq 0 ] && [ "$r_code" -eq 0 ]; then
		if cmp -s "$tmp/x.yaml" "$tmp/l.yaml"; then
			note="output byte-identical to xfdr's (cmp)"
		else
			note="output DIFFERS from xfdr's: $(cmp "$tmp/x.yaml" "$tmp/l.yaml" 2>&1 |
				sed 's/^[^ ]* [^ ]* //')"
		fi
	fi
	[ "$xfdr_only" = 1 ] || show "" llvm-xray "$tmp/l.yaml" "$note"
	rm -f "$tmp/x.yaml" "$tmp/l.yaml"

	# split SIZE FORMAT - the timeline in parts of SIZE (--split-size: every thread walked together,
	# by one thread); out MB is the parts' sum.
	split() {
		measure "$reps" "$tmp/out" "$xfdr" convert --output-format="$2" --split-size="$1" \
			-o "$tmp/split.$2" "$trace"
		s_parts=$(find "$tmp" -name "split.*.$2" | wc -l)
		s_word=parts
		[ "$s_parts" -eq 1 ] && s_word=part
		find "$tmp" -name "split.*.$2" -exec cat {} + >"$tmp/out"
		show "" xfdr "$tmp/out" "--split-size=$1: $s_parts $s_word"
		find "$tmp" -name "split.*.$2" -exec rm -f {} +
		rm -f "$tmp/out"
}

row "convert trace_event" xfdr "$reps" "$tmp/out" "" \
	"$xfdr" convert --output-format=trace_event "$trace"
rm -f "$tmp/out"
row "" llvm-xray "$xreps" "$tmp/out" "" "$xray" convert --output-format=trace_event "$trace"
rm -f "$tmp/out"
split 256M trace_event

# Perfetto's protobuf, as written by default (zlib-compressed chunks) and as it is (none).
row "convert perfetto" xfdr "$reps" "$tmp/out" "" \
	"$xfdr" convert --output-format=perfetto "$trace"
rm -f "$tmp/out"
row "" xfdr "$reps" "$tmp/out" "--compress=none" \
	"$xfdr" convert --output-format=perfetto --compress=none "$trace"
rm -f "$tmp/out"
split 64M perfetto
}
[ "$analysis_only" = 1 ] || converts

row account xfdr "$reps" "$tmp/out" "" "$xfdr" account "$trace"
row "" llvm-xray "$xreps" "$tmp/out" "" "$xray" account "$trace"
rm -f "$tmp/out"
# A window of one thread (the others decoded, not paired), and two runs compared (the trace
# against itself: each accounted, then joined by name).
row "" xfdr "$reps" "$tmp/out" "--thread=1" "$xfdr" account --thread=1 "$trace"
rm -f "$tmp/out"
row diff xfdr "$reps" "$tmp/out" "TRACE TRACE" "$xfdr" diff "$trace" "$trace"
rm -f "$tmp/out"
row funcs xfdr "$reps" "$tmp/out" "(llvm-xray has no such verb)" "$xfdr" funcs "$trace"
rm -f "$tmp/out"

row stack xfdr "$reps" "$tmp/out" "" "$xfdr" stack "$trace"
rm -f "$tmp/out"
row "" llvm-xray "$xreps" "$tmp/out" "-all-stacks -stack-format=flame" \
	"$xray" stack -all-stacks -stack-format=flame "$trace"
rm -f "$tmp/out"

row "" xfdr "$reps" "$tmp/out" "--diff TRACE TRACE" "$xfdr" stack --diff "$trace" "$trace"
rm -f "$tmp/out"

row flame xfdr "$reps" "$tmp/out" "(llvm-xray has no SVG output)" "$xfdr" flame "$trace"
rm -f "$tmp/out"

row "convert pprof" xfdr "$reps" "$tmp/out" "(llvm-xray has no pprof output)" \
	"$xfdr" convert --output-format=pprof "$trace"
rm -f "$tmp/out"
exit $status
