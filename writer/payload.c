/*
 * writer/payload.c - the payloads of xfdr's own custom events (see payload.h).
 */
#include <string.h>

#include "writer/encode.h"
#include "writer/payload.h"
#include "xfdr/format.h"

size_t wr_drop_head(uint8_t *p, const struct wr_drop_totals *totals, uint32_t entry_count)
{
	memset(p, 0, XFDR_DROP_FIXED_BYTES);
	memcpy(p, XFDR_DROP_MAGIC, 8);
	wr_put32(p + XFDR_DROP_VERSION_OFF, XFDR_DROP_LAYOUT_VERSION);
	wr_put32(p + XFDR_DROP_ENTRY_COUNT_OFF, entry_count);
	wr_put64(p + XFDR_DROP_NO_BUFFER_OFF, totals->no_buffer);
	wr_put64(p + XFDR_DROP_REENTRANT_OFF, totals->reentrant);
	wr_put64(p + XFDR_DROP_TOO_LARGE_OFF, totals->too_large);
	wr_put64(p + XFDR_DROP_NO_THREAD_SLOT_OFF, totals->no_thread_slot);
	wr_put32(p + XFDR_DROP_OMITTED_OFF, totals->threads_omitted);
	wr_put64(p + XFDR_DROP_OVERWRITTEN_OFF, totals->overwritten);
	return XFDR_DROP_FIXED_BYTES;
}

size_t wr_drop_entry(uint8_t *p, const struct wr_drop_entry *entry)
{
	memset(p, 0, XFDR_DROP_ENTRY_BYTES);
	wr_put32(p + XFDR_DROP_ENTRY_TID_OFF, entry->tid);
	wr_put16(p + XFDR_DROP_ENTRY_TID16_OFF, entry->thread_id);
	wr_put64(p + XFDR_DROP_ENTRY_NO_BUFFER_OFF, entry->no_buffer);
	wr_put64(p + XFDR_DROP_ENTRY_REENTRANT_OFF, entry->reentrant);
	wr_put64(p + XFDR_DROP_ENTRY_TOO_LARGE_OFF, entry->too_large);
	wr_put64(p + XFDR_DROP_ENTRY_OVERWRITTEN_OFF, entry->overwritten);
	return XFDR_DROP_ENTRY_BYTES;
}

size_t wr_stack_context(uint8_t *p, uint32_t depth, const uint32_t *ids, uint32_t id_count)
{
	size_t bytes = XFDR_STACK_PAYLOAD_BYTES(id_count);
	uint32_t i;

	memset(p, 0, bytes);
	memcpy(p, XFDR_STACK_MAGIC, 8);
	wr_put32(p + XFDR_STACK_VERSION_OFF, XFDR_STACK_LAYOUT_VERSION);
	wr_put32(p + XFDR_STACK_DEPTH_OFF, depth);
	wr_put32(p + XFDR_STACK_ID_COUNT_OFF, id_count);
	for (i = 0; i < id_count; i++)
		wr_put32(p + XFDR_STACK_IDS_OFF + 4 * (size_t)i, ids[i]);
	return bytes;
}

size_t wr_crash(uint8_t *p, const struct wr_crash_info *crash)
{
	uint32_t n = crash->frame_count, flags = crash->flags, i;

	if (n > XFDR_CRASH_FRAMES_MAX) {
		n = XFDR_CRASH_FRAMES_MAX;
		flags |= XFDR_CRASH_TRUNCATED;
	}
	memset(p, 0, XFDR_CRASH_FRAMES_OFF);
	memcpy(p, XFDR_CRASH_MAGIC, 8);
	wr_put32(p + XFDR_CRASH_VERSION_OFF, XFDR_CRASH_LAYOUT_VERSION);
	wr_put32(p + XFDR_CRASH_SIGNAL_OFF, crash->signal);
	wr_put32(p + XFDR_CRASH_CODE_OFF, (uint32_t)crash->code);
	wr_put32(p + XFDR_CRASH_TID_OFF, crash->tid);
	wr_put64(p + XFDR_CRASH_ADDR_OFF, crash->fault_addr);
	wr_put32(p + XFDR_CRASH_FRAME_COUNT_OFF, n);
	wr_put32(p + XFDR_CRASH_FLAGS_OFF, flags);
	for (i = 0; i < n; i++)
		wr_put64(p + XFDR_CRASH_FRAMES_OFF + 8 * (size_t)i, crash->frames[i]);
	return XFDR_CRASH_PAYLOAD_BYTES(n);
}
