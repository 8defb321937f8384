/*
 * tests/unit/launcher/test_launcher.c - the launcher library (launcher/), in process: the
 * XFDR_OPTIONS text as the runtime reads it, the trace files a run leaves, and a program run,
 * waited for and passed a signal. `xfdr record`'s whole behaviour is tested through the binary
 * in tests/system/test_cli_record.c; here each answer is written out by hand.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "launcher/options_text.h"
#include "launcher/run.h"
#include "launcher/trace_listing.h"
#include "tests/support/scratch.h"

/* ---- XFDR_OPTIONS ------------------------------------------------------------------------- */

static void options_split_characters(void **state)
{
	(void)state;
	assert_false(launch_options_split("trace_"));
	assert_false(launch_options_split(""));
	assert_true(launch_options_split("a:b"));
	assert_true(launch_options_split("a b"));
	assert_true(launch_options_split("a\tb"));
	assert_true(launch_options_split("ab\n"));
}

static void options_last_value_wins(void **state)
{
	char v[32];

	(void)state;
	assert_true(
	    launch_option_value("mode=ring:buffer_size=4096 mode=bounded", "mode", v, sizeof(v)));
	assert_string_equal(v, "bounded");
	assert_true(launch_option_value("  \tprefix=run1\n", "prefix", v, sizeof(v)));
	assert_string_equal(v, "run1");
	/* An empty value is a value. */
	assert_true(launch_option_value("prefix=", "prefix", v, sizeof(v)));
	assert_string_equal(v, "");
}

static void options_key_must_match_whole(void **state)
{
	char v[32] = "untouched";

	(void)state;
	assert_false(launch_option_value("modex=1:xmode=2:mode", "mode", v, sizeof(v)));
	assert_false(launch_option_value("", "mode", v, sizeof(v)));
	assert_string_equal(v, "untouched");
}

static void options_value_that_does_not_fit(void **state)
{
	char v[4];

	(void)state;
	/* "abc" and its NUL fit in 4 bytes; "abcd" does not, and an earlier fitting one stays. */
	assert_true(launch_option_value("k=abc", "k", v, sizeof(v)));
	assert_string_equal(v, "abc");
	assert_false(launch_option_value("k=abcd", "k", v, sizeof(v)));
	assert_true(launch_option_value("k=xy k=abcd", "k", v, sizeof(v)));
	assert_string_equal(v, "xy");
}

static void options_false_values(void **state)
{
	(void)state;
	assert_true(launch_option_false("flush_on_exit=0", "flush_on_exit"));
	assert_true(launch_option_false("flush_on_exit=No", "flush_on_exit"));
	assert_true(launch_option_false("flush_on_exit=FALSE", "flush_on_exit"));
	assert_true(launch_option_false("flush_on_exit=off", "flush_on_exit"));
	assert_true(launch_option_false("flush_on_exit=1 flush_on_exit=0", "flush_on_exit"));
	assert_false(launch_option_false("flush_on_exit=0 flush_on_exit=1", "flush_on_exit"));
	assert_false(launch_option_false("flush_on_exit=yes", "flush_on_exit"));
	assert_false(launch_option_false("", "flush_on_exit"));
}

/* ---- trace file names and listings ---------------------------------------------------------- */

