/*
 * tests/unit/test_runtime_backing.c - backing=file: the pool in two shared files that outlive
 * the process, and the pool locator.
 *
 * What is checked, against values worked out from xfdr/format.h, never against the runtime's
 * own encoders:
 *   - the live trace "<base>-live.xray" is a version 1 header and the pool's buffers, exactly
 *     32 + buffer_max * buffer_size bytes; the records of known events are in it, read back
 *     through the file (the page cache), not through the mapping;
 *   - "<base>-live.xray.pool" holds the XFDRPOOL locator (every field) and the descriptors
 *     where the locator says, and the TSC frequency reaches both once known;
 *   - the live .map names the trace and the threads, and is kept current;
 *   - a re-init maps new files; switching to memory backing removes them; files an earlier
 *     process with the same pid left are moved aside, never overwritten;
 *   - a fork child records into files of its own and leaves the parent's alone;
 *   - an exit while the live map's keeper is between naming "<map>.tmp" and renaming it
 *     waits for the rename, and a death while it writes the map leaves no "<map>.tmp"
 *     (rename(2), write(2) and sem_post(3) are interposed to hold the keeper there);
 *   - a process killed with SIGKILL in the middle of a known sequence: `xfdr recover` gives a
 *     trace that `xfdr verify` and llvm-xray accept, holding exactly the sequence's prefix up
 *     to the last event the child had finished.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <poll.h>
#include <semaphore.h>
#include <sys/syscall.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>

#include "tests/support/child.h"
#include "tests/unit/test_runtime_support.h"

#include "runtime/pool/pool.h"
#include "runtime/record/clock.h"

#define BUF_BYTES 4096u
#define BUF_COUNT 8u
/* Records in a buffer of BUF_BYTES: the preamble (48) and room for EndOfBuffer (16) aside. */
#define RECORDS_PER_BUF ((BUF_BYTES - 48u - 16u) / 8u)

/* The kill test's child: its sequence, its pool, and when the parent kills it. */
#define KILL_EVENTS_MAX 400000u
#define KILL_BUF_COUNT 1024u /* KILL_EVENTS_MAX / RECORDS_PER_BUF = 794 buffers, and spare */
#define KILL_AFTER_EVENTS 50000u
#define KILL_PAUSE_EVERY 256u
#define KILL_THREAD_NAME "kill-victim"

static char live[512], pool_path[600], map_path[600];

/* ---- files ----------------------------------------------------------------------------- */

static int64_t file_size(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return -1;
	return (int64_t)st.st_size;
}

/* n bytes at off of path, read with pread(2): what another process would see. */
static void read_at(const char *path, uint64_t off, void *out, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		fail_msg("cannot open %s: %s", path, strerror(errno));
	assert_int_equal(pread(fd, out, n, (off_t)off), (ssize_t)n);
	close(fd);
}

static uint64_t read64_at(const char *path, uint64_t off)
{
	uint8_t b[8];

	read_at(path, off, b, sizeof(b));
	return ts_get64(b);
}

static void live_paths(const char *base_dir_prefix, pid_t pid)
{
	snprintf(live, sizeof(live), "%s-%d-live.xray", base_dir_prefix, (int)pid);
	snprintf(pool_path, sizeof(pool_path), "%s.pool", live);
	snprintf(map_path, sizeof(map_path), "%s.map", live);
}

static int init_file_backed(const char *output, size_t buffer_size, size_t buffer_max, int backing)
{
	struct xfdr_options o;

	ts_options(&o, buffer_size, buffer_max, XFDR_MODE_BOUNDED);
	o.output = output;
	o.backing = backing;
	return xfdr_init(&o);
}

/* Wait (at most timeout_ms) until the 8 bytes at off of path are not 0; returns them. */
static uint64_t wait_nonzero64(const char *path, uint64_t off, unsigned timeout_ms)
{
	const struct timespec tick = {0, 1000000};
	unsigned waited;
	uint64_t v = 0;

	for (waited = 0; waited <= timeout_ms; waited++) {
		v = read64_at(path, off);
		if (v)
			break;
		nanosleep(&tick, NULL);
	}
	return v;
}

/*
 * Pin the calling thread to the CPU it runs on (no NewCPUId between the records checked);
 * *was gets the affinity to give back.
 */
static void pin_here(cpu_set_t *was)
{
	cpu_set_t set;
	int cpu = sched_getcpu();

	assert_true(cpu >= 0);
	assert_int_equal(sched_getaffinity(0, sizeof(*was), was), 0);
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	assert_int_equal(sched_setaffinity(0, sizeof(set), &set), 0);
}

