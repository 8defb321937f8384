/*
 * runtime/record/thread.c - thread registration and exit, the thread table, quiescence.
 *
 * The thread table is an array of thread_max slots (in .bss up to the default thread_max, else a
 * mapping of its own), each populated when first taken. A thread claims a slot on its first event:
 * first the never-used slots (a bump index), then, when those are gone, slots freed when a session
 * began, then slots of threads that exited (their drop counts are folded into
 * thread_table.recycled, so totals stay exact; only the name of the recycled thread leaves the .map
 * file). A full table means the thread's events are dropped and counted as no_thread_slot.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "runtime/record/clock_fast.h"
#include "runtime/base/compiler.h"
#include "runtime/base/monotonic.h"
#include "runtime/pool/pool.h"
#include "runtime/base/print.h"
#include "runtime/record/altstack.h"
#include "runtime/record/session.h"
#include "runtime/record/thread.h"
#include "runtime/record/thread_slots.h"

struct thread_slot thread_no_slot = {.busy = 1};

__thread struct rec_thread rec_self __attribute__((tls_model("initial-exec"))) = {
    .cpu = REC_NO_CPU,
    .slot = &thread_no_slot,
};

struct thread_table thread_table;

enum {
	MB_NONE = 0,
	MB_PRIVATE = 1, /* MEMBARRIER_CMD_PRIVATE_EXPEDITED, registered */
	MB_GLOBAL = 2,	/* MEMBARRIER_CMD_GLOBAL: slower, needs no registration */
};
static int membarrier_kind;
static void (*watcher)(struct thread_slot *s);

static void thread_exit(void *arg);

static void membarrier_setup(void)
{
	long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);

	if (cmds < 0)
		return;
	if ((cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
	    syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0)
		membarrier_kind = MB_PRIVATE;
	else if (cmds & MEMBARRIER_CMD_GLOBAL)
		membarrier_kind = MB_GLOBAL;
}

