/*
 * tests/unit/reader/test_reader_stack_context.c - the "XFDRSTAK" stack context in the reader
 * library: the payload decoder (xfdr_stack_context_decode, xfdr_payload_has_tag), the events that
 * carry it, and whole traces paired with it (callstack_pair_trace), in both byte orders.
 *
 * Every payload and image is written byte by byte here from the layouts (format.h's XFDRSTAK
 * table, the spec's records), not with format.h's constants or the writer:
 *   off 0 "XFDRSTAK" | off 8 u32 version 1 | 12 u32 depth | 16 u32 id_count | 20 u32 reserved
 *   | 24 u32 ids, outermost first | zero padding to a multiple of 8.
 * The expected messages, offsets and calls are read off those bytes by hand.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/callstack.h"
#include "tests/support/image.h"
#include "xfdr/reader.h"

#define TAG 'X', 'F', 'D', 'R', 'S', 'T', 'A', 'K'
#define LHEAD(version, depth, count) TAG, L32(version), L32(depth), L32(count), L32(0)
#define BHEAD(version, depth, count) TAG, B32(version), B32(depth), B32(count), B32(0)

static struct xfdr_stack_context sc;
static struct xfdr_error err;

static int decode(const uint8_t *p, uint32_t n, int big)
{
	memset(&sc, 0xa5, sizeof(sc));
	memset(&err, 0, sizeof(err));
	return xfdr_stack_context_decode(p, n, big, &sc, &err);
}

/* A rejected payload: offset and message as given, and *out untouched. */
static void expect_bad(const uint8_t *p, uint32_t n, int big, uint64_t offset, const char *text)
{
	struct xfdr_stack_context untouched;

	assert_int_equal(decode(p, n, big), -1);
	memset(&untouched, 0xa5, sizeof(untouched));
	assert_memory_equal(&sc, &untouched, sizeof(sc));
	assert_int_equal(err.offset, offset);
	assert_string_equal(err.text, text);
	/* err may be NULL. */
	assert_int_equal(xfdr_stack_context_decode(p, n, big, &sc, NULL), -1);
}

static void test_tag(void **state)
{
	static const uint8_t stak[] = {TAG};
	static const uint8_t drop[] = {'X', 'F', 'D', 'R', 'D', 'R', 'O', 'P'};

	(void)state;
	assert_int_equal(xfdr_payload_has_tag(stak, 8, "XFDRSTAK"), 1);
	assert_int_equal(xfdr_payload_has_tag(stak, 7, "XFDRSTAK"), 0);
	assert_int_equal(xfdr_payload_has_tag(NULL, 0, "XFDRSTAK"), 0);
	assert_int_equal(xfdr_payload_has_tag(drop, 8, "XFDRSTAK"), 0);
	assert_int_equal(xfdr_payload_has_tag(drop, 8, "XFDRDROP"), 1);
}

static void test_decode_valid(void **state)
{
	/* depth 3, ids 1 2 3: 24 + 12 = 36 bytes, padded to 40. */
	static const uint8_t three[] = {LHEAD(1, 3, 3), L32(1), L32(2), L32(3), L32(0)};
	/* big-endian: depth 2, ids 0x0abcdef1 and 5; 32 bytes. */
	static const uint8_t big[] = {BHEAD(1, 2, 2), B32(0x0abcdef1), B32(5)};
	/* Nothing open (the runtime writes none then, but it is well formed): 24 bytes. */
	static const uint8_t empty[] = {LHEAD(1, 0, 0)};
	/* Fewer ids than the depth (the innermost unnamed); a reserved word is not read. */
	static const uint8_t partial[] = {TAG,	  L32(1),	  L32(5), L32(2), L32(0xffffffff),
					  L32(7), L32(0x0fffffff)};
	static uint8_t deep[24 + 4 * 128];
	static const uint8_t deep_head[] = {LHEAD(1, 200, 128)};
	uint32_t i;

	(void)state;
	assert_int_equal(decode(three, sizeof(three), 0), 0);
	assert_int_equal(sc.depth, 3);
	assert_int_equal(sc.id_count, 3);
	assert_int_equal(sc.ids[0], 1);
	assert_int_equal(sc.ids[1], 2);
	assert_int_equal(sc.ids[2], 3);

	assert_int_equal(decode(big, sizeof(big), 1), 0);
	assert_int_equal(sc.depth, 2);
	assert_int_equal(sc.id_count, 2);
	assert_int_equal(sc.ids[0], 0x0abcdef1);
	assert_int_equal(sc.ids[1], 5);

	assert_int_equal(decode(empty, sizeof(empty), 0), 0);
	assert_int_equal(sc.depth, 0);
	assert_int_equal(sc.id_count, 0);

	assert_int_equal(decode(partial, sizeof(partial), 0), 0);
	assert_int_equal(sc.depth, 5);
	assert_int_equal(sc.id_count, 2);
	assert_int_equal(sc.ids[0], 7);
	assert_int_equal(sc.ids[1], 0x0fffffff);

	/* Deeper than 128: the outermost 128 ids, 536 bytes. */
	memcpy(deep, deep_head, sizeof(deep_head));
	for (i = 0; i < 128; i++) {
		const uint8_t id[] = {L32(1000 + i)};

		memcpy(deep + 24 + 4 * i, id, 4);
	}
	assert_int_equal(sizeof(deep), 536);
	assert_int_equal(decode(deep, sizeof(deep), 0), 0);
	assert_int_equal(sc.depth, 200);
	assert_int_equal(sc.id_count, 128);
	assert_int_equal(sc.ids[0], 1000);
	assert_int_equal(sc.ids[127], 1127);
}