/* ---- (a) the layout of the files --------------------------------------------------------- */

/*
 * The locator in the .pool file: every field of format.h, the descriptor offsets as the
 * runtime's struct has them, the addresses of this process's mappings.
 */
static void check_locator(const uint8_t *l, uint32_t count, uint32_t flags_file)
{
	uint32_t flags = flags_file | (clock_invariant_tsc() ? XFDR_POOL_INVARIANT_TSC : 0);
	size_t i;

	assert_memory_equal(l, "XFDRPOOL", 8);
	assert_int_equal(ts_get32(l + 8), 1);
	assert_int_equal(ts_get32(l + 12), 128);
	assert_int_equal(ts_get64(l + 16), (uint64_t)getpid());
	assert_int_equal(ts_get64(l + 24), (uint64_t)(uintptr_t)rt_pool.base);
	assert_int_equal(ts_get64(l + 32), BUF_BYTES);
	assert_int_equal(ts_get32(l + 40), count);
	assert_int_equal(ts_get32(l + 44), sizeof(struct pool_desc));
	assert_int_equal(ts_get32(l + 56), rt_pool.session);
	assert_int_equal(ts_get32(l + 60), flags);
	assert_int_equal(ts_get32(l + 64), offsetof(struct pool_desc, used_bytes));
	assert_int_equal(ts_get32(l + 68), offsetof(struct pool_desc, ctl));
	assert_int_equal(ts_get32(l + 72), offsetof(struct pool_desc, claim_seq));
	assert_int_equal(ts_get32(l + 76), offsetof(struct pool_desc, owner_tid));
	assert_int_equal(ts_get32(l + 80), offsetof(struct pool_desc, owner_thread_id));
	assert_int_equal(ts_get32(l + 84), offsetof(struct pool_desc, first_tsc));
	assert_int_equal(ts_get32(l + 88), offsetof(struct pool_desc, last_tsc));
	assert_int_equal(ts_get32(l + 92), 0);
	assert_int_equal(ts_get64(l + 96), (uint64_t)(uintptr_t)rt_pool.descs);
	assert_int_equal(ts_get64(l + 104), 0);
	for (i = 112; i < 128; i++)
		assert_int_equal(l[i], 0);
}

/*
 * 20 known events into a file-backed pool of 8 buffers of 4 KiB, read back through the files:
 *   live trace: 32 + 8 * 4096 bytes; header version 1, type 1, the CPU's TSC bits,
 *               buffer_size 4096; buffer 0 at 32: NewBuffer (byte 0x01, thread id 1),
 *               WallClockTime (0x09), NewCPUId (0x05), then one 8-byte function record per
 *               event, its low word (action << 1 | fid << 4) as the spec draws it;
 *   .pool:      the locator, then descriptor 0 at 128: owned, 48 + 20 * 8 bytes used,
 *               claim 0, this thread's tid, thread id 1; descriptor 1 free.
 * Then the TSC frequency reaches the header and the locator within a second or two.
 */
