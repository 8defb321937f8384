/*
 * xfdr/xfdr.h - the recorder's public API: life cycle, options, manual instrumentation.
 *
 * Life cycle (one atomic state; a call that does not fit the current state returns -EBUSY or
 * -EINVAL, never blocks on another thread's call):
 *
 *   uninitialized --xfdr_init--> ready --xfdr_start--> recording --xfdr_stop--> ready
 *                                  ^------------------ xfdr_init (new session) ---'
 *
 * xfdr_flush() may run in "ready" or "recording": it writes a snapshot and leaves recording on.
 *
 * What is recorded: events go into per-thread buffers taken from a pool of buffer_max buffers
 * of buffer_size bytes, mapped once by xfdr_init() (transparent huge pages where the kernel
 * offers them; pages are populated in the background and at the latest when a thread takes
 * the buffer, never while it records into it). When the pool is exhausted, mode=ring (the
 * default) reuses the oldest full buffer, so a flush holds the newest history of every thread
 * and the reused buffers are counted as overwritten; mode=bounded keeps the oldest history and
 * drops new events, counted (never silently: see "Drop accounting" below). Every buffer that
 * begins while its thread is inside calls starts with the thread's call stack (a custom event
 * tagged "XFDRSTAK", xfdr/format.h), so each buffer decodes on its own. A new session
 * (xfdr_init() again) empties the pool.
 *
 * Options come from struct xfdr_options, or from the environment variable XFDR_OPTIONS with the
 * same keys: "key=value" pairs separated by ':' or white space (a backslash keeps the next
 * character in the pair, and a double colon never separates: "exclude=std::*"), e.g.
 *   XFDR_OPTIONS="buffer_size=65536:buffer_max=64 output=/tmp/traces/ start=1"
 *
 *   buffer_size=N       bytes per buffer; a multiple of 8, >= 128 (default 65536)
 *   buffer_max=N        buffers in the pool, >= 1 (default 256)
 *   thread_max=N        threads one process can register (default 4096; fixed at first init)
 *   output=PATH         "DIR/" or an existing directory: DIR/xfdr-<program>-<pid>-<n>.xray;
 *                       "DIR/name": DIR/name-<pid>-<n>.xray; empty (default): current directory
 *   per_thread_files=B  one file per thread, "...-<pid>-<n>-t<tid>.xray" (default 0)
 *   start=B             start recording when the library loads (for LD_PRELOAD) (default 0)
 *   flush_at_exit=B     flush at process exit once recording was started (default 1)
 *   clock=auto|rdtscp|rdtsc   TSC and CPU source; auto uses rdtsc with the CPU from glibc's
 *                             rseq area when there is one (cheapest), else rdtscp if CPUID has it
 *   mode=ring|bounded|stream   what happens when the pool is exhausted (default ring: see
 *                       above). stream records the whole run through the pool: a writer thread
 *                       of xfdr's writes every buffer as it fills to "<base>.xray" and hands it
 *                       back, so the program never waits for the disk; when the writer falls
 *                       behind and no buffer is free, events are dropped and counted
 *                       (stream_behind in the .map). A flush while recording writes the full
 *                       buffers and the .map; one with recording off (exit, xfdr_stop() then
 *                       xfdr_flush(), termination, crash) also the buffers being filled and
 *                       the drop counts, and ends the file. Not with per_thread_files
 *   stream_max_bytes=N  mode=stream: cut the trace into files of at most N bytes (k/m/g
 *                       suffixes), each a whole trace with its own .map; 0 (default): one file.
 *                       At least the header and two buffers
 *   stream_max_files=K  mode=stream with stream_max_bytes: keep only the newest K files (older
 *                       ones and their .map are removed as new ones begin); 0 (default): all
 *   func_duration_threshold_us=N   short-call elision: a function that exits within N
 *                       microseconds of its entry, with nothing recorded in between, leaves
 *                       no record (its entry is erased; enclosing calls that then qualify are
 *                       erased too; every other record keeps its exact time). Elided calls are
 *                       counted per thread in the .map. 0 (default) records every call.
 *   include=GLOB,...    record only the functions whose names match one of these shell patterns
 *                       (fnmatch(3); a backslash quotes the next character, "\," is a comma in
 *                       a pattern; at most 64 in 2047 bytes). A name matches in any of its
 *                       forms: the symbol as the .map shows it (C++ mangled) and a C++ symbol's
 *                       demangled name with and without its parameters ("_ZN2ns3fooEi",
 *                       "ns::foo(int)", "ns::foo"). Decided once per function, when first met:
 *                       the -finstrument-functions and -pg hooks keep the decision with the
 *                       function's id (a call left out costs the hook's call and one cache
 *                       lookup), XRay functions left out are not patched at all. A left-out
 *                       function's callees are recorded under its caller. Not drops: the .map
 *                       lists the patterns, the functions left out and, per thread, the calls
 *                       (filtered_calls; XRay's unpatched calls are not counted). A pattern that
 *                       matched no function called while recording is named on stderr at exit.
 *                       Fixed by the first xfdr_init() that sets it (default: every function)
 *   exclude=GLOB,...    leave out the functions that match, as include= (default: none); a
 *                       function that matches both is left out. `xfdr funcs` suggests the line
 *   max_depth=N         leave out every call entered while N recorded calls are open on its
 *                       thread, and everything inside it; counted per thread in the .map
 *                       (max_depth_calls). 0 (default): no limit; at most 1000000
 *   flush_signal=SIG    a signal (kill -l name, with or without SIG, or a number; 0/none: off,
 *                       the default) that writes a snapshot while the program goes on recording;
 *                       one stderr line per flush ("xfdr: SIGUSR2: wrote PATH"). xfdr takes the
 *                       signal whatever its disposition was (stderr says when a handler of the
 *                       program is replaced); not SIGKILL, SIGSTOP or a crash signal. For SIGTERM
 *                       or SIGINT it wins over flush_on_terminate.
 *   flush_on_terminate=B  SIGTERM and SIGINT stop recording, flush, and end the process by the
 *                       same signal, as without xfdr (default 0 through xfdr_init() with options,
 *                       1 from XFDR_OPTIONS). Only a signal whose disposition is SIG_DFL when
 *                       xfdr_init() runs is taken: one the program handles or ignores (nohup,
 *                       background jobs) is left as it is.
 *   flush_on_crash=B    SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP (default 1): the
 *                       crashing thread's backtrace (libunwind, at most 64 frames) is recorded in
 *                       its buffer as a custom event tagged "XFDRCRSH" (xfdr/format.h), recording
 *                       stops, and a flush writes it with the crash and its named frames in the
 *                       .map; then the default action ends the process by the same signal, with
 *                       its core dump, as without xfdr. A handler the program installed (before
 *                       or after xfdr_init()) runs first: a fault it recovers from is no crash
 *                       and recording goes on; one it does not (the fault would come again, it
 *                       raises the signal again, aborts or exits) is recorded as above. Threads
 *                       that record get a 64 KiB alternate signal stack (unless they have one),
 *                       so a stack overflow is caught too. A watchdog (a timer whose SIGALRM goes
 *                       to the crashing thread alone, only while a crash is handled) ends the
 *                       process by the crash signal when unwinding and flushing take longer than
 *                       5 s plus 1 s per 64 MiB of pool.
 *   backing=memory|file where the pool lives: anonymous memory (default), or a shared mapping
 *                       of the file "<prefix>-<pid>-live.xray" that outlives the process, so
 *                       `xfdr recover` rebuilds the trace after SIGKILL (see "Survival")
 *   file_mode=MODE      permission bits (octal, 0600 to 0666: owner read and write, plus any
 *                       read or write bits for group and others) of every file xfdr creates;
 *                       exactly these, whatever the umask (default 0600: a trace holds call
 *                       arguments and payloads, as a core dump holds memory)
 *
 * B is 0/1 (also no/yes, false/true, off/on). An unknown key or a bad value is reported with
 * one line on stderr naming the key, the value and the value kept, and is otherwise ignored.
 * In a process with elevated privileges (set-user-ID, set-group-ID, file capabilities: the
 * kernel's AT_SECURE) XFDR_OPTIONS is ignored, with one line on stderr: the user who runs such
 * a program must not choose where it writes. Its own options (xfdr_init(), xfdr_options_set())
 * still apply.
 *
 * Files: "<base>.xray" holds one 32-byte header and whole buffers of buffer_size bytes in the
 * XRay FDR format, version 1; "<base>.xray.map" (text) names the process, the clock, the
 * threads and the drop counts. With per_thread_files, each thread gets "<base>-t<tid>.xray"
 * and the flush writes one "<base>.map" that lists them. <n> counts flushes from 0 and is
 * bumped past names where anything exists (a file, a symbolic link, a ".part"). Each file is
 * written as "<name>.part" and renamed when complete: a name without ".part" always holds a
 * whole file. No file is ever opened through a symbolic link, truncated or replaced: every
 * file is created new (O_CREAT | O_EXCL | O_NOFOLLOW) and renamed only to a free name, so a
 * link planted at a predictable name in a shared directory such as /tmp never makes xfdr
 * write to where it leads; a name taken between the check and the rename fails that file with
 * one stderr line naming it.
 *
 * Survival, by the way a process ends:
 *   exit() or a return from main(), from any thread   the flush at exit writes what was
 *                       recorded since the last complete flush, once; then backing=file's
 *                       live files, no longer needed, are removed
 *   SIGTERM, SIGINT     flush_on_terminate (above)
 *   a crash             flush_on_crash (above): the file ends with the crash and its backtrace
 *   a sanitizer's end   its runtime leaves by a raw exit_group after its report: xfdr's exit
 *                       flush is its death callback (__sanitizer_set_death_callback), and a
 *                       crash its SIGSEGV handler took is flushed there as a crash
 *   SIGKILL, the OOM killer, _exit(), exec()   no code of the process runs: with
 *                       backing=file the pool's live files stay ("<prefix>-<pid>-live.xray",
 *                       ".pool" and ".map", the .map appended to by the recording threads
 *                       as threads and functions appear) and `xfdr recover` turns them into
 *                       a trace;
 *                       with memory backing a core dump, if one is written (or gdb's gcore of
 *                       the live process), holds the pool and `xfdr core` turns it into a trace
 *   fork()              the child records alone: a new session with a pool of its own, its own
 *                       files under its own pid, only its own thread (the one that forked, with
 *                       its open calls), recording if the parent was; the parent's pool and
 *                       files are never touched by the child
 *
 * Drop accounting: events that could not be recorded are counted per thread and by cause
 * (no buffer left, re-entry from a signal handler or the runtime itself, event larger than a
 * buffer can hold, no thread slot left). Flush prints one stderr line when anything was
 * dropped, writes the counts into the .map file and appends to every trace file one last
 * buffer (NewBuffer thread id 0 in the process file, the thread's id in a per-thread file)
 * holding one custom event tagged "XFDRDROP" (layout: XFDR_DROP_* in xfdr/format.h).
 *
 * Thread safety: every function here may be called from any thread. The recording functions
 * (xfdr_enter ... xfdr_custom_event) are also async-signal-safe: a call from a signal handler
 * that interrupted the same thread inside the runtime is dropped and counted, never corrupts.
 */
