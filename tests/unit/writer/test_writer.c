/*
 * tests/unit/writer/test_writer.c - the record encoders and the file writer, byte for byte.
 *
 * Every expected array below is written out by hand from the specification's tables, with a
 * comment on how it was derived; none is computed with writer/. This machine is little-endian,
 * so the arrays are the little-endian encoding: metadata byte 0 = kind << 1 | 1 (NewBuffer 01,
 * EndOfBuffer 03, NewCPUId 05, TSCWrap 07, WallClockTime 09, CustomEventMarker 0b,
 * CallArgument 0d); function record = u32 word (fid << 4 | action << 1, bit 0 = 0) then the
 * u32 delta, each least significant byte first.
 *
 * The big-endian branch of writer/encode.h is compile-checked only here (no big-endian machine
 * runs these tests); test_big_endian_words at least checks the two bit pictures it computes,
 * by compiling encode.h a second time with the big-endian byte order forced.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "writer/encode.h"
#include "writer/file.h"
#include "writer/locator.h"
#include "writer/payload.h"

/* Poison for destination memory: the encoders must overwrite every byte they own. */
#define DIRT 0xa5

/*
 * Encode into a dirty buffer with room to spare, then check the returned size, every byte of
 * the record, and that the byte right after it was not touched.
 */
#define CHECK_ENCODING(call_with_p, expected)                                                      \
	do {                                                                                       \
		uint8_t buf_[64];                                                                  \
		uint8_t *p = buf_;                                                                 \
		size_t n_;                                                                         \
		memset(buf_, DIRT, sizeof(buf_));                                                  \
		n_ = (call_with_p);                                                                \
		assert_int_equal(n_, sizeof(expected));                                            \
		assert_memory_equal(buf_, (expected), sizeof(expected));                           \
		assert_int_equal(buf_[sizeof(expected)], DIRT);                                    \
	} while (0)

/* ---- function records ---------------------------------------------------------------- */

static void test_function_entry_zero(void **state)
{
	/* Entry (0), fid 0, delta 0: word 0 -> all eight bytes zero. */
	static const uint8_t want[8] = {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};

	(void)state;
	CHECK_ENCODING(wr_function(p, XFDR_FN_ENTER, 0, 0), want);
}

static void test_function_every_action(void **state)
{
	/* fid 1, delta 0x12345678: word = 1 << 4 | action << 1 = 0x10 | 2 * action. */
	static const uint8_t entry[8] = {0x10, 0x00, 0x00, 0x00, 0x78, 0x56, 0x34, 0x12};
	static const uint8_t exit_[8] = {0x12, 0x00, 0x00, 0x00, 0x78, 0x56, 0x34, 0x12};
	static const uint8_t tail[8] = {0x14, 0x00, 0x00, 0x00, 0x78, 0x56, 0x34, 0x12};
	static const uint8_t args[8] = {0x16, 0x00, 0x00, 0x00, 0x78, 0x56, 0x34, 0x12};

	(void)state;
	CHECK_ENCODING(wr_function(p, XFDR_FN_ENTER, 1, 0x12345678u), entry);
	CHECK_ENCODING(wr_function(p, XFDR_FN_EXIT, 1, 0x12345678u), exit_);
	CHECK_ENCODING(wr_function(p, XFDR_FN_TAIL_EXIT, 1, 0x12345678u), tail);
	CHECK_ENCODING(wr_function(p, XFDR_FN_ENTER_ARGS, 1, 0x12345678u), args);
}

