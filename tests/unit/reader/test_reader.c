/*
 * tests/unit/reader/test_reader.c - the reader decodes hand-built FDR v1 images.
 *
 * Every image is written here byte by byte from the specification (kind bytes, function
 * words, field orders), never through writer/, so the reader is checked against an
 * independent encoding. Expected values (offsets, absolute TSCs) are computed by hand and
 * written next to the bytes; AT() checks that the image really is where the comment says.
 *
 * Little-endian cheat sheet: metadata byte 0 = kind << 1 | 1: NewBuffer 01, EndOfBuffer 03,
 * NewCPUId 05, TSCWrap 07, WallClockTime 09, CustomEventMarker 0b, CallArgument 0d.
 * Function word = fid << 4 | action << 1. Big-endian: metadata byte 0 = 0x80 | kind,
 * function word = action << 28 | fid, both then stored most significant byte first.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "xfdr/reader.h"

#include "tests/support/image.h"

/*
 * 32-byte header: version 1, type 1, bitfield 3 (constant + nonstop), 2 GHz; the
 * little-endian one is img_header().
 */
static void header_be(struct img *m, uint64_t buffer_size)
{
	PUT(m, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x03, B64(2000000000ull), B64(buffer_size),
	    Z8);
}

/* NewBuffer(tid), WallClockTime(sec, usec), NewCPUId(cpu, tsc): 48 bytes. */
static void preamble_le(struct img *m, uint16_t tid, uint64_t sec, uint32_t usec, uint16_t cpu,
			uint64_t tsc)
{
	PUT(m, 0x01, L16(tid), Z13);
	PUT(m, 0x09, L64(sec), L32(usec), Z3);
	PUT(m, 0x05, L16(cpu), L64(tsc), Z5);
}

/* An image plus the exact-size heap copy the trace reads (ASan sees any overread). */
struct opened {
	struct xfdr_trace *t;
	uint8_t *copy;
};

static struct opened open_img(const struct img *m)
{
	struct opened o = {0};
	struct xfdr_error err;

	o.copy = malloc(m->len ? m->len : 1);
	assert_non_null(o.copy);
	memcpy(o.copy, m->b, m->len);
	if (xfdr_trace_open_memory(o.copy, m->len, "trace.xray", &o.t, &err)) {
		print_error("%s\n", err.text);
		fail();
	}
	return o;
}

static void close_img(struct opened *o)
{
	xfdr_trace_close(o->t);
	free(o->copy);
}

/* ---- the image with every record kind ---------------------------------------------------- */

/*
 * One 256-byte buffer of thread 0x0107 holding every record kind; the reserved bytes of
 * NewBuffer are 0xee and the padding after EndOfBuffer is 0xff, both to be ignored.
 *   32 NewBuffer tid 0x0107        48 WallClockTime 100 s 5 us     64 NewCPUId cpu 2 tsc 1000
 *   80 Entry fid 1 +10 -> 1010     88 Exit fid 1 +5 -> 1015        96 TSCWrap 0x100000000
 *  112 Tail_Exit 0xabcdef +3 -> 4294967299                        120 NewCPUId cpu 3 tsc 2000
 *  136 Entry 0xfffffff +0xffffffff -> 4294969295                  144 Custom 3 bytes tsc 7777
 *  160 "xyz"  163 Exit 0xfffffff +1 -> 4294969296 (the custom event left the base alone)
 *  171 Entry_Args fid 5 +4 -> 4294969300                          179 CallArgument
 *  195 EndOfBuffer, then 77 bytes of padding to 288
 */
static void every_kind_le(struct img *m)
{
	img_header(m, 256);
	AT(m, 32);
	PUT(m, 0x01, L16(0x0107), 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee,
	    0xee, 0xee);
	PUT(m, 0x09, L64(100), L32(5), Z3);
	PUT(m, 0x05, L16(2), L64(1000), Z5);
	AT(m, 80);
	PUT(m, 0x10, 0x00, 0x00, 0x00, L32(10));
	PUT(m, 0x12, 0x00, 0x00, 0x00, L32(5));
	AT(m, 96);
	PUT(m, 0x07, L64(0x100000000ull), Z7);
	AT(m, 112);
	PUT(m, 0xf4, 0xde, 0xbc, 0x0a, L32(3));
	PUT(m, 0x05, L16(3), L64(2000), Z5);
	AT(m, 136);
	PUT(m, 0xf0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff);
	AT(m, 144);
	PUT(m, 0x0b, L32(3), L64(7777), Z3, 'x', 'y', 'z');
	AT(m, 163);
	PUT(m, 0xf2, 0xff, 0xff, 0xff, L32(1));
	AT(m, 171);
	PUT(m, 0x56, 0x00, 0x00, 0x00, L32(4));
	PUT(m, 0x0d, L64(0x1122334455667788ull), Z7);
	AT(m, 195);
	PUT(m, 0x03, Z15);
	img_pad_to(m, 288, 0xff);
}