static void file_layout(void **state)
{
	enum { EVENTS = 20 };
	uint8_t hdr[32], loc[128], buf[48 + EVENTS * 8];
	char prefix[300];
	uint32_t bits = clock_invariant_tsc() ? 3u : 0u;
	uint64_t k, desc0, hz, now_hz;
	uint32_t stride;
	cpu_set_t was;

	(void)state;
	snprintf(prefix, sizeof(prefix), "%slayout", ts_dir);
	live_paths(prefix, getpid());
	assert_int_equal(init_file_backed(prefix, BUF_BYTES, BUF_COUNT, XFDR_BACKING_FILE), 0);
	assert_int_equal(rt_pool.file_backed, 1);
	pin_here(&was);
	assert_int_equal(xfdr_start(), 0);
	for (k = 0; k < EVENTS; k++)
		ts_seq_issue(k);
	assert_int_equal(xfdr_stop(), 0);
	assert_int_equal(sched_setaffinity(0, sizeof(was), &was), 0);

	assert_int_equal(file_size(live), 32 + BUF_COUNT * BUF_BYTES);
	assert_int_equal(file_size(pool_path), 128 + BUF_COUNT * sizeof(struct pool_desc));
	read_at(live, 0, hdr, sizeof(hdr));
	assert_int_equal(ts_get16(hdr + 0), 1);
	assert_int_equal(ts_get16(hdr + 2), 1);
	assert_int_equal(ts_get32(hdr + 4), bits);
	assert_int_equal(ts_get64(hdr + 16), BUF_BYTES);
	assert_int_equal(ts_get64(hdr + 24), 0);

	read_at(pool_path, 0, loc, sizeof(loc));
	check_locator(loc, BUF_COUNT, XFDR_POOL_FILE_BACKED);
	stride = ts_get32(loc + 44);
	desc0 = 128;
	assert_int_equal(read64_at(pool_path, desc0 + ts_get32(loc + 64)), 48 + EVENTS * 8);
	assert_int_equal(read64_at(pool_path, desc0 + ts_get32(loc + 68)) & 3, 1);
	assert_int_equal(read64_at(pool_path, desc0 + ts_get32(loc + 72)), 0);
	read_at(pool_path, desc0 + ts_get32(loc + 76), buf, 4);
	assert_int_equal(ts_get32(buf), ts_tid());
	read_at(pool_path, desc0 + ts_get32(loc + 80), buf, 4);
	assert_int_equal(ts_get32(buf), 1);
	assert_int_equal(read64_at(pool_path, desc0 + stride + ts_get32(loc + 68)) & 3, 0);

	read_at(live, 32, buf, sizeof(buf));
	assert_int_equal(buf[0], 0x01);
	assert_int_equal(ts_get16(buf + 1), 1);
	assert_int_equal(buf[16], 0x09);
	assert_int_equal(buf[32], 0x05);
	/* The preamble's TSC is the descriptor's first_tsc (what recover matches it with). */
	assert_int_equal(ts_get64(buf + 32 + 3), read64_at(pool_path, desc0 + ts_get32(loc + 84)));
	for (k = 0; k < EVENTS; k++) {
		uint32_t word = ts_get32(buf + 48 + 8 * k);

		assert_int_equal(word, (uint32_t)ts_seq_is_exit(k) << 1 | ts_seq_fid(k) << 4);
	}

	/* The keeper hands the frequency over once the calibration needs no spin: ~25 ms. */
	hz = wait_nonzero64(live, 8, 3000);
	assert_true(hz != 0);
	assert_int_equal(read64_at(pool_path, 48), hz);
	/* Within a thousandth of the rate the clock gives now (a longer baseline). */
	now_hz = clock_tsc_hz();
	assert_true(hz / 1000 >= (hz > now_hz ? hz - now_hz : now_hz - hz));
}

/* The live .map: written at init, names the live trace and this process. */
static void live_map_at_init(void **state)
{
	char prefix[300], value[600], *map;
	size_t n;

	(void)state;
	snprintf(prefix, sizeof(prefix), "%smap", ts_dir);
	live_paths(prefix, getpid());
	assert_int_equal(init_file_backed(prefix, BUF_BYTES, BUF_COUNT, XFDR_BACKING_FILE), 0);
	map = (char *)ts_slurp(map_path, &n);
	assert_non_null(ts_map_value(map, "trace", value, sizeof(value)));
	assert_string_equal(value, live);
	assert_non_null(ts_map_value(map, "pid", value, sizeof(value)));
	assert_int_equal(strtoul(value, NULL, 10), (unsigned long)getpid());
	assert_non_null(ts_map_value(map, "buffer_size", value, sizeof(value)));
	assert_int_equal(strtoul(value, NULL, 10), BUF_BYTES);
	free(map);
}

struct named {
	const char *name;
	uint32_t tid;
};

static void *named_thread(void *arg)
{
	struct named *n = arg;

	prctl(PR_SET_NAME, n->name);
	n->tid = ts_tid();
	xfdr_enter(5);
	xfdr_exit(5);
	return NULL;
}

/*
 * A thread that records after init appears in the live map within about a second, with its
 * tid and name, without any flush; so does the TSC frequency once known.
 */
