/*
 * tests/system/test_runtime_faults.c - what the runtime leaves when writing its files fails.
 *
 * End to end, with tests/e2e/faults_prog.c built with -finstrument-functions and run with
 * libxfdr.so preloaded: a file size limit (RLIMIT_FSIZE, set by the program itself), a full
 * file system (a 64 KiB tmpfs in a private mount namespace, when this machine lets us make
 * one), a missing output directory, a SIGKILL in the middle of a flush, a library dlclose()d
 * before the flush. In every case the program's exit status is its own (never SIGXFSZ), a
 * file under a final name is whole (`xfdr verify` and `llvm-xray convert` accept it), no
 * .part stays after a flush that ended, a .map is never empty, and a failure is one stderr
 * line naming the file and the error.
 *
 * In process: with per_thread_files=1, drops of a thread that never got a buffer are in the
 * first thread file's drop-count buffer, and the files' totals equal the .map's.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#include "tests/support/e2e_calls.h"
#include "tests/support/runtime_test.h"

#define EXIT_OWN 7 /* faults_prog's own exit status */
#define LOG_BYTES 65536

static char prog[TH_PATH_BYTES], lib[TH_PATH_BYTES], preload[TH_PATH_BYTES + 16];

static int group_setup(void **state)
{
	char log[TH_PATH_BYTES], src[TH_PATH_BYTES], so[TH_PATH_BYTES], dir[TH_PATH_BYTES];

	(void)state;
	th_root_make();
	th_path(dir, "build", 1);
	th_join(log, dir, "/build.log");
	th_join(prog, dir, "/faults_prog");
	th_join(lib, dir, "/libfaults.so");
	th_src_file(src, "tests/e2e/faults_prog.c");
	{
		char *argv[] = {"gcc", "-O1", "-finstrument-functions", src, "-ldl", "-o",
				prog,  NULL};

		th_run_ok(argv, NULL, log);
	}
	th_src_file(src, "tests/e2e/faults_lib.c");
	{
		char *argv[] = {"gcc",	 "-O1",	    "-finstrument-functions",
				"-fPIC", "-shared", src,
				"-o",	 lib,	    NULL};

		th_run_ok(argv, NULL, log);
	}
	th_build_file(so, "lib/libxfdr.so.0");
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", so);
	return ts_group_setup(state);
}

static int group_teardown(void **state)
{
	th_root_remove();
	return ts_group_teardown(state);
}

/* The whole log (stdout and stderr of the run); caller frees. */
static char *read_log(const char *log)
{
	size_t n;

	return (char *)ts_slurp(log, &n);
}

/* Run faults_prog with args under XFDR_OPTIONS=start=1:output=<out>/:<options>. */
static int run_prog(const char *out, const char *options, char *const args[], const char *log)
{
	char opt[TH_PATH_BYTES * 2];
	char *env[] = {opt, preload, NULL};
	char *argv[8];
	size_t i;

	snprintf(opt, sizeof(opt), "XFDR_OPTIONS=start=1:output=%s/%s%s", out, *options ? ":" : "",
		 options);
	argv[0] = prog;
	for (i = 0; args[i] && i < 6; i++)
		argv[i + 1] = args[i];
	argv[i + 1] = NULL;
	unlink(log);
	return th_run(argv, env, log);
}

struct left {
	unsigned traces, maps, parts;
};

/*
 * Every file left in dir: a trace under its final name must be whole (both tools accept it),
 * a .map must not be empty; .part files are counted.
 */
static void check_left(const char *dir, struct left *l, const char *log)
{
	struct dirent *e;
	DIR *d = opendir(dir);

	memset(l, 0, sizeof(*l));
	assert_non_null(d);
	while ((e = readdir(d))) {
		char path[TH_PATH_BYTES * 2];
		size_t len = strlen(e->d_name);
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (len > 5 && !strcmp(e->d_name + len - 5, ".part")) {
			l->parts++;
		} else if (len > 5 && !strcmp(e->d_name + len - 5, ".xray")) {
			l->traces++;
			th_tools_accept(path, log);
		} else if (len > 4 && !strcmp(e->d_name + len - 4, ".map")) {
			l->maps++;
			assert_int_equal(stat(path, &st), 0);
			if (!st.st_size)
				fail_msg("empty .map %s", path);
		}
	}
	closedir(d);
}

