/*
 * reader/trace.c - open a trace (a mapped file or a caller's memory image), check its header
 * and its framing into buffers, and give out the header, the name and the record/action names.
 *
 * The whole file is mapped read-only and never copied: the cursors decode records in place,
 * so a trace of any size costs its page cache, not heap. Versions 1 to 5 are taken. Framing:
 * a version 1 file is the header and whole buffers of header.buffer_size bytes, so its size
 * alone says how many; in versions 2+ each buffer is a BufferExtents record and the bytes it
 * counts, so open follows that chain from record to record (one 16-byte read per buffer) to
 * check that it ends exactly at the end of the file and to count the buffers. Nothing else
 * past the header is read here; the records are checked by the state machine in records.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reader/bytes.h"
#include "reader/internal.h"

static const char *const md_kind_names[XFDR_MD_KIND_COUNT_ALL] = {
    "NewBuffer",	 "EndOfBuffer",	 "NewCPUId",	  "TSCWrap",	      "WallClockTime",
    "CustomEventMarker", "CallArgument", "BufferExtents", "TypedEventMarker", "Pid",
};

static const char *const fn_action_names[XFDR_FN_ACTION_COUNT] = {
    "Entry",
    "Exit",
    "Tail_Exit",
    "Entry_Args",
};

const char *xfdr_md_kind_name(unsigned kind)
{
	return kind < XFDR_MD_KIND_COUNT_ALL ? md_kind_names[kind] : "unknown";
}

const char *xfdr_fn_action_name(unsigned action)
{
	return action < XFDR_FN_ACTION_COUNT ? fn_action_names[action] : "unknown";
}

static void vfail(const char *name, struct xfdr_error *err, uint64_t offset, const char *fmt,
		  va_list ap)
{
	int n;

	if (!err)
		return;
	err->offset = offset;
	n = snprintf(err->text, sizeof(err->text), "%s: offset %llu: ", name,
		     (unsigned long long)offset);
	if (n < 0 || (size_t)n >= sizeof(err->text))
		return;
	vsnprintf(err->text + n, sizeof(err->text) - (size_t)n, fmt, ap);
}

int rd_fail_name(const char *name, struct xfdr_error *err, uint64_t offset, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(name, err, offset, fmt, ap);
	va_end(ap);
	return -1;
}

void rd_release(const struct xfdr_trace *t, uint64_t from, uint64_t to)
{
	uint64_t lo, hi;

	/* A small file costs less to keep than the system calls that would give it back. */
	if (!t->mapped || t->bytes < 4 * RD_RELEASE_STEP || to <= from)
		return;
	/*
	 * Outwards to whole 2 MiB regions, clipped to the file. The kernel maps a file's large
	 * folios (up to 2 MiB, naturally aligned) or its fault-around window whole when one of
	 * their pages is read, so reading the first or last bytes of [from, to) also maps the
	 * neighbouring buffers' pages in the same region: another thread's, read much later in
	 * a walk by thread. Giving back only [from, to) kept those (1 MiB a buffer and more on a
	 * 1 GiB trace). A neighbour in use faults its pages back in from the page cache.
	 */
	lo = from & ~(RD_RELEASE_REGION - 1);
	hi = (to + RD_RELEASE_REGION - 1) & ~(RD_RELEASE_REGION - 1);
	if (hi > t->bytes)
		hi = t->bytes;
	if (hi > lo)
		madvise((void *)(t->data + lo), (size_t)(hi - lo), MADV_DONTNEED);
}

int rd_fail(const struct xfdr_trace *t, struct xfdr_error *err, uint64_t offset, const char *fmt,
	    ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(t->name, err, offset, fmt, ap);
	va_end(ap);
	return -1;
}

/* Bytes of the preamble every buffer of the version starts with, BufferExtents left out. */
static unsigned preamble_bytes(unsigned version)
{
	return (version >= 3 ? 4 : 3) * XFDR_MD_RECORD_BYTES;
}

int rd_buffer_extents(const char *name, const uint8_t *d, uint64_t bytes,
		      const struct xfdr_header *h, uint64_t pos, uint64_t buffer, uint64_t *end,
		      struct xfdr_error *err)
{
	const int big = h->big_endian;
	const unsigned least = preamble_bytes(h->version);
	uint64_t count, rest;
	unsigned kind;
	char found[64];