static void live_map_kept_current(void **state)
{
	struct named n = {"bk-worker", 0};
	char prefix[300], line[64], value[64], *map = NULL;
	pthread_t th;
	size_t len;
	int tries, found = 0;

	(void)state;
	snprintf(prefix, sizeof(prefix), "%scurrent", ts_dir);
	live_paths(prefix, getpid());
	assert_int_equal(init_file_backed(prefix, BUF_BYTES, BUF_COUNT, XFDR_BACKING_FILE), 0);
	assert_int_equal(xfdr_start(), 0);
	assert_int_equal(pthread_create(&th, NULL, named_thread, &n), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	snprintf(line, sizeof(line), "thread\t%u\t", n.tid);
	for (tries = 0; tries < 60 && !found; tries++) {
		free(map);
		map = (char *)ts_slurp(map_path, &len);
		found = strstr(map, line) && strstr(strstr(map, line), "\tbk-worker\t") &&
			ts_map_value(map, "tsc_hz", value, sizeof(value)) &&
			strtoull(value, NULL, 10) != 0;
		if (!found)
			usleep(100000);
	}
	if (!found)
		fail_msg("the live map never listed thread %u \"bk-worker\" and tsc_hz:\n%s", n.tid,
			 map);
	free(map);
	assert_int_equal(xfdr_stop(), 0);
}

/*
 * Recording into a file-backed pool takes no page fault: the buffers' pages are populated for
 * writing (MADV_POPULATE_WRITE on the shared mapping), like anonymous ones. Checked by
 * rewriting one byte of every page with itself and counting the thread's minor faults.
 */
__attribute__((no_sanitize("address", "thread"))) static long rewrite_faults(uint8_t *p, size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), i;
	struct rusage before, after;

	assert_int_equal(getrusage(RUSAGE_THREAD, &before), 0);
	for (i = 0; i < n; i += pg) {
		volatile uint8_t *b = p + i;

		*b = *b;
	}
	assert_int_equal(getrusage(RUSAGE_THREAD, &after), 0);
	return after.ru_minflt - before.ru_minflt;
}

static void file_pages_populated(void **state)
{
	char prefix[300];
	uint32_t i;
	int waited;

	(void)state;
	snprintf(prefix, sizeof(prefix), "%spopulated", ts_dir);
	live_paths(prefix, getpid());
	/* 16 MiB: the first 4 MiB at init, the rest by the background thread. */
	assert_int_equal(init_file_backed(prefix, 65536, 256, XFDR_BACKING_FILE), 0);
	for (waited = 0; waited < 5000; waited++) {
		for (i = 0; i < rt_pool.count; i++)
			if (!xfdr_load_acquire(&rt_pool.descs[i].mem_ready))
				break;
		if (i == rt_pool.count)
			break;
		usleep(1000);
	}
	assert_int_equal(i, rt_pool.count);
	if (ts_sanitized())
		return; /* a sanitizer's first look at a page's shadow faults on its own */
	assert_int_equal(rewrite_faults(rt_pool.map, rt_pool.map_bytes), 0);
	assert_int_equal(rewrite_faults(rt_pool.locator, rt_pool.descs_map_bytes), 0);
}

/*
 * Re-init: backing=file again with another geometry maps new files (the sizes say so, the
 * locator has the new session, and the header and locator the frequency known since); memory
 * backing then removes the live files, and its locator lives in memory, without the
 * file-backed flag, with the frequency.
 */
static void reinit_and_switch_to_memory(void **state)
{
	char prefix[300];
	uint32_t first, session;
	uint64_t hz;

	(void)state;
	snprintf(prefix, sizeof(prefix), "%sswitch", ts_dir);
	live_paths(prefix, getpid());
	assert_int_equal(init_file_backed(prefix, BUF_BYTES, BUF_COUNT, XFDR_BACKING_FILE), 0);
	first = rt_pool.session;
	assert_int_equal(file_size(live), 32 + BUF_COUNT * BUF_BYTES);
	hz = wait_nonzero64(live, 8, 3000);
	assert_int_not_equal(hz, 0);
	assert_int_equal(init_file_backed(prefix, BUF_BYTES, 2 * BUF_COUNT, XFDR_BACKING_FILE), 0);
	assert_int_not_equal(rt_pool.session, first);
	assert_int_equal(file_size(live), 32 + 2 * BUF_COUNT * BUF_BYTES);
	read_at(pool_path, 56, &session, sizeof(session));
	assert_int_equal(session, rt_pool.session);
	/* A later pool knows the frequency from the start. */
	assert_int_equal(read64_at(live, 8), hz);
	assert_int_equal(read64_at(pool_path, 48), hz);
	assert_int_equal(init_file_backed(prefix, BUF_BYTES, 2 * BUF_COUNT, XFDR_BACKING_MEMORY),
			 0);
	assert_int_equal(file_size(live), -1);
	assert_int_equal(file_size(pool_path), -1);
	assert_int_equal(file_size(map_path), -1);
	assert_int_equal(rt_pool.file_backed, 0);
	check_locator(rt_pool.locator, 2 * BUF_COUNT, 0);
	assert_int_equal(ts_get64(rt_pool.locator + 48), hz);
}

