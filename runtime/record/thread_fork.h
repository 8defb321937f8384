/*
 * runtime/record/thread_fork.h - the thread table in a fork child: only the thread that forked
 * exists there, and it is a new thread of a new process.
 */
#ifndef XFDR_RUNTIME_RECORD_THREAD_FORK_H
#define XFDR_RUNTIME_RECORD_THREAD_FORK_H

#include <stdint.h>

/*
 * thread_table_after_fork - free the slots of the parent's other threads (they do not run in
 * the child; one may have been inside the runtime when fork() copied its guard), give the
 * calling thread's slot the child's tid and a new thread id, and drop the buffer it held (the
 * parent's). Its shadow stack stays: the child returns from fork() inside the same calls.
 * Context: the child, right after fork(), before the new session's init.
 */
void thread_table_after_fork(void);

/*
 * thread_self_keep_stack - the calls the forking thread had open in the parent's session
 * (before) count in the child's (after) too, so the child's first buffer begins with them
 * (XFDRSTAK) and their exits are paired. Context: the child, after the new session's init.
 */
void thread_self_keep_stack(uint32_t before, uint32_t after);

#endif /* XFDR_RUNTIME_RECORD_THREAD_FORK_H */
