/*
 * runtime/pool/pool_memory.c - the pool's memory: mapping the buffers and their descriptors,
 * and making sure a buffer's pages are in memory before a thread records into it.
 *
 * Recording must never take a page fault (11-15 us on the target VMs, against ~10 ns per
 * event), yet faulting a large pool in at xfdr_init() costs seconds (4 GiB of 4 KiB pages is
 * a million faults). So the work is made smaller and moved off the start:
 *   - the buffer area starts on a 2 MiB boundary and is advised MADV_HUGEPAGE: where the
 *     kernel has transparent huge pages, one fault fills 2 MiB;
 *   - pool_memory_map() populates a pool of up to SYNC_WHOLE_BYTES whole (the default pool,
 *     256 x 64 KiB: eight huge pages), and of a larger one only the buffers in the first
 *     SYNC_BYTES, the ones a short program takes first (the free stack hands buffers out in
 *     index order);
 *   - a background thread, "xfdr-prefault", populates the rest of a larger pool in index order
 *     and marks each buffer's mem_ready. Only for those: a thread, even one that has ended,
 *     puts glibc's fork() on its multi-threaded path for good (it takes and releases malloc's
 *     and stdio's locks: a dozen more page faults in every fork child and its parent);
 *   - pool_memory_ready(), called at every claim, populates the buffer itself when nobody
 *     has yet (the thread is behind, or absent: a fork child has none).
 * Populating is madvise(MADV_POPULATE_WRITE) (Linux 5.14): it faults pages in writable without
 * writing to them, so it is harmless while the owner records into the same buffer. A kernel
 * without it gets the whole pool populated in pool_memory_map(), as MAP_POPULATE did.
 *
 * mem_ready goes 0 -> 1 only (a fresh descriptor mapping is zero; a re-init with the same
 * geometry keeps the mapping and its pages). Whoever populated a buffer store-releases it; a
 * claimer load-acquires it and populates the buffer itself when it reads 0.
 *
 * backing=file (pool_file.c) maps the live files instead, shared, and populates them the same
 * way: MADV_POPULATE_WRITE on a shared file mapping allocates the page-cache pages and maps
 * them writable, so recording does not fault either (until writeback: see pool_file.c).
 * There the buffers start 32 bytes into the mapping, after the trace header: populate()
 * rounds outwards to pages, and the fallback for old kernels rewrites each page's first byte
 * with itself instead of writing 0.
 *
 * The descriptor mapping starts with the locator (pool_locator.c): pool_memory_unmap() zeroes
 * its magic before unmapping, so a core dump never shows a pool that no longer exists.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/base/compiler.h"
#include "runtime/pool/pool.h"
#include "xfdr/format.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older headers lack the name */
#endif

#define HUGE_PAGE_BYTES ((size_t)2 << 20)
/* Populated by xfdr_init() itself (whole buffers, at least one). */
#define SYNC_BYTES ((size_t)4 << 20)
/* A pool up to this size is populated whole by xfdr_init(), without a thread. */
#define SYNC_WHOLE_BYTES ((size_t)16 << 20)
/* The most the background thread populates between two looks at its stop flag. */
#define CHUNK_BYTES ((size_t)2 << 20)

static size_t page_bytes; /* set by pool_memory_map() before any buffer can be claimed */

/*
 * The background thread. It is detached: a thread that finished is never left waiting for a
 * join that may never come (TSan would call it leaked at exit), and exit() does not wait for
 * one still running. pool_memory_unmap() asks it to stop and waits on `done`, which the thread
 * posts after its last access to the pool. `running`, `pid` and `done` are used by
 * pool_memory_map()/unmap() only, which init serializes.
 */
static struct {
	int running; /* started, and `done` not yet waited for */
	pid_t pid;   /* the process that started it: a fork child has no such thread */
	sem_t done;
	uint32_t stop; /* set by pool_memory_unmap(): the thread returns between chunks */
	/* What the thread walks: copies made before it starts, so it never reads rt_pool. */
	uint8_t *base;
	size_t buffer_bytes;
	struct pool_desc *descs;
	uint32_t first;
	uint32_t count;
} bg;

