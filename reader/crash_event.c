/*
 * reader/crash_event.c - decode xfdr's own custom events: the "XFDRCRSH" crash.
 *
 * The payload (format.h has the layout), in the byte order of its file:
 *   off  0  char[8]  "XFDRCRSH"
 *   off  8  u32      layout version (1)
 *   off 12  u32      signal number
 *   off 16  i32      si_code
 *   off 20  u32      kernel tid of the crashing thread
 *   off 24  u64      fault address
 *   off 32  u32      frame_count <= XFDR_CRASH_FRAMES_MAX
 *   off 36  u32      flags (XFDR_CRASH_TRUNCATED)
 *   off 40  u64[frame_count] program counters, innermost first
 * The checks run in the order of the fields, so the message names the first one at fault; the
 * size is checked once frame_count is known, so a payload cut inside its frames is named as
 * such. The values themselves (signal, code, addresses) are data: any is taken.
 */
#include "reader/internal.h"

int xfdr_crash_event_decode(const uint8_t *payload, uint32_t bytes, int big_endian,
			    struct xfdr_crash_event *out, struct xfdr_error *err)
{
	uint32_t count, need, i;

	if (rd_payload_head(payload, bytes, big_endian, XFDR_CRASH_MAGIC, XFDR_CRASH_FRAMES_OFF,
			    XFDR_CRASH_VERSION_OFF, XFDR_CRASH_LAYOUT_VERSION, err))
		return -1;
	count = rd_u32(payload + XFDR_CRASH_FRAME_COUNT_OFF, big_endian);
	if (count > XFDR_CRASH_FRAMES_MAX)
		return rd_payload_fail(err, XFDR_CRASH_FRAME_COUNT_OFF,
				       "expected a frame_count of at most %u, found %u",
				       (unsigned)XFDR_CRASH_FRAMES_MAX, count);
	need = XFDR_CRASH_PAYLOAD_BYTES(count);
	if (bytes != need)
		return rd_payload_fail(err, 0, "expected %u payload bytes for %u frames, found %u",
				       need, count, bytes);
	/* Only a payload found good is copied: on failure *out is as it was. */
	out->signal = rd_u32(payload + XFDR_CRASH_SIGNAL_OFF, big_endian);
	out->code = (int32_t)rd_u32(payload + XFDR_CRASH_CODE_OFF, big_endian);
	out->tid = rd_u32(payload + XFDR_CRASH_TID_OFF, big_endian);
	out->fault_addr = rd_u64(payload + XFDR_CRASH_ADDR_OFF, big_endian);
	out->frame_count = count;
	out->flags = rd_u32(payload + XFDR_CRASH_FLAGS_OFF, big_endian);
	for (i = 0; i < count; i++)
		out->pcs[i] = rd_u64(payload + XFDR_CRASH_FRAMES_OFF + 8u * i, big_endian);
	return 0;
}
