/*
 * runtime/base/compiler.h - attributes, branch hints and the memory-ordering helpers of the
 * runtime.
 *
 * Ordering rule of the runtime: every shared field is read and written through the helpers
 * below, each with an explicit order. Debian's liburcu 0.13 offers uatomic_* without an order
 * argument, so those are used only inside liburcu's own structures.
 */
#ifndef XFDR_RUNTIME_BASE_COMPILER_H
#define XFDR_RUNTIME_BASE_COMPILER_H

#include <stdint.h>

/* The runtime is never instrumented: a hook inside a hook would recurse. */
#if defined(__clang__)
#define XFDR_NO_XRAY __attribute__((xray_never_instrument))
#else
#define XFDR_NO_XRAY
#endif
#define XFDR_NOINSTR __attribute__((no_instrument_function)) XFDR_NO_XRAY

#define XFDR_LIKELY(x) __builtin_expect(!!(x), 1)
#define XFDR_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define XFDR_COLD __attribute__((noinline, cold))
#define XFDR_HIDDEN __attribute__((visibility("hidden")))
#define XFDR_CACHELINE 64

/*
 * Compiler-only barrier. Enough to order the recursion guard against the record writes for
 * a signal handler, which runs on the same CPU as the code it interrupts.
 */
#define xfdr_barrier() __asm__ __volatile__("" ::: "memory")

#define xfdr_load_relaxed(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define xfdr_load_acquire(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define xfdr_store_relaxed(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define xfdr_store_release(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
/*
 * Set bit 0 of a 32-bit word and say whether it was set already: one read-modify-write
 * instruction (bts) on x86, which a signal cannot split. For words only the calling thread (or
 * a signal handler on it) writes, such as its recursion guard; others may read them.
 */
static inline int xfdr_own_test_and_set(uint32_t *p)
{
#if defined(__x86_64__) || defined(__i386__)
	int was_set;

	__asm__ __volatile__("btsl $0, %0" : "+m"(*p), "=@ccc"(was_set));
	return was_set;
#else
	if (__atomic_load_n(p, __ATOMIC_RELAXED) & 1u)
		return 1;
	__atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) | 1u, __ATOMIC_RELAXED);
	return 0;
#endif
}

/*
 * Does a word set once (before the threads that read it need it) equal v? On x86 one compare
 * with the word in memory, which the compiler does not make of an atomic load.
 */
static inline int xfdr_settled_equals(const int *p, int v)
{
#if defined(__x86_64__) || defined(__i386__)
	int equal;

	__asm__("cmpl %2, %1" : "=@ccz"(equal) : "m"(*p), "ir"(v));
	return equal;
#else
	return __atomic_load_n(p, __ATOMIC_RELAXED) == v;
#endif
}

/*
 * Add 1 to a counter only the calling thread (and signal handlers on it) adds to, others only
 * read: one read-modify-write instruction, which a signal cannot split, without the lock
 * prefix an atomic add pays for (other CPUs never write the counter).
 */
static inline void xfdr_add_own(uint64_t *p)
{
#if defined(__x86_64__)
	__asm__ __volatile__("addq $1, %0" : "+m"(*p));
#else
	__atomic_fetch_add(p, (uint64_t)1, __ATOMIC_RELAXED);
#endif
}

/* Counters that a signal handler may bump on the same thread: a read-modify-write is needed. */
#define xfdr_add_relaxed(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define xfdr_cas(p, expected, desired)                                                             \
	__atomic_compare_exchange_n((p), (expected), (desired), 0, __ATOMIC_ACQ_REL,               \
				    __ATOMIC_ACQUIRE)

#endif /* XFDR_RUNTIME_BASE_COMPILER_H */
