/*
 * tests/support/rebuild_outputs.c - the output checks `recover` and `core` share (see
 * rebuild_outputs.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/support/child.h"
#include "tests/support/pool_layout.h"
#include "tests/support/rebuild_outputs.h"
#include "tests/support/scratch.h"

static void expect_nothing_written(const char *out_map)
{
	assert_false(scratch_exists(out_map));
	assert_int_equal(scratch_count_named(".tmp."), 0);
}

void rebuild_expect_only_regular_replaced(const char *verb, const char *input, const char *also)
{
	static const struct {
		const char *name, *what;
	} outs[] = {
	    {"nr-fifo.xray", "a FIFO, not a regular file: not replaced\n"},
	    {"nr-dir.xray", "a directory, not a regular file: not replaced\n"},
	    {"nr-null.xray", "a symbolic link to a character device, not to a regular file: "
			     "not replaced\n"},
	    {"nr-lfifo.xray", "a symbolic link to a FIFO, not to a regular file: not replaced\n"},
	};
	char out[256], out_map[300], want[700];
	struct stat st;
	size_t i;

	scratch_make_non_regular();
	assert_int_equal(symlink("nr-fifo.xray", scratch_path("nr-lfifo.xray")), 0);
	for (i = 0; i < sizeof(outs) / sizeof(outs[0]); i++) {
		snprintf(out, sizeof(out), "%s", scratch_path(outs[i].name));
		snprintf(out_map, sizeof(out_map), "%s.map", out);
		snprintf(want, sizeof(want), "xfdr %s: %s: %s", verb, out, outs[i].what);
		child_xfdr_refused(want, verb, "--force", "-o", out, input, NULL);
		expect_nothing_written(out_map);
		if (also) {
			child_xfdr_refused(want, verb, also, "--force", "-o", out, input, NULL);
			expect_nothing_written(out_map);
		}
	}
	scratch_expect_non_regular_intact();

	/* OUT free, OUT.map a FIFO: refused all the same, and OUT is not written either. */
	snprintf(out, sizeof(out), "%s", scratch_path("nr-out.xray"));
	snprintf(out_map, sizeof(out_map), "%s.map", out);
	assert_int_equal(mkfifo(out_map, 0600), 0);
	snprintf(want, sizeof(want), "xfdr %s: %s: a FIFO, not a regular file: not replaced\n",
		 verb, out_map);
	child_xfdr_refused(want, verb, "--force", "-o", out, input, NULL);
	assert_false(scratch_exists(out));
	assert_int_equal(scratch_count_named(".tmp."), 0);
	assert_int_equal(lstat(out_map, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));

	/* A regular file is still replaced. */
	assert_int_equal(unlink(out_map), 0);
	pl_write_file(out, "old", 3);
	child_xfdr_ok(verb, "--force", "-o", out, input, NULL);
	child_xfdr_ok("verify", out, NULL);
}