static void test_decode_invalid(void **state)
{
	static const uint8_t good[] = {LHEAD(1, 1, 1), L32(4), L32(0)};
	static const uint8_t drop[] = {'X', 'F',    'D',    'R',    'D',    'R',    'O',
				       'P', L32(1), L32(1), L32(1), L32(0), L32(4), L32(0)};
	static const uint8_t version2[] = {LHEAD(2, 1, 1), L32(4), L32(0)};
	static const uint8_t version0[] = {LHEAD(0, 1, 1), L32(4), L32(0)};
	static const uint8_t big[] = {BHEAD(1, 1, 1), B32(4), B32(0)};
	static const uint8_t over_depth[] = {LHEAD(1, 1, 2), L32(4), L32(5)};
	static const uint8_t over_max[24 + 4 * 129 + 4] = {LHEAD(1, 200, 129)};
	static const uint8_t unpadded[] = {LHEAD(1, 1, 1), L32(4)};
	static const uint8_t long_by_8[] = {LHEAD(1, 1, 1), L32(4), L32(0), Z8};
	static const uint8_t wide_id[] = {LHEAD(1, 2, 2), L32(4), L32(0x10000000)};

	(void)state;
	assert_int_equal(decode(good, sizeof(good), 0), 0);
	expect_bad(
	    good, 23, 0, 0,
	    "payload offset 0: expected at least 24 bytes for an XFDRSTAK payload, found 23");
	expect_bad(NULL, 0, 0, 0,
		   "payload offset 0: expected at least 24 bytes for an XFDRSTAK payload, found 0");
	expect_bad(drop, sizeof(drop), 0, 0,
		   "payload offset 0: expected the tag XFDRSTAK (584644525354414b), found "
		   "5846445244524f50");
	expect_bad(version2, sizeof(version2), 0, 8,
		   "payload offset 8: expected XFDRSTAK layout version 1, found 2");
	expect_bad(version0, sizeof(version0), 0, 8,
		   "payload offset 8: expected XFDRSTAK layout version 1, found 0");
	/* A big-endian payload read as little-endian: version 0x01000000. */
	expect_bad(big, sizeof(big), 0, 8,
		   "payload offset 8: expected XFDRSTAK layout version 1, found 16777216");
	expect_bad(over_depth, sizeof(over_depth), 0, 16,
		   "payload offset 16: expected an id_count of at most 1 (depth 1, at most 128 "
		   "ids), found 2");
	assert_int_equal(sizeof(over_max), 544);
	expect_bad(over_max, sizeof(over_max), 0, 16,
		   "payload offset 16: expected an id_count of at most 128 (depth 200, at most 128 "
		   "ids), found 129");
	expect_bad(unpadded, sizeof(unpadded), 0, 0,
		   "payload offset 0: expected 32 payload bytes for 1 ids, found 28");
	expect_bad(long_by_8, sizeof(long_by_8), 0, 0,
		   "payload offset 0: expected 32 payload bytes for 1 ids, found 40");
	expect_bad(
	    wide_id, sizeof(wide_id), 0, 28,
	    "payload offset 28: expected a function id of 28 bits (at most 268435455) for id "
	    "1, found 268435456");
}

/* ---- whole traces ------------------------------------------------------------------------ */

/*
 * One buffer of 128 bytes on thread 7, in either byte order, whose thread is inside main (1)
 * and work (2) when it begins: NewBuffer, WallClockTime 10 s 5 us, NewCPUId cpu 3 tsc 1000,
 * at 80 the marker (32 bytes, tsc 1000) and the context (depth 2: 1 2), then at 128 Exit 2 +5
 * (1005) and at 136 Exit 1 +5 (1010), at 144 EndOfBuffer and zero padding to 160.
 * Little-endian metadata byte 0 is kind << 1 | 1, big-endian 0x80 | kind; a big-endian
 * function word has the action in bits 28-30 and the id in bits 0-27.
 */
