/*
 * tests/unit/reader/test_reader_drop_event.c - the "XFDRDROP" payload decoder of the reader library
 * (xfdr_drop_event_decode, xfdr_drop_event_thread).
 *
 * Every payload is written byte by byte here from format.h's XFDRDROP table, not with its
 * constants or the writer:
 *   off 0 "XFDRDROP" | 8 u32 version 2 | 12 u32 entry_count | 16 u64 no_buffer | 24 u64
 *   reentrant | 32 u64 too_large | 40 u64 no_thread_slot | 48 u32 threads_omitted | 52 u32
 *   reserved | 56 u64 overwritten | 64 entries of 40 bytes: u32 tid, u16 thread id, u16
 *   reserved, u64 no_buffer, u64 reentrant, u64 too_large, u64 overwritten.
 * Expected messages and offsets are read off by hand.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tests/support/image.h"
#include "xfdr/reader.h"

#define TAG 'X', 'F', 'D', 'R', 'D', 'R', 'O', 'P'
#define LHEAD(version, count, nb, re, tl, nts, omitted, ow)                                        \
	TAG, L32(version), L32(count), L64(nb), L64(re), L64(tl), L64(nts), L32(omitted), L32(0),  \
	    L64(ow)
#define BHEAD(version, count, nb, re, tl, nts, omitted, ow)                                        \
	TAG, B32(version), B32(count), B64(nb), B64(re), B64(tl), B64(nts), B32(omitted), B32(0),  \
	    B64(ow)

static struct xfdr_drop_event de;
static struct xfdr_error err;

static int decode(const uint8_t *p, uint32_t n, int big)
{
	memset(&de, 0xa5, sizeof(de));
	memset(&err, 0, sizeof(err));
	return xfdr_drop_event_decode(p, n, big, &de, &err);
}

/* A rejected payload: offset and message as given, and *out untouched. */
static void expect_bad(const uint8_t *p, uint32_t n, int big, uint64_t offset, const char *text)
{
	struct xfdr_drop_event untouched;

	assert_int_equal(decode(p, n, big), -1);
	memset(&untouched, 0xa5, sizeof(untouched));
	assert_memory_equal(&de, &untouched, sizeof(de));
	assert_int_equal(err.offset, offset);
	assert_string_equal(err.text, text);
	assert_int_equal(xfdr_drop_event_decode(p, n, big, &de, NULL), -1);
}

static void totals_and_two_threads(void **state)
{
	static const uint8_t p[] = {LHEAD(2, 2, 5, 6, 7, 8, 3, 0x100000001ull),
				    L32(4242),
				    L16(1),
				    L16(0),
				    L64(1),
				    L64(2),
				    L64(3),
				    L64(4),
				    L32(4243),
				    L16(0xfffe),
				    L16(0),
				    L64(0x1122334455667788ull),
				    L64(0),
				    L64(0),
				    L64(9)};
	struct xfdr_drop_thread t;

	(void)state;
	assert_int_equal(sizeof(p), 64 + 2 * 40);
	assert_int_equal(decode(p, sizeof(p), 0), 0);
	assert_int_equal(de.no_buffer, 5);
	assert_int_equal(de.reentrant, 6);
	assert_int_equal(de.too_large, 7);
	assert_int_equal(de.no_thread_slot, 8);
	assert_int_equal(de.threads_omitted, 3);
	assert_true(de.overwritten == 0x100000001ull);
	assert_int_equal(de.thread_count, 2);
	xfdr_drop_event_thread(&de, 0, &t);
	assert_int_equal(t.tid, 4242);
	assert_int_equal(t.thread_id, 1);
	assert_int_equal(t.no_buffer, 1);
	assert_int_equal(t.reentrant, 2);
	assert_int_equal(t.too_large, 3);
	assert_int_equal(t.overwritten, 4);
	xfdr_drop_event_thread(&de, 1, &t);
	assert_int_equal(t.tid, 4243);
	assert_int_equal(t.thread_id, 0xfffe);
	assert_true(t.no_buffer == 0x1122334455667788ull);
	assert_int_equal(t.overwritten, 9);
}

static void big_endian_without_threads(void **state)
{
	static const uint8_t p[] = {BHEAD(2, 0, 0x0102030405060708ull, 0, 0, 1, 0, 2)};

	(void)state;
	assert_int_equal(decode(p, sizeof(p), 1), 0);
	assert_true(de.no_buffer == 0x0102030405060708ull);
	assert_int_equal(de.no_thread_slot, 1);
	assert_int_equal(de.overwritten, 2);
	assert_int_equal(de.thread_count, 0);
}

static void rejected(void **state)
{
	static const uint8_t v1[] = {LHEAD(1, 0, 0, 0, 0, 0, 0, 0)};
	static const uint8_t tag[] = {'X',    'F',    'D',    'R',    'C',    'R',
				      'S',    'H',    L32(2), L32(0), L64(0), L64(0),
				      L64(0), L64(0), L64(0), L64(0), L64(0)};
	/* one entry announced, none there; and one entry with 8 bytes after it */
	static const uint8_t cut[] = {LHEAD(2, 1, 0, 0, 0, 0, 0, 0)};
	static const uint8_t extra[] = {LHEAD(2, 1, 0, 0, 0, 0, 0, 0),
					L32(1),
					L16(1),
					L16(0),
					L64(0),
					L64(0),
					L64(0),
					L64(0),
					L64(0)};
	/* an entry count whose size overflows 32 bits */
	static const uint8_t huge[] = {LHEAD(2, 0xffffffffu, 0, 0, 0, 0, 0, 0)};

	(void)state;
	expect_bad(
	    v1, 63, 0, 0,
	    "payload offset 0: expected at least 64 bytes for an XFDRDROP payload, found 63");
	expect_bad(tag, sizeof(tag), 0, 0,
		   "payload offset 0: expected the tag XFDRDROP (5846445244524f50), found "
		   "5846445243525348");
	expect_bad(v1, sizeof(v1), 0, 8,
		   "payload offset 8: expected XFDRDROP layout version 2, found 1");
	expect_bad(cut, sizeof(cut), 0, 0,
		   "payload offset 0: expected 104 payload bytes for entry_count 1, found 64");
	expect_bad(extra, sizeof(extra), 0, 0,
		   "payload offset 0: expected 104 payload bytes for entry_count 1, found 112");
	expect_bad(
	    huge, sizeof(huge), 0, 0,
	    "payload offset 0: expected 171798691864 payload bytes for entry_count 4294967295, "
	    "found 64");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(totals_and_two_threads),
	    cmocka_unit_test(big_endian_without_threads),
	    cmocka_unit_test(rejected),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
