#!/bin/sh
# bench/peer_lttng.sh - run one command under LTTng-UST's function tracer, in a session of its
# own, and print what LTTng recorded as a trace line of the row protocol (bench/harness.h).
#
# usage: peer_lttng.sh -k KEY [-s SUBBUF_SIZE] [-c SUBBUF_COUNT] -- COMMAND [ARGS...]
#   KEY           the row key of the trace and process lines
#   SUBBUF_SIZE   the UST channel's sub-buffer size, as lttng takes it (default 8M)
#   SUBBUF_COUNT  its sub-buffers per CPU (default 8)
#
# COMMAND's code must be built with -finstrument-functions; it runs with
# liblttng-ust-cyg-profile-fast.so.1 preloaded (package liblttng-ust1), whose
# __cyg_profile_func_enter/exit record lttng_ust_cyg_profile_fast:func_entry/func_exit. Around
# it: a private lttng-sessiond (LTTNG_HOME a fresh temporary folder), a session writing into a
# temporary folder, one UST channel in discard mode (a full buffer drops events and LTTng counts
# them), only the cyg-profile events enabled. Prints COMMAND's stdout, then
#   process KEY MS                            COMMAND's wall time alone (no session set-up)
#   trace KEY EVENTS BYTES DROPPED NOTE
# EVENTS: event records in the trace, counted by babeltrace (untimed); BYTES: the stream files
# (metadata and index excluded); DROPPED: the discarded events `lttng list` reports for the
# channel after stop. Everything it started (session daemon, consumer daemon) is stopped and
# its temporary folder removed before it exits.
#
# As root, the session daemon's run folder is /var/run/lttng whatever LTTNG_HOME says, and an
# application registers with that root daemon: there can be only one. Runs of this script
# therefore take turns (flock), and it refuses to run beside a root daemon it did not start.
# Exit status: COMMAND's when tracing worked; 1 with a trace line whose note starts with
# FAILED when it did not; 2 on bad usage.
set -u

key= subbuf=8M nsubbuf=8
while getopts k:s:c: opt; do
	case $opt in
	k) key=$OPTARG ;;
	s) subbuf=$OPTARG ;;
	c) nsubbuf=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ "${1:-}" = "--" ] && shift
if [ -z "$key" ] || [ $# -eq 0 ]; then
	echo "usage: peer_lttng.sh -k KEY [-s SUBBUF_SIZE] [-c SUBBUF_COUNT] -- COMMAND [ARGS...]" >&2
	exit 2
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/xfdr-peer-lttng.XXXXXX") || exit 1
session=xfdr-peer-$$
sessiond_pid=
children=
created=0

LTTNG_HOME=$tmp/home
export LTTNG_HOME
mkdir -p "$LTTNG_HOME" "$tmp/no-sessions"
if [ "$(id -u)" = 0 ]; then
	rundir=/var/run/lttng
else
	rundir=$LTTNG_HOME/.lttng
fi

# alive PID: the process exists and is not a zombie waiting for init to reap it.
alive() {
	state=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
	case $state in Z*) return 1 ;; esac
	return 0
}

