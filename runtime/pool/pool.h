/*
 * runtime/pool/pool.h - the buffer pool: set-up between sessions, take and hand back while
 * recording.
 */
#ifndef XFDR_RUNTIME_POOL_POOL_H
#define XFDR_RUNTIME_POOL_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/pool/pool_types.h"

extern struct pool rt_pool XFDR_HIDDEN;

/*
 * pool_setup - make an empty pool of count buffers of buffer_bytes for the given session,
 * with the given policy (enum pool_mode), in anonymous memory (file_path NULL) or in a shared
 * mapping of file_path laid out as a version 1 trace (backing=file, pool_file.c), its
 * locator and descriptors in file_path + ".pool".
 * Memory backing with the same geometry as before: what the last session wrote is zeroed in
 * place (the pages stay populated). Otherwise the old pool is released (its locator zeroed
 * first, its live files, if any, unlinked) and a new one mapped by pool_memory_map():
 * memory 2 MiB-aligned, populated in the background and at the latest when a thread claims
 * the buffer. Either way the locator is rewritten for the new session.
 * Context: init only, with no thread inside the runtime (thread_quiesce()), and nothing else
 * that touches the pool running (livemap_stop()).
 * Returns 0; -ENOMEM; with backing=file also -ENAMETOOLONG, -ENOSPC (no room for the files)
 * or the negative errno of open(2), fallocate(2), ftruncate(2) or madvise(2); each file
 * error is reported with one stderr line naming the file. On failure the pool is empty
 * (count 0) and no live file is left.
 */
int pool_setup(size_t buffer_bytes, uint32_t count, uint32_t session, enum pool_mode mode,
	       const char *file_path);

/*
 * pool_forget_after_fork - in a fork child: the pool's mappings are copies of the parent's (or
 * shared with it, backing=file); release them without writing to them, and without touching
 * the parent's files, so that the next pool_setup() maps a pool of the child's own. Until
 * then the pool is empty (count 0: every claim fails).
 * Context: the child, right after fork(), before any thread records; async-signal-safe
 * (munmap only).
 */
void pool_forget_after_fork(void);

/*
 * pool_locator_set_tsc_hz - the TSC frequency, once known: written into the locator and, with
 * backing=file, into the live trace header's cycle_frequency, and kept for the pools of later
 * sessions. 0 is ignored. The flush layer calls it whenever it has the frequency.
 * pool_locator_tsc_hz - the last frequency set (0: none yet).
 * pool_locator_set_invariant_tsc - whether CPUID says the TSC is invariant: the locator's
 * XFDR_POOL_INVARIANT_TSC flag and the live header's constant_tsc and nonstop_tsc bits.
 * Context: any thread, also a signal handler (atomic stores into the mappings only); never
 * while pool_setup() or pool_forget_after_fork() runs (init and flush exclude each other).
 */
void pool_locator_set_tsc_hz(uint64_t hz);
uint64_t pool_locator_tsc_hz(void);
void pool_locator_set_invariant_tsc(int invariant);

/*
 * pool_locator_set_names - the names directory's address (format.h's "XFDRNAMS"; 0: none):
 * written into the locator now and into those of later sessions. Context: init.
 */
void pool_locator_set_names(uint64_t addr);

/*
 * pool_discard_files - backing=file: unlink the live trace and its ".pool" now (a clean exit,
 * after its flush wrote everything). The mappings stay, so threads still recording are not
 * disturbed; the next pool_setup() releases them. Nothing happens with memory backing.
 * Context: not a signal handler racing pool_setup(); unlink(2) only.
 */
void pool_discard_files(void);

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
	uint64_t fn_records; /* function records the buffer held (what the reuse overwrites) */
};

/*
 * pool_claim - take a buffer for the calling thread: a free one, or in ring mode the oldest
 * full one that no flush is copying (*reused says whose it was). The buffer comes back in
 * state claiming with a new generation; the caller fills the owner fields and the preamble,
 * then publishes it with pool_publish_owned(). NULL when none is left (bounded mode), when
 * every buffer is owned or pinned (ring mode), or when none is free, written and handed back
 * (stream mode: pool_hand_back()).
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
 * (ring mode may claim it anew). gen is the generation its claim gave the buffer, used the
 * bytes of its records (all of them final now: stable_bytes too), last_tsc the TSC of its last
 * record. One compare-exchange from (gen, owned) to (gen, full): a buffer that
 * is no longer the caller's (a new session set the pool up again and another thread claimed
 * it) is left as it is, never flipped. A flush may hold the pin meanwhile: the state changes,
 * the pin stays. Returns 1 when marked, 0 when the buffer was not the caller's.
 */
