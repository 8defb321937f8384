/*
 * tests/unit/rebuild/test_rebuild_output_files.c - the rebuild library's new files
 * (rebuild/output_files.h), in process: what may be replaced, a new file that appears under
 * its name only when committed, mode 0600, a link replaced and never written through, and a
 * path that turned into a FIFO before the commit. The temporary files' removal on SIGINT,
 * SIGTERM and SIGHUP is tested through `xfdr recover` in tests/system/test_cli_recover.c.
 * The tests run in the scratch directory and name files relative to it.
 */
#include <errno.h>
#include <fcntl.h>
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

#include "rebuild/output_files.h"
#include "tests/support/scratch.h"

static void assert_file_is(const char *path, const char *text)
{
	char buf[256];
	int fd = open(path, O_RDONLY);
	ssize_t n;

	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_true(n >= 0);
	buf[n] = '\0';
	assert_string_equal(buf, text);
}

static void what_may_be_replaced(void **state)
{
	struct xfdr_error err;
	const char *file = "file", *fifo = "fifo", *dir = "dir", *to_fifo = "to-fifo",
		   *dangling = "dangling", *to_file = "to-file";

	(void)state;
	scratch_write_text(file, "x");
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_int_equal(symlink(fifo, to_fifo), 0);
	assert_int_equal(symlink("nothing", dangling), 0);
	assert_int_equal(symlink(file, to_file), 0);

	assert_int_equal(rb_output_check("new", 0, &err), 0);
	assert_int_equal(rb_output_check(file, 0, &err), 1);
	assert_int_equal(rb_output_check(file, 1, &err), 0);
	assert_int_equal(rb_output_check(to_file, 0, &err), 1);
	assert_int_equal(rb_output_check(to_file, 1, &err), 0);
	assert_int_equal(rb_output_check(dangling, 1, &err), 0);

	assert_int_equal(rb_output_check(fifo, 1, &err), -1);
	assert_non_null(strstr(err.text, ": a FIFO, not a regular file: not replaced"));
	assert_memory_equal(err.text, fifo, strlen(fifo));
	assert_int_equal(rb_output_check(dir, 1, &err), -1);
	assert_non_null(strstr(err.text, ": a directory, not a regular file: not replaced"));
	assert_int_equal(rb_output_check("/dev/null", 1, &err), -1);
	assert_string_equal(err.text,
			    "/dev/null: a character device, not a regular file: not replaced");
	assert_int_equal(rb_output_check(to_fifo, 1, &err), -1);
	assert_non_null(
	    strstr(err.text, ": a symbolic link to a FIFO, not to a regular file: not replaced"));
}

static void committed_in_place(void **state)
{
	struct rb_new_file a, b;
	struct rb_new_file *const both[] = {&a, &b};
	struct xfdr_error err;
	const char *pa = "a.xray", *pb = "a.xray.map";
	struct stat st;

	(void)state;
	scratch_write_text(pa, "old trace");
	assert_int_equal(rb_new_file_open(&a, pa, &err), 0);
	assert_int_equal(rb_new_file_open(&b, pb, &err), 0);
	assert_int_equal(write(a.fd, "trace", 5), 5);
	assert_int_equal(write(b.fd, "map", 3), 3);
	/* Until the commit the old file is whole and the new one is not there. */
	assert_file_is(pa, "old trace");
	assert_false(scratch_exists(pb));
	assert_int_equal(scratch_count_named(".tmp."), 2);

	assert_int_equal(rb_new_files_commit(both, 2, &err), 0);
	assert_file_is(pa, "trace");
	assert_file_is(pb, "map");
	assert_int_equal(stat(pa, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(scratch_count_named(".tmp."), 0);
	assert_int_equal(a.fd, -1);
	rb_new_file_abort(&a); /* nothing left to abort */
	assert_file_is(pa, "trace");
}

/* A link at the path is replaced by the file; what it pointed to is left alone. */
static void link_replaced_not_followed(void **state)
{
	struct rb_new_file f;
	struct rb_new_file *const one[] = {&f};
	struct xfdr_error err;
	const char *victim = "victim", *out = "link.xray";
	struct stat st;

	(void)state;
	scratch_write_text(victim, "keep me");
	assert_int_equal(symlink(victim, out), 0);
	assert_int_equal(rb_new_file_open(&f, out, &err), 0);
	assert_int_equal(write(f.fd, "new", 3), 3);
	assert_int_equal(rb_new_files_commit(one, 1, &err), 0);
	assert_int_equal(lstat(out, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_file_is(out, "new");
	assert_file_is(victim, "keep me");
}

static void aborted_leaves_nothing(void **state)
{
	struct rb_new_file f;
	struct xfdr_error err;
	const char *out = "aborted.xray";

	(void)state;
	assert_int_equal(rb_new_file_open(&f, out, &err), 0);
	assert_int_equal(scratch_count_named("aborted.xray.tmp."), 1);
	rb_new_file_abort(&f);
	assert_int_equal(f.fd, -1);
	assert_int_equal(scratch_count_named("aborted.xray"), 0);
}

/* The path became a FIFO after the caller checked it: neither file is put in place. */
static void path_changed_before_commit(void **state)
{
	struct rb_new_file a, b;
	struct rb_new_file *const both[] = {&a, &b};
	struct xfdr_error err;
	const char *pa = "c.xray", *pb = "c.xray.map";

	(void)state;
	assert_int_equal(rb_new_file_open(&a, pa, &err), 0);
	assert_int_equal(rb_new_file_open(&b, pb, &err), 0);
	assert_int_equal(mkfifo(pb, 0600), 0);
	assert_int_equal(rb_new_files_commit(both, 2, &err), -1);
	assert_non_null(strstr(err.text, "c.xray.map: a FIFO, not a regular file: not replaced"));
	assert_false(scratch_exists(pa));
	assert_int_equal(scratch_count_named("c.xray.tmp."), 0);
	assert_int_equal(scratch_count_named("c.xray.map.tmp."), 0);
}

static void cannot_create(void **state)
{
	struct rb_new_file f;
	struct xfdr_error err;

	(void)state;
	assert_int_equal(rb_new_file_open(&f, "/nonexistent/dir/out.xray", &err), -1);
	assert_string_equal(err.text, "/nonexistent/dir/out.xray: cannot create: No such file or "
				      "directory");
	assert_int_equal(f.fd, -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(what_may_be_replaced),	  cmocka_unit_test(committed_in_place),
	    cmocka_unit_test(link_replaced_not_followed), cmocka_unit_test(aborted_leaves_nothing),
	    cmocka_unit_test(path_changed_before_commit), cmocka_unit_test(cannot_create),
	};

	return cmocka_run_group_tests(tests, scratch_setup_cwd, scratch_teardown);
}
