/*
 * runtime/flush/livemap.c - the live map and the pool's clock facts (see livemap.h).
 *
 * The live map is written whole once, by livemap_start() at init, and from then on only
 * appended to, by the thread that brought the news, in the slow path where it did:
 *   - a thread takes a buffer or exits (thread_set_watcher()): its `thread` line, when the map
 *     has none of it yet or its name changed (prctl(PR_GET_NAME), on itself); the `tsc_hz`
 *     lines once the rate is known; the function lines of ids a registered source (XRay's)
 *     added since;
 *   - the function map gives an id (fnmap_on_new_id()): that function's line.
 * So a SIGKILL loses no name that was known when it came, and the process has no thread of
 * ours. (It had one, "xfdr-livemap", which rewrote the map once a second: a process with a
 * second thread takes glibc's multi-threaded fork path for good, and each fork child paid
 * about 60 us more for it on the Intel VMs.) The cost moves to the slow paths: each buffer a
 * thread takes, a few system calls (getpid, prctl, gettid), and fstat and write(2) when its
 * line is new; a function's first call anywhere, the same and the symbol lookup; the very
 * first one also reads the symbol tables (symbolizer.h), milliseconds for a large program.
 *
 * The reader takes a thread id's last `thread` line (reader/names.c), and sees every
 * function id once: both the thread that gave an id and a listing of every id may list it, and
 * fnmap_take_for_listing() gives it to one of them per map.
 *
 * The rate: without an exact CPUID frequency, clock_tsc_hz() calibrates against
 * CLOCK_MONOTONIC_RAW and spins until its baseline since clock_init() is CLOCK_MIN_BASELINE_NS;
 * xfdr_init() anchors the clock just after the first livemap_start(). So it is asked for only
 * HZ_AFTER_NS after that, when it no longer spins: then the watcher hands it to the pool
 * (locator and live header, either backing) and the live map.
 *
 * The lock is a word holding its holder's tid. Another thread waits for it (sched_yield()); the
 * holder's own thread (a signal handler that interrupted it and met a new function) does not:
 * it raises `pending`, and the holder lists every id not listed yet before it lets go. No
 * signal is blocked, so a fault in the holder still reaches the crash handler.
 *
 * A fork child never writes the parent's map, whatever runs first in it (its own atfork
 * handlers, code after _Fork() or clone()): every entry compares the pid that wrote the map
 * with getpid(), and livemap_forget_after_fork() closes the child's copy of the descriptor.
 * Before each write, fstat(2) checks that the descriptor still leads to the file we wrote: a
 * program that closed it and opened something else under its number gets nothing written
 * into it; the map then stays as it is, and one stderr line says so.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h> /* rename */
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/base/compiler.h"
#include "runtime/base/monotonic.h"
#include "runtime/base/newfile.h"
#include "runtime/base/print.h"
#include "runtime/flush/drops.h"
#include "runtime/flush/livemap.h"
#include "runtime/flush/map_functions.h"
#include "runtime/flush/mapfile.h"
#include "runtime/pool/pool.h"
#include "runtime/record/clock.h"
#include "runtime/record/session.h"
#include "runtime/record/thread.h"
#include "runtime/symbols/fnmap.h"

/* When the rate is asked for: the calibration baseline after the first start, and a little more. */
#define HZ_AFTER_NS (CLOCK_MIN_BASELINE_NS + 5000000ull)
/* The lines waiting to be written; written when past OUT_FLUSH_AT and before the lock goes. */
#define OUT_BYTES (64u * 1024u)
#define OUT_FLUSH_AT (OUT_BYTES - MAP_FN_LINE_BYTES)

static struct {
	uint32_t owner;	  /* tid of the thread holding the lock; 0: free */
	uint32_t pending; /* a nested caller found its own thread holding it: list every id */
	/* The rest only with the lock held. */
	int fd;		  /* the live map, O_APPEND; -1: none (memory backing, stopped, failed) */
	uint32_t listing; /* this map's number, for fnmap_take_for_listing() and the slots */
	uint32_t session; /* the session whose threads it lists */
	struct stat st;	  /* the file fd must lead to */
	int hz_listed;	  /* its tsc_hz line is written */
	uint32_t listed[MAP_FN_SOURCES_MAX]; /* ids of each registered source listed */
	struct sym_namer namer;
	struct pr_buf out;
} journal = {.fd = -1};

static char out_text[OUT_BYTES];
/*
 * The process that wrote the live map, 0: none yet. Read before the lock is taken: a fork
 * child may have a copy of the lock that a thread of the parent held.
 */
