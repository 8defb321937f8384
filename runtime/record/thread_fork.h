/*
 * runtime/record/thread_fork.h - the thread table in a fork child: only the thread that forked
 * exists there, and it is a new thread of a new process.
 */
#ifndef XFDR_RUNTIME_RECORD_THREAD_FORK_H
#define XFDR_RUNTIME_RECORD_THREAD_FORK_H

#include <stdint.h>

/*
 * thread_before_fork, thread_after_fork_parent - remember, for the child, which slot is the
 * forking thread's (fork()'s prepare handler), and forget it in the parent.
 * Context: the forking thread, in pthread_atfork() handlers.
 */
void thread_before_fork(void);
void thread_after_fork_parent(void);

/*
 * thread_table_after_fork - free the slots of the parent's other threads (they do not run in
 * the child; one may have been inside the runtime when fork() copied its guard), give the
 * forking thread's slot the child's tid and a new thread id, and drop the buffer the calling
 * thread held (the parent's). The forking thread's shadow stack stays: the child returns from
 * fork() inside the same calls. Called by a thread the child made (the forking thread not
 * recording yet), it knows the forking thread's slot from thread_before_fork(); after
 * _Fork() or clone() it does not, and frees none (they stay taken, never reused).
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
