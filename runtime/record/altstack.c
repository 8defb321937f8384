/*
 * runtime/record/altstack.c - alternate signal stacks from one reserved region (altstack.h).
 *
 * Layout: stack i occupies [base + i * stride + guard, base + (i + 1) * stride), stride =
 * guard + ALTSTACK_BYTES. Below each stack is a guard page: a handler that overflows its
 * alternate stack faults there (and the kernel, finding the signal blocked, ends the process)
 * instead of writing over the stack of the neighbouring slot.
 *
 * Where the kernel has guard markers (MADV_GUARD_INSTALL, Linux 6.13), the region is one
 * readable and writable mapping (MAP_NORESERVE: address space, not memory, until a stack is
 * used) and a thread's guard page becomes a marker when it first takes its stack: one kernel
 * mapping however many threads record. fork() copies every mapping (about 2 us each on the
 * target VMs), and a page's protection cannot differ within one, so the other way, a region
 * that starts PROT_NONE and whose stacks are made readable and writable one by one, costs two
 * mappings a thread. That way is kept for older kernels and for strict overcommit
 * (vm.overcommit_memory 2), which would charge the whole writable region to the process.
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

struct altstack_region {
	uint8_t *base; /* NULL until reserved; release-stored after the fields below */
	size_t guard;  /* bytes of the guard page below each stack */
	size_t stride; /* guard + ALTSTACK_BYTES */
	uint32_t count;
	int enabled;
	int markers; /* guard pages are markers in one writable mapping (see above) */
};

static struct altstack_region region;

static XFDR_NOINSTR uint8_t *stack_of(uint32_t index)
{
	/* pairs with the release in altstack_enable(): the geometry is set before base */
	uint8_t *base = xfdr_load_acquire(&region.base);

	if (!base || index >= region.count)
		return NULL;
	return base + (size_t)index * region.stride + region.guard;
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

/* The region as one writable mapping whose first guard page is a marker; MAP_FAILED if not. */
static void *reserve_with_markers(size_t bytes, size_t guard)
{
	void *p;

	if (overcommit_strict())
		return MAP_FAILED;
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		 -1, 0);
	if (p != MAP_FAILED && madvise(p, guard, MADV_GUARD_INSTALL)) {
		munmap(p, bytes);
		p = MAP_FAILED;
	}
	return p;
}

int altstack_enable(void)
{
	long page = sysconf(_SC_PAGESIZE);
	uint32_t count = thread_table.max;
	void *p;

	if (!xfdr_load_acquire(&region.base)) {
		if (!count)
			return -EINVAL;
		region.guard = page > 0 ? (size_t)page : 4096u;
		region.stride = region.guard + ALTSTACK_BYTES;
		p = reserve_with_markers(region.stride * count, region.guard);
		region.markers = p != MAP_FAILED;
		if (p == MAP_FAILED)
			p = mmap(NULL, region.stride * count, PROT_NONE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			return -ENOMEM;
		region.count = count;
		/* pairs with the acquire in stack_of() */
		xfdr_store_release(&region.base, (uint8_t *)p);
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
	sp = stack_of(index);
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
	uint8_t *sp = stack_of(index);
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