/* The same trace as a big-endian machine writes it. */
static void every_kind_be(struct img *m)
{
	header_be(m, 256);
	PUT(m, 0x80, B16(0x0107), 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee,
	    0xee, 0xee);
	PUT(m, 0x84, B64(100), B32(5), Z3);
	PUT(m, 0x82, B16(2), B64(1000), Z5);
	AT(m, 80);
	PUT(m, 0x00, 0x00, 0x00, 0x01, B32(10));
	PUT(m, 0x10, 0x00, 0x00, 0x01, B32(5));
	PUT(m, 0x83, B64(0x100000000ull), Z7);
	AT(m, 112);
	PUT(m, 0x20, 0xab, 0xcd, 0xef, B32(3));
	PUT(m, 0x82, B16(3), B64(2000), Z5);
	PUT(m, 0x0f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff);
	AT(m, 144);
	PUT(m, 0x85, B32(3), B64(7777), Z3, 'x', 'y', 'z');
	PUT(m, 0x1f, 0xff, 0xff, 0xff, B32(1));
	AT(m, 171);
	PUT(m, 0x30, 0x00, 0x00, 0x05, B32(4));
	PUT(m, 0x86, B64(0x1122334455667788ull), Z7);
	AT(m, 195);
	PUT(m, 0x81, Z15);
	img_pad_to(m, 288, 0xff);
}

struct want_rec {
	uint64_t offset;
	int is_md;
	unsigned kind;
	uint32_t size;
	uint32_t fid;
	uint64_t tsc; /* function records: reconstructed; NewCPUId/TSCWrap/custom: absolute */
	uint16_t cpu;
};

static const struct want_rec every_kind_records[] = {
    {32, 1, XFDR_MD_NEW_BUFFER, 16, 0, 0, 0},
    {48, 1, XFDR_MD_WALL_CLOCK_TIME, 16, 0, 0, 0},
    {64, 1, XFDR_MD_NEW_CPU_ID, 16, 0, 1000, 2},
    {80, 0, XFDR_FN_ENTER, 8, 1, 1010, 2},
    {88, 0, XFDR_FN_EXIT, 8, 1, 1015, 2},
    {96, 1, XFDR_MD_TSC_WRAP, 16, 0, 0x100000000ull, 2},
    {112, 0, XFDR_FN_TAIL_EXIT, 8, 0xabcdef, 4294967299ull, 2},
    {120, 1, XFDR_MD_NEW_CPU_ID, 16, 0, 2000, 3},
    {136, 0, XFDR_FN_ENTER, 8, 0xfffffff, 4294969295ull, 3},
    {144, 1, XFDR_MD_CUSTOM_EVENT, 19, 0, 7777, 3},
    {163, 0, XFDR_FN_EXIT, 8, 0xfffffff, 4294969296ull, 3},
    {171, 0, XFDR_FN_ENTER_ARGS, 8, 5, 4294969300ull, 3},
    {179, 1, XFDR_MD_CALL_ARGUMENT, 16, 0, 0, 3},
    {195, 1, XFDR_MD_END_OF_BUFFER, 16, 0, 0, 3},
};

static void check_every_kind_records(const struct img *m)
{
	struct opened o = open_img(m);
	struct xfdr_record_cursor c;
	struct xfdr_record r;
	struct xfdr_error err;
	size_t i, n = sizeof(every_kind_records) / sizeof(every_kind_records[0]);

	xfdr_records_begin(o.t, &c);
	for (i = 0; i < n; i++) {
		const struct want_rec *w = &every_kind_records[i];

		assert_int_equal(xfdr_records_next(&c, &r, &err), 1);
		assert_int_equal(r.offset, w->offset);
		assert_int_equal(r.buffer_index, 0);
		assert_int_equal(r.is_metadata, w->is_md);
		assert_int_equal(r.kind, w->kind);
		assert_int_equal(r.size, w->size);
		assert_int_equal(r.cpu, w->cpu);
		assert_int_equal(r.thread_id, 0x0107);
		if (!w->is_md) {
			assert_int_equal(r.function_id, w->fid);
			assert_int_equal(r.tsc, w->tsc);
		}
		switch (w->is_md ? (int)w->kind : -1) {
		case XFDR_MD_WALL_CLOCK_TIME:
			assert_int_equal(r.seconds, 100);
			assert_int_equal(r.micros, 5);
			break;
		case XFDR_MD_NEW_CPU_ID:
		case XFDR_MD_TSC_WRAP:
			assert_int_equal(r.absolute_tsc, w->tsc);
			break;
		case XFDR_MD_CUSTOM_EVENT:
			assert_int_equal(r.absolute_tsc, 7777);
			assert_int_equal(r.payload_bytes, 3);
			assert_ptr_equal(r.payload, o.copy + 160);
			assert_memory_equal(r.payload, "xyz", 3);
			break;
		case XFDR_MD_CALL_ARGUMENT:
			assert_int_equal(r.arg, 0x1122334455667788ull);
			break;
		case XFDR_MD_END_OF_BUFFER:
			assert_int_equal(r.skipped_bytes, 77);
			break;
		}
	}
	assert_int_equal(xfdr_records_next(&c, &r, &err), 0);
	assert_int_equal(xfdr_records_next(&c, &r, &err), 0);
	close_img(&o);
}

