/*
 * runtime/control/lifecycle.c - the life cycle of the recorder through rt_state.ctl: init, start,
 * stop, flush, the start at load with XFDR_OPTIONS, the flush at exit, and fork children.
 *
 * rt_state.ctl (session.h) changes only by compare-exchange, so concurrent or re-entrant calls get
 * a status code instead of a lock: init and flush exclude each other and themselves, start
 * and stop only flip the recording session in the low half.
 *
 * The fatal path (crash, terminate: signals.c, one thread at a time) must leave a trace however
 * the other flush is doing: rt_flush_fatal() takes the ordinary flush when it is free, and
 * otherwise flushes beside it in the pool's reserve flush context (pool_types.h), into a file
 * of its own, under a flag of this file's (CTL_FATAL_FLUSH_RUNNING) that keeps init out.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h> /* snprintf */
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>
#include <unistd.h>
#if __has_include(<sys/single_threaded.h>)
#include <sys/single_threaded.h>
#define PROCESS_SINGLE_THREADED() (__libc_single_threaded != 0)
#else
#define PROCESS_SINGLE_THREADED() 0 /* unknown: take every lock around fork() */
#endif

#include "runtime/base/compiler.h"
#include "runtime/base/monotonic.h"
#include "runtime/base/newfile.h"
#include "runtime/base/print.h"
#include "runtime/control/config.h"
#include "runtime/control/options.h"
#include "runtime/control/wiped_pages.h"
#include "runtime/flush/flush.h"
#include "runtime/flush/livemap.h"
#include "runtime/flush/mapfile.h"
#include "runtime/flush/names_directory.h"
#include "runtime/flush/output.h"
#include "runtime/flush/signals.h"
#include "runtime/flush/stream.h"
#include "runtime/hooks/xray.h"
#include "runtime/pool/pool.h"
#include "runtime/record/clock.h"
#include "runtime/record/recorder.h"
#include "runtime/record/session.h"
#include "runtime/record/thread.h"
#include "runtime/record/thread_fork.h"
#include "runtime/symbols/fnfilter.h"
#include "runtime/symbols/fnmap.h"
#include "runtime/symbols/patterns.h"
#include "runtime/symbols/unload.h"
#include "xfdr/xfdr.h"

/* How long a new session waits for threads still inside the runtime. */
#define INIT_QUIESCE_MS 1000u
/* How long the fatal path's flush waits for an xfdr_init() that is setting the pool up. */
#define FATAL_INIT_WAIT_MS 2000u

/*
 * In rt_state.ctl's flags beside session.h's, and known to this file alone: the fatal path
 * flushes in the reserve context. Init waits for it (the flush reads the pool init would set
 * up again); flushes in the ordinary context do not (they write in their own).
 */
#define CTL_FATAL_FLUSH_RUNNING 8u
_Static_assert(!(CTL_FATAL_FLUSH_RUNNING &
		 (CTL_INITIALIZED | CTL_INIT_RUNNING | CTL_FLUSH_RUNNING)),
	       "a flag of its own");

uint32_t rt_fork_wipes;
struct rt_config rt_cfg;

static char env_store[4096];	     /* XFDR_OPTIONS, split in place; string options point here */
static struct xfdr_options env_opts; /* the defaults, then XFDR_OPTIONS as last parsed */
static opt_keys env_keys;	     /* the keys XFDR_OPTIONS set */
static uint64_t env_parsed_hash;     /* of the text last parsed; 0: none yet */
static pthread_mutex_t env_lock = PTHREAD_MUTEX_INITIALIZER;
/* The recorder runs as XFDR_OPTIONS set it up at load; the program has not called init yet. */
static uint32_t env_owned;
static char cfg_output[PATH_MAX]; /* the output setting of the running session */
static uint32_t next_session = 1;
static int exit_registered; /* the atexit handler is installed (init only) */
/* What a fork child needs of its parent (not in rt_state, which the child finds zeroed). */
static uint32_t cfg_ready;	    /* rt_cfg holds the options of a complete init */
static uint32_t recording_wanted;   /* xfdr_start() was called last, not xfdr_stop() */
static uint32_t child_init_pending; /* an adopted child sets its recorder up at xfdr_start() */
static uint32_t rt_pid; /* the process the recorder was set up in: a fork child's parent */