/*
 * populate - fault [p, p + n) in writable, without writing (the pages, rounded outwards, may
 * belong to a neighbour buffer that is being recorded into). Returns 0 or an errno value:
 * EINVAL when the kernel lacks MADV_POPULATE_WRITE, ENOMEM/EFAULT when memory ran out.
 * Context: any thread, signal handlers included; errno is clobbered.
 */
static XFDR_NOINSTR int populate(uint8_t *p, size_t n)
{
	uintptr_t start = (uintptr_t)p & ~(uintptr_t)(page_bytes - 1);
	uintptr_t end = ((uintptr_t)p + n + page_bytes - 1) & ~(uintptr_t)(page_bytes - 1);

	if (madvise((void *)start, end - start, MADV_POPULATE_WRITE))
		return errno;
	return 0;
}

static XFDR_NOINSTR void mark_ready(struct pool_desc *d)
{
	/* pairs with the acquires of mem_ready in pool_memory_ready() and prefault_main() */
	xfdr_store_release(&d->mem_ready, (uint32_t)1);
}

/* The background thread: every signal blocked (by its creator), no instrumented code. */
static XFDR_NOINSTR void *prefault_main(void *arg)
{
	uint32_t i;

	(void)arg;
	for (i = bg.first; i < bg.count; i++) {
		struct pool_desc *d = &bg.descs[i];
		uint8_t *data = bg.base + (size_t)i * bg.buffer_bytes;
		size_t off, n;
		int failed = 0;

		/* pairs with the release in mark_ready(): a claimer may have populated it */
		if (xfdr_load_acquire(&d->mem_ready))
			continue;
		for (off = 0; off < bg.buffer_bytes; off += n) {
			/* pairs with the release of stop in prefault_stop() */
			if (xfdr_load_acquire(&bg.stop))
				goto out;
			n = bg.buffer_bytes - off < CHUNK_BYTES ? bg.buffer_bytes - off
								: CHUNK_BYTES;
			if (populate(data + off, n))
				failed = 1;
		}
		if (!failed)
			mark_ready(d); /* else the claimer tries again in pool_memory_ready() */
	}
out:
	sem_post(&bg.done); /* the last access to the pool and to bg */
	return NULL;
}

/* Start the thread on buffers [first, rt_pool.count). Returns 0 or an errno value. */
static int prefault_start(uint32_t first)
{
	pthread_attr_t attr;
	pthread_t thread;
	sigset_t all, old;
	int rc;

	bg.base = rt_pool.base;
	bg.buffer_bytes = rt_pool.buffer_bytes;
	bg.descs = rt_pool.descs;
	bg.first = first;
	bg.count = rt_pool.count;
	/* No thread reads stop now (the last one was waited for); pthread_create publishes it. */
	xfdr_store_relaxed(&bg.stop, (uint32_t)0);
	if (sem_init(&bg.done, 0, 0))
		return errno;
	rc = pthread_attr_init(&attr);
	if (rc)
		goto out_sem;
	rc = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (rc)
		goto out_attr;
	/*
	 * The thread inherits a mask with every signal blocked, so none of the program's handlers
	 * ever runs on it, not even before its first instruction.
	 */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&thread, &attr, prefault_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		goto out_attr;
	pthread_setname_np(thread, "xfdr-prefault"); /* visible in top -H and /proc: cosmetic */
	bg.running = 1;
	bg.pid = getpid();
out_attr:
	pthread_attr_destroy(&attr);
out_sem:
	if (rc)
		sem_destroy(&bg.done);
	return rc;
}

/* Stop the thread and wait until it no longer touches the pool. Context: init only. */
static void prefault_stop(void)
{
	if (!bg.running)
		return;
	bg.running = 0;
	/* A fork child has the parent's memory but not its threads: nobody to wait for. */
	if (bg.pid != getpid())
		return;
	/* pairs with the acquire of stop in prefault_main() */
	xfdr_store_release(&bg.stop, (uint32_t)1);
	while (sem_wait(&bg.done) && errno == EINTR)
		;
	sem_destroy(&bg.done);
}