static void trace_names(void **state)
{
	struct launch_trace t;

	(void)state;
	memset(&t, 0, sizeof(t));
	assert_true(launch_trace_name_parse("xfdr-12-3.xray", &t));
	assert_int_equal(t.pid, 12);
	assert_int_equal(t.n, 3);
	assert_int_equal(t.tid, 0);
	assert_false(t.per_thread);
	assert_true(launch_trace_name_parse("my-app-99-0-t4567.xray", &t));
	assert_int_equal(t.pid, 99);
	assert_int_equal(t.n, 0);
	assert_int_equal(t.tid, 4567);
	assert_true(t.per_thread);
	/* "-t0": the drops of a per-thread run, with no thread of their own. */
	assert_true(launch_trace_name_parse("p-1-2-t0.xray", &t));
	assert_int_equal(t.tid, 0);
	assert_true(t.per_thread);
	assert_true(launch_trace_name_parse("p-9999999999999999999-1.xray", &t));
	assert_int_equal(t.pid, 9999999999999999999ull);

	assert_false(launch_trace_name_parse("-12-3.xray", &t));       /* no prefix */
	assert_false(launch_trace_name_parse("p-12-3.map", &t));       /* not a trace */
	assert_false(launch_trace_name_parse("p-12-3.xray.part", &t)); /* being written */
	assert_false(launch_trace_name_parse("p-12.xray", &t));	       /* no flush number */
	assert_false(launch_trace_name_parse("p-1x-3.xray", &t));      /* not decimal */
	assert_false(launch_trace_name_parse("p-12-3-t.xray", &t));    /* no tid */
	assert_false(launch_trace_name_parse("p-10000000000000000000-1.xray", &t)); /* 20 digits */
}

static void listing_sorted_and_compared(void **state)
{
	struct launch_listing before = {0}, after = {0};
	const char *dir = scratch_dir;
	char sub[4096];
	size_t i;

	(void)state;
	scratch_write_text("app-7-1.xray", "8 bytes.");
	scratch_write_text("app-7-2-t30.xray", "8 bytes.");
	scratch_write_text("app-7-2-t10.xray", "8 bytes.");
	scratch_write_text("app-3-5.xray", "8 bytes.");
	scratch_write_text("app-7-2.map", "8 bytes."); /* a sidecar: not listed */
	scratch_write_text("notes.txt", "8 bytes.");   /* not a trace */
	snprintf(sub, sizeof(sub), "%s/app-8-1.xray", dir);
	assert_int_equal(mkdir(sub, 0700), 0); /* a directory with a trace's name */

	assert_int_equal(launch_list_traces(dir, &before), 0);
	assert_int_equal(before.n, 4);
	launch_listing_sort(&before);
	/* By pid, a pid's newest flush first, then by tid. */
	assert_string_equal(before.v[0].name, "app-3-5.xray");
	assert_string_equal(before.v[1].name, "app-7-2-t10.xray");
	assert_string_equal(before.v[2].name, "app-7-2-t30.xray");
	assert_string_equal(before.v[3].name, "app-7-1.xray");

	/* A run rewrites one file (another size) and adds one; the rest are unchanged. */
	scratch_write_text("app-7-1.xray", "now 16 bytes of.");
	scratch_write_text("app-7-3.xray", "8 bytes.");
	assert_int_equal(launch_list_traces(dir, &after), 0);
	assert_int_equal(after.n, 5);
	for (i = 0; i < after.n; i++) {
		int fresh = !strcmp(after.v[i].name, "app-7-1.xray") ||
			    !strcmp(after.v[i].name, "app-7-3.xray");

		assert_int_equal(launch_trace_was_there(&before, &after.v[i]), !fresh);
	}
	launch_listing_free(&before);
	launch_listing_free(&after);
	assert_int_equal(before.n, 0);
}

