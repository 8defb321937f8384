/*
 * tests/unit/runtime/test_runtime_fork_setup.c - fork() while another thread is inside the
 * runtime's one-time set-up or holds its lock (issue 25, "fork"), and the function map's tables in
 * a fork child.
 *
 *   fnmap_setup_in_flight     a thread is creating the function map (fnmap.c, RUNNING) when
 *                             another forks: the child's first lookup gets an id
 *   fentry_key_in_flight      the same for the -pg hooks' thread-exit key (fentry.c)
 *   setup_started_during_fork a thread starts creating the map while another is inside
 *                             fork(), whose handler found no map and took no lock: the set-up
 *                             waits, and the child's first lookup gets an id
 *   dlclose_naming_in_flight  a thread is naming a library for dlclose(), holding unload.c's
 *                             lock, when another forks: the child's dlclose() returns and
 *                             names it
 *   table_grows_in_child      the parent and a fork child that insert enough functions find
 *                             every shard of the map grown by the time the insertion returns
 *                             (the inserting thread grows it: no worker thread to wait for)
 *   resize_in_flight          a thread is inside a resize of the map, holding fnmap.c's
 *                             grow_lock, when another forks: the child's shards still grow
 *
 * Each case runs in a child of the test ("the parent": fresh one-time state, the recorder
 * initialized so that lifecycle.c's atfork handlers run), which stops one of its threads at
 * the point in question, forks, and gives the grandchild a deadline: still running then, it
 * is killed and the case fails, naming what hung. Nothing depends on timing: a thread is held
 * by interposing a function the runtime calls at that point (pthread_key_create() in both
 * set-ups, strdup() while unload.c names a function, cds_lfht_resize() in a resize), and waits
 * on a pipe until the test lets it go, or, for a lock, until a thread waits for the lock it
 * holds (the forking thread, once the atfork handler takes it; without that handler fork()
 * does not wait for it).
 */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include <urcu-bp.h>
#include <urcu/rculfhash.h>

#include "tests/support/runtime_test.h"

#include "runtime/hooks/fentry.h"
#include "runtime/symbols/fnmap.h"
#include "runtime/symbols/fork_page.h"
#include "runtime/symbols/unload.h"

#define PARENT_MS 60000u     /* the parent's whole run */
#define GRANDCHILD_MS 5000u  /* a grandchild still running then is stuck */
#define GROW_KEYS (1u << 15) /* 1024 a shard: 8 per initial bucket, the map grows at 2 */

/* Exit statuses: the parent's is its grandchild's, or one of its own. */
enum { SCENARIO_OK = 0, GRANDCHILD_WRONG = 1, GRANDCHILD_HUNG = 2, SCENARIO_BROKEN = 3 };
#define HUNG (-1) /* run_forked(): killed at the deadline */

/* Synthetic function addresses: fnmap takes any address and never reads it. */
static char synth[4];

/* ---- holding a thread at a point ----------------------------------------------------------- */

static __thread int hold_me;	/* the next interposed call on this thread stops */
static int hold_entered[2];	/* the held thread writes a byte once it stops */
static int hold_release[2];	/* a byte here lets it go */
static int (*hold_until)(void); /* or this returns nonzero (polled every millisecond) */

static void hold_here(void)
{
	struct pollfd pf = {.fd = hold_release[0], .events = POLLIN};
	char c = 'h';

	if (!hold_me)
		return;
	hold_me = 0;
	if (write(hold_entered[1], &c, 1) != 1)
		abort();
	while (poll(&pf, 1, 1) == 0 && !(hold_until && hold_until()))
		;
}

int pthread_key_create(pthread_key_t *key, void (*destructor)(void *))
{
	static int (*real)(pthread_key_t *, void (*)(void *));
	int (*next)(pthread_key_t *, void (*)(void *)) = __atomic_load_n(&real, __ATOMIC_RELAXED);

	if (!next) {
		*(void **)&next = dlsym(RTLD_NEXT, "pthread_key_create");
		__atomic_store_n(&real, next, __ATOMIC_RELAXED);
	}
	hold_here();
	return next(key, destructor);
}

