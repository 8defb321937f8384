/*
 * runtime/record/altstack.c - alternate signal stacks from reserved regions (altstack.h).
 *
 * Layout: the stacks are in chunks that double in size: chunk k holds FIRST_CHUNK << k stacks,
 * and is reserved when a thread first needs one of them (chunk 0 at enable). Within a chunk,
 * stack j occupies [base + j * stride + guard, base + (j + 1) * stride), stride = guard +
 * ALTSTACK_BYTES. Below each stack is a guard page: a handler that overflows its alternate
 * stack faults there (and the kernel, finding the signal blocked, ends the process) instead of
 * writing over the stack of the neighbouring slot.
 *
 * Where the kernel has guard markers (MADV_GUARD_INSTALL, Linux 6.13), a chunk is one readable
 * and writable mapping (MAP_NORESERVE: address space, not memory, until a stack is used) and a
 * thread's guard page becomes a marker when it first takes its stack: one kernel mapping for the
 * first FIRST_CHUNK threads, one more each time their number doubles. fork() copies every
 * mapping (about 2 us each on the target VMs) and walks the page tables of the whole span of
 * one with markers (about 3 us for thread_max stacks of the default 4096), so a chunk spans
 * what the threads use. A page's protection cannot differ within one mapping, so the other
 * way, a chunk that starts PROT_NONE and whose stacks are made readable and writable one by
 * one, costs two mappings a thread. That way is kept for older kernels and for strict
 * overcommit (vm.overcommit_memory 2), which would charge the whole writable chunk to the
 * process.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/base/compiler.h"
#include "runtime/record/altstack.h"
#include "runtime/record/thread.h"

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102 /* Linux 6.13; older headers lack the name */
#endif

/* Stacks of chunk 0; chunk k holds FIRST_CHUNK << k, CHUNKS of them cover any thread_max. */
#define FIRST_CHUNK 32u
#define CHUNKS 16u

struct altstack_region {
	/* NULL until reserved; chunk 0's is release-stored after the fields below */
	uint8_t *chunk[CHUNKS];
	size_t guard;  /* bytes of the guard page below each stack */
	size_t stride; /* guard + ALTSTACK_BYTES */
	uint32_t count;
	int enabled;
	int markers; /* guard pages are markers in writable chunks (see above) */
};

_Static_assert(((uint64_t)FIRST_CHUNK << CHUNKS) - FIRST_CHUNK >= (1u << 20),
	       "the chunks hold OPT_MAX_THREAD_MAX stacks");

static struct altstack_region region;

/* The first stack of chunk k: the chunks before it hold FIRST_CHUNK * (2^k - 1). */
static XFDR_NOINSTR uint32_t chunk_first(uint32_t k)
{
	return FIRST_CHUNK * ((1u << k) - 1u);
}

/* The chunk of stack index and the index within it. */
static XFDR_NOINSTR uint32_t chunk_of(uint32_t index, uint32_t *within)
{
	uint32_t k = 31u - (uint32_t)__builtin_clz(index / FIRST_CHUNK + 1u);

	*within = index - chunk_first(k);
	return k;
}

/* Bytes of chunk k: FIRST_CHUNK << k stacks, fewer in the last one thread_max reaches. */
static XFDR_NOINSTR size_t chunk_bytes(uint32_t k)
{
	uint32_t first = chunk_first(k), stacks = FIRST_CHUNK << k;

	if (stacks > region.count - first)
		stacks = region.count - first;
	return region.stride * stacks;
}