static inline XFDR_NOINSTR int pool_mark_full(struct pool_desc *d, uint32_t gen, size_t used,
					      uint64_t last_tsc)
{
	uint64_t c = xfdr_load_relaxed(&d->ctl);

	do {
		if (POOL_GEN(c) != gen || POOL_STATE(c) != POOL_OWNED)
			return 0;
		xfdr_store_relaxed(&d->last_tsc, last_tsc);
		xfdr_store_relaxed(&d->stable_bytes, used);
		/* owned -> full; pairs with the acquire of ctl in pool_claim() and the flusher */
	} while (!__atomic_compare_exchange_n(&d->ctl, &c, (c & ~POOL_STATE_MASK) | POOL_FULL, 0,
					      __ATOMIC_RELEASE, __ATOMIC_RELAXED));
	return 1;
}

/*
 * pool_hand_back - stream mode: the writer has written d, full in generation gen, to the trace
 * file; d becomes free (same generation) for the next claim. One compare-exchange from (gen,
 * full, no pin): 0 while a flusher holds a pin (try again later), 1 when handed back.
 * Context: the stream writer, or a flush that writes the stream (stream.c).
 */
int pool_hand_back(struct pool_desc *d, uint32_t gen);

/*
 * pool_pin - keep d from being claimed anew while a flusher copies it. Succeeds (1) only
 * when d is owned or full and still in generation gen; 0 means it was reclaimed since.
 * pool_unpin - let go of the pin this flusher took. Pins are counted: the two flush contexts
 * (pool_types.h) may pin the same buffer at once, and each unpin takes its own away.
 * Context: a flusher, also in a signal handler; lock-free, one pin per flusher at a time.
 */
int pool_pin(struct pool_desc *d, uint32_t gen);
void pool_unpin(struct pool_desc *d);

/* ---- inside runtime/pool/ ------------------------------------------------------------------ */

/*
 * pool_memory_map - map count buffers of buffer_bytes and their descriptors (after the
 * locator's XFDR_POOL_HEADER_BYTES) into rt_pool: anonymous memory, or the live files of
 * file_path (pool_file_map()); the buffers are then populated (in the background beyond the
 * first few MiB).
 * pool_memory_unmap - zero the locator's magic, release the mappings (and unlink the live
 * files of a file-backed pool); rt_pool.count becomes 0.
 * pool_memory_forget - pool_forget_after_fork()'s part: release the mappings without writing.
 * Context: init only (pool_setup()). pool_memory_map returns as pool_setup().
 */
int pool_memory_map(size_t buffer_bytes, uint32_t count, const char *file_path);
void pool_memory_unmap(void);
void pool_memory_forget(void);

/* The two mappings of a pool: anonymous, or the live files of backing=file (pool_file.c). */
struct pool_maps {
	uint8_t *trace;	    /* the buffers' mapping (backing=file: the live trace, header first) */
	size_t trace_bytes; /* mapped, whole pages */
	uint8_t *pool;	    /* the locator, then the descriptors (backing=file: ".pool") */
	size_t pool_bytes;  /* mapped, whole pages */
};

/*
 * pool_file_map - create path (trace_file_bytes: header and buffers) and path + ".pool"
 * (pool_file_bytes: locator and descriptors), O_EXCL, space reserved, and map both shared;
 * the descriptor file is populated for writing. Files of an earlier process that had the
 * same pid are moved aside, not overwritten. Returns 0 or a negative errno, after one stderr
 * line naming the file (never for -ENOMEM: init reports that itself).
 * pool_file_unlink - unlink the files pool_file_map() made (if not yet) and forget them.
 * pool_file_forget - forget them without unlinking (a fork child: they are the parent's).
 * pool_file_report - one stderr line: "backing=file: <what> <live path>: <errno name>".
 */
int pool_file_map(const char *path, size_t trace_file_bytes, size_t pool_file_bytes,
		  struct pool_maps *out);
void pool_file_unlink(void);
void pool_file_forget(void);
void pool_file_report(const char *what, int neg_errno);

/*
 * pool_locator_write - fill the locator of rt_pool for session (and, backing=file, the live
 * trace header), the magic last. pool_locator_clear - zero the magic, so a pool about to be
 * unmapped is never taken for a live one. Context: init only (pool_setup()).
 */
void pool_locator_write(uint32_t session);
void pool_locator_clear(void);

#endif /* XFDR_RUNTIME_POOL_POOL_H */
