/*
 * tests/unit/runtime/test_runtime_stream.c - mode=stream: a run many times larger than the pool
 * reaches the file whole and in order, rotation cuts it into files each valid alone and keeps
 * the newest, a writer held as a slow disk would be makes counted stream_behind drops and still
 * a valid trace, and a crash, SIGTERM and SIGKILL leave what was recorded (or written).
 *
 * The events are the known sequence of runtime_test.h (ts_seq_issue()), so what each file must
 * hold is known in advance; the reader library and llvm-xray check the files. The writer is
 * never raced: the test issues at most half the pool's worth of events, then waits until no
 * full buffer is left waiting for the writer (the pool's own states), and so on; the held
 * writer is held by the writer's test hook, at a point the test waits to see it reach.
 */
#include <dirent.h>
#include <inttypes.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "runtime/flush/stream.h"
#include "tests/support/child.h"
#include "tests/support/runtime_test.h"
#include "tests/support/stream_test.h"

enum {
	BUFFER = 4096,
	BUFFERS = 8,
	/* function records a buffer holds, less its preamble: a bound, not an exact count */
	RECORDS_PER_BUFFER = (BUFFER - 64) / 8,
	CHUNK = BUFFERS / 2 * RECORDS_PER_BUFFER,
	TWENTY_POOLS = 20 * BUFFERS * BUFFER / 8,
	WAIT_S = 20,
};

static char dir[256];

static void fresh_dir(const char *name)
{
	st_fresh_dir(dir, sizeof(dir), name);
}

static void stream_options(struct xfdr_options *o)
{
	ts_options(o, BUFFER, BUFFERS, XFDR_MODE_STREAM);
	o->output = dir;
}

/* A stream with the test's options in a fresh directory of its own, recording. */
static void start_stream(const char *name)
{
	struct xfdr_options o;

	fresh_dir(name);
	stream_options(&o);
	assert_int_equal(xfdr_init(&o), 0);
	assert_int_equal(xfdr_start(), 0);
}

/* Events k0 .. k1 - 1 of the sequence, never more than half the pool before the writer. */
static void issue_paced(uint64_t k0, uint64_t k1)
{
	uint64_t k;

	for (k = k0; k < k1; k++) {
		ts_seq_issue(k);
		if ((k - k0) % CHUNK == CHUNK - 1)
			st_wait_writer_caught_up(WAIT_S);
	}
}

/* The files in dir with this suffix, sorted by name length then name: by <n>. */
static size_t list_files(const char *suffix, char names[][256], size_t max)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = 0, i, j;

	assert_non_null(d);
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name), sl = strlen(suffix);

		if (len > sl && !strcmp(e->d_name + len - sl, suffix)) {
			assert_true(n < max && strlen(dir) + len < 256);
			memcpy(names[n], dir, strlen(dir));
			memcpy(names[n++] + strlen(dir), e->d_name, len + 1);
		}
	}
	closedir(d);
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && (strlen(names[j]) < strlen(names[j - 1]) ||
				      (strlen(names[j]) == strlen(names[j - 1]) &&
				       strcmp(names[j], names[j - 1]) < 0));
		     j--) {
			char t[256];

			memcpy(t, names[j], 256);
			memcpy(names[j], names[j - 1], 256);
			memcpy(names[j - 1], t, 256);
		}
	return n;
}

static char *map_of(const char *trace, char *buf, size_t n)
{
	char *map;
	size_t bytes;

	snprintf(buf, n, "%s.map", trace);
	map = (char *)ts_slurp(buf, &bytes);
	return map;
}

static uint64_t map_u64(const char *map, const char *key)
{
	char v[64];

	if (!ts_map_value(map, key, v, sizeof(v)))
		fail_msg("no %s line in the .map", key);
	return strtoull(v, NULL, 10);
}

