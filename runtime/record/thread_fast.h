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

#endif /* XFDR_RUNTIME_RECORD_THREAD_FAST_H */
