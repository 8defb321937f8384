/*
 * tests/support/text.c - checking the text a command printed (see text.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tests/support/child.h"
#include "tests/support/text.h"

int text_count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

size_t text_count(const char *hay, const char *needle)
{
	size_t n = 0;

	while ((hay = strstr(hay, needle))) {
		n++;
		hay += strlen(needle);
	}
	return n;
}

const char *text_line_of(const char *hay, const char *needle)
{
	const char *p = strstr(hay, needle);

	while (p && p > hay && p[-1] != '\n')
		p--;
	return p;
}

void text_assert_equal(const char *got, const char *want)
{
	if (strcmp(got, want)) {
		size_t i = 0;

		while (got[i] && got[i] == want[i])
			i++;
		print_error("texts differ at byte %zu:\n--- got\n%s\n--- want\n%s\n", i, got, want);
		fail();
	}
}

void text_assert_contains(const char *hay, const char *needle)
{
	if (!strstr(hay, needle)) {
		print_error("[%s] does not contain [%s]\n", hay, needle);
		fail();
	}
}

void text_assert_one_error_line(const struct child_result *r, const char *prefix)
{
	const char *nl = strchr(r->err, '\n');

	if (strncmp(r->err, prefix, strlen(prefix)) || !nl || nl[1]) {
		print_error("stderr was [%s], expected one line starting with [%s]\n", r->err,
			    prefix);
		fail();
	}
}

void text_assert_only_error_line(const struct child_result *r, const char *prefix)
{
	text_assert_one_error_line(r, prefix);
	if (r->out_len) {
		print_error("stdout was [%s], expected nothing besides the error line\n", r->out);
		fail();
	}
}