/* Set flag bits in rt_state.ctl if none of `forbidden` is set and `need` all are. */
static int ctl_acquire(uint32_t need, uint32_t forbidden, uint32_t set, int want_off,
		       uint64_t *seen)
{
	uint64_t c = xfdr_load_acquire(&rt_state.ctl);

	for (;;) {
		uint32_t f = CTL_FLAGS(c);

		*seen = c;
		if ((f & need) != need)
			return -EINVAL;
		if (f & forbidden)
			return -EBUSY;
		if (want_off && CTL_SESSION(c) != SESSION_OFF)
			return -EBUSY;
		if (xfdr_cas(&rt_state.ctl, &c, CTL_MAKE(f | set, CTL_SESSION(c))))
			return 0;
	}
}

static void ctl_clear(uint32_t bits)
{
	__atomic_fetch_and(&rt_state.ctl, ~CTL_MAKE(bits, 0), __ATOMIC_ACQ_REL);
}

static void rt_exit_flush(void);
static void on_sanitizer_death(void (*callback)(void));
static int rt_stop_from_signal(void);
static void rt_fork_prepare(void);
static void rt_fork_parent(void);
static void rt_fork_child(void);
static uint32_t rt_adopt_on_event(void);
static uint32_t rt_adopt(int init_now);
static void rt_enter(int init_now);

/* The elision threshold in ticks: the calibration may spin up to 20 ms, only when asked. */
static void elision_setup(uint64_t us)
{
	uint64_t ticks = 0;

	if (us) {
		uint64_t hz = clock_tsc_hz();

		ticks = hz / 1000000u * us + hz % 1000000u * us / 1000000u;
	}
	xfdr_store_relaxed(&rec_elide_us, us);
	xfdr_store_relaxed(&rec_elide_ticks, ticks);
}

/*
 * The function filters: include= and exclude= are decided once per function and kept with it
 * (fnfilter.h), so the first init that gives them fixes them; max_depth applies to each
 * session.
 */
static void filters_setup(const struct xfdr_options *o)
{
	if (fnfilter_configure(o->include, o->exclude) == -EBUSY) {
		char text[PATTERNS_TEXT_MAX * 2 + 200];
		struct pr_buf b = PR_BUF_INIT(text);

		pr_str(&b,
		       "xfdr_init: include= and exclude= are fixed by the first xfdr_init() that "
		       "set them; keeping include=\"");
		pr_str(&b, fnfilter_text(FNFILTER_INCLUDE));
		pr_str(&b, "\" exclude=\"");
		pr_str(&b, fnfilter_text(FNFILTER_EXCLUDE));
		pr_str(&b, "\"");
		pr_line(&b);
	}
	xfdr_store_relaxed(&rec_depth_max, (uint32_t)o->max_depth);
}

/* FNV-1a, never 0: tells whether XFDR_OPTIONS changed since it was parsed. */
static uint64_t env_hash(const char *text)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (text && *text)
		h = (h ^ (unsigned char)*text++) * 0x100000001b3ull;
	return h | 1;
}

/*
 * env_text - XFDR_OPTIONS, or NULL in a process with elevated privileges (AT_SECURE: set-user-ID,
 * set-group-ID, file capabilities): whoever runs it must not choose where it writes or what.
 * There, a set XFDR_OPTIONS gets one stderr line, once.
 */
static const char *env_text(void)
{
	static int told;
	const char *text = secure_getenv("XFDR_OPTIONS");

	if (!text && getauxval(AT_SECURE) && getenv("XFDR_OPTIONS") &&
	    !__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED)) {
		char line[200];
		struct pr_buf b = PR_BUF_INIT(line);

		pr_str(&b,
		       "XFDR_OPTIONS ignored: this program runs with elevated privileges "
		       "(set-user-ID, set-group-ID or file capabilities); its own options apply");
		pr_line(&b);
	}
	return text;
}

/*
 * env_options - the defaults with XFDR_OPTIONS applied, copied into *out (its output string into
 * out_store, n bytes) with the keys it set in *keys. Parsed again only when the text changed (a
 * program may setenv() before its xfdr_init()), so each warning about it prints once however
 * often init runs. The copy is taken under the lock: a concurrent re-parse rewrites the shared
 * store the parsed strings point into.
 */
