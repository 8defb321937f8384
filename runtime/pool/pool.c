/*
 * runtime/pool/pool.c - claiming buffers, handing them back, pinning them for a flush (the
 * run-time side of the pool; layout and states: pool_types.h).
 */
#define _LGPL_SOURCE
#include <urcu/arch.h>
#include <urcu/lfstack.h>

#include "runtime/base/compiler.h"
#include "runtime/pool/pool.h"
#include "xfdr/format.h"

struct pool rt_pool;

static XFDR_NOINSTR struct pool_desc *pop_free(void)
{
	struct cds_lfs_node *n;

	/*
	 * __cds_lfs_pop() is safe without a lock or an RCU read side here because no node is
	 * ever pushed while a session records (full buffers are reclaimed in place, never pushed
	 * back; pool_setup() refills the stack only after thread_quiesce()). The stack only
	 * shrinks, so the head a popper read cannot be popped and pushed back before its
	 * cmpxchg (no ABA), and a node's next pointer, read after the head, is never rewritten
	 * during the session.
	 */
	n = __cds_lfs_pop(&rt_pool.free_stack);
	if (!n)
		return NULL;
	return caa_container_of(n, struct pool_desc, node);
}

/*
 * A flush pins a buffer only while it copies it into memory (a few microseconds): wait that
 * long rather than take a newer buffer, which would leave a hole in the older one's thread
 * history. Bounded, because the flusher may be preempted or interrupted.
 */
#define PINNED_WAIT_SPINS 4096

static XFDR_NOINSTR uint64_t wait_unpinned(struct pool_desc *d, uint64_t c)
{
	int spins;

	for (spins = 0; (c & POOL_PINNED) && spins < PINNED_WAIT_SPINS; spins++) {
		caa_cpu_relax();
		/* pairs with the release in pool_unpin() */
		c = xfdr_load_acquire(&d->ctl);
	}
	return c;
}

/*
 * Ring mode: walk the buffers from ring_next on. The free stack hands buffers out in index
 * order, so index order from 0 is the order they were first filled, and a cursor that goes
 * round keeps taking the buffer filled longest ago. Owned buffers (a thread still writes) are
 * passed over, and pinned ones (a flush copies) when the copy outlasts the wait; after one
 * full round the claim fails. Not a liburcu queue of full buffers: its dequeue needs a lock
 * between dequeuers (wfcqueue) or RCU-deferred node reuse (lfqueue), and a claim may run in
 * a signal handler and reuses the node at once. A counter and one compare-exchange per
 * candidate need neither.
 */
static XFDR_NOINSTR struct pool_desc *reclaim_full(struct pool_reused *reused)
{
	uint32_t n = rt_pool.count, tries;

	for (tries = 0; tries < n; tries++) {
		uint64_t k = __atomic_fetch_add(&rt_pool.ring_next, 1, __ATOMIC_RELAXED);
		struct pool_desc *d = &rt_pool.descs[k % n];
		/* pairs with the release in pool_mark_full() and pool_unpin() */
		uint64_t c = xfdr_load_acquire(&d->ctl);

		if (POOL_STATE(c) != POOL_FULL)
			continue;
		c = wait_unpinned(d, c);
		if (POOL_STATE(c) != POOL_FULL || (c & POOL_PINNED))
			continue;
		/*
		 * Acquire: the flusher's copy (before its unpin) and the last owner's writes
		 * (before mark-full) happen before everything this claimer writes.
		 */
		if (!xfdr_cas(&d->ctl, &c, POOL_CTL(POOL_GEN(c) + 1, POOL_CLAIMING)))
			continue;
		reused->reused = 1;
		reused->owner_slot = xfdr_load_relaxed(&d->owner_slot);
		reused->owner_tid = xfdr_load_relaxed(&d->owner_tid);
		/* Ordered after the owner's last stores by the acquire of the claim. */
		reused->fn_records =
		    (xfdr_load_relaxed(&d->used_bytes) - xfdr_load_relaxed(&d->meta_bytes)) /
		    XFDR_FN_RECORD_BYTES;
		return d;
	}
	return NULL;
}

