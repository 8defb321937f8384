#!/bin/sh
# libxfdr.so may export only the public API (xfdr_*), the instrumentation hooks
# (-finstrument-functions, and -pg -mfentry -minstrument-return=call), dlclose, which
# names an unloaded library's functions for the .map before the real one runs
# (runtime/symbols/unload.c), _Fork, which tells a fork child made without the atfork
# handlers which thread made it (runtime/record/thread_fork.c), sigaction and signal, which keep xfdr's crash handler
# installed under the program's, and _exit and _Exit, which flush a crash before the
# program's crash handler ends the process (runtime/flush/sig_interpose.c).
# The reader library (libxfdr_reader.a, installed) defines, as global symbols, the functions
# its installed header declares (include/xfdr/reader.h) and its own rd_* helpers, which a
# static archive cannot hide; nothing else (the call pairer left it for analysis/ when it
# had no installed header).
so=$1
reader_a=$2
if ! syms=$(nm -D --defined-only "$so"); then
	echo "check_exports: cannot read the dynamic symbols of $so" >&2
	exit 1
fi
bad=$(printf '%s\n' "$syms" | awk '{print $3}' |
	grep -v -E '^(xfdr_|__cyg_profile_func_(enter|exit)$|__fentry__$|__return__$|dlclose$|_Fork$|sigaction$|signal$|_exit$|_Exit$|_init$|_fini$|_edata$|_end$|__bss_start$)')
if [ -n "$bad" ]; then
	echo "check_exports: $so exports symbols outside the public API:" >&2
	echo "$bad" >&2
	exit 1
fi
echo "check_exports: $so exports only xfdr_*, hooks, dlclose, _Fork, sigaction, signal, _exit and _Exit"
[ -n "$reader_a" ] || exit 0
if ! rsyms=$(nm -g --defined-only "$reader_a" | awk 'NF == 3 {print $3}' | sort -u); then
	echo "check_exports: cannot read the symbols of $reader_a" >&2
	exit 1
fi
status=0
for s in $rsyms; do
	case $s in
	rd_*) ;;
	xfdr_*)
		grep -q "\\b$s\\b" include/xfdr/reader.h ||
			{ echo "check_exports: $reader_a: $s is not declared in include/xfdr/reader.h" >&2; status=1; } ;;
	*) echo "check_exports: $reader_a: $s is neither xfdr_* nor rd_*" >&2; status=1 ;;
	esac
done
[ $status = 0 ] && echo "check_exports: $reader_a defines only what include/xfdr/reader.h declares, and rd_* helpers"
exit $status