static void init_quietly(void *arg)
{
	int *rc = arg;

	*rc = init_file_backed(ts_dir, BUF_BYTES, BUF_COUNT, XFDR_BACKING_FILE);
}

/*
 * Files at our live path that this process did not make are an earlier process's (same pid):
 * they are moved aside to "<base>-live-stale1.xray" with their .pool and .map, intact, and
 * one stderr line says so; a directory that cannot be written fails init with one line.
 */
static void stale_files_moved_aside(void **state)
{
	char prefix[300], stale[600], err[2048], *text;
	size_t n;
	FILE *f;
	int rc;

	(void)state;
	snprintf(prefix, sizeof(prefix), "%sxfdr-test_runtime_backing", ts_dir);
	live_paths(prefix, getpid());
	f = fopen(live, "w");
	assert_non_null(f);
	fputs("earlier trace", f);
	fclose(f);
	f = fopen(map_path, "w");
	assert_non_null(f);
	fputs("earlier map", f);
	fclose(f);
	ts_capture_stderr(init_quietly, &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	snprintf(stale, sizeof(stale), "%s-%d-live-stale1.xray", prefix, (int)getpid());
	if (!strstr(err, stale) || ts_count(err, "\n") != 1)
		fail_msg("expected one line naming %s, got:\n%s", stale, err);
	text = (char *)ts_slurp(stale, &n);
	assert_string_equal(text, "earlier trace");
	free(text);
	strcat(stale, ".map");
	text = (char *)ts_slurp(stale, &n);
	assert_string_equal(text, "earlier map");
	free(text);
	assert_int_equal(file_size(live), 32 + BUF_COUNT * BUF_BYTES);
}

static void init_in_missing_dir(void *arg)
{
	char out[300];
	int *rc = arg;

	snprintf(out, sizeof(out), "%sno/such/dir/", ts_dir);
	*rc = init_file_backed(out, BUF_BYTES, BUF_COUNT, XFDR_BACKING_FILE);
}

static void unwritable_place_fails_init(void **state)
{
	char err[2048];
	int rc;

	(void)state;
	ts_capture_stderr(init_in_missing_dir, &rc, err, sizeof(err));
	assert_int_equal(rc, -ENOENT);
	if (!strstr(err, "no/such/dir/") || !strstr(err, "ENOENT") || ts_count(err, "\n") != 1)
		fail_msg("expected one line naming the file and ENOENT, got:\n%s", err);
	assert_int_equal(rt_pool.count, 0);
}

/*
 * The --enospc-child: in a mount namespace of its own, a 1 MiB tmpfs on DIR, then init with
 * 4 MiB of buffers there. Prints "rc N"; exits 77 when it may not make the namespace or mount.
 */
static int enospc_child_main(const char *dir)
{
	struct dirent *e;
	int rc, files = 0;
	DIR *d;

	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("tmpfs", dir, "tmpfs", 0, "size=1m"))
		return 77;
	rc = init_file_backed(dir, 65536, 64, XFDR_BACKING_FILE);
	d = opendir(dir);
	while (d && (e = readdir(d)))
		files += e->d_name[0] != '.';
	if (d)
		closedir(d);
	printf("rc %d files %d\n", rc, files);
	fflush(stdout);
	return 0;
}

/*
 * No room for the files: init fails with -ENOSPC and one stderr line naming the file, and
 * leaves no file behind. Needs a small file system: a tmpfs in a private mount namespace,
 * when this process may make one (root, CAP_SYS_ADMIN); skipped otherwise.
 */
static void no_space_fails_init(void **state)
{
	char dir[300], *argv[] = {"test_runtime_backing", "--enospc-child", dir, NULL};
	struct child_spec spec = {
	    .argv = argv,
	    .program = "/proc/self/exe",
	    .out = {.to = CHILD_CAPTURE},
	    .err = {.to = CHILD_CAPTURE},
	    .timeout_s = 60,
	};
	struct child_result r;
	int rc = 0, files = -1;

	(void)state;
	snprintf(dir, sizeof(dir), "%ssmall/", ts_dir);
	assert_int_equal(mkdir(dir, 0755), 0);
	child_run(&spec, &r);
	if (r.status == 77) {
		child_result_free(&r);
		print_message("skipped: no permission to mount a small tmpfs in a namespace\n");
		skip();
	}
	if (r.status || sscanf(r.out, "rc %d files %d", &rc, &files) != 2)
		fail_msg("the child exited %d: %s%s", r.status, r.out, r.err);
	assert_int_equal(rc, -ENOSPC);
	assert_int_equal(files, 0);
	if (ts_count(r.err, "\n") != 1 || !strstr(r.err, "ENOSPC") || !strstr(r.err, dir))
		fail_msg("expected one stderr line naming the file and ENOSPC, got:\n%s", r.err);
	child_result_free(&r);
}