static void test_every_kind_records_le(void **state)
{
	struct img m = {0};

	(void)state;
	every_kind_le(&m);
	check_every_kind_records(&m);
}

static void test_every_kind_records_be(void **state)
{
	struct img m = {0};

	(void)state;
	every_kind_be(&m);
	check_every_kind_records(&m);
}

struct want_ev {
	int type;
	unsigned action;
	uint32_t fid;
	uint64_t tsc;
	uint16_t cpu;
	uint64_t offset;
};

static const struct want_ev every_kind_events[] = {
    {XFDR_EVENT_FUNCTION, XFDR_FN_ENTER, 1, 1010, 2, 80},
    {XFDR_EVENT_FUNCTION, XFDR_FN_EXIT, 1, 1015, 2, 88},
    {XFDR_EVENT_FUNCTION, XFDR_FN_TAIL_EXIT, 0xabcdef, 4294967299ull, 2, 112},
    {XFDR_EVENT_FUNCTION, XFDR_FN_ENTER, 0xfffffff, 4294969295ull, 3, 136},
    {XFDR_EVENT_CUSTOM, 0, 0, 7777, 3, 144},
    {XFDR_EVENT_FUNCTION, XFDR_FN_EXIT, 0xfffffff, 4294969296ull, 3, 163},
    {XFDR_EVENT_FUNCTION, XFDR_FN_ENTER_ARGS, 5, 4294969300ull, 3, 171},
};

/*
 * The events of m in order, read with xfdr_events_next(), or with xfdr_events_next_call()
 * (calls), which promises only what a call needs (ev is poisoned before each, so that those
 * fields are seen filled).
 */
static void check_every_kind_events(const struct img *m, enum xfdr_order order, int calls)
{
	struct opened o = open_img(m);
	struct xfdr_event_iter it;
	struct xfdr_event ev;
	struct xfdr_error err;
	size_t i, n = sizeof(every_kind_events) / sizeof(every_kind_events[0]);

	assert_int_equal(xfdr_events_begin(o.t, order, &it, &err), 0);
	for (i = 0; i < n; i++) {
		const struct want_ev *w = &every_kind_events[i];
		int whole = !calls || w->type != XFDR_EVENT_FUNCTION;

		memset(&ev, 0xa5, sizeof(ev));
		assert_int_equal(calls ? xfdr_events_next_call(&it, &ev, &err)
				       : xfdr_events_next(&it, &ev, &err),
				 1);
		assert_int_equal(ev.type, w->type);
		assert_int_equal(ev.tsc, w->tsc);
		assert_int_equal(ev.offset, w->offset);
		assert_int_equal(ev.buffer_index, 0);
		if (whole) {
			assert_int_equal(ev.cpu, w->cpu);
			assert_int_equal(ev.thread_id, 0x0107);
			assert_int_equal(ev.wall_seconds, 100);
			assert_int_equal(ev.wall_micros, 5);
		}
		if (w->type == XFDR_EVENT_CUSTOM) {
			assert_int_equal(ev.payload_bytes, 3);
			assert_memory_equal(ev.payload, "xyz", 3);
			continue;
		}
		assert_int_equal(ev.action, w->action);
		assert_int_equal(ev.function_id, w->fid);
		if (w->action == XFDR_FN_ENTER_ARGS) {
			assert_int_equal(ev.arg_count, 1);
			assert_int_equal(xfdr_event_arg(o.t, &ev, 0), 0x1122334455667788ull);
		} else {
			assert_int_equal(ev.arg_count, 0);
		}
	}
	assert_int_equal(xfdr_events_next(&it, &ev, &err), 0);
	assert_int_equal(xfdr_events_next(&it, &ev, &err), 0);
	close_img(&o);
}

static void test_every_kind_events(void **state)
{
	struct img le = {0}, be = {0};
	int calls;

	(void)state;
	every_kind_le(&le);
	every_kind_be(&be);
	for (calls = 0; calls < 2; calls++) {
		check_every_kind_events(&le, XFDR_ORDER_FILE, calls);
		check_every_kind_events(&le, XFDR_ORDER_THREAD, calls);
		check_every_kind_events(&be, XFDR_ORDER_FILE, calls);
		check_every_kind_events(&be, XFDR_ORDER_THREAD, calls);
	}
}

