/*
 * Hand-built trace images for the reader tests: bytes written literally, field by field,
 * from the spec's tables (never through writer/), so the reader is checked against an
 * independent encoding. Header-only; include from one test file per binary.
 */
#ifndef XFDR_TEST_IMAGE_H
#define XFDR_TEST_IMAGE_H

#include <stdint.h>
#include <string.h>

/* Split an integer into its bytes, least or most significant first. */
#define BYTE(v, i) (uint8_t)((uint64_t)(v) >> (8 * (i)))
#define L16(v) BYTE(v, 0), BYTE(v, 1)
#define L32(v) BYTE(v, 0), BYTE(v, 1), BYTE(v, 2), BYTE(v, 3)
#define L64(v) L32(v), BYTE(v, 4), BYTE(v, 5), BYTE(v, 6), BYTE(v, 7)
#define B16(v) BYTE(v, 1), BYTE(v, 0)
#define B32(v) BYTE(v, 3), BYTE(v, 2), BYTE(v, 1), BYTE(v, 0)
#define B64(v) BYTE(v, 7), BYTE(v, 6), BYTE(v, 5), BYTE(v, 4), B32(v)
#define Z3 0, 0, 0
#define Z5 0, 0, 0, 0, 0
#define Z7 0, 0, 0, 0, 0, 0, 0
#define Z8 0, 0, 0, 0, 0, 0, 0, 0
#define Z13 Z5, Z8
#define Z15 Z7, Z8

struct img {
	uint8_t b[8192];
	size_t len;
};

static void put(struct img *m, const void *p, size_t n)
{
	assert_true(m->len + n <= sizeof(m->b));
	memcpy(m->b + m->len, p, n);
	m->len += n;
}

#define PUT(m, ...)                                                                                \
	do {                                                                                       \
		const uint8_t b_[] = {__VA_ARGS__};                                                \
		put((m), b_, sizeof(b_));                                                          \
	} while (0)
#define AT(m, off) assert_int_equal((m)->len, (off))

/* Fill up to `end` with a byte the reader must never look at (0xff would be kind 127). */
static void pad_to(struct img *m, size_t end, uint8_t fill)
{
	assert_true(end <= sizeof(m->b) && end >= m->len);
	memset(m->b + m->len, fill, end - m->len);
	m->len = end;
}

#endif /* XFDR_TEST_IMAGE_H */