static void env_options(struct xfdr_options *out, opt_keys *keys, char *out_store, size_t n)
{
	const char *text = env_text();
	uint64_t h = env_hash(text);

	pthread_mutex_lock(&env_lock);
	if (h != env_parsed_hash) {
		env_parsed_hash = h;
		xfdr_options_default(&env_opts);
		/*
		 * Recording set up from the environment is the user's, not the program's: SIGTERM
		 * and SIGINT flush by default. A program that calls xfdr_init() with its own
		 * options owns its signals, and asks for it.
		 */
		env_opts.flush_on_terminate = 1;
		opt_parse(&env_opts, text, "XFDR_OPTIONS", env_store, sizeof(env_store), &env_keys);
	}
	*out = env_opts;
	*keys = env_keys;
	snprintf(out_store, n, "%s", env_opts.output ? env_opts.output : "");
	out->output = out_store;
	pthread_mutex_unlock(&env_lock);
}

XFDR_API int xfdr_options_check(const char *text)
{
	static char store[sizeof(env_store)]; /* parse_lock: the strings point into it */
	static pthread_mutex_t parse_lock = PTHREAD_MUTEX_INITIALIZER;
	struct xfdr_options o;
	int problems;

	pthread_mutex_lock(&parse_lock);
	xfdr_options_default(&o);
	o.flush_on_terminate = 1; /* as env_options() reads XFDR_OPTIONS */
	problems = opt_parse(&o, text, "XFDR_OPTIONS", store, sizeof(store), NULL);
	if (!problems && opt_check(&o))
		problems = 1;
	pthread_mutex_unlock(&parse_lock);
	return problems;
}

/*
 * The program's xfdr_init() while the recorder XFDR_OPTIONS started at load runs: what was
 * recorded since load is kept, and so are the settings. Options of the program that would
 * have changed them are named once, so that nobody wonders why they did not apply.
 */
static void report_unapplied(const struct xfdr_options *wanted)
{
	struct xfdr_options running = rt_cfg.options;
	char text[1024];
	struct pr_buf b = PR_BUF_INIT(text);

	running.output = cfg_output;
	pr_str(&b, "xfdr_init: recording was started at load by XFDR_OPTIONS; keeping its "
		   "settings, not the program's ");
	if (opt_print_differences(&b, wanted, &running, opt_key("start")))
		pr_line(&b);
}

static int rt_flush_from_signal(char *path_out, size_t path_bytes);
static int rt_flush_fatal(char *path_out, size_t path_bytes);

static enum pool_mode pool_mode_of(int mode)
{
	switch (mode) {
	case XFDR_MODE_BOUNDED:
		return POOL_BOUNDED;
	case XFDR_MODE_STREAM:
		return POOL_STREAM;
	default:
		return POOL_RING;
	}
}

/*
 * The pool, and with backing=file its live files "<prefix>-<pid>-live.xray" (header and
 * buffers) and ".xray.map" (kept current for `xfdr recover`).
 */
static int pool_and_backing_setup(const struct xfdr_options *o, uint32_t session)
{
	char live[PATH_MAX], map[PATH_MAX];
	struct pr_buf lb = PR_BUF_INIT(live), mb = PR_BUF_INIT(map);
	int file = o->backing == XFDR_BACKING_FILE;
	uint64_t pid = (uint64_t)getpid();
	int rc;

	livemap_stop();
	stream_stop(); /* its writer reads the pool */
	if (file &&
	    (output_live_name(&lb, pid, ".xray") || output_live_name(&mb, pid, ".xray.map")))
		return -ENAMETOOLONG;
	rc = pool_setup(o->buffer_size, (uint32_t)o->buffer_max, session, pool_mode_of(o->mode),
			file ? live : NULL);
	if (rc)
		livemap_discard(); /* the last session's live .map: its pool is gone */
	else
		rc = livemap_start(file ? map : NULL);
	if (!rc && o->mode == XFDR_MODE_STREAM)
		rc = stream_start(o->stream_max_bytes, (uint32_t)o->stream_max_files);
	return rc;
}

static int signals_setup(const struct xfdr_options *o)
{
	struct signal_plan plan = {
	    .flush_signal = o->flush_signal,
	    .on_terminate = o->flush_on_terminate,
	    .on_crash = o->flush_on_crash,
	    .flush = rt_flush_from_signal,
	    .flush_fatal = rt_flush_fatal,
	    .stop = rt_stop_from_signal,
	    .nothing_recorded = flush_nothing_recorded,
	};

	return signals_install(&plan);
}

/*
 * An output directory that is missing or not writable is named now, not first at the flush
 * at exit after a long run. Recording goes on: the directory may appear (or be made
 * writable) before a flush, and a flush that still cannot write names the file then.
 */
