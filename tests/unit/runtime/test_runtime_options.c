/*
 * tests/unit/runtime/test_runtime_options.c - options (API, XFDR_OPTIONS, struct check) and the
 * life-cycle status codes.
 *
 * Expected messages and values are written out by hand from the rules in xfdr.h.
 */
#include <signal.h>

#include "tests/support/runtime_test.h"

#include <sys/rseq.h>

#include "runtime/control/config.h"
#include "runtime/control/options.h"
#include "runtime/pool/pool.h"

/* Must run first: nothing is initialized yet in this process. */
static void lifecycle_before_init(void **state)
{
	char path[64];

	(void)state;
	assert_int_equal(xfdr_start(), -EINVAL);
	assert_int_equal(xfdr_stop(), -EINVAL);
	assert_int_equal(xfdr_flush(path, sizeof(path)), -EINVAL);
	/* Not recording: a hook does nothing and must not crash. */
	xfdr_enter(1);
	xfdr_exit(1);
	assert_int_equal(xfdr_custom_event("x", 1), -EAGAIN);
}

static void lifecycle_codes(void **state)
{
	struct xfdr_options o;

	(void)state;
	assert_int_equal(ts_init(4096, 4, 0), 0);
	/* Starting or stopping twice is not an error (XFDR_OPTIONS=start=1 may have started). */
	assert_int_equal(xfdr_stop(), 0);
	assert_int_equal(xfdr_start(), 0);
	assert_int_equal(xfdr_start(), 0);
	xfdr_options_default(&o);
	o.output = ts_dir;
	assert_int_equal(xfdr_init(&o), -EBUSY); /* not while recording */
	assert_int_equal(xfdr_stop(), 0);
	assert_int_equal(xfdr_stop(), 0);
	assert_int_equal(ts_init(4096, 4, 0), 0);
	assert_int_equal(xfdr_custom_event(NULL, 4), -EINVAL);
	assert_int_equal(xfdr_custom_event("x", 0), -EINVAL);
}

static void defaults(void **state)
{
	struct xfdr_options o;

	(void)state;
	memset(&o, 0x5a, sizeof(o));
	xfdr_options_default(&o);
	assert_int_equal(o.buffer_size, 65536);
	assert_int_equal(o.buffer_max, 256);
	assert_int_equal(o.thread_max, 4096);
	assert_string_equal(o.output, "");
	assert_int_equal(o.per_thread_files, 0);
	assert_int_equal(o.start, 0);
	assert_int_equal(o.flush_at_exit, 1);
	assert_int_equal(o.clock, XFDR_CLOCK_AUTO);
	assert_int_equal(o.mode, XFDR_MODE_RING);
	assert_int_equal(o.func_duration_threshold_us, 0);
	assert_int_equal(o.flush_signal, 0);
	assert_int_equal(o.flush_on_terminate, 0);
	assert_int_equal(o.flush_on_crash, 1);
	assert_int_equal(o.backing, XFDR_BACKING_MEMORY);
}