int thread_table_setup(uint32_t thread_max)
{
	struct thread_table *tt = &thread_table;
	void *p;
	int rc;

	if (xfdr_load_acquire(&tt->slots))
		return 0;
	if (!tt->key_ok) {
		rc = pthread_key_create(&tt->key, thread_exit);
		if (rc)
			return -rc;
		tt->key_ok = 1;
	}
	/*
	 * Not populated: a slot's pages are touched when a thread first takes it
	 * (thread_register()), so that a process with few threads has few pages here for fork()
	 * to copy, and a thread's events never fault on its slot. Up to the default thread_max,
	 * the table in .bss (thread_slots.h): a mapping of its own would cost every fork child a
	 * mapping and a page-table page.
	 */
	if (thread_max <= THREAD_SLOTS_BSS)
		p = thread_slots_bss;
	else
		p = mmap(NULL, sizeof(struct thread_slot) * thread_max, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -ENOMEM;
	membarrier_setup();
	tt->max = thread_max;
	/* pairs with the acquire in thread_register() and the readers of the table */
	xfdr_store_release(&tt->slots, (struct thread_slot *)p);
	return 0;
}

static void slot_zero_counts(struct thread_slot *s)
{
	int c;

	for (c = 0; c < DROP_CAUSES; c++)
		xfdr_store_relaxed(&s->dropped[c], (uint64_t)0);
	for (c = 0; c < THREAD_NOTES; c++)
		xfdr_store_relaxed(&s->noted[c], (uint64_t)0);
}

void thread_table_reset(void)
{
	struct thread_table *tt = &thread_table;
	uint32_t i, n;
	struct thread_slot *slots = thread_slots_used(&n);
	int c;

	for (c = 0; c < DROP_CAUSES; c++) {
		xfdr_store_relaxed(&tt->unattributed[c], (uint64_t)0);
		xfdr_store_relaxed(&tt->recycled[c], (uint64_t)0);
	}
	for (c = 0; c < THREAD_NOTES; c++)
		xfdr_store_relaxed(&tt->noted_elsewhere[c], (uint64_t)0);
	xfdr_store_relaxed(&tt->next_thread_id, 0u);
	for (i = 0; i < n; i++) {
		struct thread_slot *s = &slots[i];

		slot_zero_counts(s);
		xfdr_store_relaxed(&s->session, 0u);
		if (xfdr_load_acquire(&s->state) == SLOT_EXITED)
			xfdr_store_release(&s->state, (uint32_t)SLOT_FREE);
	}
}

static void name_store(uint64_t w[2], const char name[16])
{
	uint64_t a, b;

	memcpy(&a, name, 8);
	memcpy(&b, name + 8, 8);
	xfdr_store_relaxed(&w[0], a);
	xfdr_store_relaxed(&w[1], b);
}

static void name_load(const uint64_t w[2], char out[17])
{
	uint64_t a = xfdr_load_relaxed(&w[0]), b = xfdr_load_relaxed(&w[1]);

	memcpy(out, &a, 8);
	memcpy(out + 8, &b, 8);
	out[16] = '\0';
}

static void current_name(uint64_t w[2])
{
	char name[16] = {0};

	/* The kernel fills at most 16 bytes, NUL included. */
	if (prctl(PR_GET_NAME, name, 0, 0, 0))
		memset(name, 0, sizeof(name));
	name_store(w, name);
}

/* Claim a slot in state SLOT_CLAIMING, or NULL. */
static struct thread_slot *slot_claim(struct thread_table *tt, struct thread_slot *slots)
{
	uint32_t idx = xfdr_load_relaxed(&tt->next_unused);
	uint32_t i;
	int c;

	while (idx < tt->max) {
		if (xfdr_cas(&tt->next_unused, &idx, idx + 1)) {
			uint32_t st = SLOT_FREE;

			if (xfdr_cas(&slots[idx].state, &st, (uint32_t)SLOT_CLAIMING)) {
				slots[idx].index = idx;
				return &slots[idx];
			}
			break;
		}
	}
	/*
	 * Free slots first (freed when a session began), then those of threads that exited:
	 * a thread of the session keeps its .map line while the session has had fewer
	 * threads than the table has slots.
	 */
	for (i = 0; i < 2 * tt->max; i++) {
		struct thread_slot *s = &slots[i % tt->max];
		uint32_t st = xfdr_load_relaxed(&s->state);

		if (st != SLOT_FREE && (st != SLOT_EXITED || i < tt->max))
			continue;
		if (!xfdr_cas(&s->state, &st, (uint32_t)SLOT_CLAIMING))
			continue;
		/*
		 * Fold the exited thread's drops into the process totals before reuse. A flush
		 * summing between the add and the zeroing counts them twice; exactness holds
		 * whenever no thread registers during the flush.
		 */
		for (c = 0; c < DROP_CAUSES; c++)
			xfdr_add_relaxed(&tt->recycled[c], xfdr_load_relaxed(&s->dropped[c]));
		for (c = 0; c < THREAD_NOTES; c++)
			xfdr_add_relaxed(&tt->noted_elsewhere[c], xfdr_load_relaxed(&s->noted[c]));
		slot_zero_counts(s);
		s->index = i % tt->max;
		return s;
	}
	return NULL;
}

XFDR_NOINSTR struct thread_slot *thread_register(struct rec_thread *t)
{
	struct thread_table *tt = &thread_table;
	struct thread_slot *slots = xfdr_load_acquire(&tt->slots);
	struct thread_slot *s;
	uint32_t tid;

	if (!slots)
		return NULL;
	s = slot_claim(tt, slots);
	if (!s)
		return NULL;
	tid = (uint32_t)syscall(SYS_gettid);
	/* The slot's pages, before any event writes its shadow stack (see thread_table_setup()). */
	memset(s->stack, 0, sizeof(s->stack));
	xfdr_store_relaxed(&s->tid, tid);
	xfdr_store_relaxed(&s->thread_id, 0u);
	xfdr_store_relaxed(&s->id_session, 0u);
	xfdr_store_relaxed(&s->session, 0u);
	xfdr_store_relaxed(&s->busy, 0u);
	current_name(s->name);
	name_store(s->exit_name, (const char[16]){0});
	xfdr_store_relaxed(&s->map_listing, 0u); /* a new thread: the live map has no line of it */
	/* pairs with the acquire of state by the flusher and thread_table_reset() */
	xfdr_store_release(&s->state, (uint32_t)SLOT_LIVE);
	/* Arms thread_exit() for this thread (again, if it runs after an earlier exit). */
	pthread_setspecific(tt->key, s);
	/* So that xfdr's handlers run even after a stack overflow, or on a small stack. */
	altstack_thread_start(s->index);
	t->slot = s;
	return s;
}

/*
 * Thread ids count up from 1 in each session, so the threads of one file never share one
 * (the low 16 bits of kernel tids do, once pid_max is above 65536). Beyond 65535 threads in
 * one session they wrap; the .map pairs every id with its full tid either way.
 */
XFDR_NOINSTR uint32_t thread_id_in_session(struct thread_slot *s, uint32_t session)
{
	uint32_t n;

	/* pairs with the release below: an id given for this session is complete */
	if (xfdr_load_acquire(&s->id_session) == session)
		return xfdr_load_relaxed(&s->thread_id);
	n = __atomic_fetch_add(&thread_table.next_thread_id, 1u, __ATOMIC_RELAXED);
	xfdr_store_relaxed(&s->thread_id, n % 0xffffu + 1u);
	xfdr_store_release(&s->id_session, session);
	return n % 0xffffu + 1u;
}

/*
 * thread_exit - pthread key destructor: hand the thread's buffer back as full.
 * A hook that runs later in the thread's teardown registers the thread again and re-arms
 * this destructor, so even those events are kept.
 * Like a hook, it stores its guard and then reads the recording session: a new session's
 * xfdr_init() stops recording before it waits for guards (thread_quiesce()) and only then sets
 * the pool up again, so the buffer is handed back either before that, or not at all (it is an
 * old session's, never written again). The hand-back is a compare-exchange on the claim's
 * generation besides, so a buffer that is no longer this thread's is never flipped.
 */
static XFDR_NOINSTR void thread_exit(void *arg)
{
	struct rec_thread *t = &rec_self;
	struct thread_slot *s = rec_slot(t);

	(void)arg;
	if (!s || xfdr_load_relaxed(&s->busy))
		return;
	xfdr_store_relaxed(&s->busy, 1u);
	xfdr_barrier();
	if (t->desc && t->session == session_recording())
		rec_thread_close_buffer(t);
	rec_thread_forget_buffer(t);
	current_name(s->exit_name);
	thread_tell_watcher(s);
	/* Before the slot, and with it the stack, can go to another thread. */
	altstack_thread_stop(s->index);
	t->slot = &thread_no_slot;
	xfdr_barrier();
	/* pairs with the acquire in thread_quiesce() */
	xfdr_store_release(&s->busy, 0u);
	/* pairs with the acquire of state by the flusher; the slot may be recycled after it */
	xfdr_store_release(&s->state, (uint32_t)SLOT_EXITED);
}

int thread_quiesce(unsigned timeout_ms)
{
	uint64_t deadline = mono_ms() + timeout_ms;
	uint32_t i, n;
	struct thread_slot *slots = thread_slots_used(&n);

	if (!slots)
		return 0;
	/*
	 * A hook stores its guard, then reads the session. After this barrier on every CPU
	 * either its guard store is visible to the loads below, or its session load sees the
	 * "not recording" the caller stored before calling us.
	 */
	if (membarrier_kind == MB_PRIVATE)
		syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
	else if (membarrier_kind == MB_GLOBAL)
		syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0);
	else
		nanosleep(&(struct timespec){.tv_nsec = 20000000}, NULL);
	/* Threads that registered meanwhile count too. */
	slots = thread_slots_used(&n);
	for (i = 0; i < n; i++) {
		/* pairs with the release that ends every hook */
		while (xfdr_load_acquire(&slots[i].busy)) {
			if (mono_ms() > deadline)
				return -EBUSY;
			sched_yield();
		}
	}
	return 0;
}

