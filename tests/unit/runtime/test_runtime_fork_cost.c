/*
 * tests/unit/runtime/test_runtime_fork_cost.c - a fork child that records nothing costs no more
 * with xfdr recording than without it, in a program with one thread and in one that has had more.
 *
 * What a fork costs beyond the kernel's copy of the page tables is page faults: after fork()
 * every page either process writes first is copied (or at least faulted writable again), and
 * each costs microseconds on the target VMs, where the fork itself costs about a hundred. So
 * the test counts them (getrusage() minor faults: the parent's own, and its children's) over
 * the same rounds of fork() + _exit() before xfdr_init() and with xfdr recording, in a process
 * whose only thread is the test's, and in a process of its own that has had a second thread
 * (--threaded: glibc keeps its multi-threaded fork for good, and xfdr's handlers run in full).
 * Counts, not times: the same code faults the same pages. The machine's share of them drifts
 * while the tests run, so each recording count is compared with the larger of the baseline
 * before it and one measured again right after, in a new process (baseline_again()).
 *
 * xfdr used to start a thread to populate the pool (and glibc's fork() then takes its
 * multi-threaded path: malloc's and stdio's locks, about 12 more faults), and its fork handlers
 * wrote to half a dozen pages of ours: about 20 faults a round in all. The function map of the
 * -finstrument-functions hooks used to start liburcu's resize thread on its first lookup: so
 * the same rounds again once the hooks have met thousands of functions, and a program that
 * meets as many functions as the map's tables grow for keeps its one thread. backing=file used
 * to keep its live .map current from a thread of its own: the same rounds with it.
 */
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/single_threaded.h>
#include <sys/wait.h>
#include <time.h>

#include "runtime/record/altstack.h"
#include "runtime/record/session.h"
#include "runtime/record/thread.h"
#include "runtime/record/thread_slots.h"
#include "runtime/symbols/fnmap.h"
#include "runtime/symbols/fork_page.h"
#include "tests/support/runtime_test.h"
#include "tests/support/proc_maps.h"

/* The -finstrument-functions hooks (runtime/hooks/cyg.c), called as instrumented code does. */
void __cyg_profile_func_enter(void *this_fn, void *call_site);
void __cyg_profile_func_exit(void *this_fn, void *call_site);

/*
 * HOOKED_FUNCTIONS: enough that the map's tables grow (past 2 a bucket of 4096). MAP_FUNCTIONS:
 * past the size at which every table stops growing (fnmap.c: 32 x 8192 buckets x 2).
 */
enum {
	WARM_ROUNDS = 4,
	ROUNDS = 40,
	BATCHES = 5,
	FID = 7,
	HOOKED_FUNCTIONS = 20000,
	MAP_FUNCTIONS = 600000
};

/* Synthetic function addresses: the map takes any address and never reads it. */
static void *synth_fn(uint32_t i)
{
	return (void *)(uintptr_t)(0x100000000000ull + 16ull * i);
}

static long minflt(int who)
{
	struct rusage ru;

	assert_int_equal(getrusage(who, &ru), 0);
	return ru.ru_minflt;
}

/* Minor faults over ROUNDS rounds of fork() + _exit(0): the parent's own and its children's. */
struct faults {
	long self, kids;
};

static long faults_total(struct faults f)
{
	return f.self + f.kids;
}

static struct faults faults_of_batch(void)
{
	long self0 = 0, kids0 = 0;
	int i, st;

	for (i = 0; i < WARM_ROUNDS + ROUNDS; i++) {
		pid_t pid;

		if (i == WARM_ROUNDS) {
			self0 = minflt(RUSAGE_SELF);
			kids0 = minflt(RUSAGE_CHILDREN);
		}
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0)
			_exit(0);
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	return (struct faults){minflt(RUSAGE_SELF) - self0, minflt(RUSAGE_CHILDREN) - kids0};
}

/*
 * The batch with the fewest faults of BATCHES batches of ROUNDS rounds. Whatever else the
 * machine does only adds faults (pages migrated by compaction, a code page the child faults in
 * alone when the pages around it left the page cache): under a second CI run one batch
 * recording counted 600 where the same code counted 520, with and without xfdr, when run
 * alone. The fewest is what the code itself costs.
 */