static void set_good_values(void **state)
{
	struct xfdr_options o;

	(void)state;
	xfdr_options_default(&o);
	assert_int_equal(xfdr_options_set(&o, "buffer_size", "4096"), 0);
	assert_int_equal(o.buffer_size, 4096);
	assert_int_equal(xfdr_options_set(&o, "buffer_size", "64k"), 0);
	assert_int_equal(o.buffer_size, 65536);
	assert_int_equal(xfdr_options_set(&o, "buffer_size", "128"), 0);
	assert_int_equal(o.buffer_size, 128);
	assert_int_equal(xfdr_options_set(&o, "buffer_max", "1M"), 0);
	assert_int_equal(o.buffer_max, 1048576);
	assert_int_equal(xfdr_options_set(&o, "per_thread_files", "yes"), 0);
	assert_int_equal(o.per_thread_files, 1);
	assert_int_equal(xfdr_options_set(&o, "per_thread_files", "OFF"), 0);
	assert_int_equal(o.per_thread_files, 0);
	assert_int_equal(xfdr_options_set(&o, "start", "1"), 0);
	assert_int_equal(o.start, 1);
	assert_int_equal(xfdr_options_set(&o, "flush_at_exit", "false"), 0);
	assert_int_equal(o.flush_at_exit, 0);
	assert_int_equal(xfdr_options_set(&o, "clock", "rdtsc"), 0);
	assert_int_equal(o.clock, XFDR_CLOCK_RDTSC);
	assert_int_equal(xfdr_options_set(&o, "clock", "rdtscp"), 0);
	assert_int_equal(o.clock, XFDR_CLOCK_RDTSCP);
	assert_int_equal(xfdr_options_set(&o, "output", "/tmp/x/"), 0);
	assert_string_equal(o.output, "/tmp/x/");
	assert_int_equal(xfdr_options_set(&o, "thread_max", "10"), 0);
	assert_int_equal(o.thread_max, 10);
	assert_int_equal(xfdr_options_set(&o, "mode", "bounded"), 0);
	assert_int_equal(o.mode, XFDR_MODE_BOUNDED);
	assert_int_equal(xfdr_options_set(&o, "mode", "ring"), 0);
	assert_int_equal(o.mode, XFDR_MODE_RING);
	assert_int_equal(xfdr_options_set(&o, "func_duration_threshold_us", "5"), 0);
	assert_int_equal(o.func_duration_threshold_us, 5);
	assert_int_equal(xfdr_options_set(&o, "func_duration_threshold_us", "1000000000"), 0);
	assert_int_equal(o.func_duration_threshold_us, 1000000000);
	assert_int_equal(xfdr_options_set(&o, "func_duration_threshold_us", "0"), 0);
	assert_int_equal(o.func_duration_threshold_us, 0);
}

static void set_bad_values(void **state)
{
	static const char *const bad_sizes[] = {
	    "100",
	    "56",
	    "64",
	    "120",
	    "0",
	    "",
	    "abc",
	    "-8",
	    "8x",
	    "4096 ",
	    "99999999999999999999999",
	    "17179869184k",
	    "8g",
	};
	struct xfdr_options o, before;
	size_t i;

	(void)state;
	xfdr_options_default(&o);
	before = o;
	for (i = 0; i < sizeof(bad_sizes) / sizeof(bad_sizes[0]); i++) {
		assert_int_equal(xfdr_options_set(&o, "buffer_size", bad_sizes[i]), -EINVAL);
		assert_memory_equal(&o, &before, sizeof(o));
	}
	/* The smallest buffer: preamble 48 and the drop counts 80 (or one event, EndOfBuffer). */
	assert_int_equal(xfdr_options_set(&o, "buffer_size", "128"), 0);
	assert_int_equal(o.buffer_size, 128);
	o = before;
	assert_int_equal(xfdr_options_set(&o, "buffer_max", "0"), -EINVAL);
	assert_int_equal(xfdr_options_set(&o, "buffer_max", "16777217"), -EINVAL);
	assert_int_equal(xfdr_options_set(&o, "per_thread_files", "2"), -EINVAL);
	assert_int_equal(xfdr_options_set(&o, "start", "maybe"), -EINVAL);
	assert_int_equal(xfdr_options_set(&o, "clock", "tsc"), -EINVAL);
	assert_int_equal(xfdr_options_set(&o, "clock", NULL), -EINVAL);
	assert_int_equal(xfdr_options_set(&o, "mode", "circular"), -EINVAL);
	assert_int_equal(xfdr_options_set(&o, "mode", "Ring"), -EINVAL);
	assert_int_equal(xfdr_options_set(&o, "func_duration_threshold_us", "5k"), -EINVAL);
	assert_int_equal(xfdr_options_set(&o, "func_duration_threshold_us", "-1"), -EINVAL);
	assert_int_equal(xfdr_options_set(&o, "func_duration_threshold_us", ""), -EINVAL);
	assert_int_equal(xfdr_options_set(&o, "func_duration_threshold_us", "1000000001"), -EINVAL);
	assert_int_equal(xfdr_options_set(&o, "no_such_key", "1"), -ENOENT);
	assert_int_equal(xfdr_options_set(&o, "Buffer_size", "4096"), -ENOENT);
	assert_memory_equal(&o, &before, sizeof(o));
}

