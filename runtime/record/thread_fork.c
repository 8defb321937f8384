/*
 * runtime/record/thread_fork.c - the thread table in a fork child (see thread_fork.h).
 */
#include <dlfcn.h>
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/base/compiler.h"
#include "runtime/record/thread.h"
#include "runtime/record/thread_fork.h"
#include "xfdr/xfdr.h"

void thread_before_fork(void)
{
	struct thread_slot *mine = rec_slot(&rec_self);

	/* Written only when it changes: after a fork() the page is copy-on-write (a page fault). */
	if (xfdr_load_relaxed(&thread_table.forking) != mine)
		xfdr_store_relaxed(&thread_table.forking, mine);
}

/*
 * The program's _Fork() (glibc 2.34): fork() without the atfork handlers. The slot it
 * remembers is the calling thread's, as fork()'s prepare handler remembers the forking one's.
 * fork() itself calls libc's _Fork() directly, not this one. The next _Fork() in the lookup
 * order (libc's) is found at load, so that this one stays async-signal-safe as libc's is;
 * without one, there is no _Fork() to call: ENOSYS.
 */
static pid_t (*real_fork)(void);

__attribute__((constructor)) static XFDR_NOINSTR void find_real_fork(void)
{
	*(void **)&real_fork = dlsym(RTLD_NEXT, "_Fork");
}

XFDR_API XFDR_NOINSTR pid_t _Fork(void)
{
	if (!real_fork) {
		errno = ENOSYS;
		return -1;
	}
	thread_before_fork();
	return real_fork();
}

void thread_table_after_fork(void)
{
	struct rec_thread *t = &rec_self;
	struct thread_slot *mine =
	    rec_slot(t) ? rec_slot(t) : xfdr_load_relaxed(&thread_table.forking);
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
	/* A child made by a raw clone() later must not take it (thread_fork.h). */
	xfdr_store_relaxed(&thread_table.forking, (struct thread_slot *)NULL);
}

void thread_self_keep_stack(uint32_t before, uint32_t after)
{
	struct rec_thread *t = &rec_self;

	if (t->stack_session == before)
		t->stack_session = after;
}
