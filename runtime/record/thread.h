/*
 * runtime/record/thread.h - thread registration, thread exit, the thread table, quiescence.
 */
#ifndef XFDR_RUNTIME_RECORD_THREAD_H
#define XFDR_RUNTIME_RECORD_THREAD_H

#include <stdint.h>

#include "runtime/pool/pool.h"
#include "runtime/record/thread_fast.h"

extern struct thread_table thread_table XFDR_HIDDEN;

/*
 * thread_slots_used - the slots handed out at least once, [0, *n); NULL and *n = 0 before the
 * first init. Slots beyond *n were never used. Context: any, async-signal-safe.
 */
static inline XFDR_NOINSTR struct thread_slot *thread_slots_used(uint32_t *n)
{
	struct thread_table *tt = &thread_table;
	/* pairs with the release in thread_table_setup(): max is set before slots */
	struct thread_slot *slots = xfdr_load_acquire(&tt->slots);
	uint32_t used;

	*n = 0;
	if (!slots)
		return NULL;
	used = xfdr_load_acquire(&tt->next_unused);
	*n = used < tt->max ? used : tt->max;
	return slots;
}

/*
 * rec_thread_forget_buffer - the thread holds no buffer any more: its next event takes one.
 * Context: the owning thread, guard held (or at its exit).
 */
static inline XFDR_NOINSTR void rec_thread_forget_buffer(struct rec_thread *t)
{
	t->buf = NULL;
	t->desc = NULL;
	t->size = 0;
	t->fast_end = 0;
	t->used = 0;
	t->session = 0;
	t->cpu = REC_NO_CPU;
}

/*
 * rec_thread_close_buffer - hand the thread's buffer back full (an entry in an earlier buffer
 * is never erased: all of it is final now), then hold none. Context: the owning thread, guard
 * held, its buffer of the session being recorded (or at its exit, see thread_exit()).
 */
static inline XFDR_NOINSTR void rec_thread_close_buffer(struct rec_thread *t)
{
	pool_mark_full(t->desc, t->desc_gen, t->used, t->last_tsc);
	rec_thread_forget_buffer(t);
}

/*
 * Does slot s belong to a thread that recorded or dropped in session (running or exited)?
 * Such threads are the ones a flush lists. Context: any, async-signal-safe.
 */
static inline XFDR_NOINSTR int thread_slot_in_session(const struct thread_slot *s, uint32_t session)
{
	/* pairs with the release of state in thread_register() and thread_exit() */
	uint32_t st = xfdr_load_acquire(&s->state);

	return (st == SLOT_LIVE || st == SLOT_EXITED) && xfdr_load_relaxed(&s->session) == session;
}

/*
 * thread_table_setup - map the thread table (thread_max slots, prefaulted) and create the key
 * whose destructor hands buffers back. Only the first successful call does anything: the
 * table lives as long as the process, because threads keep pointers into it.
 * Context: init. Returns 0, -ENOMEM or -EAGAIN (no pthread key left).
 */
int thread_table_setup(uint32_t thread_max);

/*
 * thread_table_reset - start a new session: zero every drop counter and forget exited threads.
 * Context: init, after thread_quiesce().
 */
void thread_table_reset(void);

/*
 * thread_register - give the calling thread a slot: its tid, its name, the exit destructor.
 * Context: the slow path of the thread's first event, possibly in a signal handler; uses
 * only gettid, prctl(PR_GET_NAME), pthread_setspecific (no allocation: our key is one of the
 * first a process creates) and, with flush_on_crash, sigaltstack and mprotect (altstack.h).
 * Returns the slot, or NULL when the table is full.
 */
struct thread_slot *thread_register(struct rec_thread *t);

/*
 * thread_id_in_session - the slot's thread id for session (given on first use in a session).
 * Context: the slot's thread (also in a signal handler); lock-free.
 */
uint32_t thread_id_in_session(struct thread_slot *s, uint32_t session);

/*
 * thread_quiesce - wait until no thread is inside the runtime. The caller has already made new
 * events see "not recording"; a membarrier() makes every thread's guard store visible, then
 * each live slot's guard is awaited. Without membarrier (old kernels) a 20 ms grace period
 * stands in. Context: init. Returns 0, or -EBUSY after timeout_ms.
 */
int thread_quiesce(unsigned timeout_ms);

/*
 * thread_set_watcher - fn(slot) is called on a recording thread, inside the runtime (its guard
 * held: its own signal handlers record nothing meanwhile), each time it takes a buffer and when
 * it exits; NULL: nothing. For the live map (runtime/flush/livemap.c), a higher layer, which
 * names the thread there. fn must be async-signal-safe. Context: any; the last call wins.
 */
void thread_set_watcher(void (*fn)(struct thread_slot *s));

/* thread_tell_watcher - call the watcher, if any, for s. Context: as the watcher's. */
void thread_tell_watcher(struct thread_slot *s);

/*
 * thread_name_refresh - s's name read again from the kernel (prctl(PR_GET_NAME)), as its
 * thread takes a buffer: a core's names directory (`xfdr core`) then names a thread renamed
 * after its first event as it was at its last buffer, not its first. One system call a buffer.
 * Context: on s's own thread; async-signal-safe.
 */
void thread_name_refresh(struct thread_slot *s);

/* Copy a slot's name (live thread: /proc/self/task/<tid>/comm; exited: as it exited) into
 * out (NUL-terminated, at most 16 bytes with the NUL). Context: async-signal-safe. */
void thread_slot_name(const struct thread_slot *s, char out[17]);

#endif /* XFDR_RUNTIME_RECORD_THREAD_H */
