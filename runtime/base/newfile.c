/*
 * runtime/base/newfile.c - exclusive creation and no-replace renames (see newfile.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h> /* renameat2 */
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/base/compiler.h"
#include "runtime/base/newfile.h"

static unsigned file_mode = NEWFILE_DEFAULT_MODE;

void newfile_set_mode(unsigned mode)
{
	xfdr_store_relaxed(&file_mode, mode);
}

XFDR_NOINSTR int newfile_create(const char *path, int access)
{
	unsigned mode = xfdr_load_relaxed(&file_mode);
	int fd = open(path, access | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, (mode_t)mode);

	if (fd < 0)
		return -errno;
	/*
	 * The umask has taken bits away: the mode asked for is the mode the file gets. Where a file
	 * system refuses (no permissions at all), the umask's mode stays, never more than asked.
	 */
	(void)fchmod(fd, (mode_t)mode);
	return fd;
}

XFDR_NOINSTR int newfile_create_unnamed(const char *path)
{
	unsigned mode = xfdr_load_relaxed(&file_mode);
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) + 1 : 0;
	int fd;

	if (n >= sizeof(dir))
		return -ENAMETOOLONG;
	memcpy(dir, path, n);
	dir[n] = '\0';
	fd = open(n ? dir : ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, (mode_t)mode);
	if (fd < 0)
		return -errno;
	(void)fchmod(fd, (mode_t)mode); /* as newfile_create() */
	return fd;
}

XFDR_NOINSTR int newfile_name(int fd, const char *path)
{
	char proc[32] = "/proc/self/fd/", digits[12];
	size_t n = strlen(proc), k = 0;
	unsigned v = (unsigned)fd;

	/* AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; /proc's link to the descriptor does not. */
	if (!linkat(fd, "", AT_FDCWD, path, AT_EMPTY_PATH))
		return 0;
	if (errno != EPERM && errno != ENOENT)
		return -errno;
	do
		digits[k++] = (char)('0' + v % 10u);
	while ((v /= 10u) && k < sizeof(digits));
	while (k)
		proc[n++] = digits[--k];
	proc[n] = '\0';
	return linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW) ? -errno : 0;
}

XFDR_NOINSTR int newfile_taken(const char *path)
{
	struct stat st;

	return fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

XFDR_NOINSTR int newfile_rename(const char *from, const char *to)
{
	if (!renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE))
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -errno;
	/* No RENAME_NOREPLACE here (an old kernel, some network file systems). */
	if (!link(from, to)) {
		unlink(from);
		return 0;
	}
	if (errno != EPERM && errno != EOPNOTSUPP)
		return -errno;
	if (newfile_taken(to))
		return -EEXIST;
	return rename(from, to) ? -errno : 0;
}
