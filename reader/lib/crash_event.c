/*
 * reader/lib/crash_event.c - decode xfdr's own custom events: the "XFDRCRSH" crash.
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
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "reader/lib/bytes.h"
#include "xfdr/reader.h"

#define TAG_BYTES 8u

static int bad(struct xfdr_error *err, uint32_t offset, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int bad(struct xfdr_error *err, uint32_t offset, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!err)
		return -1;
	err->offset = offset;
	n = snprintf(err->text, sizeof(err->text), "payload offset %u: ", offset);
	va_start(ap, fmt);
	vsnprintf(err->text + n, sizeof(err->text) - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

int xfdr_crash_event_decode(const uint8_t *payload, uint32_t bytes, int big_endian,
			    struct xfdr_crash_event *out, struct xfdr_error *err)
{
	char found[2 * TAG_BYTES + 1];
	uint32_t version, count, need, i;

	if (bytes < XFDR_CRASH_FRAMES_OFF)
		return bad(err, 0, "expected at least %u bytes for an XFDRCRSH payload, found %u",
			   (unsigned)XFDR_CRASH_FRAMES_OFF, bytes);
	if (!xfdr_payload_has_tag(payload, bytes, XFDR_CRASH_MAGIC)) {
		for (i = 0; i < TAG_BYTES; i++)
			snprintf(found + 2 * i, 3, "%02x", payload[i]);
		return bad(err, 0, "expected the tag XFDRCRSH (5846445243525348), found %s", found);
	}
	version = rd_u32(payload + XFDR_CRASH_VERSION_OFF, big_endian);
	if (version != XFDR_CRASH_LAYOUT_VERSION)
		return bad(err, XFDR_CRASH_VERSION_OFF,
			   "expected XFDRCRSH layout version %u, found %u",
			   (unsigned)XFDR_CRASH_LAYOUT_VERSION, version);
	count = rd_u32(payload + XFDR_CRASH_FRAME_COUNT_OFF, big_endian);
	if (count > XFDR_CRASH_FRAMES_MAX)
		return bad(err, XFDR_CRASH_FRAME_COUNT_OFF,
			   "expected a frame_count of at most %u, found %u",
			   (unsigned)XFDR_CRASH_FRAMES_MAX, count);
	need = XFDR_CRASH_PAYLOAD_BYTES(count);
	if (bytes != need)
		return bad(err, 0, "expected %u payload bytes for %u frames, found %u", need, count,
			   bytes);
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