/* The events of a file continue the sequence from *k: it must be exactly the next ones. */
static int seq_from(const struct xfdr_event *ev, void *arg)
{
	uint64_t *k = arg;

	if (ev->type != XFDR_EVENT_FUNCTION)
		return 0;
	if (ev->function_id != ts_seq_fid(*k) || ev->action != (unsigned)ts_seq_is_exit(*k))
		fail_msg("event %" PRIu64 ": fid %u action %u, expected %u %d", *k, ev->function_id,
			 ev->action, ts_seq_fid(*k), ts_seq_is_exit(*k));
	(*k)++;
	return 0;
}

/* Function events of a verified file. */
static int count_fn(const struct xfdr_event *ev, void *arg)
{
	*(uint64_t *)arg += ev->type == XFDR_EVENT_FUNCTION;
	return 0;
}

static uint64_t file_functions(const char *path)
{
	uint64_t n = 0;

	ts_each_event(path, XFDR_ORDER_FILE, count_fn, &n);
	return n;
}

/* Function records llvm-xray reads in the file (which must convert). */
static size_t llvm_functions(const char *path)
{
	char *yaml = NULL;
	size_t n;

	if (ts_llvm_yaml(path, &yaml))
		fail_msg("llvm-xray rejects %s:\n%.2000s", path, yaml ? yaml : "");
	n = ts_count(yaml, "kind: function-enter,") + ts_count(yaml, "kind: function-exit,");
	free(yaml);
	return n;
}

static void final_flush(char *path, size_t n)
{
	assert_int_equal(xfdr_stop(), 0);
	assert_int_equal(xfdr_flush(path, n), 0);
}

/* Twenty pools' worth of events through a pool of eight buffers: one file, all, in order. */
static void whole_run_in_one_file(void **state)
{
	char path[512], names[4][256], mapname[600], *map;
	uint64_t k = 0;

	(void)state;
	start_stream("whole");
	issue_paced(0, TWENTY_POOLS);
	final_flush(path, sizeof(path));
	assert_int_equal(list_files(".xray", names, 4), 1);
	assert_string_equal(path, names[0]);
	ts_each_event(path, XFDR_ORDER_FILE, seq_from, &k);
	assert_int_equal(k, TWENTY_POOLS);
	assert_int_equal(llvm_functions(path), TWENTY_POOLS);
	map = map_of(path, mapname, sizeof(mapname));
	assert_string_equal(ts_map_value(map, "mode", (char[16]){0}, 16), "stream");
	assert_int_equal(map_u64(map, "stream_behind"), 0);
	assert_int_equal(map_u64(map, "stream_file"), 1);
	/* every buffer of events the run filled, none overwritten: more than 20 pools of them */
	assert_true(map_u64(map, "buffers_written") > 20 * BUFFERS);
	free(map);
	xfdr_stop();
}

/* A flush while recording writes the full buffers; the final flush the rest, once. */
static void flush_while_recording_then_final(void **state)
{
	char path[512], again[512], names[4][256], mapname[600], *map;
	uint64_t k = 0;

	(void)state;
	start_stream("sync");
	issue_paced(0, 3 * CHUNK + 11);
	assert_int_equal(xfdr_flush(path, sizeof(path)), 0);
	/* the full buffers are in the file, the one being filled is not, and the .map is there */
	k = file_functions(path);
	assert_true(k > 3 * CHUNK - 2 * RECORDS_PER_BUFFER && k < 3 * CHUNK + 11);
	map = map_of(path, mapname, sizeof(mapname));
	assert_int_equal(map_u64(map, "stream_file"), 1);
	free(map);
	issue_paced(3 * CHUNK + 11, 5 * CHUNK);
	final_flush(again, sizeof(again));
	assert_string_equal(path, again);
	assert_int_equal(list_files(".xray", names, 4), 1);
	k = 0;
	ts_each_event(path, XFDR_ORDER_FILE, seq_from, &k);
	assert_int_equal(k, 5 * CHUNK);
	xfdr_stop();
}

