/*
 * rebuild/pool_image.h - rebuild a valid trace from the image of a recorder's buffer pool,
 * for the survival verbs (`xfdr recover`: the files of a file-backed pool after the process
 * died; `xfdr core`: the pool found in a core dump).
 *
 * The pool is described by the "XFDRPOOL" locator (layout in include/xfdr/format.h): where
 * the buffers are, how large, and where in each buffer descriptor its length, state, claim
 * order and owner are. The bytes of descriptors and buffers come through a source (struct
 * rb_pool_source): file offsets in the live files, or process addresses translated through a
 * core's PT_LOAD segments, so both verbs share everything below.
 *
 * The rebuild library's interface (rebuild/, libxfdr_rebuild.a, not installed): the command's
 * `recover` and `core` use it. Nothing here prints; what happened to each buffer is handed to
 * a callback.
 */
#ifndef XFDR_REBUILD_POOL_IMAGE_H
#define XFDR_REBUILD_POOL_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "xfdr/reader.h"

/* Bounds a locator must respect to be believed ("sane sizes"). */
#define RB_POOL_HEADER_BYTES_MAX (1u << 20)
#define RB_POOL_BUFFER_BYTES_MAX (1ull << 30)
#define RB_POOL_BUFFER_COUNT_MAX (1u << 24)
#define RB_POOL_DESC_STRIDE_MAX 4096u
/* Buffers whose preambles are at least this far apart in wall time estimate the TSC rate. */
#define RB_POOL_HZ_MIN_SPAN_US 10000u
#define RB_POOL_HZ_ASSUMED 1000000000ull

/* A decoded locator: every field in host order. */
struct rb_pool_locator {
	int big_endian; /* the recording machine's byte order (told by the version field) */
	uint32_t header_bytes;
	uint64_t pid;
	uint64_t buffers_addr;
	uint64_t buffer_bytes;
	uint32_t buffer_count;
	uint32_t desc_stride;
	uint64_t tsc_hz;
	uint32_t session;
	uint32_t flags; /* XFDR_POOL_INVARIANT_TSC, XFDR_POOL_FILE_BACKED */
	/* Offsets of the descriptor fields inside a descriptor. */
	uint32_t at_used, at_ctl, at_claim_seq, at_owner_tid, at_thread_id, at_first_tsc,
	    at_last_tsc;
	uint64_t descs_addr;
	uint64_t names_addr;
};

/*
 * rb_pool_locator_parse - check and decode the XFDR_POOL_HEADER_BYTES bytes of a locator.
 * Returns 0 with *out filled, or -1 with err filled: err->offset is the offset in the
 * locator of the field at fault and err->text reads "expected ..., found ..." (the caller
 * knows the file or address and adds it). Checked: the magic, layout version 1 (which also
 * gives the byte order), header_bytes (>= 128, multiple of 8, <= RB_POOL_HEADER_BYTES_MAX),
 * buffer_bytes (>= 48, multiple of 8, <= RB_POOL_BUFFER_BYTES_MAX), buffer_count (1 ..
 * RB_POOL_BUFFER_COUNT_MAX), desc_stride (multiple of 8, 8 .. RB_POOL_DESC_STRIDE_MAX), every
 * descriptor field inside the stride, and that neither the buffers nor the descriptors wrap
 * around the address space.
 */
int rb_pool_locator_parse(const uint8_t *p, struct rb_pool_locator *out, struct xfdr_error *err);

/*
 * Where bytes come from. read() copies n bytes at `at` into buf and returns 0; 1 when some of
 * them are not in the image (a file too short, memory a core did not dump; buf is then
 * unspecified); -1 on an I/O error, with err filled with one line naming the file.
 */
struct rb_pool_source {
	int (*read)(void *ctx, uint64_t at, void *buf, size_t n, struct xfdr_error *err);
	void *ctx;
};

/* What became of one buffer. */
enum rb_pool_verdict {
	RB_POOL_KEPT = 0,
	RB_POOL_FREE,	      /* state free: never used (nothing goes back to free in a session) */
	RB_POOL_CLAIMING,     /* state claiming: its preamble was being written */
	RB_POOL_EMPTY,	      /* owned or full with fewer than 48 bytes used */
	RB_POOL_BAD_LENGTH,   /* used_bytes larger than the buffer */
	RB_POOL_STALE,	      /* the preamble is not the one the descriptor announces */
	RB_POOL_BAD_PREAMBLE, /* no valid NewBuffer, WallClockTime, NewCPUId at its start */
	RB_POOL_ABSENT,	      /* its descriptor or bytes are not in the image */
	RB_POOL_NO_ROOM,      /* what is valid cannot be closed (no room for EndOfBuffer) */
	RB_POOL_VERDICTS,
};

