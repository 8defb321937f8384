/*
 * tests/unit/command/test_command_flame_diff.c - a differential flame graph's comparison
 * (command/flame_diff.h) when BASE's tree cannot be read back: the visit fails with why, and
 * that why is what `xfdr flame --diff` prints (it printed "out of memory" for every failure).
 *
 * BASE's tree is built with a node limit of 2, so it lives in a run on disk (a temporary file
 * in $TMPDIR, here the scratch directory); the test then truncates that file, as a full or
 * failing disk would leave it, and visits NEW's root.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "analysis/stacktree.h"
#include "command/flame_diff.h"
#include "tests/support/scratch.h"
#include "tests/support/trace_build.h"
#include "xfdr/reader.h"

/* The tree of the trace at path, at most limit nodes in memory, one worker. */
static void build(struct stree *t, struct xfdr_trace *tr, uint32_t limit)
{
	struct xfdr_error err;

	assert_int_equal(stree_init(t, 0), 0);
	t->node_limit = limit;
	t->jobs = 1;
	if (stree_build(t, tr, NULL, &err) < 0)
		fail_msg("stree_build: %s", err.text);
	assert_int_equal(stree_finish(t), 0);
}

/* Truncate every open file of this process that is one of ours in the scratch directory. */
static unsigned truncate_scratch_files(void)
{
	char target[PATH_MAX], prefix[256];
	struct dirent *e;
	unsigned n = 0;
	DIR *d = opendir("/proc/self/fd");

	assert_non_null(d);
	snprintf(prefix, sizeof(prefix), "%s/xfdr-", scratch_dir);
	while ((e = readdir(d))) {
		ssize_t len;

		if (e->d_name[0] == '.')
			continue;
		len = readlinkat(dirfd(d), e->d_name, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = '\0';
		if (strncmp(target, prefix, strlen(prefix)))
			continue;
		assert_int_equal(ftruncate(atoi(e->d_name), 0), 0);
		n++;
	}
	closedir(d);
	return n;
}

struct visit {
	struct flame_diff *d;
	const struct stree *t;
	char why[256];
};

static int visit(void *ctx, const struct stree_frame *path, uint32_t depth)
{
	struct visit *v = ctx;
	uint64_t base_ns;
	int64_t change_ns;

	if (flame_diff_visit(v->d, v->t, path, depth, &base_ns, &change_ns, v->why,
			     sizeof(v->why)) < 0)
		return 7;
	return 0;
}

static void test_base_run_not_read(void **state)
{
	const char *path = tb_timeline_trace("timeline.xray");
	const char *old = getenv("TMPDIR");
	char *saved = old ? strdup(old) : NULL;
	struct xfdr_trace *tr;
	struct xfdr_error err;
	struct stree t[2];
	struct visit v = {.t = &t[1]};
	char why[256] = "";

	(void)state;
	assert_int_equal(xfdr_trace_open(path, &tr, &err), 0);
	setenv("TMPDIR", scratch_dir, 1);
	build(&t[0], tr, 2); /* 5 nodes: spilled */
	assert_non_null(t[0].runs);
	build(&t[1], tr, STREE_NODE_LIMIT);
	assert_null(t[1].runs);
	v.d = flame_diff_new(&t[0], 2500000000u, 2500000000u, why, sizeof(why));
	assert_non_null(v.d);
	/* Readable, the walk compares every frame. */
	assert_int_equal(stree_walk(&t[1], visit, &v, why, sizeof(why)), 0);
	/* BASE's one merged run, as a disk that failed would leave it. */
	assert_int_equal(truncate_scratch_files(), 1);
	assert_int_equal(stree_walk(&t[1], visit, &v, why, sizeof(why)), 7);
	assert_string_equal(v.why, "reading a run of the stack tree: Input/output error");
	flame_diff_free(v.d);
	if (saved)
		setenv("TMPDIR", saved, 1);
	else
		unsetenv("TMPDIR");
	free(saved);
	stree_free(&t[0]);
	stree_free(&t[1]);
	xfdr_trace_close(tr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_base_run_not_read),
	};

	return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
