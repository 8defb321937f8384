/*
 * rebuild/live_files.c - a file-backed recorder's live file and its FILE.pool (live_files.h).
 */
#include <string.h>

#include "reader/error.h"
#include "rebuild/live_files.h"

int rb_live_header_read(const struct rb_file *live, struct xfdr_header *h, struct xfdr_error *err)
{
	uint8_t b[XFDR_FILE_HEADER_BYTES];
	size_t n = live->bytes < sizeof(b) ? (size_t)live->bytes : sizeof(b);
	struct xfdr_trace *t;

	if (rb_file_read_all(live, 0, b, n, err))
		return -1;
	/* A header-only image: the library checks the header and nothing past it. */
	if (xfdr_trace_open_memory(b, n, live->name, &t, err) < 0)
		return -1;
	*h = *xfdr_trace_header(t);
	xfdr_trace_close(t);
	/* The library takes any buffer_size for a header alone; a pool has buffers. */
	if (h->version == XFDR_FORMAT_VERSION && h->buffer_size < XFDR_BUFFER_PREAMBLE_BYTES)
		return rd_fail_name(live->name, err, XFDR_HDR_BUFFER_SIZE_OFF,
				    "expected a buffer_size of at least %d bytes (NewBuffer, "
				    "WallClockTime, NewCPUId), found %llu",
				    XFDR_BUFFER_PREAMBLE_BYTES, (unsigned long long)h->buffer_size);
	/* The reader takes compiler-rt's versions too; the runtime's live pool is version 1. */
	if (h->version != XFDR_FORMAT_VERSION)
		return rd_fail_name(live->name, err, 0,
				    "expected version 1 (the runtime's live pool), found version "
				    "%u",
				    h->version);
	return 0;
}

int rb_live_locator_read(const struct rb_file *pool, const struct xfdr_header *h,
			 const char *live_name, struct rb_pool_locator *loc, struct xfdr_error *err)
{
	uint8_t b[XFDR_POOL_HEADER_BYTES];
	struct xfdr_error why;
	uint64_t need;

	if (!pool->bytes)
		return rd_fail_name(pool->name, err, 0,
				    "expected a %d-byte pool locator, found an empty file",
				    XFDR_POOL_HEADER_BYTES);
	if (pool->bytes < XFDR_POOL_HEADER_BYTES)
		return rd_fail_name(pool->name, err, pool->bytes,
				    "expected a %d-byte pool locator, found %llu bytes",
				    XFDR_POOL_HEADER_BYTES, (unsigned long long)pool->bytes);
	if (rb_file_read_all(pool, 0, b, sizeof(b), err))
		return -1;
	if (rb_pool_locator_parse(b, loc, &why) < 0)
		return rd_fail_name(pool->name, err, why.offset, "%s", why.text);
	need = loc->header_bytes + (uint64_t)loc->buffer_count * loc->desc_stride;
	if (pool->bytes < need)
		return rd_fail_name(
		    pool->name, err, pool->bytes,
		    "expected %u descriptors of %u bytes from offset %u (%llu bytes "
		    "in all), found the end of the file",
		    loc->buffer_count, loc->desc_stride, loc->header_bytes,
		    (unsigned long long)need);
	if (loc->big_endian != h->big_endian)
		return rd_fail_name(live_name, err, 0,
				    "expected the byte order of %s (%s-endian), found %s-endian",
				    pool->name, loc->big_endian ? "big" : "little",
				    h->big_endian ? "big" : "little");
	if (h->buffer_size != loc->buffer_bytes)
		return rd_fail_name(
		    live_name, err, XFDR_HDR_BUFFER_SIZE_OFF,
		    "expected buffer_size %llu (the buffer_bytes of %s), found %llu",
		    (unsigned long long)loc->buffer_bytes, pool->name,
		    (unsigned long long)h->buffer_size);
	return 0;
}

void rb_live_pool_job(struct rb_pool_job *job, struct rb_file *live, struct rb_file *pool,
		      const struct rb_pool_locator *loc, const struct xfdr_header *h)
{
	memset(job, 0, sizeof(*job));
	job->bufs = (struct rb_pool_source){rb_file_read, live};
	job->bufs_at = XFDR_FILE_HEADER_BYTES;
	if (pool) {
		job->loc = loc;
		job->descs = (struct rb_pool_source){rb_file_read, pool};
		job->descs_at = loc->header_bytes;
		job->constant_tsc = job->nonstop_tsc = !!(loc->flags & XFDR_POOL_INVARIANT_TSC);
		job->tsc_hz = loc->tsc_hz;
		return;
	}
	job->buffer_bytes = h->buffer_size;
	job->buffer_count = (live->bytes - XFDR_FILE_HEADER_BYTES) / h->buffer_size;
	job->big_endian = h->big_endian;
	job->constant_tsc = h->constant_tsc;
	job->nonstop_tsc = h->nonstop_tsc;
}