static void report_output_dir(void)
{
	char text[PATH_MAX + 200];
	struct pr_buf b = PR_BUF_INIT(text);
	int rc = output_check_dir();

	if (!rc)
		return;
	pr_str(&b, "output directory ");
	pr_str(&b, flush_output.dir[0] ? flush_output.dir : "./");
	pr_str(&b, ": ");
	pr_str(&b, pr_errno_name(rc));
	pr_str(&b, "; recording goes on, but a flush cannot write there until this is fixed");
	pr_line(&b);
}

/*
 * Arm the zeroing of rt_state (and the symbol layer's fork page) in fork children, once (a
 * child's mapping keeps it, so its own children are zeroed too): armed first, so that this
 * process never looks forked.
 */
static void fork_wipe_arm(void)
{
	xfdr_store_relaxed(&rt_state.armed, 1u);
	if (!rt_fork_wipes && wiped_pages_arm())
		xfdr_store_relaxed(&rt_fork_wipes, 1u);
}

/*
 * fork_child: the set-up of a fork child's own recorder (rt_adopt()): it keeps the output
 * settings (its options have none), and has no other thread to wait for (its one thread may be
 * inside a hook that is setting it up).
 */
static int rt_init(const struct xfdr_options *o, int fork_child)
{
	uint64_t seen;
	uint32_t session;
	int rc;

	if (opt_check(o))
		return -EINVAL;
	rc = ctl_acquire(0, CTL_INIT_RUNNING | CTL_FLUSH_RUNNING | CTL_FATAL_FLUSH_RUNNING,
			 CTL_INIT_RUNNING, 1, &seen);
	if (rc)
		return rc;
	xfdr_store_relaxed(&cfg_ready, 0u);
	newfile_set_mode(o->file_mode ? (unsigned)o->file_mode : OPT_DEFAULT_FILE_MODE);
	rc = thread_table_setup((uint32_t)o->thread_max);
	if (rc)
		goto out;
	names_directory_publish();
	/* Threads that began an event before the last stop may still be writing. */
	rc = fork_child ? 0 : thread_quiesce(INIT_QUIESCE_MS);
	if (rc)
		goto out;
	if (!fork_child) {
		xfdr_store_relaxed(&rt_pid, (uint32_t)getpid());
		map_note_parent((uint32_t)getppid());
		rc = output_configure(o->output, o->per_thread_files);
		if (rc)
			goto out;
		{
			struct pr_buf ob = PR_BUF_INIT(cfg_output);

			pr_str(&ob, o->output ? o->output : "");
			pr_cstr(&ob);
		}
	}
	session = next_session++;
	if (next_session == SESSION_OFF)
		next_session = 1;
	rc = pool_and_backing_setup(o, session);
	if (rc) {
		ctl_clear(CTL_INITIALIZED);
		goto out;
	}
	/* After the pool: a backing=file pool that cannot be made there has said why. */
	if (!fork_child)
		report_output_dir();
	thread_table_reset();
	rt_cfg.flush_at_exit = o->flush_at_exit;
	rt_cfg.options = *o;
	rt_cfg.options.output = NULL; /* output_configure() kept what it needs */
	clock_init(o->clock);
	pool_locator_set_invariant_tsc(clock_invariant_tsc());
	elision_setup(o->func_duration_threshold_us);
	filters_setup(o);
	/* what the filters kept, not the caller's strings, which may go */
	rt_cfg.options.include = fnfilter_text(FNFILTER_INCLUDE);
	rt_cfg.options.exclude = fnfilter_text(FNFILTER_EXCLUDE);
	xfdr_store_relaxed(&rt_state.unflushed, 0);
	/* Here rather than in xfdr_start(), which must stay async-signal-safe. */
	if (!exit_registered) {
		exit_registered = 1;
		atexit(rt_exit_flush);
		on_sanitizer_death(rt_exit_flush);
		pthread_atfork(rt_fork_prepare, rt_fork_parent, rt_fork_child);
		rec_on_fork_child(rt_adopt_on_event);
	}
	fork_wipe_arm();
	xfdr_store_relaxed(&child_init_pending, 0u);
	xfdr_store_release(&cfg_ready, 1u);
	__atomic_fetch_or(&rt_state.ctl, CTL_MAKE(CTL_INITIALIZED, 0), __ATOMIC_ACQ_REL);
	/* After the pool exists: a signal that arrives from now on finds something to flush. */
	rc = signals_setup(o);
out:
	ctl_clear(CTL_INIT_RUNNING);
	if (rc == -ENOMEM || rc == -ENAMETOOLONG || rc == -EBUSY) {
		char text[160];
		struct pr_buf b = PR_BUF_INIT(text);

		pr_str(&b, "xfdr_init failed: ");
		pr_str(&b, pr_errno_name(rc));
		pr_line(&b);
	}
	if (!rc && o->start)
		rc = xfdr_start();
	return rc;
}