/*
 * Populate every page of [p, p + n) (page-aligned) now by writing, for kernels without
 * MADV_POPULATE_WRITE. Safe here: no thread records yet. Each byte written is the one already
 * there (zero, or the live trace's header).
 */
static void touch_pages(uint8_t *p, size_t n)
{
	volatile uint8_t *v = p;
	size_t off;

	for (off = 0; off < n; off += page_bytes)
		v[off] = v[off];
}

static void populate_by_touch(void)
{
	uint32_t i;

	touch_pages(rt_pool.map, rt_pool.map_bytes);
	for (i = 0; i < rt_pool.count; i++)
		mark_ready(&rt_pool.descs[i]);
}

/*
 * Populate the first buffers now and hand the rest to the background thread (or, when it
 * cannot be started, populate them now too). Returns 0 or a negative errno: ENOMEM (memory),
 * or for a file-backed pool what madvise(2) says (EFAULT: the file system could not give a
 * page, where the space could not be reserved).
 */
static int prefault(void)
{
	size_t buffer_bytes = rt_pool.buffer_bytes;
	uint32_t count = rt_pool.count, sync_count, i;
	int err;

	sync_count = (uint32_t)((SYNC_BYTES + buffer_bytes - 1) / buffer_bytes);
	if (sync_count > count || (size_t)count * buffer_bytes <= SYNC_WHOLE_BYTES)
		sync_count = count;
	err = populate(rt_pool.base, (size_t)sync_count * buffer_bytes);
	if (err == EINVAL) {
		populate_by_touch();
		return 0;
	}
	if (err)
		return rt_pool.file_backed ? -err : -ENOMEM;
	for (i = 0; i < sync_count; i++)
		mark_ready(&rt_pool.descs[i]);
	if (sync_count == count || !prefault_start(sync_count))
		return 0;
	err = populate(rt_pool.base + (size_t)sync_count * buffer_bytes,
		       (size_t)(count - sync_count) * buffer_bytes);
	if (err)
		return rt_pool.file_backed ? -err : -ENOMEM;
	for (i = sync_count; i < count; i++)
		mark_ready(&rt_pool.descs[i]);
	return 0;
}

static void forget_fields(void)
{
	rt_pool.map = NULL;
	rt_pool.base = NULL;
	rt_pool.locator = NULL;
	rt_pool.descs = NULL;
	rt_pool.count = 0;
	rt_pool.map_bytes = 0;
	rt_pool.descs_map_bytes = 0;
	rt_pool.file_backed = 0;
	rt_pool.dontfork = 0;
}

void pool_memory_unmap(void)
{
	prefault_stop();
	if (rt_pool.locator)
		pool_locator_clear();
	if (rt_pool.map)
		munmap(rt_pool.map, rt_pool.map_bytes);
	if (rt_pool.locator)
		munmap(rt_pool.locator, rt_pool.descs_map_bytes);
	if (rt_pool.file_backed)
		pool_file_unlink();
	forget_fields();
}

void pool_memory_forget(void)
{
	prefault_stop(); /* the parent's thread: not waited for, never told to stop */
	/* Left out of the child: not there to unmap, and the addresses may be reused already. */
	if (rt_pool.map && !rt_pool.dontfork)
		munmap(rt_pool.map, rt_pool.map_bytes);
	if (rt_pool.locator && !rt_pool.dontfork)
		munmap(rt_pool.locator, rt_pool.descs_map_bytes);
	if (rt_pool.file_backed)
		pool_file_forget();
	forget_fields();
}

/*
 * Map n bytes (a multiple of the page size) on a 2 MiB boundary, so that every whole 2 MiB of
 * the pool can be one huge page: map 2 MiB more, then unmap the ends.
 */