/*
 * fork(): the child records into live files of its own pid, and the parent's files are as the
 * parent left them (the child never writes the shared mapping it inherited).
 */
static void fork_child_leaves_parent_files(void **state)
{
	char prefix[300], child_live[600];
	uint64_t used_before;
	uint8_t loc[128];
	int st;
	pid_t pid;

	(void)state;
#if defined(__SANITIZE_THREAD__)
	/* The child's new session starts threads, which TSan refuses after a threaded fork. */
	print_message("skipped: ThreadSanitizer kills a fork child that starts threads\n");
	skip();
#endif
	snprintf(prefix, sizeof(prefix), "%sfork", ts_dir);
	live_paths(prefix, getpid());
	assert_int_equal(init_file_backed(prefix, BUF_BYTES, BUF_COUNT, XFDR_BACKING_FILE), 0);
	assert_int_equal(xfdr_start(), 0);
	ts_seq_issue(0);
	ts_seq_issue(1);
	read_at(pool_path, 0, loc, sizeof(loc));
	used_before = read64_at(pool_path, 128 + ts_get32(loc + 64));
	assert_int_equal(used_before, 48 + 2 * 8);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		uint64_t k;

		for (k = 2; k < 2 + 3 * RECORDS_PER_BUF; k++)
			ts_seq_issue(k);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(xfdr_stop(), 0);
	/* The parent's: descriptor 0 as before the fork, descriptors 1.. never claimed. */
	assert_int_equal(read64_at(pool_path, 128 + ts_get32(loc + 64)), used_before);
	assert_int_equal(
	    read64_at(pool_path, 128 + sizeof(struct pool_desc) + ts_get32(loc + 68)) & 3, 0);
	assert_memory_equal(loc, "XFDRPOOL", 8);
	/* The child's own live trace exists under its pid. */
	snprintf(child_live, sizeof(child_live), "%s-%d-live.xray", prefix, (int)pid);
	assert_int_equal(file_size(child_live), 32 + BUF_COUNT * BUF_BYTES);
}

/* ---- an exit in the middle of a live map rewrite ------------------------------------------ */

/*
 * The keeper held where it rewrites the live map: once armed, the first rename(2) of
 * "<map>.tmp" (HOLD_RENAME), or the first write(2) of another thread than the main one, which
 * only the keeper's rewrite does here (HOLD_WRITE), says so on held[1] and waits on release[0].
 * sem_post(3), as livemap_stop() calls it to wake the keeper, lets a held rename go on.
 */
enum { HOLD_NONE, HOLD_RENAME, HOLD_WRITE };
static int held[2] = {-1, -1}, release[2] = {-1, -1};
static uint32_t hold_armed, holding;

static void hold_here(void)
{
	char c = 1;

	__atomic_store_n(&holding, 1u, __ATOMIC_RELEASE);
	if (write(held[1], &c, 1) != 1 || read(release[0], &c, 1) != 1)
		abort();
}

int rename(const char *from, const char *to)
{
	static int (*real)(const char *, const char *);
	size_t n = strlen(from);
	uint32_t want = HOLD_RENAME;

	if (!real)
		real = (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "rename");
	if (n > 8 && !strcmp(from + n - 8, ".map.tmp") &&
	    __atomic_compare_exchange_n(&hold_armed, &want, HOLD_NONE, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_RELAXED))
		hold_here();
	return real(from, to);
}

ssize_t write(int fd, const void *buf, size_t n)
{
	static ssize_t (*real)(int, const void *, size_t);
	uint32_t want = HOLD_WRITE;

	if (!real)
		real = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	if (__atomic_load_n(&hold_armed, __ATOMIC_ACQUIRE) == HOLD_WRITE &&
	    syscall(SYS_gettid) != getpid() &&
	    __atomic_compare_exchange_n(&hold_armed, &want, HOLD_NONE, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_RELAXED))
		hold_here();
	return real(fd, buf, n);
}

int sem_post(sem_t *sem)
{
	static int (*real)(sem_t *);
	char c = 1;

	if (!real)
		real = (int (*)(sem_t *))dlsym(RTLD_NEXT, "sem_post");
	if (__atomic_exchange_n(&holding, 0u, __ATOMIC_ACQ_REL) && write(release[1], &c, 1) != 1)
		abort();
	return real(sem);
}

