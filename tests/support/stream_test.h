/*
 * tests/support/stream_test.h - what the mode=stream tests share: a directory of the test's
 * own, and waiting for the stream's writer by the pool's own states (never by time alone).
 * For tests linked with the runtime's objects (they read rt_pool).
 */
#ifndef XFDR_TESTS_SUPPORT_STREAM_TEST_H
#define XFDR_TESTS_SUPPORT_STREAM_TEST_H

#include <stddef.h>
#include <stdint.h>

/* st_fresh_dir - make "<ts_dir>/<name>/" and write its name into dir (n bytes). */
void st_fresh_dir(char *dir, size_t n, const char *name);

/* st_full_buffers - buffers of the pool that are full: not yet written and handed back. */
uint32_t st_full_buffers(void);

/*
 * st_wait_writer_caught_up - return once no full buffer waits for the writer; fail the test
 * after seconds.
 */
void st_wait_writer_caught_up(unsigned seconds);

#endif /* XFDR_TESTS_SUPPORT_STREAM_TEST_H */
