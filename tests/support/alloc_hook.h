/*
 * tests/support/alloc_hook.h - take over the allocator of one test binary: count its
 * allocations, or make them fail.
 *
 * Including this defines malloc, calloc, realloc, posix_memalign, aligned_alloc and free in
 * the test binary. They win over libc's in symbol lookup (the runtime's and liburcu's calls
 * included) and forward to the next definition found with dlsym(RTLD_NEXT). dlsym() may itself
 * call calloc before the real one is known: those calls are served from a small static arena.
 * A header, not a .c file in tests/support/, because each of those is linked into every
 * test: include it from exactly one file of the binaries that want it.
 *
 *   alloc_counting     while set, every allocation is counted in alloc_calls, from every
 *                      thread (both are read and written with relaxed atomics)
 *   alloc_failing      while set, every allocation fails (NULL, or ENOMEM)
 *   alloc_fail_after   >= 0: let this many allocations through, then fail them all
 *                      (-1: off); one thread at a time
 */
#ifndef XFDR_TESTS_SUPPORT_ALLOC_HOOK_H
#define XFDR_TESTS_SUPPORT_ALLOC_HOOK_H

#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>

static int alloc_counting;
static unsigned long alloc_calls;
static int alloc_failing;
static long alloc_fail_after = -1;

static void *(*alloc_real_malloc)(size_t);
static void *(*alloc_real_calloc)(size_t, size_t);
static void *(*alloc_real_realloc)(void *, size_t);
static int (*alloc_real_posix_memalign)(void **, size_t, size_t);
static void *(*alloc_real_aligned_alloc)(size_t, size_t);
static void (*alloc_real_free)(void *);

static _Alignas(16) char alloc_arena[4096];
static size_t alloc_arena_used;
static int alloc_resolving;

static void *alloc_arena_take(size_t n)
{
	void *p;

	n = (n + 15) & ~(size_t)15;
	if (alloc_arena_used + n > sizeof(alloc_arena))
		return NULL;
	p = alloc_arena + alloc_arena_used;
	alloc_arena_used += n;
	return p;
}

static void alloc_resolve(void)
{
	if (alloc_real_malloc || alloc_resolving)
		return;
	alloc_resolving = 1;
	alloc_real_calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
	alloc_real_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
	alloc_real_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
	alloc_real_posix_memalign =
	    (int (*)(void **, size_t, size_t))dlsym(RTLD_NEXT, "posix_memalign");
	alloc_real_aligned_alloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "aligned_alloc");
	alloc_real_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
	alloc_resolving = 0;
}

/* Count this allocation; does it fail? */
static int alloc_refuse(void)
{
	alloc_resolve();
	if (__atomic_load_n(&alloc_counting, __ATOMIC_RELAXED))
		__atomic_fetch_add(&alloc_calls, 1, __ATOMIC_RELAXED);
	if (alloc_fail_after == 0)
		return 1;
	if (alloc_fail_after > 0)
		alloc_fail_after--;
	return alloc_failing;
}

void *malloc(size_t n)
{
	if (alloc_refuse())
		return NULL;
	return alloc_real_malloc ? alloc_real_malloc(n) : alloc_arena_take(n);
}

void *calloc(size_t a, size_t b)
{
	if (alloc_refuse())
		return NULL;
	if (!alloc_real_calloc) /* arena memory is static, hence zero */
		return alloc_arena_take(a * b);
	return alloc_real_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
	if (alloc_refuse())
		return NULL;
	return alloc_real_realloc(p, n);
}

int posix_memalign(void **p, size_t align, size_t n)
{
	if (alloc_refuse())
		return ENOMEM;
	return alloc_real_posix_memalign(p, align, n);
}

void *aligned_alloc(size_t align, size_t n)
{
	if (alloc_refuse())
		return NULL;
	return alloc_real_aligned_alloc(align, n);
}

void free(void *p)
{
	if ((char *)p >= alloc_arena && (char *)p < alloc_arena + sizeof(alloc_arena))
		return;
	alloc_resolve();
	alloc_real_free(p);
}

#endif /* XFDR_TESTS_SUPPORT_ALLOC_HOOK_H */