static uint8_t *map_aligned(size_t n)
{
	size_t over = n + HUGE_PAGE_BYTES - page_bytes;
	uint8_t *raw, *p;

	if (over < n)
		return NULL;
	raw = mmap(NULL, over, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		return NULL;
	p = (uint8_t *)(((uintptr_t)raw + HUGE_PAGE_BYTES - 1) & ~(uintptr_t)(HUGE_PAGE_BYTES - 1));
	if (p > raw)
		munmap(raw, (size_t)(p - raw));
	if (raw + over > p + n)
		munmap(p + n, (size_t)(raw + over - (p + n)));
	return p;
}

/* Anonymous memory: the buffers on a 2 MiB boundary (huge pages), the descriptors apart. */
static int map_anonymous(size_t bytes, size_t dbytes, struct pool_maps *m)
{
	size_t map_bytes = (bytes + page_bytes - 1) & ~(page_bytes - 1);
	uint8_t *p;
	void *d;

	if (map_bytes < bytes)
		return -ENOMEM;
	dbytes = (dbytes + page_bytes - 1) & ~(page_bytes - 1);
	p = map_aligned(map_bytes);
	if (!p)
		return -ENOMEM;
	/* Advice only: where it fails (no THP), the same code populates 4 KiB pages. */
	madvise(p, map_bytes, MADV_HUGEPAGE);
	d = mmap(NULL, dbytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
		 -1, 0);
	if (d == MAP_FAILED) {
		munmap(p, map_bytes);
		return -ENOMEM;
	}
	m->trace = p;
	m->trace_bytes = map_bytes;
	m->pool = d;
	m->pool_bytes = dbytes;
	return 0;
}

/*
 * Leave the pool out of fork children (MADV_DONTFORK): a child cannot write what the parent's
 * trace holds, whatever runs first in it, and fork() copies none of the pool's page tables.
 * Returns 1 when both mappings are left out, 0 when neither is.
 */
static int keep_from_children(const struct pool_maps *m)
{
	if (madvise(m->trace, m->trace_bytes, MADV_DONTFORK))
		return 0;
	if (!madvise(m->pool, m->pool_bytes, MADV_DONTFORK))
		return 1;
	madvise(m->trace, m->trace_bytes, MADV_DOFORK);
	return 0;
}

int pool_memory_map(size_t buffer_bytes, uint32_t count, const char *file_path)
{
	size_t bytes = buffer_bytes * count;
	size_t dbytes = sizeof(struct pool_desc) * count;
	size_t head = file_path ? XFDR_FILE_HEADER_BYTES : 0;
	struct pool_maps m;
	int rc;

	page_bytes = (size_t)sysconf(_SC_PAGESIZE);
	if (!count || !buffer_bytes || bytes / count != buffer_bytes ||
	    dbytes / count != sizeof(struct pool_desc) || bytes + head < bytes)
		return -ENOMEM;
	dbytes += XFDR_POOL_HEADER_BYTES;
	if (file_path)
		rc = pool_file_map(file_path, head + bytes, dbytes, &m);
	else
		rc = map_anonymous(bytes, dbytes, &m);
	if (rc)
		return rc;
	rt_pool.map = m.trace;
	rt_pool.map_bytes = m.trace_bytes;
	rt_pool.base = m.trace + head;
	rt_pool.locator = m.pool;
	rt_pool.descs_map_bytes = m.pool_bytes;
	rt_pool.descs = (struct pool_desc *)(void *)(m.pool + XFDR_POOL_HEADER_BYTES);
	rt_pool.buffer_bytes = buffer_bytes;
	rt_pool.count = count;
	rt_pool.file_backed = file_path != NULL;
	rt_pool.dontfork = keep_from_children(&m);
	rc = prefault();
	if (rc) {
		if (file_path && rc != -ENOMEM)
			pool_file_report("cannot populate", rc);
		pool_memory_unmap();
	}
	return rc;
}

XFDR_NOINSTR void pool_memory_ready(struct pool_desc *d)
{
	int saved = errno;

	/* pairs with the release in mark_ready() */
	if (!xfdr_load_acquire(&d->mem_ready) && !populate(d->data, rt_pool.buffer_bytes))
		mark_ready(d);
	/*
	 * On failure (out of memory) mem_ready stays 0: the thread records anyway and takes the
	 * faults, and the next claim of this buffer tries again.
	 */
	errno = saved;
}