static void test_header_fields(void **state)
{
	struct img le = {0}, be = {0};
	struct opened a, b;
	const struct xfdr_header *h;

	(void)state;
	every_kind_le(&le);
	every_kind_be(&be);
	a = open_img(&le);
	b = open_img(&be);
	h = xfdr_trace_header(a.t);
	assert_int_equal(h->version, 1);
	assert_int_equal(h->type, 1);
	assert_int_equal(h->bitfield, 3);
	assert_true(h->constant_tsc && h->nonstop_tsc);
	assert_int_equal(h->cycle_frequency, 2000000000ull);
	assert_int_equal(h->buffer_size, 256);
	assert_int_equal(h->big_endian, 0);
	assert_int_equal(xfdr_trace_buffer_count(a.t), 1);
	assert_string_equal(xfdr_trace_name(a.t), "trace.xray");
	h = xfdr_trace_header(b.t);
	assert_int_equal(h->bitfield, 3);
	assert_int_equal(h->cycle_frequency, 2000000000ull);
	assert_int_equal(h->buffer_size, 256);
	assert_int_equal(h->big_endian, 1);
	close_img(&a);
	close_img(&b);
}

/* A header with only nonstop_tsc (bit 1) and no buffers at all is a valid, empty trace. */
static void test_header_only(void **state)
{
	struct img m = {0};
	struct opened o;
	struct xfdr_event_iter it;
	struct xfdr_event ev;
	struct xfdr_record_cursor c;
	struct xfdr_record r;
	struct xfdr_error err;

	(void)state;
	PUT(&m, 0x01, 0x00, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00, L64(1000), L64(4096), Z8);
	o = open_img(&m);
	assert_int_equal(xfdr_trace_header(o.t)->constant_tsc, 0);
	assert_int_equal(xfdr_trace_header(o.t)->nonstop_tsc, 1);
	assert_int_equal(xfdr_trace_buffer_count(o.t), 0);
	assert_int_equal(xfdr_trace_verify(o.t, &err), 0);
	xfdr_records_begin(o.t, &c);
	assert_int_equal(xfdr_records_next(&c, &r, &err), 0);
	assert_int_equal(xfdr_events_begin(o.t, XFDR_ORDER_THREAD, &it, &err), 0);
	assert_int_equal(xfdr_events_next(&it, &ev, &err), 0);
	close_img(&o);
}

/*
 * Custom payloads of 0, 1, 7, 8 and 40 bytes: each shifts every later record off 8-byte
 * alignment differently, and none of them moves the TSC base (Entry 101, Exit 103).
 *   80 Custom 0 tsc 200   96 Entry 1 +1   104 Custom 1 tsc 300 (payload 120)
 *  121 Custom 7 tsc 400 (137)   144 Custom 8 tsc 500 (160)   168 Custom 40 tsc 600 (184)
 *  224 Exit 1 +2   232 EndOfBuffer, 40 bytes of padding to 288
 */
static void test_custom_payload_sizes(void **state)
{
	static const char p40[] = "0123456789abcdefghijklmnopqrstuvwxyzABCD";
	static const struct {
		uint64_t offset, tsc;
		uint32_t bytes;
		uint64_t payload_off;
		const char *payload;
	} want[] = {
	    {80, 200, 0, 96, ""},	    {104, 300, 1, 120, "a"},  {121, 400, 7, 137, "abcdefg"},
	    {144, 500, 8, 160, "ABCDEFGH"}, {168, 600, 40, 184, p40},
	};
	struct img m = {0};
	struct opened o;
	struct xfdr_event_iter it;
	struct xfdr_event ev;
	struct xfdr_error err;
	size_t i;

	(void)state;
	img_header(&m, 256);
	preamble_le(&m, 1, 0, 0, 0, 100);
	AT(&m, 80);
	PUT(&m, 0x0b, L32(0), L64(200), Z3);
	AT(&m, 96);
	PUT(&m, 0x10, 0x00, 0x00, 0x00, L32(1));
	AT(&m, 104);
	PUT(&m, 0x0b, L32(1), L64(300), Z3, 'a');
	AT(&m, 121);
	PUT(&m, 0x0b, L32(7), L64(400), Z3, 'a', 'b', 'c', 'd', 'e', 'f', 'g');
	AT(&m, 144);
	PUT(&m, 0x0b, L32(8), L64(500), Z3, 'A', 'B', 'C', 'D', 'E', 'F', 'G', 'H');
	AT(&m, 168);
	PUT(&m, 0x0b, L32(40), L64(600), Z3);
	img_put(&m, p40, 40);
	AT(&m, 224);
	PUT(&m, 0x12, 0x00, 0x00, 0x00, L32(2));
	PUT(&m, 0x03, Z15);
	AT(&m, 248);
	img_pad_to(&m, 288, 0);

	o = open_img(&m);
	assert_int_equal(xfdr_events_begin(o.t, XFDR_ORDER_FILE, &it, &err), 0);
	for (i = 0; i < 5; i++) {
		assert_int_equal(xfdr_events_next(&it, &ev, &err), 1);
		if (i == 1) {
			assert_int_equal(ev.type, XFDR_EVENT_FUNCTION);
			assert_int_equal(ev.offset, 96);
			assert_int_equal(ev.tsc, 101);
			assert_int_equal(xfdr_events_next(&it, &ev, &err), 1);
		}
		assert_int_equal(ev.type, XFDR_EVENT_CUSTOM);
		assert_int_equal(ev.offset, want[i].offset);
		assert_int_equal(ev.tsc, want[i].tsc);
		assert_int_equal(ev.payload_bytes, want[i].bytes);
		assert_ptr_equal(ev.payload, o.copy + want[i].payload_off);
		assert_memory_equal(ev.payload, want[i].payload, want[i].bytes);
	}
	assert_int_equal(xfdr_events_next(&it, &ev, &err), 1);
	assert_int_equal(ev.type, XFDR_EVENT_FUNCTION);
	assert_int_equal(ev.action, XFDR_FN_EXIT);
	assert_int_equal(ev.offset, 224);
	assert_int_equal(ev.tsc, 103);
	assert_int_equal(xfdr_events_next(&it, &ev, &err), 0);
	close_img(&o);
}

