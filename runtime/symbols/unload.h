/*
 * runtime/symbols/unload.h - the names of functions whose library was dlclose()d.
 *
 * The .map names each -finstrument-functions id at flush time, from the symbol tables of the
 * files mapped then (symbolizer.h). A library unloaded before the flush is no longer mapped:
 * its functions' ids would be "<unknown>". So the runtime interposes dlclose(): before the
 * real one runs, the ids whose addresses lie in the library's segments are named (symbol,
 * module, module address) and kept for the life of the process; the .map writer asks here
 * first (runtime/flush/map_functions.c).
 */
#ifndef XFDR_RUNTIME_SYMBOLS_UNLOAD_H
#define XFDR_RUNTIME_SYMBOLS_UNLOAD_H

#include <stdint.h>

/* A function named when its library was unloaded. Never changes once published. */
struct unload_name {
	uint32_t id;
	uintptr_t addr;
	const char *name;   /* NULL: the library had no symbol for it */
	const char *module; /* the library's path */
	uint64_t module_vaddr;
	int vaddr_known;
};

/*
 * unload_find - the name kept for id at addr, or NULL when its library was not unloaded (or
 * another function has the address now). Context: async-signal-safe (a walk of an
 * append-only list; no lock).
 */
const struct unload_name *unload_find(uint32_t id, uintptr_t addr);

/* How many are kept (0: unload_find() always returns NULL). Context: async-signal-safe. */
uint32_t unload_count(void);

/*
 * unload_closes - dlclose() calls the program made so far (counted after the real one
 * returned): a snapshot of the mappings (symbolizer.h) taken while it had one value is stale
 * once it has another. Context: async-signal-safe.
 */
uint32_t unload_closes(void);

/*
 * unload_name_ids - name and keep the ids of the library behind handle that are not kept yet
 * (their addresses in its segments): what dlclose() does before the real one runs, without
 * the unload (a test holds a thread inside it). Context: any thread, not a signal handler
 * (a lock, the library's symbol tables).
 */
void unload_name_ids(void *handle);

/*
 * Around fork(): a thread naming a library holds a lock that the child, where that thread does
 * not run, would wait for in its dlclose(). unload_before_fork() takes it (after a naming under
 * way: a library's symbol tables, milliseconds); unload_after_fork_parent() and
 * unload_after_fork_child() release it. From the pthread_atfork handlers: prepare, parent,
 * child. The parent and child functions do nothing a second time, nor without the prepare one.
 * The child one allocates nothing (getpid(), a compare-exchange, a mutex unlock) and may also
 * run later: the child's dlclose() calls it first anyway. Context: the forking thread; the
 * child's any thread.
 */
void unload_before_fork(void);
void unload_after_fork_parent(void);
void unload_after_fork_child(void);

#endif /* XFDR_RUNTIME_SYMBOLS_UNLOAD_H */
