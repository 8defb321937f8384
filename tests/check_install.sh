#!/bin/sh
# tests/check_install.sh - `make install` into a scratch prefix, then build and record programs
# against it with pkg-config only (nothing from the source or build tree but the example
# sources), then `make uninstall`, which must leave no file behind.
#
# usage: check_install.sh SRC BUILD WORK LLVM_XRAY
#
# Ways checked: gcc -finstrument-functions recorded by the installed `xfdr record` (which
# preloads the installed libxfdr.so.0); clang -fxray-instrument linked with
# `pkg-config --libs xfdr` (the shared runtime); the manual API likewise; a fully static
# -finstrument-functions program linked with `pkg-config --static --libs xfdr`. Every trace
# must pass `xfdr verify` and `llvm-xray convert`. One PASS or FAIL line per check.
set -u

src=$1
build=$2
work=$3
llvm=$4
prefix=$work/prefix
failed=0

pass() { echo "PASS install: $1"; }
fail() {
	echo "FAIL install: $1"
	[ -f "$work/log" ] && sed 's/^/    | /' "$work/log"
	failed=1
}

# ok NAME COMMAND...: run it, its output into $work/log; PASS or FAIL with the log.
ok() {
	name=$1
	shift
	if "$@" >"$work/log" 2>&1; then
		pass "$name"
		return 0
	fi
	fail "$name"
	return 1
}

# traced NAME DIR: DIR holds exactly one trace, and both readers accept it; sets $trace.
traced() {
	set -- "$1" "$2"/xfdr-*.xray
	if [ $# -ne 2 ] || [ ! -f "$2" ]; then
		fail "$1: expected one trace, found: $*"
		return 1
	fi
	trace=$2
	ok "$1: xfdr verify" "$prefix/bin/xfdr" verify "$trace" &&
		ok "$1: llvm-xray convert" "$llvm" convert --output-format=yaml "$trace"
}

rm -rf "$work"
mkdir -p "$work" || exit 1
ok "make install PREFIX=$prefix" make -C "$src" --no-print-directory BUILD="$build" \
	install PREFIX="$prefix" || exit 1
for f in bin/xfdr include/xfdr/xfdr.h include/xfdr/reader.h include/xfdr/format.h \
	lib/libxfdr.so lib/libxfdr.so.0 lib/libxfdr.a lib/libxfdr_xray.a lib/libxfdr_reader.a \
	lib/pkgconfig/xfdr.pc share/man/man1/xfdr.1; do
	[ -e "$prefix/$f" ] || fail "installed $f"
done
ok "soname libxfdr.so.0" sh -c "readelf -d '$prefix/lib/libxfdr.so.0' | grep -q 'SONAME.*\[libxfdr.so.0\]'"
ok "man page renders" sh -c "MANPATH='$prefix/share/man' man -P cat xfdr | grep -q 'xfdr record'"

export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
cflags=$(pkg-config --cflags xfdr) && libs=$(pkg-config --libs xfdr) &&
	static_libs=$(pkg-config --static --libs xfdr) || fail "pkg-config xfdr"
cd "$work" && mkdir xray manual static || exit 1

# -finstrument-functions, unmodified program: `xfdr record` finds libxfdr.so.0 next to itself.
if ok "cyg: build" gcc -O2 -finstrument-functions "$src/examples/sort.c" -o sort_cyg &&
	ok "cyg: xfdr record" "$prefix/bin/xfdr" record -q -o cyg ./sort_cyg; then
	traced cyg cyg && ok "cyg: quicksort named" grep -q 'quicksort' "$trace.map"
fi

# clang XRay, linked with the shared runtime through pkg-config.
# shellcheck disable=SC2086 # word splitting of pkg-config's flags is intended
if ok "xray: build" clang -O2 -fxray-instrument -fxray-instruction-threshold=1 \
	"$src/examples/sort.c" $cflags $libs -o sort_xray &&
	ok "xray: run" env LD_LIBRARY_PATH="$prefix/lib" XFDR_OPTIONS="start=1 output=xray/" \
		./sort_xray; then
	traced xray xray &&
		ok "xray: llvm-xray account names quicksort" sh -c \
			"'$llvm' account -m sort_xray '$trace' | grep -q quicksort"
fi

# The manual API and macros (xfdr.h from the prefix).
# shellcheck disable=SC2086
if ok "manual: build" cc -O2 "$src/examples/manual.c" $cflags $libs -o manual_api &&
	ok "manual: run" env LD_LIBRARY_PATH="$prefix/lib" XFDR_OPTIONS="output=manual/" ./manual_api; then
	traced manual manual
fi

# The static runtime: everything static, from `pkg-config --static --libs`.
# shellcheck disable=SC2086
if ok "static: build" gcc -static -O2 -finstrument-functions "$src/examples/sort.c" $cflags \
	$static_libs -o sort_static &&
	ok "static: no shared library" sh -c "! readelf -d sort_static | grep -q NEEDED" &&
	ok "static: run" env XFDR_OPTIONS="start=1 output=static/" ./sort_static; then
	traced static static
fi

ok "make uninstall" make -C "$src" --no-print-directory BUILD="$build" uninstall \
	PREFIX="$prefix"
left=$(find "$prefix" ! -type d)
if [ -n "$left" ]; then
	echo "$left" >"$work/log"
	fail "uninstall left files behind"
else
	pass "uninstall removes every file"
fi
[ "$failed" = 0 ] && rm -rf "$work"
exit "$failed"