/* One buffer's fate, handed to the job's callback (verbose listings, progress). */
struct rb_pool_note {
	uint64_t index;	      /* buffer number in the pool */
	uint64_t done, total; /* progress: buffers looked at so far, of total */
	enum rb_pool_verdict verdict;
	int have_desc;	/* state, used, claim_seq, tid are from a descriptor */
	unsigned state; /* XFDR_POOL_STATE_* */
	uint64_t used;	/* bytes the descriptor announced (the walked length without one) */
	uint64_t kept;	/* bytes of whole valid records kept (0 unless kept) */
	uint64_t claim_seq;
	uint32_t tid;
	uint16_t thread_id;
	const char *why; /* the decoder's words where the walk stopped early, or NULL */
};

/*
 * A rebuild. With a locator, the data buffers are those owned or full with 48 <= used_bytes
 * <= buffer_bytes, taken in claim_seq order, each cut to the longest prefix of whole valid
 * records within used_bytes. Without one (loc NULL: a live file and no .pool), every buffer is
 * walked from its start and kept up to the first invalid record or all-zero 8-byte word, if
 * its preamble is valid: a best effort, since a reused buffer's stale bytes may still decode.
 */
struct rb_pool_job {
	const struct rb_pool_locator *loc; /* NULL: walk the buffers (best effort) */
	struct rb_pool_source descs;
	uint64_t descs_at; /* where descriptor 0 is in descs (with loc) */
	struct rb_pool_source bufs;
	uint64_t bufs_at;      /* where buffer 0 is in bufs; buffer i at bufs_at + i * bytes */
	uint64_t buffer_count; /* without loc; with loc, the locator's */
	uint64_t buffer_bytes; /* without loc; with loc, the locator's */
	int big_endian;	       /* without loc; with loc, the locator's */
	int constant_tsc, nonstop_tsc;
	uint64_t tsc_hz; /* known rate, or 0: estimate it from the buffers' preambles */
	void (*note)(void *ctx, const struct rb_pool_note *n); /* may be NULL */
	void *note_ctx;
};

struct rb_pool_thread {
	uint16_t thread_id; /* as in NewBuffer */
	uint32_t tid;	    /* kernel tid of the descriptor's owner; 0 when unknown */
	uint64_t buffers;   /* buffers of it kept */
};

struct rb_pool_result {
	uint64_t buffers;     /* buffers looked at */
	uint64_t kept;	      /* buffers written */
	uint64_t open_closed; /* kept owned buffers: closed at their last complete record */
	uint64_t count[RB_POOL_VERDICTS]; /* buffers by verdict (count[RB_POOL_KEPT] == kept) */
	uint64_t tails_cut;		  /* kept buffers cut before their used_bytes */
	uint64_t tail_bytes_cut;
	uint64_t zero_ended;	/* best effort: kept buffers whose walk ended at zeros */
	uint64_t invalid_ended; /* best effort: ... at an invalid record */
	uint64_t tsc_hz;	/* the rate written in the header */
	int hz_estimated;	/* ... estimated from the buffers */
	int hz_assumed;		/* ... RB_POOL_HZ_ASSUMED: nothing told or allowed an estimate */
	struct rb_pool_thread *threads; /* by ascending thread id */
	size_t thread_count;
};

/*
 * rb_pool_rebuild - write a version 1 trace of the pool's data buffers to out_fd, a regular
 * file opened for writing (out_name names it in messages): the header (version 1, type 1,
 * constant/nonstop TSC, the rate, buffer_size), then each kept buffer closed with EndOfBuffer
 * and zero padding to buffer_size, in the pool's byte order. The buffers are written at their
 * offsets with pwrite(2), the header last (its rate may come from the buffers).
 * Returns 0 with *res filled (free it with rb_pool_result_free()), or -1 with err filled: an
 * I/O error of a source, a write error, or no memory. Malformed buffers are never an error:
 * they are cut or left out and counted.
 */
int rb_pool_rebuild(const struct rb_pool_job *job, int out_fd, const char *out_name,
		    struct rb_pool_result *res, struct xfdr_error *err);
void rb_pool_result_free(struct rb_pool_result *res);

/* "kept", "free", ...: a verdict in words, for listings. */
const char *rb_pool_verdict_name(enum rb_pool_verdict v);

#endif /* XFDR_REBUILD_POOL_IMAGE_H */
