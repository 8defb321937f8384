/*
 * runtime/record/session.h - the one word that says whether events are recorded, and into what.
 *
 * rt_state.ctl packs the life-cycle flags (high half) and the recording session (low half) so
 * that start, stop, init and flush move it with one compare-exchange each, and the hot path
 * needs a single load: an event is recorded into its thread's buffer only when the buffer's
 * session equals the low half. SESSION_OFF (not recording) and SESSION_NONE (a thread without a
 * buffer; the word of a process before its first init, or of a fork child) are never a
 * session, so neither can match.
 *
 * rt_state is a page of its own that the kernel zeroes in a fork child (MADV_WIPEONFORK, armed
 * at the first init): the child's first event finds SESSION_NONE, not the parent's session,
 * however it was made (fork(), _Fork(), clone()) and whatever ran in it first, and takes the
 * slow path, where the child sets up a recorder of its own (rt_forked()).
 */
#ifndef XFDR_RUNTIME_RECORD_SESSION_H
#define XFDR_RUNTIME_RECORD_SESSION_H

#include <stdint.h>

#include "runtime/base/compiler.h"

#define SESSION_OFF 0xffffffffu
#define SESSION_NONE 0u

enum {
	CTL_INITIALIZED = 1, /* a pool exists */
	CTL_INIT_RUNNING = 2,
	CTL_FLUSH_RUNNING = 4,
};

#define CTL_FLAGS(c) ((uint32_t)((c) >> 32))
#define CTL_SESSION(c) ((uint32_t)(c))
#define CTL_MAKE(flags, session) ((uint64_t)(flags) << 32 | (uint32_t)(session))

#define RT_STATE_BYTES 4096u

struct rt_state {
	uint64_t ctl;	    /* flags and session, above; first: the fentry stubs read it there */
	uint32_t armed;	    /* 1 since the first init; 0 (zeroed) in a fork child until it adopts */
	uint32_t adopting;  /* the child is setting up its own recorder (rt_adopt()) */
	uint32_t unflushed; /* recorded since the last complete flush */
} __attribute__((aligned(RT_STATE_BYTES)));

_Static_assert(sizeof(struct rt_state) == RT_STATE_BYTES, "rt_state is one page, alone");

extern struct rt_state rt_state XFDR_HIDDEN;
/* 1 when the kernel zeroes rt_state in fork children (the madvise() took). Never zeroed. */
extern uint32_t rt_fork_wipes XFDR_HIDDEN;

/*
 * The session being recorded, SESSION_OFF, or SESSION_NONE (see above). Context: any; one load
 * (a plain move on x86). Acquire: a hook that sees a session also sees the pool xfdr_init()
 * set up for it (pairs with the release of the compare-exchange in xfdr_start()).
 */
static inline XFDR_NOINSTR uint32_t session_recording(void)
{
	return CTL_SESSION(xfdr_load_acquire(&rt_state.ctl));
}

/*
 * Is this a fork child that still has its parent's recorder state (it must neither write into
 * the parent's buffers nor flush them)? Context: any, async-signal-safe.
 */
static inline XFDR_NOINSTR int rt_forked(void)
{
	return xfdr_load_relaxed(&rt_fork_wipes) && !xfdr_load_relaxed(&rt_state.armed);
}

#endif /* XFDR_RUNTIME_RECORD_SESSION_H */