/* The sequence number of the first function event of a file. */
static int first_event(const struct xfdr_event *ev, void *arg)
{
	uint64_t *k = arg;
	uint64_t j;

	if (ev->type != XFDR_EVENT_FUNCTION)
		return 0;
	for (j = *k; j < *k + 2 * RECORDS_PER_BUFFER; j++)
		if (ev->function_id == ts_seq_fid(j) && ev->action == (unsigned)ts_seq_is_exit(j))
			break;
	*k = j;
	return 1;
}

/*
 * Recording again after a final flush: a new file. The buffer the thread was filling at the
 * final flush goes into it whole, so the new file takes the sequence up from that buffer's
 * start (at most a buffer before where the first file ended) and holds the rest, in order.
 */
static void restart_after_final_flush_begins_a_new_file(void **state)
{
	char first[512], second[512], names[4][256];
	uint64_t k = 0, ended, from;

	(void)state;
	start_stream("restart");
	issue_paced(0, 2 * CHUNK + 5);
	final_flush(first, sizeof(first));
	ts_each_event(first, XFDR_ORDER_FILE, seq_from, &k);
	assert_int_equal(k, 2 * CHUNK + 5);
	ended = k;
	assert_int_equal(xfdr_start(), 0);
	issue_paced(2 * CHUNK + 5, 4 * CHUNK);
	final_flush(second, sizeof(second));
	assert_string_not_equal(first, second);
	assert_int_equal(list_files(".xray", names, 4), 2);
	from = ended >= 2 * RECORDS_PER_BUFFER ? ended - 2 * RECORDS_PER_BUFFER : 0;
	ts_each_event(second, XFDR_ORDER_FILE, first_event, &from);
	assert_true(from <= ended && from + RECORDS_PER_BUFFER + 8 >= ended);
	k = from;
	ts_each_event(second, XFDR_ORDER_FILE, seq_from, &k);
	assert_int_equal(k, 4 * CHUNK);
	xfdr_stop();
}

/*
 * stream_max_bytes cuts the stream into files of at most that many bytes, each a valid trace
 * with its .map; without stream_max_files every event is in one of them, in order; with it,
 * the newest K files stay, and they hold the end of the run.
 */
static void rotation(int keep)
{
	struct xfdr_options o;
	char path[512], names[64][256], mapname[600], *map;
	uint64_t max_bytes = 32 + 5 * BUFFER, k = 0, events = 0, file_no, prev_no = 0;
	size_t n, i;

	stream_options(&o);
	o.stream_max_bytes = max_bytes;
	o.stream_max_files = (size_t)keep;
	assert_int_equal(xfdr_init(&o), 0);
	assert_int_equal(xfdr_start(), 0);
	issue_paced(0, TWENTY_POOLS);
	final_flush(path, sizeof(path));
	n = list_files(".xray", names, 64);
	assert_int_equal(list_files(".xray.map", (char[64][256]){{0}}, 64), n);
	if (keep)
		assert_int_equal(n, (size_t)keep);
	else
		assert_true(n > 20 * BUFFERS / 5);
	assert_string_equal(names[n - 1], path);
	for (i = 0; i < n; i++) {
		struct stat st;

		assert_int_equal(stat(names[i], &st), 0);
		assert_true((uint64_t)st.st_size <= max_bytes);
		ts_tools_accept(names[i]);
		events += file_functions(names[i]);
		/* the files of the stream are numbered from 1 in its .map, one after another */
		map = map_of(names[i], mapname, sizeof(mapname));
		file_no = map_u64(map, "stream_file");
		assert_true(i ? file_no == prev_no + 1 : file_no >= 1);
		assert_true(keep || file_no == i + 1);
		prev_no = file_no;
		free(map);
	}
	/* Each file takes up the sequence where the one before it ended. */
	k = TWENTY_POOLS - events;
	if (!keep)
		assert_int_equal(k, 0);
	for (i = 0; i < n; i++)
		ts_each_event(names[i], XFDR_ORDER_FILE, seq_from, &k);
	assert_int_equal(k, TWENTY_POOLS);
	xfdr_stop();
}

