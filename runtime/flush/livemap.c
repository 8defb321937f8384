/*
 * runtime/flush/livemap.c - the live map and the pool's clock facts (see livemap.h).
 *
 * With a live map (backing=file), one keeper thread at a time, "xfdr-livemap":
 *
 *   livemap_start() --> [frequency unknown: sleep until HZ_AFTER_NS after the start, then
 *   clock_tsc_hz() -> pool_locator_set_tsc_hz()] --> [every REWRITE_NS, rewrite the map if
 *   its fingerprint moved] --> posts `done` and returns when livemap_stop() asks.
 *
 * Why wait: without an exact CPUID frequency, clock_tsc_hz() calibrates against
 * CLOCK_MONOTONIC_RAW and spins until its baseline since clock_init() is CLOCK_MIN_BASELINE_NS.
 * xfdr_init() anchors the clock just after livemap_start(), so by HZ_AFTER_NS the spin is nil
 * or a fraction of init's own tail, and it is this thread's, never a recording thread's.
 *
 * Memory backing gets no thread (an extra thread in every process, and a new scheduling
 * pattern at start, for one number): livemap_start() hands the frequency to the pool when it
 * is already known or cheap to get (HZ_AFTER_NS after the first start: a later init), and
 * otherwise the flush layer does when it next computes it.
 *
 * The fingerprint covers what `xfdr recover` takes from the map and what can change: per
 * thread of the session its slot, tid, state, thread id and name (the live name from /proc,
 * as the map has it), the number of -finstrument-functions ids, and the frequency. That costs
 * a few system calls per thread per second; XRay's ids are registered by xfdr_start() before
 * any thread records, so the first thread moves the fingerprint after them. Drop counts are
 * not in it: they change all the time, and the flushed .map has them.
 *
 * A rewrite goes to "<map>.tmp", then rename(2) puts it in place, so a reader after a SIGKILL
 * finds the last complete map. The first rename is to a free name only (newfile.h): a map
 * found there that we did not write stays, and the live map is reported as not written. None is
 * made while an xfdr_init() runs (CTL_INIT_RUNNING in rt_state.ctl, read with acquire): init
 * rewrites what the map reads (the clock source, the thread table), and the acquire of its end
 * orders those writes before the rewrite.
 *
 * State: the paths and the keeper's fields are written by init only, while no keeper runs;
 * pthread_create() orders them before the keeper reads them, and livemap_stop()'s wait on
 * `done` orders the keeper's last access before init writes them again. `stop` is the one
 * flag both sides touch.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h> /* rename */
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/base/compiler.h"
#include "runtime/base/monotonic.h"
#include "runtime/base/newfile.h"
#include "runtime/base/print.h"
#include "runtime/flush/drops.h"
#include "runtime/flush/livemap.h"
#include "runtime/flush/mapfile.h"
#include "runtime/pool/pool.h"
#include "runtime/record/clock.h"
#include "runtime/record/session.h"
#include "runtime/record/thread.h"
#include "runtime/symbols/fnmap.h"

/* When the keeper asks for the frequency: the calibration baseline, and a little more. */
#define HZ_AFTER_NS (CLOCK_MIN_BASELINE_NS + 5000000ull)
/* How often it looks whether the map needs rewriting. */
#define REWRITE_NS 1000000000ull

static struct {
	int running; /* started, and `done` not yet waited for */
	pid_t pid;   /* the process that started it: a fork child has no such thread */
	sem_t wake;  /* posted by livemap_stop() */
	sem_t done;  /* posted by the keeper after its last access to anything shared */
	uint32_t stop;
	int dirty;	   /* the map on disk is not the one for fp (a write failed) */
	uint64_t fp;	   /* fingerprint of the map on disk */
	uint64_t start_ns; /* CLOCK_MONOTONIC at the start */
} keeper;

static uint64_t first_start_ns; /* CLOCK_MONOTONIC at the first livemap_start(); 0 before */

