/*
 * runtime/symbols/unload.c - name the functions of a library before dlclose() unmaps it (see
 * unload.h).
 *
 * dlclose() here is the program's: libxfdr.so (preloaded or linked) and libxfdr.a define it,
 * and it calls the next one in the lookup order (libc's) through dlsym(RTLD_NEXT). Before
 * that it finds the library's PT_LOAD segments (dlinfo() for its load address, then
 * dl_iterate_phdr()), and if any -finstrument-functions id has its address there, it names
 * them all with the symbolizer, as a flush would, and appends them to a list that lives as
 * long as the process. Not a signal handler's context: malloc and a mutex are fine here; the
 * list is published by release-stores so that a flush in a signal handler can walk it.
 *
 * Whether the real dlclose() unloads the library (its last reference) is not known before it
 * runs; naming it while it stays loaded costs one lookup and keeps a name that is right
 * anyway. An id named once is not named again.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/base/compiler.h"
#include "runtime/symbols/fnmap.h"
#include "runtime/symbols/fork_page.h"
#include "runtime/symbols/symbolizer.h"
#include "runtime/symbols/unload.h"
#include "xfdr/xfdr.h"

#define UNLOAD_SEGMENTS_MAX 16

struct unload_node {
	struct unload_name n;
	struct unload_node *next;
};

struct segments {
	uintptr_t base;	  /* the library's load address (link_map l_addr) */
	const char *name; /* its l_name */
	uintptr_t start[UNLOAD_SEGMENTS_MAX], end[UNLOAD_SEGMENTS_MAX];
	int count;
	int found;
};

static struct unload_node *head; /* newest first; nodes never change nor go away */
static uint32_t kept;
static uint32_t closes; /* dlclose() calls that returned: unload_closes() */
/*
 * unload_lock and, while the forking thread holds it across fork(), the pid of its process:
 * on symbols_fork_page (fork_page.h). A child made by _Fork() or clone() while a thread of the
 * parent was naming finds it free: that naming published whole nodes only (keep()).
 */
static pthread_mutex_t *const unload_lock = &symbols_fork_page.unload_lock;
static pid_t *const fork_holder = &symbols_fork_page.unload_holder;

XFDR_NOINSTR const struct unload_name *unload_find(uint32_t id, uintptr_t addr)
{
	/* pairs with the release in keep() */
	const struct unload_node *p = xfdr_load_acquire(&head);

	for (; p; p = p->next)
		if (p->n.id == id && p->n.addr == addr)
			return &p->n;
	return NULL;
}

XFDR_NOINSTR uint32_t unload_count(void)
{
	return xfdr_load_acquire(&kept);
}

static XFDR_NOINSTR int find_segments(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct segments *s = arg;
	int i;

	(void)size;
	if (info->dlpi_addr != s->base ||
	    strcmp(info->dlpi_name ? info->dlpi_name : "", s->name ? s->name : ""))
		return 0;
	for (i = 0; i < info->dlpi_phnum && s->count < UNLOAD_SEGMENTS_MAX; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		s->start[s->count] = info->dlpi_addr + ph->p_vaddr;
		s->end[s->count] = s->start[s->count] + ph->p_memsz;
		s->count++;
	}
	s->found = 1;
	return 1;
}

static XFDR_NOINSTR int in_segments(const struct segments *s, uintptr_t addr)
{
	int i;

	for (i = 0; i < s->count; i++)
		if (addr >= s->start[i] && addr < s->end[i])
			return 1;
	return 0;
}