void cds_lfht_resize(struct cds_lfht *ht, unsigned long new_size)
{
	static void (*real)(struct cds_lfht *, unsigned long);
	void (*next)(struct cds_lfht *, unsigned long) = __atomic_load_n(&real, __ATOMIC_RELAXED);

	if (!next) {
		*(void **)&next = dlsym(RTLD_NEXT, "cds_lfht_resize");
		__atomic_store_n(&real, next, __ATOMIC_RELAXED);
	}
	hold_here();
	next(ht, new_size);
}

char *strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p;

	hold_here();
	p = malloc(n);
	return p ? memcpy(p, s, n) : NULL;
}

/*
 * A thread waits for unload.c's lock: glibc's mutex word is 2 while one does (0 free,
 * 1 locked; nptl's lowlevellock).
 */
static int unload_lock_awaited(void)
{
	return __atomic_load_n(&symbols_fork_page.unload_lock.__data.__lock, __ATOMIC_RELAXED) > 1;
}

/* A thread waits for fnmap.c's grow_lock (the same lock word as above). */
static int grow_lock_awaited(void)
{
	return __atomic_load_n(&symbols_fork_page.grow_lock.__data.__lock, __ATOMIC_RELAXED) > 1;
}

static void *run_held(void *arg)
{
	hold_me = 1;
	((void (*)(void))arg)();
	return NULL;
}

/* ---- processes ---------------------------------------------------------------------------- */

/*
 * Fork; the child runs fn and leaves by _exit() with its result (LeakSanitizer's check at
 * exit hangs in the child of a multi-threaded process). Returns the child's exit status,
 * 128 + n after signal n, or HUNG when it was still running after timeout_ms (it is killed).
 */