static char map_path[PATH_MAX]; /* the live map; "" without one */
static struct stat map_st;	/* device and inode of the last one written (rename keeps them) */
static int map_st_known;
static char tmp_path[PATH_MAX]; /* map_path + ".tmp" */
static char trace_path[PATH_MAX];

static XFDR_NOINSTR void report(const char *what, const char *path, int neg_errno)
{
	char text[PATH_MAX + 160];
	struct pr_buf b = PR_BUF_INIT(text);

	pr_str(&b, "backing=file: ");
	pr_str(&b, what);
	if (path) {
		pr_char(&b, ' ');
		pr_str(&b, path);
	}
	pr_str(&b, ": ");
	pr_str(&b, pr_errno_name(neg_errno));
	pr_line(&b);
}

static XFDR_NOINSTR uint64_t mix(uint64_t h, uint64_t v)
{
	return h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
}

static XFDR_NOINSTR uint64_t fingerprint(uint64_t tsc_hz)
{
	uint32_t session = xfdr_load_acquire(&rt_pool.session);
	uint32_t i, n;
	struct thread_slot *slots = thread_slots_used(&n);
	uint64_t h = mix(mix(n, tsc_hz), fnmap_ids_given());

	for (i = 0; i < n; i++) {
		struct thread_slot *s = &slots[i];
		char name[17];
		uint64_t w[2];

		if (!thread_slot_in_session(s, session))
			continue;
		memset(name, 0, sizeof(name));
		thread_slot_name(s, name);
		memcpy(w, name, sizeof(w));
		h = mix(h, i);
		h = mix(h, xfdr_load_relaxed(&s->tid));
		h = mix(h, xfdr_load_acquire(&s->state));
		/* pairs with the release in thread_id_in_session() */
		h = mix(h, xfdr_load_acquire(&s->id_session) == session
			       ? xfdr_load_relaxed(&s->thread_id)
			       : 0);
		h = mix(mix(h, w[0]), w[1]);
	}
	return h;
}

/*
 * Give tmp_path to the unnamed file fd, or (fd < 0) create it there. One found there (a rewrite
 * of an earlier process with our pid that died in it, or a planted link) is removed first:
 * unlink(2) removes a link, never what it leads to. Returns 0 (naming), a descriptor
 * (creating) or a negative errno.
 */
static XFDR_NOINSTR int take_tmp(int fd)
{
	int rc = fd < 0 ? newfile_create(tmp_path, O_WRONLY) : newfile_name(fd, tmp_path);

	if (rc == -EEXIST && !unlink(tmp_path))
		rc = fd < 0 ? newfile_create(tmp_path, O_WRONLY) : newfile_name(fd, tmp_path);
	return rc;
}

/*
 * Write the map to tmp_path and rename it to map_path: the first time only to a free name
 * (newfile.h), later over the map we wrote. The map is written into a file without a name
 * (newfile_create_unnamed()) that takes tmp_path only once complete, right before the rename,
 * so a process that ends meanwhile (exit(), _exit(), SIGKILL) leaves no half-made tmp_path
 * beside the live files; where the file system cannot, it is written at tmp_path. Returns 0 or
 * a negative errno, *failed the path that failed.
 */
static XFDR_NOINSTR int write_map(uint64_t tsc_hz, const char **failed)
{
	struct map_flush st;
	struct drop_totals drops;
	struct stat st_new;
	int fd, rc, named;

	memset(&st, 0, sizeof(st));
	*failed = tmp_path;
	fd = newfile_create_unnamed(tmp_path);
	named = fd < 0;
	if (named)
		fd = take_tmp(-1);
	if (fd < 0)
		return fd;
	rc = fstat(fd, &st_new) ? -errno : map_write_head(fd);
	if (!rc)
		rc = map_write_trace(fd, trace_path);
	drops_sum(&drops);
	if (!rc)
		rc = map_write_tail(fd, tsc_hz, &st, &drops);
	if (!rc && !named) {
		rc = take_tmp(fd);
		named = !rc;
	}
	if (close(fd) && !rc && errno != EINTR)
		rc = -errno;
	if (!rc) {
		*failed = map_path;
		if (!map_st_known)
			rc = newfile_rename(tmp_path, map_path);
		else if (rename(tmp_path, map_path))
			rc = -errno;
	}
	if (rc) {
		if (named)
			unlink(tmp_path);
		return rc;
	}
	map_st = st_new;
	map_st_known = 1;
	return 0;
}