struct parse_call {
	struct xfdr_options o;
	const char *text;
	int rejected;
};

static char parse_store[4096];

static void do_parse(void *arg)
{
	struct parse_call *c = arg;

	c->rejected =
	    opt_parse(&c->o, c->text, "XFDR_OPTIONS", parse_store, sizeof(parse_store), NULL);
}

static void env_syntax_and_messages(void **state)
{
	struct parse_call c;
	char err[2048];

	(void)state;
	xfdr_options_default(&c.o);
	c.text = "buffer_size=4096:bogus=1  buffer_max=0\tclock=rdtsc noequals "
		 "buffer_size=100 output=/tmp/out/ :: per_thread_files=1";
	ts_capture_stderr(do_parse, &c, err, sizeof(err));
	assert_int_equal(c.rejected, 4);
	assert_string_equal(
	    err, "xfdr: XFDR_OPTIONS: unknown key \"bogus\" (value \"1\") ignored\n"
		 "xfdr: XFDR_OPTIONS: bad value \"0\" for buffer_max (1 to 16777216); keeping 256\n"
		 "xfdr: XFDR_OPTIONS: \"noequals\" is not key=value; ignored\n"
		 "xfdr: XFDR_OPTIONS: bad value \"100\" for buffer_size (a multiple of 8, at least "
		 "128 to hold the preamble, one event and the drop counts, at most 4g); keeping "
		 "4096\n");
	assert_int_equal(c.o.buffer_size, 4096);
	assert_int_equal(c.o.buffer_max, 256);
	assert_int_equal(c.o.clock, XFDR_CLOCK_RDTSC);
	assert_string_equal(c.o.output, "/tmp/out/");
	assert_int_equal(c.o.per_thread_files, 1);
}

/* opt_check() of c->o: the key it names goes into c->text. */
static void do_struct_check(void *arg)
{
	struct parse_call *c = arg;

	c->text = opt_check(&c->o);
}

/*
 * The filter keys: pattern lists whose items may hold ':' and white space after a backslash,
 * and C++'s "::" as it is; max_depth a plain number.
 */
static void env_filter_keys(void **state)
{
	struct parse_call c;
	char err[2048];

	(void)state;
	xfdr_options_default(&c.o);
	assert_string_equal(c.o.include, "");
	assert_string_equal(c.o.exclude, "");
	assert_int_equal(c.o.max_depth, 0);
	c.text = "include=main,a*:exclude=std::*,ns\\:\\:x\\ y start=1 max_depth=5";
	ts_capture_stderr(do_parse, &c, err, sizeof(err));
	assert_string_equal(err, "");
	assert_int_equal(c.rejected, 0);
	assert_string_equal(c.o.include, "main,a*");
	assert_string_equal(c.o.exclude, "std::*,ns\\:\\:x\\ y");
	assert_int_equal(c.o.start, 1);
	assert_int_equal(c.o.max_depth, 5);
	/* string values point into the parse's store, which the next parse reuses */
	xfdr_options_default(&c.o);
	c.text = "exclude=a,,b include=x\\\\ max_depth=1000001 max_depth=-1";
	ts_capture_stderr(do_parse, &c, err, sizeof(err));
	assert_int_equal(c.rejected, 3);
	assert_string_equal(
	    err, "xfdr: XFDR_OPTIONS: bad value \"a,,b\" for exclude (shell patterns separated by "
		 "commas (\\, for a comma in one), at most 64 in 2047 bytes); keeping \"\"\n"
		 "xfdr: XFDR_OPTIONS: bad value \"1000001\" for max_depth (0 (no limit) to 1000000 "
		 "open calls); keeping 0\n"
		 "xfdr: XFDR_OPTIONS: bad value \"-1\" for max_depth (0 (no limit) to 1000000 open "
		 "calls); keeping 0\n");
	/* "x\\" is x and a quoted backslash: a valid pattern */
	assert_string_equal(c.o.include, "x\\\\");
	assert_int_equal(xfdr_options_set(&c.o, "include", "a\\"), -EINVAL);
	assert_int_equal(xfdr_options_set(&c.o, "exclude", "ns::f(int\\, char)"), 0);
	assert_string_equal(c.o.exclude, "ns::f(int\\, char)");
	c.o.include = "a,";
	ts_capture_stderr(do_struct_check, &c, err, sizeof(err));
	assert_string_equal(c.text, "include");
	assert_non_null(strstr(err, "xfdr: xfdr_init: bad value \"a,\" for include ("));
}

