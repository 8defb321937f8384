/*
 * runtime/base/print.c - signal-safe text building and writing (see print.h).
 *
 * `xfdr record` reads what the runtime said, to tell why a run left no trace: it opens a file
 * of its own, lets the program inherit it, and names it in XFDR_RECORD_MESSAGES as
 * "FD:DEV:INODE", with ":quiet" after it for `xfdr record -q`, which leaves the runtime's notes
 * (pr_note()) off stderr. Every line also goes there (O_APPEND: whole lines from every process
 * of the run), and at load a line no terminal sees says the runtime is in this pid. The device and
 * inode are checked: a program that execs another one with its descriptors closed or reused
 * must not write our lines into a file of its own.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/base/compiler.h"
#include "writer/fsize.h"
#include "runtime/base/print.h"

XFDR_NOINSTR void pr_strn(struct pr_buf *b, const char *s, size_t n)
{
	size_t room = b->cap - b->len;

	if (n > room) {
		n = room;
		b->truncated = 1;
	}
	memcpy(b->text + b->len, s, n);
	b->len += n;
}

XFDR_NOINSTR void pr_str(struct pr_buf *b, const char *s)
{
	pr_strn(b, s ? s : "(null)", strlen(s ? s : "(null)"));
}

XFDR_NOINSTR void pr_char(struct pr_buf *b, char c)
{
	pr_strn(b, &c, 1);
}

XFDR_NOINSTR void pr_field(struct pr_buf *b, const char *s, size_t max)
{
	size_t i;

	for (i = 0; s[i] && i < max; i++)
		pr_char(b, (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i]);
}

XFDR_NOINSTR void pr_u64(struct pr_buf *b, uint64_t v)
{
	char digits[20];
	size_t n = 0;

	do {
		digits[sizeof(digits) - 1 - n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	pr_strn(b, digits + sizeof(digits) - n, n);
}

XFDR_NOINSTR void pr_i64(struct pr_buf *b, int64_t v)
{
	if (v < 0) {
		pr_char(b, '-');
		pr_u64(b, (uint64_t)0 - (uint64_t)v);
	} else {
		pr_u64(b, (uint64_t)v);
	}
}

XFDR_NOINSTR void pr_hex(struct pr_buf *b, uint64_t v)
{
	char digits[16];
	size_t n = 0;

	do {
		digits[sizeof(digits) - 1 - n++] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	pr_strn(b, "0x", 2);
	pr_strn(b, digits + sizeof(digits) - n, n);
}

XFDR_NOINSTR const char *pr_cstr(struct pr_buf *b)
{
	if (b->len == b->cap) {
		b->len--;
		b->truncated = 1;
	}
	b->text[b->len] = '\0';
	return b->text;
}

XFDR_NOINSTR int pr_write_all(int fd, const void *data, size_t n)
{
	const char *p = data;
	int saved = errno;
	int rc = fsize_check_write(fd, -1, n);

	while (n && !rc) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		if (w == 0) {
			rc = -EIO;
			break;
		}
		p += w;
		n -= (size_t)w;
	}
	errno = saved;
	return rc;
}

XFDR_NOINSTR int pr_flush(struct pr_buf *b, int fd)
{
	return pr_write_all(fd, b->text, b->len);
}

static int record_fd = -1; /* xfdr record's message file; -1: none */
static int record_quiet;   /* xfdr record -q: notes go to record_fd only */

/* "xfdr: <b's text>\n", cut to fit, into line. */
static XFDR_NOINSTR void line_of(struct pr_buf *line, const struct pr_buf *b)
{
	pr_str(line, "xfdr: ");
	pr_strn(line, b->text, b->len);
	/* A cut line still ends with its newline. */
	if (line->len == line->cap)
		line->len--;
	line->text[line->len++] = '\n';
}

static XFDR_NOINSTR void to_record(const struct pr_buf *line)
{
	if (record_fd >= 0 && write(record_fd, line->text, line->len) < 0)
		record_fd = -1;
}