#ifndef XFDR_XFDR_H
#define XFDR_XFDR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define XFDR_API __attribute__((visibility("default")))
#else
#define XFDR_API
#endif

enum xfdr_clock {
	XFDR_CLOCK_AUTO = 0,   /* rdtsc + rseq CPU if glibc has rseq, else rdtscp if CPUID has it */
	XFDR_CLOCK_RDTSCP = 1, /* CPU from TSC_AUX (low 12 bits, as Linux sets it) */
	XFDR_CLOCK_RDTSC = 2,  /* rdtsc, CPU from glibc's rseq area, else sched_getcpu() */
};

enum xfdr_backing {
	XFDR_BACKING_MEMORY = 0, /* anonymous memory: lost if the process dies unflushed */
	XFDR_BACKING_FILE = 1,	 /* a shared file mapping that outlives the process */
};

enum xfdr_mode {
	XFDR_MODE_RING = 0,    /* reuse the oldest full buffer: keep the newest history */
	XFDR_MODE_BOUNDED = 1, /* keep the oldest history, drop (and count) new events */
	XFDR_MODE_STREAM = 2,  /* write full buffers to the file as they fill: the whole run */
};

struct xfdr_options {
	size_t buffer_size;   /* bytes per buffer: multiple of 8, >= 128 */
	size_t buffer_max;    /* buffers in the pool, >= 1 */
	const char *output;   /* see "output" above; NULL or "" for the current directory */
	int per_thread_files; /* 0/1 */
	int start;	      /* 0/1: xfdr_init() also starts recording; at load for XFDR_OPTIONS */
	int flush_at_exit;    /* 0/1 */
	int clock;	      /* enum xfdr_clock */
	size_t thread_max;    /* thread slots; only the first xfdr_init() of a process sets it */
	int mode;	      /* enum xfdr_mode */
	uint64_t func_duration_threshold_us; /* 0: no elision */
	int flush_signal;		     /* 0: none; else the signal that writes a snapshot */
	int flush_on_terminate;		     /* 0/1: SIGTERM and SIGINT flush, then end */
	int flush_on_crash;		     /* 0/1: SIGSEGV and the other crashes flush */
	int backing;			     /* enum xfdr_backing */
	int file_mode;			     /* created files' permission bits; 0: 0600 */
	const char *include;		     /* NULL or "": every function; see "include" */
	const char *exclude;		     /* NULL or "": none left out; see "exclude" */
	uint64_t max_depth;		     /* 0: no limit; see "max_depth" */
	size_t stream_max_bytes;	     /* mode=stream: 0, one file; else bytes per file */
	size_t stream_max_files;	     /* mode=stream: 0, keep all; else the newest K */
};