struct check_call {
	const char *text;
	int problems;
};

static void do_check(void *arg)
{
	struct check_call *c = arg;

	c->problems = xfdr_options_check(c->text);
}

/*
 * xfdr_options_check() (what `xfdr record` asks before it runs a program): each rejected item
 * and an invalid whole are problems, told as the program would tell them.
 */
static void check_text_as_the_program_would(void **state)
{
	struct check_call c = {"start=1 mode=bounded buffer_size=1m:buffer_max=64", -1};
	char err[2048];

	(void)state;
	ts_capture_stderr(do_check, &c, err, sizeof(err));
	assert_int_equal(c.problems, 0);
	assert_string_equal(err, "");
	c.text = "mode=circular:modee=ring";
	ts_capture_stderr(do_check, &c, err, sizeof(err));
	assert_int_equal(c.problems, 2);
	assert_string_equal(err, "xfdr: XFDR_OPTIONS: bad value \"circular\" for mode (ring, "
				 "bounded or stream; stream not with per_thread_files); keeping "
				 "ring\n"
				 "xfdr: XFDR_OPTIONS: unknown key \"modee\" (value \"ring\") "
				 "ignored\n");
	/* Each size valid alone, the pool (2^50 bytes) larger than any machine's memory. */
	c.text = "buffer_size=1g buffer_max=1048576";
	ts_capture_stderr(do_check, &c, err, sizeof(err));
	assert_int_equal(c.problems, 1);
	assert_non_null(strstr(err, "xfdr: xfdr_init: buffer_size 1073741824 x buffer_max 1048576 "
				    "and thread_max 4096 need 11258999"));
	assert_non_null(strstr(err, " bytes, more than this machine's memory ("));
}

/*
 * mode=stream and its keys: each value alone through xfdr_options_set(), and what only the
 * whole can tell (a file smaller than the header and two buffers, one file per thread) through
 * the check the program's init makes, with the line it prints.
 */
