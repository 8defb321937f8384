#!/bin/sh
# Run each test binary given; report every failure, fail at the end if any failed.
failed=""
for t in "$@"; do
	echo "== $t"
	"$t" || failed="$failed $(basename "$t")"
done
if [ -n "$failed" ]; then
	echo "FAILED:$failed" >&2
	exit 1
fi