static void rotation_keeps_every_file(void **state)
{
	(void)state;
	fresh_dir("rotate_all");
	rotation(0);
}

static void rotation_keeps_newest(void **state)
{
	(void)state;
	fresh_dir("rotate_newest");
	rotation(3);
}

/*
 * RLIMIT_FSIZE cuts the stream as stream_max_bytes does (a write past it would be SIGXFSZ,
 * which ends the program): every file within the limit, every event in one of them.
 */
static void file_size_limit_cuts_the_stream(void **state)
{
	struct rlimit old, low;
	char path[512], names[64][256];
	uint64_t k = 0, limit = 32 + 3 * BUFFER, events = 5 * CHUNK;
	size_t n, i;

	(void)state;
	start_stream("fsize");
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	low = old;
	low.rlim_cur = limit;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &low), 0);
	issue_paced(0, events);
	final_flush(path, sizeof(path));
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	n = list_files(".xray", names, 64);
	assert_true(n >= events / RECORDS_PER_BUFFER / 2);
	for (i = 0; i < n; i++) {
		struct stat st;

		assert_int_equal(stat(names[i], &st), 0);
		assert_true((uint64_t)st.st_size <= limit);
		ts_each_event(names[i], XFDR_ORDER_FILE, seq_from, &k);
	}
	assert_int_equal(k, events);
	xfdr_stop();
}

/* The descriptor this process has open on path, or -1. */
static int fd_of(const char *path)
{
	char link[64], target[512];
	int fd;

	for (fd = 3; fd < 1024; fd++) {
		ssize_t n;

		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		n = readlink(link, target, sizeof(target) - 1);
		if (n > 0) {
			target[n] = '\0';
			if (!strcmp(target, path))
				return fd;
		}
	}
	return -1;
}

static void record_more(void *arg)
{
	uint64_t *k = arg;

	issue_paced(*k, *k + 2 * CHUNK);
	*k += 2 * CHUNK;
}

/*
 * A program that closes descriptors it did not open (a daemon closing everything) and opens
 * another file under the stream's number: the writer tells, writes nothing into that file,
 * and goes on in a new file of the stream; together the files hold every event.
 */
static void program_closing_the_descriptor(void **state)
{
	char path[512], names[4][256], err[2048], real[512], other[600];
	uint64_t k = 0, issued = CHUNK;
	struct stat st;
	int fd, fd2;
	size_t i;

	(void)state;
	start_stream("closed");
	issue_paced(0, issued);
	assert_int_equal(list_files(".xray", names, 4), 1);
	assert_non_null(realpath(names[0], real));
	fd = fd_of(real);
	assert_true(fd >= 0);
	snprintf(other, sizeof(other), "%sprogram-file", dir);
	fd2 = open(other, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd2 >= 0);
	assert_int_equal(dup2(fd2, fd), fd); /* closes the stream's descriptor */
	close(fd2);
	ts_capture_stderr(record_more, &issued, err, sizeof(err));
	assert_non_null(strstr(err, "mode=stream: the program closed the descriptor of "));
	final_flush(path, sizeof(path));
	assert_int_equal(stat(other, &st), 0);
	assert_int_equal(st.st_size, 0); /* the program's file got nothing of ours */
	close(fd);
	assert_int_equal(list_files(".xray", names, 4), 2);
	for (i = 0; i < 2; i++)
		ts_each_event(names[i], XFDR_ORDER_FILE, seq_from, &k);
	assert_int_equal(k, issued);
	/* the file left behind got its .map too (by name: its descriptor is the program's) */
	assert_int_equal(list_files(".xray.map", names, 4), 2);
	xfdr_stop();
}

/* The writer's test hook holds it before its first buffer until the test lets it go. */
static sem_t writer_held, writer_go;
static int hold_once;