/*
 * The child: backing=file, flush_at_exit=0; the keeper held at `where` in its next rewrite
 * (the rate becomes known, the thread appears: within a second), then exit() (by_exit) or
 * _exit().
 */
static int rewrite_child(const char *prefix, uint32_t where, int by_exit)
{
	struct pollfd pf;
	uint64_t k;

	if (pipe(held) || pipe(release))
		return 2;
	if (init_file_backed(prefix, BUF_BYTES, BUF_COUNT, XFDR_BACKING_FILE) || xfdr_start())
		return 3;
	for (k = 0; k < 4; k++)
		ts_seq_issue(k);
	__atomic_store_n(&hold_armed, where, __ATOMIC_RELEASE);
	pf = (struct pollfd){.fd = held[0], .events = POLLIN};
	if (poll(&pf, 1, 10000) != 1)
		return 4;
	if (by_exit)
		exit(0); /* the exit handlers run: xfdr's must wait for the keeper's rename */
	_exit(0);
}

/* Run rewrite_child(); the live .map is whole where it should be, and no "<map>.tmp" is left. */
static void expect_no_tmp_after(const char *name, uint32_t where, int by_exit)
{
	char prefix[300], tmp[700];
	int st;
	pid_t pid;

#if defined(__SANITIZE_THREAD__)
	print_message("skipped: ThreadSanitizer kills a fork child that starts threads\n");
	skip();
#endif
	snprintf(prefix, sizeof(prefix), "%s%s", ts_dir, name);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(rewrite_child(prefix, where, by_exit));
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		fail_msg("child ended with status 0x%x", st);
	live_paths(prefix, pid);
	snprintf(tmp, sizeof(tmp), "%s.tmp", map_path);
	if (access(tmp, F_OK) == 0)
		fail_msg("%s was left by the %s", tmp, by_exit ? "exit" : "_exit");
	assert_true(file_size(map_path) > 0);
}

/* exit() while the keeper is between naming "<map>.tmp" and renaming it: exit waits for it. */
static void exit_waits_for_live_map_rewrite(void **state)
{
	(void)state;
	expect_no_tmp_after("exiting", HOLD_RENAME, 1);
}

/* _exit() (or SIGKILL) while the keeper writes the map: what it wrote has no name yet. */
static void death_mid_rewrite_leaves_no_tmp(void **state)
{
	(void)state;
	expect_no_tmp_after("dying", HOLD_WRITE, 0);
}

/* ---- (b) SIGKILL in the middle of a known sequence ---------------------------------------- */

/*
 * The child: backing=file into DIR/victim-<pid>-live.xray, its thread named KILL_THREAD_NAME,
 * events 0, 1, 2, ... of the sequence, the count of finished ones published after each in the
 * first 8 bytes of the shared page, a short pause every KILL_PAUSE_EVERY events so that the
 * parent catches it in the middle. After KILL_EVENTS_MAX it waits to be killed.
 */