# stop PID...: SIGTERM, then up to 5 s for each to end, then SIGKILL.
stop() {
	for p in "$@"; do
		alive "$p" && kill "$p" 2>/dev/null
	done
	for p in "$@"; do
		i=0
		while alive "$p" && [ $i -lt 50 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		alive "$p" && kill -9 "$p" 2>/dev/null
	done
}

cleanup() {
	if [ $created = 1 ]; then
		lttng destroy "$session" >>"$tmp/log" 2>&1
		created=0
	fi
	# The consumer daemon is the session daemon's child, which ends it on SIGTERM; the
	# children are stopped as well in case the session daemon could not.
	[ -n "$sessiond_pid" ] && stop $sessiond_pid $children
	sessiond_pid=
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# fail WHAT: the trace line of a tracer that did not work, lttng's own words on stderr.
fail() {
	printf 'trace\t%s\t-\t-\t-\tFAILED: %s\n' "$key" "$1"
	[ -s "$tmp/log" ] && sed 's/^/peer_lttng: /' "$tmp/log" >&2
	exit 1
}

# Session set-up and tear-down are not timed, so waiting here for another run costs nothing.
# The lock is this script's own file: nothing to create, nothing left behind. What this starts
# does not inherit it (9<&-), so the lock ends with this run.
exec 9<"$0"
flock 9 || fail "flock on $0"
if [ -f "$rundir/lttng-sessiond.pid" ] && alive "$(cat "$rundir/lttng-sessiond.pid")"; then
	fail "an lttng-sessiond this script did not start runs (pid $(cat "$rundir/lttng-sessiond.pid"))"
fi
# --load of an empty folder: no session saved for auto-loading (~/.lttng, /etc/lttng) joins in.
lttng-sessiond --daemonize --no-kernel --quiet --load="$tmp/no-sessions" >>"$tmp/log" 2>&1 9<&- ||
	fail "lttng-sessiond did not start"
sessiond_pid=$(cat "$rundir/lttng-sessiond.pid" 2>/dev/null)
[ -n "$sessiond_pid" ] || fail "lttng-sessiond wrote no pid file in $rundir"

lttng create "$session" --output="$tmp/trace" >>"$tmp/log" 2>&1 || fail "lttng create"
created=1
lttng enable-channel --userspace --session="$session" --discard --subbuf-size="$subbuf" \
	--num-subbuf="$nsubbuf" ch >>"$tmp/log" 2>&1 || fail "lttng enable-channel"
lttng enable-event --userspace --session="$session" --channel=ch \
	'lttng_ust_cyg_profile_fast:*' >>"$tmp/log" 2>&1 || fail "lttng enable-event"
lttng start "$session" >>"$tmp/log" 2>&1 || fail "lttng start"
children=$(pgrep -P "$sessiond_pid" | tr '\n' ' ')

t0=$(date +%s%N)
LD_PRELOAD="liblttng-ust-cyg-profile-fast.so.1${LD_PRELOAD:+:$LD_PRELOAD}" "$@" 9<&-
rc=$?
t1=$(date +%s%N)
printf 'process\t%s\t%d\n' "$key" $(((t1 - t0) / 1000000))

# stop waits until the consumer has written every sub-buffer; the counters are final after it.
lttng stop "$session" >>"$tmp/log" 2>&1 || fail "lttng stop"
lttng list "$session" >"$tmp/list" 2>>"$tmp/log" || fail "lttng list"
dropped=$(awk -F: '/Discarded events:|Lost packets:/ { n += $2 } END { print n + 0 }' "$tmp/list")
lttng destroy "$session" >>"$tmp/log" 2>&1 || fail "lttng destroy"
created=0
stop $sessiond_pid $children
sessiond_pid=
exec 9>&-

# Per-user buffers: the streams are in ust/uid/UID/64-bit/ only if the program registered.
streams=$(find "$tmp/trace" -type f ! -name metadata ! -path '*/index/*' 2>/dev/null)
[ -n "$streams" ] || fail "no trace written: COMMAND never registered with the session daemon"
bytes=$(find "$tmp/trace" -type f ! -name metadata ! -path '*/index/*' -exec stat -c %s {} + |
	awk '{ n += $1 } END { print n + 0 }')
# One line per event. No time delta, no field names, cycles for the time stamp, and instead of
# the default fields (host, process, pid) only emf, which these events lack: a third faster.
events=$( {
	babeltrace --no-delta --clock-cycles --names=none --fields=emf "$tmp/trace" \
		2>>"$tmp/log" || echo "$?" >"$tmp/babeltrace.failed"
} | wc -l)
[ -f "$tmp/babeltrace.failed" ] && fail "babeltrace could not read the trace"
printf 'trace\t%s\t%d\t%d\t%d\tLTTng-UST %s, %s x %s sub-buffers a CPU, discard mode\n' \
	"$key" "$events" "$bytes" "$dropped" \
	"$(lttng --version | sed -n 's/^lttng (LTTng Trace Control) \([^ ]*\).*/\1/p')" \
	"$nsubbuf" "$subbuf"
exit $rc
