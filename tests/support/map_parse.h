/*
 * tests/support/map_parse.h - reading a flush's .map sidecar (doc/map-format.md) in tests:
 * its "thread" lines and its single-value lines. Each malformed line fails the cmocka test.
 */
#ifndef XFDR_TESTS_SUPPORT_MAP_PARSE_H
#define XFDR_TESTS_SUPPORT_MAP_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* One "thread" line: tid, thread id, name, 3 drop causes, then the four notes. */
struct mp_thread {
	uint32_t tid;
	uint32_t id;
	char name[16];
	uint64_t no_buffer, reentrant, too_large;
	uint64_t overwritten, elided, stack_overflow, overwritten_events;
	uint64_t filtered_calls, max_depth_calls;
};

/* Its drops: the three causes a thread line counts. */
static inline uint64_t mp_thread_drops(const struct mp_thread *t)
{
	return t->no_buffer + t->reentrant + t->too_large;
}

/* The thread lines of map (all 12 columns, in order) into out; returns how many. */
size_t mp_threads(const char *map, struct mp_thread *out, size_t max);

/* The one thread line of tid among t[0..n) (two fail the test); NULL when none. */
const struct mp_thread *mp_thread_of(const struct mp_thread *t, size_t n, uint32_t tid);

/* The decimal value of the line that starts with key and a tab ("dropped\ttotal"); fails if none.
 */
uint64_t mp_number(const char *map, const char *key);

/* path + ".map" read whole (NUL-terminated, malloc'd); fails the test if it cannot be read. */
char *mp_read(const char *path);

#endif /* XFDR_TESTS_SUPPORT_MAP_PARSE_H */
