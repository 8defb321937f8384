/*
 * tests/support/preload_record.c - a program built and recorded under LD_PRELOAD
 * (preload_record.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "tests/support/child.h"
#include "tests/support/preload_record.h"
#include "tests/support/scratch.h"

void preload_build(const char *source, char *prog, size_t n)
{
	const char *src = scratch_write_text("prog.c", source);
	char *argv[] = {"gcc", "-O0", "-g", "-finstrument-functions", "-pthread", (char *)src,
			"-o",  prog,  NULL};
	struct child_result r;

	snprintf(prog, n, "%s", scratch_path("prog"));
	child_capture(argv, &r);
	if (r.status != 0)
		fail_msg("gcc: status %d\n%s%s", r.status, r.out, r.err);
	child_result_free(&r);
}

void preload_record(const char *prog, const char *arg, const char *dir_name, const char *options,
		    char *trace, size_t n)
{
	char dir[256], opts[512], preload[512], cmd[600];
	char *argv[] = {(char *)prog, (char *)arg, NULL};
	char *env[] = {opts, preload, NULL};
	struct child_spec spec = {
	    .argv = argv,
	    .env_add = env,
	    .out = {.to = CHILD_CAPTURE},
	    .err = {.to = CHILD_CAPTURE},
	    .timeout_s = 120,
	};
	struct child_result r;
	FILE *ls;
	const char *build = getenv("XFDR_BUILD");

	if (!build || !*build)
		fail_msg("XFDR_BUILD is not set (run the tests through make check)");
	snprintf(dir, sizeof(dir), "%s", scratch_path(dir_name));
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(opts, sizeof(opts), "XFDR_OPTIONS=start=1:output=%s/%s", dir, options);
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s/lib/libxfdr.so.0", build);
	child_run(&spec, &r);
	if (r.status != 0)
		fail_msg("%s: status %d\n%s%s", prog, r.status, r.out, r.err);
	child_result_free(&r);
	snprintf(cmd, sizeof(cmd), "ls %s/*.xray", dir);
	ls = popen(cmd, "r");
	assert_non_null(ls);
	assert_non_null(fgets(trace, (int)n, ls));
	trace[strcspn(trace, "\n")] = '\0';
	assert_int_equal(pclose(ls), 0);
}