/* One line of text holds all of the needles. */
static int line_with(const char *text, const char *a, const char *b, const char *c)
{
	const char *p = text;

	while (p && *p) {
		const char *eol = strchr(p, '\n');
		char line[4096];
		size_t len = eol ? (size_t)(eol - p) : strlen(p);

		snprintf(line, sizeof(line), "%.*s", (int)len, p);
		if (strstr(line, a) && strstr(line, b) && (!c || strstr(line, c)))
			return 1;
		p = eol ? eol + 1 : NULL;
	}
	return 0;
}

/* One case's run of faults_prog: its output folder, the tools' log, and what it printed. */
struct run {
	char out[TH_PATH_BYTES], tools[TH_PATH_BYTES];
	char *log; /* stdout and stderr of the program; freed by end_case() */
};

/* Run faults_prog into the fresh folder <name>/; returns its exit status. */
static int run_case(const char *name, const char *options, char *const args[], struct run *r)
{
	char log[TH_PATH_BYTES], file[TH_PATH_BYTES];
	int status;

	th_path(r->out, name, 1);
	snprintf(file, sizeof(file), "%s.log", name);
	th_path(log, file, 0);
	snprintf(file, sizeof(file), "%s-tools.log", name);
	th_path(r->tools, file, 0);
	status = run_prog(r->out, options, args, log);
	r->log = read_log(log);
	return status;
}

/* Check every file the run left (check_left) and free its log. */
static void end_case(struct run *r, struct left *l)
{
	free(r->log);
	r->log = NULL;
	check_left(r->out, l, r->tools);
}

/* Past RLIMIT_FSIZE: no SIGXFSZ, no file at all (no trace: no .map), one line with EFBIG. */
static void fsize_limit_refuses_the_trace(void **state)
{
	char *args[] = {"calls", "20000", "40000", NULL};
	struct run r;
	struct left l;

	(void)state;
	assert_int_equal(run_case("fsize", "buffer_size=4096", args, &r), EXIT_OWN);
	if (!line_with(r.log, r.out, ".xray: EFBIG", "lost"))
		fail_msg("no line naming the trace, EFBIG and what was lost:\n%s", r.log);
	end_case(&r, &l);
	assert_int_equal(l.traces, 0);
	assert_int_equal(l.maps, 0);
	assert_int_equal(l.parts, 0);
}

/* per_thread_files: the thread file is refused; the .map is still written, and not empty. */
static void fsize_limit_per_thread_files(void **state)
{
	char *args[] = {"calls", "20000", "40000", NULL};
	struct run r;
	struct left l;

	(void)state;
	assert_int_equal(run_case("fsize-pt", "buffer_size=4096:per_thread_files=1", args, &r),
			 EXIT_OWN);
	if (!line_with(r.log, r.out, ".xray: EFBIG", "-t"))
		fail_msg("no line naming the thread file and EFBIG:\n%s", r.log);
	end_case(&r, &l);
	assert_int_equal(l.traces, 0);
	assert_int_equal(l.maps, 1);
	assert_int_equal(l.parts, 0);
}

/* A limit the whole trace fits in: nothing changes (the check refuses only what passes it). */
static void fsize_limit_that_fits(void **state)
{
	char *args[] = {"calls", "4000000", "1000", NULL};
	struct run r;
	struct left l;

	(void)state;
	assert_int_equal(run_case("fits", "buffer_size=4096", args, &r), EXIT_OWN);
	if (strstr(r.log, "EFBIG"))
		fail_msg("refused a trace that fits:\n%s", r.log);
	end_case(&r, &l);
	assert_int_equal(l.traces, 1);
	assert_int_equal(l.maps, 1);
	assert_int_equal(l.parts, 0);
}

/*
 * A file system that fills in the middle of the trace: a 64 KiB tmpfs, mounted in a mount
 * namespace of the child's own; what is left there is copied out before it goes away.
 */