/*
 * Entry_Args with 0, 1, 2 and 3 CallArguments (fid 10..13, each +1 from tsc 0).
 *   80 EA 10   88 EA 11, 96 arg 7   112 EA 12, 120 arg 8, 136 arg 9
 *  152 EA 13, 160 arg ~0, 176 arg 0, 192 arg 0x8000000000000001   208 Exit 13   216 EOB
 */
static void test_entry_args(void **state)
{
	static const uint64_t args13[] = {0xffffffffffffffffull, 0, 0x8000000000000001ull};
	struct img m = {0};
	struct opened o;
	struct xfdr_event_iter it;
	struct xfdr_event ev;
	struct xfdr_error err;

	(void)state;
	img_header(&m, 256);
	preamble_le(&m, 9, 0, 0, 1, 0);
	PUT(&m, 0xa6, 0x00, 0x00, 0x00, L32(1));
	PUT(&m, 0xb6, 0x00, 0x00, 0x00, L32(1));
	PUT(&m, 0x0d, L64(7), Z7);
	AT(&m, 112);
	PUT(&m, 0xc6, 0x00, 0x00, 0x00, L32(1));
	PUT(&m, 0x0d, L64(8), Z7);
	PUT(&m, 0x0d, L64(9), Z7);
	AT(&m, 152);
	PUT(&m, 0xd6, 0x00, 0x00, 0x00, L32(1));
	PUT(&m, 0x0d, L64(0xffffffffffffffffull), Z7);
	PUT(&m, 0x0d, L64(0), Z7);
	PUT(&m, 0x0d, L64(0x8000000000000001ull), Z7);
	AT(&m, 208);
	PUT(&m, 0xd2, 0x00, 0x00, 0x00, L32(1));
	PUT(&m, 0x03, Z15);
	img_pad_to(&m, 288, 0);

	o = open_img(&m);
	assert_int_equal(xfdr_events_begin(o.t, XFDR_ORDER_FILE, &it, &err), 0);
	for (uint32_t k = 0; k < 4; k++) {
		assert_int_equal(xfdr_events_next(&it, &ev, &err), 1);
		assert_int_equal(ev.action, XFDR_FN_ENTER_ARGS);
		assert_int_equal(ev.function_id, 10 + k);
		assert_int_equal(ev.tsc, 1 + k);
		assert_int_equal(ev.cpu, 1);
		assert_int_equal(ev.thread_id, 9);
		assert_int_equal(ev.arg_count, k);
		if (k == 1)
			assert_int_equal(xfdr_event_arg(o.t, &ev, 0), 7);
		if (k == 2) {
			assert_int_equal(xfdr_event_arg(o.t, &ev, 0), 8);
			assert_int_equal(xfdr_event_arg(o.t, &ev, 1), 9);
		}
		if (k == 3)
			for (uint32_t i = 0; i < 3; i++)
				assert_int_equal(xfdr_event_arg(o.t, &ev, i), args13[i]);
		/* Asking past the count gives 0 and reads nothing. */
		assert_int_equal(xfdr_event_arg(o.t, &ev, k), 0);
	}
	assert_int_equal(xfdr_events_next(&it, &ev, &err), 1);
	assert_int_equal(ev.action, XFDR_FN_EXIT);
	assert_int_equal(ev.offset, 208);
	assert_int_equal(ev.tsc, 5);
	assert_int_equal(xfdr_events_next(&it, &ev, &err), 0);
	close_img(&o);
}

/*
 * 72-byte buffers that end exactly without EndOfBuffer, and one that does have it.
 *  buffer 0 (32):  preamble tid 1 (10 s 0 us) cpu 0 tsc 50; 80 Entry_Args 3 +5 -> 55;
 *                  88 CallArgument 42, ending exactly at 104
 *  buffer 1 (104): preamble (10 s 1 us) cpu 1 tsc 60; 152 Exit 3 +2 -> 62; 160 EOB (no padding)
 *  buffer 2 (176): preamble (10 s 2 us) cpu 0 tsc 70; 224 Entry 4 +0 -> 70; 232 Exit 4 +1
 *                  -> 71; 240 Entry 5 +1 -> 72, ending exactly at 248
 */
