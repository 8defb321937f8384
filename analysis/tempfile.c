/*
 * analysis/tempfile.c - unlinked scratch files (tempfile.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "analysis/tempfile.h"

int temp_file_open(const char *what)
{
	const char *dir = getenv("TMPDIR");
	char path[4096];
	int fd;

	if (!dir || !*dir)
		dir = "/tmp";
	if (snprintf(path, sizeof(path), "%s/xfdr-%s-XXXXXX", dir, what) >= (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = mkostemp(path, O_CLOEXEC);
	if (fd >= 0)
		unlink(path);
	return fd;
}