	if (bytes - pos < XFDR_MD_RECORD_BYTES)
		return rd_fail_name(
		    name, err, pos,
		    "expected a 16-byte BufferExtents record at the start of buffer "
		    "%llu, found %llu bytes before the end of the file",
		    (unsigned long long)buffer, (unsigned long long)(bytes - pos));
	kind = rd_is_metadata(d[pos], big) ? rd_md_kind(d[pos], big) : XFDR_MD_KIND_COUNT_ALL;
	if (kind != XFDR_MD_BUFFER_EXTENTS) {
		if (!rd_is_metadata(d[pos], big))
			snprintf(found, sizeof(found), "Function record (%s)",
				 xfdr_fn_action_name(rd_fn_action(d[pos], big)));
		else
			snprintf(found, sizeof(found), "%s record (kind %u)",
				 xfdr_md_kind_name(kind), kind);
		return rd_fail_name(name, err, pos,
				    "expected BufferExtents at the start of buffer %llu, found %s",
				    (unsigned long long)buffer, found);
	}
	count = rd_u64(d + pos + XFDR_BUFFER_EXTENTS_BYTES_OFF, big);
	rest = bytes - pos - XFDR_MD_RECORD_BYTES;
	/* compiler-rt writes no buffer without records, and every buffer starts with a preamble. */
	if (count < least)
		return rd_fail_name(
		    name, err, pos,
		    "expected a BufferExtents count of at least %u bytes (NewBuffer, "
		    "WallClockTime, %sNewCPUId), found %llu",
		    least, h->version >= 3 ? "Pid, " : "", (unsigned long long)count);
	if (count > rest)
		return rd_fail_name(
		    name, err, pos,
		    "expected a BufferExtents count of at most %llu bytes (the rest "
		    "of the file), found %llu",
		    (unsigned long long)rest, (unsigned long long)count);
	*end = pos + XFDR_MD_RECORD_BYTES + count;
	return 0;
}

/*
 * The version field is the only place the byte order shows: 1 to 5 are 0N 00 as little-endian
 * and 00 0N as big-endian. Everything after it is read in that order, the header bitfield too
 * (bit 0 of the u32 is constant_tsc, as llvm-xray reads it in either order).
 */
static int parse_header(const char *name, const uint8_t *d, uint64_t bytes, struct xfdr_header *h,
			uint64_t *buffer_count, struct xfdr_error *err)
{
	uint64_t body_bytes, whole, pos, end;
	int big;

	if (bytes == 0)
		return rd_fail_name(name, err, 0,
				    "expected a 32-byte file header, found an empty file");
	if (bytes < XFDR_FILE_HEADER_BYTES)
		return rd_fail_name(name, err, 0,
				    "expected a 32-byte file header, found %llu bytes",
				    (unsigned long long)bytes);
	if (d[0] >= XFDR_FORMAT_VERSION && d[0] <= XFDR_FORMAT_VERSION_MAX && d[1] == 0) {
		big = 0;
	} else if (d[0] == 0 && d[1] >= XFDR_FORMAT_VERSION && d[1] <= XFDR_FORMAT_VERSION_MAX) {
		big = 1;
	} else {
		/* Show the value in whichever order makes it small: 07 00 and 00 07 are both 7. */
		unsigned v = d[0] ? rd_u16(d, 0) : rd_u16(d, 1);

		return rd_fail_name(
		    name, err, XFDR_HDR_VERSION_OFF,
		    "expected version 1 to 5 (bytes 0N 00 or 00 0N), found version %u "
		    "(bytes %02x %02x)",
		    v, d[0], d[1]);
	}
	memset(h, 0, sizeof(*h));
	h->big_endian = big;
	h->version = rd_u16(d + XFDR_HDR_VERSION_OFF, big);
	h->type = rd_u16(d + XFDR_HDR_TYPE_OFF, big);
	h->bitfield = rd_u32(d + XFDR_HDR_BITFIELD_OFF, big);
	h->constant_tsc = !!(h->bitfield & XFDR_HDR_CONSTANT_TSC);
	h->nonstop_tsc = !!(h->bitfield & XFDR_HDR_NONSTOP_TSC);
	h->cycle_frequency = rd_u64(d + XFDR_HDR_CYCLE_FREQUENCY_OFF, big);
	h->buffer_size = rd_u64(d + XFDR_HDR_BUFFER_SIZE_OFF, big);

	if (h->type != XFDR_TRACE_TYPE_FDR)
		return rd_fail_name(name, err, XFDR_HDR_TYPE_OFF,
				    "expected type 1 (Flight Data Recorder), found type %u",
				    h->type);
	if (h->version >= 2) {
		/* buffer_size is each buffer's capacity here: llvm-xray does not read it either. */
		for (pos = XFDR_FILE_HEADER_BYTES, whole = 0; pos < bytes; pos = end, whole++)
			if (rd_buffer_extents(name, d, bytes, h, pos, whole, &end, err))
				return -1;
		*buffer_count = whole;
		return 0;
	}
	/*
	 * A header and no buffers is a valid file whatever buffer_size says (the spec's
	 * Format := Header ThreadBuffer* EOF): a recorder that stopped before its first flush
	 * writes one. Only a file with buffers needs them able to hold a preamble.
	 */
	if (bytes == XFDR_FILE_HEADER_BYTES) {
		*buffer_count = 0;
		return 0;
	}
	if (h->buffer_size < XFDR_BUFFER_PREAMBLE_BYTES)
		return rd_fail_name(name, err, XFDR_HDR_BUFFER_SIZE_OFF,
				    "expected a buffer_size of at least %d bytes (NewBuffer, "
				    "WallClockTime, NewCPUId), found %llu",
				    XFDR_BUFFER_PREAMBLE_BYTES, (unsigned long long)h->buffer_size);

	/* Every buffer is written whole, so any other size means a cut or padded file. */
	body_bytes = bytes - XFDR_FILE_HEADER_BYTES;
	whole = body_bytes / h->buffer_size;
	if (body_bytes % h->buffer_size)
		return rd_fail_name(name, err, XFDR_FILE_HEADER_BYTES + whole * h->buffer_size,
				    "expected a file size of 32 + n * %llu bytes (whole buffers), "
				    "found %llu bytes (32 + %llu * %llu + %llu)",
				    (unsigned long long)h->buffer_size, (unsigned long long)bytes,
				    (unsigned long long)whole, (unsigned long long)h->buffer_size,
				    (unsigned long long)(body_bytes % h->buffer_size));
	*buffer_count = whole;
	return 0;
}

