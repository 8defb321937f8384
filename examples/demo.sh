#!/bin/sh
# examples/demo.sh - `make demo`: record a real program, verify the trace, show what is in it.
#
# usage: demo.sh PROGRAM XFDR_BIN LIBXFDR_SO OUT_DIR
#
# PROGRAM is built with -finstrument-functions only (build/examples/cyg_sort); it is run
# unmodified with libxfdr.so preloaded, its trace verified, and then printed: where the trace
# is, how many calls each function made (with names from the .map sidecar; the latency table
# of `xfdr account` once that command exists), and the commands to look further.
set -u

prog=$1
xfdr=$2
so=$3
out=$4

rm -rf "$out"
mkdir -p "$out" || exit 1
echo "== recording: LD_PRELOAD=$so XFDR_OPTIONS=start=1:output=$out/ $prog 5000"
if ! LD_PRELOAD="$so" XFDR_OPTIONS="start=1:output=$out/" "$prog" 5000 >"$out/program.log" 2>&1; then
	echo "demo: $prog failed:" >&2
	cat "$out/program.log" >&2
	exit 1
fi
sed 's/^/   /' "$out/program.log"
set -- "$out"/*.xray
trace=$1
if [ $# -ne 1 ] || [ ! -f "$trace" ]; then
	echo "demo: expected one trace in $out" >&2
	exit 1
fi
map=$trace.map
if ! "$xfdr" verify "$trace"; then
	echo "demo: the trace does not verify" >&2
	exit 1
fi

echo
echo "== trace (verified by xfdr verify)"
echo "   $trace"
echo "   $map   (function names, threads, clock, drops)"
echo "   $(awk -F '\t' '$1 == "buffers_written" { b = $2 } $1 == "thread" { t++ }
	$1 == "dropped" && $2 == "total" { d = $3 }
	END { printf "%d buffers, %d thread(s), %d events dropped", b, t, d }' "$map")"

echo
if "$xfdr" help account >/dev/null 2>&1; then
	echo "== per function (xfdr account)"
	"$xfdr" account "$trace"
else
	echo "== per function: calls, name (from the .map sidecar)"
	"$xfdr" convert --output-format=yaml "$trace" | awk -v map="$map" '
		BEGIN {
			FS = "\t"
			while ((getline line < map) > 0) {
				split(line, f, "\t")
				if (f[1] == "function")
					name[f[2]] = f[3]
			}
			FS = " "
		}
		/kind: function-enter/ {
			match($0, /func-id: [0-9]+/)
			id = substr($0, RSTART + 9, RLENGTH - 9)
			calls[id]++
		}
		END {
			for (id in calls)
				printf "%10d  %s\n", calls[id], (id in name) ? name[id] : "#" id
		}' | sort -rn | head -n 15
fi

echo
echo "== look further"
echo "   T=$trace"
printf '   %-62s %s\n' \
	"$xfdr dump \$T | less" "every record, with its offset" \
	"$xfdr convert --output-format=yaml \$T" "what llvm-xray convert prints" \
	"llvm-xray convert --output-format=trace_event \$T > t.json" "a timeline for ui.perfetto.dev" \
	"cat \$T.map" "names, threads, clock, drops"
echo
echo "== record your own program"
echo "   gcc -finstrument-functions prog.c -o prog"
echo "   LD_PRELOAD=$so XFDR_OPTIONS=start=1 ./prog"
