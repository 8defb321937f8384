/*
 * runtime/symbols/fork_page.h - the symbol layer's state around fork(), on a page of its own
 * that the kernel zeroes in fork children (MADV_WIPEONFORK).
 *
 * fork()'s handlers take the function map's and dlclose()'s locks before fork() and release
 * them after, in the parent and in the child. A page that fork() copies is copy-on-write in
 * both processes after it, and the first write to it in each is a page fault (microseconds on
 * the target VMs, beside a fork of about a hundred). fork() leaves this page out of the child
 * instead, so the parent writes it without a fault, and the child finds it zeroed: no mark,
 * no holder, every lock free (all zero is PTHREAD_MUTEX_INITIALIZER in glibc), which is what
 * the child handler would have made of it. Where the kernel cannot wipe it (before Linux 4.14,
 * pages larger than 4 KiB) the child has a copy, and the holder fields tell it what to
 * release. A child made without the handlers (_Fork(), clone()) finds the locks free as well,
 * even one a thread of the parent held: each user says why that is safe.
 */
#ifndef XFDR_RUNTIME_SYMBOLS_FORK_PAGE_H
#define XFDR_RUNTIME_SYMBOLS_FORK_PAGE_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/base/compiler.h"

#define SYMBOLS_FORK_PAGE_BYTES 4096

struct symbols_fork_page {
	/* fnmap.c: the pid of a process whose thread is in fork() and found the map not set
	 * up (fnmap_fork_unused()), else 0 */
	uint32_t set_up_held;
	/* fnmap.c: 1 while the forking thread holds grow_lock and urcu-bp's locks */
	uint32_t grow_held;
	/* unload.c: the pid of the process whose forking thread holds unload_lock, else 0 */
	pid_t unload_holder;
	pthread_mutex_t grow_lock;   /* fnmap.c: one table resize at a time */
	pthread_mutex_t unload_lock; /* unload.c: one naming of an unloading library at a time */
} __attribute__((aligned(SYMBOLS_FORK_PAGE_BYTES)));

/*
 * Defined beside rt_state and advised with it at init (runtime/control/wiped_pages.c): the
 * two pages are one mapping.
 */
extern struct symbols_fork_page symbols_fork_page XFDR_HIDDEN;

#endif /* XFDR_RUNTIME_SYMBOLS_FORK_PAGE_H */