static void hold_writer(void)
{
	if (!__atomic_exchange_n(&hold_once, 0, __ATOMIC_ACQ_REL))
		return;
	sem_post(&writer_held);
	sem_wait(&writer_go);
}

static void sem_wait_s(sem_t *s, int seconds)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_sec += seconds;
	if (sem_timedwait(s, &t))
		fail_msg("the stream writer did not reach its hook in %d s", seconds);
}

/*
 * A stream in a directory of its own whose writer is held by its hook (holding the token,
 * before its first write) while events 0 .. issued - 1 are recorded: two buffers' worth first,
 * so that the first is full and the writer meets it; then the rest, which the pool holds or
 * drops. Release it with sem_post(&writer_go).
 */
static void start_held_stream(const char *name, uint64_t issued)
{
	uint64_t k;

	assert_int_equal(sem_init(&writer_held, 0, 0), 0);
	assert_int_equal(sem_init(&writer_go, 0, 0), 0);
	hold_once = 1;
	stream_test_before_write = hold_writer;
	start_stream(name);
	for (k = 0; k < 2 * RECORDS_PER_BUFFER; k++)
		ts_seq_issue(k);
	sem_wait_s(&writer_held, WAIT_S);
	for (; k < issued; k++)
		ts_seq_issue(k);
}

/*
 * A writer as slow as a stuck disk: while it is held, the pool fills and every event after is
 * dropped and counted as stream_behind; let go, it writes the pool, and the trace is valid:
 * the events in it and the drops add up to every event issued.
 */
static void held_writer_drops_are_counted(void **state)
{
	char path[512], mapname[600], *map;
	uint64_t issued = 6 * BUFFERS * RECORDS_PER_BUFFER, in_file, behind;

	(void)state;
	start_held_stream("held", issued);
	/*
	 * Held: nothing was handed back, so every buffer is full (the last one too: its thread
	 * handed it in to take the next) and the rest was dropped.
	 */
	assert_int_equal(st_full_buffers(), BUFFERS);
	sem_post(&writer_go);
	final_flush(path, sizeof(path));
	stream_test_before_write = NULL;
	in_file = file_functions(path);
	ts_tools_accept(path);
	map = map_of(path, mapname, sizeof(mapname));
	behind = map_u64(map, "stream_behind");
	free(map);
	assert_true(behind >= issued - BUFFERS * (BUFFER / 8));
	assert_int_equal(in_file + behind, issued);
	xfdr_stop();
}

static int flush_rc;
static char flush_path[512];

static void flush_now(void *arg)
{
	(void)arg;
	flush_rc = xfdr_flush(flush_path, sizeof(flush_path));
}

/*
 * A writer stuck in a write past the flush's wait (STREAM_TOKEN_WAIT_MS): the final flush
 * says so and writes everything not in the stream into a file of its own; the writer ends the
 * stream after its write and writes no more. The buffer of that write is in both files.
 */
