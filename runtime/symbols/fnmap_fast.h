/*
 * runtime/symbols/fnmap_fast.h - function address -> 28-bit id, the common case inline.
 *
 * Each thread has a direct-mapped cache of 1024 (address, id) pairs in front of the shared
 * hash table (fnmap.c). A hit costs a multiply, two loads and two stores to the thread's own
 * guard word: no hash-table lookup, no atomic read-modify-write, no allocation. A miss goes
 * to fnmap_id_uncached(), which looks the address up (and on a function's first call anywhere in
 * the process, gives it the next id), then fills the cache entry.
 *
 * Why the guard: an entry is two words, so a signal handler that ran between our load of the
 * address and our load of the id, and refilled that entry for another function, would hand us
 * the other function's id. While the guard is set, a nested call (a signal handler running
 * instrumented code on this thread) neither reads nor writes the cache: it asks the hash
 * table directly.
 *
 * The cache is mapped on the thread's first miss (the TLS part stays a pointer and a flag, so
 * libxfdr.so's initial-exec TLS stays small) and unmapped at thread exit.
 */
#ifndef XFDR_RUNTIME_SYMBOLS_FNMAP_FAST_H
#define XFDR_RUNTIME_SYMBOLS_FNMAP_FAST_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/compiler.h"
#include "xfdr/format.h"

/* The largest 28-bit id: recorded when no id can be given. Never given to a function. */
#define FNMAP_ID_NONE XFDR_FUNCTION_ID_MAX
#define FNMAP_ID_FIRST 1u
/*
 * Set in what a lookup returns for a function the include= and exclude= options leave out
 * (fnfilter.h): decided when its id was given, kept with the id. Its calls are not recorded.
 */
#define FNMAP_ID_FILTERED 0x80000000u

#define FNMAP_CACHE_BITS 10
#define FNMAP_CACHE_ENTRIES (1u << FNMAP_CACHE_BITS)

struct fnmap_cache_entry {
	uintptr_t addr; /* 0: empty (no function lives at address 0) */
	uint32_t id;
	uint32_t unused;
};

struct fnmap_thread {
	struct fnmap_cache_entry *cache; /* NULL until the first miss, and after thread exit */
	uint32_t busy;			 /* inside fnmap_id() on this thread */
	uint32_t no_cache;		 /* thread exited or the cache could not be mapped */
};

extern __thread struct fnmap_thread fnmap_self
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

/*
 * fnmap_id_uncached - fnmap_id() without the cache in front: the id from the hash table,
 * inserting the address on first sight, then the cache entry filled (unless nested in a
 * signal handler). Out of line, so that a hook can leave its fast path by a tail call.
 * Context: see fnmap_id().
 */
uint32_t fnmap_id_uncached(const void *fn) XFDR_COLD;

static inline XFDR_NOINSTR uint32_t fnmap_cache_slot(uintptr_t addr)
{
	/* Fibonacci hashing: function addresses share their low bits (alignment). */
	return (uint32_t)(((uint64_t)addr * 0x9e3779b97f4a7c15ull) >> (64 - FNMAP_CACHE_BITS));
}

/*
 * fnmap_id - the function id of the code address fn: 1 .. FNMAP_ID_NONE - 1 in the order
 * functions were first seen by any thread, or FNMAP_ID_NONE when none can be given (see
 * fnmap.h); with FNMAP_ID_FILTERED set when the function is not to be recorded. The same address
 * always gets the same id for the life of the process. Context: any thread, signal handlers
 * included. A function's first call in the process may allocate (the tables themselves on the very
 * first call, a chunk of nodes, liburcu's registration of the thread as a reader, a table resize,
 * done by the inserting thread); a thread's first miss maps its cache (and pthread_setspecific()
 * may allocate once for it). Later calls of a known function never allocate, never lock, and make
 * no system call.
 */
/*
 * fnmap_id_cached - the id of fn from this thread's cache: 1 and *id filled on a hit, 0 on a
 * miss (or when nested inside another lookup on this thread), having called nothing. A hook
 * that tail-calls its slow path on a miss keeps its fast path free of saved registers.
 */
static inline XFDR_NOINSTR int fnmap_id_cached(const void *fn, uint32_t *id)
{
	struct fnmap_thread *c = &fnmap_self;
	uintptr_t addr = (uintptr_t)fn;
	struct fnmap_cache_entry *e;
	int hit;

	if (XFDR_UNLIKELY(xfdr_load_relaxed(&c->busy)))
		return 0;
	xfdr_store_relaxed(&c->busy, 1u);
	/* A signal handler from here on sees the guard. */
	xfdr_barrier();
	e = c->cache ? &c->cache[fnmap_cache_slot(addr)] : NULL;
	hit = e && e->addr == addr;
	if (XFDR_LIKELY(hit))
		*id = e->id;
	xfdr_barrier();
	xfdr_store_relaxed(&c->busy, 0u);
	return hit;
}

static inline XFDR_NOINSTR uint32_t fnmap_id(const void *fn)
{
	uint32_t id;

	return XFDR_LIKELY(fnmap_id_cached(fn, &id)) ? id : fnmap_id_uncached(fn);
}

#endif /* XFDR_RUNTIME_SYMBOLS_FNMAP_FAST_H */