static XFDR_NOINSTR int init_running(void)
{
	/* pairs with the acquire-release clear of CTL_INIT_RUNNING at the end of xfdr_init() */
	return (CTL_FLAGS(xfdr_load_acquire(&rt_state.ctl)) & CTL_INIT_RUNNING) != 0;
}

/* Sleep ns or until livemap_stop() posts `wake`. Returns 1 when asked to stop. */
static XFDR_NOINSTR int wait_stop(uint64_t ns)
{
	struct timespec at;

	clock_gettime(CLOCK_MONOTONIC, &at);
	at.tv_sec += (time_t)(ns / 1000000000u);
	at.tv_nsec += (long)(ns % 1000000000u);
	if (at.tv_nsec >= 1000000000L) {
		at.tv_sec++;
		at.tv_nsec -= 1000000000L;
	}
	while (sem_clockwait(&keeper.wake, CLOCK_MONOTONIC, &at) && errno == EINTR)
		;
	/* pairs with the release of stop in livemap_stop() */
	return xfdr_load_acquire(&keeper.stop) != 0;
}

/* The keeper: every signal blocked (by its creator), no instrumented code, no hook. */
static XFDR_NOINSTR void *keeper_main(void *arg)
{
	const char *failed;
	int reported = keeper.dirty; /* livemap_start() said why its write failed */

	(void)arg;
	for (;;) {
		uint64_t hz = pool_locator_tsc_hz(), since = mono_ns() - keeper.start_ns;
		uint64_t wait_ns = REWRITE_NS, fp;
		int rc;

		if (!hz && since >= HZ_AFTER_NS) {
			hz = clock_tsc_hz(); /* 0 if init failed before clock_init(): later */
			pool_locator_set_tsc_hz(hz);
		} else if (!hz) {
			wait_ns = HZ_AFTER_NS - since;
		}
		if (!init_running()) {
			fp = fingerprint(hz);
			if (keeper.dirty || fp != keeper.fp) {
				rc = write_map(hz, &failed);
				keeper.dirty = rc != 0;
				if (!rc)
					keeper.fp = fp;
				else if (!reported++)
					report("cannot rewrite the live map", failed, rc);
			}
		}
		if (wait_stop(wait_ns))
			break;
	}
	sem_post(&keeper.done); /* the last access to anything shared */
	return NULL;
}

/* Start the keeper. Returns 0 or an errno value. */
static int keeper_start(void)
{
	pthread_attr_t attr;
	pthread_t thread;
	sigset_t all, old;
	int rc;

	keeper.start_ns = mono_ns();
	/* No keeper reads stop now (the last one was waited for); pthread_create publishes it. */
	xfdr_store_relaxed(&keeper.stop, (uint32_t)0);
	if (sem_init(&keeper.wake, 0, 0))
		return errno;
	if (sem_init(&keeper.done, 0, 0)) {
		rc = errno;
		goto out_wake;
	}
	rc = pthread_attr_init(&attr);
	if (rc)
		goto out_done;
	rc = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (rc)
		goto out_attr;
	/* Every signal blocked from its first instruction: no program handler runs on it. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&thread, &attr, keeper_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		goto out_attr;
	pthread_setname_np(thread, "xfdr-livemap"); /* visible in top -H and /proc: cosmetic */
	keeper.running = 1;
	keeper.pid = getpid();
	pthread_attr_destroy(&attr);
	return 0;
out_attr:
	pthread_attr_destroy(&attr);
out_done:
	sem_destroy(&keeper.done);
out_wake:
	sem_destroy(&keeper.wake);
	return rc;
}