static void stuck_writer_final_flush_writes_own_file(void **state)
{
	char err[2048], names[4][256], mapname[600], *map;
	uint64_t issued = 4 * BUFFERS * RECORDS_PER_BUFFER, k, behind, in_stream = 0;
	time_t deadline;
	int own;

	(void)state;
	start_held_stream("stuck", issued);
	assert_int_equal(xfdr_stop(), 0);
	ts_capture_stderr(flush_now, NULL, err, sizeof(err));
	assert_int_equal(flush_rc, 0);
	assert_non_null(strstr(err, "mode=stream: the writer is still in a write after 2000 ms; "
				    "what the stream does not hold yet goes to a file of its own"));
	sem_post(&writer_go);
	/* The writer ends the stream after its write: its .map appears. */
	deadline = time(NULL) + WAIT_S;
	while (list_files(".xray.map", names, 4) < 2) {
		if (time(NULL) > deadline)
			fail_msg("the stuck writer did not end its file");
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	}
	stream_test_before_write = NULL;
	assert_int_equal(list_files(".xray", names, 4), 2);
	/*
	 * One is the flush's; the other the stream, begun by the writer's first write (after
	 * the flush's file), with the one buffer of that write.
	 */
	own = strcmp(names[0], flush_path) ? 1 : 0;
	assert_string_equal(names[own], flush_path);
	ts_each_event(names[1 - own], XFDR_ORDER_FILE, seq_from, &in_stream);
	assert_true(in_stream > 0 && in_stream <= RECORDS_PER_BUFFER);
	k = 0;
	ts_each_event(names[own], XFDR_ORDER_FILE, seq_from, &k);
	map = map_of(names[own], mapname, sizeof(mapname));
	behind = map_u64(map, "dropped\tno_buffer");
	free(map);
	assert_int_equal(k + behind, issued);
	ts_tools_accept(names[0]);
	ts_tools_accept(names[1]);
	xfdr_stop();
}

static void release_writer_then_final_flush(void *arg)
{
	(void)arg;
	sem_post(&writer_go);
	assert_int_equal(xfdr_stop(), 0);
	flush_rc = xfdr_flush(flush_path, sizeof(flush_path));
}

/*
 * A write that fails (here RLIMIT_FSIZE below one buffer, as a full disk would fail it) is said
 * once by the writer, which then writes no more; the final flush tries again and says so again.
 * Once writes succeed, the next flush writes everything the pool kept: the file and the
 * stream_behind count add up to every event issued.
 */
static void failed_writes_are_said_and_retried(void **state)
{
	struct rlimit old, low;
	char err[4096], names[4][256], mapname[600], *map;
	uint64_t issued = 3 * BUFFERS * RECORDS_PER_BUFFER, k, behind;

	(void)state;
	start_held_stream("failed", issued);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	low = old;
	low.rlim_cur = 1000; /* the header fits, a buffer does not */
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &low), 0);
	/* The flush waits for the token the writer holds through its failed write. */
	ts_capture_stderr(release_writer_then_final_flush, NULL, err, sizeof(err));
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	stream_test_before_write = NULL;
	assert_int_equal(flush_rc, -EFBIG);
	assert_int_equal(ts_count(err, "mode=stream: cannot write "), 2);
	assert_int_equal(ts_count(err, ": EFBIG (file too large)\n"), 2);
	/* Writes succeed again: the next flush writes what the pool kept. */
	assert_int_equal(xfdr_flush(flush_path, sizeof(flush_path)), 0);
	assert_int_equal(list_files(".xray", names, 4), 1);
	k = 0;
	ts_each_event(names[0], XFDR_ORDER_FILE, seq_from, &k);
	map = map_of(names[0], mapname, sizeof(mapname));
	behind = map_u64(map, "stream_behind");
	free(map);
	assert_true(behind > 0);
	assert_int_equal(k + behind, issued);
	ts_tools_accept(names[0]);
	xfdr_stop();
}

/* A fork child records into a stream of its own; the parent's goes on. */
static void fork_child_streams_alone(void **state)
{
	struct xfdr_options o;
	char path[512], names[4][256], child_name[300];
	uint64_t k = 0;
	pid_t pid;
	int st;

	(void)state;
	fresh_dir("fork");
	stream_options(&o);
	o.flush_at_exit = 1;
	assert_int_equal(xfdr_init(&o), 0);
	assert_int_equal(xfdr_start(), 0);
	issue_paced(0, CHUNK);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		uint64_t j;

		for (j = 0; j < 3 * RECORDS_PER_BUFFER; j++)
			xfdr_enter(7), xfdr_exit(7);
		exit(0); /* the exit flush ends the child's stream */
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	issue_paced(CHUNK, 2 * CHUNK);
	final_flush(path, sizeof(path));
	assert_int_equal(list_files(".xray", names, 4), 2);
	snprintf(child_name, sizeof(child_name), "-%d-0.xray", (int)pid);
	assert_non_null(strstr(names[0], child_name) ? names[0] : strstr(names[1], child_name));
	ts_each_event(path, XFDR_ORDER_FILE, seq_from, &k);
	assert_int_equal(k, 2 * CHUNK);
	k = file_functions(strstr(names[0], child_name) ? names[0] : names[1]);
	assert_int_equal(k, 6 * RECORDS_PER_BUFFER);
	xfdr_stop();
}