static int kill_child_main(const char *dir, const char *progress_path)
{
	char output[600];
	uint64_t *progress, k;
	int fd = open(progress_path, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return 3;
	progress = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (progress == MAP_FAILED)
		return 4;
	prctl(PR_SET_NAME, KILL_THREAD_NAME);
	snprintf(output, sizeof(output), "%svictim", dir);
	if (init_file_backed(output, BUF_BYTES, KILL_BUF_COUNT, XFDR_BACKING_FILE) || xfdr_start())
		return 5;
	for (k = 0; k < KILL_EVENTS_MAX; k++) {
		ts_seq_issue(k);
		__atomic_store_n(progress, k + 1, __ATOMIC_RELEASE);
		if (k % KILL_PAUSE_EVERY == KILL_PAUSE_EVERY - 1)
			nanosleep(&(struct timespec){0, 200000}, NULL);
	}
	for (;;)
		pause();
}

/* Start this binary as argv (stdout and stderr to log); returns its pid. */
static pid_t spawn_self(char *const argv[], const char *log)
{
	posix_spawn_file_actions_t fa;
	extern char **environ;
	pid_t pid;

	assert_int_equal(posix_spawn_file_actions_init(&fa), 0);
	assert_int_equal(
	    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0644), 0);
	assert_int_equal(posix_spawn_file_actions_adddup2(&fa, 1, 2), 0);
	assert_int_equal(posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	return pid;
}

static void sigkill_then_recover(void **state)
{
	char dir_arg[300], progress_path[300], log[300], out[600], out_map[700], prefix[300];
	char *argv[] = {"test_runtime_backing", "--kill-child", dir_arg, progress_path, NULL};
	const struct timespec tick = {0, 1000000};
	uint64_t *progress, seen, final, hz = 0, n_llvm, n_reader;
	unsigned waited;
	char *map;
	size_t len;
	int fd, st;
	pid_t pid;

	(void)state;
	snprintf(dir_arg, sizeof(dir_arg), "%s", ts_dir);
	snprintf(progress_path, sizeof(progress_path), "%sprogress", ts_dir);
	snprintf(log, sizeof(log), "%skill-child.log", ts_dir);
	fd = open(progress_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 4096), 0);
	progress = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(progress != MAP_FAILED);
	close(fd);

	pid = spawn_self(argv, log);
	snprintf(prefix, sizeof(prefix), "%svictim", ts_dir);
	live_paths(prefix, pid);
	/* Mid-run: enough events done, the frequency in the live header, far from the end. */
	for (waited = 0; waited < 20000; waited++) {
		seen = __atomic_load_n(progress, __ATOMIC_ACQUIRE);
		if (seen >= KILL_AFTER_EVENTS && !hz && file_size(live) > 0)
			hz = read64_at(live, 8);
		if (seen >= KILL_AFTER_EVENTS && hz)
			break;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			child_print_file(log);
			fail_msg("the child ended (status 0x%x) before it was killed", st);
		}
		nanosleep(&tick, NULL);
	}
	seen = __atomic_load_n(progress, __ATOMIC_ACQUIRE);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	final = __atomic_load_n(progress, __ATOMIC_ACQUIRE);
	munmap(progress, 4096);
	if (!hz)
		fail_msg("the live header never got the TSC frequency (%llu events done)",
			 (unsigned long long)seen);
	if (final >= KILL_EVENTS_MAX)
		fail_msg("the child finished its %u events before the kill: too fast to test",
			 KILL_EVENTS_MAX);
	print_message("killed after %llu events (%llu when last looked at)\n",
		      (unsigned long long) final, (unsigned long long)seen);

	snprintf(out, sizeof(out), "%srecovered.xray", ts_dir);
	snprintf(out_map, sizeof(out_map), "%s.map", out);
	child_xfdr_ok("recover", live, "-o", out, NULL);
	child_xfdr_ok("verify", out, NULL);
	/*
	 * Every event the child had finished is there, in order, and nothing else: one more only
	 * if the kill came between its record's publication and the progress store.
	 */
	n_reader = ts_seq_reader(out);
	n_llvm = ts_seq_llvm(out, final + 1);
	assert_int_equal(n_llvm, n_reader);
	if (n_reader < final || n_reader > final + 1)
		fail_msg("recovered %llu events, the child had finished %llu",
			 (unsigned long long)n_reader, (unsigned long long) final);
	assert_true(n_reader >= seen);
	/* The recovered header has the frequency the live one had. */
	assert_int_equal(read64_at(out, 8), hz);
	/* Its .map names the killed thread, from the live map. */
	map = (char *)ts_slurp(out_map, &len);
	if (!strstr(map, "\t" KILL_THREAD_NAME "\t"))
		fail_msg("%s does not name the thread \"%s\":\n%s", out_map, KILL_THREAD_NAME, map);
	free(map);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(file_layout),
	    cmocka_unit_test(live_map_at_init),
	    cmocka_unit_test(live_map_kept_current),
	    cmocka_unit_test(file_pages_populated),
	    cmocka_unit_test(reinit_and_switch_to_memory),
	    cmocka_unit_test(stale_files_moved_aside),
	    cmocka_unit_test(unwritable_place_fails_init),
	    cmocka_unit_test(no_space_fails_init),
	    cmocka_unit_test(fork_child_leaves_parent_files),
	    cmocka_unit_test(exit_waits_for_live_map_rewrite),
	    cmocka_unit_test(death_mid_rewrite_leaves_no_tmp),
	    cmocka_unit_test(sigkill_then_recover),
	};

	if (argc == 4 && !strcmp(argv[1], "--kill-child"))
		return kill_child_main(argv[2], argv[3]);
	if (argc == 3 && !strcmp(argv[1], "--enospc-child"))
		return enospc_child_main(argv[2]);
	return cmocka_run_group_tests(tests, ts_group_setup, ts_group_teardown);
}
