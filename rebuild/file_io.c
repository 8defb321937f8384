/*
 * rebuild/file_io.c - whole reads and writes at an offset (file_io.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "reader/error.h"
#include "rebuild/file_io.h"

int rb_pread_all(int fd, void *buf, size_t n, uint64_t off)
{
	uint8_t *p = buf;
	ssize_t r;

	while (n) {
		r = pread(fd, p, n, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			return 1;
		p += r;
		n -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

int rb_pwrite_all(int fd, const void *p, size_t n, uint64_t off)
{
	const uint8_t *b = p;
	ssize_t w;

	while (n) {
		w = pwrite(fd, b, n, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? errno : EIO;
		b += w;
		n -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

int rb_write_at(int fd, const char *name, const void *p, size_t n, uint64_t off,
		struct xfdr_error *err)
{
	int e = rb_pwrite_all(fd, p, n, off);

	if (e)
		return rd_fail_name(name, err, off, "expected to write %zu bytes, found %s", n,
				    strerror(e));
	return 0;
}

int rb_file_read(void *ctx, uint64_t at, void *buf, size_t n, struct xfdr_error *err)
{
	const struct rb_file *f = ctx;
	int rc = rb_pread_all(f->fd, buf, n, at);

	if (rc < 0)
		return rd_fail_name(f->name, err, at, "expected %zu readable bytes, found %s", n,
				    strerror(errno));
	return rc;
}

int rb_file_read_all(const struct rb_file *f, uint64_t at, void *buf, size_t n,
		     struct xfdr_error *err)
{
	int rc = rb_file_read((void *)f, at, buf, n, err);

	if (rc > 0)
		return rd_fail_name(f->name, err, at,
				    "expected %zu bytes, found fewer (the file shrank while it was "
				    "read)",
				    n);
	return rc ? -1 : 0;
}

int rb_fail_no_memory(const char *name, struct xfdr_error *err)
{
	err->offset = 0;
	snprintf(err->text, sizeof(err->text), "%s: %s", name, strerror(ENOMEM));
	return -1;
}
