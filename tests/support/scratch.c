/*
 * tests/support/scratch.c - a test binary's scratch directory (see scratch.h).
 */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/support/scratch.h"

char scratch_dir[128];
static int entered; /* scratch_setup_cwd() made it the working directory */

int scratch_make(const char *tmpl)
{
	if (strlen(tmpl) >= sizeof(scratch_dir))
		return -1;
	strcpy(scratch_dir, tmpl);
	if (!mkdtemp(scratch_dir)) {
		scratch_dir[0] = '\0';
		return -1;
	}
	return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

int scratch_remove(void)
{
	int rc;

	if (!scratch_dir[0])
		return 0;
	rc = nftw(scratch_dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	scratch_dir[0] = '\0';
	return rc ? -1 : 0;
}

int scratch_setup(void **state)
{
	char tmpl[sizeof(scratch_dir)];

	(void)state;
	snprintf(tmpl, sizeof(tmpl), "/tmp/xfdr-test-%.64s-XXXXXX", program_invocation_short_name);
	return scratch_make(tmpl);
}

int scratch_setup_cwd(void **state)
{
	if (scratch_setup(state) || chdir(scratch_dir))
		return -1;
	entered = 1;
	return 0;
}

int scratch_teardown(void **state)
{
	(void)state;
	if (entered) {
		if (chdir("/"))
			return -1;
		entered = 0;
	}
	return scratch_remove();
}

char *scratch_path(const char *name)
{
	static char paths[8][256];
	static int next;
	char *p = paths[next++ % 8];

	assert_true(scratch_dir[0]);
	assert_true((size_t)snprintf(p, sizeof(paths[0]), "%s/%s", scratch_dir, name) <
		    sizeof(paths[0]));
	return p;
}

int scratch_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

static const char *put(const char *name, const char *mode, const void *data, size_t n)
{
	const char *path = scratch_path(name);
	FILE *f = fopen(path, mode);

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
	return path;
}

const char *scratch_write(const char *name, const void *data, size_t n)
{
	return put(name, "wb", data, n);
}

const char *scratch_append(const char *name, const void *data, size_t n)
{
	return put(name, "ab", data, n);
}

const char *scratch_write_text(const char *name, const char *text)
{
	return put(name, "wb", text, strlen(text));
}

void scratch_make_non_regular(void)
{
	assert_int_equal(mkfifo(scratch_path("nr-fifo.xray"), 0600), 0);
	assert_int_equal(mkdir(scratch_path("nr-dir.xray"), 0700), 0);
	assert_int_equal(symlink("/dev/null", scratch_path("nr-null.xray")), 0);
}

void scratch_expect_non_regular_intact(void)
{
	struct stat st;

	assert_int_equal(lstat(scratch_path("nr-fifo.xray"), &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	assert_int_equal(lstat(scratch_path("nr-dir.xray"), &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(lstat(scratch_path("nr-null.xray"), &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(stat("/dev/null", &st), 0);
	assert_true(S_ISCHR(st.st_mode));
}

int scratch_count_named(const char *part)
{
	DIR *d = opendir(scratch_dir);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += strstr(e->d_name, part) != NULL;
	closedir(d);
	return n;
}