XFDR_API int xfdr_init(const struct xfdr_options *o)
{
	char env_output[sizeof(env_store)];
	struct xfdr_options env, wanted;
	opt_keys keys;

	rt_enter(0);
	env_options(&env, &keys, env_output, sizeof(env_output));
	wanted = o ? *o : env;
	/* What the user says at run time wins over what the program was built to ask. */
	if (o)
		opt_overlay(&wanted, &env, keys);
	if (xfdr_cas(&env_owned, &(uint32_t){1}, 0u)) {
		report_unapplied(&wanted);
		return 0;
	}
	return rt_init(&wanted, 0);
}

/*
 * A sanitizer's runtime (ASan, TSan, UBSan, LSan) ends the process after its report by a raw
 * exit_group system call: no atexit handler runs, no _exit() is called. That is its way out of
 * an error it found, and of a crash: its SIGSEGV handler is the program's own to xfdr, and runs
 * first (prog_handler.c). The one hook it calls on the way is its death callback. One slot: a
 * program that sets its own later replaces this one.
 */
static void on_sanitizer_death(void (*callback)(void))
{
	void (*set_callback)(void (*)(void));

	*(void **)&set_callback = dlsym(RTLD_DEFAULT, "__sanitizer_set_death_callback");
	if (set_callback)
		set_callback(callback);
}

/* The flush at exit proper, and its line on stderr. */
static __attribute__((noinline)) void exit_flush(void)
{
	char path[PATH_MAX], text[PATH_MAX + 64];
	struct pr_buf b = PR_BUF_INIT(text);
	int rc;

	xfdr_stop();
	/*
	 * Everything is in complete files now, or nothing was ever recorded (no file for an
	 * uninstrumented program the runtime was preloaded into): backing=file's live files are
	 * not needed.
	 */
	if (!xfdr_load_relaxed(&rt_state.unflushed)) {
		livemap_discard();
		return;
	}
	if (flush_nothing_recorded()) {
		livemap_discard();
		pr_str(&b, "recorded nothing in pid ");
		pr_u64(&b, (uint64_t)getpid());
		pr_str(&b, ": no trace written");
		pr_record(&b);
		return;
	}
	rc = xfdr_flush(path, sizeof(path));
	if (rc && rc != -EBUSY && rc != -EINVAL) {
		return; /* the flush named the file and the error */
	} else if (rc) {
		pr_str(&b, "flush at exit failed: ");
		pr_str(&b, pr_errno_name(rc));
		pr_line(&b);
	} else {
		livemap_discard();
		pr_str(&b, "wrote ");
		pr_str(&b, path);
		pr_note(&b);
	}
}

/*
 * atexit, and a sanitizer's death: stop, and write what was recorded since the last complete
 * flush. Once: LeakSanitizer's check at exit runs after our atexit handler and may die.
 */
static void rt_exit_flush(void)
{
	static uint32_t done;

	/* A fork child that recorded nothing has nothing to write, and no file of its own. */
	if (rt_forked() || __atomic_exchange_n(&done, 1u, __ATOMIC_ACQ_REL))
		return;
	/*
	 * exit() inside the program's crash handler: the crash, flushed as a crash. On whatever
	 * stack that handler had (a sanitizer's report runs on its own small alternate stack):
	 * nothing of ours is on it below the crash path's own frames.
	 */
	if (signals_exit_in_crash_handler())
		return;
	fnfilter_report_unmatched();
	if (rt_cfg.flush_at_exit)
		exit_flush();
}

/*
 * fork_holds: the prepare handler took locks, so the parent and child ones release them. It
 * takes none when the thread in fork() is the only one the process ever had (glibc's
 * __libc_single_threaded; xfdr's own threads count, see pool_memory.c): no other thread can
 * hold a lock the child would wait for. Nor when the function map was never set up
 * (fnmap_fork_unused(), which holds its set-up back until the parent handler): then no thread
 * can be inside it, and none naming an unloaded library either (unload.c names ids, and there
 * are none). Taking none, the handlers write no page that fork() made copy-on-write: a child
 * that exits or execs at once makes neither process copy a page of ours (the first write to
 * each such page is a page fault, a few microseconds on the target VMs). Written only when it
 * changes, for the same reason.
 */
