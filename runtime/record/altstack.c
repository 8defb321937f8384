/*
 * runtime/record/altstack.c - alternate signal stacks from one reserved region (altstack.h).
 *
 * Layout: stack i occupies [base + i * stride + guard, base + (i + 1) * stride), stride =
 * guard + ALTSTACK_BYTES. The whole region starts PROT_NONE; a stack becomes readable and
 * writable when a thread of its slot first takes it, so the pages between used stacks stay
 * inaccessible: a handler that overflows its alternate stack faults on the guard below it (and
 * the kernel, finding the signal blocked, ends the process) instead of writing over the stack
 * of the neighbouring slot. Unused slots cost neither memory nor kernel mappings.
 */
#include <errno.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/base/compiler.h"
#include "runtime/record/altstack.h"
#include "runtime/record/thread.h"

struct altstack_region {
	uint8_t *base; /* NULL until reserved; release-stored after the fields below */
	size_t guard;  /* bytes of the guard page below each stack */
	size_t stride; /* guard + ALTSTACK_BYTES */
	uint32_t count;
	int enabled;
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
	if (mprotect(sp, ALTSTACK_BYTES, PROT_READ | PROT_WRITE))
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
