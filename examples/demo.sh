#!/bin/sh
# examples/demo.sh - `make demo`: record a real program with `xfdr record`, show what it recorded.
#
# usage: demo.sh PROGRAM XFDR_BIN OUT_DIR
#
# PROGRAM is built with -finstrument-functions only (build/examples/cyg_sort): `xfdr record`
# preloads the runtime, runs it, verifies its trace and prints the summary (threads, events,
# drops, the functions with the most self time); then the commands to look further.
set -u

prog=$1
xfdr=$2
out=$3

rm -rf "$out"
echo "== $xfdr record -o $out $prog 5000"
if ! "$xfdr" record -o "$out" "$prog" 5000; then
	echo "demo: recording $prog failed" >&2
	exit 1
fi
set -- "$out"/*.xray
trace=$1
if [ $# -ne 1 ] || [ ! -f "$trace" ]; then
	echo "demo: expected one trace in $out" >&2
	exit 1
fi
if ! "$xfdr" verify "$trace"; then
	echo "demo: the trace does not verify" >&2
	exit 1
fi

echo
echo "== look further"
echo "   T=$trace"
printf '   %-62s %s\n' \
	"$xfdr account \$T" "per-function latency table" \
	"$xfdr funcs \$T" "what recording each function cost" \
	"$xfdr flame \$T -o flame.svg" "a flame graph" \
	"$xfdr convert -f trace_event \$T -o t.json" "a timeline for ui.perfetto.dev" \
	"$xfdr dump \$T | less" "every record, with its offset" \
	"cat \$T.map" "names, threads, clock, drops"
echo
echo "== record your own program"
echo "   gcc -finstrument-functions -g prog.c -o prog && $xfdr record ./prog"