/* Fill o with the defaults listed above. Context: any. */
XFDR_API void xfdr_options_default(struct xfdr_options *o);

/*
 * xfdr_options_set - set one option by its XFDR_OPTIONS key from text.
 * The value of "output" is not copied: it must stay valid until xfdr_init() has returned
 * (xfdr_init() copies everything it keeps). Prints nothing.
 * Returns 0, -ENOENT for an unknown key, -EINVAL for a bad value (o is then unchanged).
 */
XFDR_API int xfdr_options_set(struct xfdr_options *o, const char *key, const char *value);

/*
 * xfdr_options_check - what XFDR_OPTIONS=text would give a program, checked without starting
 * anything: text read over the defaults as at load, then the whole checked as xfdr_init()
 * checks it (each key's rule; a pool and thread table that fit in this machine's memory). Each
 * problem is one stderr line, the line the program would print. `xfdr record` asks it before it
 * runs a program. Returns how many problems there were: 0 when text is valid.
 * Context: not from a signal handler.
 */
XFDR_API int xfdr_options_check(const char *text);

/*
 * xfdr_init - allocate and prefault the pool, calibrate the clock, start a new session.
 * o == NULL: the defaults, then XFDR_OPTIONS. Otherwise o, then the keys XFDR_OPTIONS sets,
 * which win: the user running the program decides over its build. When XFDR_OPTIONS=start=1
 * started recording at load, the program's first call keeps that recorder and what it
 * recorded and returns 0 (options of o that would have changed it are named on stderr once).
 * A second call starts a new session: it waits
 * (at most about a second) until no thread is inside the runtime, then empties the pool;
 * buffers still held by threads are from the old session and are never written again.
 * Context: not from a signal handler (it maps memory). Not while recording.
 * With backing=file it creates the live files (a live file of the same name that this
 * process did not make, left by an earlier process with the same pid, is moved aside as
 * "<prefix>-<pid>-live-stale<k>.xray" with one stderr line, never deleted).
 * Returns 0; -EINVAL for an invalid option in o (one stderr line names it); -EBUSY while
 * recording, flushing or while a thread stays inside the runtime; -ENOMEM if the pool cannot
 * be mapped; with backing=file, -ENOSPC when the disk cannot hold the pool, or the negative
 * errno of open(2) (-ENOENT, -EACCES, ...) for the live files (one stderr line names the file).
 */
