/*
 * rebuild/salvage.h - the whole valid buffers of a version 1 trace file cut short, as a flush
 * that did not finish leaves NAME.xray.part, for `xfdr recover --salvage`.
 *
 * The rebuild library's interface (rebuild/, not installed). Nothing here prints: what
 * becomes of each buffer is handed to a callback, errors come back in a struct xfdr_error.
 */
#ifndef XFDR_REBUILD_SALVAGE_H
#define XFDR_REBUILD_SALVAGE_H

#include <stdint.h>

#include "rebuild/file_io.h"
#include "xfdr/reader.h"

/* The shape of the cut file: what rb_salvage() walks. */
struct rb_salvage_plan {
	uint64_t buffer_size; /* the header's */
	uint64_t whole;	      /* buffers the file holds whole */
	uint64_t tail;	      /* bytes of a partial buffer after them */
};

/* The plan for in, whose header h was read and checked (rb_live_header_read()). */
struct rb_salvage_plan rb_salvage_plan(const struct rb_file *in, const struct xfdr_header *h);

enum rb_salvage_fate {
	RB_SALVAGE_KEPT, /* buffer `first` is valid on its own: written */
	RB_SALVAGE_HOLE, /* buffers first .. last are in a hole of a sparse file: never written */
	RB_SALVAGE_INVALID, /* buffer `first` is not valid; `why` says where and why */
};

struct rb_salvage_note {
	enum rb_salvage_fate fate;
	uint64_t first, last; /* buffer numbers (last == first but for a hole) */
	uint64_t at;	      /* offset in the file: the buffer's, or an invalid record's */
	const char *why;      /* INVALID: the reader's ": expected ..., found ..." (or "") */
};

/*
 * rb_salvage - write to out_fd (out_name names it) the header of in, then each whole buffer
 * the reader finds valid on its own (a header and that buffer), in file order, one after the
 * other; the others are left out and noted. Buffers in a hole of the file (lseek(2) SEEK_DATA)
 * are skipped without being read, one note for each run of them, so the cost is the data's,
 * not the file's size. Returns the buffers kept, or -1 with err filled: a read or write
 * error, a file that shrank, no memory. An invalid buffer is no error.
 */
int64_t rb_salvage(const struct rb_file *in, const struct rb_salvage_plan *plan, int out_fd,
		   const char *out_name, void (*note)(void *ctx, const struct rb_salvage_note *n),
		   void *note_ctx, struct xfdr_error *err);

#endif /* XFDR_REBUILD_SALVAGE_H */