/*
 * The child side of the survival tests: a stream of n events, then the end asked for. The
 * parent knows the sequence and what each end must leave.
 */
static int child_main(const char *how, const char *out_dir)
{
	struct xfdr_options o;
	uint64_t n = 3 * CHUNK + 7;

	snprintf(dir, sizeof(dir), "%s", out_dir);
	stream_options(&o);
	o.flush_on_terminate = 1;
	if (!strcmp(how, "killfile")) {
		o.backing = XFDR_BACKING_FILE;
		how = "kill";
	}
	if (!strcmp(how, "usr2")) {
		o.flush_signal = SIGUSR2;
		o.flush_at_exit = 1;
	}
	if (xfdr_init(&o) || xfdr_start())
		return 3;
	issue_paced(0, n);
	if (!strcmp(how, "usr2")) {
		/* a snapshot while recording, then the rest, then exit: its flush ends the file */
		kill(getpid(), SIGUSR2);
		issue_paced(n, n + CHUNK);
		exit(0);
	}
	if (!strcmp(how, "segv"))
		*(volatile int *)(uintptr_t)8 = 1;
	else if (!strcmp(how, "term"))
		kill(getpid(), SIGTERM);
	else if (!strcmp(how, "kill"))
		kill(getpid(), SIGKILL);
	return 4;
}

static void run_child(const char *how, const char *name, struct child_result *r)
{
	char *argv[] = {"test_runtime_stream", "--child", (char *)how, dir, NULL};
	struct child_spec spec = {.argv = argv, .program = "/proc/self/exe", .timeout_s = 120};

	fresh_dir(name);
	spec.err.to = CHILD_CAPTURE;
	child_run(&spec, r);
}

/* What a crashed or terminated stream leaves: one file, every event, the .map. */
static void expect_every_event(const char *why)
{
	char names[4][256], mapname[600], *map;
	uint64_t k = 0;

	assert_int_equal(list_files(".xray", names, 4), 1);
	ts_each_event(names[0], XFDR_ORDER_FILE, seq_from, &k);
	if (k != 3 * CHUNK + 7)
		fail_msg("%s: %" PRIu64 " events in %s, expected %d", why, k, names[0],
			 3 * CHUNK + 7);
	ts_tools_accept(names[0]);
	map = map_of(names[0], mapname, sizeof(mapname));
	assert_int_equal(map_u64(map, "stream_behind"), 0);
	free(map);
}

static void crash_flushes_the_rest(void **state)
{
	struct child_result r;

	(void)state;
	run_child("segv", "segv", &r);
	ts_expect_crash_end(&r, SIGSEGV);
	child_result_free(&r);
	expect_every_event("SIGSEGV");
}

static void sigterm_flushes_the_rest(void **state)
{
	struct child_result r;

	(void)state;
	run_child("term", "term", &r);
	assert_int_equal(r.signal, SIGTERM);
	child_result_free(&r);
	expect_every_event("SIGTERM");
}

/*
 * The flush signal while recording writes the full buffers and the .map into the stream and
 * says so; recording goes on, and the exit flush ends the same file with every event.
 */
