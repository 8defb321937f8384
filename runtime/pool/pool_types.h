/*
 * runtime/pool/pool_types.h - the buffer pool's layout.
 *
 * One mapping holds buffer_max buffers of buffer_bytes each (pool_memory.c): anonymous memory,
 * or with backing=file a shared mapping of the live trace file, the buffers after its 32-byte
 * header (pool_file.c). Each buffer has a descriptor (own cache line, so the owner's length
 * stores do not bounce with its neighbours') in a second mapping, which begins with the
 * "XFDRPOOL" locator (xfdr/format.h; pool_locator.c): the descriptors start at
 * XFDR_POOL_HEADER_BYTES from it, so a core dump or the ".pool" file tells a tool where the
 * buffers are and which of them hold records. A buffer is
 *   free     -> on the lock-free free stack, all zero;
 *   claiming -> a thread took it and is writing its preamble (no one else looks at it);
 *   owned    -> its thread writes records into it and publishes used_bytes;
 *   full     -> handed back (no room left, or its thread exited); never written again, except
 *               that ring mode may claim it anew (bounded mode never does).
 * Nothing goes back to the free stack during a session: only pool_setup() (quiesced) refills
 * it. In stream mode the writer turns a full buffer it has written back to free in place (same
 * generation), and claims take free buffers by a walk of the descriptors, never from the stack.
 *
 * The descriptor's control word packs the state, a pin count and a generation:
 *   bits 0-1 state | bits 2-3 pins | bits 32-63 generation (+1 at every claim)
 * Generations go on from session to session (pool_setup()), never back. A claim from ring
 * mode is one compare-exchange from (gen, full, no pin) to (gen + 1, claiming): a generation in
 * the word means a stale expected value never matches (no ABA), and a pinned buffer cannot be
 * claimed. A flusher pins a buffer while it copies it, after checking that the generation is
 * still the one it saw when it fixed the buffer's length: it never copies a buffer that is being
 * rewritten, and never one newer than its snapshot. Pins are counted, not a bit: the fatal
 * path's flush may copy a buffer that an ordinary flush holds pinned, and each unpin then takes
 * away its own pin only.
 *
 * Flush contexts: everything a flush writes while it runs, apart from its stack. Two, mapped
 * with the pool (pool_setup.c): the ordinary one, for the flushes rt_state.ctl makes exclusive
 * (xfdr_flush(), the flush signal, exit), and a reserve for the fatal path (crash, terminate),
 * which must leave a trace even while an ordinary flush is stuck in a slow write. Each holds
 * the order of its file's buffers, one buffer to copy into, and its notes on every buffer it
 * chose, by buffer index. Their pages are touched only by a flush that uses them: the reserve's
 * cost nothing until a crash meets a running flush.
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
	POOL_CLAIMING = 3,
};

#define POOL_STATE_MASK 3ull
#define POOL_PIN_ONE 4ull /* one flusher's pin */
#define POOL_PINNED 12ull /* the pin count's bits: nonzero while any flusher copies */
#define POOL_CTL(gen, state) ((uint64_t)(gen) << 32 | (uint64_t)(state))
#define POOL_GEN(c) ((uint32_t)((c) >> 32))
#define POOL_STATE(c) ((uint32_t)((c)&POOL_STATE_MASK))

enum pool_mode {
	POOL_BOUNDED = 0, /* exhausted: drop and count */
	POOL_RING = 1,	  /* exhausted: claim the oldest full buffer */
	POOL_STREAM = 2,  /* the stream writer hands written buffers back (free) */
};

