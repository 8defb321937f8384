/*
 * runtime/pool/pool.c - taking a buffer from the free stack (the recording side of the pool).
 */
#define _LGPL_SOURCE
#include <urcu/lfstack.h>

#include "runtime/base/compiler.h"
#include "runtime/pool/pool.h"

struct pool rt_pool;

XFDR_NOINSTR struct pool_desc *__pool_take(void)
{
	struct cds_lfs_node *n;

	/*
	 * __cds_lfs_pop() is safe without a lock or an RCU read side here because no node is
	 * ever pushed while a session records (full buffers are not recycled; pool_setup()
	 * refills the stack only after thread_quiesce()). The stack only shrinks, so the head a
	 * popper read cannot be popped and pushed back before its cmpxchg (no ABA), and a
	 * node's next pointer, read after the head, is never rewritten during the session.
	 */
	n = __cds_lfs_pop(&rt_pool.free_stack);
	if (!n)
		return NULL;
	return caa_container_of(n, struct pool_desc, node);
}