static XFDR_NOINSTR char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* Append id's name; caller holds unload_lock. */
static XFDR_NOINSTR void keep(struct sym_table *st, int sym_ok, uint32_t id, uintptr_t addr,
			      const char *lib)
{
	struct unload_node *p = calloc(1, sizeof(*p));
	struct sym_result r;

	if (!p)
		return;
	memset(&r, 0, sizeof(r));
	if (sym_ok)
		sym_lookup(st, addr, &r);
	p->n.id = id;
	p->n.addr = addr;
	p->n.name = dup_or_null(r.name);
	p->n.module = dup_or_null(r.module ? r.module : lib);
	p->n.module_vaddr = r.module_vaddr;
	p->n.vaddr_known = r.vaddr_known;
	p->next = head;
	/* pairs with the acquire in unload_find() */
	xfdr_store_release(&head, p);
	xfdr_store_release(&kept, kept + 1);
}

XFDR_NOINSTR void unload_name_ids(void *handle)
{
	struct link_map *lm = NULL;
	struct segments s;
	struct sym_table st;
	uint32_t n = fnmap_ids_given() + FNMAP_ID_FIRST, id;
	int sym_ok = -1;

	if (!handle || n == FNMAP_ID_FIRST || dlinfo(handle, RTLD_DI_LINKMAP, &lm) || !lm)
		return;
	memset(&s, 0, sizeof(s));
	s.base = (uintptr_t)lm->l_addr;
	s.name = lm->l_name;
	dl_iterate_phdr(find_segments, &s);
	if (!s.found || !s.count)
		return;
	/* A fork child whose atfork handler has not released the lock yet. */
	unload_after_fork_child();
	pthread_mutex_lock(unload_lock);
	for (id = FNMAP_ID_FIRST; id < n; id++) {
		uintptr_t addr = fnmap_addr_of(id);

		if (!addr || !in_segments(&s, addr) || unload_find(id, addr))
			continue;
		if (sym_ok < 0) {
			memset(&st, 0, sizeof(st));
			sym_ok = !sym_open(&st);
		}
		keep(&st, sym_ok, id, addr, lm->l_name);
	}
	if (sym_ok > 0)
		sym_close(&st);
	pthread_mutex_unlock(unload_lock);
}

/*
 * Fork: the lock is taken before, so that no other thread is naming (holding it, gone in the
 * child) at the moment of fork(), and released after, in the parent and in the child (where
 * the kernel zeroed the page, the child finds it free and fork_holder 0: nothing to do).
 */
XFDR_NOINSTR void unload_before_fork(void)
{
	pthread_mutex_lock(unload_lock);
	xfdr_store_relaxed(fork_holder, getpid());
}

XFDR_NOINSTR void unload_after_fork_parent(void)
{
	pid_t me = getpid();

	if (xfdr_cas(fork_holder, &me, (pid_t)0))
		pthread_mutex_unlock(unload_lock);
}

/*
 * In the child the holder's process is the parent: the first call unlocks (the forking thread
 * locked it; it is this process's thread now), later ones find fork_holder 0 and do nothing.
 * dlclose() calls it too, so a child that runs the atfork handler late still cannot block.
 */
XFDR_NOINSTR void unload_after_fork_child(void)
{
	pid_t holder = xfdr_load_relaxed(fork_holder);

	if (holder && holder != getpid() && xfdr_cas(fork_holder, &holder, (pid_t)0))
		pthread_mutex_unlock(unload_lock);
}

/* The program's dlclose(): see the top of the file. */
XFDR_API XFDR_NOINSTR int dlclose(void *handle)
{
	static int (*real)(void *);
	int (*next)(void *) = xfdr_load_acquire(&real);
	int rc;

	if (!next) {
		*(void **)&next = dlsym(RTLD_NEXT, "dlclose");
		if (!next)
			return -1; /* no dlclose after us: nothing to unload with */
		xfdr_store_release(&real, next);
	}
	unload_name_ids(handle);
	rc = next(handle);
	/* After the real one: a symbol table snapshot taken before this count moved may be stale.
	 */
	xfdr_add_relaxed(&closes, 1u);
	return rc;
}

XFDR_NOINSTR uint32_t unload_closes(void)
{
	return xfdr_load_relaxed(&closes);
}
