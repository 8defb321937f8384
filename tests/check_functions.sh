#!/bin/sh
# No function of the project (tests and bench aside) is longer than MAX lines, counted from
# its opening brace to its closing one: a longer one does more than one thing, and the
# next reader features should not land in one.
# The project's C is as clang-format writes it (check-format), so a function body is exactly
# what lies between a '{' and a '}' alone in the first column. Every .c file of writer/,
# runtime/, reader/, analysis/, rebuild/, launcher/ and command/ is read; fewer than MIN functions found
# means the scan read nothing and fails too.
# Prints each function over the limit as FILE:LINE: NAME is N lines; exit status 1 if any.
# Usage: tests/check_functions.sh [MAX] (from the top of the tree; MAX defaults to 100)
max=${1:-100}
min=300
files=$(ls writer/*.c runtime/*/*.c reader/*.c analysis/*.c rebuild/*.c launcher/*.c command/*.c 2>/dev/null)
[ -n "$files" ] || { echo "check_functions: no sources found (run from the top of the tree)" >&2; exit 2; }

# shellcheck disable=SC2086 # the file names have no spaces
awk -v max="$max" -v min="$min" '
	FNR == 1 { head = ""; open = 0 }
	# The line that names a function: a definition starts in the first column.
	!open && /^[A-Za-z_].*\(/ && !/;[[:space:]]*$/ { head = $0; head_line = FNR }
	!open && /^\{/ && head != "" { open = 1; start = FNR; next }
	open && /^\}/ {
		open = 0
		found++
		n = FNR - start - 1
		if (n > max) {
			name = head
			sub(/\(.*/, "", name)
			sub(/.*[ *]/, "", name)
			printf "%s:%d: %s is %d lines (at most %d)\n", FILENAME, head_line, name, n, max
			bad++
		}
		head = ""
	}
	END {
		if (found < min) {
			printf "check_functions: found only %d functions: the scan is broken\n", found
			exit 1
		}
		if (bad)
			exit 1
		printf "check_functions: %d functions, none over %d lines\n", found, max
	}
' $files
