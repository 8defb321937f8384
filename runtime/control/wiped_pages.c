/*
 * runtime/control/wiped_pages.c - the runtime's pages that the kernel zeroes in fork children
 * (MADV_WIPEONFORK): the session word (record/session.h) and the symbol layer's fork state
 * (symbols/fork_page.h).
 *
 * Defined here together, the only objects of this file, so that they sit side by side in
 * .bss: advised together (wiped_pages_arm()), they make one kernel mapping. fork() copies
 * every mapping (about 2 us each on the target VMs), and each page advised alone would split
 * .bss around it, two more mappings a page.
 */
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/control/wiped_pages.h"
#include "runtime/record/session.h"
#include "runtime/symbols/fork_page.h"

_Static_assert(sizeof(struct symbols_fork_page) == SYMBOLS_FORK_PAGE_BYTES,
	       "the symbol layer's fork page is one page, alone");

/* Zero (SESSION_NONE) until rt_load() or the first call, and in a fork child (session.h). */
struct rt_state rt_state;

struct symbols_fork_page symbols_fork_page = {
    .grow_lock = PTHREAD_MUTEX_INITIALIZER,
    .unload_lock = PTHREAD_MUTEX_INITIALIZER,
};

int wiped_pages_arm(void)
{
#ifdef MADV_WIPEONFORK
	if (sysconf(_SC_PAGESIZE) == (long)sizeof(rt_state) &&
	    !madvise(&rt_state, sizeof(rt_state), MADV_WIPEONFORK) &&
	    !madvise(&symbols_fork_page, sizeof(symbols_fork_page), MADV_WIPEONFORK))
		return 1;
#endif
	return 0;
}