struct pool_desc {
	struct cds_lfs_node node; /* free-stack link; written only by pool_setup() */
	uint8_t *data;		  /* fixed while the mapping lives */
	/*
	 * Bytes of whole records in data. The owner store-releases it after writing them. It
	 * shrinks only when the owner erases an elided entry (short-call elision), so a flusher
	 * copies an owned buffer up to it only when the buffer is not erasable.
	 */
	size_t used_bytes;
	/*
	 * Erasable buffers (the owner elides short calls in it): the bytes below the owner's
	 * erase floor, which it never rewrites, store-released after each record that moves the
	 * floor. The flusher copies an owned erasable buffer up to here and no further, so it
	 * never reads a byte an erase may rewrite: what it writes is a state the owner had, and
	 * an entry in a trace is never counted as elided later. All of used_bytes once full.
	 */
	size_t stable_bytes;
	uint32_t erasable;	  /* set at claim, before the buffer is published owned */
	uint64_t ctl;		  /* state, pin, generation (above) */
	uint64_t claim_seq;	  /* order of claims in the session: the flusher writes in it */
	uint32_t owner_slot;	  /* thread table index of the owner */
	uint32_t owner_tid;	  /* kernel tid of the owner */
	uint32_t owner_thread_id; /* the id in the buffer's NewBuffer record */
	uint32_t mem_ready;	  /* pool_memory.c: nonzero once the buffer's pages are populated */
	uint64_t first_tsc;	  /* the TSC of the buffer's preamble (its NewCPUId) */
	uint64_t last_tsc;	  /* the TSC of its last record, set before it becomes full */
	/*
	 * Bytes of metadata records in data (preamble, stack context, NewCPUId, TSCWrap,
	 * CallArgument, custom events): the rest of used_bytes is function records, which ring
	 * mode counts when it reuses the buffer. Written by the owner on its slow path only (the
	 * fast path writes function records alone), read by a reclaimer after its claim.
	 */
	size_t meta_bytes;
} __attribute__((aligned(XFDR_CACHELINE)));

/* What one flush notes about a buffer when it chooses it; read by that flush alone. */
struct pool_flush_note {
	uint64_t seq;	    /* claim_seq then: the order the flush writes buffers in */
	uint64_t first_tsc; /* first_tsc, owner_tid and owner_thread_id when chosen */
	size_t used;	    /* the length this flush copies; 0: not in this flush */
	uint32_t gen;	    /* generation when the flush fixed its length */
	uint32_t tid;
	uint32_t thread_id;
	uint32_t mark; /* grouping per thread: a value of epoch */
};

enum pool_flush_id {
	POOL_FLUSH_ORDINARY = 0, /* its user holds CTL_FLUSH_RUNNING */
	POOL_FLUSH_RESERVE = 1,	 /* the fatal path's, one thread at a time */
	POOL_FLUSH_CONTEXTS = 2,
};

/* One flush context (above): the scratch of one flush at a time. */
struct pool_flush_ctx {
	uint32_t *order;	       /* count buffer indices: the file's buffers, in slot order */
	struct pool_flush_note *notes; /* count, by buffer index */
	uint8_t *copy;		       /* one buffer */
	/*
	 * The last mark value handed out. Only ever grows (also across sessions: the notes are
	 * not cleared when the pool is set up again in place), so an old mark never equals a new
	 * one.
	 */
	uint32_t epoch;
};

struct pool {
	/* Popped by every thread that needs a buffer: on a line of its own. */
	struct __cds_lfs_stack free_stack __attribute__((aligned(XFDR_CACHELINE)));
	/* Ring mode: the next buffer index (mod count) to try to reclaim. */
	uint64_t ring_next __attribute__((aligned(XFDR_CACHELINE)));
	uint64_t claims;     /* claims so far in this session: the next claim_seq */
	int64_t stream_free; /* stream mode: free buffers, a hint (pool.c) */
	uint8_t *base __attribute__((aligned(XFDR_CACHELINE))); /* buffer 0 */
	uint8_t *map;	  /* the buffers' mapping: base, or the live trace's header (file) */
	size_t map_bytes; /* its length, a whole number of pages */
	struct pool_desc *descs;
	uint8_t *locator;	/* the descriptors' mapping: the locator, descs at +128 */
	size_t descs_map_bytes; /* its length, a whole number of pages */
	size_t buffer_bytes;
	uint32_t count;
	uint32_t first_gen;   /* the generation of every free buffer when the session began */
	uint32_t session;     /* written by pool_setup() while quiesced */
	uint32_t mode;	      /* enum pool_mode; written by pool_setup() */
	uint32_t file_backed; /* backing=file: map and locator are shared file mappings */
	uint32_t dontfork;    /* map, locator and scratch are not inherited by fork children */
	/* The flush contexts (above), in one mapping made by pool_setup(). */
	struct pool_flush_ctx flush[POOL_FLUSH_CONTEXTS];
	uint8_t *flush_scratch;
	size_t flush_scratch_bytes;
};

#endif /* XFDR_RUNTIME_POOL_POOL_TYPES_H */
