/*
 * runtime/pool/pool.h - the buffer pool: set-up between sessions, take and hand back while
 * recording.
 */
#ifndef XFDR_RUNTIME_POOL_POOL_H
#define XFDR_RUNTIME_POOL_POOL_H

#include "runtime/pool/pool_types.h"

extern struct pool rt_pool XFDR_HIDDEN;

/*
 * pool_setup - make an empty pool of count buffers of buffer_bytes for the given session,
 * with the given policy (enum pool_mode), in anonymous memory (file_path NULL) or in a shared
 * mapping of file_path laid out as a version 1 trace (backing=file).
 * Same geometry as before: what the last session wrote is zeroed in place (the pages stay
 * populated); otherwise the old mappings are released and new ones mapped by
 * pool_memory_map() (2 MiB-aligned, populated in the background and at the latest when a
 * thread claims the buffer).
 * Context: init only, with no thread inside the runtime (thread_quiesce()).
 * Returns 0 or -ENOMEM (the pool is then empty: count 0).
 */
int pool_setup(size_t buffer_bytes, uint32_t count, uint32_t session, enum pool_mode mode,
	       const char *file_path);

/*
 * pool_forget_after_fork - in a fork child: the pool's mappings are copies of the parent's (or
 * shared with it, backing=file); release them without touching the parent's data or files,
 * so that the next pool_setup() maps a pool of the child's own.
 * Context: the child, right after fork(), before any thread records.
 */
void pool_forget_after_fork(void);

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

/* What a ring-mode claim replaced: the previous owner of the buffer, to count it. */
struct pool_reused {
	int reused; /* 0: the buffer came from the free stack */
	uint32_t owner_slot;
	uint32_t owner_tid;
};

/*
 * pool_claim - take a buffer for the calling thread: a free one, or in ring mode the oldest
 * full one that no flush is copying (*reused says whose it was). The buffer comes back in
 * state claiming with a new generation; the caller fills the owner fields and the preamble,
 * then publishes it with pool_publish_owned(). NULL when none is left (bounded mode), or
 * when every buffer is owned or pinned (ring mode).
 * Context: any thread, signal handlers included; lock-free, never blocks, never allocates.
 */
struct pool_desc *pool_claim(struct pool_reused *reused);

/* The claimed buffer is ready: the flusher may copy it from now on. */
static inline XFDR_NOINSTR void pool_publish_owned(struct pool_desc *d)
{
	uint64_t c = xfdr_load_relaxed(&d->ctl);

	/* pairs with the acquire of ctl in the flusher: owner fields and preamble before it */
	xfdr_store_release(&d->ctl, POOL_CTL(POOL_GEN(c), POOL_OWNED));
}

/*
 * pool_mark_full - the owner hands its buffer back: no record is ever written to it again
 * (ring mode may claim it anew). last_tsc is the TSC of its last record. A flush may hold
 * the pin meanwhile: the state changes, the pin stays.
 */
static inline XFDR_NOINSTR void pool_mark_full(struct pool_desc *d, uint64_t last_tsc)
{
	xfdr_store_relaxed(&d->last_tsc, last_tsc);
	/* owned -> full; pairs with the acquire of ctl in pool_claim() and the flusher */
	__atomic_fetch_xor(&d->ctl, (uint64_t)(POOL_OWNED ^ POOL_FULL), __ATOMIC_RELEASE);
}

/*
 * pool_pin - keep d from being claimed anew while the flusher copies it. Succeeds (1) only
 * when d is owned or full and still in generation gen; 0 means it was reclaimed since.
 * pool_unpin - let it go. Context: the flusher (exclusive).
 */
int pool_pin(struct pool_desc *d, uint32_t gen);
void pool_unpin(struct pool_desc *d);

#endif /* XFDR_RUNTIME_POOL_POOL_H */