static pid_t journal_pid;
static uint32_t listings;	/* maps written so far: the next one's number is this + 1 */
static uint64_t first_start_ns; /* CLOCK_MONOTONIC at the first livemap_start(); 0 before */

static char map_path[PATH_MAX]; /* the live map; "" without one */
static int map_known;		/* map_path holds a map we wrote: journal.st says which */
static char tmp_path[PATH_MAX]; /* map_path + ".tmp" */
static char trace_path[PATH_MAX];

static XFDR_NOINSTR void report(const char *what, const char *path, int neg_errno)
{
	pr_line_file_error("backing=file", what, path, neg_errno);
}

/* ---- the lock -------------------------------------------------------------------------------- */

static XFDR_NOINSTR uint32_t self_tid(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

/* Take the lock: 1, or 0 when this thread holds it already (pending raised). */
static XFDR_NOINSTR int journal_lock(uint32_t me)
{
	uint32_t seen = 0;

	while (!xfdr_cas(&journal.owner, &seen, me)) {
		if (seen == me) {
			xfdr_store_relaxed(&journal.pending, 1u);
			return 0;
		}
		seen = 0;
		sched_yield();
	}
	return 1;
}

static void list_fnmap(void);
static void out_write(void);

/* Write what waits, list what a nested caller announced, and let go. */
static XFDR_NOINSTR void journal_unlock(uint32_t me)
{
	for (;;) {
		if (__atomic_exchange_n(&journal.pending, 0u, __ATOMIC_ACQ_REL))
			list_fnmap();
		out_write();
		xfdr_store_release(&journal.owner, 0u);
		/* A handler that ran between the exchange and the release left its news pending. */
		if (!xfdr_load_acquire(&journal.pending) || !journal_lock(me))
			return;
	}
}

/* A live map was written, by this process (not by the parent of this fork child). */
static XFDR_NOINSTR int journal_ours(void)
{
	pid_t pid = xfdr_load_relaxed(&journal_pid);

	return xfdr_load_relaxed(&map_known) && pid && pid == getpid();
}

/* ---- appending --------------------------------------------------------------------------- */

/* A write failed: stop appending. */
static XFDR_NOINSTR void journal_fail(int neg_errno)
{
	report("cannot append to the live map", map_path, neg_errno);
	close(journal.fd);
	journal.fd = -1;
}

/* The program closed our descriptor: stop appending, and leave its number to the program. */
static XFDR_NOINSTR void journal_lost(void)
{
	char text[PATH_MAX + 160];
	struct pr_buf b = PR_BUF_INIT(text);

	pr_str(&b, "backing=file: the program closed the descriptor of the live map ");
	pr_str(&b, map_path);
	pr_str(&b, "; nothing more is appended to it");
	pr_line(&b);
	journal.fd = -1;
}

/* Write the lines that wait, if the descriptor still leads to our map. */
static XFDR_NOINSTR void out_write(void)
{
	struct stat now;
	int rc;

	if (!journal.out.len || journal.fd < 0) {
		journal.out.len = 0;
		return;
	}
	if (fstat(journal.fd, &now) || now.st_dev != journal.st.st_dev ||
	    now.st_ino != journal.st.st_ino) {
		journal_lost();
	} else {
		rc = pr_write_all(journal.fd, journal.out.text, journal.out.len);
		if (rc)
			journal_fail(rc);
	}
	journal.out.len = 0;
	journal.out.truncated = 0;
}

static XFDR_NOINSTR void out_reserve(void)
{
	if (journal.out.len >= OUT_FLUSH_AT)
		out_write();
}

static XFDR_NOINSTR void list_function(uint32_t id, uintptr_t addr)
{
	out_reserve();
	map_fn_namer_line(&journal.namer, &journal.out, id, addr);
}

/* The -finstrument-functions ids no line of this map lists yet. */
static XFDR_NOINSTR void list_fnmap(void)
{
	uint32_t n = fnmap_ids_given() + FNMAP_ID_FIRST, id;
	uintptr_t addr;

	for (id = FNMAP_ID_FIRST; id < n && journal.fd >= 0; id++)
		if (fnmap_take_for_listing(id, journal.listing, &addr))
			list_function(id, addr);
}

/* The ids registered sources (XRay's) added since the last call. */
static XFDR_NOINSTR void list_sources(void)
{
	const struct map_fn_source *src;
	uint32_t i, id, n;

	for (i = 0; i < MAP_FN_SOURCES_MAX; i++) {
		src = map_fn_source_at(i);
		if (!src)
			continue;
		n = src->count();
		for (id = journal.listed[i] + 1; id <= n && journal.fd >= 0; id++) {
			uintptr_t addr = src->addr_of(id);

			if (addr)
				list_function(id, addr);
		}
		if (n > journal.listed[i])
			journal.listed[i] = n;
	}
}

/*
 * The rate, once known, or asked for once clock_tsc_hz() no longer spins (the first init
 * anchors the clock just after the first livemap_start(): HZ_AFTER_NS after that, the
 * calibration baseline is long enough), and handed to the pool. 0: not yet.
 */
static XFDR_NOINSTR uint64_t rate_now(void)
{
	uint64_t hz = pool_locator_tsc_hz();

	if (!hz && first_start_ns && mono_ns() - first_start_ns >= HZ_AFTER_NS) {
		hz = clock_tsc_hz(); /* 0 if init failed before clock_init(): later */
		if (hz)
			pool_locator_set_tsc_hz(hz);
	}
	return hz;
}

static XFDR_NOINSTR void list_rate(uint64_t hz)
{
	if (journal.hz_listed || !hz)
		return;
	out_reserve();
	map_clock_rate_lines(&journal.out, hz);
	journal.hz_listed = 1;
}

/* s's thread line, unless the map has it with this name already. */
static XFDR_NOINSTR void list_thread(struct thread_slot *s, const char name[16])
{
	uint64_t w[2];

	memcpy(w, name, sizeof(w));
	/* pairs with the release in thread_id_in_session(): the thread has an id in this map's
	 * session */
	if (xfdr_load_acquire(&s->id_session) != journal.session)
		return;
	if (s->map_listing == journal.listing && s->map_name[0] == w[0] && s->map_name[1] == w[1])
		return;
	out_reserve();
	map_thread_line(&journal.out, s, journal.session, name);
	s->map_listing = journal.listing;
	s->map_name[0] = w[0];
	s->map_name[1] = w[1];
}

/* The thread watcher: on the slot's own thread, as it takes a buffer or exits. */
static XFDR_NOINSTR void on_thread(struct thread_slot *s)
{
	int saved = errno;
	uint64_t hz = rate_now();
	char name[17] = {0};
	uint32_t me;

	if (!journal_ours()) {
		errno = saved;
		return;
	}
	if (prctl(PR_GET_NAME, name, 0, 0, 0))
		memset(name, 0, sizeof(name));
	me = self_tid();
	if (journal_lock(me)) {
		if (journal.fd >= 0) {
			list_rate(hz);
			list_sources();
			list_thread(s, name);
		}
		journal_unlock(me);
	}
	errno = saved;
}

/* The function map's announcement: on the thread that gave the id. */
static XFDR_NOINSTR void on_new_id(uint32_t id)
{
	int saved = errno;
	uintptr_t addr;
	uint32_t me;

	if (!journal_ours()) {
		errno = saved;
		return;
	}
	me = self_tid();
	if (journal_lock(me)) {
		if (journal.fd >= 0 && fnmap_take_for_listing(id, journal.listing, &addr))
			list_function(id, addr);
		journal_unlock(me);
	}
	errno = saved;
}

/* ---- the whole map, at start ------------------------------------------------------------- */

/*
 * Give tmp_path to the unnamed file fd, or (fd < 0) create it there. One found there (a map
 * of an earlier process with our pid that died writing it, or a planted link) is removed
 * first: unlink(2) removes a link, never what it leads to. Returns 0 (naming), a descriptor
 * (creating) or a negative errno.
 */
static int take_tmp(int fd)
{
	int rc = fd < 0 ? newfile_create(tmp_path, O_WRONLY) : newfile_name(fd, tmp_path);

	if (rc == -EEXIST && !unlink(tmp_path))
		rc = fd < 0 ? newfile_create(tmp_path, O_WRONLY) : newfile_name(fd, tmp_path);
	return rc;
}

/*
 * Write the map's head and tail to tmp_path and rename it to map_path: the first time only to a
 * free name (newfile.h), later over the map we wrote. It is written into a file without a name
 * (newfile_create_unnamed()) that takes tmp_path only once complete, right before the rename,
 * so a process that ends meanwhile leaves no half-made tmp_path beside the live files; where
 * the file system cannot, it is written at tmp_path. Returns the descriptor, open for
 * appending, or a negative errno with *failed the path that failed.
 */
static int write_map(uint64_t tsc_hz, struct stat *st_new, const char **failed)
{
	struct map_flush st;
	struct drop_totals drops;
	int fd, rc, named;

	memset(&st, 0, sizeof(st));
	*failed = tmp_path;
	fd = newfile_create_unnamed(tmp_path);
	named = fd < 0;
	if (named)
		fd = take_tmp(-1);
	if (fd < 0)
		return fd;
	rc = fstat(fd, st_new) ? -errno : map_write_head(fd);
	if (!rc)
		rc = map_write_trace(fd, trace_path);
	drops_sum(&drops);
	if (!rc)
		rc = map_write_tail(fd, tsc_hz, &st, &drops);
	if (!rc && fcntl(fd, F_SETFL, O_APPEND))
		rc = -errno;
	if (!rc && !named) {
		rc = take_tmp(fd);
		named = !rc;
	}
	if (!rc) {
		*failed = map_path;
		if (!map_known)
			rc = newfile_rename(tmp_path, map_path);
		else if (rename(tmp_path, map_path))
			rc = -errno;
	}
	if (rc) {
		if (named)
			unlink(tmp_path);
		close(fd);
		return rc;
	}
	return fd;
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
	if (map_known && !lstat(map_path, &now) && now.st_dev == journal.st.st_dev &&
	    now.st_ino == journal.st.st_ino)
		unlink(map_path);
	map_path[0] = tmp_path[0] = trace_path[0] = '\0';
	xfdr_store_relaxed(&map_known, 0);
}

/* Write the whole map and list every function known: the lock held. */
static void journal_start(uint64_t hz)
{
	const char *failed;
	struct stat st;
	int fd = write_map(hz, &st, &failed);

	if (fd < 0) {
		report("cannot write the live map", failed, fd);
		return;
	}
	journal.fd = fd;
	journal.st = st;
	journal.listing = ++listings;
	journal.session = xfdr_load_relaxed(&rt_pool.session);
	journal.hz_listed = hz != 0;
	memset(journal.listed, 0, sizeof(journal.listed));
	journal.out = (struct pr_buf){.text = out_text, .cap = sizeof(out_text)};
	xfdr_store_relaxed(&journal_pid, getpid());
	xfdr_store_relaxed(&map_known, 1);
	list_sources();
	list_fnmap();
}

/* Close the map (it stays on disk): the lock held. */
static void journal_stop(void)
{
	out_write();
	if (journal.fd >= 0)
		close(journal.fd);
	journal.fd = -1;
	sym_namer_close(&journal.namer);
}

/* In a fork child whose atfork handler has not run yet: do its work first. */
static void forget_if_forked(void)
{
	pid_t pid = xfdr_load_relaxed(&journal_pid);

	if (pid && pid != getpid())
		livemap_forget_after_fork();
}

void livemap_stop(void)
{
	int saved = errno;
	uint32_t me = self_tid();

	forget_if_forked();
	if (journal_lock(me)) {
		journal_stop();
		journal_unlock(me);
	}
	errno = saved;
}

int livemap_start(const char *path)
{
	uint32_t me = self_tid();
	uint64_t hz;
	int rc;

	livemap_stop();
	thread_set_watcher(on_thread);
	fnmap_on_new_id(on_new_id);
	pool_locator_set_invariant_tsc(clock_invariant_tsc());
	/* A later init: the clock was anchored by the first, its rate is likely cheap by now. */
	hz = rate_now();
	if (!first_start_ns)
		first_start_ns = mono_ns();
	if (map_path[0] && (!path || strcmp(path, map_path)))
		unlink_map(); /* an earlier session's, elsewhere or memory-backed now */
	if (path) {
		rc = set_paths(path);
		if (rc) {
			report("cannot make a live map of", path, rc);
			path = NULL;
		}
	}
	if (path && journal_lock(me)) {
		journal_start(hz);
		journal_unlock(me);
	}
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
	/* A thread of the parent held the lock at fork(): its state may be half-made. */
	int held = xfdr_load_relaxed(&journal.owner) != 0;

	xfdr_store_relaxed(&map_known, 0);
	xfdr_store_relaxed(&journal_pid, (pid_t)0);
	if (journal.fd >= 0)
		close(journal.fd); /* the child's copy: the parent's stays open */
	journal.fd = -1;
	journal.out.len = 0;
	if (held)
		memset(&journal.namer, 0, sizeof(journal.namer)); /* its mappings are leaked */
	else
		sym_namer_close(&journal.namer);
	map_path[0] = tmp_path[0] = trace_path[0] = '\0';
	xfdr_store_relaxed(&journal.pending, 0u);
	xfdr_store_relaxed(&journal.owner, 0u);
}
