/*
 * runtime/symbols/patterns.c - lists of shell patterns, split and checked (see patterns.h).
 */
#include <errno.h>
#include <string.h>

#include "runtime/symbols/patterns.h"

int patterns_split(char *text, const char **patterns, const char **why)
{
	char *p = text, *start = text;
	int n = 0;

	for (;; p++) {
		if (*p == '\\') {
			if (!p[1]) {
				*why = "a backslash ends it (write \\\\ for a backslash)";
				return -EINVAL;
			}
			p++;
			continue;
		}
		if (*p != ',' && *p)
			continue;
		if (p == start) {
			*why = "an empty pattern (two commas, or one at an end)";
			return -EINVAL;
		}
		if (n == PATTERNS_MAX) {
			*why = "more than 64 patterns";
			return -EINVAL;
		}
		patterns[n++] = start;
		if (!*p)
			return n;
		*p = '\0';
		start = p + 1;
	}
}

int patterns_check(const char *text, const char **why)
{
	char copy[PATTERNS_TEXT_MAX];
	const char *patterns[PATTERNS_MAX];
	size_t len = text ? strlen(text) : 0;

	if (!len)
		return 0;
	if (len >= sizeof(copy)) {
		*why = "longer than 2047 bytes";
		return -EINVAL;
	}
	memcpy(copy, text, len + 1);
	return patterns_split(copy, patterns, why) < 0 ? -EINVAL : 0;
}
