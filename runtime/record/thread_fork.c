/*
 * runtime/record/thread_fork.c - the thread table in a fork child (see thread_fork.h).
 */
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/base/compiler.h"
#include "runtime/record/thread.h"
#include "runtime/record/thread_fork.h"

void thread_before_fork(void)
{
	struct thread_slot *mine = rec_self.slot;

	/* Written only when it changes: after a fork() the page is copy-on-write (a page fault). */
	if (xfdr_load_relaxed(&thread_table.forking) != mine)
		xfdr_store_relaxed(&thread_table.forking, mine);
}

void thread_after_fork_parent(void)
{
	xfdr_store_relaxed(&thread_table.forking, (struct thread_slot *)NULL);
}

void thread_table_after_fork(void)
{
	struct rec_thread *t = &rec_self;
	struct thread_slot *mine = t->slot ? t->slot : xfdr_load_relaxed(&thread_table.forking);
	struct thread_slot *slots;
	uint32_t i, n;

	slots = thread_slots_used(&n);
	for (i = 0; i < n; i++) {
		struct thread_slot *s = &slots[i];

		if (s == mine)
			continue;
		xfdr_store_relaxed(&s->busy, 0u);
		xfdr_store_relaxed(&s->session, 0u);
		/*
		 * A slot whose thread is not known to be gone stays taken: without fork()'s
		 * handlers, a thread the child made first may be adopting while the thread that
		 * forked, which keeps its slot, has not recorded yet.
		 */
		if (mine)
			xfdr_store_release(&s->state, (uint32_t)SLOT_FREE);
	}
	if (mine) {
		/* The thread that forked leads the child: its tid is the pid. */
		xfdr_store_relaxed(&mine->tid, (uint32_t)getpid());
		xfdr_store_relaxed(&mine->id_session, 0u);
		xfdr_store_relaxed(&mine->thread_id, 0u);
		xfdr_store_relaxed(&mine->session, 0u);
	}
	rec_thread_forget_buffer(t);
	thread_after_fork_parent();
}

void thread_self_keep_stack(uint32_t before, uint32_t after)
{
	struct rec_thread *t = &rec_self;

	if (t->stack_session == before)
		t->stack_session = after;
}
