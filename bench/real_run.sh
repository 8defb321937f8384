#!/bin/sh
# bench/real_run.sh - the table of `make bench-real` (bench/scale.mk builds the programs).
#
#   sh bench/real_run.sh -d DIR -c TRACE_COUNT -x LLVM_XRAY -s SCALE -r REPS WAY...
#
# DIR holds one program per WAY (bench/real_workload.c built that way); TRACE_COUNT is
# bench/trace_count.c built; LLVM_XRAY is llvm-xray. A WAY's name says how it runs:
#   gcc_none, clang_none  uninstrumented, the reference of the ways built by that compiler
#   xfdr_*                XFDR_OPTIONS=start=1, 1 MiB buffers, a bounded pool holding every
#                         event (sized from the calls the uninstrumented build reports), the
#                         flush at exit into DIR/out; trace_count reads it back (events,
#                         bytes, the drops the .map reports) and deletes it
#   llvm_fdr              compiler-rt's XRay FDR runtime (the program calls its init and flush),
#                         XRAY_FDR_OPTIONS with func_duration_threshold_us=0 and the same
#                         buffers; the function records of `llvm-xray convert` are counted;
#                         FDR reports no drops
#   uftrace, lttng        bench/peer_uftrace.sh and bench/peer_lttng.sh (their process and
#                         trace lines)
# Each is run REPS times with argument SCALE. Per way: events recorded (of the last run),
# events / (2 x the calls the source makes), drops, trace bytes per event, the fastest of the
# program's own elapsed times (the work alone: no start-up, no flush), ns added per event
# against the uninstrumented build of the same compiler, and the fastest whole-process time
# (the wrapper's process line for the peers: the program without session set-up). A run whose
# result differs from the uninstrumented one fails. Exit status 1 when a way failed.
set -u
dir= counter= xray=llvm-xray scale=50000 reps=3
while getopts c:d:x:s:r: o; do
	case $o in
	c) counter=$OPTARG ;;
	d) dir=$OPTARG ;;
	x) xray=$OPTARG ;;
	s) scale=$OPTARG ;;
	r) reps=$OPTARG ;;
	*) echo "usage: real_run.sh -d DIR -c TRACE_COUNT -x LLVM_XRAY -s SCALE -r REPS WAY..." >&2
		exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ -n "$dir" ] && [ -n "$counter" ] && [ $# -gt 0 ] ||
	{ echo "real_run.sh: -d DIR, -c TRACE_COUNT and ways needed" >&2; exit 2; }
here=$(dirname "$0")
out=$dir/out
buf=1048576
bufs=64
status=0

now_ns() { date +%s%N; }

# field NAME FILE: the value after NAME on the program's "elapsed_ns N calls C result R" line
field() { awk -v k="$1" '$1 == "elapsed_ns" { for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }' "$2"; }

# runs WAY: REPS runs of the way; sets best_ns, best_ms, calls, result; leaves the last run's
# stdout in $dir/WAY.out
runs() {
	way=$1 i=0 best_ns= best_ms=
	while [ $i -lt "$reps" ]; do
		rm -rf "$out" && mkdir -p "$out"
		t0=$(now_ns)
		case $way in
		*_none) "$dir/$way" "$scale" ;;
		xfdr_*) XFDR_OPTIONS="start=1:buffer_size=$buf:buffer_max=$bufs:mode=bounded:output=$out/" \
			"$dir/$way" "$scale" ;;
		llvm_fdr) XRAY_OPTIONS="patch_premain=true xray_mode=xray-fdr verbosity=0 xray_logfile_base=$out/" \
			XRAY_FDR_OPTIONS="buffer_size=$buf buffer_max=$bufs func_duration_threshold_us=0 grace_period_ms=0" \
			"$dir/$way" "$scale" ;;
		uftrace) sh "$here/peer_uftrace.sh" -k "$way" -- "$dir/$way" "$scale" ;;
		lttng) sh "$here/peer_lttng.sh" -k "$way" -- "$dir/$way" "$scale" ;;
		*) echo "real_run.sh: unknown way $way" >&2; return 1 ;;
		esac >"$dir/$way.out" 2>"$dir/$way.err" || return 1
		t1=$(now_ns)
		ns=$(field elapsed_ns "$dir/$way.out")
		[ -n "$ns" ] || return 1
		ms=$(awk -F '\t' '$1 == "process" { print $3 }' "$dir/$way.out")
		[ -n "$ms" ] || ms=$(((t1 - t0) / 1000000))
		[ -z "$best_ns" ] || [ "$ns" -lt "$best_ns" ] && best_ns=$ns
		[ -z "$best_ms" ] || [ "$ms" -lt "$best_ms" ] && best_ms=$ms
		i=$((i + 1))
	done
	calls=$(field calls "$dir/$way.out")
	result=$(field result "$dir/$way.out")
}