static void stream_keys(void **state)
{
	struct xfdr_options o;
	struct check_call c = {"mode=stream stream_max_bytes=1m:stream_max_files=3", -1};
	char err[2048];

	(void)state;
	xfdr_options_default(&o);
	assert_int_equal(o.stream_max_bytes, 0);
	assert_int_equal(o.stream_max_files, 0);
	assert_int_equal(xfdr_options_set(&o, "mode", "stream"), 0);
	assert_int_equal(o.mode, XFDR_MODE_STREAM);
	assert_int_equal(xfdr_options_set(&o, "stream_max_bytes", "2g"), 0);
	assert_int_equal(o.stream_max_bytes, 2ull << 30);
	assert_int_equal(xfdr_options_set(&o, "stream_max_files", "1000000"), 0);
	assert_int_equal(o.stream_max_files, 1000000);
	assert_int_equal(xfdr_options_set(&o, "stream_max_files", "1000001"), -EINVAL);
	assert_int_equal(xfdr_options_set(&o, "stream_max_bytes", "-1"), -EINVAL);
	assert_int_equal(o.stream_max_files, 1000000);
	ts_capture_stderr(do_check, &c, err, sizeof(err));
	assert_int_equal(c.problems, 0);
	assert_string_equal(err, "");
	/* The header (32) and two buffers of 64 KiB: 131104 bytes at least. */
	c.text = "mode=stream stream_max_bytes=131103";
	ts_capture_stderr(do_check, &c, err, sizeof(err));
	assert_int_equal(c.problems, 1);
	assert_string_equal(err,
			    "xfdr: xfdr_init: bad value 131103 for stream_max_bytes (0 (one "
			    "file) or at least the 32-byte header and two buffers; default 0); "
			    "nothing changed\n");
	c.text = "mode=stream stream_max_bytes=131104";
	ts_capture_stderr(do_check, &c, err, sizeof(err));
	assert_int_equal(c.problems, 0);
	c.text = "mode=stream per_thread_files=1";
	ts_capture_stderr(do_check, &c, err, sizeof(err));
	assert_int_equal(c.problems, 1);
	assert_non_null(strstr(err, "bad value stream for mode (ring, bounded or stream; stream "
				    "not with per_thread_files; default ring)"));
}

/* The survival keys: signals by name (any case, with or without SIG) or number. */
static void survival_keys(void **state)
{
	static const char *const bad_signals[] = {
	    "SIGKILL", "9",	 "STOP", "SIGSEGV", "bus", "ILL",	  "FPE", "ABRT",
	    "TRAP",    "SIGFOO", "65",	 "-1",	    "",	   "SIGRTMIN+99", "12x", "SIG",
	};
	struct xfdr_options o, before;
	struct parse_call c;
	char err[1024];
	size_t i;

	(void)state;
	xfdr_options_default(&o);
	assert_int_equal(xfdr_options_set(&o, "flush_signal", "SIGUSR2"), 0);
	assert_int_equal(o.flush_signal, SIGUSR2);
	assert_int_equal(xfdr_options_set(&o, "flush_signal", "usr1"), 0);
	assert_int_equal(o.flush_signal, SIGUSR1);
	assert_int_equal(xfdr_options_set(&o, "flush_signal", "15"), 0);
	assert_int_equal(o.flush_signal, SIGTERM);
	assert_int_equal(xfdr_options_set(&o, "flush_signal", "SIGRTMIN+3"), 0);
	assert_int_equal(o.flush_signal, SIGRTMIN + 3);
	assert_int_equal(xfdr_options_set(&o, "flush_signal", "none"), 0);
	assert_int_equal(o.flush_signal, 0);
	assert_int_equal(xfdr_options_set(&o, "flush_on_terminate", "on"), 0);
	assert_int_equal(o.flush_on_terminate, 1);
	assert_int_equal(xfdr_options_set(&o, "flush_on_crash", "no"), 0);
	assert_int_equal(o.flush_on_crash, 0);
	assert_int_equal(xfdr_options_set(&o, "backing", "file"), 0);
	assert_int_equal(o.backing, XFDR_BACKING_FILE);
	before = o;
	for (i = 0; i < sizeof(bad_signals) / sizeof(bad_signals[0]); i++) {
		if (xfdr_options_set(&o, "flush_signal", bad_signals[i]) != -EINVAL)
			fail_msg("flush_signal=%s accepted", bad_signals[i]);
		assert_memory_equal(&o, &before, sizeof(o));
	}
	assert_int_equal(xfdr_options_set(&o, "backing", "disk"), -EINVAL);
	assert_int_equal(xfdr_options_set(&o, "flush_on_crash", "2"), -EINVAL);
	assert_memory_equal(&o, &before, sizeof(o));

	/* A rejected value names the signal kept, as the user would write it. */
	xfdr_options_default(&c.o);
	c.text = "flush_signal=USR2 flush_signal=KILL backing=tape";
	ts_capture_stderr(do_parse, &c, err, sizeof(err));
	assert_int_equal(c.rejected, 2);
	assert_string_equal(err,
			    "xfdr: XFDR_OPTIONS: bad value \"KILL\" for flush_signal (a signal "
			    "name or number the program can catch, not a crash signal; 0 for "
			    "none); keeping SIGUSR2\n"
			    "xfdr: XFDR_OPTIONS: bad value \"tape\" for backing (memory or file); "
			    "keeping memory\n");
	assert_int_equal(c.o.flush_signal, SIGUSR2);
}

