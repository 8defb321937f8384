#!/bin/sh
# libxfdr.so may export only the public API (xfdr_*), the instrumentation hooks
# (-finstrument-functions, and -pg -mfentry -minstrument-return=call), dlclose, which
# names an unloaded library's functions for the .map before the real one runs
# (runtime/symbols/unload.c), _Fork, which tells a fork child made without the atfork
# handlers which thread made it (runtime/record/thread_fork.c), sigaction and signal, which keep xfdr's crash handler
# installed under the program's, and _exit and _Exit, which flush a crash before the
# program's crash handler ends the process (runtime/flush/sig_interpose.c).
so=$1
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
