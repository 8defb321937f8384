/*
 * writer/locator.c - the "XFDRPOOL" pool locator, all but its magic, and the "XFDRNAMS"
 * names directory (see locator.h).
 */
#include <string.h>

#include "writer/encode.h"
#include "writer/locator.h"
#include "xfdr/format.h"

size_t wr_pool_locator(uint8_t *p, const struct wr_pool_locator *loc)
{
	memset(p + XFDR_POOL_VERSION_OFF, 0, XFDR_POOL_HEADER_BYTES - XFDR_POOL_VERSION_OFF);
	wr_put32(p + XFDR_POOL_VERSION_OFF, XFDR_POOL_LAYOUT_VERSION);
	wr_put32(p + XFDR_POOL_HEADER_BYTES_OFF, XFDR_POOL_HEADER_BYTES);
	wr_put64(p + XFDR_POOL_PID_OFF, loc->pid);
	wr_put64(p + XFDR_POOL_BUFFERS_ADDR_OFF, loc->buffers_addr);
	wr_put64(p + XFDR_POOL_BUFFER_BYTES_OFF, loc->buffer_bytes);
	wr_put32(p + XFDR_POOL_BUFFER_COUNT_OFF, loc->buffer_count);
	wr_put32(p + XFDR_POOL_DESC_STRIDE_OFF, loc->desc_stride);
	wr_put64(p + XFDR_POOL_TSC_HZ_OFF, loc->tsc_hz);
	wr_put32(p + XFDR_POOL_SESSION_OFF, loc->session);
	wr_put32(p + XFDR_POOL_FLAGS_OFF, loc->flags);
	wr_put32(p + XFDR_POOL_USED_AT_OFF, loc->used_bytes_at);
	wr_put32(p + XFDR_POOL_CTL_AT_OFF, loc->ctl_at);
	wr_put32(p + XFDR_POOL_CLAIM_SEQ_AT_OFF, loc->claim_seq_at);
	wr_put32(p + XFDR_POOL_OWNER_TID_AT_OFF, loc->owner_tid_at);
	wr_put32(p + XFDR_POOL_THREAD_ID_AT_OFF, loc->owner_thread_id_at);
	wr_put32(p + XFDR_POOL_FIRST_TSC_AT_OFF, loc->first_tsc_at);
	wr_put32(p + XFDR_POOL_LAST_TSC_AT_OFF, loc->last_tsc_at);
	wr_put64(p + XFDR_POOL_DESCS_ADDR_OFF, loc->descs_addr);
	wr_put64(p + XFDR_POOL_NAMES_ADDR_OFF, loc->names_addr);
	return XFDR_POOL_HEADER_BYTES;
}

size_t wr_names_header(uint8_t *p, const struct wr_names_header *h)
{
	memset(p, 0, XFDR_NAMES_HEADER_BYTES);
	memcpy(p, XFDR_NAMES_MAGIC, 8);
	wr_put32(p + XFDR_NAMES_VERSION_OFF, XFDR_NAMES_LAYOUT_VERSION);
	wr_put32(p + XFDR_NAMES_BYTES_OFF,
		 XFDR_NAMES_HEADER_BYTES + h->source_count * XFDR_NAMES_SOURCE_BYTES);
	wr_put64(p + XFDR_NAMES_SLOTS_ADDR_OFF, h->slots_addr);
	wr_put32(p + XFDR_NAMES_SLOT_COUNT_OFF, h->slot_count);
	wr_put32(p + XFDR_NAMES_SLOT_STRIDE_OFF, h->slot_stride);
	wr_put32(p + XFDR_NAMES_TID_AT_OFF, h->tid_at);
	wr_put32(p + XFDR_NAMES_THREAD_ID_AT_OFF, h->thread_id_at);
	wr_put32(p + XFDR_NAMES_ID_SESSION_AT_OFF, h->id_session_at);
	wr_put32(p + XFDR_NAMES_NAME_AT_OFF, h->name_at);
	wr_put32(p + XFDR_NAMES_EXIT_NAME_AT_OFF, h->exit_name_at);
	wr_put32(p + XFDR_NAMES_SOURCE_COUNT_OFF, h->source_count);
	return XFDR_NAMES_HEADER_BYTES;
}

size_t wr_names_source(uint8_t *p, const struct wr_names_source *src)
{
	size_t n = strnlen(src->name, XFDR_NAMES_SRC_NAME_BYTES);

	memset(p, 0, XFDR_NAMES_SOURCE_BYTES);
	memcpy(p + XFDR_NAMES_SRC_NAME_OFF, src->name, n);
	wr_put32(p + XFDR_NAMES_SRC_KIND_OFF, src->kind);
	wr_put32(p + XFDR_NAMES_SRC_COUNT_OFF, src->count);
	wr_put64(p + XFDR_NAMES_SRC_TABLE_ADDR_OFF, src->table_addr);
	wr_put64(p + XFDR_NAMES_SRC_COUNT_ADDR_OFF, src->count_addr);
	wr_put32(p + XFDR_NAMES_SRC_CHUNK_COUNT_OFF, src->chunk_count);
	wr_put32(p + XFDR_NAMES_SRC_CHUNK_IDS_OFF, src->chunk_ids);
	wr_put32(p + XFDR_NAMES_SRC_NODE_STRIDE_OFF, src->node_stride);
	wr_put32(p + XFDR_NAMES_SRC_ADDR_AT_OFF, src->addr_at);
	wr_put32(p + XFDR_NAMES_SRC_STATE_AT_OFF, src->state_at);
	wr_put32(p + XFDR_NAMES_SRC_STATE_MASK_OFF, src->state_mask);
	wr_put32(p + XFDR_NAMES_SRC_STATE_LIVE_OFF, src->state_live);
	return XFDR_NAMES_SOURCE_BYTES;
}
