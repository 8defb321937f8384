/*
 * tests/support/image.h - trace images built by hand in memory, the tests' one image builder.
 *
 * Every byte is written literally, field by field, from the spec's tables, never through
 * writer/ (and not from format.h's constants either): the reader tests check the reader
 * against this independent encoding, and test_interop checks llvm-xray against the spec, not
 * against our writer. Two levels:
 *  - literal bytes: PUT(m, 0x05, L16(cpu), L64(tsc), Z5) appends the bytes as listed, in
 *    either byte order (L* little-endian, B* big-endian); AT() checks an offset;
 *  - buffer level, little-endian, for whole valid files: img_init() / img_header() write the
 *    header, img_buffer() starts a buffer, the caller appends records at img_at(), and
 *    img_close() ends the buffer with EndOfBuffer and zero padding to its full size.
 */
#ifndef XFDR_TESTS_SUPPORT_IMAGE_H
#define XFDR_TESTS_SUPPORT_IMAGE_H

#include <stddef.h>
#include <stdint.h>

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

/* Read back a little-endian u64 (what L64 writes), from an image or a file's bytes. */
uint64_t img_le64(const uint8_t *p);

/* The largest image any test builds. */
#define IMG_BYTES 8192

/* An image; `struct img m = {0}` is an empty one. */
struct img {
	uint8_t b[IMG_BYTES];
	size_t len;	  /* bytes written so far */
	size_t buf_bytes; /* buffer level: the header's buffer size */
	size_t buf_start; /* buffer level: offset of the buffer img_buffer() opened */
};

/* Append n bytes; an image that would outgrow IMG_BYTES fails the test. */
void img_put(struct img *m, const void *p, size_t n);

#define PUT(m, ...)                                                                                \
	do {                                                                                       \
		const uint8_t b_[] = {__VA_ARGS__};                                                \
		img_put((m), b_, sizeof(b_));                                                      \
	} while (0)
#define AT(m, off) assert_int_equal((m)->len, (off))

/* Fill up to `end` with `fill` (0xff is a byte the reader must never look at: kind 127). */
void img_pad_to(struct img *m, size_t end, uint8_t fill);

/*
 * img_header - append the 32-byte little-endian header: version 1, type 1 (FDR), bitfield 3
 * (constant and nonstop TSC), 2 GHz, buffer size buf_bytes, 8 reserved zero bytes.
 * img_init - the same into an emptied image (every byte zero).
 */
void img_header(struct img *m, uint64_t buf_bytes);
void img_init(struct img *m, uint64_t buf_bytes);

/*
 * img_buffer - open a buffer of the header's size at the end of the image: NewBuffer(tid) and
 * WallClockTime(sec, usec). The caller appends the rest (NewCPUId first, for a valid buffer)
 * at img_at() and advances m->len. The whole buffer must fit in the image.
 */
void img_buffer(struct img *m, uint16_t tid, uint64_t sec, uint32_t usec);

/* Where the next record goes. */
uint8_t *img_at(struct img *m);

/*
 * img_close - end the open buffer: EndOfBuffer and zero padding up to its full size, or
 * nothing when it is exactly full. A tail of 1 to 15 bytes, where no EndOfBuffer fits, or a
 * buffer that overflowed fails the test.
 */
void img_close(struct img *m);

#endif /* XFDR_TESTS_SUPPORT_IMAGE_H */
