/*
 * runtime/record/altstack.h - alternate signal stacks for the threads that record, so that the
 * crash handler runs even when a thread overflowed its own stack, and a flush from a signal
 * handler never needs more of a thread's stack than a signal frame.
 *
 * Reserved regions (MAP_NORESERVE: they cost address space, not memory) hold thread_max stacks
 * of ALTSTACK_BYTES, each above a guard page; they are reserved as the threads' slots reach
 * them (altstack.c: one kernel mapping for the first 32 slots where the kernel has guard
 * markers, one more each time the slots in use double). A thread that registers gets the stack of
 * its thread slot, its guard set up then, if it has no alternate stack of its own (sigaltstack()
 * says SS_DISABLE); at its exit (the thread key's destructor) the stack is removed again if it
 * is still the thread's, before the slot can be recycled for another thread. Only while
 * enabled (any of xfdr's signal handlers installed: flush_on_crash, flush_on_terminate,
 * flush_signal): the signal layer enables and disables it at init.
 */
#ifndef XFDR_RUNTIME_RECORD_ALTSTACK_H
#define XFDR_RUNTIME_RECORD_ALTSTACK_H

#include <stddef.h>
#include <stdint.h>

/*
 * Bytes of one stack: the kernel's signal frame (up to ~11 KiB with AMX state), libunwind
 * (~10 KiB) and then a whole flush (~10 KiB of path buffers, the .map lines, the symbolizer)
 * with room to spare.
 */
#define ALTSTACK_BYTES (64u * 1024u)

/*
 * altstack_enable - reserve the first stacks' region (the first call; the thread table,
 * whose slots the stacks follow, must be set up) and give registering threads a stack from now
 * on.
 * altstack_disable - registering threads get none any more (those that have one keep it).
 * Context: init. altstack_enable returns 0, -EINVAL before the thread table exists, or -ENOMEM.
 */
int altstack_enable(void);
void altstack_disable(void);

/*
 * altstack_thread_start - give the calling thread the stack of slot index, unless it has an
 * alternate stack already or stacks are not enabled. Failures leave the thread without one.
 * Context: thread registration, possibly in a signal handler (sigaltstack, mprotect or madvise,
 * and mmap for a slot beyond the regions reserved so far);
 * errno is preserved.
 */
void altstack_thread_start(uint32_t index);

/*
 * altstack_thread_stop - remove the calling thread's alternate stack if it is the one of slot
 * index and the thread is not running on it. Context: the thread's exit; errno is preserved.
 */
void altstack_thread_stop(uint32_t index);

#endif /* XFDR_RUNTIME_RECORD_ALTSTACK_H */