XFDR_NOINSTR void thread_slot_name(const struct thread_slot *s, char out[17])
{
	char path[64];
	struct pr_buf b = PR_BUF_INIT(path);
	uint32_t state = xfdr_load_acquire(&s->state);
	int fd;

	if (state == SLOT_EXITED) {
		name_load(s->exit_name, out);
		return;
	}
	name_load(s->name, out);
	pr_str(&b, "/proc/self/task/");
	pr_u64(&b, xfdr_load_relaxed(&s->tid));
	pr_str(&b, "/comm");
	fd = open(pr_cstr(&b), O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		char comm[17];
		ssize_t n = read(fd, comm, 16);

		close(fd);
		if (n > 0) {
			if (comm[n - 1] == '\n')
				n--;
			memcpy(out, comm, (size_t)n);
			out[n] = '\0';
		}
	}
}

void thread_set_watcher(void (*fn)(struct thread_slot *s))
{
	/* pairs with the acquire in thread_tell_watcher() */
	xfdr_store_release(&watcher, fn);
}

XFDR_NOINSTR void thread_name_refresh(struct thread_slot *s)
{
	current_name(s->name);
}

XFDR_NOINSTR void thread_tell_watcher(struct thread_slot *s)
{
	/* pairs with the release in thread_set_watcher() */
	void (*fn)(struct thread_slot *) = xfdr_load_acquire(&watcher);

	if (fn)
		fn(s);
}