XFDR_API int xfdr_init(const struct xfdr_options *o);

/*
 * xfdr_start / xfdr_stop - turn recording on and off. Events while off are not recorded and
 * not counted as drops. At exit, what was recorded since the last complete flush is flushed
 * (flush_at_exit; the handler is registered by the first xfdr_init()).
 * Context: any thread, also a signal handler. Ordering: events of other threads that begin
 * after xfdr_start() returns are recorded; after xfdr_stop() returns, no event begins to be
 * recorded (one already inside the runtime may still complete).
 * Returns 0, also when recording is already in that state (a program that starts recording
 * while XFDR_OPTIONS=start=1 already did goes on); -EINVAL before xfdr_init().
 */
XFDR_API int xfdr_start(void);
XFDR_API int xfdr_stop(void);

/*
 * xfdr_flush - write every buffer holding data to a new file, then the .map sidecar.
 * Buffers still being written are copied up to what their thread has published (whole
 * records only); recording goes on. In ring mode, threads that fill the pool while the flush
 * runs may reuse a chosen buffer before it is copied: it is then written as an empty buffer
 * of its thread, counted (.map: buffers_reused_in_flush) and reported with one stderr line; a
 * buffer is never torn. path_out (if not NULL) receives the trace file's path
 * (per_thread_files: the .map file's path), NUL-terminated and cut to path_bytes.
 * In mode=stream it writes into the stream's current file instead (see "mode" above): while
 * recording, the full buffers and the .map; with recording off, the rest too, ending the file.
 * It waits (nanosleep) up to 2 s for the writer thread to finish the buffer it is writing;
 * past that, -EBUSY while recording, and a final flush writes a new file of its own.
 * Context: async-signal-safe (open, fchmod, write, pwrite, lseek, fstat, fstatat, close,
 * renameat2, link, unlink, access, getrlimit, clock_gettime only; no lock, no malloc). It may spin
 * up to 20 ms so that the TSC calibration has a long enough baseline. Every file is written as
 * "<name>.part" and renamed to its name once complete: a name without ".part" is always a whole,
 * valid file, even if the process dies during the flush. A write that fails (full file system,
 * quota, RLIMIT_FSIZE) removes the file and its .part and prints one stderr line naming the file,
 * the error and the buffers lost; a write that would pass RLIMIT_FSIZE is refused before it is
 * made, so the program is never killed by SIGXFSZ because of xfdr. A trace that cannot be written
 * gets no .map; a .map that cannot be written leaves its trace. With per_thread_files, a thread
 * file that fails does not stop the others. Recording goes on whatever the result. Returns 0;
 * -EINVAL before xfdr_init(); -EBUSY if another flush or an init is running; -ENAMETOOLONG; -EEXIST
 * (no free file name, or a name taken by another file during the flush); -EFBIG (a file would pass
 * RLIMIT_FSIZE); or another negative errno of open(2)/write(2)/rename(2) (-ENOSPC, -EDQUOT,
 * -ENOENT, -EACCES, -EROFS...): the first error of the flush.
 */
