/*
 * runtime/tls_fast.h - the calling thread's recording state, for the hot path.
 */
#ifndef XFDR_RUNTIME_TLS_FAST_H
#define XFDR_RUNTIME_TLS_FAST_H

#include "runtime/tls_types.h"

/*
 * initial-exec: one %fs-relative access, no __tls_get_addr call. The struct is small enough
 * for the static TLS surplus glibc keeps for libraries loaded later.
 */
extern __thread struct tls_state tls_self
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

#endif /* XFDR_RUNTIME_TLS_FAST_H */
