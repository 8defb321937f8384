/*
 * writer/encode.h - encode single FDR v1 records into caller-provided memory.
 *
 * Every byte of the format that the runtime, the flusher and the tests produce goes through
 * these encoders. They are static inline because the runtime's hot path uses them; they do no
 * I/O, keep no state and read no clock, so they may run anywhere, signal handlers included.
 *
 * Records are written in the byte order of the machine that runs the code (the spec: fields
 * follow the producing platform's order), with the bit layout the spec gives for that order.
 * Reserved bytes are always zero. Each encoder returns the number of bytes it wrote.
 */
#ifndef XFDR_WRITER_ENCODE_H
#define XFDR_WRITER_ENCODE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "xfdr/format.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define WR_BIG_ENDIAN 1
#else
#define WR_BIG_ENDIAN 0
#endif

static inline void wr_put16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, sizeof(v));
}
static inline void wr_put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, sizeof(v));
}
static inline void wr_put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

/* The same in a chosen byte order (big: 1 for big-endian), for a file of another machine. */
static inline void wr_put16_order(uint8_t *p, uint16_t v, int big)
{
	wr_put16(p, big == WR_BIG_ENDIAN ? v : __builtin_bswap16(v));
}
static inline void wr_put32_order(uint8_t *p, uint32_t v, int big)
{
	wr_put32(p, big == WR_BIG_ENDIAN ? v : __builtin_bswap32(v));
}
static inline void wr_put64_order(uint8_t *p, uint64_t v, int big)
{
	wr_put64(p, big == WR_BIG_ENDIAN ? v : __builtin_bswap64(v));
}

/*
 * Little-endian: bit 0 discriminant (0) | bits 1-3 action | bits 4-31 function id.
 * Big-endian:    bit 31 discriminant (0) | bits 28-30 action | bits 0-27 function id.
 */
static inline uint32_t wr_fn_word(unsigned action, uint32_t fid)
{
#if WR_BIG_ENDIAN
	return (uint32_t)(action & 7u) << 28 | (fid & XFDR_FUNCTION_ID_MAX);
#else
	return (uint32_t)(action & 7u) << 1 | (fid & XFDR_FUNCTION_ID_MAX) << 4;
#endif
}

/*
 * First byte of a metadata record: discriminant 1 and the 7-bit kind, in the byte order big
 * (1: big-endian) tells.
 */
static inline uint8_t wr_md_byte_order(unsigned kind, int big)
{
	return big ? (uint8_t)(0x80u | (kind & 0x7fu)) : (uint8_t)((kind & 0x7fu) << 1 | 1u);
}

/* ... in this machine's order (a constant: the runtime's records). */
static inline uint8_t wr_md_byte(unsigned kind)
{
	return wr_md_byte_order(kind, WR_BIG_ENDIAN);
}

/*
 * wr_function_word - a function record as the 64-bit word whose bytes in memory are the
 * record: the runtime stores it with one (atomic) 8-byte store.
 */
static inline uint64_t wr_function_word(unsigned action, uint32_t fid, uint32_t tsc_delta)
{
	uint8_t b[XFDR_FN_RECORD_BYTES];
	uint64_t w;

	wr_put32(b + XFDR_FN_WORD_OFF, wr_fn_word(action, fid));
	wr_put32(b + XFDR_FN_DELTA_OFF, tsc_delta);
	memcpy(&w, b, sizeof(w));
	return w;
}

static inline size_t wr_function(uint8_t *p, unsigned action, uint32_t fid, uint32_t tsc_delta)
{
	wr_put64(p, wr_function_word(action, fid, tsc_delta));
	return XFDR_FN_RECORD_BYTES;
}

/*
 * wr_function_read - decode a function record this writer wrote (same machine, same byte
 * order): short-call elision reads back the entry it may erase.
 */
static inline void wr_function_read(const uint8_t *p, unsigned *action, uint32_t *fid,
				    uint32_t *tsc_delta)
{
	uint32_t w;

	memcpy(&w, p + XFDR_FN_WORD_OFF, sizeof(w));
	memcpy(tsc_delta, p + XFDR_FN_DELTA_OFF, sizeof(*tsc_delta));
#if WR_BIG_ENDIAN
	*action = (w >> 28) & 7u;
	*fid = w & XFDR_FUNCTION_ID_MAX;
#else
	*action = (w >> 1) & 7u;
	*fid = (w >> 4) & XFDR_FUNCTION_ID_MAX;
#endif
}

