/*
 * runtime/record/thread.h - thread registration, thread exit, the thread table, quiescence.
 */
#ifndef XFDR_RUNTIME_RECORD_THREAD_H
#define XFDR_RUNTIME_RECORD_THREAD_H

#include <stdint.h>

#include "runtime/record/thread_fast.h"

extern struct thread_table thread_table XFDR_HIDDEN;

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
 * only gettid, prctl(PR_GET_NAME) and pthread_setspecific (no allocation: our key is one of
 * the first a process creates). Returns the slot, or NULL when the table is full.
 */
struct thread_slot *thread_register(struct rec_thread *t);

/*
 * thread_quiesce - wait until no thread is inside the runtime. The caller has already made new
 * events see "not recording"; a membarrier() makes every thread's guard store visible, then
 * each live slot's guard is awaited. Without membarrier (old kernels) a 20 ms grace period
 * stands in. Context: init. Returns 0, or -EBUSY after timeout_ms.
 */
int thread_quiesce(unsigned timeout_ms);

/* Copy a slot's name (live thread: /proc/self/task/<tid>/comm; exited: as it exited) into
 * out (NUL-terminated, at most 16 bytes with the NUL). Context: async-signal-safe. */
void thread_slot_name(const struct thread_slot *s, char out[17]);

#endif /* XFDR_RUNTIME_RECORD_THREAD_H */
