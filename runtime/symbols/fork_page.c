/*
 * runtime/symbols/fork_page.c - the symbol layer's page that fork children get zeroed (see
 * fork_page.h).
 */
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/base/compiler.h"
#include "runtime/symbols/fork_page.h"

void symbols_fork_page_arm(void)
{
	if (xfdr_load_relaxed(&symbols_fork_page.wipe_tried))
		return;
	xfdr_store_relaxed(&symbols_fork_page.wipe_tried, 1u);
#ifdef MADV_WIPEONFORK
	if (sysconf(_SC_PAGESIZE) == SYMBOLS_FORK_PAGE_BYTES)
		madvise(&symbols_fork_page, SYMBOLS_FORK_PAGE_BYTES, MADV_WIPEONFORK);
#endif
}
