/*
 * runtime/base/print.h - the runtime's one message printer, safe in signal handlers.
 *
 * Text is built in a caller-provided fixed buffer with our own number formatting (no stdio, no
 * malloc, no locale, no lock) and written with write(2), looped on EINTR and short writes.
 * errno is preserved. A line longer than the buffer is cut, never overflowed: the last byte is
 * kept for the newline.
 */
#ifndef XFDR_RUNTIME_BASE_PRINT_H
#define XFDR_RUNTIME_BASE_PRINT_H

#include <stddef.h>
#include <stdint.h>

struct pr_buf {
	char *text;
	size_t cap; /* bytes of text */
	size_t len;
	int truncated; /* something did not fit */
};

#define PR_BUF_INIT(arr)                                                                           \
	{                                                                                          \
		.text = (arr), .cap = sizeof(arr), .len = 0, .truncated = 0                        \
	}

void pr_str(struct pr_buf *b, const char *s);
void pr_strn(struct pr_buf *b, const char *s, size_t n);
void pr_char(struct pr_buf *b, char c);
/*
 * pr_field - at most max bytes of s, control characters (below 0x20, and 0x7f: tabs, newlines)
 * as '?': a value that never breaks its line of a tab-separated file (the .map sidecar).
 */
void pr_field(struct pr_buf *b, const char *s, size_t max);
void pr_u64(struct pr_buf *b, uint64_t v);
void pr_i64(struct pr_buf *b, int64_t v);
void pr_hex(struct pr_buf *b, uint64_t v); /* 0x-prefixed, lower case */
/* Ensure text is NUL-terminated (cutting the last byte if needed); returns text. */
const char *pr_cstr(struct pr_buf *b);

/*
 * pr_write_all - write n bytes to fd, looping on EINTR and short writes.
 * Context: async-signal-safe. Returns 0 or a negative errno; errno is preserved.
 */
int pr_write_all(int fd, const void *data, size_t n);

/* Write the buffer to fd. Returns 0 or a negative errno. */
int pr_flush(struct pr_buf *b, int fd);

/*
 * pr_line - print "xfdr: <b's text>\n" on stderr in one write(2), so that lines of concurrent
 * threads do not interleave. Context: async-signal-safe.
 */
void pr_line(struct pr_buf *b);

/*
 * pr_note - the same for a line that tells, not warns ("wrote FILE", the drop counts): left off
 * stderr when `xfdr record -q` runs the program (XFDR_RECORD_MESSAGES ends in ":quiet"), kept
 * in its message file either way. Context: async-signal-safe.
 */
void pr_note(struct pr_buf *b);

/*
 * pr_record - the line for `xfdr record`'s message file alone (nothing when the program was not
 * started by it): what its summary explains and a terminal need not see. Context:
 * async-signal-safe.
 */
void pr_record(struct pr_buf *b);

/* Human-readable name of a negative errno, for messages ("ENOSPC"); "error" if unknown. */
const char *pr_errno_name(int neg_errno);

/*
 * pr_line_file_error - pr_line() of "<topic>: <what> <path>: <errno name>" (path NULL: left
 * out), the line of a file the runtime could not make, write or keep. Context:
 * async-signal-safe.
 */
void pr_line_file_error(const char *topic, const char *what, const char *path, int neg_errno);

#endif /* XFDR_RUNTIME_BASE_PRINT_H */
