/*
 * runtime/record/thread_fast.h - the calling thread's recording state, for the hot path.
 */
#ifndef XFDR_RUNTIME_RECORD_THREAD_FAST_H
#define XFDR_RUNTIME_RECORD_THREAD_FAST_H

#include "runtime/record/thread_types.h"

/*
 * initial-exec: one %fs-relative access, no __tls_get_addr call. The struct is small enough
 * for the static TLS surplus glibc keeps for libraries loaded later.
 */
extern __thread struct rec_thread rec_self
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

/*
 * What rec_thread.slot points to while the thread has no slot: a slot whose guard is always
 * taken, so that the fast path's guard test also sends a thread without a slot to the slow path.
 */
extern struct thread_slot thread_no_slot XFDR_HIDDEN;

/* The thread's slot, NULL when it has none. */
static inline XFDR_NOINSTR struct thread_slot *rec_slot(const struct rec_thread *t)
{
	return t->slot == &thread_no_slot ? NULL : t->slot;
}

/*
 * The fast path's end of a buffer of size bytes: a record written below it leaves room for the
 * EndOfBuffer after it (wr_fits()).
 */
static inline XFDR_NOINSTR size_t rec_fast_end(size_t size)
{
	return size >= XFDR_FN_RECORD_BYTES + XFDR_MD_RECORD_BYTES
		   ? size - XFDR_FN_RECORD_BYTES - XFDR_MD_RECORD_BYTES + 1
		   : 0;
}

#endif /* XFDR_RUNTIME_RECORD_THREAD_FAST_H */