static int trace_new(const uint8_t *data, uint64_t bytes, const char *name, int mapped,
		     struct xfdr_trace **out, struct xfdr_error *err)
{
	struct xfdr_header h;
	uint64_t count = 0;
	struct xfdr_trace *t;
	size_t name_bytes = strlen(name) + 1;

	if (parse_header(name, data, bytes, &h, &count, err))
		return -1;
	t = calloc(1, sizeof(*t) + name_bytes);
	if (!t)
		return rd_fail_name(name, err, 0, "expected memory for the trace, found %s",
				    strerror(ENOMEM));
	t->name = (char *)(t + 1);
	memcpy(t->name, name, name_bytes);
	t->data = data;
	t->bytes = bytes;
	t->mapped = mapped;
	t->hdr = h;
	t->buffer_count = count;
	*out = t;
	return 0;
}

int xfdr_trace_open_memory(const void *data, size_t bytes, const char *name,
			   struct xfdr_trace **out, struct xfdr_error *err)
{
	*out = NULL;
	if (!name)
		name = "<memory>";
	if (!data && bytes)
		return rd_fail_name(name, err, 0, "expected a memory image, found a NULL pointer");
	return trace_new(data, bytes, name, 0, out, err);
}

int xfdr_trace_open(const char *path, struct xfdr_trace **out, struct xfdr_error *err)
{
	struct stat st;
	void *map;
	int fd, rc;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return rd_fail_name(path, err, 0, "expected a readable file, found %s",
				    strerror(errno));
	if (fstat(fd, &st) < 0) {
		rc = rd_fail_name(path, err, 0, "expected a readable file, found %s",
				  strerror(errno));
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = rd_fail_name(path, err, 0, "expected a regular file, found %s",
				  S_ISDIR(st.st_mode) ? "a directory" : "a special file");
		goto out_close;
	}
	if (st.st_size == 0) {
		/* mmap refuses a zero length; the header check words the error. */
		rc = trace_new(NULL, 0, path, 0, out, err);
		goto out_close;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED) {
		rc = rd_fail_name(path, err, 0, "expected a file that can be mapped, found %s",
				  strerror(errno));
		goto out_close;
	}
	/* Both walks (verify, then the events) are sequential; let the kernel read ahead. */
	madvise(map, (size_t)st.st_size, MADV_SEQUENTIAL);
	rc = trace_new(map, (uint64_t)st.st_size, path, 1, out, err);
	if (rc)
		munmap(map, (size_t)st.st_size);
out_close:
	close(fd);
	return rc;
}

void xfdr_trace_close(struct xfdr_trace *t)
{
	if (!t)
		return;
	if (t->mapped)
		munmap((void *)t->data, (size_t)t->bytes);
	free(t->index);
	free(t->thread_order);
	free(t->thread_start);
	free(t);
}

const struct xfdr_header *xfdr_trace_header(const struct xfdr_trace *t)
{
	return &t->hdr;
}

const char *xfdr_trace_name(const struct xfdr_trace *t)
{
	return t->name;
}

uint64_t xfdr_trace_buffer_count(const struct xfdr_trace *t)
{
	return t->buffer_count;
}