/* vm.overcommit_memory is 2: MAP_NORESERVE is ignored, every writable page is charged. */
static int overcommit_strict(void)
{
	char c = 0;
	int fd = open("/proc/sys/vm/overcommit_memory", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	if (read(fd, &c, 1) != 1)
		c = 0;
	close(fd);
	return c == '2';
}

/* Chunk k, in the way chunk 0 set (region.markers); MAP_FAILED if it cannot be had. */
static XFDR_NOINSTR void *reserve_chunk(uint32_t k)
{
	int prot = region.markers ? PROT_READ | PROT_WRITE : PROT_NONE;

	return mmap(NULL, chunk_bytes(k), prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
}

/*
 * The stack of slot index, its chunk reserved first when reserve says so (two threads that
 * race to reserve one keep the first chunk stored). NULL without one.
 */
static XFDR_NOINSTR uint8_t *stack_of(uint32_t index, int reserve)
{
	uint32_t within, k;
	uint8_t *base, *fresh;

	/* pairs with the release in altstack_enable(): the geometry is set before chunk 0 */
	if (!xfdr_load_acquire(&region.chunk[0]) || index >= region.count)
		return NULL;
	k = chunk_of(index, &within);
	base = xfdr_load_acquire(&region.chunk[k]);
	if (!base && reserve) {
		fresh = reserve_chunk(k);
		if (fresh == (uint8_t *)MAP_FAILED)
			return NULL;
		/* on failure, base becomes the chunk the other thread stored */
		if (xfdr_cas(&region.chunk[k], &base, fresh))
			base = fresh;
		else
			munmap(fresh, chunk_bytes(k));
	}
	if (!base)
		return NULL;
	return base + (size_t)within * region.stride + region.guard;
}

int altstack_enable(void)
{
	long page = sysconf(_SC_PAGESIZE);
	uint32_t count = thread_table.max;
	void *p;

	if (!xfdr_load_acquire(&region.chunk[0])) {
		if (!count)
			return -EINVAL;
		region.guard = page > 0 ? (size_t)page : 4096u;
		region.stride = region.guard + ALTSTACK_BYTES;
		region.count = count;
		region.markers = !overcommit_strict();
		p = reserve_chunk(0);
		/* The first guard page as a marker tells whether this kernel has them. */
		if (p != MAP_FAILED && region.markers &&
		    madvise(p, region.guard, MADV_GUARD_INSTALL)) {
			munmap(p, chunk_bytes(0));
			region.markers = 0;
			p = reserve_chunk(0);
		}
		if (p == MAP_FAILED)
			return -ENOMEM;
		/* pairs with the acquire in stack_of() */
		xfdr_store_release(&region.chunk[0], (uint8_t *)p);
	}
	xfdr_store_relaxed(&region.enabled, 1);
	return 0;
}

void altstack_disable(void)
{
	xfdr_store_relaxed(&region.enabled, 0);
}

XFDR_NOINSTR void altstack_thread_start(uint32_t index)
{
	int saved = errno;
	uint8_t *sp;
	stack_t old, ss;

	if (!xfdr_load_relaxed(&region.enabled))
		return;
	sp = stack_of(index, 1);
	/* A stack of the program's (or a sanitizer's) stays: never replaced. */
	if (!sp || sigaltstack(NULL, &old) || !(old.ss_flags & SS_DISABLE))
		goto out;
	/* Again for a recycled slot: harmless, and the slot's pages may not be ready yet. */
	if (region.markers ? madvise(sp - region.guard, region.guard, MADV_GUARD_INSTALL)
			   : mprotect(sp, ALTSTACK_BYTES, PROT_READ | PROT_WRITE))
		goto out;
	ss.ss_sp = sp;
	ss.ss_size = ALTSTACK_BYTES;
	ss.ss_flags = 0;
	sigaltstack(&ss, NULL);
out:
	errno = saved;
}

XFDR_NOINSTR void altstack_thread_stop(uint32_t index)
{
	int saved = errno;
	uint8_t *sp = stack_of(index, 0);
	stack_t cur, ss;

	if (!sp || sigaltstack(NULL, &cur) || (cur.ss_flags & (SS_DISABLE | SS_ONSTACK)) ||
	    cur.ss_sp != sp)
		goto out;
	ss.ss_sp = NULL;
	ss.ss_size = 0;
	ss.ss_flags = SS_DISABLE;
	sigaltstack(&ss, NULL);
out:
	errno = saved;
}