static void test_function_max_id_max_delta(void **state)
{
	/*
	 * fid 2^28-1 = 0x0fffffff: << 4 = 0xfffffff0. Exit (1 << 1 = 2) -> 0xfffffff2,
	 * Entry_Args (3 << 1 = 6) -> 0xfffffff6. Delta 0xffffffff -> ff ff ff ff.
	 */
	static const uint8_t exit_[8] = {0xf2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	static const uint8_t args[8] = {0xf6, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	/* Entry of fid 2^28-1 with delta 0: 0xfffffff0 then zeros. */
	static const uint8_t entry[8] = {0xf0, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00};

	(void)state;
	CHECK_ENCODING(wr_function(p, XFDR_FN_EXIT, 0x0fffffffu, 0xffffffffu), exit_);
	CHECK_ENCODING(wr_function(p, XFDR_FN_ENTER_ARGS, 0x0fffffffu, 0xffffffffu), args);
	CHECK_ENCODING(wr_function(p, XFDR_FN_ENTER, 0x0fffffffu, 0), entry);
}

/* The delta read back from the record's word (short-call elision's exit test). */
static void test_function_word_delta(void **state)
{
	/* Exit (1 << 1) of fid 1 (<< 4): 12 00 00 00, then delta 0x12345678 as a u32 at 4 */
	static const uint8_t exit_[8] = {0x12, 0x00, 0x00, 0x00, 0x78, 0x56, 0x34, 0x12};
	uint64_t w;

	(void)state;
	memcpy(&w, exit_, sizeof(w));
	assert_int_equal(wr_function_word_delta(w), 0x12345678u);
	assert_int_equal(wr_function_word_delta(wr_function_word(XFDR_FN_EXIT, 0x0fffffffu, 0u)),
			 0u);
	assert_int_equal(
	    wr_function_word_delta(wr_function_word(XFDR_FN_ENTER, 0x0fffffffu, 0xffffffffu)),
	    0xffffffffu);
}

static void test_function_id_too_wide_is_masked(void **state)
{
	/*
	 * Bits above the 28-bit field must not reach the discriminant or the action: fid
	 * 0xffffffff is kept as 0x0fffffff, so Entry gives 0xfffffff0 (bit 0 still 0 = function,
	 * bits 1-3 still 0 = Entry), and 0x10000005 is kept as 5 -> 0x50.
	 */
	static const uint8_t wide[8] = {0xf0, 0xff, 0xff, 0xff, 0x01, 0x00, 0x00, 0x00};
	static const uint8_t five[8] = {0x50, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};

	(void)state;
	CHECK_ENCODING(wr_function(p, XFDR_FN_ENTER, 0xffffffffu, 1), wide);
	CHECK_ENCODING(wr_function(p, XFDR_FN_ENTER, 0x10000005u, 0), five);
}

/* ---- metadata records ---------------------------------------------------------------- */

static void test_new_buffer(void **state)
{
	/* Kind 0 -> 0x01; tid u16 LE; 13 reserved zero bytes. */
	static const uint8_t max_tid[16] = {0x01, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0x00,
					    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
	static const uint8_t tid_1234[16] = {0x01, 0x34, 0x12, 0x00, 0x00, 0x00, 0x00, 0x00,
					     0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
	static const uint8_t tid_0[16] = {0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
					  0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};

	(void)state;
	CHECK_ENCODING(wr_new_buffer(p, 0xffff), max_tid);
	CHECK_ENCODING(wr_new_buffer(p, 0x1234), tid_1234);
	CHECK_ENCODING(wr_new_buffer(p, 0), tid_0);
}

static void test_end_of_buffer(void **state)
{
	/* Kind 1 -> 0x03; 15 data bytes, all unused. */
	static const uint8_t want[16] = {0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
					 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};

	(void)state;
	CHECK_ENCODING(wr_end_of_buffer(p), want);
}

static void test_wall_clock_time(void **state)
{
	/*
	 * Kind 4 -> 0x09; seconds u64 0x0102030405060708 LE = 08 07 .. 01; micros 999999 =
	 * 0x000f423f LE = 3f 42 0f 00; 3 reserved zeros.
	 */
	static const uint8_t want[16] = {0x09, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02,
					 0x01, 0x3f, 0x42, 0x0f, 0x00, 0x00, 0x00, 0x00};
	/* seconds 2^64-1, micros 0xffffffff: every data byte but the 3 reserved is ff. */
	static const uint8_t max[16] = {0x09, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
					0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00};

	(void)state;
	CHECK_ENCODING(wr_wall_clock_time(p, 0x0102030405060708ull, 999999), want);
	CHECK_ENCODING(wr_wall_clock_time(p, UINT64_MAX, UINT32_MAX), max);
}

static void test_new_cpu_id(void **state)
{
	/* Kind 2 -> 0x05; cpu u16 at 1; tsc u64 at 3; 5 reserved zeros. */
	static const uint8_t max[16] = {0x05, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
					0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0x00};
	/* cpu 0x0102 -> 02 01; tsc 0x1122334455667788 -> 88 77 66 55 44 33 22 11. */
	static const uint8_t mixed[16] = {0x05, 0x02, 0x01, 0x88, 0x77, 0x66, 0x55, 0x44,
					  0x33, 0x22, 0x11, 0x00, 0x00, 0x00, 0x00, 0x00};
	static const uint8_t zero[16] = {0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
					 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};

	(void)state;
	CHECK_ENCODING(wr_new_cpu_id(p, 0xffff, UINT64_MAX), max);
	CHECK_ENCODING(wr_new_cpu_id(p, 0x0102, 0x1122334455667788ull), mixed);
	CHECK_ENCODING(wr_new_cpu_id(p, 0, 0), zero);
}

static void test_tsc_wrap(void **state)
{
	/* Kind 3 -> 0x07; tsc u64 at 1; 7 reserved zeros. */
	static const uint8_t max[16] = {0x07, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
					0xff, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
	/* tsc 2^32 = 0x0000000100000000 -> 00 00 00 00 01 00 00 00. */
	static const uint8_t two32[16] = {0x07, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
					  0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};

	(void)state;
	CHECK_ENCODING(wr_tsc_wrap(p, UINT64_MAX), max);
	CHECK_ENCODING(wr_tsc_wrap(p, 0x100000000ull), two32);
}

static void test_custom_event_marker(void **state)
{
	/*
	 * Kind 5 -> 0x0b; size u32 at 1: 0x20 -> 20 00 00 00; tsc u64 at 5:
	 * 0x0a0b0c0d0e0f1011 -> 11 10 0f 0e 0d 0c 0b 0a; 3 reserved zeros.
	 */
	static const uint8_t want[16] = {0x0b, 0x20, 0x00, 0x00, 0x00, 0x11, 0x10, 0x0f,
					 0x0e, 0x0d, 0x0c, 0x0b, 0x0a, 0x00, 0x00, 0x00};
	/* size 0xffffffff, tsc 2^64-1. */
	static const uint8_t max[16] = {0x0b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
					0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00};

	(void)state;
	CHECK_ENCODING(wr_custom_event_marker(p, 0x20, 0x0a0b0c0d0e0f1011ull), want);
	CHECK_ENCODING(wr_custom_event_marker(p, UINT32_MAX, UINT64_MAX), max);
}

static void test_call_argument(void **state)
{
	/* Kind 6 -> 0x0d; arg u64 at 1: 0xdeadbeefcafef00d -> 0d f0 fe ca ef be ad de. */
	static const uint8_t want[16] = {0x0d, 0x0d, 0xf0, 0xfe, 0xca, 0xef, 0xbe, 0xad,
					 0xde, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
	static const uint8_t max[16] = {0x0d, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
					0xff, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};

	(void)state;
	CHECK_ENCODING(wr_call_argument(p, 0xdeadbeefcafef00dull), want);
	CHECK_ENCODING(wr_call_argument(p, UINT64_MAX), max);
}

/* ---- the big-endian bit pictures ------------------------------------------------------ */

/*
 * Compile encode.h again with the big-endian order forced and every name prefixed, to check
 * the two words its big-endian branch computes. The stores (wr_put*) stay native, so only the
 * word values are checked here, not the bytes a big-endian machine would write.
 */
#undef XFDR_WRITER_ENCODE_H
#undef WR_BIG_ENDIAN
#pragma push_macro("__BYTE_ORDER__")
#undef __BYTE_ORDER__
#define __BYTE_ORDER__ __ORDER_BIG_ENDIAN__
#define wr_put16 be_wr_put16
#define wr_put32 be_wr_put32
#define wr_put64 be_wr_put64
#define wr_fn_word be_wr_fn_word
#define wr_md_byte be_wr_md_byte
#define wr_function be_wr_function
#define wr_md_begin be_wr_md_begin
#define wr_new_buffer be_wr_new_buffer
#define wr_end_of_buffer be_wr_end_of_buffer
#define wr_wall_clock_time be_wr_wall_clock_time
#define wr_new_cpu_id be_wr_new_cpu_id
#define wr_tsc_wrap be_wr_tsc_wrap
#define wr_custom_event_marker be_wr_custom_event_marker
#define wr_call_argument be_wr_call_argument
#define wr_fits be_wr_fits
#define wr_function_read be_wr_function_read
#define wr_function_word be_wr_function_word
#define wr_function_word_delta be_wr_function_word_delta
#define wr_put16_order be_wr_put16_order
#define wr_put32_order be_wr_put32_order
#define wr_put64_order be_wr_put64_order
#define wr_md_byte_order be_wr_md_byte_order
#define wr_end_of_buffer_order be_wr_end_of_buffer_order
#include "writer/encode.h"
#undef wr_put16
#undef wr_put32
#undef wr_put64
#undef wr_fn_word
#undef wr_md_byte
#undef wr_function
#undef wr_md_begin
#undef wr_new_buffer
#undef wr_end_of_buffer
#undef wr_wall_clock_time
#undef wr_new_cpu_id
#undef wr_tsc_wrap
#undef wr_custom_event_marker
#undef wr_call_argument
#undef wr_fits
#undef wr_function_read
#undef wr_function_word
#undef wr_function_word_delta
#undef wr_put16_order
#undef wr_put32_order
#undef wr_put64_order
#undef wr_md_byte_order
#undef wr_end_of_buffer_order
#pragma pop_macro("__BYTE_ORDER__")

static void test_big_endian_words(void **state)
{
	(void)state;
	assert_int_equal(WR_BIG_ENDIAN, 1);
	/*
	 * Spec, big-endian: discriminant is the most significant bit (0), then 3 action bits
	 * (bits 28-30), then the 28-bit id in the low bits (mask 0x0fffffff).
	 */
	assert_int_equal(be_wr_fn_word(XFDR_FN_ENTER, 0), 0x00000000u);
	assert_int_equal(be_wr_fn_word(XFDR_FN_EXIT, 1), 0x10000001u);
	assert_int_equal(be_wr_fn_word(XFDR_FN_TAIL_EXIT, 0x0fffffffu), 0x2fffffffu);
	assert_int_equal(be_wr_fn_word(XFDR_FN_ENTER_ARGS, 0xffffffffu), 0x3fffffffu);
	/* Metadata byte: msb = 1, kind in the low 7 bits. */
	assert_int_equal(be_wr_md_byte(XFDR_MD_NEW_BUFFER), 0x80);
	assert_int_equal(be_wr_md_byte(XFDR_MD_END_OF_BUFFER), 0x81);
	assert_int_equal(be_wr_md_byte(XFDR_MD_CALL_ARGUMENT), 0x86);
}

/* ---- wr_fits --------------------------------------------------------------------------- */

static void test_fits(void **state)
{
	(void)state;
	/* Exactly full: no EndOfBuffer needed. */
	assert_true(wr_fits(8, 8));
	assert_true(wr_fits(16, 16));
	assert_true(wr_fits(0, 0));
	/* Leaves exactly 16 (room for EndOfBuffer) or more. */
	assert_true(wr_fits(24, 8));
	assert_true(wr_fits(32, 16));
	assert_true(wr_fits(1000, 8));
	/* Leaves 1..15: no record could ever close that tail. */
	assert_false(wr_fits(9, 8));
	assert_false(wr_fits(23, 8));
	assert_false(wr_fits(17, 16));
	assert_false(wr_fits(31, 16));
	/* Does not fit at all. */
	assert_false(wr_fits(7, 8));
	assert_false(wr_fits(0, 8));
	assert_false(wr_fits(15, 16));
}

/* ---- file header ------------------------------------------------------------------------ */

/*
 * Version 1 (01 00), type 1 (01 00), bitfield u32 (bit 0 constant, bit 1 nonstop),
 * cycle_frequency 2 GHz = 0x77359400 -> 00 94 35 77 00 00 00 00, buffer_size 16384 = 0x4000 ->
 * 00 40 00 00 00 00 00 00, 8 reserved zeros.
 */
static const uint8_t header_both[32] = {
    0x01, 0x00, 0x01, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x94, 0x35, 0x77, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};

static void test_header_encoding(void **state)
{
	/* Same header with only constant_tsc (bitfield 01) and only nonstop_tsc (02). */
	static const uint8_t constant_only[32] = {0x01, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00,
						  0x00, 0x94, 0x35, 0x77, 0x00, 0x00, 0x00, 0x00,
						  0x00, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
						  0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
	static const uint8_t nonstop_only[32] = {0x01, 0x00, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00,
						 0x00, 0x94, 0x35, 0x77, 0x00, 0x00, 0x00, 0x00,
						 0x00, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
						 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
	/* Neither flag; frequency 2^64-1 and buffer_size 0x0102030405060708. */
	static const uint8_t extremes[32] = {0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
					     0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
					     0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
					     0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
	struct wr_file_header h = {
	    .cycle_frequency_hz = 2000000000ull,
	    .buffer_bytes = 16384,
	    .constant_tsc = 1,
	    .nonstop_tsc = 1,
	};
	uint8_t out[33];

	(void)state;
	memset(out, DIRT, sizeof(out));
	assert_int_equal(wr_encode_file_header(out, &h), 32);
	assert_memory_equal(out, header_both, 32);
	assert_int_equal(out[32], DIRT);

	/* Any non-zero int means "yes", not only 1. */
	h.constant_tsc = 7;
	h.nonstop_tsc = 0;
	memset(out, DIRT, sizeof(out));
	wr_encode_file_header(out, &h);
	assert_memory_equal(out, constant_only, 32);

	h.constant_tsc = 0;
	h.nonstop_tsc = -1;
	memset(out, DIRT, sizeof(out));
	wr_encode_file_header(out, &h);
	assert_memory_equal(out, nonstop_only, 32);

	h = (struct wr_file_header){.cycle_frequency_hz = UINT64_MAX,
				    .buffer_bytes = 0x0102030405060708ull};
	memset(out, DIRT, sizeof(out));
	wr_encode_file_header(out, &h);
	assert_memory_equal(out, extremes, 32);
}

/* ---- writing to descriptors ----------------------------------------------------------- */

static int temp_file(void)
{
	char path[] = "/tmp/xfdr-test-writer-XXXXXX";
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(unlink(path), 0);
	return fd;
}

/* The whole content of fd (from offset 0) into a fresh allocation; *n gets its size. */
static uint8_t *read_back(int fd, size_t *n)
{
	struct stat st;
	uint8_t *p;

	assert_int_equal(fstat(fd, &st), 0);
	*n = (size_t)st.st_size;
	p = malloc(*n + 1);
	assert_non_null(p);
	assert_int_equal(pread(fd, p, *n, 0), (ssize_t)*n);
	return p;
}

static void test_write_file_header(void **state)
{
	struct wr_file_header h = {
	    .cycle_frequency_hz = 2000000000ull,
	    .buffer_bytes = 16384,
	    .constant_tsc = 1,
	    .nonstop_tsc = 1,
	};
	int fd = temp_file();
	uint8_t *got;
	size_t n;

	(void)state;
	errno = 4321;
	assert_int_equal(wr_write_file_header(fd, &h), 0);
	assert_int_equal(errno, 4321);
	got = read_back(fd, &n);
	assert_int_equal(n, 32);
	assert_memory_equal(got, header_both, 32);
	free(got);
	close(fd);
}

/* A recognisable record body: byte i is 0x40 + i (never zero, never the EndOfBuffer byte). */
static void fill_body(uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(0x40 + i);
}

static const uint8_t eob_bytes[16] = {0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
				      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};

static int all_zero(const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

static void test_write_buffer_pads(void **state)
{
	uint8_t data[64];
	int fd = temp_file();
	uint8_t *got;
	size_t n;

	(void)state;
	/* 40 bytes used of 96: body, EndOfBuffer at 40, zeros from 56 to 96. */
	fill_body(data, sizeof(data));
	errno = 777;
	assert_int_equal(wr_write_buffer(fd, data, 40, 96), 0);
	assert_int_equal(errno, 777);
	got = read_back(fd, &n);
	assert_int_equal(n, 96);
	assert_memory_equal(got, data, 40);
	assert_memory_equal(got + 40, eob_bytes, 16);
	assert_true(all_zero(got + 56, 40));
	free(got);
	close(fd);
}

static void test_write_buffer_eob_without_padding(void **state)
{
	uint8_t data[48];
	int fd = temp_file();
	uint8_t *got;
	size_t n;

	(void)state;
	/* Tail of exactly 16: the EndOfBuffer ends the buffer, no zero byte follows. */
	fill_body(data, sizeof(data));
	assert_int_equal(wr_write_buffer(fd, data, 48, 64), 0);
	got = read_back(fd, &n);
	assert_int_equal(n, 64);
	assert_memory_equal(got, data, 48);
	assert_memory_equal(got + 48, eob_bytes, 16);
	free(got);
	close(fd);
}

static void test_write_buffer_exactly_full(void **state)
{
	uint8_t data[56];
	int fd = temp_file();
	uint8_t *got;
	size_t n;

	(void)state;
	/* used == buffer_bytes: the records as they are, and no EndOfBuffer at all. */
	fill_body(data, sizeof(data));
	assert_int_equal(wr_write_buffer(fd, data, 56, 56), 0);
	got = read_back(fd, &n);
	assert_int_equal(n, 56);
	assert_memory_equal(got, data, 56);
	free(got);
	close(fd);
}

static void test_write_buffer_large_padding(void **state)
{
	/* More padding than the writer's static zero block, and not a multiple of its size. */
	const size_t buffer_bytes = 3 * 4096 + 1000;
	uint8_t data[48];
	int fd = temp_file();
	uint8_t *got;
	size_t n;

	(void)state;
	fill_body(data, sizeof(data));
	assert_int_equal(wr_write_buffer(fd, data, 48, buffer_bytes), 0);
	/* A second buffer right after it: each call writes exactly buffer_bytes. */
	assert_int_equal(wr_write_buffer(fd, data, 48, buffer_bytes), 0);
	got = read_back(fd, &n);
	assert_int_equal(n, 2 * buffer_bytes);
	assert_memory_equal(got, data, 48);
	assert_memory_equal(got + 48, eob_bytes, 16);
	assert_true(all_zero(got + 64, buffer_bytes - 64));
	assert_memory_equal(got + buffer_bytes, data, 48);
	assert_memory_equal(got + buffer_bytes + 48, eob_bytes, 16);
	assert_true(all_zero(got + buffer_bytes + 64, buffer_bytes - 64));
	free(got);
	close(fd);
}

static void test_write_buffer_einval(void **state)
{
	uint8_t data[128];
	int fd = temp_file();
	struct stat st;

	(void)state;
	fill_body(data, sizeof(data));
	errno = 55;
	/* More used than the buffer holds. */
	assert_int_equal(wr_write_buffer(fd, data, 65, 64), -EINVAL);
	/* Tails of 1 and 15 bytes: no EndOfBuffer fits. */
	assert_int_equal(wr_write_buffer(fd, data, 63, 64), -EINVAL);
	assert_int_equal(wr_write_buffer(fd, data, 49, 64), -EINVAL);
	assert_int_equal(errno, 55);
	/* Refused before anything was written. */
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_size, 0);
	close(fd);
}

static void test_write_errors_keep_errno(void **state)
{
	struct wr_file_header h = {.cycle_frequency_hz = 1, .buffer_bytes = 64};
	uint8_t data[48];
	int fds[2];

	(void)state;
	fill_body(data, sizeof(data));
	assert_int_equal(pipe(fds), 0);
	assert_int_equal(close(fds[1]), 0);
	/* fds[1] is closed now: write(2) fails with EBADF, errno is given back. */
	errno = 99;
	assert_int_equal(wr_write_file_header(fds[1], &h), -EBADF);
	assert_int_equal(errno, 99);
	assert_int_equal(wr_write_buffer(fds[1], data, 48, 64), -EBADF);
	assert_int_equal(errno, 99);
	/* Read end only: writing to it is EBADF as well. */
	assert_int_equal(wr_write_buffer(fds[0], data, 32, 64), -EBADF);
	assert_int_equal(errno, 99);
	close(fds[0]);
}

/*
 * Past RLIMIT_FSIZE a write is refused whole with -EFBIG: no byte of it lands (the kernel
 * would write up to the limit), and no SIGXFSZ ends the process. In a child: the limit
 * stays there. The child reports by its exit status: 0 all as expected.
 */
static void test_write_past_fsize_limit(void **state)
{
	char path[] = "/tmp/xfdr-writer-fsize-XXXXXX";
	struct wr_file_header h = {.cycle_frequency_hz = 1, .buffer_bytes = 64};
	uint8_t data[64];
	struct stat st;
	int fd, status;
	pid_t pid;

	(void)state;
	fill_body(data, 48);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct rlimit r = {.rlim_cur = 100, .rlim_max = RLIM_INFINITY};

		if (setrlimit(RLIMIT_FSIZE, &r))
			_exit(10);
		errno = 99;
		if (wr_write_file_header(fd, &h) || errno != 99)
			_exit(11); /* 32 bytes: fit */
		if (wr_write_buffer(fd, data, 48, 64) || errno != 99)
			_exit(12); /* to 96: fit */
		if (wr_write_buffer(fd, data, 48, 64) != -EFBIG || errno != 99)
			_exit(13); /* to 160: refused */
		if (wr_write_buffer_at(fd, data, 48, 64, 64) != -EFBIG)
			_exit(14); /* 64..128 */
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail_msg("child: status %#x (signal %d)", status,
			 WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_size, 96);
	close(fd);
	unlink(path);
}

static void test_write_buffer_to_pipe(void **state)
{
	struct wr_file_header h = {.cycle_frequency_hz = 3000000000ull, .buffer_bytes = 64};
	uint8_t data[32], got[96 + 1];
	ssize_t k;
	size_t n = 0;
	int fds[2];

	(void)state;
	fill_body(data, sizeof(data));
	assert_int_equal(pipe(fds), 0);
	/* 32 + 64 bytes: well under the pipe's capacity, so no reader thread is needed. */
	assert_int_equal(wr_write_file_header(fds[1], &h), 0);
	assert_int_equal(wr_write_buffer(fds[1], data, 32, 64), 0);
	close(fds[1]);
	while ((k = read(fds[0], got + n, sizeof(got) - n)) > 0)
		n += (size_t)k;
	close(fds[0]);
	assert_int_equal(n, 96);
	/* Header: 3 GHz = 0xb2d05e00 -> 00 5e d0 b2; buffer_size 64 = 0x40; no flags. */
	{
		static const uint8_t want_hdr[32] = {
		    0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x5e, 0xd0,
		    0xb2, 0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00,
		    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};

		assert_memory_equal(got, want_hdr, 32);
	}
	assert_memory_equal(got + 32, data, 32);
	assert_memory_equal(got + 64, eob_bytes, 16);
	assert_true(all_zero(got + 80, 16));
}

/*
 * Short writes and EINTR: a blocking write(2) to a pipe that a signal interrupts returns the
 * bytes moved so far (or EINTR if none). The records (256 KiB) are larger than the pipe's
 * 64 KiB, so their write blocks part-way; a timer keeps interrupting it and the padding writes
 * while a slow reader drains the pipe. The reader must still get every byte exactly once.
 */
static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

struct drain {
	int fd;
	uint8_t *out;
	size_t cap, got;
};

static void *drain_pipe(void *arg)
{
	struct drain *d = arg;
	ssize_t k;

	for (;;) {
		k = read(d->fd, d->out + d->got, d->cap - d->got < 4096 ? d->cap - d->got : 4096);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		d->got += (size_t)k;
		usleep(200);
	}
	return NULL;
}

static void test_write_buffer_interrupted(void **state)
{
	const size_t buffer_bytes = 1u << 20, used = 256 * 1024;
	struct sigaction sa, old_sa;
	struct itimerval tv = {{0, 500}, {0, 500}}, off = {{0, 0}, {0, 0}};
	sigset_t block, old_mask;
	struct drain d;
	pthread_t th;
	uint8_t *data;
	int fds[2];
	int rc;

	(void)state;
	data = malloc(used);
	assert_non_null(data);
	fill_body(data, used);
	d.out = malloc(buffer_bytes + 1);
	assert_non_null(d.out);
	d.cap = buffer_bytes + 1;
	d.got = 0;
	assert_int_equal(pipe(fds), 0);
	d.fd = fds[0];

	/* The reader thread must not take the signals: start it with SIGALRM blocked. */
	sigemptyset(&block);
	sigaddset(&block, SIGALRM);
	assert_int_equal(pthread_sigmask(SIG_BLOCK, &block, &old_mask), 0);
	assert_int_equal(pthread_create(&th, NULL, drain_pipe, &d), 0);
	assert_int_equal(pthread_sigmask(SIG_SETMASK, &old_mask, NULL), 0);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm; /* no SA_RESTART: write(2) must see the interruption */
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGALRM, &sa, &old_sa), 0);
	alarms = 0;
	assert_int_equal(setitimer(ITIMER_REAL, &tv, NULL), 0);
	rc = wr_write_buffer(fds[1], data, used, buffer_bytes);
	assert_int_equal(setitimer(ITIMER_REAL, &off, NULL), 0);
	assert_int_equal(sigaction(SIGALRM, &old_sa, NULL), 0);
	close(fds[1]);
	assert_int_equal(pthread_join(th, NULL), 0);
	close(fds[0]);

	assert_int_equal(rc, 0);
	/* Without interruptions the test would prove nothing about the retry loop. */
	assert_true(alarms > 0);
	assert_int_equal(d.got, buffer_bytes);
	assert_memory_equal(d.out, data, used);
	assert_memory_equal(d.out + used, eob_bytes, 16);
	assert_true(all_zero(d.out + used + 16, buffer_bytes - used - 16));
	free(d.out);
	free(data);
}

/* ---- wr_close_buffer ---------------------------------------------------------------------- */

static void test_close_buffer(void **state)
{
	uint8_t buf[96], before[96];

	(void)state;
	/* 24 used of 80: records untouched, EndOfBuffer at 24, zeros 40..80, 80.. untouched. */
	memset(buf, DIRT, sizeof(buf));
	fill_body(buf, 24);
	memcpy(before, buf, sizeof(buf));
	assert_int_equal(wr_close_buffer(buf, 24, 80), 0);
	assert_memory_equal(buf, before, 24);
	assert_memory_equal(buf + 24, eob_bytes, 16);
	assert_true(all_zero(buf + 40, 40));
	assert_memory_equal(buf + 80, before + 80, 16);

	/* Tail of exactly 16: EndOfBuffer only. */
	memset(buf, DIRT, sizeof(buf));
	assert_int_equal(wr_close_buffer(buf, 48, 64), 0);
	assert_memory_equal(buf + 48, eob_bytes, 16);
	assert_int_equal(buf[47], DIRT);
	assert_int_equal(buf[64], DIRT);
}

static void test_close_buffer_exactly_full_and_einval(void **state)
{
	uint8_t buf[80], before[80];

	(void)state;
	memset(buf, DIRT, sizeof(buf));
	memcpy(before, buf, sizeof(buf));
	/* Exactly full: nothing is written. */
	assert_int_equal(wr_close_buffer(buf, 64, 64), 0);
	assert_memory_equal(buf, before, sizeof(buf));
	/* Refused: more used than the buffer, tails of 1 and 15; nothing is written. */
	assert_int_equal(wr_close_buffer(buf, 65, 64), -EINVAL);
	assert_int_equal(wr_close_buffer(buf, 63, 64), -EINVAL);
	assert_int_equal(wr_close_buffer(buf, 49, 64), -EINVAL);
	assert_memory_equal(buf, before, sizeof(buf));
}

/* ---- Another machine's byte order (the rebuilders) -------------------------------------- */

static void test_header_and_end_of_buffer_in_either_order(void **state)
{
	/* version 1, type 1, constant+nonstop (bits 0 and 1), 0x0102030405060708 Hz, 0x1000 bytes
	 */
	static const uint8_t big_header[32] = {
	    0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x03, 0x01, 0x02, 0x03,
	    0x04, 0x05, 0x06, 0x07, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	    0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	static const uint8_t little_header[32] = {
	    0x01, 0x00, 0x01, 0x00, 0x03, 0x00, 0x00, 0x00, 0x08, 0x07, 0x06,
	    0x05, 0x04, 0x03, 0x02, 0x01, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00,
	    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	/* EndOfBuffer, kind 1: big-endian 0x80 | 1 in the first byte, little-endian 1 << 1 | 1. */
	static const uint8_t big_eob[16] = {0x81};
	static const uint8_t little_eob[16] = {0x03};
	struct wr_file_header h = {
	    .cycle_frequency_hz = 0x0102030405060708ull,
	    .buffer_bytes = 0x1000,
	    .constant_tsc = 1,
	    .nonstop_tsc = 1,
	    .order = WR_ORDER_BIG,
	};
	uint8_t out[32], buf[64];

	(void)state;
	assert_int_equal(wr_encode_file_header(out, &h), 32);
	assert_memory_equal(out, big_header, 32);
	h.order = WR_ORDER_LITTLE;
	wr_encode_file_header(out, &h);
	assert_memory_equal(out, little_header, 32);
	h.order = WR_ORDER_HOST;
	wr_encode_file_header(out, &h);
	/* WR_BIG_ENDIAN is the forced one here since the big-endian block above. */
	assert_memory_equal(
	    out, __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ ? big_header : little_header, 32);

	memset(buf, DIRT, sizeof(buf));
	assert_int_equal(wr_close_buffer_order(buf, 16, 64, 1), 0);
	assert_memory_equal(buf + 16, big_eob, 16);
	assert_true(all_zero(buf + 32, 32));
	assert_int_equal(buf[15], DIRT);
	assert_int_equal(wr_close_buffer_order(buf, 16, 64, 0), 0);
	assert_memory_equal(buf + 16, little_eob, 16);
	assert_int_equal(wr_close_buffer_order(buf, 60, 64, 1), -EINVAL);
}

/* ---- xfdr's custom-event payloads ------------------------------------------------------ */

static void test_drop_payload(void **state)
{
	/*
	 * "XFDRDROP" with one entry, from the layout table in format.h, every field little-endian:
	 * tag, version 2, entry_count 1, totals no_buffer 0x0102 reentrant 3 too_large 4
	 * no_thread_slot 5, threads_omitted 6, reserved, overwritten 0x0a; then tid 0x00012345,
	 * thread id 0x2345, reserved, no_buffer 7, reentrant 0x0100000000 (2^32), too_large 9,
	 * overwritten 0x0b.
	 */
	static const uint8_t want[104] = {
	    'X',  'F',	'D',  'R',  'D',  'R', 'O', 'P', /* 0: tag */
	    0x02, 0x00, 0x00, 0x00,			 /* 8: layout version */
	    0x01, 0x00, 0x00, 0x00,			 /* 12: entry_count */
	    0x02, 0x01, 0,    0,    0,	  0,   0,   0,	 /* 16: no_buffer */
	    0x03, 0,	0,    0,    0,	  0,   0,   0,	 /* 24: reentrant */
	    0x04, 0,	0,    0,    0,	  0,   0,   0,	 /* 32: too_large */
	    0x05, 0,	0,    0,    0,	  0,   0,   0,	 /* 40: no_thread_slot */
	    0x06, 0x00, 0x00, 0x00,			 /* 48: threads_omitted */
	    0x00, 0x00, 0x00, 0x00,			 /* 52: reserved */
	    0x0a, 0,	0,    0,    0,	  0,   0,   0,	 /* 56: overwritten */
	    0x45, 0x23, 0x01, 0x00,			 /* 64: tid */
	    0x45, 0x23, 0x00, 0x00,			 /* 68: thread id, reserved */
	    0x07, 0,	0,    0,    0,	  0,   0,   0,	 /* 72: no_buffer */
	    0x00, 0,	0,    0,    0x01, 0,   0,   0,	 /* 80: reentrant */
	    0x09, 0,	0,    0,    0,	  0,   0,   0,	 /* 88: too_large */
	    0x0b, 0,	0,    0,    0,	  0,   0,   0,	 /* 96: overwritten */
	};
	const struct wr_drop_totals totals = {.no_buffer = 0x0102,
					      .reentrant = 3,
					      .too_large = 4,
					      .no_thread_slot = 5,
					      .threads_omitted = 6,
					      .overwritten = 0x0a};
	const struct wr_drop_entry entry = {.tid = 0x12345,
					    .thread_id = 0x2345,
					    .no_buffer = 7,
					    .reentrant = 1ull << 32,
					    .too_large = 9,
					    .overwritten = 0x0b};
	uint8_t buf[128];

	(void)state;
	assert_int_equal(wr_drop_payload_bytes(1), sizeof(want));
	assert_int_equal(wr_drop_payload_bytes(0), 64);
	memset(buf, DIRT, sizeof(buf));
	assert_int_equal(wr_drop_head(buf, &totals, 1), 64);
	assert_int_equal(buf[64], DIRT);
	assert_int_equal(wr_drop_entry(buf + 64, &entry), 40);
	assert_memory_equal(buf, want, sizeof(want));
	assert_int_equal(buf[sizeof(want)], DIRT);
}

static void test_stack_context_payload(void **state)
{
	/*
	 * "XFDRSTAK" from format.h's table, little-endian: tag, version 1, depth 300 (0x012c),
	 * id_count 3, reserved, ids 7, 0x0fffffff, 0x10203, then 4 bytes of zero padding.
	 */
	static const uint8_t want[40] = {
	    'X',  'F',	'D',  'R',  'S', 'T', 'A', 'K', /* 0: tag */
	    0x01, 0x00, 0x00, 0x00,			/* 8: layout version */
	    0x2c, 0x01, 0x00, 0x00,			/* 12: depth */
	    0x03, 0x00, 0x00, 0x00,			/* 16: id_count */
	    0x00, 0x00, 0x00, 0x00,			/* 20: reserved */
	    0x07, 0x00, 0x00, 0x00,			/* 24: ids[0] */
	    0xff, 0xff, 0xff, 0x0f,			/* 28: ids[1] */
	    0x03, 0x02, 0x01, 0x00,			/* 32: ids[2] */
	    0x00, 0x00, 0x00, 0x00,			/* 36: padding */
	};
	const uint32_t ids[3] = {7, 0x0fffffff, 0x10203};
	uint8_t buf[64];

	(void)state;
	memset(buf, DIRT, sizeof(buf));
	assert_int_equal(wr_stack_context(buf, 300, ids, 3), sizeof(want));
	assert_memory_equal(buf, want, sizeof(want));
	assert_int_equal(buf[sizeof(want)], DIRT);
	/* No ids: the fixed part alone, already a multiple of 8. */
	memset(buf, DIRT, sizeof(buf));
	assert_int_equal(wr_stack_context(buf, 2, NULL, 0), 24);
	assert_int_equal(buf[12], 2);
	assert_int_equal(buf[24], DIRT);
}

static void test_crash_payload(void **state)
{
	/*
	 * "XFDRCRSH" from format.h's table, little-endian: tag, version 1, signal 11, si_code -6
	 * (SI_TKILL), tid 0x12345, fault address 0x0000123456789abc, frame_count 2, flags 0, then
	 * the two program counters.
	 */
	static const uint8_t want[56] = {
	    'X',  'F',	'D',  'R',  'C',  'R',	'S',  'H',  /* 0: tag */
	    0x01, 0x00, 0x00, 0x00,			    /* 8: layout version */
	    0x0b, 0x00, 0x00, 0x00,			    /* 12: signal */
	    0xfa, 0xff, 0xff, 0xff,			    /* 16: si_code */
	    0x45, 0x23, 0x01, 0x00,			    /* 20: tid */
	    0xbc, 0x9a, 0x78, 0x56, 0x34, 0x12, 0x00, 0x00, /* 24: fault address */
	    0x02, 0x00, 0x00, 0x00,			    /* 32: frame_count */
	    0x00, 0x00, 0x00, 0x00,			    /* 36: flags */
	    0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe, /* 40: frames[0] */
	    0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 48: frames[1] */
	};
	const uint64_t frames[XFDR_CRASH_FRAMES_MAX + 1] = {0xfedcba9876543210ull, 1};
	struct wr_crash_info c = {.signal = 11,
				  .code = -6,
				  .tid = 0x12345,
				  .fault_addr = 0x123456789abcull,
				  .frame_count = 2,
				  .frames = frames};
	uint8_t buf[XFDR_CRASH_PAYLOAD_BYTES(XFDR_CRASH_FRAMES_MAX) + 8];

	(void)state;
	memset(buf, DIRT, sizeof(buf));
	assert_int_equal(wr_crash(buf, &c), sizeof(want));
	assert_memory_equal(buf, want, sizeof(want));
	assert_int_equal(buf[sizeof(want)], DIRT);
	/* More frames than the layout keeps: cut to the maximum, flagged truncated. */
	c.frame_count = XFDR_CRASH_FRAMES_MAX + 1;
	memset(buf, DIRT, sizeof(buf));
	assert_int_equal(wr_crash(buf, &c), 40 + 8 * 64);
	assert_int_equal(buf[32], 64);
	assert_int_equal(buf[36], 1);
	assert_int_equal(buf[40 + 8 * 64], DIRT);
	/* No frames: the fixed part alone. */
	c.frame_count = 0;
	c.flags = 1;
	memset(buf, DIRT, sizeof(buf));
	assert_int_equal(wr_crash(buf, &c), 40);
	assert_int_equal(buf[36], 1);
	assert_int_equal(buf[40], DIRT);
}

static void test_pool_locator(void **state)
{
	/*
	 * "XFDRPOOL" from format.h's table, little-endian, every field a different value: version
	 * 1, header_bytes 128, pid 0x12345, buffers_addr 0x7f0011223344, buffer_bytes 0x10000,
	 * buffer_count 0x0102, desc_stride 0xc0, tsc_hz 3e9 (0xb2d05e00), session 0x0a0b0c0d,
	 * flags 3, descriptor offsets 0x10 0x18 0x20 0x28 0x2c 0x30 0x38, reserved, descs_addr
	 * 0x7f0055667780, names_addr 0x0102030405060708, 16 reserved. Bytes 0-7 (the
	 * magic) are the caller's and keep their dirt.
	 */
	static const uint8_t want[128] = {
	    DIRT, DIRT, DIRT, DIRT, DIRT, DIRT, DIRT, DIRT, /* 0: magic, untouched */
	    0x01, 0x00, 0x00, 0x00,			    /* 8: layout version */
	    0x80, 0x00, 0x00, 0x00,			    /* 12: header_bytes */
	    0x45, 0x23, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, /* 16: pid */
	    0x44, 0x33, 0x22, 0x11, 0x00, 0x7f, 0x00, 0x00, /* 24: buffers_addr */
	    0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, /* 32: buffer_bytes */
	    0x02, 0x01, 0x00, 0x00,			    /* 40: buffer_count */
	    0xc0, 0x00, 0x00, 0x00,			    /* 44: desc_stride */
	    0x00, 0x5e, 0xd0, 0xb2, 0x00, 0x00, 0x00, 0x00, /* 48: tsc_hz */
	    0x0d, 0x0c, 0x0b, 0x0a,			    /* 56: session */
	    0x03, 0x00, 0x00, 0x00,			    /* 60: flags */
	    0x10, 0x00, 0x00, 0x00,			    /* 64: used_bytes at */
	    0x18, 0x00, 0x00, 0x00,			    /* 68: ctl at */
	    0x20, 0x00, 0x00, 0x00,			    /* 72: claim_seq at */
	    0x28, 0x00, 0x00, 0x00,			    /* 76: owner_tid at */
	    0x2c, 0x00, 0x00, 0x00,			    /* 80: owner_thread_id at */
	    0x30, 0x00, 0x00, 0x00,			    /* 84: first_tsc at */
	    0x38, 0x00, 0x00, 0x00,			    /* 88: last_tsc at */
	    0x00, 0x00, 0x00, 0x00,			    /* 92: reserved */
	    0x80, 0x77, 0x66, 0x55, 0x00, 0x7f, 0x00, 0x00, /* 96: descs_addr */
	    0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, /* 104: names_addr */
	    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 112: reserved */
	    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 120: reserved */
	};
	/* The same fields by format.h's offset constants: a wrong constant fails here. */
	static const struct {
		size_t off, bytes;
		uint64_t value;
	} fields[] = {
	    {XFDR_POOL_VERSION_OFF, 4, 1},
	    {XFDR_POOL_HEADER_BYTES_OFF, 4, 128},
	    {XFDR_POOL_PID_OFF, 8, 0x12345},
	    {XFDR_POOL_BUFFERS_ADDR_OFF, 8, 0x7f0011223344ull},
	    {XFDR_POOL_BUFFER_BYTES_OFF, 8, 0x10000},
	    {XFDR_POOL_BUFFER_COUNT_OFF, 4, 0x0102},
	    {XFDR_POOL_DESC_STRIDE_OFF, 4, 0xc0},
	    {XFDR_POOL_TSC_HZ_OFF, 8, 3000000000ull},
	    {XFDR_POOL_SESSION_OFF, 4, 0x0a0b0c0d},
	    {XFDR_POOL_FLAGS_OFF, 4, 3},
	    {XFDR_POOL_USED_AT_OFF, 4, 0x10},
	    {XFDR_POOL_CTL_AT_OFF, 4, 0x18},
	    {XFDR_POOL_CLAIM_SEQ_AT_OFF, 4, 0x20},
	    {XFDR_POOL_OWNER_TID_AT_OFF, 4, 0x28},
	    {XFDR_POOL_THREAD_ID_AT_OFF, 4, 0x2c},
	    {XFDR_POOL_FIRST_TSC_AT_OFF, 4, 0x30},
	    {XFDR_POOL_LAST_TSC_AT_OFF, 4, 0x38},
	    {XFDR_POOL_DESCS_ADDR_OFF, 8, 0x7f0055667780ull},
	    {XFDR_POOL_NAMES_ADDR_OFF, 8, 0x0102030405060708ull},
	};
	const struct wr_pool_locator loc = {.pid = 0x12345,
					    .buffers_addr = 0x7f0011223344ull,
					    .buffer_bytes = 0x10000,
					    .buffer_count = 0x0102,
					    .desc_stride = 0xc0,
					    .tsc_hz = 3000000000ull,
					    .session = 0x0a0b0c0d,
					    .flags = 3, /* INVARIANT_TSC | FILE_BACKED */
					    .used_bytes_at = 0x10,
					    .ctl_at = 0x18,
					    .claim_seq_at = 0x20,
					    .owner_tid_at = 0x28,
					    .owner_thread_id_at = 0x2c,
					    .first_tsc_at = 0x30,
					    .last_tsc_at = 0x38,
					    .descs_addr = 0x7f0055667780ull,
					    .names_addr = 0x0102030405060708ull};
	_Alignas(8) uint8_t buf[XFDR_POOL_HEADER_BYTES + 8];
	uint8_t covered[XFDR_POOL_HEADER_BYTES] = {0};
	size_t i, j;

	(void)state;
	assert_int_equal(sizeof(want), XFDR_POOL_HEADER_BYTES);
	memset(buf, DIRT, sizeof(buf));
	assert_int_equal(wr_pool_locator(buf, &loc), XFDR_POOL_HEADER_BYTES);
	assert_memory_equal(buf, want, sizeof(want));
	assert_int_equal(buf[XFDR_POOL_HEADER_BYTES], DIRT);
	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		uint64_t v = 0;

		memcpy(&v, buf + fields[i].off, fields[i].bytes); /* little-endian machine */
		assert_int_equal(v, fields[i].value);
		for (j = 0; j < fields[i].bytes; j++)
			covered[fields[i].off + j]++;
	}
	/* Every byte after the magic is one field's, once, or reserved and zero. */
	for (i = 8; i < XFDR_POOL_HEADER_BYTES; i++) {
		assert_in_range(covered[i], 0, 1);
		if (!covered[i])
			assert_int_equal(buf[i], 0);
	}
	/* The in-place fields are where the table says, as machine-order integers. */
	assert_ptr_equal(wr_pool_locator_magic_at(buf), (void *)buf);
	assert_int_equal(*wr_pool_locator_tsc_hz_at(buf), 3000000000ull);
	assert_int_equal(*wr_pool_locator_flags_at(buf),
			 XFDR_POOL_INVARIANT_TSC | XFDR_POOL_FILE_BACKED);
	assert_int_equal(*wr_pool_locator_names_addr_at(buf), 0x0102030405060708ull);
}

static void test_names_directory(void **state)
{
	/*
	 * "XFDRNAMS" from format.h's table, little-endian: the header with slots at
	 * 0x7f00aabbcc00, 300 slots of 0x140 bytes, tid at 8, thread_id 12, id_session 20, name
	 * 0x60, exit_name 0x70, 2 sources; then a CHUNKS source "cyg" with every field set. The
	 * header writes its magic; both overwrite every byte of their record.
	 */
	static const uint8_t want_header[64] = {
	    'X',  'F',	'D',  'R',  'N',  'A',	'M',  'S',  /* 0: magic */
	    0x01, 0x00, 0x00, 0x00,			    /* 8: layout version */
	    0xc0, 0x00, 0x00, 0x00,			    /* 12: bytes, 64 + 2 * 64 */
	    0x00, 0xcc, 0xbb, 0xaa, 0x00, 0x7f, 0x00, 0x00, /* 16: slots_addr */
	    0x2c, 0x01, 0x00, 0x00,			    /* 24: slot_count */
	    0x40, 0x01, 0x00, 0x00,			    /* 28: slot_stride */
	    0x08, 0x00, 0x00, 0x00,			    /* 32: tid at */
	    0x0c, 0x00, 0x00, 0x00,			    /* 36: thread_id at */
	    0x14, 0x00, 0x00, 0x00,			    /* 40: id_session at */
	    0x60, 0x00, 0x00, 0x00,			    /* 44: name at */
	    0x70, 0x00, 0x00, 0x00,			    /* 48: exit_name at */
	    0x02, 0x00, 0x00, 0x00,			    /* 52: source_count */
	    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 56: reserved */
	};
	static const uint8_t want_source[64] = {
	    'c',  'y',	'g',  0x00, 0x00, 0x00, 0x00, 0x00, /* 0: name */
	    0x02, 0x00, 0x00, 0x00,			    /* 8: kind CHUNKS */
	    0x05, 0x00, 0x00, 0x00,			    /* 12: count */
	    0x10, 0x32, 0x54, 0x76, 0x00, 0x7f, 0x00, 0x00, /* 16: table_addr */
	    0x20, 0x43, 0x65, 0x87, 0x00, 0x7f, 0x00, 0x00, /* 24: count_addr */
	    0x00, 0x00, 0x01, 0x00,			    /* 32: chunk_count */
	    0x00, 0x10, 0x00, 0x00,			    /* 36: chunk_ids */
	    0x20, 0x00, 0x00, 0x00,			    /* 40: node_stride */
	    0x10, 0x00, 0x00, 0x00,			    /* 44: addr at */
	    0x1c, 0x00, 0x00, 0x00,			    /* 48: state at */
	    0xff, 0x00, 0x00, 0x00,			    /* 52: state_mask */
	    0x01, 0x00, 0x00, 0x00,			    /* 56: state_live */
	    0x00, 0x00, 0x00, 0x00,			    /* 60: reserved */
	};
	const struct wr_names_header h = {.slots_addr = 0x7f00aabbcc00ull,
					  .slot_count = 300,
					  .slot_stride = 0x140,
					  .tid_at = 8,
					  .thread_id_at = 12,
					  .id_session_at = 20,
					  .name_at = 0x60,
					  .exit_name_at = 0x70,
					  .source_count = 2};
	const struct wr_names_source src = {.name = "cyg",
					    .kind = XFDR_NAMES_CHUNKS,
					    .count = 5,
					    .table_addr = 0x7f0076543210ull,
					    .count_addr = 0x7f0087654320ull,
					    .chunk_count = 0x10000,
					    .chunk_ids = 0x1000,
					    .node_stride = 0x20,
					    .addr_at = 0x10,
					    .state_at = 0x1c,
					    .state_mask = 0xff,
					    .state_live = 1};
	uint8_t buf[XFDR_NAMES_HEADER_BYTES + 8];

	(void)state;
	memset(buf, DIRT, sizeof(buf));
	assert_int_equal(wr_names_header(buf, &h), XFDR_NAMES_HEADER_BYTES);
	assert_memory_equal(buf, want_header, sizeof(want_header));
	assert_int_equal(buf[XFDR_NAMES_HEADER_BYTES], DIRT);
	memset(buf, DIRT, sizeof(buf));
	assert_int_equal(wr_names_source(buf, &src), XFDR_NAMES_SOURCE_BYTES);
	assert_memory_equal(buf, want_source, sizeof(want_source));
	assert_int_equal(buf[XFDR_NAMES_SOURCE_BYTES], DIRT);
	/* a name longer than its 8 bytes is cut, not spilled into the kind */
	memset(buf, DIRT, sizeof(buf));
	wr_names_source(buf, &(struct wr_names_source){.name = "abcdefghij", .kind = 1});
	assert_memory_equal(buf, "abcdefgh\x01\0\0\0", 12);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_function_entry_zero),
	    cmocka_unit_test(test_function_every_action),
	    cmocka_unit_test(test_function_max_id_max_delta),
	    cmocka_unit_test(test_function_word_delta),
	    cmocka_unit_test(test_function_id_too_wide_is_masked),
	    cmocka_unit_test(test_new_buffer),
	    cmocka_unit_test(test_end_of_buffer),
	    cmocka_unit_test(test_wall_clock_time),
	    cmocka_unit_test(test_new_cpu_id),
	    cmocka_unit_test(test_tsc_wrap),
	    cmocka_unit_test(test_custom_event_marker),
	    cmocka_unit_test(test_call_argument),
	    cmocka_unit_test(test_big_endian_words),
	    cmocka_unit_test(test_fits),
	    cmocka_unit_test(test_header_encoding),
	    cmocka_unit_test(test_write_file_header),
	    cmocka_unit_test(test_write_buffer_pads),
	    cmocka_unit_test(test_write_buffer_eob_without_padding),
	    cmocka_unit_test(test_write_buffer_exactly_full),
	    cmocka_unit_test(test_write_buffer_large_padding),
	    cmocka_unit_test(test_write_buffer_einval),
	    cmocka_unit_test(test_write_errors_keep_errno),
	    cmocka_unit_test(test_write_past_fsize_limit),
	    cmocka_unit_test(test_write_buffer_to_pipe),
	    cmocka_unit_test(test_write_buffer_interrupted),
	    cmocka_unit_test(test_close_buffer),
	    cmocka_unit_test(test_close_buffer_exactly_full_and_einval),
	    cmocka_unit_test(test_header_and_end_of_buffer_in_either_order),
	    cmocka_unit_test(test_drop_payload),
	    cmocka_unit_test(test_stack_context_payload),
	    cmocka_unit_test(test_crash_payload),
	    cmocka_unit_test(test_pool_locator),
	    cmocka_unit_test(test_names_directory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
