/*
 * reader/bytes.h - loads of file fields in the file's byte order.
 *
 * A trace carries the byte order of the machine that wrote it, so every multi-byte field is
 * read with an explicit order chosen per file (the `big` flag), never by casting a pointer:
 * the mapping has no alignment guarantee (custom payloads shift everything after them) and
 * the host order need not match the file's. memcpy of a constant size compiles to one load.
 */
#ifndef XFDR_READER_BYTES_H
#define XFDR_READER_BYTES_H

#include <stdint.h>
#include <string.h>

#include "xfdr/format.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define RD_HOST_BIG_ENDIAN 1
#else
#define RD_HOST_BIG_ENDIAN 0
#endif

static inline uint16_t rd_u16(const uint8_t *p, int big)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return big != RD_HOST_BIG_ENDIAN ? __builtin_bswap16(v) : v;
}

static inline uint32_t rd_u32(const uint8_t *p, int big)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return big != RD_HOST_BIG_ENDIAN ? __builtin_bswap32(v) : v;
}

static inline uint64_t rd_u64(const uint8_t *p, int big)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return big != RD_HOST_BIG_ENDIAN ? __builtin_bswap64(v) : v;
}

/*
 * The first byte of every record tells a function record from a metadata record. The spec
 * packs bit-fields from the least significant bit on little-endian producers and from the most
 * significant bit on big-endian ones, and the first byte in the file is the least significant
 * byte of the first word on the former and the most significant byte on the latter, so:
 *   little-endian: discriminant = bit 0, kind = bits 1-7, function action = bits 1-3
 *   big-endian:    discriminant = bit 7, kind = bits 0-6, function action = bits 4-6
 */
static inline int rd_is_metadata(uint8_t b0, int big)
{
	return big ? b0 >> 7 : b0 & 1u;
}

static inline unsigned rd_md_kind(uint8_t b0, int big)
{
	return big ? b0 & 0x7fu : b0 >> 1;
}

static inline unsigned rd_fn_action(uint8_t b0, int big)
{
	return big ? (b0 >> 4) & 7u : (b0 >> 1) & 7u;
}

/* The function id: bits 4-31 of the first word (little-endian) or bits 0-27 (big-endian). */
static inline uint32_t rd_fn_id(const uint8_t *p, int big)
{
	uint32_t w = rd_u32(p, big);

	return big ? w & XFDR_FUNCTION_ID_MAX : w >> 4;
}

#endif /* XFDR_READER_BYTES_H */
