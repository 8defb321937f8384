/*
 * runtime/record/recorder.h - the record path: every way an event enters a thread's buffer.
 *
 * Hooks (the public API, the XRay handler, -finstrument-functions) call these, or the inline
 * rec_function() from record_fast.h. The *_at forms take the TSC and CPU as arguments: the
 * public wrappers read the clock and pass it in, and tests pass chosen values to drive buffer
 * rotation, TSCWrap and NewCPUId exactly (a test-only clock at no release cost).
 *
 * Context of everything here: any thread, signal handlers included; no lock, no allocation,
 * no system call except the ones a thread's first event needs (gettid, prctl) and the
 * CLOCK_REALTIME read when a buffer starts. errno is preserved.
 */
#ifndef XFDR_RUNTIME_RECORD_RECORDER_H
#define XFDR_RUNTIME_RECORD_RECORDER_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/compiler.h"
#include "runtime/record/thread_types.h"
#include "xfdr/format.h"

enum rec_event_kind {
	REC_EV_FUNCTION = 0, /* action, fid, args[nargs] */
	REC_EV_CUSTOM = 1,   /* data[bytes] */
};

struct rec_event {
	enum rec_event_kind kind;
	unsigned action; /* enum xfdr_fn_action */
	uint32_t fid;
	const uint64_t *args;
	unsigned nargs;
	const void *data;
	size_t bytes;
};

/* Entries push the shadow stack; exits and tail exits pop it. */
static inline XFDR_NOINSTR int rec_action_is_entry(unsigned action)
{
	return action == XFDR_FN_ENTER || action == XFDR_FN_ENTER_ARGS;
}

/*
 * Short-call elision threshold in TSC ticks (0: off), set by init from
 * func_duration_threshold_us; each buffer takes a copy when it starts.
 */
extern uint64_t rec_elide_ticks XFDR_HIDDEN;
extern uint64_t rec_elide_us XFDR_HIDDEN; /* the threshold as configured, for the .map */

/*
 * Calls entered deeper than this many open calls are left out whole (0: none), set by init from
 * max_depth; each buffer takes it into depth_limit when it starts.
 */
extern uint32_t rec_depth_max XFDR_HIDDEN;

/*
 * rec_count_filtered_slotless - rec_count_filtered() for a thread without a slot yet: it
 * registers (as for its first event) and counts in its slot; for no thread when there is none.
 */
void rec_count_filtered_slotless(void) XFDR_COLD;

/*
 * rec_event_at - record ev as taken at (tsc, cpu) on the calling thread.
 * Returns 0 when recorded; -EAGAIN when not recording (not a drop); when dropped and
 * counted: -EDEADLK (re-entry), -EUSERS (no thread slot), -ENOBUFS (pool empty),
 * -EMSGSIZE (larger than an empty buffer can hold).
 */
int rec_event_at(uint64_t tsc, unsigned cpu, const struct rec_event *ev);

/* A function event with arguments (nargs 0: a plain one), clock read now or given. */
void rec_function_args(unsigned action, uint32_t fid, const uint64_t *args, unsigned nargs);
void rec_function_args_at(uint64_t tsc, unsigned cpu, unsigned action, uint32_t fid,
			  const uint64_t *args, unsigned nargs);

/* A custom event (payload zero-padded to 8 bytes). Returns as rec_event_at(), or -EINVAL. */
int rec_custom_event(const void *data, size_t bytes);
int rec_custom_event_at(uint64_t tsc, unsigned cpu, const void *data, size_t bytes);

/*
 * rec_on_fork_child - what sets up a fork child's own recorder on its first event (the control
 * layer's), returning the session it then records into or SESSION_OFF. Context: init.
 */
void rec_on_fork_child(uint32_t (*adopt)(void));

/*
 * rec_seal_self - the calling thread's records so far become final: a flush it runs next
 * copies its open calls too (short-call elision never erases an entry a trace holds).
 * Nothing when the thread is inside the runtime (a signal handler that interrupted one of its
 * events) or holds no buffer of the pool's session. Context: the thread itself, with init
 * excluded (its flush holds CTL_FLUSH_RUNNING, or the fatal path's flag beside a running
 * flush: lifecycle.c); async-signal-safe.
 */
void rec_seal_self(void);

/*
 * rec_function_slow - the one way out of rec_function_at()'s inline fast path, for everything
 * it does not do: first event of a thread (registration), re-entry (counted as a drop), no
 * buffer yet, full buffer, NewCPUId, TSCWrap, a new session, not recording.
 * held: the thread's slot when the caller took its guard (this function releases it), NULL
 * when the caller did not (no slot yet, or the guard was already held: re-entry).
 */
void rec_function_slow(struct rec_thread *t, struct thread_slot *held, uint64_t tsc, unsigned cpu,
		       unsigned action, uint32_t fid) XFDR_COLD;

/*
 * rec_exit_elide - the fast path's exit of a short call with elision on (rec_function_fast():
 * guard held, every fast-path test passed, the call within the threshold, a record above the
 * erase floor; word: the exit's record): erases the call's entry, the buffer's last record;
 * an exit whose last record is another function's entry goes to rec_function_slow().
 * Releases the guard.
 */
void rec_exit_elide(struct thread_slot *s, size_t used, uint64_t tsc, unsigned cpu, uint64_t word);

/*
 * rec_function_clock_call - rec_function() where the clock is read with a call (no rdtscp and
 * no rseq area, or not x86): the clock read, then the event. Out of line, so that the hooks'
 * fast paths make no call. Context: as rec_function().
 */
void rec_function_clock_call(unsigned action, uint32_t fid) XFDR_COLD;

/*
 * rec_inspect_clock_given - for the runtime's tests that drive the clock through the *_at forms
 * (hidden like every runtime symbol): while given is set, an entry that takes a buffer keeps
 * the TSC and CPU it was given, instead of reading the clock again once the buffer is ready.
 */
void rec_inspect_clock_given(int given);

#endif /* XFDR_RUNTIME_RECORD_RECORDER_H */
