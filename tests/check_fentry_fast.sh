#!/bin/sh
# tests/check_fentry_fast.sh OBJECT - the fentry stubs call the code in OBJECT
# (runtime/hooks/fentry_fast.c) with only the general registers saved: it must use no vector
# register (xmm, ymm, zmm) and call nothing (a callee may use them). Fails, naming the
# instruction, when it does; and when objdump cannot read the object or finds neither function.
set -u
obj=$1
dis=$(objdump -d --no-show-raw-insn "$obj") || { echo "check_fentry_fast: objdump failed on $obj"; exit 1; }
for fn in fentry_enter_fast fentry_return_fast; do
	echo "$dis" | grep -q "<$fn>:" || { echo "check_fentry_fast: $obj has no $fn"; exit 1; }
done
# Any call (one into the functions' own .cold parts reaches another function from there), and
# any jump to another function (a tail call); jumps inside the two functions are their own.
bad=$(echo "$dis" | grep -E '%[xyz]mm|[[:space:]]call'
	echo "$dis" | grep -E 'jmp[[:space:]]+[^*]*<[^>.+]*>$' | grep -v '<fentry_[a-z]*_fast')
if [ -n "$bad" ]; then
	echo "check_fentry_fast: $obj uses a vector register or calls out:"
	echo "$bad"
	exit 1
fi
echo "check_fentry_fast: fentry_enter_fast and fentry_return_fast use no vector register and call nothing"
