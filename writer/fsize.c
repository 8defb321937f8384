/*
 * writer/fsize.c - refuse file writes past RLIMIT_FSIZE (see fsize.h).
 */
#include <errno.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "writer/fsize.h"

uint64_t fsize_limit(void)
{
	struct rlimit r;
	int saved = errno;

	if (getrlimit(RLIMIT_FSIZE, &r) || r.rlim_cur == RLIM_INFINITY) {
		errno = saved;
		return UINT64_MAX;
	}
	return (uint64_t)r.rlim_cur;
}

int fsize_check(uint64_t end)
{
	return end > fsize_limit() ? -EFBIG : 0;
}

int fsize_check_write(int fd, int64_t offset, size_t n)
{
	uint64_t limit = fsize_limit();
	int saved = errno;
	struct stat st;
	off_t at;

	if (limit == UINT64_MAX || !n)
		return 0;
	/* Only regular files raise SIGXFSZ: a pipe, a terminal or /dev/null never do. */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		errno = saved;
		return 0;
	}
	at = offset >= 0 ? (off_t)offset : lseek(fd, 0, SEEK_CUR);
	errno = saved;
	if (at < 0)
		return 0;
	return (uint64_t)at + n > limit ? -EFBIG : 0;
}
