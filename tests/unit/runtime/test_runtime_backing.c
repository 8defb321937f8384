/*
 * tests/unit/runtime/test_runtime_backing.c - backing=file: the pool in two shared files that
 * outlive the process, and the pool locator.
 *
 * What is checked, against values worked out from xfdr/format.h, never against the runtime's
 * own encoders:
 *   - the live trace "<base>-live.xray" is a version 1 header and the pool's buffers, exactly
 *     32 + buffer_max * buffer_size bytes; the records of known events are in it, read back
 *     through the file (the page cache), not through the mapping;
 *   - "<base>-live.xray.pool" holds the XFDRPOOL locator (every field) and the descriptors
 *     where the locator says, and the TSC frequency reaches both once known;
 *   - the live .map names the trace and the threads, and the recording threads append to it
 *     at once (a thread's line, again after a rename; the rate; functions);
 *   - a re-init maps new files; switching to memory backing removes them; files an earlier
 *     process with the same pid left are moved aside, never overwritten;
 *   - a fork child records into files of its own and leaves the parent's alone, also when a
 *     thread of the parent holds the live map's lock at fork() (and with _Fork());
 *   - a death while init writes the live map leaves no "<map>.tmp"; a descriptor of the live
 *     map that the program closed and reused is never written (write(2) is interposed to hold
 *     a thread in the middle of a line);
 *   - a process killed with SIGKILL in the middle of a known sequence: `xfdr recover` gives a
 *     trace that `xfdr verify` and llvm-xray accept, holding exactly the sequence's prefix up
 *     to the last event the child had finished; killed just after a new thread and function
 *     appeared, its recovered .map names both.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <poll.h>
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
#include "tests/support/text.h"
#include "tests/support/runtime_test.h"

#include "runtime/pool/pool.h"
#include "runtime/record/clock.h"
#include "runtime/symbols/fnmap.h"

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
	/* names_addr: the names directory `xfdr core` reads (format.h's "XFDRNAMS") */
	assert_int_not_equal(ts_get64(l + 104), 0);
	assert_memory_equal((const void *)(uintptr_t)ts_get64(l + 104), XFDR_NAMES_MAGIC, 8);
	for (i = 112; i < 128; i++)
		assert_int_equal(l[i], 0);
}

struct named {
	const char *name;
	const char *rename; /* NULL, or the name it takes before a second buffer */
	uint32_t tid;
};

static void *named_thread(void *arg)
{
	struct named *n = arg;
	uint32_t k;

	prctl(PR_SET_NAME, n->name);
	n->tid = ts_tid();
	xfdr_enter(5);
	xfdr_exit(5);
	if (!n->rename)
		return NULL;
	prctl(PR_SET_NAME, n->rename);
	/* Past the end of its first buffer: the thread takes another. */
	for (k = 0; k < RECORDS_PER_BUF; k++)
		xfdr_enter(6);
	for (k = 0; k < RECORDS_PER_BUF; k++)
		xfdr_exit(6);
	return NULL;
}

