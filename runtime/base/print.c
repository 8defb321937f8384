/*
 * runtime/base/print.c - signal-safe text building and writing (see print.h).
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "runtime/base/compiler.h"
#include "runtime/base/fsize.h"
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

XFDR_NOINSTR void pr_line(struct pr_buf *b)
{
	char line[512];
	struct pr_buf out = PR_BUF_INIT(line);

	pr_str(&out, "xfdr: ");
	pr_strn(&out, b->text, b->len);
	/* A cut line still ends with its newline. */
	if (out.len == out.cap)
		out.len--;
	line[out.len++] = '\n';
	pr_flush(&out, STDERR_FILENO);
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