/* "xfdr: <b's text>\n": on stderr when to_stderr, and into xfdr record's file. */
static XFDR_NOINSTR void say(const struct pr_buf *b, int to_stderr)
{
	char text[512];
	struct pr_buf out = PR_BUF_INIT(text);

	line_of(&out, b);
	if (to_stderr)
		pr_flush(&out, STDERR_FILENO);
	to_record(&out);
}

XFDR_NOINSTR void pr_line(struct pr_buf *b)
{
	say(b, 1);
}

XFDR_NOINSTR void pr_note(struct pr_buf *b)
{
	say(b, !(record_quiet && record_fd >= 0));
}

XFDR_NOINSTR void pr_record(struct pr_buf *b)
{
	say(b, 0);
}

/* Parse a decimal field ending at ':' or the end. Returns the end, or NULL. */
static const char *field(const char *s, unsigned long long *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return NULL;
	*v = strtoull(s, &end, 10);
	return *end == ':' || !*end ? end : NULL;
}

__attribute__((constructor)) static void find_record_file(void)
{
	const char *v = getenv("XFDR_RECORD_MESSAGES");
	unsigned long long fd, dev, ino;
	struct stat st;
	char text[64], line[96];
	struct pr_buf b = PR_BUF_INIT(text), out = PR_BUF_INIT(line);

	if (!v || !(v = field(v, &fd)) || *v++ != ':' || !(v = field(v, &dev)) || *v++ != ':' ||
	    !(v = field(v, &ino)) || (*v && strcmp(v, ":quiet")) || fd > 1u << 20)
		return;
	if (fstat((int)fd, &st) || !S_ISREG(st.st_mode) || (unsigned long long)st.st_dev != dev ||
	    (unsigned long long)st.st_ino != ino)
		return;
	record_fd = (int)fd;
	record_quiet = *v != '\0';
	pr_str(&b, "loaded in pid ");
	pr_u64(&b, (uint64_t)getpid());
	line_of(&out, &b);
	to_record(&out);
}

XFDR_NOINSTR void pr_line_file_error(const char *topic, const char *what, const char *path,
				     int neg_errno)
{
	char text[PATH_MAX + 200];
	struct pr_buf b = PR_BUF_INIT(text);

	pr_str(&b, topic);
	pr_str(&b, ": ");
	pr_str(&b, what);
	if (path) {
		pr_char(&b, ' ');
		pr_str(&b, path);
	}
	pr_str(&b, ": ");
	pr_str(&b, pr_errno_name(neg_errno));
	pr_line(&b);
}

XFDR_NOINSTR const char *pr_errno_name(int neg_errno)
{
	switch (-neg_errno) {
	case EACCES:
		return "EACCES (permission denied)";
	case EBUSY:
		return "EBUSY (busy)";
	case EEXIST:
		return "EEXIST (file exists)";
	case EFBIG:
		return "EFBIG (file too large)";
	case EPERM:
		return "EPERM (operation not permitted)";
	case ENFILE:
		return "ENFILE (too many open files in system)";
	case EISDIR:
		return "EISDIR (is a directory)";
	case ELOOP:
		return "ELOOP (too many levels of symbolic links)";
	case EINVAL:
		return "EINVAL (invalid argument)";
	case EIO:
		return "EIO (I/O error)";
	case ENAMETOOLONG:
		return "ENAMETOOLONG (name too long)";
	case ENOENT:
		return "ENOENT (no such file or directory)";
	case ENOMEM:
		return "ENOMEM (out of memory)";
	case ENOSPC:
		return "ENOSPC (no space left on device)";
	case ENOTDIR:
		return "ENOTDIR (not a directory)";
	case EROFS:
		return "EROFS (read-only file system)";
	case EDQUOT:
		return "EDQUOT (quota exceeded)";
	case EMFILE:
		return "EMFILE (too many open files)";
	default:
		return "error";
	}
}
