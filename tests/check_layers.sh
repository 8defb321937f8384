#!/bin/sh
# Who may include whom (README's layout table):
#   - the writer (writer/) includes only system headers, the public ones (xfdr/) and its own;
#   - the runtime (runtime/) never includes the reader (reader/); the reader library includes
#     only the public headers and its own (not the runtime, the analysis or the command);
#   - the analysis library (analysis/) includes only the public headers (xfdr/) and its own,
#     and never prints: no stdio output call names stdout or stderr or prints to a stream
#     (it reports through struct xfdr_error and progress callbacks);
#   - the rebuild library (rebuild/) includes only the public headers, the writer's (it encodes
#     through it), the reader's byte-order loads and error wording (reader/bytes.h,
#     reader/error.h) and its own, and never prints, as the analysis library;
#   - the launcher (launcher/: running a program for `xfdr record`) includes only the public
#     headers and its own, and never prints;
#   - the command (command/) includes no header of the reader library but the public
#     include/xfdr/reader.h: the reader's internals are not the verbs' business;
#   - a verb of the xfdr command (command/V.c and V_*.c, V a file that defines cmd_V())
#     includes no other verb's header: what two verbs share lives in a library;
#   - no C file or header includes a .c file (a test reaches a module's inner state through
#     its hidden inspection functions, fnmap.h's say, not by compiling it in);
#   - no two source files share a name anywhere in the tree (READMEs aside; the fuzz corpus
#     and regressions are data), so that a name finds one file.
# KNOWN lists the inclusions that break a rule today, each with the work that ends it; a
# listed one that no longer happens fails too, so the list only shrinks.
# Prints everything that breaks a rule; exit status 1 if any.
# Usage: tests/check_layers.sh (from the top of the tree)
KNOWN=''
status=0
found=$(mktemp)
trap 'rm -f "$found"' EXIT

# "FILE HEADER" for every quoted #include of FILE.
includes() {
	for f in "$@"; do
		sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
			sed "s|^|$f |"
	done
}

breaks() {
	echo "$1 $2" >>"$found"
}

includes writer/*.c writer/*.h | while read -r f h; do
	case $h in xfdr/* | writer/*) ;; *) breaks "$f" "$h" ;; esac
done
for f in $(find runtime -name '*.[ch]'); do
	includes "$f" | while read -r f h; do
		case $h in reader/*) breaks "$f" "$h" ;; esac
	done
done
includes analysis/*.c analysis/*.h | while read -r f h; do
	case $h in xfdr/* | analysis/*) ;; *) breaks "$f" "$h" ;; esac
done
includes launcher/*.c launcher/*.h | while read -r f h; do
	case $h in xfdr/* | launcher/*) ;; *) breaks "$f" "$h" ;; esac
done
includes rebuild/*.c rebuild/*.h | while read -r f h; do
	case $h in xfdr/* | writer/* | rebuild/* | reader/bytes.h | reader/error.h) ;; *) breaks "$f" "$h" ;; esac
done
includes command/*.c command/*.h | while read -r f h; do
	case $h in reader/*) breaks "$f" "$h" ;; esac
done
# Comments are not code: only lines that do not start a comment's text are searched.
grep -nE '\b(printf|vprintf|fprintf|vfprintf|puts|fputs|putchar|fputc|putc|perror|fwrite|stdout|stderr)\b' \
	analysis/*.c analysis/*.h rebuild/*.c rebuild/*.h launcher/*.c launcher/*.h |
	grep -vE '^[^:]*:[0-9]+:[[:space:]]*(/?\*|//)' | grep -v '__attribute__((format(printf' |
	while IFS=: read -r f line rest; do
		breaks "$f:$line" "(prints)"
	done
includes reader/*.c reader/*.h | while read -r f h; do
	case $h in xfdr/* | reader/*) ;; *) breaks "$f" "$h" ;; esac
done
verbs=$(grep -l '^int cmd_[a-z_]*(' command/*.c | sed 's|command/\(.*\)\.c|\1|')
includes command/*.c | while read -r f h; do
	base=$(basename "$f" .c)
	for v in $verbs; do
		[ "$h" = "command/$v.h" ] || continue
		case $base in "$v" | "$v"_*) ;; *) breaks "$f" "$h" ;; esac
	done
done

# Every C file and header of the tree, the fuzz targets and tests included.
find analysis bench command examples launcher reader rebuild runtime tests writer include \
	-name '*.[ch]' ! -path 'tests/fuzz/corpus/*' 2>/dev/null | sort | while read -r f; do
	includes "$f"
done | while read -r f h; do
	case $h in *.c) breaks "$f" "$h" ;; esac
done

# Tracked files (every file below the top when this is not a git checkout).
{ git ls-files 2>/dev/null || find . -type f ! -path './build*' ! -path './.git/*' | sed 's|^\./||'; } |
	grep -v -e '^tests/fuzz/corpus/' -e '^tests/fuzz/regressions/' -e '/README\.md$' -e '^README\.md$' |
	awk -F/ '{ n = $NF; if (n in seen) print seen[n], $0; else seen[n] = $0 }' |
	while read -r first again; do
		breaks "$again" "(the name of $first)"
	done

while read -r f h; do
	if echo "$KNOWN" | grep -q "^$f $h "; then
		continue
	fi
	case $h in
	"(prints)") echo "check_layers: $f prints: a library reports through struct xfdr_error" >&2 ;;
	"(the name of "*) echo "check_layers: $f has $(echo "$h" | sed 's/^(//; s/)$//'): rename one" >&2 ;;
	*) echo "check_layers: $f includes $h" >&2 ;;
	esac
	status=1
done <"$found"
echo "$KNOWN" | while read -r f h why; do
	[ -n "$f" ] || continue
	if ! grep -qx "$f $h" "$found"; then
		echo "check_layers: $f no longer includes $h: take it off KNOWN" >&2
		exit 1
	fi
done || status=1
[ $status = 0 ] && echo "check_layers: the writer, the runtime, the analysis, rebuild and launcher libraries, the reader and the command include only what they may, the libraries print nothing, no file includes a .c, no two files share a name ($(echo "$KNOWN" | grep -c .) known exceptions)"
exit $status