void livemap_stop(void)
{
	int saved = errno;

	if (!keeper.running)
		return;
	keeper.running = 0;
	/* A fork child has the parent's memory but not its threads: nobody to wait for. */
	if (keeper.pid != getpid())
		return;
	/* pairs with the acquire of stop in wait_stop() */
	xfdr_store_release(&keeper.stop, (uint32_t)1);
	sem_post(&keeper.wake);
	while (sem_wait(&keeper.done) && errno == EINTR)
		;
	sem_destroy(&keeper.wake);
	sem_destroy(&keeper.done);
	errno = saved;
}

/* map_path, tmp_path and trace_path for a map path ending in ".map". Returns 0 or -errno. */
static int set_paths(const char *path)
{
	size_t len = strlen(path);

	if (len <= 4 || strcmp(path + len - 4, ".map"))
		return -EINVAL;
	if (len + sizeof(".tmp") > PATH_MAX)
		return -ENAMETOOLONG;
	memcpy(map_path, path, len + 1);
	memcpy(tmp_path, path, len);
	memcpy(tmp_path + len, ".tmp", sizeof(".tmp"));
	memcpy(trace_path, path, len - 4);
	trace_path[len - 4] = '\0';
	return 0;
}

/* Unlink the live map, if the name still leads to the one we wrote (see pool_file.c). */
static void unlink_map(void)
{
	struct stat now;

	if (!map_path[0])
		return;
	if (map_st_known && !lstat(map_path, &now) && now.st_dev == map_st.st_dev &&
	    now.st_ino == map_st.st_ino)
		unlink(map_path);
	map_path[0] = tmp_path[0] = trace_path[0] = '\0';
	map_st_known = 0;
}

/*
 * The frequency, if clock_tsc_hz() gives it at once or nearly: the clock is anchored by the
 * first xfdr_init() just after the first livemap_start(), so HZ_AFTER_NS after that its
 * baseline is long enough. 0 otherwise (or before any clock_init()).
 */
static uint64_t hz_if_cheap(uint64_t now_ns)
{
	if (!first_start_ns || now_ns - first_start_ns < HZ_AFTER_NS)
		return 0;
	return clock_tsc_hz();
}

int livemap_start(const char *path)
{
	const char *failed;
	uint64_t hz, now = mono_ns();
	int rc;

	livemap_stop();
	pool_locator_set_invariant_tsc(clock_invariant_tsc());
	hz = pool_locator_tsc_hz();
	if (!hz) {
		hz = hz_if_cheap(now);
		pool_locator_set_tsc_hz(hz);
	}
	if (!first_start_ns)
		first_start_ns = now;
	if (map_path[0] && (!path || strcmp(path, map_path)))
		unlink_map(); /* an earlier session's, elsewhere or memory-backed now */
	if (path) {
		rc = set_paths(path);
		if (rc) {
			report("cannot make a live map of", path, rc);
			path = NULL;
		}
	}
	if (!path)
		return 0;
	keeper.fp = fingerprint(hz);
	rc = write_map(hz, &failed);
	keeper.dirty = rc != 0;
	if (rc)
		report("cannot write the live map", failed, rc);
	rc = keeper_start();
	if (rc)
		report("cannot start the thread that keeps the live map current", NULL, -rc);
	return 0;
}

void livemap_discard(void)
{
	livemap_stop();
	unlink_map();
	pool_discard_files();
}

void livemap_forget_after_fork(void)
{
	keeper.running = 0;
	map_path[0] = tmp_path[0] = trace_path[0] = '\0';
	map_st_known = 0;
}
