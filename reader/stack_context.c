/*
 * reader/stack_context.c - decode xfdr's own custom events: the "XFDRSTAK" stack context.
 *
 * The payload (format.h has the layout), in the byte order of its file:
 *   off  0  char[8]  "XFDRSTAK"
 *   off  8  u32      layout version (1)
 *   off 12  u32      depth
 *   off 16  u32      id_count <= min(depth, XFDR_STACK_IDS_MAX)
 *   off 20  u32      reserved
 *   off 24  u32[id_count] function ids, outermost first; zero padding to a multiple of 8
 * The checks run in the order of the fields, so the message names the first one at fault. The
 * reserved word and the padding are not read: a later writer may use them.
 */
#include <string.h>

#include "reader/internal.h"

int xfdr_payload_has_tag(const uint8_t *payload, uint32_t bytes, const char *tag)
{
	return payload && bytes >= RD_PAYLOAD_TAG_BYTES &&
	       !memcmp(payload, tag, RD_PAYLOAD_TAG_BYTES);
}

int xfdr_stack_context_decode(const uint8_t *payload, uint32_t bytes, int big_endian,
			      struct xfdr_stack_context *out, struct xfdr_error *err)
{
	uint32_t depth, count, need, known, i, id;

	if (rd_payload_head(payload, bytes, big_endian, XFDR_STACK_MAGIC, XFDR_STACK_IDS_OFF,
			    XFDR_STACK_VERSION_OFF, XFDR_STACK_LAYOUT_VERSION, err))
		return -1;
	depth = rd_u32(payload + XFDR_STACK_DEPTH_OFF, big_endian);
	count = rd_u32(payload + XFDR_STACK_ID_COUNT_OFF, big_endian);
	known = depth < XFDR_STACK_IDS_MAX ? depth : XFDR_STACK_IDS_MAX;
	if (count > known)
		return rd_payload_fail(
		    err, XFDR_STACK_ID_COUNT_OFF,
		    "expected an id_count of at most %u (depth %u, at most %u ids), found %u",
		    known, depth, (unsigned)XFDR_STACK_IDS_MAX, count);
	need = XFDR_STACK_PAYLOAD_BYTES(count);
	if (bytes != need)
		return rd_payload_fail(err, 0, "expected %u payload bytes for %u ids, found %u",
				       need, count, bytes);
	for (i = 0; i < count; i++) {
		id = rd_u32(payload + XFDR_STACK_IDS_OFF + 4u * i, big_endian);
		if (id > XFDR_FUNCTION_ID_MAX)
			return rd_payload_fail(
			    err, XFDR_STACK_IDS_OFF + 4u * i,
			    "expected a function id of 28 bits (at most %u) for id %u, "
			    "found %u",
			    (unsigned)XFDR_FUNCTION_ID_MAX, i, id);
	}
	/* Only a payload found good is copied: on failure *out is as it was. */
	for (i = 0; i < count; i++)
		out->ids[i] = rd_u32(payload + XFDR_STACK_IDS_OFF + 4u * i, big_endian);
	out->depth = depth;
	out->id_count = count;
	return 0;
}
