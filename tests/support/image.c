/*
 * tests/support/image.c - hand-built trace images (see image.h). Literal bytes only.
 *
 * Little-endian metadata record: byte 0 = kind << 1 | 1 (NewBuffer 01, EndOfBuffer 03,
 * WallClockTime 09), then 15 data bytes: NewBuffer u16 tid + 13 reserved; WallClockTime
 * u64 seconds, u32 microseconds + 3 reserved; EndOfBuffer 15 reserved.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tests/support/image.h"

void img_put(struct img *m, const void *p, size_t n)
{
	assert_true(m->len + n <= sizeof(m->b));
	memcpy(m->b + m->len, p, n);
	m->len += n;
}

void img_pad_to(struct img *m, size_t end, uint8_t fill)
{
	assert_true(end <= sizeof(m->b) && end >= m->len);
	memset(m->b + m->len, fill, end - m->len);
	m->len = end;
}

void img_header(struct img *m, uint64_t buf_bytes)
{
	PUT(m, L16(1), L16(1), L32(3), L64(2000000000ull), L64(buf_bytes), Z8);
	m->buf_bytes = buf_bytes;
}

void img_init(struct img *m, uint64_t buf_bytes)
{
	memset(m, 0, sizeof(*m));
	img_header(m, buf_bytes);
}

void img_buffer(struct img *m, uint16_t tid, uint64_t sec, uint32_t usec)
{
	assert_true(m->buf_bytes >= 32 && m->len + m->buf_bytes <= sizeof(m->b));
	m->buf_start = m->len;
	PUT(m, 0x01, L16(tid), Z13);
	PUT(m, 0x09, L64(sec), L32(usec), Z3);
}

uint8_t *img_at(struct img *m)
{
	return m->b + m->len;
}

void img_close(struct img *m)
{
	size_t used = m->len - m->buf_start;

	assert_true(used <= m->buf_bytes);
	if (used == m->buf_bytes)
		return;
	assert_true(m->buf_bytes - used >= 16);
	PUT(m, 0x03, Z15);
	img_pad_to(m, m->buf_start + m->buf_bytes, 0);
}

uint64_t img_le64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}