/*
 * Stream mode: walk the buffers from ring_next on for a free one (never written, or written by
 * the stream writer and handed back, pool_hand_back()). Not the free stack: a buffer goes back
 * to free during the session, and a popper of a stack whose nodes are pushed again can take a
 * node another thread holds (ABA). One compare-exchange on the control word, whose generation
 * changes at every claim, needs nothing else. After one full round the claim fails: the
 * writer is behind (or more threads record than there are buffers).
 * stream_free counts the free buffers, as a hint: while the writer is behind, every event of a
 * thread without a buffer tries to claim one, and each such try costs one load, not a walk of
 * the pool. It may lag (a claim can take a buffer just handed back before the count goes up):
 * a claim that finds none after a nonzero hint has only walked once for nothing.
 */
static XFDR_NOINSTR struct pool_desc *claim_free_in_place(void)
{
	uint32_t n = rt_pool.count, i;
	uint64_t start;

	if (xfdr_load_relaxed(&rt_pool.stream_free) <= 0)
		return NULL;
	start = __atomic_fetch_add(&rt_pool.ring_next, 1, __ATOMIC_RELAXED);
	for (i = 0; i < n; i++) {
		struct pool_desc *d = &rt_pool.descs[(start + i) % n];
		/* pairs with the release in pool_hand_back(): the writer is done reading it */
		uint64_t c = xfdr_load_acquire(&d->ctl);

		if (POOL_STATE(c) != POOL_FREE || (c & POOL_PINNED))
			continue;
		if (xfdr_cas(&d->ctl, &c, POOL_CTL(POOL_GEN(c) + 1, POOL_CLAIMING))) {
			__atomic_fetch_sub(&rt_pool.stream_free, 1, __ATOMIC_RELAXED);
			return d;
		}
	}
	return NULL;
}

XFDR_NOINSTR int pool_hand_back(struct pool_desc *d, uint32_t gen)
{
	uint64_t c = POOL_CTL(gen, POOL_FULL);

	/* pairs with the acquire in claim_free_in_place() */
	if (!__atomic_compare_exchange_n(&d->ctl, &c, POOL_CTL(gen, POOL_FREE), 0, __ATOMIC_RELEASE,
					 __ATOMIC_RELAXED))
		return 0;
	__atomic_fetch_add(&rt_pool.stream_free, 1, __ATOMIC_RELAXED);
	return 1;
}

XFDR_NOINSTR struct pool_desc *pool_claim(struct pool_reused *reused)
{
	uint32_t mode = xfdr_load_relaxed(&rt_pool.mode);
	struct pool_desc *d;

	reused->reused = 0;
	reused->fn_records = 0;
	if (mode == POOL_STREAM) {
		d = claim_free_in_place();
	} else if ((d = pop_free())) {
		/* A free buffer is this thread's alone: the flusher and reclaimers skip it. */
		uint64_t c = xfdr_load_relaxed(&d->ctl);

		xfdr_store_relaxed(&d->ctl, POOL_CTL(POOL_GEN(c) + 1, POOL_CLAIMING));
	} else if (mode == POOL_RING) {
		d = reclaim_full(reused);
	}
	/*
	 * Release: the thread's previous buffer was marked full before this claim, and the stream
	 * writer, which reads claims with acquire, then finds it full (stream.c).
	 */
	if (d)
		xfdr_store_relaxed(&d->claim_seq,
				   __atomic_fetch_add(&rt_pool.claims, 1, __ATOMIC_RELEASE));
	return d;
}

XFDR_NOINSTR int pool_pin(struct pool_desc *d, uint32_t gen)
{
	/* pairs with the release in pool_publish_owned() and pool_mark_full() */
	uint64_t c = xfdr_load_acquire(&d->ctl);

	for (;;) {
		uint32_t st = POOL_STATE(c);

		if (POOL_GEN(c) != gen || (st != POOL_OWNED && st != POOL_FULL))
			return 0;
		/*
		 * Full count: more flushers than contexts, which cannot be. Refused rather than
		 * carried into the state bits; the flusher then writes the buffer as reused.
		 */
		if ((c & POOL_PINNED) == POOL_PINNED)
			return 0;
		if (xfdr_cas(&d->ctl, &c, c + POOL_PIN_ONE))
			return 1;
	}
}

XFDR_NOINSTR void pool_unpin(struct pool_desc *d)
{
	/*
	 * Takes this flusher's pin only: another may still copy. No borrow from the generation,
	 * the count being at least this pin. Pairs with the acquire of the compare-exchange in
	 * reclaim_full().
	 */
	__atomic_fetch_sub(&d->ctl, POOL_PIN_ONE, __ATOMIC_RELEASE);
}
