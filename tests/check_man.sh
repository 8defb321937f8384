#!/bin/sh
# check_man.sh BIN MANPAGE [SRC] - the man page must stay true to the command and the runtime.
#
# Fails (exit 1, one line per problem) when
#   - MANPAGE has mdoc warnings or errors (mandoc -T lint -W warning; groff -ww without mandoc),
#   - a command that `BIN --help` lists has no SYNOPSIS line `xfdr COMMAND` or no subsection
#     `xfdr COMMAND`,
#   - a long option that `BIN COMMAND --help` prints is not in that command's subsection
#     (--help itself: anywhere in the page), or `BIN COMMAND --help` fails,
#   - a key of the runtime's option table (SRC/runtime/control/options.c) has no list item
#     `KEY=...` in the page.
# Every list the check compares against is parsed from a real source; a parse that finds
# fewer entries than the tool plainly has is an error, so the check cannot pass by reading
# nothing. SRC defaults to the repository this script is in. Exit 2: usage or missing tool.

usage() {
	echo "usage: check_man.sh BIN MANPAGE [SRC]" >&2
	exit 2
}

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
	usage
fi
bin=$1
page=$2
src=${3:-$(dirname "$0")/..}
opts_c=$src/runtime/control/options.c

[ -x "$bin" ] || { echo "check_man: $bin: not an executable" >&2; exit 2; }
[ -r "$page" ] || { echo "check_man: $page: cannot read" >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/check_man.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
trap 'exit 2' HUP INT TERM

problems=0
fail() {
	echo "check_man: $page: $*" >&2
	problems=$((problems + 1))
}

# ---- 1. mdoc lint ------------------------------------------------------------------------
if command -v mandoc >/dev/null 2>&1; then
	linter="mandoc -T lint -W warning"
	mandoc -T lint -W warning "$page" >"$tmp/lint" 2>&1
	rc=$?
	# mandoc exits 0 only when nothing at or above the warning level was found.
	if [ $rc -ne 0 ] || [ -s "$tmp/lint" ]; then
		fail "mdoc lint ($linter, exit $rc):"
		sed 's/^/    /' "$tmp/lint" >&2
	fi
elif command -v groff >/dev/null 2>&1; then
	linter="groff -mdoc -ww -z (mandoc is not installed)"
	echo "check_man: mandoc not found; linting with groff, which checks less" >&2
	groff -mdoc -ww -z "$page" >"$tmp/lint" 2>&1
	rc=$?
	if [ $rc -ne 0 ] || [ -s "$tmp/lint" ]; then
		fail "mdoc lint ($linter, exit $rc):"
		sed 's/^/    /' "$tmp/lint" >&2
	fi
else
	echo "check_man: neither mandoc nor groff is installed: cannot check $page" >&2
	exit 2
fi

# ---- 2. the page as a reader sees it ----------------------------------------------------
# One paragraph per line (very wide, no hyphenation), overstrike removed: headings at column
# 0 (.Sh) and 3 (.Ss), text at 5, list items' heads at 5 (.Bl in a section).
bs=$(printf '\b')
if command -v mandoc >/dev/null 2>&1; then
	mandoc -T ascii -O width=1000 "$page" >"$tmp/raw" 2>/dev/null
else
	groff -mdoc -T ascii -P-c -P-b -P-u -rLL=1000n -rHY=0 "$page" >"$tmp/raw" 2>/dev/null
fi
sed "s/.$bs//g" "$tmp/raw" >"$tmp/text"
if ! grep -q '^SYNOPSIS' "$tmp/text" || ! grep -q '^DESCRIPTION' "$tmp/text"; then
	echo "check_man: $page does not render to a page with SYNOPSIS and DESCRIPTION" >&2
	exit 1
fi

# The lines of section $1 (a .Sh title), without its heading.
section() {
	awk -v sh="$1" '
		/^[^ ]/ { in_sh = ($0 == sh); next }
		in_sh' "$tmp/text"
}

# The lines of subsection $1 (a .Ss title), without its heading.
subsection() {
	awk -v ss="   $1" '
		/^[^ ]/ || /^   [^ ]/ { in_ss = ($0 == ss); next }
		in_ss' "$tmp/text"
}

# ---- 3. commands and their long options ---------------------------------------------------
if ! "$bin" --help >"$tmp/help" 2>&1; then
	echo "check_man: '$bin --help' failed:" >&2
	sed 's/^/    /' "$tmp/help" >&2
	exit 1
fi
# The commands are the first words of the indented lines after "Commands:".
awk '/^Commands:/ { on = 1; next }
     on && /^$/ { exit }
     on && /^  [a-z]/ { print $1 }' "$tmp/help" >"$tmp/commands"
ncommands=$(wc -l <"$tmp/commands")
if [ "$ncommands" -lt 5 ]; then
	echo "check_man: found $ncommands commands in '$bin --help' (expected at least 5):" \
	     "its 'Commands:' list changed shape; fix this check" >&2
	exit 1
fi

section SYNOPSIS >"$tmp/synopsis"
noptions=0
for cmd in $(cat "$tmp/commands"); do
	grep -Eq "^ +xfdr $cmd( |\$)" "$tmp/synopsis" ||
		fail "SYNOPSIS has no line for 'xfdr $cmd'"
	subsection "xfdr $cmd" >"$tmp/sub"
	if [ ! -s "$tmp/sub" ]; then
		fail "no subsection 'xfdr $cmd' (.Ss xfdr $cmd) for the command '$cmd'"
	fi
	if ! "$bin" "$cmd" --help >"$tmp/cmdhelp" 2>&1; then
		fail "'$bin $cmd --help' failed, so its options cannot be checked:" \
		     "$(head -n 1 "$tmp/cmdhelp")"
		continue
	fi
	for opt in $(grep -o -- '--[a-z][a-z-]*' "$tmp/cmdhelp" | sort -u); do
		noptions=$((noptions + 1))
		if [ "$opt" = --help ]; then
			where="$tmp/text"
			what="the page"
		else
			where="$tmp/sub"
			what="subsection 'xfdr $cmd'"
		fi
		# Whole option names only: --sort must not be found inside --sortorder.
		grep -Eq -- "$opt([^a-z-]|\$)" "$where" ||
			fail "'xfdr $cmd --help' prints $opt, $what does not"
	done
done

# ---- 4. the runtime's XFDR_OPTIONS keys ---------------------------------------------------
if [ ! -r "$opts_c" ]; then
	echo "check_man: $opts_c: cannot read (pass the repository as SRC)" >&2
	exit 2
fi
# The rows of `static const struct opt_row opt_rows[] = { ... };`, each `{"key", ...`.
awk '/opt_rows\[\][[:space:]]*=/ { on = 1 }
     on { print }
     on && /^[[:space:]]*};/ { exit }' "$opts_c" |
	grep -o '{[[:space:]]*"[a-z_][a-z0-9_]*"[[:space:]]*,' |
	sed 's/^{[[:space:]]*"\([a-z0-9_]*\)".*/\1/' | sort -u >"$tmp/keys"
nkeys=$(wc -l <"$tmp/keys")
if [ "$nkeys" -lt 10 ]; then
	echo "check_man: found $nkeys keys in the opt_rows table of $opts_c (expected at least" \
	     "10): the table changed shape; fix this check" >&2
	exit 1
fi
for key in $(cat "$tmp/keys"); do
	grep -Eq "^     $key(=| |\$)" "$tmp/text" ||
		fail "XFDR_OPTIONS key '$key' ($opts_c) has no list item '$key=...'"
done

if [ "$problems" -ne 0 ]; then
	echo "check_man: $page: $problems problem(s)" >&2
	exit 1
fi
echo "check_man: $page: $ncommands commands, $noptions long options, $nkeys XFDR_OPTIONS" \
     "keys documented; $linter clean"