/* The TSC delta of a word wr_function_word() made (wr_function_read() of its bytes). */
static inline uint32_t wr_function_word_delta(uint64_t w)
{
	uint8_t b[XFDR_FN_RECORD_BYTES];
	uint32_t fid, tsc_delta;
	unsigned action;

	memcpy(b, &w, sizeof(b));
	wr_function_read(b, &action, &fid, &tsc_delta);
	return tsc_delta;
}

/* Zeroes the whole record and sets the kind byte; the caller fills the data fields. */
static inline uint8_t *wr_md_begin(uint8_t *p, unsigned kind)
{
	memset(p, 0, XFDR_MD_RECORD_BYTES);
	p[XFDR_MD_KIND_OFF] = wr_md_byte(kind);
	return p;
}

static inline size_t wr_new_buffer(uint8_t *p, uint16_t tid)
{
	wr_put16(wr_md_begin(p, XFDR_MD_NEW_BUFFER) + XFDR_NEW_BUFFER_TID_OFF, tid);
	return XFDR_MD_RECORD_BYTES;
}

static inline size_t wr_end_of_buffer(uint8_t *p)
{
	wr_md_begin(p, XFDR_MD_END_OF_BUFFER);
	return XFDR_MD_RECORD_BYTES;
}

/*
 * EndOfBuffer in the byte order big tells: the rebuilders (`xfdr recover`, `xfdr core`) close
 * buffers in the order of the machine that recorded them, which need not be this one's.
 */
static inline size_t wr_end_of_buffer_order(uint8_t *p, int big)
{
	memset(p, 0, XFDR_MD_RECORD_BYTES);
	p[XFDR_MD_KIND_OFF] = wr_md_byte_order(XFDR_MD_END_OF_BUFFER, big);
	return XFDR_MD_RECORD_BYTES;
}

static inline size_t wr_wall_clock_time(uint8_t *p, uint64_t seconds, uint32_t micros)
{
	wr_md_begin(p, XFDR_MD_WALL_CLOCK_TIME);
	wr_put64(p + XFDR_WALL_SECONDS_OFF, seconds);
	wr_put32(p + XFDR_WALL_MICROS_OFF, micros);
	return XFDR_MD_RECORD_BYTES;
}

static inline size_t wr_new_cpu_id(uint8_t *p, uint16_t cpu, uint64_t tsc)
{
	wr_md_begin(p, XFDR_MD_NEW_CPU_ID);
	wr_put16(p + XFDR_NEW_CPU_ID_CPU_OFF, cpu);
	wr_put64(p + XFDR_NEW_CPU_ID_TSC_OFF, tsc);
	return XFDR_MD_RECORD_BYTES;
}

static inline size_t wr_tsc_wrap(uint8_t *p, uint64_t tsc)
{
	wr_put64(wr_md_begin(p, XFDR_MD_TSC_WRAP) + XFDR_TSC_WRAP_TSC_OFF, tsc);
	return XFDR_MD_RECORD_BYTES;
}

/* The marker only; the caller copies the payload right after it. */
static inline size_t wr_custom_event_marker(uint8_t *p, uint32_t payload_bytes, uint64_t tsc)
{
	wr_md_begin(p, XFDR_MD_CUSTOM_EVENT);
	wr_put32(p + XFDR_CUSTOM_SIZE_OFF, payload_bytes);
	wr_put64(p + XFDR_CUSTOM_TSC_OFF, tsc);
	return XFDR_MD_RECORD_BYTES;
}

static inline size_t wr_call_argument(uint8_t *p, uint64_t arg)
{
	wr_put64(wr_md_begin(p, XFDR_MD_CALL_ARGUMENT) + XFDR_CALL_ARG_VALUE_OFF, arg);
	return XFDR_MD_RECORD_BYTES;
}

/*
 * wr_fits - may a record of n bytes go where room bytes are left in the buffer?
 * Yes if it fills the buffer exactly (no EndOfBuffer is then needed), or if it still leaves
 * room for the EndOfBuffer that must close the buffer. A tail of 1..15 bytes could hold no
 * valid record, so it is never left.
 */
static inline int wr_fits(size_t room, size_t n)
{
	return n == room || n + XFDR_MD_RECORD_BYTES <= room;
}

#endif /* XFDR_WRITER_ENCODE_H */
