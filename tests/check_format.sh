#!/bin/sh
# Every C file and header of the project is as clang-format writes it (.clang-format at the
# top): the tracked ones where git knows the tree, else those under the source folders. The
# fuzz corpus holds no C. Prints each file that differs, with clang-format's own message.
# Usage: tests/check_format.sh [CLANG_FORMAT]
fmt=${1:-$(command -v clang-format || command -v clang-format-14)}
if [ -z "$fmt" ]; then
	echo "check_format: clang-format not found (make deps installs it)" >&2
	exit 1
fi
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	files=$(git ls-files '*.c' '*.h')
else
	files=$(find include runtime writer reader tests bench examples -name '*.[ch]')
fi
differ=$(echo "$files" | xargs "$fmt" --dry-run 2>&1 | grep 'warning:')
if [ -n "$differ" ]; then
	echo "$differ" | cut -d: -f1 | sort | uniq -c
	echo "check_format: $(echo "$differ" | wc -l) places differ from clang-format; run: clang-format -i FILE" >&2
	exit 1
fi
echo "check_format: $(echo "$files" | wc -l) files as clang-format writes them"
