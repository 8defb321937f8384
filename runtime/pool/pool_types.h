/*
 * runtime/pool/pool_types.h - the buffer pool's layout.
 *
 * One anonymous mapping holds buffer_max buffers of buffer_bytes each, prefaulted and zero.
 * Each buffer has a descriptor (own cache line, so the owner's length stores do not bounce
 * with its neighbours') in a second mapping. A buffer is
 *   free  -> on the lock-free free stack, all zero;
 *   owned -> a thread writes records into it and publishes used_bytes;
 *   full  -> handed back (no room left, or its thread exited); never written again.
 * Nothing goes back to free during a session: only pool_setup() (quiesced) refills the stack.
 */
#ifndef XFDR_RUNTIME_POOL_POOL_TYPES_H
#define XFDR_RUNTIME_POOL_POOL_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include <urcu/lfstack.h>

#include "runtime/base/compiler.h"

enum pool_buf_state {
	POOL_FREE = 0,
	POOL_OWNED = 1,
	POOL_FULL = 2,
};

struct pool_desc {
	struct cds_lfs_node node; /* free-stack link; written only by pool_setup() */
	uint8_t *data;		  /* fixed while the mapping lives */
	/*
	 * Bytes of whole records in data. The owner store-releases it after writing them;
	 * the flusher load-acquires it and copies only that prefix.
	 */
	size_t used_bytes;
	uint32_t state;	      /* enum pool_buf_state; release after the owner fields */
	uint32_t owner_slot;  /* thread table index of the owner */
	uint32_t owner_tid;   /* kernel tid of the owner */
	uint32_t owner_tid16; /* the id in the buffer's NewBuffer record */
	uint64_t first_tsc;   /* the TSC of the buffer's preamble (its NewCPUId) */
	uint32_t mem_ready;   /* pool_memory.c: nonzero once the buffer's pages are populated */
	uint32_t flush_mark;  /* flusher-private: grouping per thread */
	size_t flush_used;    /* flusher-private: the length this flush copies */
} __attribute__((aligned(XFDR_CACHELINE)));

struct pool {
	/* Popped by every thread that needs a buffer: on a line of its own. */
	struct __cds_lfs_stack free_stack __attribute__((aligned(XFDR_CACHELINE)));
	uint8_t *base __attribute__((aligned(XFDR_CACHELINE)));
	size_t map_bytes;
	struct pool_desc *descs;
	size_t descs_map_bytes;
	size_t buffer_bytes;
	uint32_t count;
	uint32_t session; /* written by pool_setup() while quiesced */
};

#endif /* XFDR_RUNTIME_POOL_POOL_TYPES_H */
