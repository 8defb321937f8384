/*
 * xfdr_trace_verify() on files large enough to be walked by several threads at once, each a
 * range of whole buffers (reader/index.c): the outcome must be one walk's from the start. A
 * valid file verifies and gives every event; with violations in two ranges, the message is
 * the first one's, and with one in a later range, that one's. Version 1 (buffers every
 * buffer_size bytes) and version 3 (buffers of varying length along the BufferExtents
 * chain). Images in memory, built by hand: 96 MiB, three ranges' worth.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/support/version_enc.h"
#include "xfdr/format.h"
#include "xfdr/reader.h"

#define IMAGE_BYTES (96u << 20)
#define V1_BUFFER (1u << 20)

static void put_le(uint8_t *p, uint64_t v, int bytes)
{
	int i;

	for (i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* A version 1 buffer at p: preamble, `calls` Entry/Exit pairs of function 1, EndOfBuffer. */
static void v1_buffer(uint8_t *p, uint16_t tid, uint32_t calls)
{
	uint8_t *q = p;
	uint32_t i;

	memset(p, 0, V1_BUFFER);
	q[0] = 0x01; /* NewBuffer */
	put_le(q + 1, tid, 2);
	q += 16;
	q[0] = 0x09; /* WallClockTime */
	q += 16;
	q[0] = 0x05; /* NewCPUId, tsc 100 */
	put_le(q + 3, 100, 8);
	q += 16;
	for (i = 0; i < calls; i++, q += 16) {
		put_le(q, 1u << 4, 4); /* Entry of function 1 */
		put_le(q + 4, 1, 4);
		put_le(q + 8, 1u << 4 | 1u << 1, 4); /* Exit of function 1 */
		put_le(q + 12, 1, 4);
	}
	q[0] = 0x03; /* EndOfBuffer */
}

/* A version 1 image of 96 MiB: 1 MiB buffers of threads 1 and 2 in turn. */
static uint8_t *v1_image(size_t *len)
{
	size_t n = (IMAGE_BYTES - XFDR_FILE_HEADER_BYTES) / V1_BUFFER, i;
	uint8_t *b;

	*len = XFDR_FILE_HEADER_BYTES + n * V1_BUFFER;
	b = calloc(1, *len);
	assert_non_null(b);
	put_le(b + XFDR_HDR_VERSION_OFF, 1, 2);
	put_le(b + XFDR_HDR_TYPE_OFF, 1, 2);
	put_le(b + XFDR_HDR_BITFIELD_OFF, 3, 4);
	put_le(b + XFDR_HDR_CYCLE_FREQUENCY_OFF, 1000000000, 8);
	put_le(b + XFDR_HDR_BUFFER_SIZE_OFF, V1_BUFFER, 8);
	for (i = 0; i < n; i++)
		v1_buffer(b + XFDR_FILE_HEADER_BYTES + i * V1_BUFFER, (uint16_t)(1 + i % 2), 100);
	return b;
}

static uint64_t count_events(struct xfdr_trace *t)
{
	struct xfdr_event_iter it;
	struct xfdr_event ev;
	struct xfdr_error err;
	uint64_t n = 0;
	int rc;

	assert_int_equal(xfdr_events_begin(t, XFDR_ORDER_THREAD, &it, &err), 0);
	while ((rc = xfdr_events_next(&it, &ev, &err)) == 1)
		n++;
	assert_int_equal(rc, 0);
	return n;
}

/* Verify the image; returns 0, or -1 with err filled. */
static int verify(const uint8_t *b, size_t len, struct xfdr_error *err, uint64_t *events)
{
	struct xfdr_trace *t;
	int rc;

	if (xfdr_trace_open_memory(b, len, "big.xray", &t, err))
		fail_msg("open: %s", err->text);
	rc = xfdr_trace_verify(t, err);
	if (!rc && events)
		*events = count_events(t);
	xfdr_trace_close(t);
	return rc;
}