static uint32_t fork_holds;

/*
 * fork(): the child records alone, into its own files. The parent's other threads do not run
 * in the child, and its buffers hold the parent's history, written by the parent's flushes.
 * The kernel zeroes rt_state in the child and leaves the pool out (session.h, pool_memory.c):
 * whatever runs first there (a program's own atfork handler, code after _Fork() or clone())
 * finds no session and cannot reach the parent's buffers. The child adopts its recorder on
 * its first event or call of the API (rt_adopt()): one that execs or exits first makes nothing.
 * Where the kernel cannot zero the page (rt_fork_wipes 0), the atfork child handler adopts.
 */
static void rt_fork_prepare(void)
{
	uint32_t holds = !PROCESS_SINGLE_THREADED() && !fnmap_fork_unused();

	if (fork_holds != holds)
		fork_holds = holds;
	thread_before_fork();
	if (!holds)
		return;
	unload_before_fork();
	fnmap_before_fork();
}

/* The forking slot stays remembered: see thread_fork.h. */
static void rt_fork_parent(void)
{
	fnmap_after_fork_parent();
	if (fork_holds)
		unload_after_fork_parent();
}

/* liburcu's state must be set right at once (its prepare handler blocked every signal). */
static void rt_fork_child(void)
{
	if (fork_holds) {
		fnmap_after_fork_child();
		unload_after_fork_child();
	}
	if (!xfdr_load_relaxed(&rt_fork_wipes))
		rt_adopt(1);
}

/* The child's own recorder, with its parent's options and output, recording. */
static int child_init(uint32_t parent_session)
{
	struct xfdr_options o = rt_cfg.options;
	int rc;

	if (!xfdr_load_relaxed(&child_init_pending))
		return -EINVAL;
	o.start = 1;
	rc = rt_init(&o, 1);
	/* The calls open at fork() go on in the child: its first buffer begins with them. */
	if (!rc)
		thread_self_keep_stack(parent_session, xfdr_load_relaxed(&rt_pool.session));
	return rc;
}

/*
 * rt_adopt - in a fork child: forget the parent's recorder without touching what the parent
 * shares with it, then, init_now and the parent recording, set up the child's own. A child of
 * a parent that was not recording sets it up at xfdr_start(). Returns the session recorded now
 * or SESSION_OFF. Context: the child's one thread, on its first event (inside a hook: nothing
 * waits for its guard) or call of the API, or the atfork child handler.
 */
static uint32_t rt_adopt(int init_now)
{
	uint32_t parent_session = xfdr_load_relaxed(&rt_pool.session);

	if (__atomic_exchange_n(&rt_state.adopting, 1u, __ATOMIC_ACQUIRE))
		return SESSION_OFF; /* an event of a signal handler while the child adopts */
	map_note_parent(xfdr_load_relaxed(&rt_pid));
	xfdr_store_relaxed(&rt_pid, (uint32_t)getpid());
	output_after_fork();
	livemap_forget_after_fork();
	stream_forget_after_fork();
	pool_forget_after_fork();
	thread_table_after_fork();
	xfdr_store_relaxed(&rt_state.unflushed, 0);
	xfdr_store_release(&rt_state.ctl, CTL_MAKE(0, SESSION_OFF));
	xfdr_store_relaxed(&rt_state.armed, 1u);
	xfdr_store_relaxed(&child_init_pending, xfdr_load_relaxed(&cfg_ready));
	if (init_now && xfdr_load_relaxed(&recording_wanted))
		child_init(parent_session);
	xfdr_store_release(&rt_state.adopting, 0u);
	return session_recording();
}

static uint32_t rt_adopt_on_event(void)
{
	return rt_adopt(1);
}

/*
 * First thing in every call of the API but a flush: a fork child adopts (see rt_adopt()), and
 * a session word still zero from before rt_load() (another constructor called us first) says
 * "not recording".
 */
static void rt_enter(int init_now)
{
	uint64_t none = CTL_MAKE(0, SESSION_NONE);

	if (rt_forked())
		rt_adopt(init_now);
	else if (xfdr_load_relaxed(&rt_state.ctl) == none)
		xfdr_cas(&rt_state.ctl, &none, CTL_MAKE(0, SESSION_OFF));
}