XFDR_API int xfdr_flush(char *path_out, size_t path_bytes);

/*
 * xfdr_now - the recorder's clock now: the TSC, in the unit of every timestamp in the trace.
 * Context: any thread, any signal handler; no system call (one rdtsc).
 */
XFDR_API uint64_t xfdr_now(void);

/*
 * xfdr_flush_since - xfdr_flush() for the window since a moment: only buffers holding events
 * at or after since (a value of xfdr_now()) are written, whole, while threads keep recording.
 * Each call writes its own valid file (and .map, whose "since_tsc" line tells readers where
 * the window begins: `xfdr convert --since=snapshot` trims to it). since 0 writes everything.
 * In mode=stream since is not used: the stream holds everything (xfdr_flush()).
 * Context and returns: as xfdr_flush(). Flushes are exclusive: a call while another runs
 * returns -EBUSY at once.
 */
XFDR_API int xfdr_flush_since(uint64_t since, char *path_out, size_t path_bytes);

/*
 * Recording. fid is the function id (28 bits; higher bits are cut). Context: any thread, any
 * signal handler; no lock, no malloc, no system call except the CPU query when rdtscp is not
 * used. errno is preserved.
 */
XFDR_API void xfdr_enter(uint32_t fid);
XFDR_API void xfdr_exit(uint32_t fid);
XFDR_API void xfdr_tail_exit(uint32_t fid);