/* The flight-recorder keys, as a new user types them: the "unknown key" is gone. */
static void env_flight_recorder_keys(void **state)
{
	struct parse_call c;
	char err[1024];

	(void)state;
	xfdr_options_default(&c.o);
	c.text =
	    "mode=bounded func_duration_threshold_us=5 mode=wrap func_duration_threshold_us=2us";
	ts_capture_stderr(do_parse, &c, err, sizeof(err));
	assert_int_equal(c.rejected, 2);
	assert_string_equal(
	    err, "xfdr: XFDR_OPTIONS: bad value \"wrap\" for mode (ring, bounded or stream; stream "
		 "not with per_thread_files); keeping bounded\n"
		 "xfdr: XFDR_OPTIONS: bad value \"2us\" for func_duration_threshold_us (0 to "
		 "1000000000 microseconds); keeping 5\n");
	assert_int_equal(c.o.mode, XFDR_MODE_BOUNDED);
	assert_int_equal(c.o.func_duration_threshold_us, 5);
}

static void env_empty_and_separators_only(void **state)
{
	struct parse_call c;
	struct xfdr_options def;
	char err[256];

	(void)state;
	xfdr_options_default(&def);
	xfdr_options_default(&c.o);
	c.text = " : \t:";
	ts_capture_stderr(do_parse, &c, err, sizeof(err));
	assert_int_equal(c.rejected, 0);
	assert_string_equal(err, "");
	assert_int_equal(c.o.buffer_size, def.buffer_size);
	c.text = NULL;
	ts_capture_stderr(do_parse, &c, err, sizeof(err));
	assert_int_equal(c.rejected, 0);
}

static void env_too_long(void **state)
{
	static char big[5000];
	struct parse_call c;
	char err[256];

	(void)state;
	memset(big, 'a', sizeof(big) - 1);
	xfdr_options_default(&c.o);
	c.text = big;
	ts_capture_stderr(do_parse, &c, err, sizeof(err));
	assert_int_equal(c.rejected, 1);
	assert_string_equal(err, "xfdr: XFDR_OPTIONS: longer than 4095 bytes; every option "
				 "ignored\n");
}

/* Random text must never crash, and whatever is accepted must be valid. */
static void env_random_text_never_crashes(void **state)
{
	static const char alphabet[] = "=: \tabcdefghijklmnopqrstuvwxyz_0123456789kmg/-.";
	static const char *const keys[] = {
	    "buffer_size=",	 "buffer_max=", "clock=",     "start=",
	    "per_thread_files=", "output=",	"thread_max="};
	int devnull = open("/dev/null", O_WRONLY), saved = dup(2);
	unsigned seed = 12345;
	int iter, i;

	(void)state;
	assert_true(devnull >= 0 && saved >= 0);
	dup2(devnull, 2);
	for (iter = 0; iter < 20000; iter++) {
		char text[200];
		size_t n = 0;
		struct xfdr_options o;

		xfdr_options_default(&o);
		while (n < sizeof(text) - 30) {
			seed = seed * 1103515245u + 12345u;
			if ((seed >> 16) % 5 == 0) {
				const char *k = keys[(seed >> 8) % 7];

				memcpy(text + n, k, strlen(k));
				n += strlen(k);
			}
			seed = seed * 1103515245u + 12345u;
			text[n++] = alphabet[(seed >> 16) % (sizeof(alphabet) - 1)];
			if ((seed >> 4) % 40 == 0)
				break;
		}
		text[n] = '\0';
		opt_parse(&o, text, "XFDR_OPTIONS", parse_store, sizeof(parse_store), NULL);
		i = opt_check(&o) == NULL;
		if (!i) {
			/* Each value valid, only too much memory together: refused as it should be.
			 */
			o.buffer_max = 1;
			o.thread_max = 1;
			i = opt_check(&o) == NULL;
		}
		if (!i) {
			dup2(saved, 2);
			fail_msg("accepted an invalid value from \"%s\"", text);
		}
	}
	dup2(saved, 2);
	close(saved);
	close(devnull);
}

