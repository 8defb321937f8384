/*
 * tests/support/trace_build.c - FDR traces built record by record (trace_build.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/support/scratch.h"
#include "tests/support/trace_build.h"
#include "writer/encode.h"
#include "writer/file.h"
#include "writer/payload.h"

void tb_init(struct tb *b, size_t buf_bytes, uint64_t hz)
{
	struct wr_file_header h = {.cycle_frequency_hz = hz,
				   .buffer_bytes = buf_bytes,
				   .constant_tsc = 1,
				   .nonstop_tsc = 1};

	memset(b, 0, sizeof(*b));
	b->buf_bytes = buf_bytes;
	b->data = malloc(XFDR_FILE_HEADER_BYTES);
	assert_non_null(b->data);
	assert_int_equal(wr_encode_file_header(b->data, &h), XFDR_FILE_HEADER_BYTES);
	b->len = XFDR_FILE_HEADER_BYTES;
}

static void tb_end(struct tb *b)
{
	if (!b->open)
		return;
	assert_int_equal(wr_close_buffer(b->data + b->cur, b->used, b->buf_bytes), 0);
	b->open = 0;
}

static uint8_t *tb_room(struct tb *b, size_t n)
{
	uint8_t *p;

	assert_true(b->open);
	assert_true(wr_fits(b->buf_bytes - b->used, n));
	p = b->data + b->cur + b->used;
	b->used += n;
	return p;
}

/* A new buffer of thread tid, WallClockTime (1, usec), on CPU 0 at tsc. */
void tb_buffer(struct tb *b, uint16_t tid, uint32_t usec, uint64_t tsc)
{
	tb_end(b);
	b->data = realloc(b->data, b->len + b->buf_bytes);
	assert_non_null(b->data);
	memset(b->data + b->len, 0, b->buf_bytes);
	b->cur = b->len;
	b->len += b->buf_bytes;
	b->used = 0;
	b->open = 1;
	wr_new_buffer(tb_room(b, XFDR_MD_RECORD_BYTES), tid);
	wr_wall_clock_time(tb_room(b, XFDR_MD_RECORD_BYTES), 1, usec);
	wr_new_cpu_id(tb_room(b, XFDR_MD_RECORD_BYTES), 0, tsc);
}

void tb_fn(struct tb *b, unsigned action, uint32_t fid, uint32_t delta)
{
	wr_function(tb_room(b, XFDR_FN_RECORD_BYTES), action, fid, delta);
}

void tb_arg(struct tb *b, uint64_t v)
{
	wr_call_argument(tb_room(b, XFDR_MD_RECORD_BYTES), v);
}

void tb_wrap(struct tb *b, uint64_t tsc)
{
	wr_tsc_wrap(tb_room(b, XFDR_MD_RECORD_BYTES), tsc);
}

void tb_custom(struct tb *b, const void *p, uint32_t n, uint64_t tsc)
{
	uint8_t *d = tb_room(b, XFDR_MD_RECORD_BYTES + n);

	wr_custom_event_marker(d, n, tsc);
	memcpy(d + XFDR_MD_RECORD_BYTES, p, n);
}

/* An XFDRSTAK context of depth calls, the first id_count of them named by ids. */
void tb_context(struct tb *b, uint32_t depth, const uint32_t *ids, uint32_t id_count, uint64_t tsc)
{
	uint8_t p[XFDR_STACK_PAYLOAD_BYTES(8)];
	size_t n;

	assert_true(id_count <= 8);
	n = wr_stack_context(p, depth, ids, id_count);
	tb_custom(b, p, (uint32_t)n, tsc);
}

const char *tb_timeline_trace(const char *name)
{
	const uint64_t t0 = TB_TIMELINE_T0;
	struct tb b;

	tb_init(&b, 256, 2500000000ull);
	tb_buffer(&b, 7, 1, t0);
	tb_fn(&b, ENTER, 1, 0);
	tb_fn(&b, ARGS, 2, 2500);
	tb_arg(&b, 5);
	tb_arg(&b, 1ull << 60);
	tb_fn(&b, EXIT, 2, 1);
	tb_custom(&b, "hi", 2, t0 + 3752);
	tb_fn(&b, ENTER, 3, 2499);
	tb_fn(&b, TAIL, 3, 1);
	tb_wrap(&b, t0 + 25000000000ull);
	tb_fn(&b, EXIT, 1, 0);
	tb_buffer(&b, 9, 2, t0 + 1250);
	tb_fn(&b, ENTER, 4, 0);
	tb_fn(&b, EXIT, 4, 1);
	return tb_write(&b, name);
}

const char *tb_unbalanced_trace(const char *name)
{
	struct tb b;

	tb_init(&b, 256, 1000000000ull);
	tb_buffer(&b, 1, 1, 1000);
	tb_fn(&b, EXIT, 5, 0);
	tb_fn(&b, ENTER, 6, 1000);
	tb_fn(&b, EXIT, 7, 1000);
	tb_fn(&b, ENTER, 8, 1000);
	tb_custom(&b, "tail", 4, 5000);
	tb_buffer(&b, 2, 2, 10000);
	tb_fn(&b, ENTER, 9, 0);
	tb_wrap(&b, 9000);
	tb_fn(&b, EXIT, 9, 0);
	return tb_write(&b, name);
}

const char *tb_write(struct tb *b, const char *name)
{
	const char *path;

	tb_end(b);
	path = scratch_write(name, b->data, b->len);
	free(b->data);
	b->data = NULL;
	return path;
}