static void listing_of_missing_directory(void **state)
{
	struct launch_listing l = {0};

	(void)state;
	errno = 0;
	assert_int_equal(launch_list_traces("/nonexistent/xfdr-launcher", &l), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(l.n, 0);
}

/* ---- running a program ------------------------------------------------------------------- */

static void find_program_in_path(void **state)
{
	char path[4096];
	const char *saved = getenv("PATH");
	char *keep = saved ? strdup(saved) : NULL;

	(void)state;
	assert_int_equal(setenv("PATH", "/nonexistent:/bin", 1), 0);
	assert_int_equal(launch_find_program("sh", path), 0);
	assert_string_equal(path, "/bin/sh");
	/* A name with a '/' is taken as it is. */
	assert_int_equal(launch_find_program("./no/such", path), 0);
	assert_string_equal(path, "./no/such");
	assert_int_equal(launch_find_program("xfdr-no-such-program", path), -1);
	if (keep)
		setenv("PATH", keep, 1);
	free(keep);
}

static void run_exit_status_and_messages(void **state)
{
	struct launch_run r;
	struct xfdr_error err;
	/* Writes one line into the file the runtime would (XFDR_RECORD_MESSAGES: fd:dev:ino). */
	char *argv[] = {"/bin/sh", "-c",
			"echo 'xfdr: said on the way' >> /proc/self/fd/${XFDR_RECORD_MESSAGES%%:*};"
			" exit 3",
			NULL};

	(void)state;
	assert_int_equal(launch_run(argv, 0, &r, &err), 0);
	assert_true(WIFEXITED(r.status));
	assert_int_equal(WEXITSTATUS(r.status), 3);
	assert_int_equal(r.exec_errno, 0);
	assert_int_equal(r.wait_errno, 0);
	assert_true(r.seconds >= 0);
	assert_non_null(r.messages);
	assert_string_equal(r.messages, "xfdr: said on the way\n");
	assert_int_equal(launch_exit_like(&r, 99), 3);
	free(r.messages);
}

static void run_program_that_cannot_exec(void **state)
{
	struct launch_run r;
	struct xfdr_error err;
	char *argv[] = {"/nonexistent/xfdr-launcher-prog", NULL};

	(void)state;
	assert_int_equal(launch_run(argv, 0, &r, &err), 0);
	assert_int_equal(r.exec_errno, ENOENT);
	assert_true(WIFEXITED(r.status));
	assert_int_equal(WEXITSTATUS(r.status), 127);
	free(r.messages);
}

/*
 * A SIGTERM sent to the launching process alone reaches the program, which exits 42 on it;
 * the launcher keeps waiting and is not ended by it. A child of the program sends it, so the
 * program is running (and its trap set) when it comes; one the program sent itself would not
 * be passed back to it.
 */
static void run_passes_a_signal_on(void **state)
{
	struct launch_run r;
	struct xfdr_error err;
	/* Exits 1 after 10 s without the signal: a failure, not a hang. */
	char *argv[] = {"/bin/sh", "-c",
			"trap 'exit 42' TERM; sh -c \"kill -TERM $PPID\"; i=0;"
			" while [ $i -lt 1000 ]; do sleep 0.01; i=$((i + 1)); done; exit 1",
			NULL};

	(void)state;
	/* Ignored when the test started (nohup), it would stay ignored for the program. */
	signal(SIGTERM, SIG_DFL);
	assert_int_equal(launch_run(argv, 0, &r, &err), 0);
	assert_true(WIFEXITED(r.status));
	assert_int_equal(WEXITSTATUS(r.status), 42);
	free(r.messages);
}

/* launch_exit_like() after a death by a signal dies by it, as the program did. */
static void exit_like_a_killed_program(void **state)
{
	struct launch_run r;
	pid_t pid;
	int st;

	(void)state;
	memset(&r, 0, sizeof(r));
	r.status = SIGUSR1; /* the wait status of a death by SIGUSR1, no core */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(launch_exit_like(&r, 99) == 99 ? 98 : 97);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGUSR1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(options_split_characters),
	    cmocka_unit_test(options_last_value_wins),
	    cmocka_unit_test(options_key_must_match_whole),
	    cmocka_unit_test(options_value_that_does_not_fit),
	    cmocka_unit_test(options_false_values),
	    cmocka_unit_test(trace_names),
	    cmocka_unit_test(listing_sorted_and_compared),
	    cmocka_unit_test(listing_of_missing_directory),
	    cmocka_unit_test(find_program_in_path),
	    cmocka_unit_test(run_exit_status_and_messages),
	    cmocka_unit_test(run_program_that_cannot_exec),
	    cmocka_unit_test(run_passes_a_signal_on),
	    cmocka_unit_test(exit_like_a_killed_program),
	};

	return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