static void build(struct img *m, int big)
{
	memset(m, 0, sizeof(*m));
	m->buf_bytes = 128;
	if (!big) {
		img_header(m, 128);
		img_buffer(m, 7, 10, 5);
		PUT(m, 0x05, L16(3), L64(1000), Z5);
		PUT(m, 0x0b, L32(32), L64(1000), Z3);
		PUT(m, LHEAD(1, 2, 2), L32(1), L32(2));
		PUT(m, L32(1u << 1 | 2u << 4), L32(5), L32(1u << 1 | 1u << 4), L32(5));
		AT(m, 144);
		img_close(m);
	} else {
		PUT(m, B16(1), B16(1), B32(3), B64(2000000000ull), B64(128), Z8);
		PUT(m, 0x80, B16(7), Z13);
		PUT(m, 0x84, B64(10), B32(5), Z3);
		PUT(m, 0x82, B16(3), B64(1000), Z5);
		PUT(m, 0x85, B32(32), B64(1000), Z3);
		PUT(m, BHEAD(1, 2, 2), B32(1), B32(2));
		PUT(m, B32(1u << 28 | 2u), B32(5), B32(1u << 28 | 1u), B32(5));
		AT(m, 144);
		PUT(m, 0x81, Z15);
		AT(m, 160);
	}
}

struct calls {
	struct call v[8];
	size_t n;
};

static int keep(void *ctx, const struct call *c)
{
	struct calls *k = ctx;

	assert_true(k->n < 8);
	k->v[k->n] = *c;
	k->v[k->n].enter = NULL;
	k->v[k->n].exit = NULL;
	k->n++;
	return 0;
}

static void test_trace_both_orders(void **state)
{
	static struct img m;
	struct callstack_stats s;
	struct xfdr_event_iter it;
	struct xfdr_trace *t;
	struct xfdr_event ev;
	struct calls k;
	int big;

	(void)state;
	for (big = 0; big < 2; big++) {
		build(&m, big);
		assert_int_equal(xfdr_trace_open_memory(m.b, m.len, "stak.xray", &t, &err), 0);
		assert_int_equal(xfdr_trace_header(t)->big_endian, big);

		/* The custom event carries the file's byte order and its payload in place. */
		assert_int_equal(xfdr_events_begin(t, XFDR_ORDER_FILE, &it, &err), 0);
		assert_int_equal(xfdr_events_next(&it, &ev, &err), 1);
		assert_int_equal(ev.type, XFDR_EVENT_CUSTOM);
		assert_int_equal(ev.offset, 80);
		assert_int_equal(ev.tsc, 1000);
		assert_int_equal(ev.big_endian, big);
		assert_ptr_equal(ev.payload, m.b + 96);
		assert_int_equal(ev.payload_bytes, 32);
		assert_int_equal(decode(ev.payload, ev.payload_bytes, ev.big_endian), 0);
		assert_int_equal(sc.depth, 2);
		assert_int_equal(sc.ids[1], 2);

		memset(&k, 0, sizeof(k));
		assert_int_equal(callstack_pair_trace(t, keep, &k, &s, &err), 0);
		assert_int_equal(k.n, 2);
		assert_int_equal(k.v[0].function_id, 2);
		assert_int_equal(k.v[0].depth, 1);
		assert_int_equal(k.v[0].flags, CALL_EXIT | CALL_FROM_CONTEXT);
		assert_int_equal(k.v[0].enter_tsc, 1000);
		assert_int_equal(k.v[0].exit_tsc, 1005);
		assert_int_equal(k.v[0].cpu, 3);
		assert_int_equal(k.v[1].function_id, 1);
		assert_int_equal(k.v[1].depth, 0);
		assert_int_equal(k.v[1].flags, CALL_EXIT | CALL_FROM_CONTEXT);
		assert_int_equal(k.v[1].total_tsc, 10);
		assert_int_equal(k.v[1].child_tsc, 5);
		assert_int_equal(s.contexts_seeded, 1);
		assert_int_equal(s.from_context, 2);
		assert_int_equal(s.no_entry, 0);
		assert_int_equal(s.ignored_events, 0);
		xfdr_trace_close(t);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tag),
	    cmocka_unit_test(test_decode_valid),
	    cmocka_unit_test(test_decode_invalid),
	    cmocka_unit_test(test_trace_both_orders),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