static void test_exactly_full_buffers(void **state)
{
	static const struct {
		unsigned action;
		uint32_t fid;
		uint64_t tsc, offset, buffer;
		uint16_t cpu;
		uint32_t micros;
	} want[] = {
	    {XFDR_FN_ENTER_ARGS, 3, 55, 80, 0, 0, 0}, {XFDR_FN_EXIT, 3, 62, 152, 1, 1, 1},
	    {XFDR_FN_ENTER, 4, 70, 224, 2, 0, 2},     {XFDR_FN_EXIT, 4, 71, 232, 2, 0, 2},
	    {XFDR_FN_ENTER, 5, 72, 240, 2, 0, 2},
	};
	struct img m = {0};
	struct opened o;
	struct xfdr_event_iter it;
	struct xfdr_event ev;
	struct xfdr_record_cursor c;
	struct xfdr_record r;
	struct xfdr_error err;
	size_t i;
	int n;

	(void)state;
	img_header(&m, 72);
	preamble_le(&m, 1, 10, 0, 0, 50);
	PUT(&m, 0x36, 0x00, 0x00, 0x00, L32(5));
	PUT(&m, 0x0d, L64(42), Z7);
	AT(&m, 104);
	preamble_le(&m, 1, 10, 1, 1, 60);
	PUT(&m, 0x32, 0x00, 0x00, 0x00, L32(2));
	PUT(&m, 0x03, Z15);
	AT(&m, 176);
	preamble_le(&m, 1, 10, 2, 0, 70);
	PUT(&m, 0x40, 0x00, 0x00, 0x00, L32(0));
	PUT(&m, 0x42, 0x00, 0x00, 0x00, L32(1));
	PUT(&m, 0x50, 0x00, 0x00, 0x00, L32(1));
	AT(&m, 248);

	o = open_img(&m);
	assert_int_equal(xfdr_trace_buffer_count(o.t), 3);
	xfdr_records_begin(o.t, &c);
	for (n = 0; xfdr_records_next(&c, &r, &err) == 1; n++) {
		if (r.is_metadata && r.kind == XFDR_MD_END_OF_BUFFER) {
			assert_int_equal(r.offset, 160);
			assert_int_equal(r.skipped_bytes, 0);
		}
		/* A buffer's preamble has no CPU yet: nothing carries over from the last one. */
		if (r.is_metadata &&
		    (r.kind == XFDR_MD_NEW_BUFFER || r.kind == XFDR_MD_WALL_CLOCK_TIME))
			assert_int_equal(r.cpu, 0);
	}
	assert_int_equal(n, 3 + 2 + 3 + 2 + 3 + 3);

	for (int order = XFDR_ORDER_FILE; order <= XFDR_ORDER_THREAD; order++) {
		assert_int_equal(xfdr_events_begin(o.t, order, &it, &err), 0);
		for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
			assert_int_equal(xfdr_events_next(&it, &ev, &err), 1);
			assert_int_equal(ev.action, want[i].action);
			assert_int_equal(ev.function_id, want[i].fid);
			assert_int_equal(ev.tsc, want[i].tsc);
			assert_int_equal(ev.offset, want[i].offset);
			assert_int_equal(ev.buffer_index, want[i].buffer);
			assert_int_equal(ev.cpu, want[i].cpu);
			assert_int_equal(ev.wall_seconds, 10);
			assert_int_equal(ev.wall_micros, want[i].micros);
			assert_int_equal(ev.arg_count, i == 0 ? 1 : 0);
		}
		assert_int_equal(xfdr_events_next(&it, &ev, &err), 0);
	}
	assert_int_equal(
	    xfdr_event_arg(o.t, &(struct xfdr_event){.arg_count = 1, .args = o.copy + 88}, 0), 42);
	close_img(&o);
}

/*
 * The last buffer of the file ends exactly on a CallArgument. The bytes after the image
 * (outside the length given to the reader) hold another CallArgument, which must not count.
 */
static void test_args_at_file_end(void **state)
{
	struct img m = {0};
	struct xfdr_trace *t;
	struct xfdr_event_iter it;
	struct xfdr_event ev;
	struct xfdr_error err;

	(void)state;
	img_header(&m, 72);
	preamble_le(&m, 1, 0, 0, 0, 0);
	PUT(&m, 0x16, 0x00, 0x00, 0x00, L32(1));
	PUT(&m, 0x0d, L64(11), Z7);
	AT(&m, 104);
	PUT(&m, 0x0d, L64(12), Z7);
	assert_int_equal(xfdr_trace_open_memory(m.b, 104, "trace.xray", &t, &err), 0);
	assert_int_equal(xfdr_events_begin(t, XFDR_ORDER_FILE, &it, &err), 0);
	assert_int_equal(xfdr_events_next(&it, &ev, &err), 1);
	assert_int_equal(ev.action, XFDR_FN_ENTER_ARGS);
	assert_int_equal(ev.arg_count, 1);
	assert_int_equal(xfdr_event_arg(t, &ev, 0), 11);
	assert_int_equal(xfdr_events_next(&it, &ev, &err), 0);
	xfdr_trace_close(t);
}