static void full_file_system(void **state)
{
	char out[TH_PATH_BYTES], mnt[TH_PATH_BYTES], log[TH_PATH_BYTES], tools[TH_PATH_BYTES];
	char script[TH_PATH_BYTES * 8], opt[TH_PATH_BYTES * 2], *text;
	char *probe[] = {"unshare", "-m", "sh", "-c", "mount -t tmpfs tmpfs /mnt", NULL};
	char *argv[] = {"unshare", "-m", "sh", "-c", script, NULL};
	struct left l;

	(void)state;
	th_path(log, "full.log", 0);
	if (th_run(probe, NULL, log) != 0)
		skip(); /* no mount namespace here (not root): RLIMIT_FSIZE covers "full" */
	th_path(out, "full", 1);
	th_path(mnt, "full-mnt", 1);
	th_path(tools, "full-tools.log", 0);
	/* Only the program records: mount and cp get no XFDR_OPTIONS nor LD_PRELOAD. */
	snprintf(opt, sizeof(opt), "XFDR_OPTIONS=start=1:output=%s/:buffer_size=4096", mnt);
	snprintf(script, sizeof(script),
		 "mount -t tmpfs -o size=64k tmpfs '%s' || exit 99; env '%s' '%s' '%s' calls 0 "
		 "40000; s=$?; cp -a '%s'/. '%s'/; exit $s",
		 mnt, opt, preload, prog, mnt, out);
	unlink(log);
	assert_int_equal(th_run(argv, NULL, log), EXIT_OWN);
	text = read_log(log);
	if (!line_with(text, mnt, ".xray: ENOSPC", "lost"))
		fail_msg("no line naming the trace and ENOSPC:\n%s", text);
	free(text);
	check_left(out, &l, tools);
	assert_int_equal(l.traces, 0);
	assert_int_equal(l.maps, 0);
	assert_int_equal(l.parts, 0);
}

/* A missing output directory is named at start; recording goes on; the exit flush names it. */
static void missing_directory_named_at_start(void **state)
{
	char out[TH_PATH_BYTES], log[TH_PATH_BYTES], want[TH_PATH_BYTES * 2], *text;
	const char *start, *end;
	char *args[] = {"calls", "0", "100", NULL};

	(void)state;
	th_path(out, "missing/no/such", 0);
	th_path(log, "missing.log", 0);
	assert_int_equal(run_prog(out, "", args, log), EXIT_OWN);
	text = read_log(log);
	snprintf(want, sizeof(want), "output directory %s/: ENOENT", out);
	start = strstr(text, want);
	end = strstr(text, "calls done");
	if (!start || !end || start > end)
		fail_msg("no line naming %s/ and ENOENT before the program ran:\n%s", out, text);
	if (!line_with(end, out, ".xray: ENOENT", NULL))
		fail_msg("the exit flush does not name the file and ENOENT:\n%s", text);
	free(text);
}

/* SIGKILL in the middle of flushes: every file under a final name is whole. */
static void killed_during_flush(void **state)
{
	char out[TH_PATH_BYTES], tools[TH_PATH_BYTES], opt[TH_PATH_BYTES * 2];
	struct left l;
	unsigned round, traces = 0;

	(void)state;
	th_path(tools, "kill-tools.log", 0);
	for (round = 0; round < 3; round++) {
		char sub[64];
		pid_t pid;
		int status;

		snprintf(sub, sizeof(sub), "kill%u", round);
		th_path(out, sub, 1);
		snprintf(opt, sizeof(opt),
			 "XFDR_OPTIONS=start=1:output=%s/:buffer_size=65536:buffer_max=64:"
			 "mode=ring:flush_at_exit=0",
			 out);
		pid = fork();
		assert_true(pid >= 0);
		if (!pid) {
			char *argv[] = {prog, "flushloop", "100000", NULL};

			putenv(opt);
			putenv(preload);
			execv(prog, argv);
			_exit(127);
		}
		/* Wait for the first flush to begin (a .part), then kill at a varying moment. */
		for (;;) {
			struct dirent *e;
			DIR *d = opendir(out);
			int seen = 0;
			struct timespec ts = {0, 1000000};

			assert_non_null(d);
			while ((e = readdir(d)))
				seen |= strstr(e->d_name, ".part") != NULL ||
					strstr(e->d_name, ".xray") != NULL;
			closedir(d);
			if (seen)
				break;
			assert_int_equal(waitpid(pid, &status, WNOHANG), 0);
			nanosleep(&ts, NULL);
		}
		{
			struct timespec ts = {0, (long)round * 3000000L};

			nanosleep(&ts, NULL);
		}
		kill(pid, SIGKILL);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
		check_left(out, &l, tools);
		traces += l.traces;
	}
	(void)traces;
}

