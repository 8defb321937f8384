/*
 * tests/system/test_runtime_env_api.c - XFDR_OPTIONS and a program's own xfdr_init()/xfdr_start()
 * together (tests/e2e/env_api_prog.c, which asks for buffer_size 8192, buffer_max 8 and its
 * own output folder, then records five calls of function 7):
 *   - with XFDR_OPTIONS=start=1 the recorder started at load keeps running: the program's
 *     init and start return 0, the environment's settings hold, the program's differing ones
 *     are named once, and a bad key in XFDR_OPTIONS is reported once;
 *   - without start=1 the environment's keys win over the program's, the others stay;
 *   - without XFDR_OPTIONS the program's options hold.
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

#include "tests/support/e2e_calls.h"
#include "tests/support/runtime_test.h"
#include "tests/support/text.h"

static const char five_calls[] = "E #7,X #7,E #7,X #7,E #7,X #7,E #7,X #7,E #7,X #7";

static char prog[TH_PATH_BYTES];

static void build_prog(void)
{
	char dir[TH_PATH_BYTES], src[TH_PATH_BYTES], lib[TH_PATH_BYTES], inc[TH_PATH_BYTES + 2];
	char log[TH_PATH_BYTES];

	th_path(dir, "build", 1);
	th_src_file(src, "tests/e2e/env_api_prog.c");
	th_src_file(inc + 2, "include");
	memcpy(inc, "-I", 2);
	th_build_file(lib, "lib/libxfdr.a");
	th_join(prog, dir, "/prog");
	th_join(log, dir, "/build.log");
	{
		char *argv[] = {"cc",	     "-O1",  inc, src, "-o", prog, lib, CHILD_RUNTIME_LIBS,
				"-lpthread", "-ldl", NULL};

		th_run_ok(argv, NULL, log);
	}
}

/* The whole log of a run, read into text. */
static void read_log(const char *log, char *text, size_t bytes)
{
	FILE *f = fopen(log, "r");
	size_t n;

	assert_non_null(f);
	n = fread(text, 1, bytes - 1, f);
	text[n] = '\0';
	fclose(f);
}

struct run {
	char env_out[TH_PATH_BYTES];  /* output folder XFDR_OPTIONS names */
	char prog_out[TH_PATH_BYTES]; /* output folder the program passes to xfdr_init() */
	char log_text[8192];
};

/* Run the program with XFDR_OPTIONS = options (NULL: unset) followed by output=env_out/. */
static void run_prog(const char *name, const char *options, struct run *r)
{
	char dir[TH_PATH_BYTES], log[TH_PATH_BYTES], prog_arg[TH_PATH_BYTES + 1];
	char env_opt[2 * TH_PATH_BYTES];
	char *argv[] = {prog, prog_arg, NULL};
	char *env[] = {env_opt, NULL};

	th_path(dir, name, 1);
	th_join(r->env_out, dir, "/env_out");
	th_join(r->prog_out, dir, "/prog_out");
	assert_int_equal(mkdir(r->env_out, 0755), 0);
	assert_int_equal(mkdir(r->prog_out, 0755), 0);
	th_join(prog_arg, r->prog_out, "/");
	th_join(log, dir, "/run.log");
	if (options)
		snprintf(env_opt, sizeof(env_opt), "XFDR_OPTIONS=%s output=%s/", options,
			 r->env_out);
	else
		snprintf(env_opt, sizeof(env_opt), "XFDR_OPTIONS=");
	th_run_ok(argv, env, log);
	read_log(log, r->log_text, sizeof(r->log_text));
}

/* The one trace in dir records the five calls, in buffers of buffer_size bytes. */
static void check_trace(const char *dir, uint64_t buffer_size)
{
	char trace[TH_PATH_BYTES], calls[1024];
	struct th_names names = {0};
	struct xfdr_trace *t = NULL;
	struct xfdr_error err;

	th_find_one(dir, ".xray", trace);
	th_calls(trace, &names, 0, calls, sizeof(calls));
	assert_string_equal(calls, five_calls);
	memset(&err, 0, sizeof(err));
	assert_int_equal(xfdr_trace_open(trace, &t, &err), 0);
	assert_int_equal(xfdr_trace_header(t)->buffer_size, buffer_size);
	xfdr_trace_close(t);
}

static void started_at_load_keeps_running(void **state)
{
	struct run r;

	(void)state;
	run_prog("load", "start=1 bogus=1 buffer_size=4096", &r);
	assert_int_equal(th_count(r.log_text, "unknown key \"bogus\""), 1);
	assert_int_equal(th_count(r.log_text, "keeping its settings, not the program's"), 1);
	text_assert_contains(r.log_text, "buffer_max=8");
	/* buffer_size and output came from XFDR_OPTIONS, which wins: they are not unapplied. */
	assert_int_equal(th_count(r.log_text, "buffer_size="), 0);
	assert_int_equal(th_count(r.log_text, r.prog_out), 0);
	assert_int_equal(th_count(r.log_text, "cannot"), 0);
	check_trace(r.env_out, 4096);
	assert_int_equal(ts_dir_entries(r.prog_out), 0);
}

static void environment_keys_win(void **state)
{
	struct run r;

	(void)state;
	run_prog("overlay", "buffer_size=4096 bogus=2", &r);
	assert_int_equal(th_count(r.log_text, "unknown key \"bogus\""), 1);
	assert_int_equal(th_count(r.log_text, "keeping its settings"), 0);
	check_trace(r.env_out, 4096);
	assert_int_equal(ts_dir_entries(r.prog_out), 0);
}

static void program_options_without_environment(void **state)
{
	struct run r;

	(void)state;
	run_prog("plain", NULL, &r);
	assert_int_equal(th_count(r.log_text, "XFDR_OPTIONS"), 0);
	check_trace(r.prog_out, 8192);
	assert_int_equal(ts_dir_entries(r.env_out), 0);
}

static int setup(void **state)
{
	th_group_setup(state);
	build_prog();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(started_at_load_keeps_running),
	    cmocka_unit_test(environment_keys_win),
	    cmocka_unit_test(program_options_without_environment),
	};

	return cmocka_run_group_tests(tests, setup, th_group_teardown);
}