/* The smallest buffer: 48 bytes, the preamble alone, exactly full. */
static void test_preamble_only_buffer(void **state)
{
	static const unsigned kinds[] = {XFDR_MD_NEW_BUFFER, XFDR_MD_WALL_CLOCK_TIME,
					 XFDR_MD_NEW_CPU_ID};
	struct img m = {0};
	struct opened o;
	struct xfdr_record_cursor c;
	struct xfdr_record r;
	struct xfdr_event_iter it;
	struct xfdr_event ev;
	struct xfdr_error err;

	(void)state;
	img_header(&m, 48);
	preamble_le(&m, 4, 1, 2, 3, 4);
	preamble_le(&m, 4, 1, 3, 3, 5);
	o = open_img(&m);
	assert_int_equal(xfdr_trace_buffer_count(o.t), 2);
	xfdr_records_begin(o.t, &c);
	for (int i = 0; i < 6; i++) {
		assert_int_equal(xfdr_records_next(&c, &r, &err), 1);
		assert_int_equal(r.offset, 32 + 16 * i);
		assert_int_equal(r.buffer_index, i / 3);
		assert_int_equal(r.kind, kinds[i % 3]);
	}
	assert_int_equal(xfdr_records_next(&c, &r, &err), 0);
	assert_int_equal(xfdr_events_begin(o.t, XFDR_ORDER_THREAD, &it, &err), 0);
	assert_int_equal(xfdr_events_next(&it, &ev, &err), 0);
	close_img(&o);
}

/*
 * Six 72-byte buffers (preamble, one Entry, EndOfBuffer), out of WallClockTime order:
 *   b0 (32)  tid 5 (2 s 100 us) fid 100     b1 (104) tid 5 (1 s 900 us) fid 101
 *   b2 (176) tid 3 (5 s 0 us)   fid 102     b3 (248) tid 5 (1 s 50 us)  fid 103
 *   b4 (320) tid 5 (1 s 900 us) fid 104     b5 (392) tid 256 (0 s 0 us) fid 105
 * Thread order: tid 3 {102}, tid 5 {103, 101, 104, 100}, tid 256 {105}. b1 and b4 tie on the
 * wall clock and keep file order; b1 before b0 is what llvm-xray's comparator can get wrong.
 * NewCPUId of buffer i: cpu i, tsc 1000 * i; each Entry is +1.
 */
static void test_thread_order(void **state)
{
	static const struct {
		uint16_t tid;
		uint64_t sec;
		uint32_t usec;
		uint8_t fid_lo; /* fid << 4, low byte; fid >> 4 is 6 for all of them */
	} bufs[] = {
	    {5, 2, 100, 0x40}, {5, 1, 900, 0x50}, {3, 5, 0, 0x60},
	    {5, 1, 50, 0x70},  {5, 1, 900, 0x80}, {256, 0, 0, 0x90},
	};
	static const uint32_t file_fids[] = {100, 101, 102, 103, 104, 105};
	static const uint32_t thread_fids[] = {102, 103, 101, 104, 100, 105};
	static const uint64_t thread_bufs[] = {2, 3, 1, 4, 0, 5};
	struct img m = {0};
	struct opened o;
	struct xfdr_event_iter it;
	struct xfdr_event ev;
	struct xfdr_error err;
	uint64_t b;
	size_t i;

	(void)state;
	img_header(&m, 72);
	for (i = 0; i < 6; i++) {
		AT(&m, 32 + 72 * i);
		preamble_le(&m, bufs[i].tid, bufs[i].sec, bufs[i].usec, (uint16_t)i, 1000 * i);
		PUT(&m, bufs[i].fid_lo, 0x06, 0x00, 0x00, L32(1));
		PUT(&m, 0x03, Z15);
	}
	o = open_img(&m);

	assert_int_equal(xfdr_events_begin(o.t, XFDR_ORDER_FILE, &it, &err), 0);
	for (i = 0; i < 6; i++) {
		assert_int_equal(xfdr_events_next(&it, &ev, &err), 1);
		assert_int_equal(ev.function_id, file_fids[i]);
		assert_int_equal(ev.buffer_index, i);
	}
	assert_int_equal(xfdr_events_next(&it, &ev, &err), 0);

	assert_int_equal(xfdr_events_begin(o.t, XFDR_ORDER_THREAD, &it, &err), 0);
	for (i = 0; i < 6; i++) {
		assert_int_equal(xfdr_events_next(&it, &ev, &err), 1);
		b = thread_bufs[i];
		assert_int_equal(ev.function_id, thread_fids[i]);
		assert_int_equal(ev.buffer_index, b);
		assert_int_equal(ev.offset, 32 + 72 * b + 48);
		assert_int_equal(ev.thread_id, bufs[b].tid);
		assert_int_equal(ev.wall_seconds, bufs[b].sec);
		assert_int_equal(ev.wall_micros, bufs[b].usec);
		assert_int_equal(ev.cpu, b);
		assert_int_equal(ev.tsc, 1000 * b + 1);
	}
	assert_int_equal(xfdr_events_next(&it, &ev, &err), 0);

	/* Thread 1 (tid 5) from its buffer 2 (b4) on: b4, b0; its buffer 2 alone: b4. */
	assert_int_equal(xfdr_events_begin_thread_at(o.t, 1, 2, &it, &err), 0);
	assert_int_equal(xfdr_events_next(&it, &ev, &err), 1);
	assert_int_equal(ev.function_id, 104);
	assert_int_equal(xfdr_events_next(&it, &ev, &err), 1);
	assert_int_equal(ev.function_id, 100);
	assert_int_equal(xfdr_events_next(&it, &ev, &err), 0);
	assert_int_equal(xfdr_events_begin_thread_buffer(o.t, 1, 2, &it, &err), 0);
	assert_int_equal(xfdr_events_next(&it, &ev, &err), 1);
	assert_int_equal(ev.function_id, 104);
	assert_int_equal(ev.buffer_index, 4);
	assert_int_equal(xfdr_events_next(&it, &ev, &err), 0);
	assert_int_equal(xfdr_events_begin_thread_buffer(o.t, 1, 4, &it, &err), -1);
	assert_non_null(strstr(err.text, "expected a buffer number below 4, found 4"));
	close_img(&o);
}