/* A dlclose()d library's functions keep their names (and module) in the .map. */
static void dlclosed_library_keeps_names(void **state)
{
	char trace[TH_PATH_BYTES], map[TH_PATH_BYTES], *text;
	char *args[] = {"dl", lib, "5", NULL};
	struct run r;
	struct left l;

	(void)state;
	assert_int_equal(run_case("dl", "", args, &r), EXIT_OWN);
	th_find_one(r.out, ".xray", trace);
	th_join(map, trace, ".map");
	text = read_log(map);
	if (!line_with(text, "\tfaults_lib_outer\t", lib, NULL) ||
	    !line_with(text, "\tfaults_lib_inner\t", lib, NULL))
		fail_msg("the .map does not name the unloaded library's functions:\n%s", text);
	if (strstr(text, "<unknown>"))
		fail_msg("unnamed functions in the .map:\n%s", text);
	free(text);
	end_case(&r, &l);
	assert_int_equal(l.traces, 1);
}

/* The XFDRDROP totals of one file, added to *sum (no_buffer, reentrant, too_large, slot). */
struct drop_sum {
	uint64_t v[4];
	unsigned buffers;
};

static int add_drops(const struct xfdr_event *ev, void *arg)
{
	struct drop_sum *s = arg;
	static const unsigned off[4] = {XFDR_DROP_NO_BUFFER_OFF, XFDR_DROP_REENTRANT_OFF,
					XFDR_DROP_TOO_LARGE_OFF, XFDR_DROP_NO_THREAD_SLOT_OFF};
	unsigned i;

	if (ev->type != XFDR_EVENT_CUSTOM ||
	    !xfdr_payload_has_tag(ev->payload, ev->payload_bytes, XFDR_DROP_MAGIC))
		return 0;
	for (i = 0; i < 4; i++)
		s->v[i] += ts_get64(ev->payload + off[i]);
	s->buffers++;
	return 0;
}

static void *drop_without_buffer(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < 50; i++) {
		xfdr_enter(9);
		xfdr_exit(9);
	}
	return NULL;
}

/* The files listed by a .map, their drop totals summed into *s; returns how many. */
static unsigned sum_listed(const char *map_path, struct drop_sum *s, char *first, size_t n)
{
	size_t bytes;
	char *map = (char *)ts_slurp(map_path, &bytes), *p = map;
	unsigned files = 0;

	memset(s, 0, sizeof(*s));
	while ((p = strstr(p, "\ntrace\t"))) {
		char path[600];
		char *eol = strchr(p + 7, '\n');

		snprintf(path, sizeof(path), "%.*s", (int)(eol - p - 7), p + 7);
		if (!files)
			snprintf(first, n, "%s", path);
		ts_each_event(path, XFDR_ORDER_FILE, add_drops, s);
		ts_tools_accept(path);
		files++;
		p = eol;
	}
	free(map);
	return files;
}

static uint64_t map_u64(const char *map_path, const char *key)
{
	char value[64];
	size_t n;
	char *map = (char *)ts_slurp(map_path, &n);
	const char *v = ts_map_value(map, key, value, sizeof(value));
	uint64_t r;

	if (!v)
		fail_msg("no %s in %s", key, map_path);
	r = strtoull(v, NULL, 10);
	free(map);
	return r;
}

/*
 * per_thread_files=1 with one buffer: the main thread has it, a second thread never gets
 * one. Its drops are in the first thread file's drop buffer, and the files add up to the
 * .map's totals.
 */