struct init_call {
	struct xfdr_options o;
	int rc;
};

static void do_init(void *arg)
{
	struct init_call *c = arg;

	c->rc = xfdr_init(&c->o);
}

static void init_rejects_bad_struct(void **state)
{
	struct init_call c;
	char err[512];

	(void)state;
	assert_int_equal(ts_init(4096, 4, 0), 0);
	xfdr_options_default(&c.o);
	c.o.buffer_size = 1004;
	ts_capture_stderr(do_init, &c, err, sizeof(err));
	assert_int_equal(c.rc, -EINVAL);
	assert_string_equal(err, "xfdr: xfdr_init: bad value 1004 for buffer_size (a multiple "
				 "of 8, at least 128 to hold the preamble, one event and the drop "
				 "counts, at most 4g; default 65536); nothing changed\n");
	xfdr_options_default(&c.o);
	c.o.clock = 7;
	ts_capture_stderr(do_init, &c, err, sizeof(err));
	assert_int_equal(c.rc, -EINVAL);
	assert_string_equal(err, "xfdr: xfdr_init: bad value 7 for clock (auto, rdtscp or "
				 "rdtsc; default auto); nothing changed\n");
	xfdr_options_default(&c.o);
	c.o.mode = 3;
	ts_capture_stderr(do_init, &c, err, sizeof(err));
	assert_int_equal(c.rc, -EINVAL);
	assert_string_equal(err, "xfdr: xfdr_init: bad value 3 for mode (ring, bounded or stream; "
				 "stream not with per_thread_files; default ring); nothing "
				 "changed\n");
	/* Sizes valid alone that no machine holds together: named, not a bare ENOMEM. */
	xfdr_options_default(&c.o);
	c.o.buffer_size = (size_t)1 << 32;
	c.o.buffer_max = OPT_MAX_BUFFER_MAX;
	ts_capture_stderr(do_init, &c, err, sizeof(err));
	assert_int_equal(c.rc, -EINVAL);
	assert_non_null(strstr(err, "xfdr: xfdr_init: buffer_size 4294967296 x buffer_max 16777216 "
				    "and thread_max 4096 need "));
	assert_non_null(strstr(err, " bytes, more than this machine's memory ("));
	assert_non_null(strstr(err, " bytes); nothing changed\n"));
	/* The session from ts_init() is untouched. */
	assert_int_equal(rt_pool.buffer_bytes, 4096);
}

/*
 * The .map of trace names the clock=rdtsc source as it runs: the CPU number from glibc's
 * rseq area when glibc registered one for the thread (__rseq_size, glibc >= 2.35), else from
 * sched_getcpu().
 */