static char *write_temp(const struct img *m)
{
	static char path[64];
	int fd;

	snprintf(path, sizeof(path), "/tmp/xfdr_test_reader_XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, m->b, m->len), (ssize_t)m->len);
	close(fd);
	return path;
}

static void test_open_file(void **state)
{
	struct img m = {0};
	struct xfdr_trace *t;
	struct xfdr_event_iter it;
	struct xfdr_event ev;
	struct xfdr_error err;
	char *path;
	char want[128];
	int n = 0;

	(void)state;
	every_kind_le(&m);
	path = write_temp(&m);
	assert_int_equal(xfdr_trace_open(path, &t, &err), 0);
	assert_string_equal(xfdr_trace_name(t), path);
	assert_int_equal(xfdr_trace_buffer_count(t), 1);
	assert_int_equal(xfdr_events_begin(t, XFDR_ORDER_THREAD, &it, &err), 0);
	while (xfdr_events_next(&it, &ev, &err) == 1) {
		assert_int_equal(ev.tsc, every_kind_events[n].tsc);
		n++;
	}
	assert_int_equal(n, 7);
	xfdr_trace_close(t);
	unlink(path);

	/* An empty file, a missing one and a directory get one line each, not a crash. */
	m.len = 0;
	path = write_temp(&m);
	assert_int_equal(xfdr_trace_open(path, &t, &err), -1);
	assert_null(t);
	snprintf(want, sizeof(want),
		 "%s: offset 0: expected a 32-byte file header, found an "
		 "empty file",
		 path);
	assert_string_equal(err.text, want);
	unlink(path);
	assert_int_equal(xfdr_trace_open(path, &t, &err), -1);
	snprintf(want, sizeof(want),
		 "%s: offset 0: expected a readable file, found No such file "
		 "or directory",
		 path);
	assert_string_equal(err.text, want);
	assert_int_equal(err.offset, 0);
	assert_int_equal(xfdr_trace_open("/tmp", &t, &err), -1);
	assert_string_equal(err.text, "/tmp: offset 0: expected a regular file, found a directory");
	xfdr_trace_close(NULL);
}

static void test_names(void **state)
{
	static const char *const md[] = {"NewBuffer",	"EndOfBuffer",	 "NewCPUId",
					 "TSCWrap",	"WallClockTime", "CustomEventMarker",
					 "CallArgument"};
	static const char *const fn[] = {"Entry", "Exit", "Tail_Exit", "Entry_Args"};
	unsigned i;

	(void)state;
	for (i = 0; i < 7; i++)
		assert_string_equal(xfdr_md_kind_name(i), md[i]);
	for (i = 0; i < 4; i++)
		assert_string_equal(xfdr_fn_action_name(i), fn[i]);
	/* Kinds 7-9 belong to versions 2+ (compiler-rt's writer), 10 to none. */
	assert_string_equal(xfdr_md_kind_name(7), "BufferExtents");
	assert_string_equal(xfdr_md_kind_name(8), "TypedEventMarker");
	assert_string_equal(xfdr_md_kind_name(9), "Pid");
	assert_string_equal(xfdr_md_kind_name(10), "unknown");
	assert_string_equal(xfdr_md_kind_name(~0u), "unknown");
	assert_string_equal(xfdr_fn_action_name(4), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_kind_records_le),
	    cmocka_unit_test(test_every_kind_records_be),
	    cmocka_unit_test(test_every_kind_events),
	    cmocka_unit_test(test_header_fields),
	    cmocka_unit_test(test_header_only),
	    cmocka_unit_test(test_custom_payload_sizes),
	    cmocka_unit_test(test_entry_args),
	    cmocka_unit_test(test_exactly_full_buffers),
	    cmocka_unit_test(test_args_at_file_end),
	    cmocka_unit_test(test_preamble_only_buffer),
	    cmocka_unit_test(test_thread_order),
	    cmocka_unit_test(test_open_file),
	    cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