static void per_thread_files_keep_every_drop(void **state)
{
	char map[512], first[600];
	struct drop_sum s;
	pthread_t th;

	(void)state;
	assert_int_equal(ts_init(4096, 1, 1), 0);
	assert_int_equal(xfdr_start(), 0);
	xfdr_enter(1);
	xfdr_exit(1);
	assert_int_equal(pthread_create(&th, NULL, drop_without_buffer, NULL), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(xfdr_stop(), 0);
	assert_int_equal(xfdr_flush(map, sizeof(map)), 0);
	assert_int_equal(sum_listed(map, &s, first, sizeof(first)), 1);
	assert_int_equal(s.buffers, 1);
	assert_int_equal(s.v[0], 100); /* the second thread's 50 entries and 50 exits */
	assert_int_equal(s.v[0], map_u64(map, "dropped\tno_buffer"));
	assert_int_equal(s.v[0] + s.v[1] + s.v[2] + s.v[3], map_u64(map, "dropped\ttotal"));
}

static void *record_and_exit(void *arg)
{
	(void)arg;
	xfdr_enter(8);
	xfdr_exit(8);
	return NULL;
}

/*
 * No thread file at all: the drops go to a "-t0.xray" file, listed in the .map. The one
 * buffer of the pool went to a thread that exited; a later thread gets none and drops; a
 * flush of the window after both writes no buffer.
 */
static void per_thread_files_t0_file(void **state)
{
	char map[512], first[600];
	struct drop_sum s;
	pthread_t th;
	uint64_t since;
	size_t len;

	(void)state;
	assert_int_equal(ts_init(4096, 1, 1), 0);
	assert_int_equal(xfdr_start(), 0);
	assert_int_equal(pthread_create(&th, NULL, record_and_exit, NULL), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(pthread_create(&th, NULL, drop_without_buffer, NULL), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	since = xfdr_now();
	assert_int_equal(xfdr_stop(), 0);
	assert_int_equal(xfdr_flush_since(since, map, sizeof(map)), 0);
	assert_int_equal(sum_listed(map, &s, first, sizeof(first)), 1);
	len = strlen(first);
	if (len < 8 || strcmp(first + len - 8, "-t0.xray"))
		fail_msg("expected a -t0.xray file, the .map lists %s", first);
	assert_int_equal(s.buffers, 1);
	assert_int_equal(s.v[0], 100);
	assert_int_equal(s.v[0], map_u64(map, "dropped\tno_buffer"));
	assert_int_equal(s.v[0] + s.v[1] + s.v[2] + s.v[3], map_u64(map, "dropped\ttotal"));
}

/*
 * backing=file under RLIMIT_FSIZE: reserving the live files past the limit fails xfdr_init()
 * with -EFBIG and a line naming the file, instead of SIGXFSZ; nothing is left. In a child
 * (the limit stays there), its stderr in a file.
 */
static void backing_file_past_fsize_limit(void **state)
{
	char dir[TH_PATH_BYTES], errlog[TH_PATH_BYTES], *text;
	struct left l;
	int status;
	pid_t pid;

	(void)state;
	th_path(dir, "backing", 1);
	th_path(errlog, "backing.log", 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct rlimit r = {.rlim_cur = 4096, .rlim_max = RLIM_INFINITY};
		struct xfdr_options o;
		char out[TH_PATH_BYTES + 2];
		int fd = open(errlog, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd < 0 || dup2(fd, 2) < 0 || setrlimit(RLIMIT_FSIZE, &r))
			_exit(10);
		snprintf(out, sizeof(out), "%s/", dir);
		xfdr_options_default(&o);
		o.buffer_size = 4096;
		o.buffer_max = 4;
		o.backing = XFDR_BACKING_FILE;
		o.flush_at_exit = 0;
		o.output = out;
		_exit(xfdr_init(&o) == -EFBIG ? 0 : 11);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	text = read_log(errlog);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail_msg("child: status %#x; stderr:\n%s", status, text);
	if (!line_with(text, dir, "-live.xray", "EFBIG"))
		fail_msg("no line naming the live file and EFBIG:\n%s", text);
	free(text);
	check_left(dir, &l, errlog);
	assert_int_equal(l.traces + l.maps + l.parts, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(fsize_limit_refuses_the_trace),
	    cmocka_unit_test(fsize_limit_per_thread_files),
	    cmocka_unit_test(fsize_limit_that_fits),
	    cmocka_unit_test(full_file_system),
	    cmocka_unit_test(missing_directory_named_at_start),
	    cmocka_unit_test(killed_during_flush),
	    cmocka_unit_test(dlclosed_library_keeps_names),
	    cmocka_unit_test(per_thread_files_keep_every_drop),
	    cmocka_unit_test(per_thread_files_t0_file),
	    cmocka_unit_test(backing_file_past_fsize_limit),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
