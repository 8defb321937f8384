#!/bin/sh
# bench/peer_uftrace.sh - run one command under `uftrace record` and print what uftrace
# recorded as a trace line of the row protocol (bench/harness.h).
#
# usage: peer_uftrace.sh -k KEY [-o 'RECORD_OPTIONS'] -- COMMAND [ARGS...]
#   KEY             the row key of the trace and process lines
#   RECORD_OPTIONS  uftrace record's options (default: --no-libcall --no-event --no-sched)
#
# COMMAND's code must be built with -pg (gcc; mcount) or -finstrument-functions. By default
# uftrace records only those functions: not the library calls through the PLT, not the
# scheduler's events, as the other rows record only the functions built to be traced.
# uftrace passes COMMAND's stdout through; after it this prints
#   process KEY MS                            the wall time of `uftrace record COMMAND`
#   trace KEY EVENTS BYTES DROPPED NOTE
# EVENTS: 2 x the calls `uftrace report` counts (an entry and an exit per call; a call that
# never returned, as one ending in exit(), counts 2 all the same); BYTES: the *.dat files that
# hold the records; DROPPED: the records uftrace says it lost ("LOST N records" from record or
# report). Counting is not timed. The data folder is temporary and removed before it exits.
# Exit status: COMMAND's when tracing worked; 1 with a trace line whose note starts with
# FAILED when it did not; 2 on bad usage.
set -u

key= opts="--no-libcall --no-event --no-sched"
while getopts k:o: opt; do
	case $opt in
	k) key=$OPTARG ;;
	o) opts=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ "${1:-}" = "--" ] && shift
if [ -z "$key" ] || [ $# -eq 0 ]; then
	echo "usage: peer_uftrace.sh -k KEY [-o 'RECORD_OPTIONS'] -- COMMAND [ARGS...]" >&2
	exit 2
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/xfdr-peer-uftrace.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM

# fail WHAT: the trace line of a tracer that did not work, uftrace's own words on stderr.
fail() {
	printf 'trace\t%s\t-\t-\t-\tFAILED: %s\n' "$key" "$1"
	[ -s "$tmp/log" ] && sed 's/^/peer_uftrace: /' "$tmp/log" >&2
	exit 1
}

# uftrace's messages go to the log (scanned for LOST below, shown on failure), COMMAND's
# stderr with them: uftrace does not keep the two apart.
t0=$(date +%s%N)
# shellcheck disable=SC2086 # $opts is a list of options
uftrace record $opts -d "$tmp/data" "$@" 2>"$tmp/log"
rc=$?
t1=$(date +%s%N)
printf 'process\t%s\t%d\n' "$key" $(((t1 - t0) / 1000000))
# uftrace exits with COMMAND's status; only a missing info file says uftrace itself failed.
[ -f "$tmp/data/info" ] || fail "uftrace record wrote no trace (exit status $rc)"
grep -v '^WARN: LOST' "$tmp/log" >&2

uftrace report -d "$tmp/data" >"$tmp/report" 2>>"$tmp/log" || fail "uftrace report"
# The report's rows: total time, unit, self time, unit, calls, function; kernel and event
# rows (linux:..., /...) are not function calls.
events=$(awk '/^ *=+/ { rows = 1; next }
	rows && NF >= 6 && $6 !~ /^(linux:|\/)/ { n += $5 } END { print 2 * n }' "$tmp/report")
dropped=$(cat "$tmp/log" "$tmp/report" |
	sed -n 's/.*LOST \([0-9][0-9]*\) records.*/\1/p' | awk '{ n += $1 } END { print n + 0 }')
bytes=$(find "$tmp/data" -name '*.dat' -exec stat -c %s {} + |
	awk '{ n += $1 } END { print n + 0 }')
printf 'trace\t%s\t%s\t%d\t%d\tuftrace %s, record %s\n' "$key" "$events" "$bytes" "$dropped" \
	"$(uftrace --version | sed -n 's/^uftrace \(v[^ ]*\).*/\1/p')" "$opts"
exit $rc