static int run_forked(int (*fn)(void), unsigned timeout_ms)
{
	struct timespec start, now, tick = {0, 1000000};
	int status;
	pid_t pid, done;

	fflush(NULL);
	clock_gettime(CLOCK_MONOTONIC, &start);
	pid = fork();
	if (pid < 0)
		return 127;
	if (pid == 0)
		_exit(fn());
	for (;;) {
		done = waitpid(pid, &status, WNOHANG);
		if (done == pid)
			break;
		if (done < 0 && errno != EINTR)
			return 127;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 >=
		    (long)timeout_ms) {
			kill(pid, SIGKILL);
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			return HUNG;
		}
		nanosleep(&tick, NULL);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* In the parent: the recorder as a program has it (not recording), with its atfork handlers. */
static int parent_init(void)
{
	struct xfdr_options o;
	int rc;

	ts_options(&o, 4096, 4, XFDR_MODE_BOUNDED);
	rc = xfdr_init(&o);
	if (rc)
		fprintf(stderr, "parent: xfdr_init: %d\n", rc);
	return rc;
}

/*
 * In the parent: run held on a thread that stops at its first interposed call, fork while it
 * is stopped, let the grandchild run grandchild, then let the thread go. Returns the
 * grandchild's result.
 */
static int hold_and_fork(void (*held)(void), int (*until)(void), int (*grandchild)(void))
{
	struct pollfd pf;
	pthread_t t;
	char c;
	int rc;

	if (pipe(hold_entered) || pipe(hold_release))
		return SCENARIO_BROKEN;
	hold_until = until;
	if (pthread_create(&t, NULL, run_held, (void *)held))
		return SCENARIO_BROKEN;
	pf = (struct pollfd){.fd = hold_entered[0], .events = POLLIN};
	if (poll(&pf, 1, (int)GRANDCHILD_MS) != 1 || read(hold_entered[0], &c, 1) != 1) {
		fprintf(stderr, "parent: the thread never reached the point to hold it at\n");
		return SCENARIO_BROKEN;
	}
	rc = run_forked(grandchild, GRANDCHILD_MS);
	rc = rc == HUNG ? GRANDCHILD_HUNG : rc;
	c = 'r';
	if (write(hold_release[1], &c, 1) != 1 || pthread_join(t, NULL))
		return SCENARIO_BROKEN;
	return rc;
}

/* The case's verdict on what the parent returned. */
static void expect_ok(int rc, const char *what)
{
	if (rc == SCENARIO_OK)
		return;
	if (rc == GRANDCHILD_HUNG)
		fail_msg("%s: the fork child hung (killed after %u ms)", what, GRANDCHILD_MS);
	if (rc == HUNG)
		fail_msg("%s: the test's parent process hung (killed after %u ms)", what,
			 PARENT_MS);
	if (rc == GRANDCHILD_WRONG)
		fail_msg("%s: the fork child finished, with a wrong result (see above)", what);
	fail_msg("%s: the test's parent process failed (status %d, see above)", what, rc);
}

/* ---- (a) the function map's set-up -------------------------------------------------------- */

static void lookup_first(void)
{
	fnmap_id_uncached(&synth[0]);
}

static int child_lookup(void)
{
	uint32_t id = fnmap_id_uncached(&synth[1]);

	if (id == FNMAP_ID_NONE || fnmap_addr_of(id) != (uintptr_t)&synth[1]) {
		fprintf(stderr, "child: lookup gave id %u for %p\n", id, (void *)&synth[1]);
		return GRANDCHILD_WRONG;
	}
	return 0;
}

static int parent_fnmap_setup(void)
{
	int rc;

	if (parent_init() || fnmap_inspect_started())
		return SCENARIO_BROKEN;
	rc = hold_and_fork(lookup_first, NULL, child_lookup);
	if (rc)
		return rc;
	/* The held thread finished its set-up: the parent's map works too. */
	return child_lookup();
}

static void fnmap_setup_in_flight(void **state)
{
	(void)state;
	expect_ok(run_forked(parent_fnmap_setup, PARENT_MS),
		  "fork while another thread creates the function map");
}

/* ---- (a) the -pg hooks' thread-exit key --------------------------------------------------- */

static void key_first(void)
{
	fentry_inspect_key_usable();
}

static int child_key(void)
{
	if (!fentry_inspect_key_usable()) {
		fprintf(stderr, "child: no usable thread-exit key\n");
		return GRANDCHILD_WRONG;
	}
	return 0;
}

static int parent_fentry_key(void)
{
	int rc;

	if (parent_init() || fentry_inspect_key_started())
		return SCENARIO_BROKEN;
	rc = hold_and_fork(key_first, NULL, child_key);
	return rc ? rc : child_key();
}

static void fentry_key_in_flight(void **state)
{
	(void)state;
	expect_ok(run_forked(parent_fentry_key, PARENT_MS),
		  "fork while another thread creates the -pg hooks' key");
}

/* ---- (a) the map's set-up started while another thread is in fork() ---------------------- */

/*
 * The thread that starts the set-up reports on hold_entered how far it got while the other
 * one is inside fork(): 'y', waiting (its first sched_yield()), or 'h', stopped at its first
 * mmap() (urcu-bp's registry, with the registry lock held, when its first lookup registers
 * it), where it stays until hold_release.
 */
static __thread int report_yield, hold_at_mmap;
static int setup_go[2];	     /* a byte lets the set-up thread start */
static uint32_t setup_armed; /* the program's prepare handler starts it once */

int sched_yield(void)
{
	static int (*real)(void);
	int (*next)(void) = __atomic_load_n(&real, __ATOMIC_RELAXED);
	char c = 'y';

	if (!next) {
		*(void **)&next = dlsym(RTLD_NEXT, "sched_yield");
		__atomic_store_n(&real, next, __ATOMIC_RELAXED);
	}
	if (report_yield) {
		report_yield = 0;
		hold_at_mmap = 0;
		if (write(hold_entered[1], &c, 1) != 1)
			abort();
	}
	return next();
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	static void *(*real)(void *, size_t, int, int, int, off_t);
	void *(*next)(void *, size_t, int, int, int, off_t) =
	    __atomic_load_n(&real, __ATOMIC_RELAXED);

	if (!next) {
		*(void **)&next = dlsym(RTLD_NEXT, "mmap");
		__atomic_store_n(&real, next, __ATOMIC_RELAXED);
	}
	if (hold_at_mmap) {
		hold_at_mmap = 0;
		report_yield = 0;
		hold_me = 1;
		hold_here();
	}
	return next(addr, len, prot, flags, fd, off);
}

static void *setup_when_told(void *arg)
{
	char c;

	(void)arg;
	if (read(setup_go[0], &c, 1) != 1)
		return NULL;
	report_yield = 1;
	hold_at_mmap = 1;
	lookup_first();
	return NULL;
}

/* The program's own prepare handler: it runs after xfdr's (registered before xfdr_init()). */
static void start_setup_in_fork(void)
{
	struct pollfd pf = {.fd = hold_entered[0], .events = POLLIN};
	char c = 'g';

	if (!__atomic_exchange_n(&setup_armed, 0u, __ATOMIC_RELAXED))
		return;
	if (write(setup_go[1], &c, 1) != 1 || poll(&pf, 1, (int)GRANDCHILD_MS) != 1 ||
	    read(hold_entered[0], &c, 1) != 1)
		fprintf(stderr, "parent: the set-up thread did not report\n");
}

static int parent_setup_during_fork(void)
{
	pthread_t t;
	char c = 'r';
	int rc;

	if (pipe(hold_entered) || pipe(hold_release) || pipe(setup_go) ||
	    pthread_atfork(start_setup_in_fork, NULL, NULL) || parent_init() ||
	    fnmap_inspect_started() || pthread_create(&t, NULL, setup_when_told, NULL))
		return SCENARIO_BROKEN;
	__atomic_store_n(&setup_armed, 1u, __ATOMIC_RELAXED);
	rc = run_forked(child_lookup, GRANDCHILD_MS);
	rc = rc == HUNG ? GRANDCHILD_HUNG : rc;
	if (write(hold_release[1], &c, 1) != 1 || pthread_join(t, NULL))
		return SCENARIO_BROKEN;
	/* The set-up went on after fork() returned: the parent's map works. */
	return rc ? rc : child_lookup();
}

/*
 * xfdr's prepare handler found the map not set up and took no lock; another thread starts the
 * set-up before fork() (the program's handler lets it go): it waits until fork() is done, so
 * that the child inherits no urcu-bp lock held by a thread it does not have.
 */
static void setup_started_during_fork(void **state)
{
	(void)state;
	expect_ok(run_forked(parent_setup_during_fork, PARENT_MS),
		  "another thread starts the function map while one is in fork()");
}

/* ---- (b) dlclose() naming a library ------------------------------------------------------- */

static void *lib_handle;
static uintptr_t lib_fn;
static uint32_t lib_id;

/* dlclose()'s naming half: the library stays open, for the child to close. */
static void name_lib(void)
{
	unload_name_ids(lib_handle);
}

/* The child closes the library too (its reference is still open there) and names it. */
static int child_dlclose(void)
{
	if (dlclose(lib_handle)) {
		fprintf(stderr, "child: dlclose: %s\n", dlerror());
		return GRANDCHILD_WRONG;
	}
	if (!unload_find(lib_id, lib_fn)) {
		fprintf(stderr, "child: the library's function was not named\n");
		return GRANDCHILD_WRONG;
	}
	return 0;
}

static int parent_dlclose(void)
{
	int rc;

	if (parent_init())
		return SCENARIO_BROKEN;
	/* A library this binary has loaded: the handle is a reference, the unload only names. */
	lib_handle = dlopen("libcmocka.so.0", RTLD_NOW | RTLD_NOLOAD);
	lib_fn = (uintptr_t)dlsym(lib_handle, "_cmocka_run_group_tests");
	lib_id = fnmap_id_uncached((const void *)lib_fn);
	if (!lib_handle || !lib_fn || lib_id == FNMAP_ID_NONE) {
		fprintf(stderr, "parent: no library function with an id\n");
		return SCENARIO_BROKEN;
	}
	/* Held inside the naming, unload_lock taken, until the forking thread waits for it. */
	rc = hold_and_fork(name_lib, unload_lock_awaited, child_dlclose);
	dlclose(lib_handle);
	return rc;
}

static void dlclose_naming_in_flight(void **state)
{
	(void)state;
	expect_ok(run_forked(parent_dlclose, PARENT_MS),
		  "fork while another thread names a library in dlclose()");
}

/* ---- (c) the map's tables grow on the inserting thread ------------------------------------ */

/*
 * The bucket count of one of the map's tables. liburcu keeps struct cds_lfht opaque; its
 * `size` (the bucket count) is the word right before `bucket_at`, the bucket allocator's own
 * function (rculfhash-internal.h, every release since 0.7). Found by that neighbour, not by an
 * offset of one release; 0 if not found in the table's first 64 words.
 */
static unsigned long bucket_count(struct cds_lfht *ht)
{
	const unsigned long *w = (const unsigned long *)(void *)ht;
	unsigned long anchor = (unsigned long)cds_lfht_mm_order.bucket_at;
	unsigned i;

	for (i = 1; w && i < 64; i++)
		if (__atomic_load_n(&w[i], __ATOMIC_RELAXED) == anchor)
			return __atomic_load_n(&w[i - 1], __ATOMIC_RELAXED);
	return 0;
}

/*
 * The shards that hold more than shape.max_load functions a bucket below the cap, counted by
 * liburcu's own walk of each table (not by fnmap.c's counters); who names the first on stderr.
 */
static unsigned crowded_shards(const char *who)
{
	struct fnmap_inspect_shape shape;
	unsigned long buckets, nodes;
	unsigned i, crowded = 0;
	long before, after;

	fnmap_inspect_shape(&shape);
	for (i = 0; i < shape.shards; i++) {
		buckets = bucket_count(fnmap_inspect_shard(i));
		urcu_bp_read_lock();
		cds_lfht_count_nodes(fnmap_inspect_shard(i), &before, &nodes, &after);
		urcu_bp_read_unlock();
		if (buckets >= shape.max_buckets || nodes <= shape.max_load * buckets)
			continue;
		if (!crowded++)
			fprintf(stderr, "%s: shard %u holds %lu functions in %lu buckets\n", who, i,
				nodes, buckets);
	}
	return crowded;
}

/* Functions [first, first + GROW_KEYS) get ids. 0, or GRANDCHILD_WRONG. */
static int insert_keys(const char *who, uint32_t first)
{
	uint32_t i, id;

	for (i = first; i < first + GROW_KEYS; i++) {
		id = fnmap_id_uncached((const void *)(uintptr_t)(0x100000000000ull + 16ull * i));
		if (id == FNMAP_ID_NONE) {
			fprintf(stderr, "%s: key %u got no id\n", who, i);
			return GRANDCHILD_WRONG;
		}
	}
	return 0;
}

/* The second half of the keys, and every shard grown when the last insertion has returned. */
static int child_grows(void)
{
	if (insert_keys("child", GROW_KEYS))
		return GRANDCHILD_WRONG;
	return crowded_shards("child") ? GRANDCHILD_WRONG : 0;
}

/* The map created in the parent, every shard at its initial size. */
static int parent_map_created(void)
{
	struct fnmap_inspect_shape shape;
	unsigned i;

	fnmap_id_uncached(&synth[3]);
	fnmap_inspect_shape(&shape);
	for (i = 0; i < shape.shards; i++)
		if (bucket_count(fnmap_inspect_shard(i)) != shape.init_buckets) {
			fprintf(stderr, "parent: cannot read shard %u's bucket count (%lu)\n", i,
				bucket_count(fnmap_inspect_shard(i)));
			return SCENARIO_BROKEN;
		}
	return 0;
}

static int parent_grow(void)
{
	int rc;

	if (parent_init() || parent_map_created())
		return SCENARIO_BROKEN;
	if (insert_keys("parent", 0) || crowded_shards("parent"))
		return GRANDCHILD_WRONG;
	rc = run_forked(child_grows, GRANDCHILD_MS);
	if (rc)
		return rc == HUNG ? GRANDCHILD_HUNG : rc;
	/* The parent goes on growing after the fork too (grow_lock released there). */
	return child_grows();
}

static void table_grows_in_child(void **state)
{
	(void)state;
	expect_ok(run_forked(parent_grow, PARENT_MS), "the function map's tables in a fork child");
}

/* ---- (d) fork() during a resize --------------------------------------------------------- */

/* Held inside its first resize, grow_lock taken, until the forking thread waits for the lock. */
static void grow_first(void)
{
	insert_keys("held thread", 0);
}

static int parent_resize_in_flight(void)
{
	int rc;

	if (parent_init() || parent_map_created())
		return SCENARIO_BROKEN;
	rc = hold_and_fork(grow_first, grow_lock_awaited, child_grows);
	if (rc)
		return rc;
	return crowded_shards("parent") ? GRANDCHILD_WRONG : 0;
}

static void resize_in_flight(void **state)
{
	(void)state;
	expect_ok(run_forked(parent_resize_in_flight, PARENT_MS),
		  "fork while another thread resizes the function map");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(fnmap_setup_in_flight),	cmocka_unit_test(fentry_key_in_flight),
	    cmocka_unit_test(dlclose_naming_in_flight), cmocka_unit_test(table_grows_in_child),
	    cmocka_unit_test(resize_in_flight),		cmocka_unit_test(setup_started_during_fork),
	};

	return cmocka_run_group_tests(tests, ts_group_setup, ts_group_teardown);
}