static void flush_signal_then_exit(void **state)
{
	struct child_result r;
	char names[4][256], want[400];
	uint64_t k = 0;

	(void)state;
	run_child("usr2", "usr2", &r);
	assert_int_equal(r.status, 0);
	assert_int_equal(list_files(".xray", names, 4), 1);
	snprintf(want, sizeof(want), "xfdr: SIGUSR2: wrote %s\n", names[0]);
	if (!strstr(r.err, want))
		fail_msg("no \"%s\" in:\n%s", want, r.err);
	snprintf(want, sizeof(want), "xfdr: wrote %s\n", names[0]);
	assert_non_null(strstr(r.err, want));
	child_result_free(&r);
	ts_each_event(names[0], XFDR_ORDER_FILE, seq_from, &k);
	assert_int_equal(k, 4 * CHUNK + 7);
	ts_tools_accept(names[0]);
}

/* SIGKILL: no flush, but every buffer the writer wrote is in the file, a valid trace. */
static void sigkill_keeps_what_was_written(void **state)
{
	struct child_result r;
	char names[4][256];
	uint64_t k = 0;

	(void)state;
	run_child("kill", "kill", &r);
	assert_int_equal(r.signal, SIGKILL);
	child_result_free(&r);
	assert_int_equal(list_files(".xray", names, 4), 1);
	ts_each_event(names[0], XFDR_ORDER_FILE, seq_from, &k);
	/* the child waited for the writer after each chunk: at most a chunk was not written */
	assert_true(k >= 3 * CHUNK - RECORDS_PER_BUFFER);
	assert_true(k <= 3 * CHUNK + 7);
	ts_tools_accept(names[0]);
}

/*
 * SIGKILL with backing=file: the stream holds what the writer wrote, and `xfdr recover` the
 * rest from the live files: every event, each once.
 */
static void sigkill_with_file_backing_loses_nothing(void **state)
{
	struct child_result r;
	char names[4][256], live[300], recovered[300];
	uint64_t k = 0, in_stream;
	size_t i;

	(void)state;
	run_child("killfile", "killfile", &r);
	assert_int_equal(r.signal, SIGKILL);
	child_result_free(&r);
	assert_int_equal(list_files(".xray", names, 4), 2); /* the stream and the live pool */
	i = strstr(names[0], "-live.xray") ? 0 : 1;
	snprintf(live, sizeof(live), "%s", names[i]);
	snprintf(recovered, sizeof(recovered), "%srecovered.xray", dir);
	child_xfdr_ok("recover", "-o", recovered, live, NULL);
	ts_each_event(names[1 - i], XFDR_ORDER_FILE, seq_from, &k);
	in_stream = k;
	/* the live pool holds the buffers not yet written, and no written one (handed back) */
	ts_each_event(recovered, XFDR_ORDER_FILE, seq_from, &k);
	assert_true(in_stream > 0);
	assert_int_equal(k, 3 * CHUNK + 7);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(whole_run_in_one_file),
	    cmocka_unit_test(flush_while_recording_then_final),
	    cmocka_unit_test(restart_after_final_flush_begins_a_new_file),
	    cmocka_unit_test(rotation_keeps_every_file),
	    cmocka_unit_test(rotation_keeps_newest),
	    cmocka_unit_test(file_size_limit_cuts_the_stream),
	    cmocka_unit_test(program_closing_the_descriptor),
	    cmocka_unit_test(held_writer_drops_are_counted),
	    cmocka_unit_test(stuck_writer_final_flush_writes_own_file),
	    cmocka_unit_test(failed_writes_are_said_and_retried),
	    cmocka_unit_test(fork_child_streams_alone),
	    cmocka_unit_test(crash_flushes_the_rest),
	    cmocka_unit_test(sigterm_flushes_the_rest),
	    cmocka_unit_test(flush_signal_then_exit),
	    cmocka_unit_test(sigkill_keeps_what_was_written),
	    cmocka_unit_test(sigkill_with_file_backing_loses_nothing),
	};

	if (argc == 4 && !strcmp(argv[1], "--child"))
		return child_main(argv[2], argv[3]);
	return cmocka_run_group_tests(tests, ts_group_setup, ts_group_teardown);
}
