#!/bin/sh
# bench/fdr_count.sh - the check of an XRay FDR row: count the function records of the file
# compiler-rt flushed with llvm-xray, print the row's trace line, delete the file.
#
# usage: fdr_count.sh -k KEY -m PROGRAM [-x LLVM_XRAY] [-f FILTER_NOTE] DIR
#   KEY          the row key of the trace line
#   PROGRAM      the traced program: its instrumentation map names the function ids
#   LLVM_XRAY    llvm-xray 14 (default: llvm-xray)
#   FILTER_NOTE  for a row whose FDR erases short calls by design: the trace note, which must
#                start with "filter:" (bench/table.awk then reports what was kept, no MISSING)
#   DIR          where xray_logfile_base put the file; the newest file is counted, every file
#                in DIR deleted (a file left by an interrupted run is never counted twice)
#
# Prints "trace KEY EVENTS BYTES - NOTE": EVENTS = 2 x the calls `llvm-xray account` matched
# (an entry and an exit each), BYTES the file's size; the dropped column stays "-" because FDR
# keeps no count of what it drops (bench/bench_llvm_fdr.c counts the records in memory for
# that). llvm-xray 14 orders a thread's buffers correctly only up to 16 of them (bench/README.md,
# "Reader verbs"), so the row's buffers must be large enough that no thread fills more.
# Exit status 1, with a trace note starting with FAILED, when there is no file or llvm-xray
# cannot read it.
set -u

key= prog= xray=llvm-xray note="llvm-xray account"
while getopts k:m:x:f: opt; do
	case $opt in
	k) key=$OPTARG ;;
	m) prog=$OPTARG ;;
	x) xray=$OPTARG ;;
	f) note=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
if [ -z "$key" ] || [ -z "$prog" ] || [ $# -ne 1 ]; then
	echo "usage: fdr_count.sh -k KEY -m PROGRAM [-x LLVM_XRAY] [-f FILTER_NOTE] DIR" >&2
	exit 2
fi
dir=$1

file=$(ls -t "$dir"/* 2>/dev/null | head -n 1)
if [ -z "$file" ]; then
	printf 'trace\t%s\t-\t-\t-\tFAILED: no FDR file in %s\n' "$key" "$dir"
	exit 1
fi
bytes=$(stat -c %s "$file")
# csv: funcid,count,min,median,...; the header line has no number in its count column.
calls=$("$xray" account -instr_map="$prog" -format=csv "$file" 2>"$dir/.account.err" |
	awk -F, '$2 ~ /^[0-9]+$/ { n += $2 } END { print n + 0 }')
if [ -s "$dir/.account.err" ] && grep -q 'llvm-xray:' "$dir/.account.err"; then
	printf 'trace\t%s\t-\t%s\t-\tFAILED: %s\n' "$key" "$bytes" \
		"$(grep -m 1 'llvm-xray:' "$dir/.account.err")"
	rm -f "$dir"/* "$dir/.account.err"
	exit 1
fi
printf 'trace\t%s\t%s\t%s\t-\t%s\n' "$key" $((2 * calls)) "$bytes" "$note"
rm -f "$dir"/* "$dir/.account.err"