static void expect_clock_line(const char *trace)
{
	char map_path[600], value[64];
	const char *want = "rdtsc+sched_getcpu";
	size_t n;
	char *map;

#if defined(__x86_64__) && defined(__GLIBC__) &&                                                   \
    (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
	if (__rseq_size >= 8)
		want = "rdtsc+rseq";
#endif
	snprintf(map_path, sizeof(map_path), "%s.map", trace);
	map = (char *)ts_slurp(map_path, &n);
	assert_non_null(ts_map_value(map, "clock", value, sizeof(value)));
	assert_string_equal(value, want);
	free(map);
}

/* xfdr_init(NULL): defaults, then XFDR_OPTIONS; output=DIR/name names the files. */
static void init_from_environment(void **state)
{
	char env[512], path[512], expect[512];

	(void)state;
	snprintf(env, sizeof(env),
		 "buffer_size=1k buffer_max=3:output=%smytrace flush_at_exit=0 clock=rdtsc",
		 ts_dir);
	assert_int_equal(setenv("XFDR_OPTIONS", env, 1), 0);
	assert_int_equal(xfdr_init(NULL), 0);
	unsetenv("XFDR_OPTIONS");
	assert_int_equal(rt_pool.buffer_bytes, 1024);
	assert_int_equal(rt_pool.count, 3);
	assert_int_equal(rt_cfg.flush_at_exit, 0);
	/* From XFDR_OPTIONS, SIGTERM and SIGINT flush unless the options say otherwise. */
	assert_int_equal(rt_cfg.options.flush_on_terminate, 1);
	assert_int_equal(xfdr_start(), 0);
	xfdr_enter(1);
	xfdr_exit(1);
	assert_int_equal(xfdr_stop(), 0);
	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	snprintf(expect, sizeof(expect), "%smytrace-%d-0.xray", ts_dir, (int)getpid());
	assert_string_equal(path, expect);
	expect_clock_line(path);
	/* The next flush gets the next number rather than overwriting. */
	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	snprintf(expect, sizeof(expect), "%smytrace-%d-1.xray", ts_dir, (int)getpid());
	assert_string_equal(path, expect);
	/* A cut path_out is still a C string. */
	assert_int_equal(xfdr_flush(path, 5), 0);
	assert_int_equal(strlen(path), 4);
}

/* output=DIR (an existing directory without the slash) means DIR/xfdr-<program>-... */
static void output_existing_directory(void **state)
{
	struct xfdr_options o;
	char dir[200], path[512], expect[512], prog[256], *p;

	(void)state;
	snprintf(dir, sizeof(dir), "%.*s", (int)strlen(ts_dir) - 1, ts_dir);
	xfdr_options_default(&o);
	o.buffer_size = 1024;
	o.buffer_max = 2;
	o.flush_at_exit = 0;
	o.output = dir;
	assert_int_equal(xfdr_init(&o), 0);
	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	/* The program name, with what is not [A-Za-z0-9._-] as '_'; <n> keeps counting. */
	snprintf(prog, sizeof(prog), "%s", program_invocation_short_name);
	for (p = prog; *p; p++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-",
			    *p))
			*p = '_';
	snprintf(expect, sizeof(expect), "%sxfdr-%s-%d-", ts_dir, prog, (int)getpid());
	assert_memory_equal(path, expect, strlen(expect));
	assert_string_equal(path + strlen(path) - 5, ".xray");
	assert_int_equal(access(path, R_OK), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(lifecycle_before_init),
	    cmocka_unit_test(lifecycle_codes),
	    cmocka_unit_test(defaults),
	    cmocka_unit_test(set_good_values),
	    cmocka_unit_test(set_bad_values),
	    cmocka_unit_test(env_syntax_and_messages),
	    cmocka_unit_test(env_filter_keys),
	    cmocka_unit_test(check_text_as_the_program_would),
	    cmocka_unit_test(stream_keys),
	    cmocka_unit_test(env_flight_recorder_keys),
	    cmocka_unit_test(survival_keys),
	    cmocka_unit_test(env_empty_and_separators_only),
	    cmocka_unit_test(env_too_long),
	    cmocka_unit_test(env_random_text_never_crashes),
	    cmocka_unit_test(init_rejects_bad_struct),
	    cmocka_unit_test(init_from_environment),
	    cmocka_unit_test(output_existing_directory),
	};

	return cmocka_run_group_tests(tests, ts_group_setup, ts_group_teardown);
}
