/*
 * runtime/hooks/fentry_thread.h - the -pg -mfentry hooks' per-thread shadow stack of frames,
 * shared by the full hooks (fentry.c) and their common case (fentry_fast.c). See fentry.c.
 */
#ifndef XFDR_RUNTIME_HOOKS_FENTRY_THREAD_H
#define XFDR_RUNTIME_HOOKS_FENTRY_THREAD_H

#include <stdint.h>

#include "runtime/base/compiler.h"

#define FENTRY_STACK_FRAMES 1024u

struct fentry_frame {
	uintptr_t frame; /* address of the slot holding the function's return address */
	uint32_t id;
	uint32_t unused;
};

#define FENTRY_STACK_BYTES (FENTRY_STACK_FRAMES * sizeof(struct fentry_frame))

enum stack_state {
	STACK_NONE = 0,	 /* not mapped yet */
	STACK_READY = 1, /* frames points to FENTRY_STACK_FRAMES frames */
	STACK_GONE = 2,	 /* could not be mapped, or released at thread exit: stackless */
};

struct fentry_thread {
	struct fentry_frame *frames;
	uint32_t depth;	  /* frames in use */
	uint32_t session; /* the session they belong to */
	uint64_t deeper; /* open calls recorded as FNMAP_ID_NONE above the stack (or without one) */
	uint32_t busy;	 /* inside a hook on this thread */
	uint32_t state;	 /* enum stack_state */
};

extern __thread struct fentry_thread fentry_self
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

/*
 * The function's first byte from __fentry__'s return address: the call is ff 15 disp32 (PIC,
 * through the GOT), 67 e8 rel32 (ld's relaxation of it) or e8 rel32; an endbr64 may precede it.
 * A 5-byte call preceded by 0x67 would be misread, but the byte before a function is padding
 * or the end of a ret, jmp or call whose rel32 would have to be about +1.7 GB.
 */
static inline XFDR_NOINSTR uintptr_t fn_start(const uint8_t *ret)
{
	const uint8_t *p = ret - 5;

	if (ret[-6] == 0xff && ret[-5] == 0x15)
		p = ret - 6;
	else if (ret[-6] == 0x67 && ret[-5] == 0xe8)
		p = ret - 6;
	if (p[-4] == 0xf3 && p[-3] == 0x0f && p[-2] == 0x1e && p[-1] == 0xfa)
		p -= 4;
	return (uintptr_t)p;
}

/*
 * The common cases, compiled without vector registers (fentry_fast.c): an entry that pushes one
 * frame and records its entry, a return that pops the top frame (its own) and records its exit.
 * 1 when done; 0, having changed nothing, when the full hook (fentry_enter(), fentry_return())
 * must run, with the vector registers saved first.
 */
int fentry_enter_fast(const uint8_t *ret, uintptr_t frame) XFDR_HIDDEN;
int fentry_return_fast(uintptr_t frame) XFDR_HIDDEN;

#endif /* XFDR_RUNTIME_HOOKS_FENTRY_THREAD_H */
