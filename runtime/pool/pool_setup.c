/*
 * runtime/pool/pool_setup.c - mapping, zeroing and refilling the buffer pool between sessions,
 * and forgetting it in a fork child.
 *
 * No _LGPL_SOURCE here, on purpose: liburcu's inline cds_lfs_push() forms &head->node from a
 * NULL head, which UBSan rejects in our sanitizer builds. Set-up is not on any hot path, so
 * the library's out-of-line functions do.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <urcu/lfstack.h>

#include "runtime/base/compiler.h"
#include "runtime/pool/pool.h"

/*
 * The flush contexts (pool_types.h), one mapping for both, each on pages of its own: a copy
 * area of one buffer, its notes and its order. Not prefaulted: only a flush touches a context,
 * and a flush may fault; the reserve's pages stay untouched unless a crash meets a running
 * flush.
 */
static void scratch_unmap(int mapped)
{
	int i;

	if (rt_pool.flush_scratch && mapped)
		munmap(rt_pool.flush_scratch, rt_pool.flush_scratch_bytes);
	rt_pool.flush_scratch = NULL;
	rt_pool.flush_scratch_bytes = 0;
	for (i = 0; i < POOL_FLUSH_CONTEXTS; i++) {
		rt_pool.flush[i].order = NULL;
		rt_pool.flush[i].notes = NULL;
		rt_pool.flush[i].copy = NULL;
	}
}

static size_t round_up(size_t n, size_t to)
{
	return (n + to - 1) & ~(to - 1);
}

static int scratch_map(size_t buffer_bytes, uint32_t count)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t copy_bytes = round_up(buffer_bytes, 64);
	size_t notes_bytes = round_up((size_t)count * sizeof(struct pool_flush_note), 64);
	size_t ctx_bytes =
	    round_up(copy_bytes + notes_bytes + (size_t)count * sizeof(uint32_t), page);
	size_t bytes = ctx_bytes * POOL_FLUSH_CONTEXTS;
	uint8_t *p;
	int i;

	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -ENOMEM;
	/*
	 * Left out of fork children like the pool (pool_memory.c). Should the advice fail, a child
	 * keeps a copy it never uses: pool_forget_after_fork() does not unmap it.
	 */
	if (rt_pool.dontfork)
		madvise(p, bytes, MADV_DONTFORK);
	rt_pool.flush_scratch = p;
	rt_pool.flush_scratch_bytes = bytes;
	for (i = 0; i < POOL_FLUSH_CONTEXTS; i++) {
		uint8_t *c = p + (size_t)i * ctx_bytes;

		rt_pool.flush[i].copy = c;
		rt_pool.flush[i].notes = (struct pool_flush_note *)(void *)(c + copy_bytes);
		rt_pool.flush[i].order = (uint32_t *)(void *)(c + copy_bytes + notes_bytes);
	}
	return 0;
}

/*
 * The generation the buffers of a new session start from: past every generation the last
 * session's buffers reached. A thread of that session that still holds one (and its
 * generation) can then never take a buffer of the new session for its own (pool_mark_full()),
 * even where the new pool is mapped at the old one's address.
 */
static uint32_t next_generation(void)
{
	uint32_t i, max = rt_pool.first_gen;

	for (i = 0; rt_pool.descs && i < rt_pool.count; i++) {
		uint32_t g = POOL_GEN(xfdr_load_acquire(&rt_pool.descs[i].ctl));

		if (g - rt_pool.first_gen > max - rt_pool.first_gen)
			max = g;
	}
	return max + 1;
}

int pool_setup(size_t buffer_bytes, uint32_t count, uint32_t session, enum pool_mode mode,
	       const char *file_path)
{
	uint32_t i, gen = next_generation();
	int rc;

	if (!file_path && rt_pool.map && !rt_pool.file_backed &&
	    rt_pool.buffer_bytes == buffer_bytes && rt_pool.count == count) {
		/*
		 * Zero what the last session wrote: stale bytes must never read as records. A
		 * buffer claimed more than once (ring mode), or one an erase shrank, may hold
		 * older bytes past its length.
		 */
		for (i = 0; i < count; i++) {
			struct pool_desc *d = &rt_pool.descs[i];
			size_t used = xfdr_load_acquire(&d->used_bytes);

			if (POOL_GEN(xfdr_load_acquire(&d->ctl)) - rt_pool.first_gen > 1 ||
			    xfdr_load_relaxed(&d->erasable))
				used = buffer_bytes;
			if (used)
				memset(d->data, 0, used);
		}
	} else {
		/* backing=file always gets new files: the old ones hold the old session. */
		scratch_unmap(1);
		pool_memory_unmap();
		rc = pool_memory_map(buffer_bytes, count, file_path);
		if (!rc) {
			rc = scratch_map(buffer_bytes, count);
			if (rc)
				pool_memory_unmap();
		}
		if (rc)
			return rc;
	}
	__cds_lfs_init(&rt_pool.free_stack);
	/*
	 * Pushed from the last to the first, so buffers leave the stack in index order: ring
	 * mode's cursor relies on it (see pool.c).
	 */
	for (i = count; i-- > 0;) {
		struct pool_desc *d = &rt_pool.descs[i];

		d->data = rt_pool.base + (size_t)i * buffer_bytes;
		xfdr_store_relaxed(&d->used_bytes, (size_t)0);
		xfdr_store_relaxed(&d->stable_bytes, (size_t)0);
		xfdr_store_relaxed(&d->meta_bytes, (size_t)0);
		xfdr_store_relaxed(&d->erasable, 0u);
		xfdr_store_relaxed(&d->ctl, POOL_CTL(gen, POOL_FREE));
		xfdr_store_relaxed(&d->claim_seq, (uint64_t)0);
		d->owner_slot = 0;
		d->owner_tid = 0;
		d->owner_thread_id = 0;
		d->first_tsc = 0;
		xfdr_store_relaxed(&d->last_tsc, (uint64_t)0);
		cds_lfs_node_init(&d->node);
		cds_lfs_push(&rt_pool.free_stack, &d->node);
	}
	xfdr_store_relaxed(&rt_pool.ring_next, (uint64_t)0);
	xfdr_store_relaxed(&rt_pool.claims, (uint64_t)0);
	xfdr_store_relaxed(&rt_pool.stream_free, (int64_t)count);
	rt_pool.first_gen = gen;
	xfdr_store_relaxed(&rt_pool.mode, (uint32_t)mode);
	pool_locator_write(session);
	xfdr_store_release(&rt_pool.session, session);
	return 0;
}

void pool_forget_after_fork(void)
{
	/*
	 * The scratch is private memory: unmapping the child's copy leaves the parent's alone;
	 * one left out of the child is not there.
	 */
	scratch_unmap(!rt_pool.dontfork);
	pool_memory_forget();
	xfdr_store_relaxed(&rt_pool.ring_next, (uint64_t)0);
	xfdr_store_relaxed(&rt_pool.claims, (uint64_t)0);
	xfdr_store_relaxed(&rt_pool.stream_free, (int64_t)0);
	__cds_lfs_init(&rt_pool.free_stack);
	xfdr_store_release(&rt_pool.session, (uint32_t)0);
}