# count WAY: the trace line of the last run: "trace KEY events bytes drops note"
count() {
	case $1 in
	xfdr_*) "$counter" -d "$1" "$out" ;;
	llvm_fdr)
		f=$(ls "$out"/* 2>/dev/null | head -n 1)
		[ -n "$f" ] || { printf 'trace\t%s\t-\t-\t-\tFAILED: no FDR log\n' "$1"; return 1; }
		n=$("$xray" convert -f yaml -instr_map="$dir/$1" "$f" 2>>"$dir/$1.err" |
			grep -c 'kind: *function-') || true
		printf 'trace\t%s\t%s\t%s\t-\tFDR reports no drops\n' "$1" "$n" "$(stat -c %s "$f")"
		rm -f "$f" ;;
	*) grep '^trace' "$dir/$1.out" ;;
	esac
}

echo "bench-real: bench/real_workload.c $scale (call-heavy C: tokenizer, hash table, merge sort," \
	"expression parser), fastest of $reps runs, $(uname -m)," \
	"$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')"
printf '%-12s %10s %6s %6s %5s %9s %8s %8s %9s  %s\n' way events ev/2C drops B/ev run_ms \
	+ns/ev proc_ms base_ms note
gcc_ns= clang_ns= gcc_result= clang_result=
for way in "$@"; do
	if ! runs "$way"; then
		printf '%-12s FAILED: %s\n' "$way" "$(tail -n 1 "$dir/$way.err" 2>/dev/null)"
		status=1
		continue
	fi
	case $way in
	gcc_none | clang_none)
		eval "${way%_none}_ns=\$best_ns ${way%_none}_result=\$result"
		# every event of a cyg build (2 per call, main's and run's), and a tenth more
		bufs=$(awk -v c="$calls" -v b=$buf 'BEGIN { printf "%d", (2 * c + 64) * 8 * 1.1 / b + 16 }')
		awk -v w="$way" -v t="$best_ns" -v p="$best_ms" -v c="$calls" 'BEGIN {
			printf "%-12s %10s %6s %6s %5s %9.2f %8s %8d %9s  %d calls\n", w, "-", "-", "-",
				"-", t / 1e6, "-", p, "-", c }'
		continue ;;
	xfdr_xray | llvm_fdr) base=$clang_ns base_result=$clang_result ;;
	*) base=$gcc_ns base_result=$gcc_result ;;
	esac
	line=$(count "$way") || status=1
	note=
	[ "$result" = "$base_result" ] || { note="FAILED: result $result, not $base_result"; status=1; }
	echo "$line" | awk -F '\t' -v w="$way" -v t="$best_ns" -v p="$best_ms" -v c="$calls" \
		-v base="$base" -v note="$note" '{
		ev = $3 + 0
		if (note == "")
			note = $6
		if (ev == 0) {
			printf "%-12s %10s %6s %6s %5s %9.2f %8s %8d %9.2f  %s\n", w, $3, "-", $5, "-",
				t / 1e6, "-", p, base / 1e6, note
			next
		}
		printf "%-12s %10d %6.3f %6s %5.2f %9.2f %8.2f %8d %9.2f  %s\n", w, ev, ev / (2 * c), $5,
			$4 / ev, t / 1e6, (t - base) / ev, p, base / 1e6, note
	}'
	case $line in *FAILED*) status=1 ;; esac
done
rm -rf "$out"
echo "ev/2C: events recorded per call the source makes (-finstrument-functions traces inlined" \
	"functions too, XRay and -pg only what stays a call); +ns/ev: (run_ms - base_ms) / events," \
	"base_ms the uninstrumented build of the same compiler; proc_ms: the whole process"
exit $status