static struct faults faults_of_batches(void)
{
	struct faults fewest = {LONG_MAX / 2, LONG_MAX / 2};
	int i;

	for (i = 0; i < BATCHES; i++) {
		struct faults n = faults_of_batch();

		if (faults_total(n) < faults_total(fewest))
			fewest = n;
	}
	return fewest;
}

static long faults_of_rounds(void)
{
	return faults_total(faults_of_batches());
}

/* A thread that comes and goes: glibc's fork() then takes its multi-threaded path for good. */
static void *no_work(void *arg)
{
	return arg;
}

/*
 * The baseline again, now: the same rounds in a new process of this program that never
 * initializes xfdr (--baseline; --baseline-threaded after a thread came and went), and the
 * larger of it and before. The machine's own share drifts while the tests run: a clean-clone
 * CI run beside another counted 520 without xfdr at the start of a test, 600 recording, and 600
 * without xfdr in the next test, the code unchanged. A baseline measured beside the recording
 * one takes the drift out and leaves the bound as it is.
 */
static long baseline_again(long before, int threaded)
{
	char *argv[] = {"/proc/self/exe", threaded ? "--baseline-threaded" : "--baseline", NULL};
	struct child_result r;
	long now = 0;

	child_capture(argv, &r);
	if (r.status || sscanf(r.out, "%ld", &now) != 1)
		fail_msg("%s %s: status %d, output \"%s\", errors \"%s\"", argv[0], argv[1],
			 r.status, r.out, r.err);
	child_result_free(&r);
	print_message("minor faults over %d rounds without xfdr in a new process: %ld\n", ROUNDS,
		      now);
	return now > before ? now : before;
}

/* --baseline and --baseline-threaded: print the rounds' faults of a process without xfdr. */
static int baseline_main(int threaded)
{
	pthread_t t;

	if (threaded && (pthread_create(&t, NULL, no_work, NULL) || pthread_join(t, NULL)))
		return 1;
	printf("%ld\n", faults_of_rounds());
	return 0;
}

/* A test that fails leaves no session running for the next one's xfdr_init(). */
static int stop_session(void **state)
{
	(void)state;
	(void)xfdr_stop(); /* -EINVAL when the test never got to initialize */
	return 0;
}

static int task_count(void)
{
	return ts_dir_entries("/proc/self/task");
}

static void silent_child_faults_no_page_of_ours(void **state)
{
	struct xfdr_options o;
	long without, with, with_map;
	uint32_t i;

	(void)state;
	if (ts_sanitized())
		skip(); /* the sanitizers' own fork handlers and shadow memory fault pages too */
	assert_int_equal(task_count(), 1);
	without = faults_of_rounds();
	xfdr_options_default(&o); /* the default pool: what a program gets */
	o.output = ts_dir;
	o.flush_at_exit = 0;
	assert_int_equal(xfdr_init(&o), 0);
	assert_int_equal(xfdr_start(), 0);
	xfdr_enter(FID); /* the parent records: it holds a buffer, a slot, a signal stack */
	xfdr_exit(FID);
	/* The default pool is populated by xfdr_init() itself: the program keeps its one thread. */
	assert_int_equal(task_count(), 1);
	with = faults_of_rounds();
	print_message("minor faults over %d rounds: %ld without xfdr, %ld recording\n", ROUNDS,
		      without, with);
	without = baseline_again(without, 0);
	/*
	 * One fault a round is the child mapping in the code page of xfdr's atfork handler (code
	 * is not copied at fork, it faults in from the page cache); no page of our data is copied
	 * (about 20 faults a round before).
	 */
	assert_true(with <= without + ROUNDS + ROUNDS / 4);
	/* A -finstrument-functions program meets its functions: the hooks give them ids. */
	for (i = 0; i < HOOKED_FUNCTIONS; i++) {
		__cyg_profile_func_enter(synth_fn(i), NULL);
		__cyg_profile_func_exit(synth_fn(i), NULL);
	}
	assert_int_equal(task_count(), 1);
	with_map = faults_of_rounds();
	print_message("minor faults over %d rounds: %ld once %d functions have ids\n", ROUNDS,
		      with_map, HOOKED_FUNCTIONS);
	without = baseline_again(without, 0);
	assert_true(with_map <= without + ROUNDS + ROUNDS / 4);
	xfdr_stop();
}

