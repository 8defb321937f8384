/*
 * runtime/record/thread_fork.h - the thread table in a fork child: only the thread that forked
 * exists there, and it is a new thread of a new process.
 */
#ifndef XFDR_RUNTIME_RECORD_THREAD_FORK_H
#define XFDR_RUNTIME_RECORD_THREAD_FORK_H

#include <stdint.h>

/*
 * thread_before_fork - remember, for the child, which slot is the forking thread's: fork()'s
 * prepare handler, and the program's _Fork() (thread_fork.c) before the real one. Kept after
 * fork() (forgetting it in the parent would write a page fork() made copy-on-write: a page
 * fault each fork); the next fork() or _Fork() replaces it. A child made by a raw clone()
 * finds the slot remembered at the last of them: its forking thread's only if that thread
 * made them (a thread the child makes before the forking one records may then take the
 * forking one's slot).
 * Context: the forking thread, in the pthread_atfork() prepare handler or before _Fork().
 */
void thread_before_fork(void);

/*
 * thread_table_after_fork - free the slots of the parent's other threads (they do not run in
 * the child; one may have been inside the runtime when fork() copied its guard), give the
 * forking thread's slot the child's tid and a new thread id, and drop the buffer the calling
 * thread held (the parent's). The forking thread's shadow stack stays: the child returns from
 * fork() inside the same calls. Called by a thread the child made (the forking thread not
 * recording yet), it knows the forking thread's slot from thread_before_fork(); without one
 * remembered it frees none (they stay taken, never reused).
 * Context: the child, as it adopts its recorder, before the new session's init.
 */
void thread_table_after_fork(void);

/*
 * thread_self_keep_stack - the calls the forking thread had open in the parent's session
 * (before) count in the child's (after) too, so the child's first buffer begins with them
 * (XFDRSTAK) and their exits are paired. Context: the child, after the new session's init.
 */
void thread_self_keep_stack(uint32_t before, uint32_t after);

#endif /* XFDR_RUNTIME_RECORD_THREAD_FORK_H */