static void test_v1_valid_and_violations(void **state)
{
	size_t len, n, early, late;
	uint8_t *b = v1_image(&len);
	struct xfdr_error err;
	uint64_t events;
	char want[160];

	(void)state;
	n = (len - XFDR_FILE_HEADER_BYTES) / V1_BUFFER;
	assert_int_equal(verify(b, len, &err, &events), 0);
	assert_int_equal(events, (uint64_t)n * 200);

	/* A metadata record of kind 15 in the body of a buffer near the end. */
	late = XFDR_FILE_HEADER_BYTES + (n - 3) * V1_BUFFER + 48 + 16 * 40;
	b[late] = 0x1f;
	assert_int_equal(verify(b, len, &err, NULL), -1);
	snprintf(want, sizeof(want),
		 "big.xray: offset %zu: expected a metadata record kind 0-6 (NewBuffer .. "
		 "CallArgument), found kind 15",
		 late);
	assert_string_equal(err.text, want);
	assert_int_equal(err.offset, late);

	/* And one near the start: that one is the file's first. */
	early = XFDR_FILE_HEADER_BYTES + 2 * V1_BUFFER + 48 + 16 * 7;
	b[early] = 0x1f;
	assert_int_equal(verify(b, len, &err, NULL), -1);
	snprintf(want, sizeof(want),
		 "big.xray: offset %zu: expected a metadata record kind 0-6 (NewBuffer .. "
		 "CallArgument), found kind 15",
		 early);
	assert_string_equal(err.text, want);
	free(b);
}

/*
 * Version 3: buffers of three lengths in turn (BufferExtents counts them), so the ranges are
 * cut along the chain, not at a fixed size.
 */
static void test_v3_chain(void **state)
{
	static const uint32_t calls[] = {3, 1000, 40000};
	struct enc e;
	uint8_t *b, *buf[3];
	size_t len[3], pre[3], total = 0, at = 0, k, i, second_half = 0, bad;
	uint64_t events = 0, got;
	struct xfdr_error err;
	char want[200];

	(void)state;
	/* The header, then each kind of buffer encoded once, to be copied. */
	b = malloc(IMAGE_BYTES + (1u << 20));
	assert_non_null(b);
	e = (struct enc){0};
	e_header(&e, 3, 0);
	memcpy(b, e.b, e.len);
	at = total = e.len;
	for (k = 0; k < 3; k++) {
		size_t ext;
		uint8_t *p;

		e.len = 0;
		ext = e_buffer(&e, 7 + (uint32_t)k, 4242, 5, (uint32_t)k, 1, 1000);
		len[k] = pre[k] = e.len;
		/* e's image is 8 KiB: the records go straight into the copy */
		p = buf[k] = malloc(e.len + (size_t)calls[k] * 16);
		assert_non_null(p);
		memcpy(p, e.b, e.len);
		for (i = 0; i < calls[k]; i++) {
			e.len = 0;
			e_fn(&e, XFDR_FN_ENTER, 1, 1);
			e_fn(&e, XFDR_FN_EXIT, 1, 1);
			memcpy(p + len[k], e.b, 16);
			len[k] += 16;
		}
		/* the BufferExtents count: the bytes after the record (e_extents_end()'s) */
		put_le(p + ext + 1, len[k] - ext - 16, 8);
	}
	for (k = 0; total + len[k % 3] <= IMAGE_BYTES; k++) {
		memcpy(b + at, buf[k % 3], len[k % 3]);
		if (!second_half && at > IMAGE_BYTES / 2 && k % 3 == 2)
			second_half = at;
		at += len[k % 3];
		total = at;
		events += 2 * (uint64_t)calls[k % 3];
	}
	assert_int_equal(verify(b, total, &err, &got), 0);
	assert_int_equal(got, events);

	/* An unknown action in the 124th call's Entry of a long buffer past the middle. */
	bad = second_half + pre[2] + 16 * 123;
	b[bad] |= 7u << 1;
	assert_int_equal(verify(b, total, &err, NULL), -1);
	snprintf(want, sizeof(want),
		 "big.xray: offset %zu: expected a function record action 0-3 (Entry, Exit, "
		 "Tail_Exit, Entry_Args), found action 7",
		 bad);
	assert_string_equal(err.text, want);
	for (k = 0; k < 3; k++)
		free(buf[k]);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_v1_valid_and_violations),
	    cmocka_unit_test(test_v3_chain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