/* A thread named name records (renamed to rename, if not NULL, for a second buffer); its tid. */
static uint32_t run_named_thread(const char *name, const char *rename)
{
	struct named n = {name, rename, 0};
	pthread_t th;

	assert_int_equal(pthread_create(&th, NULL, named_thread, &n), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	return n.tid;
}

/* Whether the live map has a thread line of tid with name. */
static int map_names_thread(const char *map, uint32_t tid, const char *name)
{
	char line[96];

	snprintf(line, sizeof(line), "\nthread\t%u\t", tid);
	for (; (map = strstr(map, line)); map++) {
		const char *f = strchr(map + strlen(line), '\t');

		if (f && !strncmp(f + 1, name, strlen(name)) && f[1 + strlen(name)] == '\t')
			return 1;
	}
	return 0;
}

/*
 * 20 known events into a file-backed pool of 8 buffers of 4 KiB, read back through the files:
 *   live trace: 32 + 8 * 4096 bytes; header version 1, type 1, the CPU's TSC bits,
 *               buffer_size 4096; buffer 0 at 32: NewBuffer (byte 0x01, thread id 1),
 *               WallClockTime (0x09), NewCPUId (0x05), then one 8-byte function record per
 *               event, its low word (action << 1 | fid << 4) as the spec draws it;
 *   .pool:      the locator, then descriptor 0 at 128: owned, 48 + 20 * 8 bytes used,
 *               claim 0, this thread's tid, thread id 1; descriptor 1 free.
 * Then the TSC frequency reaches the header and the locator with the first buffer a thread takes
 * once the calibration needs no spin.
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

	/*
	 * The frequency is asked for once the calibration needs no spin (~25 ms after the first
	 * init) by the next thread that takes a buffer, and is in the header when it returns.
	 */
	assert_int_equal(read64_at(live, 8), 0);
	nanosleep(&(struct timespec){0, (long)(CLOCK_MIN_BASELINE_NS + 10000000ull)}, NULL);
	assert_int_equal(xfdr_start(), 0);
	run_named_thread("bk-rate", NULL);
	assert_int_equal(xfdr_stop(), 0);
	hz = read64_at(live, 8);
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

/*
 * A thread that records after init is in the live map as soon as it has taken its buffer,
 * with its tid and name, without any flush; renamed, it is there again with its new name once
 * it takes another buffer (the reader takes a thread's last line). Nothing waits: the map is
 * appended to by the thread itself (no thread of xfdr's rewrites it later).
 */
static void live_map_kept_current(void **state)
{
	char prefix[300], value[64], *map;
	uint32_t tid;
	size_t len;

	(void)state;
	snprintf(prefix, sizeof(prefix), "%scurrent", ts_dir);
	live_paths(prefix, getpid());
	assert_int_equal(init_file_backed(prefix, BUF_BYTES, BUF_COUNT, XFDR_BACKING_FILE), 0);
	assert_int_equal(xfdr_start(), 0);
	tid = run_named_thread("bk-worker", "bk-renamed");
	map = (char *)ts_slurp(map_path, &len);
	if (!map_names_thread(map, tid, "bk-worker") || !map_names_thread(map, tid, "bk-renamed"))
		fail_msg("the live map does not name thread %u bk-worker, then bk-renamed:\n%s",
			 tid, map);
	assert_true(strstr(map, "\tbk-worker\t") < strstr(map, "\tbk-renamed\t"));
	/* The rate was known at this init (an earlier one started the clock): in the head. */
	assert_non_null(ts_map_value(map, "tsc_hz", value, sizeof(value)));
	assert_true(strtoull(value, NULL, 10) != 0);
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
	/* Known from the start: an earlier init started the clock long ago. */
	hz = read64_at(live, 8);
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

/* ---- a thread held while it writes the live map ------------------------------------------ */

/*
 * Once armed with a prefix, the first write(2) whose bytes begin with it (a line of the live
 * map: "xfdr-map\t" is init's first, "function\t" a function's line) says so on held[1] and
 * waits on release[0]; nothing else is held.
 */
static int held[2] = {-1, -1}, release[2] = {-1, -1};
static const char *hold_prefix;

ssize_t write(int fd, const void *buf, size_t n)
{
	static ssize_t (*real)(int, const void *, size_t);
	const char *want = __atomic_load_n(&hold_prefix, __ATOMIC_ACQUIRE);
	char c = 1;

	if (!real)
		real = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	if (want && n >= strlen(want) && !memcmp(buf, want, strlen(want)) &&
	    __atomic_compare_exchange_n(&hold_prefix, &want, NULL, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_RELAXED) &&
	    (real(held[1], &c, 1) != 1 || read(release[0], &c, 1) != 1))
		abort();
	return real(fd, buf, n);
}

static void hold_arm(const char *prefix)
{
	if (held[0] < 0)
		assert_int_equal(pipe(held) | pipe(release), 0);
	__atomic_store_n(&hold_prefix, prefix, __ATOMIC_RELEASE);
}

/* Wait (10 s at most) until a thread is held; 1 when one is. */
static int hold_reached(void)
{
	struct pollfd pf = {.fd = held[0], .events = POLLIN};
	char c;

	return poll(&pf, 1, 10000) == 1 && read(held[0], &c, 1) == 1;
}

static void hold_release(void)
{
	char c = 1;

	assert_int_equal(write(release[1], &c, 1), 1);
}

static void *exit_when_held(void *arg)
{
	(void)arg;
	_exit(hold_reached() ? 0 : 4);
}

/*
 * The child: backing=file, its init held while it writes the live map's first line, when
 * another thread _exit()s (as SIGKILL would end it).
 */
static int death_child(const char *prefix)
{
	pthread_t th;

	hold_arm("xfdr-map\t");
	if (pthread_create(&th, NULL, exit_when_held, NULL))
		return 2;
	init_file_backed(prefix, BUF_BYTES, BUF_COUNT, XFDR_BACKING_FILE);
	return 3; /* never: the other thread ends the process first */
}

/*
 * A death while init writes the live map leaves neither the map nor "<map>.tmp": it is written
 * into a file without a name, which gets one only once complete.
 */
static void death_mid_map_write_leaves_no_tmp(void **state)
{
	char prefix[300], tmp[700];
	int st;
	pid_t pid;

	(void)state;
#if defined(__SANITIZE_THREAD__)
	print_message("skipped: ThreadSanitizer kills a fork child that starts threads\n");
	skip();
#endif
	snprintf(prefix, sizeof(prefix), "%sdying", ts_dir);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(death_child(prefix));
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		fail_msg("child ended with status 0x%x", st);
	live_paths(prefix, pid);
	snprintf(tmp, sizeof(tmp), "%s.tmp", map_path);
	if (access(tmp, F_OK) == 0)
		fail_msg("%s was left by the death", tmp);
	assert_int_equal(file_size(map_path), -1);
}

/* Functions whose first sight the tests below announce to the live map (never called). */
__attribute__((noinline)) void backing_late_function(void)
{
	__asm__ __volatile__("");
}

__attribute__((noinline)) void backing_child_function(void)
{
	__asm__ __volatile__("");
}

__attribute__((noinline)) void backing_reuse_function(void)
{
	__asm__ __volatile__("");
}

static void *give_late_id(void *arg)
{
	(void)arg;
	fnmap_id_uncached((const void *)backing_late_function);
	return NULL;
}

/*
 * fork() and _Fork() while a thread of the parent holds the live map's lock (held in its
 * write(2) of a function's line): each child runs code that would append (a new function, a
 * thread taking its first buffer) and exits without waiting for a lock nobody in it holds, and
 * writes nothing into the parent's map, which names the parent's function once released.
 */
static void fork_while_live_map_written(void **state)
{
	char prefix[300], *map;
	pthread_t th;
	size_t len, before;
	int round, st;

	(void)state;
#if defined(__SANITIZE_THREAD__)
	print_message("skipped: ThreadSanitizer kills a fork child that starts threads\n");
	skip();
#endif
	snprintf(prefix, sizeof(prefix), "%sforkheld", ts_dir);
	live_paths(prefix, getpid());
	assert_int_equal(init_file_backed(prefix, BUF_BYTES, BUF_COUNT, XFDR_BACKING_FILE), 0);
	assert_int_equal(xfdr_start(), 0);
	free(ts_slurp(map_path, &before));
	hold_arm("function\t");
	assert_int_equal(pthread_create(&th, NULL, give_late_id, NULL), 0);
	assert_true(hold_reached());
	for (round = 0; round < 2; round++) {
		pid_t pid = round ? _Fork() : fork();
		unsigned waited;

		assert_true(pid >= 0);
		if (pid == 0) {
			fnmap_id_uncached((const void *)backing_child_function);
			xfdr_enter(5);
			xfdr_exit(5);
			_exit(0);
		}
		for (waited = 0; waited < 10000 && waitpid(pid, &st, WNOHANG) == 0; waited++)
			nanosleep(&(struct timespec){0, 1000000}, NULL);
		if (waited == 10000) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			fail_msg("the %s child hung", round ? "_Fork()" : "fork()");
		}
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	map = (char *)ts_slurp(map_path, &len);
	assert_int_equal(len, before);
	free(map);
	hold_release();
	assert_int_equal(pthread_join(th, NULL), 0);
	map = (char *)ts_slurp(map_path, &len);
	text_assert_contains(map, "\tbacking_late_function\t");
	assert_null(strstr(map, "backing_child_function"));
	free(map);
	assert_int_equal(xfdr_stop(), 0);
}

/* The descriptor open on the file at path in this process (same device and inode), or -1. */
static int fd_of(const char *path)
{
	struct stat want, st;
	int fd;

	assert_int_equal(stat(path, &want), 0);
	for (fd = 0; fd < 1024; fd++)
		if (!fstat(fd, &st) && st.st_dev == want.st_dev && st.st_ino == want.st_ino)
			return fd;
	return -1;
}

/*
 * A program that closes the live map's descriptor and opens a file of its own under the same
 * number: what xfdr would have appended is not written into that file, and the map stays as it
 * was.
 */
static void reused_descriptor_untouched(void **state)
{
	char prefix[300], path[600], *map;
	size_t before, after;
	int fd, mine;

	(void)state;
	snprintf(prefix, sizeof(prefix), "%sreuse", ts_dir);
	live_paths(prefix, getpid());
	assert_int_equal(init_file_backed(prefix, BUF_BYTES, BUF_COUNT, XFDR_BACKING_FILE), 0);
	assert_int_equal(xfdr_start(), 0);
	fd = fd_of(map_path);
	assert_true(fd >= 0);
	free(ts_slurp(map_path, &before));
	snprintf(path, sizeof(path), "%sprograms-own", ts_dir);
	assert_int_equal(close(fd), 0);
	mine = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_int_equal(mine, fd);
	fnmap_id_uncached((const void *)backing_reuse_function);
	run_named_thread("bk-reuse", NULL);
	assert_int_equal(file_size(path), 0);
	map = (char *)ts_slurp(map_path, &after);
	assert_int_equal(after, before);
	free(map);
	assert_int_equal(xfdr_stop(), 0);
	close(mine);
}

/* ---- names that came just before a SIGKILL -------------------------------------------------- */

/*
 * The child: backing=file into DIR/late-<pid>-live.xray; well after init (when the live map's
 * rate and first lines are long written), a thread LATE_THREAD_NAME records and the function
 * backing_late_function gets an id; then it says so on stdout and waits to be killed.
 */
#define LATE_THREAD_NAME "late-thread"

static int late_child_main(const char *dir)
{
	char output[600];

	snprintf(output, sizeof(output), "%slate", dir);
	if (init_file_backed(output, BUF_BYTES, BUF_COUNT, XFDR_BACKING_FILE) || xfdr_start())
		return 5;
	xfdr_enter(5);
	xfdr_exit(5);
	nanosleep(&(struct timespec){0, 100000000}, NULL);
	run_named_thread(LATE_THREAD_NAME, NULL);
	fnmap_id_uncached((const void *)backing_late_function);
	if (write(1, "ready\n", 6) != 6)
		return 6;
	for (;;)
		pause();
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

/*
 * A thread and a function that appeared a moment before a SIGKILL (long after the live map's
 * first lines): `xfdr recover` names both, from the live map alone.
 */
static void sigkill_just_after_news(void **state)
{
	char dir_arg[300], log[300], out[600], out_map[700], prefix[300], *text = NULL;
	char *argv[] = {"test_runtime_backing", "--late-child", dir_arg, NULL};
	unsigned waited;
	size_t len;
	int st;
	pid_t pid;

	(void)state;
	snprintf(dir_arg, sizeof(dir_arg), "%s", ts_dir);
	snprintf(log, sizeof(log), "%slate-child.log", ts_dir);
	pid = spawn_self(argv, log);
	for (waited = 0; waited < 10000; waited++) {
		if (access(log, F_OK) == 0) {
			free(text);
			text = (char *)ts_slurp(log, &len);
			if (strstr(text, "ready\n"))
				break;
		}
		if (waitpid(pid, &st, WNOHANG) == pid) {
			child_print_file(log);
			fail_msg("the child ended (status 0x%x) before it was killed", st);
		}
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	}
	free(text);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	if (waited == 10000)
		fail_msg("the child never said it was ready");
	snprintf(prefix, sizeof(prefix), "%slate", ts_dir);
	live_paths(prefix, pid);
	snprintf(out, sizeof(out), "%slate-recovered.xray", ts_dir);
	snprintf(out_map, sizeof(out_map), "%s.map", out);
	child_xfdr_ok("recover", live, "-o", out, NULL);
	text = (char *)ts_slurp(out_map, &len);
	if (!strstr(text, "\t" LATE_THREAD_NAME "\t") || !strstr(text, "\tbacking_late_function\t"))
		fail_msg("%s names neither \"%s\" nor backing_late_function:\n%s", out_map,
			 LATE_THREAD_NAME, text);
	free(text);
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
	    cmocka_unit_test(death_mid_map_write_leaves_no_tmp),
	    cmocka_unit_test(fork_while_live_map_written),
	    cmocka_unit_test(reused_descriptor_untouched),
	    cmocka_unit_test(sigkill_then_recover),
	    cmocka_unit_test(sigkill_just_after_news),
	};

	if (argc == 3 && !strcmp(argv[1], "--late-child"))
		return late_child_main(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "--kill-child"))
		return kill_child_main(argv[2], argv[3]);
	if (argc == 3 && !strcmp(argv[1], "--enospc-child"))
		return enospc_child_main(argv[2]);
	return cmocka_run_group_tests(tests, ts_group_setup, ts_group_teardown);
}
