/*
 * tests/support/stream_test.c - see stream_test.h.
 */
#include <time.h>

#include "runtime/pool/pool.h"
#include "tests/support/runtime_test.h"
#include "tests/support/stream_test.h"

void st_fresh_dir(char *dir, size_t n, const char *name)
{
	assert_true((size_t)snprintf(dir, n, "%s/%s/", ts_dir, name) < n);
	assert_int_equal(mkdir(dir, 0700), 0);
}

uint32_t st_full_buffers(void)
{
	uint32_t i, n = 0;

	for (i = 0; i < rt_pool.count; i++)
		n += POOL_STATE(xfdr_load_acquire(&rt_pool.descs[i].ctl)) == POOL_FULL;
	return n;
}

void st_wait_writer_caught_up(unsigned seconds)
{
	time_t deadline = time(NULL) + (time_t)seconds;

	while (st_full_buffers()) {
		if (time(NULL) > deadline)
			fail_msg("the stream writer left %u full buffers for %u s",
				 st_full_buffers(), seconds);
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	}
}