/* The map's tables grow on the thread that inserts (fnmap.c), never on a thread of theirs. */
static void function_map_keeps_one_thread(void **state)
{
	uint32_t i, refused = 0;

	(void)state;
	assert_int_equal(task_count(), 1);
	assert_int_equal(__libc_single_threaded, 1);
	for (i = 0; i < MAP_FUNCTIONS; i++)
		refused += fnmap_id_uncached(synth_fn(i)) == FNMAP_ID_NONE;
	assert_int_equal(refused, 0);
	assert_int_equal(task_count(), 1);
	/* Not even a thread that came and went: glibc would have left its fast paths for good. */
	assert_int_equal(__libc_single_threaded, 1);
}

/*
 * backing=file keeps its live .map current without a thread (the recording threads append to
 * it): the program keeps its one thread, after new threads' names, functions and the rate
 * (known ~25 ms after init) reached the map, and its silent fork children cost what they do
 * with memory backing.
 */
static void file_backing_keeps_one_thread(void **state)
{
	struct xfdr_options o;
	long without, with;
	uint32_t i;

	(void)state;
	assert_int_equal(task_count(), 1);
	assert_int_equal(__libc_single_threaded, 1);
	without = faults_of_rounds();
	xfdr_options_default(&o);
	o.output = ts_dir;
	o.flush_at_exit = 0;
	o.backing = XFDR_BACKING_FILE;
	o.buffer_size = 4096; /* small: the loop below takes several buffers */
	assert_int_equal(xfdr_init(&o), 0);
	assert_int_equal(xfdr_start(), 0);
	nanosleep(&(struct timespec){0, 40000000}, NULL);
	for (i = 0; i < 2000; i++) {
		__cyg_profile_func_enter(synth_fn(MAP_FUNCTIONS + i), NULL);
		__cyg_profile_func_exit(synth_fn(MAP_FUNCTIONS + i), NULL);
	}
	assert_int_equal(task_count(), 1);
	assert_int_equal(__libc_single_threaded, 1);
	with = faults_of_rounds();
	print_message("minor faults over %d rounds: %ld without xfdr, %ld with backing=file\n",
		      ROUNDS, without, with);
	if (!ts_sanitized())
		assert_true(with <= baseline_again(without, 0) + ROUNDS + ROUNDS / 4);
	xfdr_stop();
}

/*
 * In a program that has had a thread, fork() runs xfdr's atfork handlers in full (another
 * thread could be inside the runtime). Until the function map is set up they hold nothing and
 * write no page of ours: the same bound as with one thread. Once it is, they must hold the
 * map's locks and urcu-bp's across fork() (fnmap.h), and the child must release them.
 */
static void threaded_silent_child_faults(void **state)
{
	struct xfdr_options o;
	struct faults before, recording;
	long without, with_map;
	pthread_t t;
	uint32_t i;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, no_work, NULL), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(__libc_single_threaded, 0);
	before = faults_of_batches();
	without = faults_total(before);
	xfdr_options_default(&o);
	o.output = ts_dir;
	o.flush_at_exit = 0;
	assert_int_equal(xfdr_init(&o), 0);
	assert_int_equal(xfdr_start(), 0);
	xfdr_enter(FID);
	xfdr_exit(FID);
	recording = faults_of_batches();
	print_message(
	    "threaded: minor faults over %d rounds: %ld + %ld (parent + children) without "
	    "xfdr, %ld + %ld recording\n",
	    ROUNDS, before.self, before.kids, recording.self, recording.kids);
	without = baseline_again(without, 1);
	/*
	 * One fault a round is the child mapping in the code page of the atfork handler, which
	 * it runs in full here; a clean-clone CI run counted two a round (80 over 40, parent and
	 * children not told apart then: the split is printed since). A page of our data copied
	 * at every fork costs more (about 20 a round before).
	 */
	assert_true(faults_total(recording) <= without + 2 * ROUNDS + ROUNDS / 4);
	for (i = 0; i < HOOKED_FUNCTIONS; i++) {
		__cyg_profile_func_enter(synth_fn(i), NULL);
		__cyg_profile_func_exit(synth_fn(i), NULL);
	}
	with_map = faults_of_rounds();
	print_message("threaded: minor faults over %d rounds: %ld once %d functions have ids\n",
		      ROUNDS, with_map, HOOKED_FUNCTIONS);
	without = baseline_again(without, 1);
	/*
	 * urcu-bp's hooks write its own pages and the child runs its code: 4 faults a round
	 * measured on an AMD EPYC VM, 7 on a CI machine (19 when our locks were on pages fork()
	 * copies and the child bound urcu_bp_after_fork_child() lazily). Most are the child
	 * faulting in code pages (fork() copies no page table of a file mapping): how many depends
	 * on which variants of libc's string functions the CPU selects and on the kernel's
	 * fault-around, so the bound sits between the measured and the old.
	 */
	assert_true(with_map <= without + 10 * ROUNDS);
	xfdr_stop();
}

