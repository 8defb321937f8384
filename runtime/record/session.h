/*
 * runtime/record/session.h - the one word that says whether events are recorded, and into what.
 *
 * rt_ctl packs the life-cycle flags (high half) and the recording session (low half) so that
 * start, stop, init and flush move it with one compare-exchange each, and the hot path needs
 * a single load: an event is recorded into its thread's buffer only when the buffer's
 * session equals the low half. SESSION_OFF (not recording) and 0 (a thread without a buffer)
 * are never a session, so neither can match.
 */
#ifndef XFDR_RUNTIME_RECORD_SESSION_H
#define XFDR_RUNTIME_RECORD_SESSION_H

#include <stdint.h>

#include "runtime/base/compiler.h"

#define SESSION_OFF 0xffffffffu

enum {
	CTL_INITIALIZED = 1, /* a pool exists */
	CTL_INIT_RUNNING = 2,
	CTL_FLUSH_RUNNING = 4,
};

#define CTL_FLAGS(c) ((uint32_t)((c) >> 32))
#define CTL_SESSION(c) ((uint32_t)(c))
#define CTL_MAKE(flags, session) ((uint64_t)(flags) << 32 | (uint32_t)(session))

extern uint64_t rt_ctl XFDR_HIDDEN;

/*
 * The session being recorded, or SESSION_OFF. Context: any; one load (a plain move on x86).
 * Acquire: a hook that sees a session also sees the pool xfdr_init() set up for it (pairs
 * with the release of the compare-exchange in xfdr_start()).
 */
static inline XFDR_NOINSTR uint32_t session_recording(void)
{
	return CTL_SESSION(xfdr_load_acquire(&rt_ctl));
}

#endif /* XFDR_RUNTIME_RECORD_SESSION_H */