XFDR_API int xfdr_start(void)
{
	uint64_t c;

	rt_enter(1);
	if (xfdr_load_relaxed(&child_init_pending))
		return child_init(SESSION_OFF);
	c = xfdr_load_acquire(&rt_state.ctl);

	for (;;) {
		uint32_t f = CTL_FLAGS(c);

		if (!(f & CTL_INITIALIZED))
			return -EINVAL;
		if (f & CTL_INIT_RUNNING)
			return -EBUSY;
		if (CTL_SESSION(c) != SESSION_OFF)
			return 0;
		/* pairs with the acquire loads of rt_state.ctl by every hook */
		if (xfdr_cas(&rt_state.ctl, &c, CTL_MAKE(f, xfdr_load_acquire(&rt_pool.session))))
			break;
	}
	xfdr_store_relaxed(&rt_state.unflushed, 1);
	xfdr_store_relaxed(&recording_wanted, 1u);
	stream_resume();
	/* XRay calls xfdr only while patched; without XRay this returns -ENOSYS. */
	hooks_xray_install();
	return 0;
}

/* Turn the session off. Returns 1 when this call did, 0 when it was off, or -EINVAL. */
static int session_off(void)
{
	uint64_t c = xfdr_load_acquire(&rt_state.ctl);

	for (;;) {
		uint32_t f = CTL_FLAGS(c);

		if (!(f & CTL_INITIALIZED))
			return -EINVAL;
		if (CTL_SESSION(c) == SESSION_OFF)
			return 0;
		if (xfdr_cas(&rt_state.ctl, &c, CTL_MAKE(f, SESSION_OFF))) {
			xfdr_store_relaxed(&recording_wanted, 0u);
			return 1;
		}
	}
}

XFDR_API int xfdr_stop(void)
{
	int rc;

	rt_enter(0);
	rc = session_off();
	if (rc == 1)
		hooks_xray_uninstall();
	return rc < 0 ? rc : 0;
}

/*
 * The stop of the crash and terminate handlers: the session off is all it takes (every event
 * reads it). Not XRay's unpatching, which mprotect()s the program's code under XRay's own lock:
 * neither is safe in a signal handler (a thread may hold that lock), and the process ends.
 */
static int rt_stop_from_signal(void)
{
	int rc = session_off();

	return rc < 0 ? rc : 0;
}

XFDR_API uint64_t xfdr_now(void)
{
	unsigned cpu;

	return clock_read(&cpu);
}

/* The flush a signal handler asks for: like xfdr_flush(), and it reports like the exit one. */
static int rt_flush_from_signal(char *path_out, size_t path_bytes)
{
	return xfdr_flush(path_out, path_bytes);
}

XFDR_API int xfdr_flush(char *path_out, size_t path_bytes)
{
	return xfdr_flush_since(0, path_out, path_bytes);
}

/*
 * How long a flush waits for a stream's writer to finish the buffer it writes. A disk slower
 * than this for one buffer leaves the stream to the writer: a flush while recording returns
 * -EBUSY, a final one writes what the stream does not hold yet into a file of its own
 * (flush_run()).
 */
#define STREAM_TOKEN_WAIT_MS 2000

/*
 * flush_pool - the flush of the pool in context ctx: flush_run(), or in stream mode the
 * stream's flush, final when recording is off (stream.h).
 */
static int flush_pool(enum pool_flush_id ctx, uint64_t since, char *path_out, size_t path_bytes)
{
	int final = CTL_SESSION(xfdr_load_acquire(&rt_state.ctl)) == SESSION_OFF, rc;
	char text[160];
	struct pr_buf b = PR_BUF_INIT(text);

	if (!stream_running())
		return flush_run(ctx, since, path_out, path_bytes);
	rc = stream_flush(ctx, final, STREAM_TOKEN_WAIT_MS, path_out, path_bytes);
	if (rc != -EBUSY)
		return rc;
	pr_str(&b, "mode=stream: the writer is still in a write after ");
	pr_u64(&b, STREAM_TOKEN_WAIT_MS);
	if (!final) {
		pr_str(&b, " ms; nothing flushed, the writer goes on");
		pr_line(&b);
		return rc;
	}
	pr_str(&b, " ms; what the stream does not hold yet goes to a file of its own");
	pr_line(&b);
	return flush_run(ctx, since, path_out, path_bytes);
}

/*
 * The ordinary flush, CTL_FLUSH_RUNNING taken (seen: rt_state.ctl as the taking found it);
 * gives it back. Returns as flush_run().
 */