enum { BATCH = 8 };
static pthread_barrier_t batch_barrier;
static int batch_records;

/* All BATCH threads live at once (each holds a slot of its own), recording or not. */
static void *batch_thread(void *arg)
{
	if (batch_records) {
		xfdr_enter(FID);
		xfdr_exit(FID);
	}
	pthread_barrier_wait(&batch_barrier);
	return arg;
}

static void run_batch(int records)
{
	pthread_t t[BATCH];
	int i;

	batch_records = records;
	assert_int_equal(pthread_barrier_init(&batch_barrier, NULL, BATCH), 0);
	for (i = 0; i < BATCH; i++)
		assert_int_equal(pthread_create(&t[i], NULL, batch_thread, NULL), 0);
	for (i = 0; i < BATCH; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	pthread_barrier_destroy(&batch_barrier);
}

/*
 * Threads that record add no mapping for fork() to copy: their alternate stacks' guard pages
 * are markers in one mapping (altstack.c), where they were PROT_NONE pages between mappings
 * made readable one stack at a time: two more mappings a thread. Needs guard markers (Linux
 * 6.13).
 */
static void recording_threads_add_no_mappings(void **state)
{
	struct xfdr_options o;
	int before, after;
	void *probe;

	(void)state;
	probe = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(probe != MAP_FAILED);
	if (madvise(probe, 4096, 102 /* MADV_GUARD_INSTALL */)) {
		munmap(probe, 4096);
		skip();
	}
	munmap(probe, 4096);
	run_batch(0); /* glibc keeps their stacks for the next threads: no new mapping of its */
	xfdr_options_default(&o);
	o.output = ts_dir;
	o.flush_at_exit = 0;
	assert_int_equal(xfdr_init(&o), 0);
	assert_int_equal(xfdr_start(), 0);
	xfdr_enter(FID); /* this thread's alternate stack: the region exists */
	xfdr_exit(FID);
	before = proc_maps_count();
	assert_true(before > 0);
	run_batch(1);
	after = proc_maps_count();
	print_message("mappings: %d before %d recording threads, %d after\n", before, BATCH, after);
	assert_int_equal(after, before);
	xfdr_stop();
}

/*
 * fork() walks the page tables of a mapping with guard markers over its whole span: the
 * mapping that holds the first threads' alternate stacks spans 32 of them, not thread_max
 * (4096 by default: 272 MiB, about 3 us more a fork on the target VMs).
 */
static void alt_stacks_span_the_slots_in_use(void **state)
{
	struct xfdr_options o;
	uintptr_t start, end;
	stack_t ss;

	(void)state;
	if (ts_sanitized())
		skip(); /* sanitizers give threads stacks of their own, which are kept */
	xfdr_options_default(&o);
	o.output = ts_dir;
	o.flush_at_exit = 0;
	assert_true(o.thread_max > 64);
	assert_int_equal(xfdr_init(&o), 0);
	assert_int_equal(xfdr_start(), 0);
	xfdr_enter(FID); /* this thread takes its alternate stack */
	xfdr_exit(FID);
	assert_int_equal(sigaltstack(NULL, &ss), 0);
	assert_false(ss.ss_flags & SS_DISABLE);
	assert_int_equal(proc_maps_find(ss.ss_sp, &start, &end), 0);
	print_message("alternate stack's mapping: %lu KiB\n", (unsigned long)(end - start) / 1024);
	assert_true(end - start <= 32 * ((size_t)ALTSTACK_BYTES + 4096));
	xfdr_stop();
}

/*
 * The thread table of the default thread_max adds no mapping for fork() to copy, nor a
 * page-table page of its own: it lies in .bss (thread_slots.h), which fork() copies anyway.
 * It was a mapping of its own, with a page-table page for its first slots.
 */
static void thread_table_lives_in_bss(void **state)
{
	extern char _end[]; /* the linker's: the end of .bss */
	struct xfdr_options o;
	uintptr_t start, end, bss_end = ((uintptr_t)_end + 4095) & ~(uintptr_t)4095;

	(void)state;
	xfdr_options_default(&o);
	o.output = ts_dir;
	o.flush_at_exit = 0;
	assert_true(o.thread_max <= THREAD_SLOTS_BSS);
	assert_int_equal(xfdr_init(&o), 0);
	assert_int_equal(xfdr_start(), 0);
	xfdr_enter(FID); /* this thread has its slot */
	xfdr_exit(FID);
	assert_ptr_equal(thread_table.slots, thread_slots_bss);
	assert_true(rec_self.slot >= thread_slots_bss &&
		    rec_self.slot < thread_slots_bss + THREAD_SLOTS_BSS);
	assert_int_equal(proc_maps_find(rec_self.slot, &start, &end), 0);
	print_message("slot %u in [%#lx, %#lx), .bss ends at %#lx\n", rec_self.slot->index,
		      (unsigned long)start, (unsigned long)end, (unsigned long)bss_end);
	assert_int_equal(end, bss_end);
	xfdr_stop();
}

/*
 * The pages fork children get zeroed, the session word's and the symbol layer's (advised at
 * init), are one mapping: each page advised alone splits .bss around it, two more mappings for
 * every fork() to copy.
 */
static void wiped_pages_are_one_mapping(void **state)
{
	uintptr_t start, end;

	(void)state;
	assert_int_equal(proc_maps_find(&rt_state, &start, &end), 0);
	if ((uintptr_t)&symbols_fork_page < start || (uintptr_t)&symbols_fork_page >= end)
		fail_msg("rt_state's mapping [%#lx, %#lx) does not hold symbols_fork_page (%p)",
			 (unsigned long)start, (unsigned long)end, (void *)&symbols_fork_page);
	assert_int_equal(end - start, 2 * 4096);
}

/* The threaded case runs in a process of its own: this one must keep its one thread. */
static void threaded_program_silent_child(void **state)
{
	char *argv[] = {"test_runtime_fork_cost", "--threaded", NULL};
	struct child_spec spec = {.argv = argv, .program = "/proc/self/exe", .timeout_s = 300};
	struct child_result r;

	(void)state;
	if (ts_sanitized())
		skip(); /* the sanitizers' own fork handlers and shadow memory fault pages too */
	child_run(&spec, &r);
	assert_int_equal(r.status, 0);
	child_result_free(&r);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(silent_child_faults_no_page_of_ours, stop_session),
	    cmocka_unit_test(function_map_keeps_one_thread),
	    cmocka_unit_test_teardown(file_backing_keeps_one_thread, stop_session),
	    cmocka_unit_test(threaded_program_silent_child),
	};
	const struct CMUnitTest threaded[] = {
	    cmocka_unit_test_teardown(threaded_silent_child_faults, stop_session),
	    cmocka_unit_test_teardown(recording_threads_add_no_mappings, stop_session),
	    cmocka_unit_test_teardown(alt_stacks_span_the_slots_in_use, stop_session),
	    cmocka_unit_test_teardown(thread_table_lives_in_bss, stop_session),
	    cmocka_unit_test(wiped_pages_are_one_mapping),
	};

	if (argc == 2 && !strcmp(argv[1], "--baseline"))
		return baseline_main(0);
	if (argc == 2 && !strcmp(argv[1], "--baseline-threaded"))
		return baseline_main(1);
	if (argc == 2 && !strcmp(argv[1], "--threaded"))
		return cmocka_run_group_tests(threaded, ts_group_setup, ts_group_teardown);
	return cmocka_run_group_tests(tests, ts_group_setup, ts_group_teardown);
}
