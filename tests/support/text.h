/*
 * tests/support/text.h - checking the text a command printed: exact, a part of it, one error
 * line. Each failure prints what was got and what was wanted, then fails the cmocka test.
 */
#ifndef XFDR_TESTS_SUPPORT_TEXT_H
#define XFDR_TESTS_SUPPORT_TEXT_H

#include <stddef.h>

struct child_result;

/* The number of '\n' in s. */
int text_count_lines(const char *s);

/* How many times needle (not empty) occurs in hay, without overlap. */
size_t text_count(const char *hay, const char *needle);

/* The start of the line of hay that holds needle's first occurrence, or NULL when none does. */
const char *text_line_of(const char *hay, const char *needle);

/* got equals want, byte for byte; else both are shown with the first byte that differs. */
void text_assert_equal(const char *got, const char *want);

/* hay contains needle. */
void text_assert_contains(const char *hay, const char *needle);

/* r's stderr is exactly one line ('\n'-terminated) that starts with prefix. */
void text_assert_one_error_line(const struct child_result *r, const char *prefix);

/* The same, and nothing on stdout. */
void text_assert_only_error_line(const struct child_result *r, const char *prefix);

#endif /* XFDR_TESTS_SUPPORT_TEXT_H */
