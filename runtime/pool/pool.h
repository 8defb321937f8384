/*
 * runtime/pool/pool.h - the buffer pool: set-up between sessions, take and hand back while
 * recording.
 */
#ifndef XFDR_RUNTIME_POOL_POOL_H
#define XFDR_RUNTIME_POOL_POOL_H

#include "runtime/pool/pool_types.h"

extern struct pool rt_pool XFDR_HIDDEN;

/*
 * pool_setup - make an empty pool of count buffers of buffer_bytes for the given session.
 * Same geometry as before: the used prefix of every buffer is zeroed in place (the pages stay
 * populated); otherwise the old mappings are released and new ones mapped with MAP_POPULATE.
 * Context: init only, with no thread inside the runtime (thread_quiesce()).
 * Returns 0 or -ENOMEM (the pool is then empty: count 0).
 */
int pool_setup(size_t buffer_bytes, uint32_t count, uint32_t session);

/*
 * pool_memory_map - map count buffers of buffer_bytes and their descriptors into rt_pool.
 * pool_memory_unmap - release them (rt_pool.count becomes 0).
 * Context: init only (pool_setup()). pool_memory_map returns 0 or -ENOMEM.
 */
int pool_memory_map(size_t buffer_bytes, uint32_t count);
void pool_memory_unmap(void);

/*
 * pool_memory_ready - make sure every page of d's buffer is in memory, so that recording into
 * it never takes a page fault. Called once per claim, before the first byte is written.
 * Context: the claiming thread's slow path, signal handlers included; async-signal-safe.
 */
void pool_memory_ready(struct pool_desc *d);

/*
 * __pool_take - pop a free buffer, or NULL when none is left.
 * Context: any thread, signal handlers included; lock-free, never blocks, never allocates.
 * The caller provides the synchronization __cds_lfs_pop() needs, by the session rule: no
 * buffer is pushed back while a session records (see pool.c).
 */
struct pool_desc *__pool_take(void);

/* The owner hands its buffer back as full: no record is ever written to it again. */
static inline XFDR_NOINSTR void pool_mark_full(struct pool_desc *d)
{
	/* pairs with the acquire of state in snapshot_lengths() */
	xfdr_store_release(&d->state, (uint32_t)POOL_FULL);
}

#endif /* XFDR_RUNTIME_POOL_POOL_H */
