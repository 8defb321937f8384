/*
 * reader/drop_event.c - decode xfdr's own custom events: the "XFDRDROP" drop counts.
 *
 * The payload (format.h has the layout), in the byte order of its file:
 *   off  0  char[8]  "XFDRDROP"
 *   off  8  u32      layout version (2)
 *   off 12  u32      entry_count
 *   off 16  u64      no_buffer, then reentrant (24), too_large (32), no_thread_slot (40)
 *   off 48  u32      threads_omitted
 *   off 52  u32      reserved
 *   off 56  u64      overwritten
 *   off 64  entries of 40 bytes: u32 tid, u16 thread id, u16 reserved, u64 no_buffer,
 *           u64 reentrant, u64 too_large, u64 overwritten
 * The checks run in the order of the fields, as the other decoders' do; the counts are data:
 * any value is taken. Entries are read where they are (xfdr_drop_event_thread()), not copied:
 * a payload holds as many as its buffer had room for.
 */
#include "reader/internal.h"

int xfdr_drop_event_decode(const uint8_t *payload, uint32_t bytes, int big_endian,
			   struct xfdr_drop_event *out, struct xfdr_error *err)
{
	uint32_t count;
	uint64_t need;

	if (rd_payload_head(payload, bytes, big_endian, XFDR_DROP_MAGIC, XFDR_DROP_FIXED_BYTES,
			    XFDR_DROP_VERSION_OFF, XFDR_DROP_LAYOUT_VERSION, err))
		return -1;
	count = rd_u32(payload + XFDR_DROP_ENTRY_COUNT_OFF, big_endian);
	need = XFDR_DROP_FIXED_BYTES + (uint64_t)count * XFDR_DROP_ENTRY_BYTES;
	if (bytes != need)
		return rd_payload_fail(err, 0,
				       "expected %llu payload bytes for entry_count %u, found %u",
				       (unsigned long long)need, count, bytes);
	/* Only a payload found good is copied: on failure *out is as it was. */
	out->no_buffer = rd_u64(payload + XFDR_DROP_NO_BUFFER_OFF, big_endian);
	out->reentrant = rd_u64(payload + XFDR_DROP_REENTRANT_OFF, big_endian);
	out->too_large = rd_u64(payload + XFDR_DROP_TOO_LARGE_OFF, big_endian);
	out->no_thread_slot = rd_u64(payload + XFDR_DROP_NO_THREAD_SLOT_OFF, big_endian);
	out->threads_omitted = rd_u32(payload + XFDR_DROP_OMITTED_OFF, big_endian);
	out->overwritten = rd_u64(payload + XFDR_DROP_OVERWRITTEN_OFF, big_endian);
	out->thread_count = count;
	out->payload_ = payload;
	out->big_endian_ = big_endian;
	return 0;
}

void xfdr_drop_event_thread(const struct xfdr_drop_event *ev, uint32_t index,
			    struct xfdr_drop_thread *out)
{
	const uint8_t *e =
	    ev->payload_ + XFDR_DROP_FIXED_BYTES + (size_t)index * XFDR_DROP_ENTRY_BYTES;
	int big = ev->big_endian_;

	out->tid = rd_u32(e + XFDR_DROP_ENTRY_TID_OFF, big);
	out->thread_id = rd_u16(e + XFDR_DROP_ENTRY_TID16_OFF, big);
	out->no_buffer = rd_u64(e + XFDR_DROP_ENTRY_NO_BUFFER_OFF, big);
	out->reentrant = rd_u64(e + XFDR_DROP_ENTRY_REENTRANT_OFF, big);
	out->too_large = rd_u64(e + XFDR_DROP_ENTRY_TOO_LARGE_OFF, big);
	out->overwritten = rd_u64(e + XFDR_DROP_ENTRY_OVERWRITTEN_OFF, big);
}
