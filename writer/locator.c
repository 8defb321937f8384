/*
 * writer/locator.c - the "XFDRPOOL" pool locator, all but its magic (see locator.h).
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
	wr_put64(p + XFDR_POOL_THREAD_TABLE_ADDR_OFF, loc->thread_table_addr);
	return XFDR_POOL_HEADER_BYTES;
}
