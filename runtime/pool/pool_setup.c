/*
 * runtime/pool/pool_setup.c - mapping, zeroing and refilling the buffer pool between sessions.
 *
 * No _LGPL_SOURCE here, on purpose: liburcu's inline cds_lfs_push() forms &head->node from a
 * NULL head, which UBSan rejects in our sanitizer builds. Set-up is not on any hot path, so
 * the library's out-of-line functions do.
 */
#include <errno.h>
#include <string.h>

#include <urcu/lfstack.h>

#include "runtime/base/compiler.h"
#include "runtime/pool/pool.h"

int pool_setup(size_t buffer_bytes, uint32_t count, uint32_t session)
{
	uint32_t i;
	int rc;

	if (rt_pool.base && rt_pool.buffer_bytes == buffer_bytes && rt_pool.count == count) {
		/* Zero what the last session wrote: stale bytes must never read as records. */
		for (i = 0; i < count; i++) {
			struct pool_desc *d = &rt_pool.descs[i];
			size_t used = xfdr_load_acquire(&d->used_bytes);

			if (used)
				memset(d->data, 0, used);
		}
	} else {
		pool_memory_unmap();
		rc = pool_memory_map(buffer_bytes, count);
		if (rc)
			return rc;
	}
	__cds_lfs_init(&rt_pool.free_stack);
	/*
	 * Pushed from the last to the first, so buffers leave the stack in index order: the
	 * flusher writes them in the order they were taken, which keeps each thread's buffers
	 * in time order in the file.
	 */
	for (i = count; i-- > 0;) {
		struct pool_desc *d = &rt_pool.descs[i];

		d->data = rt_pool.base + (size_t)i * buffer_bytes;
		xfdr_store_relaxed(&d->used_bytes, (size_t)0);
		xfdr_store_relaxed(&d->state, (uint32_t)POOL_FREE);
		d->owner_slot = 0;
		d->owner_tid = 0;
		d->owner_tid16 = 0;
		d->first_tsc = 0;
		d->flush_mark = 0;
		d->flush_used = 0;
		cds_lfs_node_init(&d->node);
		cds_lfs_push(&rt_pool.free_stack, &d->node);
	}
	xfdr_store_release(&rt_pool.session, session);
	return 0;
}