static int flush_ordinary(uint64_t since, uint64_t seen, char *path_out, size_t path_bytes)
{
	int was_off = CTL_SESSION(seen) == SESSION_OFF, rc;

	/* The flushing thread's own open calls are in its trace, elision or not. */
	rec_seal_self();
	rc = flush_pool(POOL_FLUSH_ORDINARY, since, path_out, path_bytes);
	/* Everything recorded is in the file only if recording was off for the whole flush. */
	if (!rc && !since && was_off &&
	    CTL_SESSION(xfdr_load_acquire(&rt_state.ctl)) == SESSION_OFF)
		xfdr_store_relaxed(&rt_state.unflushed, 0);
	ctl_clear(CTL_FLUSH_RUNNING);
	return rc;
}

XFDR_API int xfdr_flush_since(uint64_t since, char *path_out, size_t path_bytes)
{
	uint64_t seen;
	int rc;

	rc = ctl_acquire(CTL_INITIALIZED, CTL_INIT_RUNNING | CTL_FLUSH_RUNNING, CTL_FLUSH_RUNNING,
			 0, &seen);
	if (rc)
		return rc;
	return flush_ordinary(since, seen, path_out, path_bytes);
}

/*
 * rt_flush_fatal - the flush of the fatal path (signal_plan.flush_fatal): the ordinary flush
 * when no other runs; while one runs (another thread's, or an xfdr_flush() this thread was
 * in when the signal came, however slow its writes), a flush of its own in the reserve
 * context, into a file of its own, without waiting for it. Should that one end meanwhile, both
 * files are complete traces. An xfdr_init() setting the pool up is waited for,
 * FATAL_INIT_WAIT_MS at most.
 * Context: the thread on the fatal path (signals.c: one at a time, recording already off), in
 * its signal handler; async-signal-safe (clock_gettime and nanosleep besides the flush's).
 * Returns as flush_run(), or -EINVAL (no pool), or -EBUSY (init did not end in time).
 */
static int rt_flush_fatal(char *path_out, size_t path_bytes)
{
	uint64_t seen, deadline = mono_ms() + FATAL_INIT_WAIT_MS;
	int rc;

	for (;;) {
		rc = ctl_acquire(CTL_INITIALIZED, CTL_INIT_RUNNING | CTL_FLUSH_RUNNING,
				 CTL_FLUSH_RUNNING, 0, &seen);
		if (!rc)
			return flush_ordinary(0, seen, path_out, path_bytes);
		if (rc != -EBUSY)
			return rc;
		if (!(CTL_FLAGS(seen) & CTL_INIT_RUNNING)) {
			/* Needs the other flush still running: else the ordinary one is free. */
			rc = ctl_acquire(CTL_INITIALIZED | CTL_FLUSH_RUNNING,
					 CTL_INIT_RUNNING | CTL_FATAL_FLUSH_RUNNING,
					 CTL_FATAL_FLUSH_RUNNING, 0, &seen);
			if (!rc) {
				/* As the ordinary flush: this thread's open calls are final. */
				rec_seal_self();
				rc = flush_pool(POOL_FLUSH_RESERVE, 0, path_out, path_bytes);
				ctl_clear(CTL_FATAL_FLUSH_RUNNING);
				return rc;
			}
			if (rc == -EINVAL && (CTL_FLAGS(seen) & CTL_INITIALIZED))
				continue;
			if (rc == -EINVAL)
				return rc;
			/*
			 * Only the fatal path takes the reserve, one thread at a time: this is
			 * a reserve flush of this thread's that a signal cut into. No waiting.
			 */
			if (CTL_FLAGS(seen) & CTL_FATAL_FLUSH_RUNNING)
				return -EBUSY;
		}
		if (mono_ms() >= deadline)
			return -EBUSY;
		nanosleep(&(struct timespec){.tv_nsec = 1000000L}, NULL);
	}
}

/*
 * At load: with start=1 in XFDR_OPTIONS (LD_PRELOAD use), init and start now; the flush at
 * exit then writes the trace. Otherwise nothing happens until xfdr_init().
 */
__attribute__((constructor)) static void rt_load(void)
{
	const char *text;
	char env_output[sizeof(env_store)];
	struct xfdr_options env;
	opt_keys keys;

	rt_enter(0); /* not recording: hooks return at once from now on */
	text = env_text();
	if (!text || !strstr(text, "start"))
		return;
	env_options(&env, &keys, env_output, sizeof(env_output));
	if (!env.start)
		return;
	if (rt_init(&env, 0) == 0)
		xfdr_store_release(&env_owned, 1u);
}
