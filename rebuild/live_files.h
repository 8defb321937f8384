/*
 * rebuild/live_files.h - the files a file-backed recorder keeps current while it records
 * (XFDR_OPTIONS backing=file), for `xfdr recover`:
 *   FILE       "<base>-live.xray": a version 1 header (cycle_frequency may still be 0), then
 *              the pool's buffers at 32 + i * buffer_size, not terminated (after a buffer's
 *              used bytes: zeros, or stale bytes of its earlier use)
 *   FILE.pool  the "XFDRPOOL" locator and the buffer descriptors (format.h)
 * and of a trace file cut short (NAME.xray.part, a flush that did not finish), whose header
 * is read the same way.
 *
 * The rebuild library's interface (rebuild/, not installed). Nothing here prints: errors come
 * back in a struct xfdr_error of one line naming the file and the offset.
 */
#ifndef XFDR_REBUILD_LIVE_FILES_H
#define XFDR_REBUILD_LIVE_FILES_H

#include <stddef.h>
#include <stdint.h>

#include "rebuild/file_io.h"
#include "rebuild/pool_image.h"
#include "xfdr/reader.h"

/*
 * rb_live_header_read - the header of live into *h, checked by the reader library (version,
 * type, buffer_size) over the bytes there are, and further: a buffer_size that holds a
 * preamble, and version 1 (the runtime's; the reader takes compiler-rt's versions too).
 * Returns 0, or -1 with err filled.
 */
int rb_live_header_read(const struct rb_file *live, struct xfdr_header *h, struct xfdr_error *err);

/*
 * rb_live_locator_read - FILE.pool's locator into *loc, checked by rb_pool_locator_parse(),
 * with all its descriptors in the file, and agreeing with the live file's header h (its byte
 * order and buffer_size; live_name names that file). Returns 0, or -1 with err filled.
 */
int rb_live_locator_read(const struct rb_file *pool, const struct xfdr_header *h,
			 const char *live_name, struct rb_pool_locator *loc,
			 struct xfdr_error *err);

/*
 * rb_live_pool_job - *job for rb_pool_rebuild() over the live file (header h) and, when pool
 * is not NULL, the descriptors of FILE.pool (its locator loc, read by rb_live_locator_read()):
 * its TSC flags and rate are the locator's. Without pool, the best effort: every buffer of
 * the live file walked, with the header's byte order and TSC flags. The note callback and a
 * rate from elsewhere (job->tsc_hz 0) are the caller's.
 */
void rb_live_pool_job(struct rb_pool_job *job, struct rb_file *live, struct rb_file *pool,
		      const struct rb_pool_locator *loc, const struct xfdr_header *h);

#endif /* XFDR_REBUILD_LIVE_FILES_H */