/*
 * xfdr_enter_args - an Entry_Args record followed by nargs CallArgument records, always in
 * the same buffer. nargs == 0 records a plain entry. An event that cannot fit in an empty
 * buffer is dropped and counted (too_large).
 */
XFDR_API void xfdr_enter_args(uint32_t fid, const uint64_t *args, unsigned nargs);

/*
 * xfdr_custom_event - a CustomEventMarker with the TSC now, then the payload, in one buffer.
 * FDR v1 readers walk the bytes after EndOfBuffer in 8-byte steps, so the payload is
 * zero-padded to a multiple of 8 and the marker carries the padded size.
 * Returns 0 when recorded; -EINVAL for data == NULL or bytes == 0; -EAGAIN when not
 * recording; and when dropped and counted: -EMSGSIZE (larger than an empty buffer can hold),
 * -ENOBUFS (no buffer left), -EDEADLK (re-entry on the same thread), -EUSERS (no thread slot).
 */
XFDR_API int xfdr_custom_event(const void *data, size_t bytes);

/* ---- Manual instrumentation ----------------------------------------------------------- */

#if defined(__clang__)
#define XFDR__NOINSTR __attribute__((no_instrument_function, xray_never_instrument))
#else
#define XFDR__NOINSTR __attribute__((no_instrument_function))
#endif

#define XFDR_ENTER(id) xfdr_enter((uint32_t)(id))
#define XFDR_EXIT(id) xfdr_exit((uint32_t)(id))

/*
 * XFDR_ENTER_ARGS(id, a0, a1, ...) - entry with up to any number of integer arguments, each
 * converted to uint64_t (cast pointers with (uintptr_t)).
 */
#define XFDR_ENTER_ARGS(id, ...)                                                                   \
	do {                                                                                       \
		const uint64_t xfdr__args[] = {__VA_ARGS__};                                       \
		xfdr_enter_args((uint32_t)(id), xfdr__args,                                        \
				(unsigned)(sizeof(xfdr__args) / sizeof(xfdr__args[0])));           \
	} while (0)

static inline XFDR__NOINSTR uint32_t xfdr__scope_enter(uint32_t fid)
{
	xfdr_enter(fid);
	return fid;
}

static inline XFDR__NOINSTR void xfdr__scope_exit(const uint32_t *fid)
{
	xfdr_exit(*fid);
}

#define XFDR__CAT2(a, b) a##b
#define XFDR__CAT(a, b) XFDR__CAT2(a, b)

/*
 * XFDR_SCOPE(id) - record an entry now and the matching exit when the enclosing block is left
 * by any path (return, break, goto), through the cleanup attribute. id is evaluated once.
 */
#define XFDR_SCOPE(id)                                                                             \
	const uint32_t XFDR__CAT(xfdr__scope_, __LINE__)                                           \
	    __attribute__((cleanup(xfdr__scope_exit), unused)) = xfdr__scope_enter((uint32_t)(id))

#ifdef __cplusplus
}
#endif

#endif /* XFDR_XFDR_H */
